"""The IR of plan=depthwise (`xegen.plan.depthwise`): output channels across the lanes, a loop
over kernel rows that loads each row's input pixels once and multiplies them by every tap.

    c0, ow0 ...                                   the thread's channels and outputs (`rows.py`)
    acc = 0
    for (k_iter = 0; k_iter < KD*KH) {
      [segment = 0]; segment[q] = src[mb][cin0 .. cin0+G*ICg)[id][ih][iw0 + pixel q]     (block loads)
      w_load[kw*ICg + i] = wei[g0 + l/OCg][l%OCg][i][kd][kh][kw] for each lane l          (gathers)
      [w_wide = f32(w_load)]
      for each pixel q: [a_work = widened / replicated segment[q]]
                        acc[p] += A_i(q) * W[kw][i]  for every (p, kw) reading q, i < ICg   (mad)
    }
    bias, ReLU, conversion; a block store per output pixel
"""

from __future__ import annotations

from ..conv.index import Idx, all_of
from ..ir import Call, Expr, Mad, Reorder, Send, Stmt, Var, format_expr, ptr
from ..ir.types import F32
from ..plan.depthwise import DepthwisePlan
from .affine import split_offset
from .builder import copy_tile
from .rows import RowBuilder, constant_lanes


def build_depthwise(plan: DepthwisePlan) -> Stmt:
    return _Depthwise(plan).build()


class _Depthwise(RowBuilder):
    plan: DepthwisePlan

    def build(self) -> Stmt:
        plan, desc = self.plan, self.desc
        rows = plan.rows
        c0 = self.channel_start()
        origin = self.pixel_origin(rows)
        g0 = self.top.bind("g0", c0.div(desc.ocg)) if desc.ocg > 1 else c0
        self.cin0 = self.top.bind("cin0", g0 * desc.icg) if desc.icg > 1 else g0
        self.g0 = g0
        self.iw0 = self.top.bind("iw0", origin["ow0"] * desc.sw - desc.pw)
        self.origin = origin
        self.fixed: dict[str, Expr] = {}
        k_iter = Var("k_iter")
        _, kd, kh = self.row_loop_indices(k_iter, rows)
        body = self._segment(kd, kh) + self._weights(kd, kh) + self._multiply()
        return self.kernel(
            self.zeroed(plan.acc) + [self.row_loop(k_iter, body)],
            self.epilogue(plan.acc, plan.store, plan.bias, c0, origin, plan.store_block),
        )

    def _segment(self, kd: Idx, kh: Idx) -> list[Stmt]:
        """The row's input pixels, each a block of the block's input channels (masked where padding)."""
        plan, desc = self.plan, self.desc
        positions, row_masks = self.input_rows(self.origin, kd, kh)
        layout, t = self.problem.layout_of("src"), self.problem.type_of("src")
        loads, masked = [], False
        for q, j in enumerate(plan.rows.pixels):
            iw = self.iw0 + j
            mask = all_of(row_masks + iw.in_range(0, desc.iw))
            masked |= mask is not None
            element = self.spatial_index(layout, self.origin["mb"], self.cin0, positions["id"], positions["ih"], iw)
            loads.append(
                self.block_message(
                    "load", "src", t, plan.in_channels, element, plan.segment, plan.segment.offset(q, 0), mask
                )
            )
        return (self.zeroed(plan.segment) if masked else []) + loads

    def _weights(self, kd: Idx, kh: Idx) -> list[Stmt]:
        """One gather per (kw, i): lane l holds wei[g0 + l/OCg][l%OCg][i][kd][kh][kw]."""
        plan, desc, n = self.plan, self.desc, self.config.n_tile
        layout, t = self.problem.layout_of("wei"), self.problem.type_of("wei")
        group = self.g0 + constant_lanes([lane // desc.ocg for lane in range(n)])
        channel = constant_lanes([lane % desc.ocg for lane in range(n)])
        kernel = {"d": kd, "h": kh}
        variant = {var for var, _ in self.loop.lets}
        loads: list[Stmt] = []
        for kw in range(desc.kw):
            taps = [kernel.get(d, Idx.const(kw)) for d in desc.used]
            for i in range(desc.icg):
                offset = layout.offset([group, channel, Idx.const(i), *taps])
                offsets = split_offset(offset.expr * t.size, variant, self._bind_fixed)
                line = kw * desc.icg + i
                loads.append(
                    Call(
                        Send("load", "scattered", "global", t, n),
                        (ptr(self.buffers["wei"], 0), offsets, plan.weights.pointer(line, 0), None),
                    )
                )
        if plan.wide_weights is not None:
            loads += copy_tile(plan.wide_weights, plan.weights)
        return loads

    def _bind_fixed(self, e: Expr) -> Expr:
        """A loop-invariant vector, bound once before the loop."""
        key = format_expr(e)
        if key not in self.fixed:
            self.fixed[key] = self.top.bind("w_lanes", Idx(e, 0, 0)).expr
        return self.fixed[key]

    def _multiply(self) -> list[Stmt]:
        """Pixel by pixel: its operands (widened, replicated), then every mad that reads it."""
        plan, desc, config = self.plan, self.desc, self.config
        rows, simd = plan.rows, config.simd
        weights = plan.wide_weights or plan.weights
        readers: dict[int, list[tuple[int, int]]] = {}
        for p in range(config.m_tile):
            for kw in range(desc.kw):
                readers.setdefault(rows.pixel(p, kw), []).append((p, kw))
        body: list[Stmt] = []
        for q, j in enumerate(rows.pixels):
            operands = self._operands(q)
            body += operands.prepare
            for p, kw in readers[j]:
                for i in range(desc.icg):
                    for n0 in range(0, config.n_tile, simd):
                        func = Mad(simd, F32, weights.type, plan.operand, 1, 1)
                        target = plan.acc.pointer(p, n0)
                        body.append(
                            Call(
                                func, (target, target, weights.pointer(kw * desc.icg + i, n0), operands.pointer(i, n0))
                            )
                        )
        return body

    def _operands(self, q: int) -> _Operands:
        """Pixel q's A_i as the mads read them: the segment itself, or its lanes widened and
        replicated into a work buffer (lane l of A_i = channel (l / OCg)*ICg + i)."""
        plan, desc, n = self.plan, self.desc, self.config.n_tile
        segment = plan.segment
        if plan.work is None:
            return _Operands([], lambda i, n0: segment.pointer(q, n0))
        first = (q % plan.copies) * desc.icg
        groups = n // desc.ocg
        moves: list[Stmt] = []
        for i in range(desc.icg):
            func = Reorder(segment.type, plan.operand, groups, desc.ocg, desc.icg, 0, desc.ocg, 1)
            moves.append(Call(func, (plan.work.pointer(first + i, 0), segment.pointer(q, i))))
        return _Operands(moves, lambda i, n0: plan.work.pointer(first + i, n0))


class _Operands:
    def __init__(self, prepare: list[Stmt], pointer):
        self.prepare = prepare
        self.pointer = pointer
