"""The IR of plan=first (`xegen.plan.first_layer`): a loop over kernel rows that gathers each
row's input values once, masked pixel by pixel, and multiplies each by every output channel.

    c0, ow0 ...                                   the thread's channels and outputs (`rows.py`)
    in_w = iw0 + pixel(lane) in [0, IW)           per gather lane, fixed for the thread
    acc = 0
    for (k_iter = 0; k_iter < [IC*]KD*KH) {
      [segment = 0]; segment[v] = src[row start + iw0*C + v]  (gathers; lanes masked by in_w, the row by ih, id)
      w_load[kw*C + c] = wei[c0 ..][c][kd][kh][kw]              (a block, or a gather, per line)
      [widen both to f32]
      acc[p] += segment[(p*SW + kw*(DW+1))*C + c] * w_load[kw*C + c]        (mad, the value broadcast)
    }
    bias, ReLU, conversion; a store per output pixel

C is IC when a pixel's channels are innermost (the row folds kw and ic) and 1 when w is (the loop
walks the channels too).
"""

from __future__ import annotations

from dataclasses import replace

from ..conv.index import Idx, all_of
from ..ir import Alloc, Barrier, Call, Expr, Fence, For, IfThenElse, Mad, Send, Stmt, Var, const, ptr, seq
from ..ir.types import F32, U32
from ..plan.first_layer import FirstLayerPlan, Systolic
from ..plan.messages import Run
from ..plan.multiply import MultiplyLayouts
from ..plan.tiles import TileLayout
from .affine import split_offset
from .builder import THREAD_IDS, copy_tile
from .messages import Scope, slm_run_messages
from .multiply import multiply
from .rows import RowBuilder, constant_lanes


def build_first_layer(plan: FirstLayerPlan) -> Stmt:
    return _FirstLayer(plan).build()


