"""The IR of plan=first for backward data (`xegen.plan.first_layer_data`): per stride phase
(group_id2) a loop over the blocks of output channels and the phase's kernel rows, the output
channels across the lanes, then each accumulator line summed across its lanes.

    mb, od, oh, ow0 ...                        the thread's outputs of the phase (`rows.py`)
    acc = 0
    for (k_iter = 0; k_iter < OC/n * KD*KH of the phase) {
      c0 = block*n
      [segment = 0]; segment[q] = diff_dst[mb][c0 .. c0+n)[od][oh][ow0 + pixel q]    (block loads)
      w_load[v*IC + ic] = wei[c0 .. c0+n)[ic][kd][kh][kw of tap v]                  (blocks or gathers)
      [widen both]
      acc[line*IC + ic] += segment[pixel(p, kw)] * w_load[v*IC + ic]              (mad, lane by lane)
    }
    lane_sums[k] = acc[2k] + acc[2k+1], then halved again until one value per line
    [convert]; diff_src[mb][ic][id][ih][iw(line)] = lane_sums[line*IC + ic]      (scatters)
"""

from __future__ import annotations

from ..conv.index import Idx
from ..ir import Alloc, Call, Mad, Stmt, Var, cast, load, seq, store
from ..ir.types import F32
from ..plan.first_layer_data import FirstLayerDataPlan
from ..plan.rows import Rows
from .affine import split_offset
from .builder import copy_tile
from .depthwise import kernel_position, phase_lines
from .messages import Scope
from .rows import RowBuilder, constant_lanes, written_position


def build_first_layer_data(plan: FirstLayerDataPlan) -> Stmt:
    return _FirstLayerData(plan).build()


