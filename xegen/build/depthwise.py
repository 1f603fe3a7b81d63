"""The IR of plan=depthwise (`xegen.plan.depthwise`): output channels across the lanes, a loop
over kernel rows that loads each row's input pixels once and multiplies them by every tap.

    c0, ow0 ...                                   the thread's channels and outputs (`rows.py`)
    acc = 0
    for (k_iter = 0; k_iter < KD*KH) {
      [segment = 0]; segment[q] = src[mb][cin0 .. cin0+G*ICg)[id][ih][iw0 + pixel q]     (block loads)
      w_load[kw*ICg + i] = wei[g0 + l/OCg][l%OCg][i][kd][kh][kw] for each lane l (gathers, or blocks)
      [w_wide = f32(w_load)]
      for each pixel q: [a_work = widened / replicated segment[q]]
                        acc[p] += A_i(q) * W[kw][i]  for every (p, kw) reading q, i < ICg   (mad)
    }
    bias, ReLU, conversion; a block store per output pixel
"""

from __future__ import annotations

from dataclasses import replace

from ..conv.index import Idx
from ..ir import Alloc, Call, Mad, Reorder, Send, Stmt, Var, ptr, seq
from ..ir.types import F32
from ..plan.depthwise import DepthwisePlan
from ..plan.rows import Axis, Rows
from ..plan.tiles import TileLayout, line_layout
from .affine import split_offset
from .builder import copy_tile
from .messages import Scope
from .rows import RowBuilder, constant_lanes


def build_depthwise(plan: DepthwisePlan) -> Stmt:
    return _Depthwise(plan).build()