class _FirstLayer(RowBuilder):
    plan: FirstLayerPlan

    def build(self) -> Stmt:
        plan, desc = self.plan, self.desc
        self.c0 = self.channel_start()
        self.origin = self.pixel_origin(plan.rows)
        self.iw0 = self.top.bind("iw0", self.origin["ow0"] * desc.sw - desc.pw)
        self.inside = self._inside_the_row()
        prologue = self.zeroed(plan.acc)
        if plan.systolic is not None:
            prologue += self._weights_to_slm(plan.systolic)
        loops = [self._loop(Var("k_iter"), blocks=False)]
        inside = plan.inside()
        blocks_fit = self._blocks_fit(inside) if inside is not None else None
        if inside is not None:
            # threads whose segments are inside the input along w run a loop of block loads
            self.loop = Scope(self.names)
            fast = self._loop(Var("k_iter_blocks"), blocks=True)
            loops = [fast] if blocks_fit is None else [IfThenElse(blocks_fit, fast, loops[0])]
        epilogue = self.epilogue(plan.acc, plan.store, plan.bias, self.c0, self.origin, plan.store_block)
        slm = plan.systolic.slm if plan.systolic is not None else None
        return self.kernel(prologue + loops, epilogue, slm)

    def _loop(self, k_iter: Var, blocks: bool) -> Stmt:
        """The loop over kernel rows, its segments in blocks or gathers, with its own registers
        for what it loads (so that the scheduler may multi-buffer them)."""
        plan = self.plan
        own = {var.name: Var(self.names.fresh(var.name), var.type) for var, _ in plan.loop_buffers}
        self.segment = replace(plan.segment, buffer=own[plan.segment.buffer.name])
        self.weights = replace(plan.weights, buffer=own.get(plan.weights.buffer.name, plan.weights.buffer))
        ic, kd, kh = self.row_loop_indices(k_iter, plan.rows)
        body = self._segment(ic, kd, kh, blocks)
        if plan.systolic is None:
            body += self._weights(self.weights, ic, kd, kh) + self._multiply()
        else:
            body += self._systolic_multiply(k_iter, plan.systolic)
        loop: Stmt = self.row_loop(k_iter, body)
        for var, size in reversed(plan.loop_buffers):
            loop = Alloc(own[var.name], size, "grf", loop)
        return loop

    def _messages(self) -> list[tuple[int, int]]:
        """(first value, values) of each gather of the segment."""
        values, lanes = self.plan.row_values, self.plan.lanes
        return [(first, min(lanes, values - first)) for first in range(0, values, lanes)]

    def _inside_the_row(self) -> list[Expr | None]:
        """Per gather, the lanes whose pixel is inside the input along w (None: all of them),
        bound before the loop."""
        plan, desc = self.plan, self.desc
        masks: list[Expr | None] = []
        for first, count in self._messages():
            pixels = [(first + lane) // plan.row_channels for lane in range(count)]
            columns = self.iw0 + constant_lanes(pixels)
            condition = all_of(columns.in_range(0, desc.iw))
            if condition is not None:
                var = Var(self.names.fresh("in_w"), condition.type)
                self.top.lets.append((var, condition))
                condition = var
            masks.append(condition)
        return masks

    def _blocks_fit(self, inside: tuple[int, int]) -> Expr | None:
        """Whether the thread's segments are inside the input along w, with the bytes the dword
        blocks read around them (`plan.inside()`; None: always), bound before the loop."""
        lo, hi = inside
        condition = all_of(self.iw0.in_range(lo, hi - self.plan.rows.span + 1))
        if condition is None:
            return None
        var = Var(self.names.fresh("blocks_fit"), condition.type)
        self.top.lets.append((var, condition))
        return var

    def _segment(self, ic: Idx, kd: Idx, kh: Idx, blocks: bool) -> list[Stmt]:
        """The row's segment: dword blocks (masked by the row, where the thread's segments are
        inside the input along w), or gathers masked value by value."""
        plan = self.plan
        positions, row_masks = self.input_rows(self.origin, kd, kh)
        layout, t = self.problem.layout_of("src"), self.problem.type_of("src")
        start = self.spatial_index(layout, self.origin["mb"], ic, positions["id"], positions["ih"], self.iw0)
        loads: list[Stmt]
        if blocks:
            masks = [all_of(row_masks)] * len(plan.blocks)
            loads = [
                Call(
                    Send("load", "block", "global", U32, dwords),
                    (
                        ptr(self.buffers["src"], start.expr * t.size - plan.phase + byte),
                        ptr(self.segment.buffer, byte),
                        mask,
                    ),
                )
                for (byte, dwords), mask in zip(plan.blocks, masks, strict=True)
            ]
        else:
            variant = {var for var, _ in self.loop.lets}
            masks = [all_of(row_masks + [inside]) for inside in self.inside]
            loads = [
                self.gather(
                    "load",
                    "src",
                    t,
                    split_offset((start + first + self.lanes(count)).expr, variant, self._bind_fixed),
                    self.segment,
                    self.segment.offset(0, first),
                    mask,
                )
                for (first, count), mask in zip(self._messages(), masks, strict=True)
            ]
        masked = any(mask is not None for mask in masks)
        body = (self.zeroed(self.segment) if masked else []) + loads
        if plan.wide_segment is not None:
            body += copy_tile(plan.wide_segment, self.segment)
        return body

    def _bind_fixed(self, e: Expr) -> Expr:
        """A loop-invariant vector, bound before the loop."""
        return self.top.bind("lanes_fixed", Idx(e, 0, 0)).expr

    def _weights(
        self, target: TileLayout, ic: Idx, kd: Idx, kh: Idx, mask: Expr | None = None, variant: set[Var] | None = None
    ) -> list[Stmt]:
        """A line per (kw, c) into `target`: the thread's output channels of weights
        [oc][ic][kd][kh][kw] (masked by `mask`), widened where the mads read f32."""
        plan, desc, n = self.plan, self.desc, self.config.n_tile
        layout, t = self.problem.layout_of("wei"), self.problem.type_of("wei")
        kernel = {"d": kd, "h": kh}
        channels = self.c0 if plan.weights_block else self.c0 + self.lanes(n)
        if variant is None:
            variant = {var for var, _ in self.loop.lets}
        loads: list[Stmt] = []
        for kw in range(desc.kw):
            taps = [kernel.get(d, Idx.const(kw)) for d in desc.used]
            for c in range(plan.row_channels):
                channel = Idx.const(c) if plan.row_channels > 1 else ic
                element = layout.offset([channels, channel, *taps])
                line = kw * plan.row_channels + c
                if plan.weights_block:
                    loads.append(self.block_message("load", "wei", t, n, element, target, target.offset(line, 0), mask))
                else:
                    offsets = split_offset(element.expr, variant, self._bind_fixed)
                    loads.append(self.gather("load", "wei", t, offsets, target, target.offset(line, 0), mask))
        if plan.wide_weights is not None:
            loads += copy_tile(plan.wide_weights, target)
        return loads

    def _weights_to_slm(self, systolic: Systolic) -> list[Stmt]:
        """Before the loop: every row of the block's weights in VNNI form in SLM, each thread of
        the group packing the rows r = round*tg_m + thread_id1; then a barrier."""
        plan, config = self.plan, self.config
        rows = plan.rows
        round_var = Var("w_round")
        self.names.used.add(round_var.name)
        scope = Scope(self.names)
        r = scope.bind(
            "w_row", Idx(round_var, 0, systolic.rounds - 1) * config.tg_m + Idx(THREAD_IDS[1], 0, config.tg_m - 1)
        )
        real = r.below(rows.iterations)  # the last round may run past the rows
        desc = self.desc
        kh = scope.bind("w_kh", r.mod(desc.kh)) if desc.kh > 1 else Idx.const(0)
        kd = scope.bind("w_kd", r.div(desc.kh).mod(desc.kd)) if desc.kd > 1 else Idx.const(0)
        ic = scope.bind("w_ic", r.div(desc.kh * desc.kd)) if rows.channels > 1 else Idx.const(0)
        body = self.zeroed(systolic.w_rows) if real is not None else []
        body += self._weights(systolic.w_rows, ic, kd, kh, real, {round_var} | {v for v, _ in scope.lets})
        body += copy_tile(systolic.w_pack_rows, systolic.w_rows)
        size = systolic.b.type.size
        body += slm_run_messages(
            "store",
            systolic.slm,
            systolic.w_pack,
            [Run(0, 0, systolic.b.elements)],
            r * systolic.b.elements,
            systolic.b.elements * size,
            self.hw,
            self.top,
        )
        loop = For(round_var, const(0), const(systolic.rounds), scope.wrap(seq(*body)))
        return self.zeroed(systolic.w_pack) + self.zeroed(systolic.a) + [loop, Call(Fence("slm")), Call(Barrier())]

    def _systolic_multiply(self, k_iter: Var, systolic: Systolic) -> list[Stmt]:
        """The row's B tile from SLM, each output's A row out of the segment, the dpas."""
        plan, config = self.plan, self.config
        size = systolic.b.type.size
        row = Idx(k_iter, 0, plan.rows.iterations - 1) * systolic.b.elements
        body = slm_run_messages(
            "load",
            systolic.slm,
            systolic.b,
            [Run(0, 0, systolic.b.elements)],
            row,
            systolic.b.elements * size,
            self.hw,
            self.top,
        )
        body += copy_tile(systolic.a_rows, replace(systolic.a_source, buffer=self.segment.buffer))
        body += multiply(config, self.plan.gemm, MultiplyLayouts(systolic.a, systolic.b, plan.acc), config.simd)
        return body

    def _multiply(self) -> list[Stmt]:
        plan, desc, config = self.plan, self.desc, self.config
        segment = plan.wide_segment or self.segment
        weights = plan.wide_weights or self.weights
        calls: list[Stmt] = []
        for p in range(config.m_tile):
            for kw in range(desc.kw):
                for c in range(plan.row_channels):
                    value = segment.pointer(0, plan.value(p, kw, c))
                    for n0 in range(0, config.n_tile, config.simd):
                        func = Mad(config.simd, F32, weights.type, segment.type, 1, 0)
                        target = plan.acc.pointer(p, n0)
                        calls.append(
                            Call(func, (target, target, weights.pointer(kw * plan.row_channels + c, n0), value))
                        )
        return calls