class _FirstLayerData(RowBuilder):
    plan: FirstLayerDataPlan

    def build(self) -> Stmt:
        origins = [self.pixel_origin(rows) for rows in self.plan.phases]
        return self.phase_kernel(self.plan.phases, origins, self._loaded(), self._phase)

    def _loaded(self) -> list[Var]:
        """The buffers a phase's loop fills."""
        plan = self.plan
        layouts = (plan.segment, plan.weights, plan.wide_segment, plan.wide_weights)
        return [t.buffer for t in layouts if t is not None]

    def _phase(self, rows: Rows, origin: dict[str, Idx], k_iter: Var, own_buffers: bool) -> list[Stmt]:
        """One phase's loop and epilogue; with `own_buffers` the loop loads into registers of its
        own (so that the scheduler may multi-buffer each phase's)."""
        plan, desc = self.plan, self.desc
        self.rows, self.origin = rows, origin
        self.loop = Scope(self.names)
        self.iw0 = self.top.bind("iw0", origin["ow0"] * rows.path.axis("w").stride - rows.w_pad)
        own = {var.name: Var(self.names.fresh(var.name), var.type) for var in self._loaded()} if own_buffers else {}
        grf = self.hw.grf_bytes
        vectors = len(rows.taps()) * desc.ic
        self.segment = phase_lines(plan.segment, own, len(rows.pixels), grf)
        self.weights = phase_lines(plan.weights, own, vectors, grf)
        self.wide_segment = plan.wide_segment and phase_lines(plan.wide_segment, own, len(rows.pixels), grf)
        self.wide_weights = plan.wide_weights and phase_lines(plan.wide_weights, own, vectors, grf)
        block, kd, kh = self.row_loop_indices(k_iter, rows)
        c0 = self.loop.bind("c0", block * self.config.n_tile) if plan.channel_blocks > 1 else Idx.const(0)
        body = self._segment(c0, kd, kh) + self._weights(c0, kd, kh) + self._multiply()
        loop: Stmt = self.row_loop(k_iter, body, rows) if rows.iterations > 1 else self.loop.wrap(seq(*body))
        for var, size in reversed(plan.grf_buffers):
            if var.name in own:
                loop = Alloc(own[var.name], size, "grf", loop)
        return self.zeroed(plan.acc) + [loop] + self._lane_sums() + self._stores(rows, origin)

    def _segment(self, c0: Idx, kd: Idx, kh: Idx) -> list[Stmt]:
        """The row's diff_dst pixels, each a block of the n channels from c0 (masked where padding)."""
        n = self.config.n_tile
        loads, masked = self.segment_loads(self.rows, self.origin, self.iw0, c0, kd, kh, self.segment, 0, n)
        body = (self.zeroed(self.segment) if masked else []) + loads
        if self.wide_segment is not None:
            body += copy_tile(self.wide_segment, self.segment)
        return body

    def _weights(self, c0: Idx, kd: Idx, kh: Idx) -> list[Stmt]:
        """A line per (tap, ic): wei[c0 .. c0+n)[ic][kernel position of the tap], a block where
        the output channels are innermost, else a gather."""
        plan, desc, n, walk = self.plan, self.desc, self.config.n_tile, self.rows.path
        layout, t = self.problem.layout_of("wei"), self.problem.type_of("wei")
        kernel = {"d": kernel_position(walk.axis("d"), kd), "h": kernel_position(walk.axis("h"), kh)}
        channels = c0 if plan.weights_block else c0 + self.lanes(n)
        variant = {var for var, _ in self.loop.lets}
        loads: list[Stmt] = []
        for f, kw, vector in self.rows.taps():
            taps = [kernel.get(d, kernel_position(walk.w_axes[f], Idx.const(kw))) for d in desc.used]
            for ic in range(desc.ic):
                element = layout.offset([channels, Idx.const(ic), *taps])
                at = self.weights.offset(vector * desc.ic + ic, 0)
                if plan.weights_block:
                    loads.append(self.block_message("load", "wei", t, n, element, self.weights, at))
                else:
                    offsets = split_offset(element.expr, variant, self.bind_fixed)
                    loads.append(self.gather("load", "wei", t, offsets, self.weights, at))
        if self.wide_weights is not None:
            loads += copy_tile(self.wide_weights, self.weights)
        return loads

    def _multiply(self) -> list[Stmt]:
        """acc[line*IC + ic] += segment[pixel] * weights[tap*IC + ic], pixel by pixel."""
        plan, config, ic_count = self.plan, self.config, self.desc.ic
        rows = self.rows
        segment = self.wide_segment or self.segment
        weights = self.wide_weights or self.weights
        func = Mad(config.simd, F32, weights.type, segment.type, 1, 1)
        body: list[Stmt] = []
        for q, j in enumerate(rows.pixels):
            for p in range(config.m_tile):
                for f, kw, vector in rows.taps():
                    if rows.pixel(p, kw, f) != j:
                        continue
                    line = f * config.m_tile + p
                    for ic in range(ic_count):
                        for n0 in range(0, config.n_tile, config.simd):
                            target = plan.acc.pointer(line * ic_count + ic, n0)
                            w = weights.pointer(vector * ic_count + ic, n0)
                            body.append(Call(func, (target, target, w, segment.pointer(q, n0))))
        return body

    def _lane_sums(self) -> list[Stmt]:
        """Each accumulator line summed across its n lanes: adjacent values added in pairs (the
        lines are n values each, n a power of two, so a pair never crosses lines), halving the
        values until one per line is left at the start of lane_sums."""
        plan = self.plan
        chunk = self.hw.grf_bytes // 4  # f32 values whose pairs span two GRFs
        source, values = plan.acc.buffer, plan.acc.rows * plan.acc.cols
        out: list[Stmt] = []
        while values > plan.acc.rows:
            values //= 2
            for k in range(0, values, chunk):
                lanes = min(chunk, values - k)
                t = F32.with_lanes(lanes)
                stride = 8 if lanes > 1 else None
                pair = load(source, 8 * k, t, stride) + load(source, 8 * k + 4, t, stride)
                out.append(store(plan.sums.buffer, 4 * k, pair))
            source = plan.sums.buffer
        if plan.store is not plan.sums:
            for k in range(0, values, chunk):
                lanes = min(chunk, values - k)
                converted = cast(
                    plan.store.type.with_lanes(lanes), load(plan.sums.buffer, 4 * k, F32.with_lanes(lanes))
                )
                out.append(store(plan.store.buffer, k * plan.store.type.size, converted))
        return out

    def _stores(self, rows: Rows, origin: dict[str, Idx]) -> list[Stmt]:
        """The thread's values of diff_src in scatters: value (f*m_tile + p)*IC + ic at input
        pixel iw of output p of walk f along w, channel ic."""
        plan, desc, m = self.plan, self.desc, self.config.m_tile
        walk = rows.path
        layout, t = self.problem.layout_of("src"), self.problem.type_of("src")
        od, oh = (written_position(walk.axis(dim), origin["o" + dim]) for dim in "dh")
        w_stride = walk.axis("w").out_stride
        base = self.spatial_index(layout, origin["mb"], Idx.const(0), od, oh, origin["ow0"] * w_stride)
        zero = self.spatial_index(layout, Idx.const(0), Idx.const(0), Idx.const(0), Idx.const(0), Idx.const(0)).lo
        deltas = []
        for axis in walk.w_axes:
            for p in range(m):
                for ic in range(desc.ic):
                    at = self.spatial_index(
                        layout,
                        Idx.const(0),
                        Idx.const(ic),
                        Idx.const(0),
                        Idx.const(0),
                        Idx.const(p * w_stride + axis.out_offset),
                    )
                    deltas.append(at.lo - zero)
        out: list[Stmt] = []
        for first in range(0, len(deltas), self.hw.max_message_simd):
            lanes = deltas[first : first + self.hw.max_message_simd]
            offsets = (base + constant_lanes(lanes)).expr
            out.append(self.gather("store", "src", t, offsets, plan.store, first))
        return out
