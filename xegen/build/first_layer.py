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

from ..conv.index import Idx, all_of
from ..ir import Call, Expr, Mad, Stmt, Var
from ..ir.types import F32
from ..plan.first_layer import FirstLayerPlan
from .affine import split_offset
from .builder import copy_tile
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
        k_iter = Var("k_iter")
        ic, kd, kh = self.row_loop_indices(k_iter, plan.rows)
        body = self._segment(ic, kd, kh) + self._weights(ic, kd, kh) + self._multiply()
        epilogue = self.epilogue(plan.acc, plan.store, plan.bias, self.c0, self.origin, plan.store_block)
        return self.kernel(self.zeroed(plan.acc), plan.rows.iterations, body, epilogue, k_iter)

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

    def _segment(self, ic: Idx, kd: Idx, kh: Idx) -> list[Stmt]:
        plan = self.plan
        positions, row_masks = self.input_rows(self.origin, kd, kh)
        layout, t = self.problem.layout_of("src"), self.problem.type_of("src")
        start = self.spatial_index(layout, self.origin["mb"], ic, positions["id"], positions["ih"], self.iw0)
        variant = {var for var, _ in self.loop.lets}
        loads, masked = [], False
        for (first, count), inside in zip(self._messages(), self.inside):
            offsets = (start + first + self.lanes(count)).expr
            offsets = split_offset(offsets, variant, self._bind_fixed)
            mask = all_of(row_masks + [inside])
            masked |= mask is not None
            loads.append(self.gather("load", "src", t, offsets, plan.segment, plan.segment.offset(0, first), mask))
        body = (self.zeroed(plan.segment) if masked else []) + loads
        if plan.wide_segment is not None:
            body += copy_tile(plan.wide_segment, plan.segment)
        return body

    def _bind_fixed(self, e: Expr) -> Expr:
        """A loop-invariant vector, bound before the loop."""
        return self.top.bind("lanes_fixed", Idx(e, 0, 0)).expr

    def _weights(self, ic: Idx, kd: Idx, kh: Idx) -> list[Stmt]:
        """A line per (kw, c): the thread's output channels of weights [oc][ic][kd][kh][kw]."""
        plan, desc, n = self.plan, self.desc, self.config.n_tile
        layout, t = self.problem.layout_of("wei"), self.problem.type_of("wei")
        kernel = {"d": kd, "h": kh}
        channels = self.c0 if plan.weights_block else self.c0 + self.lanes(n)
        variant = {var for var, _ in self.loop.lets}
        loads: list[Stmt] = []
        for kw in range(desc.kw):
            taps = [kernel.get(d, Idx.const(kw)) for d in desc.used]
            for c in range(plan.row_channels):
                channel = Idx.const(c) if plan.row_channels > 1 else ic
                element = layout.offset([channels, channel, *taps])
                line = kw * plan.row_channels + c
                if plan.weights_block:
                    loads.append(self.block_message("load", "wei", t, n, element, plan.weights,
                                                    plan.weights.offset(line, 0)))
                else:
                    offsets = split_offset(element.expr, variant, self._bind_fixed)
                    loads.append(self.gather("load", "wei", t, offsets, plan.weights, plan.weights.offset(line, 0)))
        if plan.wide_weights is not None:
            loads += copy_tile(plan.wide_weights, plan.weights)
        return loads

    def _multiply(self) -> list[Stmt]:
        plan, desc, config = self.plan, self.desc, self.config
        segment = plan.wide_segment or plan.segment
        weights = plan.wide_weights or plan.weights
        calls: list[Stmt] = []
        for p in range(config.m_tile):
            for kw in range(desc.kw):
                for c in range(plan.row_channels):
                    value = segment.pointer(0, plan.value(p, kw, c))
                    for n0 in range(0, config.n_tile, config.simd):
                        func = Mad(config.simd, F32, weights.type, segment.type, 1, 0)
                        target = plan.acc.pointer(p, n0)
                        calls.append(Call(func, (target, target, weights.pointer(kw * plan.row_channels + c, n0),
                                                 value)))
        return calls
