"""The IR of the backward-weights row plan (`xegen.plan.depthwise_weights`): channels across the
lanes, a loop over the thread's share of output blocks that loads each block's diff_dst pixels
and the input segments they read, and adds every product into its tap's sum.

    c0, reducer = group_id1*tg_k + thread_id1          the thread's channels and its share
    acc = 0, bias_acc = 0
    for (k_iter = 0; k_iter < per_thread) {
      item = reducer*per_thread + k_iter: mb, od, oh, ow0 of the block
      dd[p] = diff_dst[mb][c0 .. c0+n)[od][oh][ow0 + p]                    (block loads, masked past the items)
      for each kernel row r = (kd, kh): segment r = src pixels of the row  (block loads, masked where padding)
        acc[r*KW + kw] += segment_r[pixel(p, kw)] * dd[p]                  (mad)
      bias_acc += dd[p]
    }
    [SLM: line l of thread k at (l*tg_k + k)*n; barrier; thread k sums lines k, k + tg_k, ...]
    each line converted and scattered to diff_wei (or diff_bias), or added with atomics (k_split)
    [16-bit weights with k_split: added to f32 sums in the scratch buffer; fence; ticket = the
     slot's counter++; the last group's threads read the totals back, convert and store them]
"""

from __future__ import annotations

from ..conv.index import Idx
from ..ir import (
    Barrier,
    Broadcast,
    Call,
    Expr,
    Fence,
    For,
    IfThenElse,
    Load,
    Mad,
    Reorder,
    Send,
    Stmt,
    Var,
    cast,
    const,
    min_,
    ptr,
    seq,
    store,
)
from ..ir.types import F32, PTR, U32
from ..plan.depthwise_weights import DepthwiseWeightsPlan
from ..plan.tiles import TileLayout, dense_layout
from .builder import GROUP_IDS, THREAD_IDS, copy_tile
from .epilogue import finish
from .messages import take_ticket
from .rows import RowBuilder


def build_depthwise_weights(plan: DepthwiseWeightsPlan) -> Stmt:
    return DepthwiseWeightsBuilder(plan).build()


