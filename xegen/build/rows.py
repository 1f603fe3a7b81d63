"""What the builders of the row plans (`depthwise.py`, `first_layer.py`) share: a thread's
outputs, the loop over kernel rows, channel-vector messages, the epilogue, the kernel's frame.

The ids (as in `builder.py`): thread_id0/group_id0 walk blocks of output channels,
thread_id1/group_id1 blocks of `m_tile` outputs along w (row by row: mb, od, oh, then the blocks
of a row), group_id2 is 0.  A thread's block of channels starts at
`c0 = min(block*n_tile, OC - n_tile)`, its outputs at `ow0 = min(block*m_tile, OW - m_tile)` of
its row (`xegen.plan.rows`: the last blocks are moved back, so nothing needs a mask).
"""

from __future__ import annotations

from ..conv.index import Idx, all_of
from ..conv.layout import Layout
from ..conv.problem import Problem
from ..ir import (
    Alloc,
    Call,
    Expr,
    For,
    IfThenElse,
    IntImm,
    Let,
    Names,
    Send,
    Stmt,
    Var,
    const,
    format_expr,
    min_,
    ptr,
    seq,
)
from ..ir.expr import Shuffle
from ..ir.types import PTR, Type
from ..plan.rows import Axis, Rows
from ..plan.tiles import TileLayout
from .builder import GROUP_IDS, THREAD_IDS, kernel_arguments
from .epilogue import finish
from .messages import Scope, lanes_of, zero_fill


