"""Build the kernel IR of a convolution: grid mapping, K loop, loads, multiply, epilogue, stores.

The grid and the thread ids (external `let`s, all s32):

| variable                 | meaning                                                      |
|--------------------------|--------------------------------------------------------------|
| thread_id0, thread_id1   | thread index in the group along N and along M                |
| thread_id2               | always 0 (groups are tg_n x tg_m x 1 threads)                |
| group_id0, group_id1     | group index along N and along M                              |
| group_id2                | group * k_split + K slice (unpacked with / and %)            |

A thread computes an m_tile x n_tile block of C for one group of the convolution.  Its loop over K
has the shape the scheduler works on:

    for (k_iter = 0; k_iter < iterations) {
      global -> GRF loads of A and B           (zeroing first where masks may drop elements)
      [GRF -> SLM stores; fence; barrier; SLM -> GRF loads; barrier]      (slm=1)
      reorders into the multiply's layouts
      multiplies (dpas / mad / dp4a) [and the bias-gradient mads]
    }

followed by the epilogue (convert, bias, ReLU, convert) into a store tile and the stores (atomic
adds when K is split across groups; for 16-bit outputs into an f32 scratch buffer that the last
group converts from, `_scratch_epilogue`).  With slm=1 the threads of a group load the group's A and B
tiles cooperatively, each thread a slice, and read their own tiles back from SLM.
"""

from __future__ import annotations

from dataclasses import replace

from ..conv.index import Idx, all_of
from ..ir import (
    Alloc,
    Barrier,
    Call,
    Expr,
    Fence,
    For,
    IfThenElse,
    Let,
    Load,
    Names,
    Reorder,
    Stmt,
    Var,
    const,
    free_vars,
    ptr,
    seq,
    store,
)
from ..ir.types import F32, PTR, U32, Type
from ..plan.block2d import Block2dPlan
from ..plan.config import may_guard_tile, tap_loop
from ..plan.dpasw import pair_half
from ..plan.gemm import View
from ..plan.kernel import KernelPlan, OperandPlan, OutputPlan, Placement, SlmPlan
from ..plan.messages import LinePlan, Run
from ..plan.scratch import Scratch
from ..plan.tiles import TileLayout, dense_layout, tile_moves
from .epilogue import Scaling, finish
from .messages import (
    Origin,
    Scope,
    components,
    emit_block2d,
    emit_global,
    masked_fill,
    shared_conditions,
    slm_run_messages,
    take_ticket,
    zero_fill,
)
from .multiply import multiply, reduce_columns, sum_row

THREAD_IDS = tuple(Var(f"thread_id{i}") for i in range(3))
K_ITER = Var("k_iter")  # the K loop's variable (the inner one when K loops per kernel tap)
TAP = Var("k_tap")  # the outer K loop's variable when K loops per kernel tap (`tap_loop`)
GROUP_IDS = tuple(Var(f"group_id{i}") for i in range(3))


def copy_tile(dst: TileLayout, src: TileLayout, saturate: bool = False) -> list[Stmt]:
    """`reorder` calls moving every element of `src` to its place in `dst` (with conversion)."""
    dst, src, moves = tile_moves(dst, src, saturate)
    calls: list[Stmt] = []
    for m in moves:
        func = Reorder(src.type, dst.type, m.rows, m.cols, m.s_rs, m.s_cs, m.d_rs, m.d_cs, saturate)
        calls.append(Call(func, (ptr(dst.buffer, m.dst * dst.type.size), ptr(src.buffer, m.src * src.type.size))))
    return calls