class DepthwiseWeightsBuilder(RowBuilder):
    """The backward-weights row walk and reduction (plan=first's backward weights derives from it,
    `first_layer_weights.py`, with a first layer's segment and multiplies)."""

    plan: DepthwiseWeightsPlan
    last: Expr | None = None  # in the last arrival's writes: whether this thread's group came last

    def build(self) -> Stmt:
        plan, config = self.plan, self.config
        self.c0 = self.channel_start()
        k = Idx(THREAD_IDS[1], 0, config.tg_k - 1)
        self.k_thread = k
        reducer = Idx(GROUP_IDS[1], 0, config.k_split - 1) * config.tg_k + k
        self.first_item = self.top.bind("first_item", reducer * plan.per_thread)
        k_iter = Var("k_iter")
        body = self._item(Idx(k_iter, 0, plan.per_thread - 1) if plan.per_thread > 1 else Idx.const(0))
        loop = self._item_loop(k_iter, body)
        zero = self.zeroed(plan.acc) + (self.zeroed(plan.bias_acc) if plan.bias_acc is not None else [])
        slm = Var("partial_sums", PTR) if plan.slm_bytes else None
        return self.kernel(zero + [loop], self._write(slm), slm)

    # -- the loop -------------------------------------------------------------------------------
    def _item_loop(self, k_iter: Var, body: list[Stmt]) -> Stmt:
        """The loop over the thread's items.  Where the shares overrun the items (the last
        threads' shares end past them), it stops at the last item: no loads, multiplies or
        zeroing for items that do not exist."""
        plan = self.plan
        items = self.loop.wrap(seq(*body))
        if plan.per_thread * plan.reducers <= plan.items:
            return self.row_loop(k_iter, body) if plan.per_thread > 1 else items
        if plan.per_thread == 1:
            live = self.first_item.below(plan.items)
            assert live is not None  # more reducers than items: the last have none
            return IfThenElse(live, items)
        self.names.used.add(k_iter.name)
        left = const(plan.items) - self.first_item.expr  # at most 0 for threads past the items
        return For(k_iter, const(0), min_(const(plan.per_thread), left), items)

    def _item(self, j: Idx) -> list[Stmt]:
        """One block of outputs: its diff_dst pixels, each kernel row's segment and products
        (`_item_loop` visits existing items only)."""
        plan, desc, config = self.plan, self.desc, self.config
        rows = plan.rows
        item = self.first_item + j
        if item.hi >= plan.items:  # the loop stops at the last item
            item = Idx(item.expr, item.lo, plan.items - 1)
        item = self.loop.bind("item", item)
        origin: dict[str, Idx] = {}
        below = item
        for name, size in (("owb", rows.blocks_per_row), ("oh", desc.oh), ("od", desc.od)):
            origin[name] = self.loop.bind(name, below.mod(size)) if size > 1 else Idx.const(0)
            below = below.div(size) if size > 1 else below
        origin["mb"] = self.loop.bind("mb", below) if desc.mb > 1 else Idx.const(0)
        origin["ow0"] = self.loop.bind("ow0", origin.pop("owb") * config.m_tile)
        iw0 = self.loop.bind("iw0", origin["ow0"] * desc.sw - desc.pw)
        body: list[Stmt] = []
        dst_layout, dst_type = self.problem.layout_of("dst"), self.problem.type_of("dst")
        for p in range(config.m_tile):
            element = self.spatial_index(
                dst_layout, origin["mb"], self.c0, origin["od"], origin["oh"], origin["ow0"] + p
            )
            body.append(
                self.block_message("load", "dst", dst_type, config.n_tile, element, plan.dd, plan.dd.offset(p, 0))
            )
        dd = plan.dd
        if plan.wide_dd is not None:
            body += copy_tile(plan.wide_dd, plan.dd)
            dd = plan.wide_dd
        body += self._segments(origin, iw0)
        body += self._multiplies(dd)
        if plan.bias_acc is not None:
            body += self._bias_sums(dd)
        return body

    def _segments(self, origin: dict[str, Idx], iw0: Idx) -> list[Stmt]:
        """Every kernel row's segment: a block load per pixel (masked where padding)."""
        plan, desc, rows = self.plan, self.desc, self.plan.rows
        pixels, n = len(rows.pixels), self.config.n_tile
        segment_masked = False
        loads: list[Stmt] = []
        for kd in range(desc.kd):
            for kh in range(desc.kh):
                first = (kd * desc.kh + kh) * pixels
                sends, masked = self.segment_loads(
                    rows, origin, iw0, self.c0, Idx.const(kd), Idx.const(kh), plan.segment, first, n
                )
                loads += sends
                segment_masked |= masked
        return (self.zeroed(plan.segment) if segment_masked else []) + loads

    def _multiplies(self, dd: TileLayout) -> list[Stmt]:
        return [call for row in range(self.desc.kd * self.desc.kh) for call in self._products(row, dd)]

    def _products(self, row: int, dd: TileLayout) -> list[Stmt]:
        """Kernel row `row`'s multiply-adds, pixel by pixel (widened first where they must be)."""
        plan, config, desc = self.plan, self.config, self.desc
        rows, simd, n = plan.rows, config.simd, config.n_tile
        readers: dict[int, list[tuple[int, int]]] = {}
        for p in range(config.m_tile):
            for kw in range(desc.kw):
                readers.setdefault(rows.pixel(p, kw), []).append((p, kw))
        out: list[Stmt] = []
        for q, j in enumerate(rows.pixels):
            line = row * len(rows.pixels) + q
            operand, at = plan.segment, plan.segment.offset(line, 0)
            if plan.work is not None:
                copy = q % plan.copies
                widen = Reorder(plan.segment.type, plan.operand, 1, n, 0, 1, 0, 1)
                out.append(Call(widen, (plan.work.pointer(copy, 0), plan.segment.pointer(line, 0))))
                operand, at = plan.work, plan.work.offset(copy, 0)
            for p, kw in readers[j]:
                for n0 in range(0, n, simd):
                    target = plan.acc.pointer(row * desc.kw + kw, n0)
                    source = ptr(operand.buffer, (at + n0) * operand.type.size)
                    func = Mad(simd, F32, dd.type, plan.operand, 1, 1)
                    out.append(Call(func, (target, target, dd.pointer(p, n0), source)))
        return out

    def _bias_sums(self, dd: TileLayout) -> list[Stmt]:
        """bias_acc += dd[p] for every output of the block."""
        plan, config = self.plan, self.config
        bias, simd = plan.bias_acc, config.simd
        assert bias is not None
        vector = F32.with_lanes(simd)
        out: list[Stmt] = []
        for p in range(config.m_tile):
            for n0 in range(0, config.n_tile, simd):
                value = Load(dd.buffer, const(dd.offset(p, n0) * dd.type.size), dd.type.with_lanes(simd))
                total = Load(bias.buffer, const(bias.offset(0, n0) * 4), vector) + cast(F32, value)
                out.append(store(bias.buffer, bias.offset(0, n0) * 4, total))
        return out

    # -- after the loop -----------------------------------------------------------------------------
    def _write(self, slm: Var | None) -> list[Stmt]:
        """Every line's sum over the threads sharing the channels, written or added (and with a
        scratch buffer, the last group's totals read back and written: `_last_arrival`)."""
        plan, config = self.plan, self.config
        out: list[Stmt] = []
        if slm is not None:
            k = self.k_thread
            out = [self._slm_line("store", slm, k, index, self._own_line(index)) for index in range(plan.lines)]
            if plan.holders < config.tg_k:
                out = self._fold(slm, out)
            out += [Call(Fence("slm")), Call(Barrier())]
        return out + self._line_writes(slm) + self._last_arrival(slm)

    def _line_writes(self, slm: Var | None) -> list[Stmt]:
        """The writes of the lines this thread owns: all of them without an SLM exchange; after
        it, lines k, k + tg_k, ... (those that exist), each summed over the group first (but in
        the last arrival, which reads the totals back instead)."""
        plan, config, k = self.plan, self.config, self.k_thread
        if slm is None:
            return [s for index in range(plan.lines) for s in self._write_line(Idx.const(index), self._own_line(index))]
        out: list[Stmt] = []
        for turn in range(-(-plan.lines // config.tg_k)):
            line = self.top.bind("line", k + turn * config.tg_k) if turn else k
            body = ([] if self.last is not None else self._sum_line(slm, line)) + self._write_line(line, plan.line_sum)
            guard = line.below(plan.lines)
            out += [IfThenElse(guard, seq(*body))] if guard is not None else body
        return out

    def _last_arrival(self, slm: Var | None) -> list[Stmt]:
        """With a scratch buffer (`xegen.plan.scratch`): once its sums are added, the thread
        fences them at the device's scope and takes a ticket from the counter of its slot (its
        block of channels, kernel row and thread of the group); the thread of the last group to
        arrive reads the totals of the lines it wrote back, converts and stores them."""
        plan, config = self.plan, self.config
        scratch = plan.scratch
        if scratch is None:
            return []
        row = Idx(GROUP_IDS[0], 0, plan.grid[0] - 1) * plan.grid[2] + Idx(GROUP_IDS[2], 0, plan.grid[2] - 1)
        slot = row * config.tg_k + self.k_thread
        out, self.last = take_ticket(self.buffers["scratch"], scratch, slot.expr, config.k_split)
        out += self._line_writes(slm)
        self.last = None
        return out

    def _slm_line(self, kind: str, slm: Var, slot: Idx, index: int, line: TileLayout) -> Stmt:
        """Line `index` of thread slot `slot` in SLM, at (slot + index*holders)*n*4: stored
        from `line` or loaded into it."""
        n = self.config.n_tile
        at = (slot + index * self.plan.holders) * (n * 4)
        return Call(
            Send(kind, "block", "slm", F32, n), (ptr(slm, at.expr), ptr(line.buffer, line.offset(0, 0) * 4), None)
        )

    def _fold(self, slm: Var, stores: list[Stmt]) -> list[Stmt]:
        """Where SLM holds half of the group's sums (`plan.holders`): the upper half's threads
        store their lines in the lower half's slots, and after a barrier each lower thread adds
        its partner's lines to its own and `stores` the totals in its slot (the same slot, so
        no barrier between its loads and its stores)."""
        plan, config = self.plan, self.config
        k, h, simd = self.k_thread, plan.holders, config.simd
        upper, lower = k.at_least(h), k.below(h)
        assert upper is not None and lower is not None  # h < tg_k
        partial = _one_line(plan.partial, 0)
        vector = F32.with_lanes(simd)
        moved = [self._slm_line("store", slm, k - h, index, self._own_line(index)) for index in range(plan.lines)]
        added: list[Stmt] = []
        for index in range(plan.lines):
            own = self._own_line(index)
            added.append(self._slm_line("load", slm, k, index, partial))
            for n0 in range(0, config.n_tile, simd):
                at = own.offset(0, n0) * 4
                total = Load(own.buffer, const(at), vector) + Load(
                    partial.buffer, const(partial.offset(0, n0) * 4), vector
                )
                added.append(store(own.buffer, at, total))
        return [
            IfThenElse(upper, seq(*moved)),
            Call(Fence("slm")),
            Call(Barrier()),
            IfThenElse(lower, seq(*added, *stores)),
        ]

    def _own_line(self, line: int) -> TileLayout:
        """The thread's own sums of line `line` (a tap's, or the bias's after the taps) as a
        one-line tile."""
        plan = self.plan
        if line < plan.acc.rows:
            return _one_line(plan.acc, line)
        assert plan.bias_acc is not None
        return plan.bias_acc

    def _sum_line(self, slm: Var, line: Idx) -> list[Stmt]:
        """line_sum = the sum over the group's threads of their sums of `line`, read from SLM a
        chunk of slots at a time (`plan.holders` slots, each one thread's sums or two's)."""
        plan, config = self.plan, self.config
        n, simd = config.n_tile, config.simd
        vector = F32.with_lanes(simd)
        out: list[Stmt] = []
        for first in range(0, plan.holders, plan.chunk):
            count = min(plan.chunk, plan.holders - first)
            at = (line * plan.holders + first) * (n * 4)
            out.append(
                Call(
                    Send("load", "block", "slm", F32, count * n), (ptr(slm, at.expr), ptr(plan.partial.buffer, 0), None)
                )
            )
            for n0 in range(0, n, simd):
                target = plan.line_sum.offset(0, n0) * 4
                terms = [Load(plan.partial.buffer, const(plan.partial.offset(c, n0) * 4), vector) for c in range(count)]
                if first:
                    terms.insert(0, Load(plan.line_sum.buffer, const(target), vector))
                total = terms[0]
                for term in terms[1:]:
                    total = total + term
                out.append(store(plan.line_sum.buffer, target, total))
        return out

    def _write_line(self, line: Idx, sums: TileLayout) -> list[Stmt]:
        """Line `line`'s sums (a tap of diff_wei, or diff_bias when it is past the taps) stored in
        the output's type, or added with atomics when groups share the channels."""
        plan = self.plan
        taps = plan.acc.rows
        if line.is_const:
            return self._weights_line(line, sums) if line.lo < taps else self._bias_line(sums)
        weights = self._weights_line(line, sums)
        if plan.bias_acc is None:
            return weights
        below = line.below(taps)
        if below is None:
            return weights
        return [IfThenElse(below, seq(*weights), seq(*self._bias_line(sums)))]

    def _weights_line(self, line: Idx, sums: TileLayout) -> list[Stmt]:
        desc, n = self.desc, self.config.n_tile
        layout = self.problem.layout_of("wei")
        kw = line.mod(desc.kw) if desc.kw > 1 else Idx.const(0)
        kh = line.div(desc.kw).mod(desc.kh) if desc.kh > 1 else Idx.const(0)
        kd = line.div(desc.kw * desc.kh) if desc.kd > 1 else Idx.const(0)
        kernel = {"d": kd, "h": kh, "w": kw}
        group = self.c0 + self.lanes(n)
        offsets = layout.offset([group, Idx.const(0), Idx.const(0), *(kernel[d] for d in desc.used)])
        return self._output("wei", offsets, sums)

    def _bias_line(self, sums: TileLayout) -> list[Stmt]:
        return self._output("bias", self.c0 + self.lanes(self.config.n_tile), sums)

    def _output(self, tensor: str, offsets: Idx, sums: TileLayout) -> list[Stmt]:
        """`sums` into `tensor` at element `offsets` (one per lane): added with atomics when
        k_split groups share the channels (to the f32 output, or to its sums in the scratch
        buffer), else converted and scattered.  In the last arrival (`self.last` set), the
        scratch's totals are read back into `sums` first, and only the last group stores."""
        plan, n = self.plan, self.config.n_tile
        t = self.problem.type_of(tensor)
        scratch, mask = plan.scratch, self.last
        out: list[Stmt] = []
        if self.config.k_split > 1 and mask is None:
            func = Send("atomic", "scattered", "global", F32, n, atomic="fadd")
            base = ptr(self.buffers["scratch"], scratch.offset(tensor)) if scratch else ptr(self.buffers[tensor], 0)
            return [Call(func, (base, offsets.expr * 4, sums.pointer(0, 0), None))]
        if mask is not None:
            assert scratch is not None
            # an exchange with zeros: the old values are the totals, and the sums are left zero
            simd = self.config.simd
            zero = Broadcast(const(0, U32), simd)
            out += [store(sums.buffer, sums.offset(0, n0) * 4, zero) for n0 in range(0, n, simd)]
            swap = Send("atomic", "scattered", "global", U32, n, atomic="xchg", returns=True)
            totals = ptr(self.buffers["scratch"], scratch.offset(tensor))
            out.append(Call(swap, (totals, offsets.expr * 4, sums.pointer(0, 0), mask)))
        target = sums
        if t != F32:
            target = plan.store
            out += finish(sums, plan.store, None)
        return out + [self.gather("store", tensor, t, offsets.expr, target, target.offset(0, 0), mask)]


def _one_line(layout: TileLayout, line: int) -> TileLayout:
    """Line `line` of a tile of GRF-aligned lines, as a one-line tile of the same buffer."""
    return dense_layout(layout.buffer, layout.type, 1, layout.cols, base=layout.offset(line, 0))