class RowBuilder:
    """The frame of a row kernel; a plan's builder adds its loop body and its buffers."""

    def __init__(self, plan):
        self.plan = plan
        self.problem: Problem = plan.gemm.problem
        self.desc = self.problem.desc
        self.config, self.hw = plan.config, plan.hw
        self.names = Names()
        self.names.used.update(v.name for v in THREAD_IDS + GROUP_IDS)
        self.names.used.update(("src", "wei", "dst", "bias", "scratch", "k_iter"))
        self.top = Scope(self.names)
        self.loop = Scope(self.names)
        self.buffers = {t: Var(t, PTR) for t in ("src", "wei", "dst", "bias", "scratch")}
        self.local_buffers: set[str] = set()  # the plan's GRF buffers allocated inside the kernel, not at its top
        self.fixed: dict[str, Expr] = {}  # loop-invariant lane vectors bound before the loop (`bind_fixed`)

    # -- where the thread's outputs are ----------------------------------------------------------
    def channel_start(self) -> Idx:
        """The first output channel of the thread's block."""
        config, oc = self.config, self.plan.rows.path.out_channels
        blocks = -(-oc // config.n_tile)
        index = Idx(GROUP_IDS[0], 0, self.plan.grid[0] - 1) * config.tg_n + Idx(THREAD_IDS[0], 0, config.tg_n - 1)
        start = self.top.bind("c_block", index) * config.n_tile
        if blocks * config.n_tile == oc and self.plan.grid[0] * config.tg_n == blocks:
            return self.top.bind("c0", start)
        return self.top.bind("c0", _clamped(start, oc - config.n_tile))

    def pixel_origin(self, rows: Rows) -> dict[str, Idx]:
        """mb, od, oh and ow0 (the first output along w) of the thread's block."""
        desc, config = self.desc, self.config
        index = Idx(GROUP_IDS[1], 0, self.plan.grid[1] - 1) * config.tg_m + Idx(THREAD_IDS[1], 0, config.tg_m - 1)
        if index.hi >= rows.spatial_blocks:
            index = _clamped(index, rows.spatial_blocks - 1)
        block = self.top.bind("block", index)
        origin: dict[str, Idx] = {}
        below = block
        sizes = (rows.path.axis("h").outputs, rows.path.axis("d").outputs, desc.mb)
        for name, size in zip(("owb", "oh", "od", "mb"), (rows.blocks_per_row, *sizes), strict=True):
            if name == "mb":
                origin[name] = self.top.bind("mb", below)
                break
            origin[name] = self.top.bind(name, below.mod(size)) if size > 1 else Idx.const(0)
            below = below.div(size)
        ow0 = origin.pop("owb") * config.m_tile
        if rows.blocks_per_row * config.m_tile > rows.ow:
            ow0 = _clamped(ow0, rows.ow - config.m_tile)
        origin["ow0"] = self.top.bind("ow0", ow0)
        return origin

    def row_loop_indices(self, k_iter: Var, rows: Rows) -> tuple[Idx, Idx, Idx]:
        """(ic, kd, kh) of the K loop's iteration `k_iter` (ic 0 unless the loop walks channels)."""
        it = Idx(k_iter, 0, rows.iterations - 1)
        kh = self.loop.bind("kh", it.mod(rows.kh)) if rows.kh > 1 else Idx.const(0)
        kd = self.loop.bind("kd", it.div(rows.kh).mod(rows.kd)) if rows.kd > 1 else Idx.const(0)
        ic = self.loop.bind("ic", it.div(rows.kh * rows.kd)) if rows.channels > 1 else Idx.const(0)
        return ic, kd, kh

    def input_rows(
        self, origin: dict[str, Idx], kd: Idx, kh: Idx, rows: Rows | None = None
    ) -> tuple[dict[str, Idx], list[Expr]]:
        """Positions id, ih in the tensor read of the row (kd, kh) for the thread's outputs (of
        `rows`, the plan's unless given), and the conditions that they are inside it (not padding)."""
        walk = (rows or self.plan.rows).path
        positions, masks = {}, []
        for dim, o, k in (("d", origin["od"], kd), ("h", origin["oh"], kh)):
            axis = walk.axis(dim)
            pos = o * axis.stride + k * axis.step - axis.pad
            positions["i" + dim] = self.loop.bind("i" + dim, pos) if not pos.is_const else pos
            masks += pos.in_range(0, axis.inputs)
        return positions, masks

    def segment_loads(
        self,
        rows: Rows,
        origin: dict[str, Idx],
        iw0: Idx,
        channel: Idx,
        kd: Idx,
        kh: Idx,
        segment: TileLayout,
        first_line: int,
        channels: int,
    ) -> tuple[list[Stmt], bool]:
        """The block loads of kernel row (kd, kh)'s segment: pixel q of the walk's tensor read,
        `channels` channels from `channel`, into line first_line + q of `segment`, masked where
        padding; and whether any is masked (the segment must then be zeroed first)."""
        positions, row_masks = self.input_rows(origin, kd, kh, rows)
        tensor = rows.path.reads
        layout, t = self.problem.layout_of(tensor), self.problem.type_of(tensor)
        loads, masked = [], False
        for q, j in enumerate(rows.pixels):
            iw = iw0 + j
            mask = all_of(row_masks + iw.in_range(0, rows.path.axis("w").inputs))
            masked |= mask is not None
            element = self.spatial_index(layout, origin["mb"], channel, positions["id"], positions["ih"], iw)
            offset = segment.offset(first_line + q, 0)
            loads.append(self.block_message("load", tensor, t, channels, element, segment, offset, mask))
        return loads, masked

    def spatial_index(self, layout: Layout, mb: Idx, channel: Idx, d: Idx, h: Idx, w: Idx) -> Idx:
        """Element offset of (mb, channel, d, h, w) in an activation layout of this problem."""
        spatial = {"d": d, "h": h, "w": w}
        return layout.offset([mb, channel, *(spatial[dim] for dim in self.desc.used)])

    # -- messages ---------------------------------------------------------------------------------
    def block_message(
        self,
        op: str,
        tensor: str,
        t: Type,
        count: int,
        element: Idx,
        register: TileLayout,
        base: int,
        mask: Expr | None = None,
    ) -> Stmt:
        """A block message of `count` elements at element offset `element` of `tensor`, to or
        from `register`'s buffer at element `base`."""
        func = Send(op, "block", "global", t, count)
        return Call(
            func,
            (ptr(self.buffers[tensor], element.expr * t.size), ptr(register.buffer, base * register.type.size), mask),
        )

    def gather(
        self, op: str, tensor: str, t: Type, offsets: Expr, register: TileLayout, base: int, mask: Expr | None = None
    ) -> Stmt:
        """A gather (or scatter) of one value per lane at element `offsets` of `tensor`."""
        lanes = offsets.type.lanes
        func = Send(op, "scattered", "global", t, lanes)
        target = ptr(register.buffer, base * register.type.size)
        return Call(func, (ptr(self.buffers[tensor], 0), offsets * t.size, target, mask))

    def lanes(self, count: int) -> Idx:
        """0, 1, ..., count-1: one value per lane."""
        return lanes_of(self.top, count)

    # -- after the loop -----------------------------------------------------------------------------
    def load_bias(self, bias: TileLayout | None, c0: Idx) -> list[Stmt]:
        """The bias of the thread's channels.  A depthwise kernel loads it before its loop, where
        its latency hides behind the loop's (after it, a short latency-bound kernel waited for it
        in full); a first layer's long loop hides nothing by that, and the bias's registers,
        live through the loop, left some tiles short of GRFs (XeLP f32 c3d conv1, m_tile=16)."""
        if bias is None:
            return []
        return [self.block_message("load", "bias", bias.type, self.config.n_tile, c0, bias, 0)]

    def epilogue(
        self,
        acc: TileLayout,
        store: TileLayout,
        bias: TileLayout | None,
        c0: Idx,
        origin: dict[str, Idx],
        block: bool,
        rows: Rows | None = None,
        bias_loaded: bool = False,
    ) -> list[Stmt]:
        """Bias (loaded here unless `load_bias` did before the loop), the eltwise post-ops and
        conversion of the accumulators, then per output pixel a block store of its channels
        (`block`) or a scatter, at the positions `rows` (the plan's unless given) writes.
        (Post-ops that read a tensor, and int8 scales, are the GEMM plan's: the row plans'
        `unsuited` refuses them.)"""
        walk = (rows or self.plan.rows).path
        out = [] if bias_loaded else self.load_bias(bias, c0)
        out += finish(acc, store, bias, [(op, None) for op in self.problem.post_ops])
        tensor = walk.writes
        layout, t = self.problem.layout_of(tensor), self.problem.type_of(tensor)
        n = self.config.n_tile
        channels = c0 if block else c0 + self.lanes(n)
        od, oh = (written_position(walk.axis(dim), origin["o" + dim]) for dim in "dh")
        m = self.config.m_tile
        for f, axis in enumerate(walk.w_axes):
            for p in range(m):
                ow = written_position(axis, origin["ow0"] + p)
                element = self.spatial_index(layout, origin["mb"], channels, od, oh, ow)
                at = store.offset(f * m + p, 0)
                if block:
                    out.append(self.block_message("store", tensor, t, n, element, store, at))
                else:
                    out.append(self.gather("store", tensor, t, element.expr, store, at))
        return out

    def bind_fixed(self, e: Expr) -> Expr:
        """A loop-invariant vector, bound once before the loop."""
        key = format_expr(e)
        if key not in self.fixed:
            self.fixed[key] = self.top.bind("w_lanes", Idx(e, 0, 0)).expr
        return self.fixed[key]

    # -- the kernel -------------------------------------------------------------------------------
    def phase_kernel(self, phases: tuple[Rows, ...], origins: list[dict[str, Idx]], loaded: list[Var], build) -> Stmt:
        """The whole kernel of backward data's stride phases (`origins`: each one's
        `pixel_origin`): `build(rows, origin, k_iter, own_buffers)` gives a phase's statements
        (its loop and epilogue); with several phases group_id2 picks one, each loading into
        registers of its own (`loaded`'s copies)."""
        if len(phases) == 1:
            return self.kernel(build(phases[0], origins[0], Var("k_iter"), False), [])
        phase = Idx(GROUP_IDS[2], 0, len(phases) - 1)
        branch: Stmt | None = None
        for index in reversed(range(len(phases))):
            k_iter = Var(self.names.fresh("k_iter"))
            body = seq(*build(phases[index], origins[index], k_iter, True))
            below = phase.below(index + 1) if index < len(phases) - 1 else None
            branch = body if below is None else IfThenElse(below, body, branch)
        assert branch is not None
        self.local_buffers = {var.name for var in loaded}
        return self.kernel([branch], [])

    def row_loop(self, k_iter: Var, body: list[Stmt], rows: Rows | None = None) -> For:
        """The loop over the kernel rows of `rows` (the plan's unless given) with `body` and the
        lets of the loop scope."""
        self.names.used.add(k_iter.name)
        iterations = rows.iterations if rows is not None else self.plan.iterations
        return For(k_iter, const(0), const(iterations), self.loop.wrap(seq(*body)))

    def kernel(self, main: list[Stmt], epilogue: list[Stmt], slm: Var | None = None) -> Stmt:
        """The whole kernel: ids and arguments, the top lets, GRF (and SLM) allocations, `main`
        (the zeroed accumulators ..., the loop over kernel rows), the epilogue."""
        kernel = seq(*main, *epilogue)
        for var, size in reversed(self.plan.grf_buffers):
            if var.name not in self.local_buffers:
                kernel = Alloc(var, size, "grf", kernel)
        if slm is not None:
            kernel = Alloc(slm, self.plan.slm_bytes, "slm", kernel)
        kernel = self.top.wrap(kernel)
        for var in reversed(THREAD_IDS + GROUP_IDS):
            kernel = Let(var, None, kernel)
        for name in reversed(kernel_arguments(self.plan)):
            kernel = Let(self.buffers[name], None, kernel)
        return kernel

    def zeroed(self, layout: TileLayout) -> list[Stmt]:
        return zero_fill(layout.buffer, layout.bytes, self.hw.grf_bytes)


def written_position(axis: Axis, o: Idx) -> Idx:
    """The position output o of `axis` is written at (o itself going forward)."""
    if axis.out_stride == 1 and axis.out_offset == 0:
        return o
    return o * axis.out_stride + axis.out_offset


def _clamped(value: Idx, high: int) -> Idx:
    """min(value, high), with its range."""
    if value.hi <= high:
        return value
    return Idx(min_(value.expr, const(high)), min(value.lo, high), high)


def constant_lanes(values: list[int]) -> Idx:
    """A constant vector, one value per lane (a scalar when they are all equal)."""
    if len(set(values)) == 1:
        return Idx.const(values[0])
    return Idx(Shuffle(tuple(IntImm(v) for v in values), tuple(range(len(values)))), min(values), max(values))
