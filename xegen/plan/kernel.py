"""The plan of one GEMM kernel: every buffer laid out, every message chosen, the budgets checked.

`plan_kernel(gemm, config, hw)` decides, for one configuration, how each thread's tiles of A and B
come from global memory (directly, or through SLM shared by the group's threads), the register
layouts the multiply reads, and the tiles the epilogue stores (`KernelPlan`).  Where there is a
choice (which messages, whether to reorder, how the threads slice an SLM tile) the plan takes the
one with the fewest modeled instructions.  `plan_layout` does that without the budget checks and
`check_budgets` adds them, so that the configuration heuristic can lay out once for candidates
that differ only in their buffer counts.  `xegen.build` turns a plan into IR.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from ..conv.index import Idx
from ..emit.regions import move_instructions
from ..errors import ConfigError, UnsupportedError
from ..hw import Platform
from ..ir import Expr, Var, free_vars, ptr
from ..ir.expr import Ptr
from ..ir.types import F32, PTR
from ..launch import busiest_eu_threads
from .block2d import Block2dPlan, block2d_plan
from .config import RESERVED_GRFS, Config, check_config, k_iterations, prefetches
from .gemm import S32_MAX, Gemm, View, check_index_range, linear_stride
from .messages import (
    LaneRun,
    LinePlan,
    Run,
    Runs,
    contiguous_runs,
    lane_runs,
    line_plans,
    plan_lines,
    run_arrays,
    slm_message_cost,
)
from .multiply import MultiplyLayouts, multiply_layouts, operand_layout, operand_type
from .scratch import TICKET, Scratch, needs_scratch, partial_sums_scratch
from .tiles import Line, TileLayout, dense_layout, line_layout, packed_layout, round_up, tile_moves


@dataclass
class SlmPlan:
    """How a group tile of one operand goes through SLM: each thread loads a slice of it from
    global memory into `stage`, stores it (from `packed`, the stage reordered into SLM order, when
    that saves messages), and reads its own tile back.  Where 2D blocks load the slice straight
    into SLM order (`block2d.py`: XeHPC's VNNI and transposing loads), the stage is `packed`."""

    layout: TileLayout  # the group tile in SLM (dpas: the layout dpas reads; else dense)
    slices: tuple[int, int]  # slices along rows and columns; thread t stores slice (t / cols, t % cols)
    slice_extents: tuple[int, int]
    slice_plan: LinePlan | Block2dPlan  # how a slice comes from global memory
    stage: TileLayout  # the slice as the global loads leave it
    stage_lines: list[Line]
    packed: TileLayout  # the slice as it is stored (`stage` itself when no reorder pays)
    store: Placement  # where each run of `packed` goes in SLM
    load: Placement  # where each run of the thread's tile comes from

    @property
    def buffer(self) -> Var:
        return self.layout.buffer

    @property
    def bytes(self) -> int:
        return self.layout.bytes

    @property
    def needs_packing(self) -> bool:
        return self.packed is not self.stage


@dataclass(frozen=True)
class Term:
    """`index / divisor % modulus * stride` (no `%` when modulus is 0)."""

    divisor: int
    modulus: int
    stride: int

    def of(self, index: Idx) -> Idx:
        value = index.div(self.divisor)
        return (value.mod(self.modulus) if self.modulus else value) * self.stride


@dataclass
class Placement:
    """Runs between a register tile and the SLM tile, for tiles placed at (i*rows, j*cols): their
    elements start at SLM element `sum of terms(i) + sum of terms(j) + run.slm`."""

    runs: Sequence[Run | LaneRun]
    terms: tuple[tuple[Term, ...], tuple[Term, ...]]  # per tile dimension

    def base(self, row: Idx, col: Idx) -> Idx:
        total = Idx.const(0)
        for index, terms in zip((row, col), self.terms, strict=True):
            for term in terms:
                total = total + term.of(index)
        return total

    def base_alignment(self, size: int) -> int:
        """Byte alignment of the placement-dependent part of the SLM addresses."""
        return math.gcd(0, *(term.stride * size for terms in self.terms for term in terms))


@dataclass
class OperandPlan:
    name: str  # "a" or "b"
    view: View
    extents: tuple[int, int]  # the thread's tile
    # how the thread's tile comes from global memory: lines, or 2D blocks straight into dpas's
    # layout (`block2d.py`, XeHPC); None: from SLM
    plan: LinePlan | Block2dPlan | None
    load: TileLayout  # the thread's tile as loaded
    lines: list[Line]
    slm: SlmPlan | None
    fma: TileLayout  # the tile as the multiply reads it (may be `load` itself)

    @property
    def needs_reorder(self) -> bool:
        return self.fma is not self.load


@dataclass
class OutputPlan:
    view: View
    plan: LinePlan
    tile: TileLayout
    lines: list[Line]
    atomic: str


@dataclass(frozen=True)
class KReduction:
    """How the tg_k threads of a group that share a C tile add their partial sums.  Each thread
    (`tiles` C tiles per K thread, one per thread along M and N) has its accumulators followed
    by its bias-gradient sums (BWD_WB), a copy of `copy_bytes`.

    Up to FOLD_THREADS threads along K, every thread but the first stores its copy in SLM, and
    after a barrier the first adds them into its own, `chunk` bytes at a time through the
    register buffer `partial`, before the epilogue.  From FOLD_THREADS on (`slice_bytes` > 0)
    that serial sum would be the group's wait: every thread stores its copy cut in slices, slice
    s of every thread side by side, and after a barrier thread s adds up slice s of all copies
    and stores its total; after a second barrier the first thread loads the totals."""

    slm: Var
    partial: Var
    tile_bytes: int  # one thread's accumulators
    tiles: int  # threads along M and N
    copies: int  # threads that store theirs: tg_k - 1, or tg_k when folded
    chunk: int  # bytes of `partial`
    sums_bytes: int = 0  # one thread's bias-gradient sums, after its accumulators
    slice_bytes: int = 0  # folded: the bytes of a copy each thread adds up (whole GRFs)

    @property
    def copy_bytes(self) -> int:
        """SLM bytes of one thread's partial results."""
        return self.tile_bytes + self.sums_bytes

    @property
    def slices(self) -> int:
        """Folded: the threads that add up a slice of the copies (the others wait)."""
        return -(-self.copy_bytes // self.slice_bytes)

    @property
    def tile_slm_bytes(self) -> int:
        """SLM bytes of one C tile's copies: folded, `copies` slice by slice and the totals after."""
        if not self.slice_bytes:
            return self.copies * self.copy_bytes
        return (self.copies + 1) * self.slices * self.slice_bytes

    @property
    def slm_bytes(self) -> int:
        return self.tiles * self.tile_slm_bytes


@dataclass
class KernelPlan:
    gemm: Gemm
    config: Config
    hw: Platform
    grid: tuple[int, int, int]
    iterations: int
    a: OperandPlan
    b: OperandPlan
    layouts: MultiplyLayouts
    c: OutputPlan
    bias_load: OutputPlan | None = None  # FWD_B: the bias tile
    column_sums: TileLayout | None = None  # column sums of B (times a factor): BWD_WB's bias, a src zero point's
    sum_row: Ptr | None = None  # the factor the column sums multiply B by (`build.multiply.sum_row`)
    bias_store: OutputPlan | None = None
    k_reduction: KReduction | None = None  # tg_k > 1: the partial sums added through SLM
    post_loads: list[OutputPlan | None] = field(default_factory=list)  # per post-op: the tile of its tensor
    quantization_loads: list[OutputPlan] = field(default_factory=list)  # per gemm.quantization view
    grf_buffers: list[tuple[Var, int]] = field(default_factory=list)
    # 16-bit outputs of k_split groups (`scratch.py`): the f32 tiles of C and of the bias gradient
    # the groups add into the scratch buffer, which the last reads the totals back into
    scratch: Scratch | None = None
    partial: OutputPlan | None = None
    bias_partial: OutputPlan | None = None

    @property
    def thread_group(self) -> tuple[int, int, int]:
        return (self.config.tg_n, self.config.tg_m, self.config.tg_k)

    @property
    def slm_bytes(self) -> int:
        """SLM per group, with every copy of multi-buffered tiles (`slm_bufs`), and the partial
        sums of the threads along K."""
        staged = self.config.slm_bufs * sum(op.slm.bytes for op in (self.a, self.b) if op.slm is not None)
        return staged + (self.k_reduction.slm_bytes if self.k_reduction is not None else 0)

    @property
    def grf_bytes(self) -> int:
        return sum(size for _, size in self.grf_buffers)

    @property
    def load_copy_bytes(self) -> int:
        """GRF bytes of the extra copies of the registers global loads fill (`gmem_bufs`); the
        scheduler adds them (the allocations here hold one copy)."""
        grf = self.hw.grf_bytes
        single = sum(
            round_up(op.slm.stage.bytes if op.slm is not None else op.load.bytes, grf) for op in (self.a, self.b)
        )
        return (self.config.gmem_bufs - 1) * single


# Planning ---------------------------------------------------------------------------------------


def plan_kernel(gemm: Gemm, config: Config, hw: Platform) -> KernelPlan:
    """Lay out every buffer of the kernel; ConfigError if it does not fit the GRF or SLM."""
    if (config.plan == "swapped") != gemm.swapped:  # the plan would read the views the other way round
        raise ConfigError(f"plan={config.plan} is planned from the GEMM formulate(problem, '{config.plan}') states")
    return check_budgets(plan_layout(gemm, config, hw))


#: bytes of the row a dpas multiplies B by to sum its columns (rows of A are 8 dwords): BWD_WB's
#: ones, a source zero point repeated
SUM_ROW_BYTES = 32

REDUCTION_CHUNK_GRFS = 8  # registers through which the first K thread adds the others' partial sums
FOLD_THREADS = 16  # threads along K from which their partial sums are added slice by slice (KReduction)


def folds_partial_sums(config: Config, gemm: Gemm, hw: Platform) -> bool:
    """Whether the partial sums of the threads along K are folded (`KReduction`): from
    FOLD_THREADS on, where the launch leaves slots of its busiest EU empty.  There the first
    thread's serial sum is a wait no other thread covers; where the slots are full, other
    threads cover it, and the fold's stores, addresses and second barrier only add issue:
    resnet_50's res4a_branch2b forward in f32 on XeHPG (7 x 32 tiles, tg_k=16, 256 GRFs: two
    waves) is 33,965 modeled cycles serial and 34,167 folded."""
    if config.tg_k < FOLD_THREADS:
        return False
    m_groups = -(-gemm.m.size // (config.tg_m * config.m_tile))
    n_groups = -(-gemm.n.size // (config.tg_n * config.n_tile))
    threads = m_groups * n_groups * gemm.groups * config.k_split * config.threads_per_group
    return busiest_eu_threads(threads, config.threads_per_group, hw) < hw.threads_per_eu(config.grf)


def fold_slice_bytes(copy_bytes: int, threads: int, chunk: int, grf: int) -> int:
    """The slice of a thread's partial sums that one of `threads` threads adds up when folded:
    whole GRFs that divide the copy (no slice runs past it), no more than the register buffer
    (`chunk` bytes) that takes them from SLM, with the fewest messages per thread: a store per
    slice of its copy, and for each slice it adds up (s, s + threads, ...) the loads of all the
    copies of it; on a tie the smaller slice (a shorter sum on each thread)."""
    grfs, per_load = copy_bytes // grf, chunk // grf

    def messages(d: int) -> tuple[int, int]:
        turns = -(-grfs // (d * threads))
        return grfs // d + turns * -(-threads * d // per_load), d

    return grf * min((d for d in range(1, min(grfs, per_load) + 1) if grfs % d == 0), key=messages)


def layout_key(config: Config, hw: Platform) -> tuple[Config, bool]:
    """What `plan_layout` reads of `config`: the keys that scale the budgets a layout must fit
    (grf, slm_bufs, gmem_bufs) only through `prefetches` (whether messages are paid twice), and
    grf from FOLD_THREADS along K (its threads per EU decide `folds_partial_sums`)."""
    grf = config.grf if config.tg_k >= FOLD_THREADS else 0
    return replace(config, grf=grf, slm_bufs=0, gmem_bufs=0), prefetches(config, hw)


def plan_layout(gemm: Gemm, config: Config, hw: Platform) -> KernelPlan:
    """Lay out every buffer of the kernel, not yet checked against the GRF and SLM budgets
    (the same for configs with the same `layout_key`)."""
    check_index_range(gemm.problem)
    check_config(config, gemm, hw)
    check_tiles_can_fit(gemm, config, hw)
    for view in (gemm.a, gemm.b, gemm.c):
        if view.layout.elements * view.type.size >= 2**31:
            raise UnsupportedError(
                f"{view.tensor} takes {view.layout.elements * view.type.size} bytes: xegen's "
                "kernels address tensors with 32-bit byte offsets (under 2 GiB)"
            )
    grf = hw.grf_bytes
    m_group, n_group = config.tg_m * config.m_tile, config.tg_n * config.n_tile
    grid = (-(-gemm.n.size // n_group), -(-gemm.m.size // m_group), gemm.groups * config.k_split)
    _check_tile_coordinates(
        gemm,
        {
            "m": grid[1] * m_group,
            "n": grid[0] * n_group,
            "k": config.k_split * k_iterations(config, gemm) * config.tg_k * config.k_block,
        },
    )
    k_group = config.tg_k * config.k_block
    layouts = multiply_layouts(config, gemm, Var("a", PTR), Var("b", PTR), Var("acc", PTR), config.simd)
    a = _plan_operand("a", gemm.a, gemm, config, hw, (config.a_rows, config.k_block), (m_group, k_group), layouts.a)
    b = _plan_operand("b", gemm.b, gemm, config, hw, (config.k_block, config.n_tile), (k_group, n_group), layouts.b)
    layouts = MultiplyLayouts(a.fma, b.fma, layouts.c)
    atomic = ""
    if config.k_split > 1:
        atomic = "fadd" if gemm.c.type.is_float else "add"
    tile = (config.m_tile, config.n_tile)
    partial = None
    if needs_scratch(gemm.problem, config):
        # the groups add f32 tiles into the scratch buffer; the last stores C from the totals
        partial = _plan_output(replace(gemm.c, type=F32), gemm, hw, tile, "c_partial", F32, atomic)
        atomic = ""
    c = _plan_output(gemm.c, gemm, hw, tile, "c_store", gemm.c.type, atomic)
    plan = KernelPlan(gemm, config, hw, grid, k_iterations(config, gemm), a, b, layouts, c)
    if partial is not None:
        slots = gemm.groups * grid[1] * config.tg_m * grid[0] * config.tg_n  # one per C tile
        plan.scratch, plan.partial = partial_sums_scratch(gemm.problem, slots), partial
    if gemm.bias is not None and gemm.bias_mode == "add":
        # one value per column of C, or per row in the swapped product (its bias lies along M)
        across = config.m_tile if gemm.bias.dims == ("m",) else config.n_tile
        plan.bias_load = _plan_output(gemm.bias, gemm, hw, (1, across), "bias_load", gemm.bias.type, "")
    if gemm.sums_b_columns:
        sums_bytes = round_up(config.n_tile * gemm.acc_type.size, grf)
        if gemm.problem.is_forward and config.tg_k == 1 and c.tile.bytes >= sums_bytes + SUM_ROW_BYTES:
            # the store tile is idle in the K loop, and a source zero point's sums are subtracted
            # from the accumulators before the epilogue writes it: they live there
            plan.column_sums = dense_layout(c.tile.buffer, gemm.acc_type, 1, config.n_tile)
            plan.sum_row = ptr(c.tile.buffer, sums_bytes)
        else:
            plan.column_sums = dense_layout(Var("column_sums", PTR), gemm.acc_type, 1, config.n_tile)
            plan.sum_row = ptr(Var("sum_row", PTR), 0)
    if gemm.bias is not None and gemm.bias_mode == "reduce":
        out_type = F32 if atomic else gemm.bias.type
        row = (1, config.n_tile)
        plan.bias_store = _plan_output(gemm.bias, gemm, hw, row, "bias_store", out_type, "fadd" if atomic else "")
        if partial is not None:
            plan.bias_partial = _plan_output(replace(gemm.bias, type=F32), gemm, hw, row, "bias_partial", F32, "fadd")
    plan.post_loads = [_plan_post_load(view, index, gemm, config, hw) for index, view in enumerate(gemm.post_ops)]
    plan.quantization_loads = [
        _plan_output(view, gemm, hw, (1, config.n_tile), f"{view.tensor}_load", view.type, "")
        for view in gemm.quantization
    ]

    if config.tg_k > 1:
        # the store tile is free until the epilogue: the partial sums pass through it
        chunk = min(round_up(c.tile.bytes, grf), REDUCTION_CHUNK_GRFS * grf)
        sums = round_up(plan.column_sums.bytes, grf) if plan.column_sums is not None else 0
        tile_bytes = round_up(layouts.c.bytes, grf)
        folded = folds_partial_sums(config, gemm, hw)
        plan.k_reduction = KReduction(
            Var("c_slm", PTR),
            c.tile.buffer,
            tile_bytes,
            config.tg_m * config.tg_n,
            config.tg_k if folded else config.tg_k - 1,
            chunk,
            sums,
            fold_slice_bytes(tile_bytes + sums, config.tg_k, chunk, grf) if folded else 0,
        )

    buffers = [(layouts.c.buffer, layouts.c.bytes), (a.load.buffer, a.load.bytes), (b.load.buffer, b.load.bytes)]
    for op in (a, b):
        if op.needs_reorder:
            buffers.append((op.fma.buffer, op.fma.bytes))
        if op.slm is not None:
            buffers.append((op.slm.stage.buffer, op.slm.stage.bytes))
            if op.slm.needs_packing:
                buffers.append((op.slm.packed.buffer, op.slm.packed.bytes))
    buffers.append((c.tile.buffer, c.tile.bytes))
    if plan.bias_load is not None:
        buffers.append((plan.bias_load.tile.buffer, plan.bias_load.tile.bytes))
    buffers += [
        (post.tile.buffer, post.tile.bytes) for post in plan.post_loads + plan.quantization_loads if post is not None
    ]
    if plan.column_sums is not None and plan.sum_row is not None and plan.column_sums.buffer is not c.tile.buffer:
        buffers.append((plan.column_sums.buffer, plan.column_sums.bytes))
        if plan.bias_store is not None:
            buffers.append((plan.bias_store.tile.buffer, plan.bias_store.tile.bytes))
        buffers.append((plan.sum_row.buffer, SUM_ROW_BYTES))
    for output in (plan.partial, plan.bias_partial):
        if output is not None:
            buffers.append((output.tile.buffer, output.tile.bytes))
    if plan.scratch is not None:
        buffers.append((TICKET, 4))
    plan.grf_buffers = [(var, round_up(size, grf)) for var, size in buffers]
    return plan


def check_budgets(plan: KernelPlan) -> KernelPlan:
    """The plan, if its SLM and registers (with its config's buffer copies) fit; else ConfigError."""
    config, hw, grf = plan.config, plan.hw, plan.hw.grf_bytes
    if plan.slm_bytes > hw.max_slm_bytes:
        buffers = f" ({config.slm_bufs} buffers)" if config.slm_bufs > 1 else ""
        uses = ["slm=1"] if config.slm else []
        if plan.k_reduction is not None:
            uses.append(f"tg_k={config.tg_k}")
        verb = "needs" if len(uses) == 1 else "need"
        raise ConfigError(
            f"{' and '.join(uses)} {verb} {plan.slm_bytes} bytes of SLM per group{buffers}, more "
            f"than {hw}'s {hw.max_slm_bytes}: use fewer threads or smaller tiles"
            + (" or fewer slm_bufs" if config.slm_bufs > 1 else "")
        )
    tiles = plan.grf_bytes + plan.load_copy_bytes
    used = tiles + RESERVED_GRFS * grf
    if used > config.grf * grf:
        copies = f", gmem_bufs={config.gmem_bufs}" if config.gmem_bufs > 1 else ""
        raise ConfigError(
            f"the kernel needs {used // grf} GRFs ({tiles // grf} for tiles{copies} + {RESERVED_GRFS} "
            f"reserved) but grf={config.grf}: use smaller m_tile/n_tile/k_block"
            + "".join(f" or {change}" for change in _grf_remedies(config, hw, used, plan.load_copy_bytes))
        )
    return plan


INSTRUCTION_BYTES = 16  # xegen writes every instruction in its 16-byte form


class CodeSizeError(ConfigError):
    """A kernel whose code would not fit the platform's instruction cache."""


def check_code_size(instructions: float, hw: Platform, what: str = "") -> None:
    """CodeSizeError when `instructions` instructions exceed `hw`'s instruction cache: the
    threads would miss in their own K loop.  (`what` says whether the count is an estimate.)"""
    if instructions * INSTRUCTION_BYTES > hw.icache_bytes:
        count = round(instructions)
        raise CodeSizeError(
            f"the kernel's {what}{count} instructions ({count * INSTRUCTION_BYTES} bytes) exceed "
            f"{hw}'s {hw.icache_bytes // 1024} KB instruction cache: use fewer slm_bufs/gmem_bufs "
            "or a smaller k_block"
        )


def _grf_remedies(config: Config, hw: Platform, used: int, copy_bytes: int) -> list[str]:
    """Changes besides smaller tiles that make a kernel of `used` GRF bytes fit (`copy_bytes` of
    them are the extra copies of gmem_bufs), so the error suggests only what works."""
    current, largest = config.grf * hw.grf_bytes, hw.max_grf_count * hw.grf_bytes
    fewer_copies = config.gmem_bufs > 1
    more_grfs = config.grf < hw.max_grf_count
    remedies = []
    if fewer_copies and used - copy_bytes <= current:
        remedies.append("gmem_bufs=1")
    if more_grfs and used <= largest:
        remedies.append(f"grf={hw.max_grf_count}")
    if not remedies and fewer_copies and more_grfs and used - copy_bytes <= largest:
        remedies.append(f"gmem_bufs=1 with grf={hw.max_grf_count}")
    return remedies


def check_tiles_can_fit(gemm: Gemm, config: Config, hw: Platform) -> None:
    """Reject tiles too large for the largest register file before planning them (planning walks
    every element): the load tiles of A and B and the accumulator and store tiles of C alone."""
    grf = hw.grf_bytes
    m, n, k = config.m_tile, config.n_tile, config.k_block
    tiles = [m * k * gemm.a.type.size, k * n * gemm.b.type.size, m * n * gemm.acc_type.size, m * n * gemm.c.type.size]
    needed = sum(-(-size // grf) for size in tiles) + RESERVED_GRFS
    if needed > hw.max_grf_count:
        raise ConfigError(
            f"m_tile={m}, n_tile={n}, k_block={k}: the A, B and C tiles need at least {needed} GRFs "
            f"(with {RESERVED_GRFS} reserved), more than {hw}'s {hw.max_grf_count}: use smaller "
            "m_tile/n_tile/k_block"
        )


def _check_tile_coordinates(gemm: Gemm, ends: dict[str, int]) -> None:
    """The grid covers each GEMM dimension in whole tiles, so its coordinates run past the
    dimension's size (masked off) up to `ends`; they must still be s32 values."""
    for name, end in ends.items():
        if end - 1 > S32_MAX:
            dim = gemm.dim(name)
            fields = "*".join(c.name for c in dim.components)
            raise ConfigError(
                f"{name.upper()} = {fields} = {dim.size}, rounded up to whole tiles, reaches "
                f"{end - 1}: beyond the s32 index arithmetic of xegen's kernels; use tiles that "
                f"divide {dim.size} more evenly"
            )


def _plan_operand(
    name: str,
    view: View,
    gemm: Gemm,
    config: Config,
    hw: Platform,
    extents: tuple[int, int],
    group_extents: tuple[int, int],
    fma: TileLayout,
) -> OperandPlan:
    load_var = Var(f"{name}_load", PTR)
    if not config.slm:
        plan, load, lines = plan_direct(name, load_var, view, gemm, config, hw, extents, _retarget(fma, load_var))
        slm = None
    else:
        slm, load = _plan_slm(name, view, gemm, config, hw, extents, group_extents)
        plan, lines = None, []
    # mad reads a gathered A where the vector messages leave it (`gathered_a`)
    in_place = name == "a" and isinstance(plan, LinePlan) and plan.vector and reads_a_in_place(config, gemm)
    if in_place or load.same_placement(_retarget(fma, load_var)):
        fma = load
    return OperandPlan(name, view, extents, plan, load, lines, slm, fma)


def plan_direct(
    operand: str,
    buffer: Var,
    view: View,
    gemm: Gemm,
    config: Config,
    hw: Platform,
    extents: tuple[int, int],
    fma: TileLayout,
) -> tuple[LinePlan | Block2dPlan, TileLayout, list[Line]]:
    """How a thread loads its tile from global memory without SLM.  For dpas, the cheapest in
    modeled instructions of the messages and of the reorder into dpas's layout, which vector
    messages sometimes make unnecessary (a line per lane leaves K-contiguous columns of B
    interleaved as dpas reads them), and 2D blocks always do (XeHPC, `block2d.py`).  The moves
    are counted as the lowering emits them (`reorder_moves`): priced as `planned_moves` prices
    SLM staging, the one-element moves of a VNNI interleave were undercounted, and XeHPG's
    f16/bf16 forward and backward weights took loads up to 1.4x slower under the model (three
    1x1 backward-data bf16 kernels model 4-8 % slower counted exactly: see docs/conv.md)."""
    if not config.systolic:
        if operand == "a" and reads_a_in_place(config, gemm):
            gathered = gathered_a(view, gemm, hw, extents, config.simd)
            if gathered is not None:
                load, lines = lines_of(gathered.plan, buffer, view, gathered.tile, hw)
                return gathered.plan, load, lines
        # the cheapest messages; a vector message only where its lanes are the multiply's
        # columns, so no reorder (mad's B gathered a K-contiguous column per lane: the
        # transposed backward data of a first layer)
        for _, plan in line_plans(view, gemm, hw, extents, extents, vector_lanes=(hw.max_message_simd, config.simd)):
            load, lines = lines_of(plan, buffer, view, extents, hw)
            if not plan.vector or load.same_placement(fma):
                return plan, load, lines
    blocks = block2d_plan(view, gemm, config, hw, operand, fma)
    if blocks is not None:  # one message per block and no reorder: fewer instructions than any lines
        return blocks, fma, []
    best: tuple[int, LinePlan, TileLayout, list[Line]] | None = None
    for cost, plan in line_plans(
        view, gemm, hw, extents, extents, vector_lanes=vector_lanes(config, hw), interleave=True
    ):
        load, lines = lines_of(plan, buffer, view, extents, hw)
        moves = 0 if load.same_placement(fma) else reorder_moves(fma, load, hw)
        total = global_cost(cost, config, hw) + moves
        if best is None or total < best[0]:
            best = (total, plan, load, lines)
    assert best is not None  # line_plans offers scattered messages at least
    return best[1], best[2], best[3]


def lines_of(
    plan: LinePlan, buffer: Var, view: View, extents: tuple[int, int], hw: Platform
) -> tuple[TileLayout, list[Line]]:
    """The registers of a tile of `extents` moved in `plan`'s lines, and the lines."""
    return line_layout(
        buffer, view.type, *extents, plan.line_dim, plan.length, hw.grf_bytes, plan.lanes, plan.interleave
    )


def reads_a_in_place(config: Config, gemm: Gemm) -> bool:
    """Whether the multiply can read A in any layout a load leaves it: mad broadcasts one A
    element per instruction, a scalar region anywhere in the registers, so a vector message's
    component-major tile (a pixel per lane, its K elements in consecutive registers) needs no
    reorder -- unless A is widened on the way (bf16, int8)."""
    return config.fma == "mad" and operand_type(config, gemm.a.type, gemm.acc_type) == gemm.a.type


def unpacks_k_rows(config: Config, gemm: Gemm) -> bool:
    """Whether a mad kernel reads a view a K row per message and unpacks each row's K coordinate
    into components: a view not addressed linearly along K (`linear_stride`: a 1x1 stride-1
    layer's pixels are), other than the A that mad reads in place (gathered a K row per lane: one
    vector unpack per message)."""
    if config.fma != "mad" or len(gemm.k.components) < 2:
        return False
    return any(
        "k" in view.dims
        and linear_stride(view, gemm.k) is None
        and not (view is gemm.a and reads_a_in_place(config, gemm))
        for view in (gemm.a, gemm.b)
    )


@dataclass(frozen=True)
class GatheredA:
    """Vector messages gathering mad's A (`gathered_a`): the tile they load, their cost in block
    messages (`line_plans`) and their plan."""

    tile: tuple[int, int]
    messages: int
    plan: LinePlan


def _bounds(view: View, gemm: Gemm) -> tuple[dict[str, Var], list[Expr]]:
    """The view's in-bounds conditions over a variable per GEMM component (by name)."""
    components = [c for dim in view.dims for c in gemm.dim(dim).components]
    names = {c.name: Var(f"bounds_{c.name}") for c in components}
    return names, view.access({c.name: Idx.of(names[c.name], 0, c.size - 1) for c in components})[1]


def has_bounds(view: View, gemm: Gemm) -> bool:
    """Whether the view's accesses have in-bounds conditions (padding, strides) for some values
    of the GEMM coordinates."""
    return bool(_bounds(view, gemm)[1])


def mask_kinds(view: View, gemm: Gemm) -> tuple[bool, bool]:
    """(whether some in-bounds condition of the view reads the innermost component of none of its
    dimensions, whether some reads the innermost component of its first): of a padded layer's A,
    the input row's check, the same for every pixel of a tile within one output row (the
    builder's tile guard), and the input column's, which is each pixel's own."""
    names, masks = _bounds(view, gemm)
    inner = [names[gemm.dim(dim).inner.name] for dim in view.dims]
    used = [set(free_vars(mask)) for mask in masks]
    return any(not reads.intersection(inner) for reads in used), any(inner[0] in reads for reads in used)


def gathered_a(view: View, gemm: Gemm, hw: Platform, extents: tuple[int, int], simd: int) -> GatheredA | None:
    """The vector messages gathering mad's A tile of `extents` (`reads_a_in_place`; `simd` the
    mad's exec size), when they are its cheapest messages; None where block messages stay
    cheaper or the lanes cannot fill whole registers.  A component (a dword per lane) short of
    whole registers would land in a temporary and every component move.  Where a row's block
    message needs four instructions for its 64-bit address (no add3: XeLP) and the tile is
    masked anyway (padding), a tile of 7 rows (m_tile=7 for rows of 7, 14, 28 pixels) loads 8,
    the eighth lane masked by its bounds and never read.  With add3 (two instructions) the block
    rows stay cheaper (XeHPG's 3x3 layers: 0.3 to 0.8 % more cycles gathered), and unmasked
    (1x1) the eighth lane's mask and zero fill cost more than they save (XeLP: up to 1 %)."""
    rows = extents[0]
    if not hw.has_add3 and has_bounds(view, gemm):
        per_register = hw.grf_bytes // 4
        padded = -(-rows // per_register) * per_register
        if padded - rows < rows and padded <= hw.max_message_simd:  # at most a lane per row, one message
            rows = padded
    tile = (rows, extents[1])
    messages, plan = line_plans(view, gemm, hw, tile, extents, vector_lanes=(hw.max_message_simd, simd))[0]
    if not plan.vector or (plan.lanes * 4) % hw.grf_bytes or tile[1 - plan.line_dim] % plan.lanes:
        return None
    return GatheredA(tile, messages, plan)


def vector_lanes(config: Config, hw: Platform) -> tuple[int, ...]:
    """Lanes per vector message to try (dpas only): as many as a message has, or the exec size
    (a message of `simd` K-contiguous columns is one VNNI block of B)."""
    return (hw.max_message_simd, config.simd) if config.systolic else ()


def global_cost(messages: int, config: Config, hw: Platform) -> int:
    """Modeled instructions of global messages worth `messages` block messages, with the
    prefetch the scheduler adds for each when the loop is multi-buffered."""
    return GLOBAL_MESSAGE_COST * messages * (2 if prefetches(config, hw) else 1)


def _retarget(layout: TileLayout, buffer: Var) -> TileLayout:
    return TileLayout(buffer, layout.type, layout.rows, layout.cols, layout.pieces, layout.elements)


# SLM: the group tile's layout, the threads' slices and tiles ---------------------------------

GLOBAL_MESSAGE_COST = 4  # a global message with its 64-bit address and mask, in instructions (modeled)


def _plan_slm(
    name: str,
    view: View,
    gemm: Gemm,
    config: Config,
    hw: Platform,
    extents: tuple[int, int],
    group_extents: tuple[int, int],
) -> tuple[SlmPlan, TileLayout]:
    """The SLM plan of one operand and the layout of the thread's tile read back from it.

    dpas reads its operands in interleaved layouts (`multiply.operand_layout`).  The SLM tile is
    laid out that way for the whole group, so each thread reads its tile with a few block messages
    straight into the layout dpas reads, and the interleaving happens once per element, when the
    thread that loaded a slice from global memory stores it, instead of once per reading thread."""
    orientation = plan_lines(view, gemm, hw, group_extents, group_extents, interleave=config.systolic)
    counts = (group_extents[0] // extents[0], group_extents[1] // extents[1])  # thread tiles per group tile
    load_var = Var(f"{name}_load", PTR)
    slm_var = Var(f"{name}_slm", PTR)
    for layout in _slm_layouts(name, view, gemm, config, slm_var, group_extents, orientation.line_dim):
        placed = _placement(layout, extents, counts)
        if placed is None:
            continue
        if config.systolic:
            load = operand_layout(config, gemm, name, load_var, extents[0], extents[1], view.type)
        else:
            load = _line_tile(load_var, view, hw, extents, orientation.line_dim)
        read = Placement(contiguous_runs(load.offset_map, placed[0]), placed[1])
        return _plan_slices(name, view, gemm, config, hw, layout, group_extents, orientation.line_dim, read), load
    raise AssertionError(f"no SLM layout of {name.upper()} places every thread's tile alike")


def _slm_layouts(
    name: str, view: View, gemm: Gemm, config: Config, buffer: Var, extents: tuple[int, int], line_dim: int
) -> list[TileLayout]:
    """SLM layouts of the group tile, best first: the multiply's own layout for dpas, then the
    tile dense along the line dimension of its global loads."""
    dense = dense_layout(buffer, view.type, extents[0], extents[1], row_major=line_dim == 1)
    if config.systolic:
        return [operand_layout(config, gemm, name, buffer, extents[0], extents[1], view.type), dense]
    return [dense]


def _line_tile(buffer: Var, view: View, hw: Platform, extents: tuple[int, int], line_dim: int) -> TileLayout:
    """A tile in lines along `line_dim`, each as long as a block message allows."""
    size = view.type.size
    length = next(
        d
        for d in range(extents[line_dim], 0, -1)
        if extents[line_dim] % d == 0 and d * size <= hw.max_block_message_bytes
    )
    return line_layout(buffer, view.type, extents[0], extents[1], line_dim, length, hw.grf_bytes)[0]


def _placement(
    layout: TileLayout, extents: tuple[int, int], counts: tuple[int, ...]
) -> tuple[np.ndarray, tuple[tuple[Term, ...], tuple[Term, ...]]] | None:
    """The offsets in `layout` of the tile of `extents` at (0, 0), and the terms giving how far the
    tile at (i*rows, j*cols) is shifted from it (i < counts[0], j < counts[1]), when every such
    tile is the first one shifted by a constant and the shift is a sum of `Term`s of i and of j;
    else None."""
    full = layout.offset_map
    rows, cols = extents
    first = full[:rows, :cols]
    shifts = np.zeros(counts, dtype=np.int64)
    for i in range(counts[0]):
        for j in range(counts[1]):
            delta = full[i * rows : (i + 1) * rows, j * cols : (j + 1) * cols] - first
            if not np.all(delta == delta[0, 0]):
                return None
            shifts[i, j] = delta[0, 0]
    if not np.array_equal(shifts, shifts[:, :1] + shifts[:1, :]):
        return None
    row_terms, col_terms = _terms(shifts[:, 0]), _terms(shifts[0, :])
    if row_terms is None or col_terms is None:
        return None
    return first, (row_terms, col_terms)


def _terms(shifts: np.ndarray) -> tuple[Term, ...] | None:
    """`Term`s of i giving shifts[i]: i*a, or (i % p)*a + (i / p)*b (a tile crossing a dpas K step
    or block boundary every p tiles); None if neither fits."""
    n = len(shifts)
    index = np.arange(n)
    if n == 1:
        return ()
    if np.array_equal(shifts, index * shifts[1]):
        return (Term(1, 0, int(shifts[1])),)
    for p in range(2, n):
        if n % p == 0 and np.array_equal(shifts, index % p * shifts[1] + index // p * shifts[p]):
            return Term(1, p, int(shifts[1])), Term(p, 0, int(shifts[p]))
    return None


def _plan_slices(
    name: str,
    view: View,
    gemm: Gemm,
    config: Config,
    hw: Platform,
    layout: TileLayout,
    group_extents: tuple[int, int],
    line_dim: int,
    read: Placement,
) -> SlmPlan:
    """Cut the group tile into one slice per thread and choose how a slice travels, by modeled
    instructions: the global messages that load it, then either the SLM messages storing it as
    loaded, or moves reordering it into SLM order first (`packed_layout`) when that saves more
    messages than the moves cost; or 2D blocks loading it in SLM order, where they can."""
    threads = config.threads_per_group
    size = view.type.size
    best: tuple[int, SlmPlan] | None = None
    for slices in slice_shapes(group_extents, threads, line_dim):
        extents = (group_extents[0] // slices[0], group_extents[1] // slices[1])
        placed = _placement(layout, extents, slices)
        if placed is None:
            continue
        relative, terms = placed
        alignment = Placement([], terms).base_alignment(size)
        packed = packed_layout(Var(f"{name}_packed", PTR), layout, 0, 0, extents[0], extents[1], hw.grf_bytes)
        packed_runs = run_arrays(packed.offset_map, relative)
        packed_cost = slm_message_cost(packed_runs, size, alignment, hw)
        blocks = block2d_plan(view, gemm, config, hw, name, packed)
        if blocks is not None:  # loaded in SLM order: no stage, no moves
            total = blocks.cost * (2 if prefetches(config, hw) else 1) + packed_cost
            if best is None or total < best[0]:
                store = Placement(packed_runs.runs(), terms)
                best = (total, SlmPlan(layout, slices, extents, blocks, packed, [], packed, store, read))
        for messages, line_plan in line_plans(
            view, gemm, hw, extents, extents, vector_lanes=vector_lanes(config, hw), interleave=config.systolic
        ):
            stage, lines = lines_of(line_plan, Var(f"{name}_stage", PTR), view, extents, hw)
            runs = run_arrays(stage.offset_map, relative)
            options: list[tuple[int, TileLayout, Runs | list[LaneRun]]] = [
                (slm_message_cost(runs, size, alignment, hw), stage, runs)
            ]
            if line_plan.vector:
                vectors = lane_runs(lines, line_plan.line_dim, relative, size)
                if vectors is not None:
                    options.append((slm_message_cost(vectors, size, alignment, hw), stage, vectors))
            if not packed.same_placement(_retarget(stage, packed.buffer)):
                options.append((packed_cost + planned_moves(packed, stage, hw), packed, packed_runs))
            store_cost, source, store_runs = min(options, key=lambda option: option[0])
            total = global_cost(messages, config, hw) + store_cost
            if best is None or total < best[0]:
                store = Placement(store_runs.runs() if isinstance(store_runs, Runs) else store_runs, terms)
                best = (total, SlmPlan(layout, slices, extents, line_plan, stage, lines, source, store, read))
    if best is None:
        raise ConfigError(
            f"slm=1: the group's {name.upper()} tile ({group_extents[0]}x{group_extents[1]}) cannot be "
            f"shared evenly by {threads} threads; change tg_m/tg_n or the tiles, or use slm=0"
        )
    return best[1]


def slice_shapes(extents: tuple[int, int], threads: int, line_dim: int) -> list[tuple[int, int]]:
    """(slices along rows, slices along columns) that cut the tile evenly into `threads` slices:
    whole lines first (slices across the line dimension), then along it, then both."""
    across = (threads, 1) if line_dim == 1 else (1, threads)
    shapes = [across, across[::-1]] + [(r, threads // r) for r in range(2, threads) if threads % r == 0]
    return [shape for shape in dict.fromkeys(shapes) if extents[0] % shape[0] == 0 and extents[1] % shape[1] == 0]


def reorder_moves(dst: TileLayout, src: TileLayout, hw: Platform) -> int:
    """The move instructions `copy_tile(dst, src)` lowers into: per move of `tile_moves`, a line
    per row or per column, whichever takes fewer (`lower.calls`), each cut as the region rules
    allow (`emit.regions.move_instructions`: a stride no operand encodes moves an element at a time)."""
    dst, src, moves = tile_moves(dst, src)
    sizes, grf = (dst.type.size, src.type.size), hw.grf_bytes

    def count(m) -> int:
        if m.rows == 1 or (m.d_rs == m.cols * m.d_cs and m.s_rs == m.cols * m.s_cs):
            return move_instructions(m.rows * m.cols, m.d_cs, sizes[0], m.s_cs, sizes[1], grf)
        by_rows = m.rows * move_instructions(m.cols, m.d_cs, sizes[0], m.s_cs, sizes[1], grf)
        by_cols = m.cols * move_instructions(m.rows, m.d_rs, sizes[0], m.s_rs, sizes[1], grf)
        return min(by_rows, by_cols)

    return sum(count(m) for m in moves)


def planned_moves(dst: TileLayout, src: TileLayout, hw: Platform) -> int:
    """The planner's price of `copy_tile(dst, src)` when it weighs moves against messages: a move
    writes up to two GRFs of elements at its destination stride.  It undercounts lines whose
    source stride has no encoding (`reorder_moves` counts them), but messages cost the model
    more than their instructions: counted exactly, the moves sent XeHPG's forward f16
    res3a_branch2b from a vector gather to a message per line (15891 -> 16515 modeled cycles).
    (Without SLM, `plan_direct` counts them exactly: there it pays.)"""
    return _planned_moves(dst, src, hw.grf_bytes)


@lru_cache(maxsize=1024)  # as `tile_moves`: the heuristic prices the same layouts in many configurations
def _planned_moves(dst: TileLayout, src: TileLayout, grf_bytes: int) -> int:
    dst, _, moves = tile_moves(dst, src)
    reach = 2 * grf_bytes // dst.type.size  # elements two GRFs hold at stride 1

    def lines(count: int, length: int, stride: int) -> int:
        return count * -(-length // max(1, min(32, reach // max(1, abs(stride)))))

    return sum(min(lines(m.rows, m.cols, m.d_cs), lines(m.cols, m.rows, m.d_rs)) for m in moves)


def _plan_post_load(view: View | None, index: int, gemm: Gemm, config: Config, hw: Platform) -> OutputPlan | None:
    """The tile a post-op's tensor is loaded into, with the messages of the output it matches:
    C's tile (m_tile x n_tile), or one row of n_tile (a 1 x 1 tile for one common value)."""
    if view is None:
        return None
    if len(view.dims) == 2:
        extents = (config.m_tile, config.n_tile)
    else:
        extents = (1, config.n_tile if view.unit else 1)
    return _plan_output(view, gemm, hw, extents, f"post{index}_load", view.type, "")


def _plan_output(
    view: View, gemm: Gemm, hw: Platform, extents: tuple[int, int], name: str, type, atomic: str
) -> OutputPlan:
    plan = plan_lines(view, gemm, hw, extents, extents, allow_block=not atomic)
    tile, lines = line_layout(Var(name, PTR), type, extents[0], extents[1], plan.line_dim, plan.length, hw.grf_bytes)
    return OutputPlan(view, plan, tile, lines, atomic)
