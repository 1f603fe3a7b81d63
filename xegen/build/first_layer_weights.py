"""The IR of plan=first for backward weights (`xegen.plan.first_layer_weights`): the depthwise
backward-weights loop (`depthwise_weights.py`) with a first layer's segment, gathered, and its
values broadcast into the kernel row's KW x IC sums.

    c0, (kd, kh) = kernel row group_id2, reducer = group_id1*tg_k + thread_id1
    acc = 0, bias_acc = 0
    for (k_iter = 0; k_iter < per_thread) {
      item = reducer*per_thread + k_iter: mb, od, oh, ow0 of the block
      dd[p] = diff_dst[mb][od][oh][ow0 + p][c0 .. c0+n)                     (block loads)
      segment[v] = src[mb][id][ih][iw0*IC + v]       (dword blocks where the segment is inside the row,
                                                      else gathers, lanes masked by their pixel; zero on padding rows)
      acc[kw*IC + ic] += segment[(p*SW + kw*(DW+1))*IC + ic] * dd[p]         (mad, the value broadcast)
      bias_acc += dd[p]                                                      (kernel row 0)
    }
    the sums combined and written as the depthwise plan's; diff_bias by kernel row 0 only
"""

from __future__ import annotations

from ..conv.index import Idx, all_of
from ..ir import Call, IfThenElse, Mad, Send, Stmt, ptr, seq
from ..ir.types import F32, U32
from ..plan.first_layer_weights import FirstLayerWeightsPlan
from ..plan.tiles import TileLayout
from .builder import GROUP_IDS, copy_tile
from .depthwise_weights import DepthwiseWeightsBuilder


def build_first_layer_weights(plan: FirstLayerWeightsPlan) -> Stmt:
    return _FirstLayerWeights(plan).build()


class _FirstLayerWeights(DepthwiseWeightsBuilder):
    plan: FirstLayerWeightsPlan

    def build(self) -> Stmt:
        desc = self.desc
        row = Idx(GROUP_IDS[2], 0, desc.kd * desc.kh - 1)
        self.kernel_row = row
        self.kh = self.top.bind("kh", row.mod(desc.kh)) if desc.kh > 1 else Idx.const(0)
        self.kd = self.top.bind("kd", row.div(desc.kh)) if desc.kd > 1 else Idx.const(0)
        return super().build()

    def _segments(self, origin: dict[str, Idx], iw0: Idx) -> list[Stmt]:
        """The thread's kernel row's segment for the item, where the row is inside the input
        (else zeros): dword blocks where the segment is inside the row along w, else gathers of
        `lanes` values, each lane masked by whether its pixel is inside the row."""
        plan, desc = self.plan, self.desc
        positions, row_masks = self.input_rows(origin, self.kd, self.kh)
        t = self.problem.type_of("src")
        start = self.spatial_index(
            self.problem.layout_of("src"), origin["mb"], Idx.const(0), positions["id"], positions["ih"], iw0
        )
        gathers, masked = [], False
        for first in range(0, plan.row_values, plan.lanes):
            count = min(plan.lanes, plan.row_values - first)
            # lane l's pixel iw0 + (first + l) // IC is inside the row exactly when its value
            # iw0*IC + first + l is inside the row's IW*IC: a compare of the lane-index vector
            # (bound once per kernel) with no per-item vector of pixel numbers to build
            values = iw0 * desc.ic + first + self.lanes(count)
            mask = all_of(values.in_range(0, desc.iw * desc.ic))
            masked |= mask is not None
            offsets = (start + first + self.lanes(count)).expr
            gathers.append(self.gather("load", "src", t, offsets, plan.segment, plan.segment.offset(0, first), mask))
        loads: list[Stmt] = (self.zeroed(plan.segment) if masked else []) + gathers
        inside = plan.inside()
        if inside is not None:
            blocks: list[Stmt] = [
                Call(
                    Send("load", "block", "global", U32, dwords),
                    (
                        ptr(self.buffers["src"], start.expr * t.size - plan.phase + byte),
                        ptr(plan.segment.buffer, byte),
                        None,
                    ),
                )
                for byte, dwords in plan.blocks
            ]
            fits = all_of(iw0.in_range(inside[0], inside[1] - plan.rows.span + 1))
            loads = blocks if fits is None else [IfThenElse(fits, seq(*blocks), seq(*loads))]
        row = all_of(row_masks)
        body: list[Stmt] = loads if row is None else [IfThenElse(row, seq(*loads), seq(*self.zeroed(plan.segment)))]
        if plan.work is not None:
            body += copy_tile(plan.work, plan.segment_values)
        return body

    def _multiplies(self, dd: TileLayout) -> list[Stmt]:
        """acc[kw*IC + ic] += segment value (broadcast) * dd[p], output by output."""
        plan, config, desc = self.plan, self.config, self.desc
        segment = plan.work or plan.segment
        func = Mad(config.simd, F32, dd.type, segment.type, 1, 0)
        out: list[Stmt] = []
        for p in range(config.m_tile):
            for kw in range(desc.kw):
                for ic in range(desc.ic):
                    value = segment.pointer(0, plan.value(p, kw, ic))
                    for n0 in range(0, config.n_tile, config.simd):
                        target = plan.acc.pointer(kw * desc.ic + ic, n0)
                        out.append(Call(func, (target, target, dd.pointer(p, n0), value)))
        return out

    def _weights_line(self, line: Idx, sums: TileLayout) -> list[Stmt]:
        """Line kw*IC + ic of the thread's kernel row."""
        desc, n = self.desc, self.config.n_tile
        ic = line.mod(desc.ic) if desc.ic > 1 else Idx.const(0)
        kw = line.div(desc.ic) if desc.ic > 1 else line
        kernel = {"d": self.kd, "h": self.kh, "w": kw}
        offsets = self.problem.layout_of("wei").offset([self.c0 + self.lanes(n), ic, *(kernel[d] for d in desc.used)])
        return self._output("wei", offsets, sums)

    def _bias_sums(self, dd: TileLayout) -> list[Stmt]:
        """The bias gradient's sums, in kernel row 0's threads only (the one row that writes
        them; the other rows' bias lines stay zero through the reduction)."""
        sums = super()._bias_sums(dd)
        first = self.kernel_row.below(1)
        return sums if first is None else [IfThenElse(first, seq(*sums))]

    def _bias_line(self, sums: TileLayout) -> list[Stmt]:
        """diff_bias, written by the threads of kernel row 0 (every row sums it)."""
        write = super()._bias_line(sums)
        first = self.kernel_row.below(1)
        return write if first is None else [IfThenElse(first, seq(*write))]