class _Depthwise(RowBuilder):
    plan: DepthwisePlan

    def build(self) -> Stmt:
        plan = self.plan
        walk = plan.walk
        self.c0 = c0 = self.channel_start()
        origins = [self.pixel_origin(rows) for rows in plan.phases]
        out_pg, in_pg = walk.out_per_group, walk.in_per_group
        g0 = self.top.bind("g0", c0.div(out_pg)) if out_pg > 1 else c0
        self.cin0 = self.top.bind("cin0", g0 * in_pg) if in_pg > 1 else g0
        self.g0 = g0
        return self.phase_kernel(plan.phases, origins, self._loaded(), self._phase)

    def _phase(self, rows: Rows, origin: dict[str, Idx], k_iter: Var, own_buffers: bool) -> list[Stmt]:
        """The loop of one forward walk (`rows`) and its epilogue: with `own_buffers` the loop
        loads into registers of its own (so that the scheduler may multi-buffer each phase's)."""
        plan = self.plan
        self.rows = rows
        self.loop = Scope(self.names)
        self.origin = origin
        w = rows.path.axis("w")
        self.iw0 = self.top.bind("iw0", origin["ow0"] * w.stride - rows.w_pad)
        own = {}
        if own_buffers:
            own = {var.name: Var(self.names.fresh(var.name), var.type) for var in self._loaded()}
        work = plan.work
        self.work = None if work is None else replace(work, buffer=own.get(work.buffer.name, work.buffer))
        # the phase's segment and weights: its own pixels' and taps' lines (no zeroing of lines
        # it never loads, no widening copy of lines it leaves unloaded)
        self.segment = phase_lines(plan.segment, own, len(rows.pixels), self.hw.grf_bytes)
        vectors = len(rows.taps()) * rows.path.in_per_group
        self.weights = phase_lines(plan.weights, own, vectors, self.hw.grf_bytes)
        wide = plan.wide_weights
        self.wide_weights = None if wide is None else phase_lines(wide, own, vectors, self.hw.grf_bytes)
        _, kd, kh = self.row_loop_indices(k_iter, rows)
        body = self._segment(kd, kh) + self._weights(kd, kh) + self._multiply()
        loop: Stmt = self.row_loop(k_iter, body, rows) if rows.iterations > 1 else self.loop.wrap(seq(*body))
        for var, size in reversed(plan.grf_buffers):
            if var.name in own:
                loop = Alloc(own[var.name], size, "grf", loop)
        epilogue = self.epilogue(
            plan.acc, plan.store, plan.bias, self.c0, origin, plan.store_block, rows, bias_loaded=True
        )
        return self.zeroed(plan.acc) + self.load_bias(plan.bias, self.c0) + [loop] + epilogue

    def _loaded(self) -> list[Var]:
        """The buffers a phase's loop fills."""
        plan = self.plan
        return [t.buffer for t in (plan.segment, plan.weights, plan.wide_weights, plan.work) if t is not None]

    def _segment(self, kd: Idx, kh: Idx) -> list[Stmt]:
        """The row's input pixels, each a block of the block's input channels (masked where padding)."""
        loads, masked = self.segment_loads(
            self.rows, self.origin, self.iw0, self.cin0, kd, kh, self.segment, 0, self.plan.in_channels
        )
        return (self.zeroed(self.segment) if masked else []) + loads

    def _weights(self, kd: Idx, kh: Idx) -> list[Stmt]:
        """One gather per (kw, i): lane l holds wei[g0 + l/OCg][l%OCg][i][kd][kh][kw] (the kernel
        positions of the walk's taps; [g][i][l%ICg] for backward data); one block load where the
        lanes' weights are adjacent (`weights_block`)."""
        desc, n, walk = self.desc, self.config.n_tile, self.rows.path
        out_pg, in_pg = walk.out_per_group, walk.in_per_group
        layout, t = self.problem.layout_of("wei"), self.problem.type_of("wei")
        group = self.g0 + constant_lanes([lane // out_pg for lane in range(n)])
        channel = constant_lanes([lane % out_pg for lane in range(n)])
        kernel = {"d": kernel_position(walk.axis("d"), kd), "h": kernel_position(walk.axis("h"), kh)}
        variant = {var for var, _ in self.loop.lets}
        loads: list[Stmt] = []
        for f, kw, vector in self.rows.taps():
            taps = [kernel.get(d, kernel_position(walk.w_axes[f], Idx.const(kw))) for d in desc.used]
            for i in range(in_pg):
                channels = [Idx.const(i), channel] if walk.transposed else [channel, Idx.const(i)]
                line = vector * in_pg + i
                if self.plan.weights_block:  # from channel 0 of group g0 on
                    scalar = [Idx.const(i), Idx.const(0)] if walk.transposed else [Idx.const(0), Idx.const(i)]
                    first = layout.offset([self.g0, *scalar, *taps])
                    at = self.weights.offset(line, 0)
                    loads.append(self.block_message("load", "wei", t, n, first, self.weights, at))
                    continue
                offset = layout.offset([group, *channels, *taps])
                offsets = split_offset(offset.expr * t.size, variant, self.bind_fixed)
                loads.append(
                    Call(
                        Send("load", "scattered", "global", t, n),
                        (ptr(self.buffers["wei"], 0), offsets, self.weights.pointer(line, 0), None),
                    )
                )
        if self.wide_weights is not None:
            loads += copy_tile(self.wide_weights, self.weights)
        return loads

    def _multiply(self) -> list[Stmt]:
        """Pixel by pixel: its operands (widened, replicated), then every mad that reads it."""
        plan, config = self.plan, self.config
        rows, simd = self.rows, config.simd
        in_pg = rows.path.in_per_group
        weights = self.wide_weights or self.weights
        readers: dict[int, list[tuple[int, int]]] = {}  # pixel: (output line, weights vector)
        for p in range(config.m_tile):
            for f, kw, vector in rows.taps():
                readers.setdefault(rows.pixel(p, kw, f), []).append((f * config.m_tile + p, vector))
        body: list[Stmt] = []
        for q, j in enumerate(rows.pixels):
            operands = self._operands(q)
            body += operands.prepare
            for line, vector in readers[j]:
                for i in range(in_pg):
                    for n0 in range(0, config.n_tile, simd):
                        func = Mad(simd, F32, weights.type, plan.operand, 1, 1)
                        target = plan.acc.pointer(line, n0)
                        w = weights.pointer(vector * in_pg + i, n0)
                        body.append(Call(func, (target, target, w, operands.pointer(i, n0))))
        return body

    def _operands(self, q: int) -> _Operands:
        """Pixel q's A_i as the mads read them: the segment itself, or its lanes widened and
        replicated into a work buffer (lane l of A_i = channel (l / OCg)*ICg + i)."""
        plan, n, walk = self.plan, self.config.n_tile, self.rows.path
        out_pg, in_pg = walk.out_per_group, walk.in_per_group
        segment, work = self.segment, self.work
        if work is None:
            return _Operands([], lambda i, n0: segment.pointer(q, n0))
        first = (q % plan.copies) * in_pg
        groups = n // out_pg
        moves: list[Stmt] = []
        for i in range(in_pg):
            func = Reorder(segment.type, plan.operand, groups, out_pg, in_pg, 0, out_pg, 1)
            moves.append(Call(func, (work.pointer(first + i, 0), segment.pointer(q, i))))
        return _Operands(moves, lambda i, n0: work.pointer(first + i, n0))


def phase_lines(layout: TileLayout, own: dict[str, Var], lines: int, grf: int) -> TileLayout:
    """`layout` (GRF-aligned lines) cut to `lines` lines, in the phase's own buffer."""
    if not own and lines == layout.rows:
        return layout
    buffer = own.get(layout.buffer.name, layout.buffer)
    return line_layout(buffer, layout.type, lines, layout.cols, 1, layout.cols, grf)[0]


def kernel_position(axis: Axis, tap: Idx) -> Idx:
    """The kernel position of a walk's tap (the tap itself going forward)."""
    if axis.kernel_first == 0 and axis.kernel_step == 1:
        return tap
    return tap * axis.kernel_step + axis.kernel_first


class _Operands:
    def __init__(self, prepare: list[Stmt], pointer):
        self.prepare = prepare
        self.pointer = pointer