class _Builder:
    def __init__(self, plan: KernelPlan):
        self.plan = plan
        self.gemm, self.config, self.hw = plan.gemm, plan.config, plan.hw
        self.names = Names()
        self.names.used.update(v.name for v in THREAD_IDS + GROUP_IDS)
        problem = plan.gemm.problem
        tensors = ("src", "wei", "dst", "bias", "scratch") + problem.post_op_inputs + problem.quantization.tensors
        self.names.used.update(tensors + (K_ITER.name, TAP.name))
        self.top = Scope(self.names)
        self.loop = Scope(self.names)
        self.buffers = {t: Var(t, PTR) for t in tensors}

    def idx(self, var: Var, count: int) -> Idx:
        return Idx(var, 0, count - 1)

    def build(self) -> Stmt:
        plan, config, gemm = self.plan, self.config, self.gemm
        grid = plan.grid
        tid0, tid1 = self.idx(THREAD_IDS[0], config.tg_n), self.idx(THREAD_IDS[1], config.tg_m)
        # the thread's slice of K within the group (every tg_k-th K block)
        self.k_thread = tid2 = self.idx(THREAD_IDS[2], config.tg_k) if config.tg_k > 1 else Idx.const(0)
        gid0, gid1, gid2 = (self.idx(GROUP_IDS[i], grid[i]) for i in range(3))
        top = self.top
        # group_id2 packs the convolution group (outer) and the K slice (inner)
        self.group = top.bind("group", gid2.div(config.k_split)) if gemm.groups > 1 else Idx.const(0)
        self.k_slice = top.bind("k_slice", gid2.mod(config.k_split)) if config.k_split > 1 else Idx.const(0)
        m_index = top.bind("m_tile_index", gid1 * config.tg_m + tid1)
        n_index = top.bind("n_tile_index", gid0 * config.tg_n + tid0)
        self.m_index, self.n_index = m_index, n_index
        m_start = top.bind("m_start", m_index * config.m_tile)
        n_start = top.bind("n_start", n_index * config.n_tile)
        k_iter = K_ITER
        # the group's K blocks of this iteration, one per thread along K
        k_group = config.tg_k * config.k_block
        self.taps = tap_loop(config, self.gemm)
        self.tap_fills: list[Stmt] = []  # zero fills done once per tap (`_global_load`)
        k_shift = tid2 * config.k_block if config.tg_k > 1 else Idx.const(0)
        if self.taps is None:
            k_index = self.k_slice * plan.iterations + self.idx(k_iter, plan.iterations)
            k_start = self.loop.bind("k_start", k_index * k_group)
            k_origin = Origin("k", k_start, "k", self.loop, k_group)
            thread_k = k_origin if config.tg_k == 1 else replace(k_origin, shift=k_shift)
        else:
            # the outer loop walks the kernel taps, the inner one the tap's channel blocks: a
            # tap's (kd, kh, kw) and what depends on them only are computed once per tap
            self.tap_scope = Scope(self.names)
            channels = self.taps.inner * k_group
            k_start = self.tap_scope.bind("k_start", self.idx(TAP, self.taps.outer) * channels)
            k_origin = Origin("k", k_start, "k", self.tap_scope, channels, moving=self.loop)
            thread_k = replace(k_origin, shift=self.idx(k_iter, self.taps.inner) * k_group + k_shift)
        self.origin = {
            "m": Origin("m", m_start, "m", top, config.m_tile),
            "n": Origin("n", n_start, "n", top, config.n_tile),
            "k": thread_k,
        }
        # the rows of A the thread loads: its M tile, or with dpasw its half of the pair's tile
        self.a_half, self.a_origin = Idx.const(0), self.origin
        if config.fma == "dpasw":
            self.a_half = top.bind("pair_half", pair_half(tid0))
            half_origin = replace(self.origin["m"], tag="mh", shift=self.a_half * config.a_rows, base_tag="m")
            self.a_origin = {**self.origin, "m": half_origin}
        if config.slm:
            self.thread_index = top.bind("thread_index", (tid2 * config.tg_m + tid1) * config.tg_n + tid0)
            m_group, n_group = config.tg_m * config.m_tile, config.tg_n * config.n_tile
            self.group_origin = {
                "m": Origin("m", top.bind("m_group_start", gid1 * m_group), "mg", top, m_group),
                "n": Origin("n", top.bind("n_group_start", gid0 * n_group), "ng", top, n_group),
                "k": k_origin,
            }
            # which tile of the group's SLM tile is the thread's own, per GEMM dimension (A's
            # tiles are a_rows high: with dpasw two per M tile)
            self.tile_index = {"m": tid1, "n": tid0, "k": tid2}
            self.a_tile_index = {**self.tile_index, "m": tid1 * (config.m_tile // config.a_rows) + self.a_half}

        prologue = zero_fill(plan.layouts.c.buffer, plan.layouts.c.bytes, self.hw.grf_bytes)
        if plan.column_sums is not None and plan.sum_row is not None:  # (planned together)
            prologue += zero_fill(plan.column_sums.buffer, plan.column_sums.bytes, self.hw.grf_bytes)
            prologue += sum_row(plan.sum_row, config, self._sum_row_type(plan.column_sums), self._sum_factor())
        self.guard = self._k_guard(thread_k if self.taps is None else k_origin)
        self.guard += self._tile_guard()
        body = self._loop_body()
        if self.taps is None:
            loop = For(k_iter, const(0), const(plan.iterations), self.loop.wrap(seq(*self._guarded(body))))
        else:
            channel_blocks = For(k_iter, const(0), const(self.taps.inner), self.loop.wrap(seq(*body)))
            per_tap = seq(*self._guarded([*self.tap_fills, channel_blocks]))
            loop = For(TAP, const(0), const(self.taps.outer), self.tap_scope.wrap(per_tap))
        epilogue = self._reduce_over_k(self._epilogue())
        kernel = seq(*prologue, loop, *epilogue)
        for var, size in reversed(plan.grf_buffers):
            kernel = Alloc(var, size, "grf", kernel)
        for op in (plan.b, plan.a):
            if op.slm is not None:
                kernel = Alloc(op.slm.buffer, op.slm.bytes, "slm", kernel)
        if plan.k_reduction is not None:
            kernel = Alloc(plan.k_reduction.slm, plan.k_reduction.slm_bytes, "slm", kernel)
        kernel = self.top.wrap(kernel)
        for var in reversed(THREAD_IDS + GROUP_IDS):
            kernel = Let(var, None, kernel)
        for name in reversed(kernel_arguments(plan)):
            kernel = Let(self.buffers[name], None, kernel)
        return kernel

    # -- the K loop ----------------------------------------------------------------------------
    def _loop_body(self) -> list[Stmt]:
        plan = self.plan
        loads: list[Stmt] = []
        for op in (plan.a, plan.b):
            loads += self._global_load(op)
        body = loads
        if self.config.slm:
            for op in (plan.a, plan.b):
                slm = _slm_of(op)
                if slm.needs_packing:
                    body += copy_tile(slm.packed, slm.stage)
            body += [s for op in (plan.a, plan.b) for s in self._slm_store(op)]
            body += [Call(Fence("slm")), Call(Barrier())]
            body += [s for op in (plan.a, plan.b) for s in self._slm_load(op)]
            body.append(Call(Barrier()))
        for op in (plan.a, plan.b):
            if op.needs_reorder:
                body += copy_tile(op.fma, op.load)
        body += multiply(self.config, self.gemm, plan.layouts, self.config.simd)
        if plan.column_sums is not None and plan.sum_row is not None:
            body += reduce_columns(
                self.config,
                self.gemm,
                plan.layouts.b,
                plan.column_sums,
                plan.sum_row,
                self._sum_row_type(plan.column_sums),
            )
        return body

    def _sum_factor(self) -> int:
        """What the column sums of B are multiplied by: the source zero point forward, 1 for
        BWD_WB's bias gradient."""
        return self.gemm.problem.quantization.src_zero_point if self.gemm.problem.is_forward else 1

    def _sum_row_type(self, sums: TileLayout) -> Type:
        """The type `reduce_columns` reads its factor as: with dpas or dp4a, that of the A
        operand it stands for (B's 16-bit type for BWD_WB, src's for a zero point); with mad,
        the sums' type."""
        if self.config.systolic or self.config.fma == "dp4a":
            return self.plan.layouts.b.type if self.gemm.bias_mode == "reduce" else self.gemm.a.type
        return sums.type

    def _global_load(self, op: OperandPlan) -> list[Stmt]:
        dims = op.view.dims
        if op.slm is None:
            origin = self.a_origin if op.name == "a" else self.origin
            origins = (origin[dims[0]], origin[dims[1]])
            if isinstance(op.plan, Block2dPlan):
                return emit_block2d(op.view, self.buffers[op.view.tensor], op.load.buffer, op.plan, origins)
            assert op.plan is not None  # an operand not staged through SLM has its own plan
            target, lines, line_plan = op.load, op.lines, op.plan
        else:
            origins = self._slice_origins(op)
            if isinstance(op.slm.slice_plan, Block2dPlan):
                return emit_block2d(
                    op.view, self.buffers[op.view.tensor], op.slm.stage.buffer, op.slm.slice_plan, origins
                )
            target, lines, line_plan = op.slm.stage, op.slm.stage_lines, op.slm.slice_plan
        sends, masked = emit_global(
            op.view,
            self.gemm,
            self.buffers[op.view.tensor],
            target,
            lines,
            line_plan,
            origins,
            self.group,
            self.top,
            "load",
            # where a 64-bit address from a 32-bit offset takes four instructions (XeLP: no
            # 64-bit add, no add3), a row's invariant part pays as a let; elsewhere the e-graph's
            # own sharing does as well (XeHPG's backward weights lost an instruction to it)
            hoist_rows=not self.hw.has_add3,
            implied=self.guard,
        )
        if masked:
            # a source zero point fills what the masks drop: (src - zero point) is then 0 there
            fill = self.gemm.problem.quantization.src_zero_point if op.view.tensor == "src" else 0
            fills = masked_fill(target, sends, self.hw.grf_bytes, fill)
            if self.taps is not None and not self._varies_per_channel_block(sends):
                # a tap's masks drop the same lanes in each of its iterations, which only the
                # masked sends write: the zeros filled at the tap's start stay where they are
                self.tap_fills += fills
                return sends
            return fills + sends
        return sends

    def _k_guard(self, k: Origin) -> list[Expr]:
        """The GEMM's K guard at `k` (the thread's K block, or its tap): the conditions under which
        the block's K positions add anything (strided backward data: the thread's phase has the
        tap; else A and B are masked to zeros).  None where a block may straddle the outer
        components (k_block does not divide the innermost one) or a barrier is inside the loop
        (the threads of a group would skip different blocks)."""
        guard, config = self.gemm.k_guard, self.config
        if guard is None or config.slm or self.gemm.k.inner.size % config.k_block:
            return []
        values, _ = components(self.gemm, k, 0, 1, self.loop)
        lookup = {"g": self.group, **values}
        return guard(lambda name: lookup.get(name, Idx.const(0)))

    def _tile_guard(self) -> list[Expr]:
        """The conditions, besides the K guard's, that mask every load of the thread's A tile: where
        one fails, the iteration adds nothing, so it is skipped and the loads leave the condition
        out.  A padded layer's tap whose input row lies outside the input, for a tile of pixels
        within one output row: the loads keep only the column masks of the first and last pixels,
        and only their registers are zeroed (XeHPG res2a_branch2b, f32: 7 moves an iteration -> 2).
        Where the configuration allows it (`may_guard_tile`)."""
        op = self.plan.a
        if not may_guard_tile(self.config, self.gemm) or not isinstance(op.plan, LinePlan):
            return []
        dims = op.view.dims
        origins = (self.a_origin[dims[0]], self.a_origin[dims[1]])
        shared = shared_conditions(op.view, self.gemm, op.lines, op.plan, origins, self.group, self.top)
        if self.taps is not None:  # (the guard is the tap's: what its channel blocks change is left)
            inner = {var for var, _ in self.loop.lets} | {K_ITER}
            shared = [c for c in shared if not inner.intersection(free_vars(c))]
        return [c for c in shared if c not in self.guard]

    def _guarded(self, body: list[Stmt]) -> list[Stmt]:
        """`body` skipped where the guard fails (its sends then leave the guard's conditions out)."""
        condition = all_of(self.guard)
        return body if condition is None else [IfThenElse(condition, seq(*body))]

    def _varies_per_channel_block(self, sends: list[Stmt]) -> bool:
        """Whether a mask of `sends` reads a value the inner loop of a tap loop changes."""
        inner = {var for var, _ in self.loop.lets} | {K_ITER}
        masks = [s.args[-1] for s in sends if isinstance(s, Call) and s.args[-1] is not None]
        return any(inner.intersection(free_vars(mask)) for mask in masks)

    def _slice_index(self, op: OperandPlan) -> tuple[Idx, Idx]:
        """Which slice of the group tile the thread loads and stores: (row, column) of slices."""
        slices = _slm_of(op).slices
        across = slices[1]
        if slices[0] == 1:
            return Idx.const(0), self.thread_index
        if across == 1:
            return self.thread_index, Idx.const(0)
        key = ("slice", op.name)
        if key not in self.top.memo:
            self.top.memo[key] = (
                self.top.bind(f"{op.name}_slice_row", self.thread_index.div(across)),
                self.top.bind(f"{op.name}_slice_col", self.thread_index.mod(across)),
            )
        return self.top.memo[key]

    def _slice_origins(self, op: OperandPlan) -> tuple[Origin, Origin]:
        origins = []
        for name, index, extent in zip(op.view.dims, self._slice_index(op), _slm_of(op).slice_extents, strict=True):
            group = self.group_origin[name]
            if index.is_const:
                origins.append(group)
            else:
                base_tag = group.base_tag or group.tag
                origins.append(
                    Origin(name, group.start, name + "s", group.scope, group.align, index * extent, base_tag)
                )
        return origins[0], origins[1]

    def _slm_store(self, op: OperandPlan) -> list[Stmt]:
        slm = _slm_of(op)
        row, col = self._slice_index(op)
        return self._slm_messages("store", op, slm.packed, slm.store, row, col)

    def _slm_load(self, op: OperandPlan) -> list[Stmt]:
        tile_index = self.a_tile_index if op.name == "a" else self.tile_index
        row, col = (tile_index[d] for d in op.view.dims)
        return self._slm_messages("load", op, op.load, _slm_of(op).load, row, col)

    def _slm_messages(
        self, kind: str, op: OperandPlan, grf: TileLayout, placement: Placement, row: Idx, col: Idx
    ) -> list[Stmt]:
        return slm_run_messages(
            kind,
            _slm_of(op).buffer,
            grf,
            placement.runs,
            placement.base(row, col),
            placement.base_alignment(grf.type.size),
            self.hw,
            self.top,
        )

    # -- after the loop ------------------------------------------------------------------------
    def _reduce_over_k(self, epilogue: list[Stmt]) -> list[Stmt]:
        """With tg_k > 1, every thread along K but the first stores its partial sums in SLM; after
        a barrier the first adds them to its own, a chunk at a time, and alone runs `epilogue`."""
        reduction = self.plan.k_reduction
        if reduction is None:
            return epilogue
        config, hw, acc = self.config, self.hw, self.plan.layouts.c
        size = acc.type.size
        tid0, tid1 = self.idx(THREAD_IDS[0], config.tg_n), self.idx(THREAD_IDS[1], config.tg_m)
        tile = self.top.bind("mn_index", tid1 * config.tg_n + tid0)

        def copy_of(k_thread: Idx) -> Idx:
            """SLM element where K thread `k_thread` (1..tg_k-1) puts the partial sums of this tile."""
            return ((k_thread - 1) * reduction.tiles + tile) * (reduction.copy_bytes // size)

        # (register buffer, bytes, element of the copy where they go): the accumulators, then the bias sums
        parts = [(acc.buffer, reduction.tile_bytes, 0)]
        if reduction.sums_bytes:
            assert self.plan.column_sums is not None  # the sums whose bytes these are
            parts.append((self.plan.column_sums.buffer, reduction.sums_bytes, reduction.tile_bytes // size))
        stores = [
            s
            for buffer, length, at in parts
            for s in slm_run_messages(
                "store",
                reduction.slm,
                dense_layout(buffer, acc.type, 1, length // size),
                [Run(0, at, length // size)],
                copy_of(self.k_thread),
                reduction.copy_bytes,
                hw,
                self.top,
            )
        ]
        if reduction.slice_bytes:
            return self._fold_over_k(parts, tile, epilogue)
        partial = dense_layout(reduction.partial, acc.type, 1, reduction.chunk // size)
        lanes = 2 * hw.grf_bytes // size  # an add writes at most two registers
        adds: list[Stmt] = []
        for k_thread in range(1, config.tg_k):
            for buffer, length, at in parts:
                for first in range(0, length, reduction.chunk):
                    chunk = min(reduction.chunk, length - first)
                    adds += slm_run_messages(
                        "load",
                        reduction.slm,
                        partial,
                        [Run(0, at + first // size, chunk // size)],
                        copy_of(Idx.const(k_thread)),
                        reduction.copy_bytes,
                        hw,
                        self.top,
                    )
                    for offset in range(0, chunk, lanes * size):
                        count = min(lanes, (chunk - offset) // size)
                        vector = acc.type.with_lanes(count)
                        total = Load(buffer, const(first + offset), vector) + Load(
                            partial.buffer, const(offset), vector
                        )
                        adds.append(store(buffer, first + offset, total))
        first_thread = self.k_thread.expr.eq(0)
        return [
            IfThenElse(self.k_thread.expr.ne(0), seq(*stores)),
            Call(Fence("slm")),
            Call(Barrier()),
            IfThenElse(first_thread, seq(*adds, *epilogue)),
        ]

    def _fold_over_k(self, parts: list[tuple[Var, int, int]], tile: Idx, epilogue: list[Stmt]) -> list[Stmt]:
        """tg_k >= FOLD_THREADS (`KReduction`): every thread stores its copy (`parts`: register
        buffer, bytes, element of the copy where they go) slice by slice, slice s of K thread k at
        slice s*tg_k + k of this tile's region; after a barrier thread k adds up slices k, k + tg_k,
        ... of all the copies (tg_k slices side by side, loaded `chunk` bytes at a time) and stores
        each total after the copies; after a second barrier the first thread loads the totals."""
        reduction, config, hw = self.plan.k_reduction, self.config, self.hw
        assert reduction is not None  # folded only where there is a reduction
        acc = self.plan.layouts.c
        size = acc.type.size
        slice_elems = reduction.slice_bytes // size
        assert reduction.slice_bytes <= acc.bytes  # a slice's total is added up in the accumulators
        region = self.top.bind("fold_base", tile * (reduction.tile_slm_bytes // size))
        totals = region + reduction.copies * reduction.slices * slice_elems

        def moves(kind: str, base: Idx, first: int, last: int) -> list[Stmt]:
            """Messages between elements first..last of a copy in registers and SLM from `base`."""
            out: list[Stmt] = []
            for buffer, length, at in parts:
                low, high = max(first, at), min(last, at + length // size)
                if low < high:
                    layout = dense_layout(buffer, acc.type, 1, length // size)
                    run = Run(low - at, low - first, high - low)
                    out += slm_run_messages(
                        kind, reduction.slm, layout, [run], base, reduction.slice_bytes, hw, self.top
                    )
            return out

        stores = [
            s
            for index in range(reduction.slices)
            for s in moves(
                "store",
                region + (index * config.tg_k) * slice_elems + self.k_thread * slice_elems,
                index * slice_elems,
                (index + 1) * slice_elems,
            )
        ]
        rows = reduction.chunk // reduction.slice_bytes
        partial = dense_layout(reduction.partial, acc.type, 1, rows * slice_elems)
        total = dense_layout(acc.buffer, acc.type, 1, slice_elems)
        lanes = 2 * hw.grf_bytes // size  # an add writes at most two registers
        sums: list[Stmt] = []
        for turn in range(-(-reduction.slices // config.tg_k)):
            index = self.top.bind("fold_slice", self.k_thread + turn * config.tg_k)
            body: list[Stmt] = []
            for first in range(0, config.tg_k, rows):
                count = min(rows, config.tg_k - first)
                at = region + (index * config.tg_k + first) * slice_elems
                body += slm_run_messages(
                    "load",
                    reduction.slm,
                    partial,
                    [Run(0, 0, count * slice_elems)],
                    at,
                    reduction.slice_bytes,
                    hw,
                    self.top,
                )
                for offset in range(0, slice_elems, lanes):
                    vector = acc.type.with_lanes(min(lanes, slice_elems - offset))
                    terms = [
                        Load(partial.buffer, const((row * slice_elems + offset) * size), vector) for row in range(count)
                    ]
                    if first:
                        terms.insert(0, Load(acc.buffer, const(offset * size), vector))
                    added = terms[0]
                    for term in terms[1:]:
                        added = added + term
                    body.append(store(acc.buffer, offset * size, added))
            body += slm_run_messages(
                "store",
                reduction.slm,
                total,
                [Run(0, 0, slice_elems)],
                totals + index * slice_elems,
                reduction.slice_bytes,
                hw,
                self.top,
            )
            bound = index.below(reduction.slices)
            sums += [IfThenElse(bound, seq(*body))] if bound is not None else body
        loads = moves("load", totals, 0, reduction.copy_bytes // size)
        return [
            *stores,
            Call(Fence("slm")),
            Call(Barrier()),
            *sums,
            Call(Fence("slm")),
            Call(Barrier()),
            IfThenElse(self.k_thread.expr.eq(0), seq(*loads, *epilogue)),
        ]

    def _epilogue(self) -> list[Stmt]:
        plan, config = self.plan, self.config
        if plan.scratch is not None:
            return self._scratch_epilogue(plan.scratch)
        out: list[Stmt] = []
        bias_tile = None
        gate = None
        if plan.bias_load is not None:
            bias = plan.bias_load
            sends, masked = self._output_messages(bias, "load")
            out += (zero_fill(bias.tile.buffer, bias.tile.bytes, self.hw.grf_bytes) if masked else []) + sends
            bias_tile = bias.tile
            if config.k_split > 1:
                gate = self.k_slice.expr.eq(0)
        for load in [load for load in plan.post_loads if load is not None] + plan.quantization_loads:
            sends, masked = self._output_messages(load, "load")
            out += (zero_fill(load.tile.buffer, load.tile.bytes, self.hw.grf_bytes) if masked else []) + sends
        post_ops = [
            (op, None if load is None else load.tile)
            for op, load in zip(self.gemm.problem.post_ops, plan.post_loads, strict=True)
        ]
        quantization = {load.view.tensor: load.tile for load in plan.quantization_loads}
        out += finish(
            plan.layouts.c,
            plan.c.tile,
            bias_tile,
            post_ops,
            gate,
            Scaling.of(
                self.gemm.problem.quantization, quantization, plan.column_sums if self.gemm.problem.is_forward else None
            ),
            bias_per_row=self.gemm.bias is not None and self.gemm.bias.dims == ("m",),
        )
        out += self._output_messages(plan.c, "atomic" if plan.c.atomic else "store")[0]
        if plan.bias_store is not None:
            # every row of threads sums the same columns: the first one writes them
            assert plan.column_sums is not None  # planned with the bias store
            write = finish(plan.column_sums, plan.bias_store.tile, None)
            write += self._output_messages(plan.bias_store, "atomic" if plan.bias_store.atomic else "store")[0]
            out.append(IfThenElse(self.m_index.expr.eq(0), seq(*write)))
        return out

    def _scratch_epilogue(self, scratch: Scratch) -> list[Stmt]:
        """Backward weights of 16-bit type whose K slices k_split groups share
        (`xegen.plan.scratch`): the thread adds its f32 tile (and the first row of threads its
        bias-gradient sums) into the scratch buffer, fences the adds and takes its C tile's
        ticket; the thread of the last group to arrive reads the totals back, converts and
        stores them.  (Backward weights have no bias to add, post-ops or scales.)"""
        plan, config = self.plan, self.config
        partial, bias_partial = plan.partial, plan.bias_partial
        assert partial is not None
        out = finish(plan.layouts.c, partial.tile, None) + self._scratch_messages(partial, scratch, "fadd")
        first_row = self.m_index.expr.eq(0)  # every row of threads sums the same columns
        if bias_partial is not None:
            assert plan.column_sums is not None and plan.bias_store is not None  # planned with them
            add = finish(plan.column_sums, bias_partial.tile, None)
            add += self._scratch_messages(bias_partial, scratch, "fadd")
            out.append(IfThenElse(first_row, seq(*add)))
        m_tiles, n_tiles = plan.grid[1] * config.tg_m, plan.grid[0] * config.tg_n
        tile = self.top.bind("c_tile", (self.group * m_tiles + self.m_index) * n_tiles + self.n_index)
        ticket, last = take_ticket(self.buffers["scratch"], scratch, tile.expr, config.k_split)
        out += ticket
        out += self._scratch_messages(partial, scratch, "xchg", last)
        out += finish(partial.tile, plan.c.tile, None) + self._output_messages(plan.c, "store", last)[0]
        if bias_partial is not None:
            assert plan.bias_store is not None
            back = self._scratch_messages(bias_partial, scratch, "xchg", last)
            back += finish(bias_partial.tile, plan.bias_store.tile, None)
            back += self._output_messages(plan.bias_store, "store", last)[0]
            out.append(IfThenElse(first_row, seq(*back)))
        return out

    def _scratch_messages(self, output: OutputPlan, scratch: Scratch, atomic: str, last: Expr | None = None):
        """`output`'s f32 tile added into its sums in the scratch buffer (fadd), or, in the last
        group (`last`), those sums read back into it by an exchange with zeros (which leaves them
        zero)."""
        view = replace(output.view, type=F32 if atomic == "fadd" else U32)
        out: list[Stmt] = []
        if atomic == "xchg":
            out += zero_fill(output.tile.buffer, output.tile.bytes, self.hw.grf_bytes)
        return (
            out
            + self._messages(
                output, view, "atomic", atomic, self.buffers["scratch"], scratch.offset(output.view.tensor), last
            )[0]
        )

    def _output_messages(self, output: OutputPlan, op: str, gate: Expr | None = None) -> tuple[list[Stmt], bool]:
        memory = self.buffers[output.view.tensor]
        return self._messages(output, output.view, op, output.atomic, memory, 0, gate)

    def _messages(
        self, output: OutputPlan, view: View, op: str, atomic: str, memory: Var, base: int, gate: Expr | None
    ) -> tuple[list[Stmt], bool]:
        dims = view.dims
        if len(dims) == 1:
            origins = (Origin("", Idx.const(0), "", self.top), self.origin[dims[0]])
        else:
            origins = (self.origin[dims[0]], self.origin[dims[1]])
        return emit_global(
            view,
            self.gemm,
            memory,
            output.tile,
            output.lines,
            output.plan,
            origins,
            self.group,
            self.top,
            op,
            atomic,
            base=base,
            gate=gate,
            returns=atomic == "xchg",
        )


def _slm_of(op: OperandPlan) -> SlmPlan:
    """The SLM plan of an operand staged through SLM (both are when the configuration uses SLM)."""
    assert op.slm is not None, f"operand {op.name} is not staged through SLM"
    return op.slm


def kernel_arguments(plan: KernelPlan) -> tuple[str, ...]:
    """Buffer arguments in order: src, wei, dst, then bias if the problem has one, then the
    tensors of the post-ops (binary<i>, prelu<i>) in chain order, then wei_scales and
    dst_zero_points if per-channel, then the scratch buffer if the plan has one."""
    problem = plan.gemm.problem
    extra = tuple(name for name in problem.post_op_inputs if name != "dst") + problem.quantization.tensors
    scratch = ("scratch",) if scratch_of(plan) else ()
    return ("src", "wei", "dst") + (("bias",) if problem.has_bias else ()) + extra + scratch


def scratch_of(plan) -> Scratch | None:
    """The plan's scratch buffer (`plan.scratch`), if its strategy has one."""
    return getattr(plan, "scratch", None)


def build_body(plan: KernelPlan) -> Stmt:
    return _Builder(plan).build()
