"""An estimate of a configuration's modeled cycles, from the configuration and the problem alone.

The performance model (`xegen.emit.cost`, docs/model.md) prices a compiled kernel: it needs the
kernel's instructions and how often each runs, and compiling one candidate takes seconds.  The
configuration heuristic ranks hundreds of candidates, so it estimates what the model would say
from the plan's arithmetic instead, with the model's rates (`xegen.hw`) and launch formulas
(`xegen.launch`):

- per K iteration a thread issues its multiply instructions (exact, from the tile and
  instruction shapes), its messages (the line plans of `xegen.plan.messages`, each with its
  address arithmetic, plus the mask conditions and the zeroing of the registers where the view
  has bounds), the unpacking of the K coordinate into its components and the loop's branch;
  with slm=1 its share of the group's global loads, the SLM stores and loads and the barriers;
  the moves that bring A and B into dpas's layout (in backward weights on XeHPC as the plan
  makes them, `staging`; elsewhere a move per element without SLM, `_operand_stagings`);
- once per thread: the prologue, the epilogue (convert, bias, stores) and, with tg_k > 1, the
  partial sums added through SLM;
- a thread waits for its loads once per iteration, for what the loop's own instructions do not
  cover, unless the loop is multi-buffered (`gmem_bufs`, `slm_bufs`); with tg_k of 16 or more the
  first thread along K also waits for each SLM load of the others' partial sums;
- the device: the busiest EU runs `busiest_eu_threads` threads, whose issue, ALU, XMX and
  load/store clocks add up; the threads resident on it hide each other's waits (`stall`), and
  DRAM moves what the tiling leaves it (`xegen.emit.roofline.traffic`, as the model counts it).

The instruction counts per message and per component are approximations of what lowering emits
(written next to each constant): they rank configurations, they are not the model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..emit.cost import global_load_latency
from ..emit.roofline import Tiling, Workload, traffic
from ..errors import ConfigError
from ..hw import Platform
from ..ir import Var
from ..ir.types import PTR
from ..launch import busiest_eu_threads, occupancy, stall
from .block2d import Block2dPlan, block2d_plan, direct_blocks
from .config import Config, a_rows_per_grf, check_config, k_iterations, k_step, may_guard_tile, prefetches
from .gemm import Gemm, View
from .kernel import (
    REDUCTION_CHUNK_GRFS,
    GatheredA,
    check_tiles_can_fit,
    fold_slice_bytes,
    folds_partial_sums,
    gathered_a,
    global_cost,
    has_bounds,
    mask_kinds,
    plan_direct,
    planned_moves,
    reads_a_in_place,
    reorder_moves,
    slice_shapes,
    unpacks_k_rows,
    vector_lanes,
)
from .messages import line_plans, plan_lines
from .multiply import operand_layout
from .scratch import needs_scratch
from .tiles import TileLayout, line_layout, round_up

LOOP_INSTRUCTIONS = 3  # the K loop's increment, compare and branch
K_START_INSTRUCTIONS = 2  # the iteration's K coordinate
COMPONENT_INSTRUCTIONS = 5  # unpacking one more component: a division by a constant, a remainder
# a global message: its 64-bit address (two adds on LSC platforms; a header move and three adds
# for an HDC message) and the send
GLOBAL_MESSAGE_INSTRUCTIONS = {"lsc": 3, "hdc": 5}
MASK_INSTRUCTIONS = 6  # a bounded line: its components, compares into the flag, the offset's sign
SLM_MESSAGE_INSTRUCTIONS = 2  # an SLM address and the send
SYNC_INSTRUCTIONS = 2  # a fence or a barrier (signal and wait)
FIXED_INSTRUCTIONS = 40  # the prologue (arguments, ids, tile origins) and the end of the thread
STORE_LINE_INSTRUCTIONS = 6  # an output line: its address, its bound, the send


@dataclass(frozen=True)
class Estimate:
    """Estimated clocks, as the model would give them for the compiled kernel (`Cycles.terms`),
    and the kernel's instructions."""

    threads: int
    busiest: int  # threads on the busiest EU
    compute: float
    issue: float
    load_store: float
    memory: float
    latency: float
    instructions: float  # in the kernel: the K loop's body as often as the scheduler writes it

    @property
    def device(self) -> float:
        return max(self.compute, self.issue, self.load_store, self.memory, self.latency)

    @property
    def filled(self) -> float:
        """The share of the device's EUs the launch keeps busy: threads / (busiest x EUs)."""
        return self.threads / self.busiest


@dataclass(frozen=True)
class Work:
    """One thread's instructions, ALU clocks, XMX clocks and bytes moved, and its waits."""

    issue: float = 0.0
    alu: float = 0.0
    xmx: float = 0.0
    bytes: float = 0.0
    wait: float = 0.0

    def __add__(self, other: Work) -> Work:
        return Work(
            self.issue + other.issue,
            self.alu + other.alu,
            self.xmx + other.xmx,
            self.bytes + other.bytes,
            self.wait + other.wait,
        )

    def __mul__(self, times: float) -> Work:
        return Work(self.issue * times, self.alu * times, self.xmx * times, self.bytes * times, self.wait * times)


def scalar(instructions: float) -> Work:
    """Instructions of one ALU clock each (scalar or narrow ones: address and index arithmetic)."""
    return Work(instructions, instructions)


class Estimator:
    """Estimates for the configurations of one GEMM on one platform, remembering what they
    share (the messages of a tile shape, whether a view has bounds)."""

    def __init__(self, gemm: Gemm, hw: Platform):
        self.gemm, self.hw = gemm, hw
        self._messages: dict[tuple, Work] = {}
        self._stagings: dict[tuple, dict[str, Staging]] = {}
        self._bounded = {view.tensor: has_bounds(view, gemm) for view in (gemm.a, gemm.b)}
        self._a_mask_kinds = mask_kinds(gemm.a, gemm)  # (only A's rows are guarded)

    def cycles(self, config: Config) -> float:
        return self.estimate(config).device

    def estimate(self, config: Config) -> Estimate:
        return _estimate(config, self.gemm, self.hw, self._global, self._staging)

    def _global(self, view: View, extents: tuple[int, int], twice: int, gather_simd: int, guarded: bool) -> Work:
        key = (view.tensor, extents, twice, gather_simd, guarded)
        if key not in self._messages:
            bounded = self._bounded[view.tensor]
            # priced as gathered only where the tile has masks (`_gather_simd`)
            gathered = gathered_a(view, self.gemm, self.hw, extents, gather_simd) if gather_simd and bounded else None
            kinds = self._a_mask_kinds if guarded and gathered is None else None
            self._messages[key] = _global(view, self.gemm, self.hw, extents, twice, bounded, gathered, kinds)
        return self._messages[key]

    def _staging(self, config: Config, operand: str) -> Staging:
        key = _staging_key(config, self.hw)
        if key not in self._stagings:
            self._stagings[key] = self._operand_stagings(config)
        return self._stagings[key][operand]

    def _operand_stagings(self, config: Config) -> dict[str, Staging]:
        """Each operand's staging for dpas (`staging`) in backward weights on platforms with 2D
        block loads (XeHPC), where both operands are K-strided (channels contiguous) and their
        staging is most of a K block's instructions, and in the swapped forward product, whose
        gathered pixels land in dpas's VNNI B with no move (priced a move per element of both
        tiles, its configurations were estimated at five times the model in geomean on XeHPC
        bf16 res4a_branch2b, docs/conv.md).  Elsewhere, and there where an operand loaded
        straight from memory is gathered with in-bounds conditions, the estimate keeps its older
        price: no moves with slm=1; without, 2D blocks where they load both operands, else a move
        per element of both tiles (`_element_moves`).  Counted from the plan there, it ranked
        kernels the model finds slower: res3a_branch2b (3x3, padded) forward in bf16 on XeHPC, A
        gathered beside B in 2D blocks, was estimated at 2541 clocks and modeled 7342 against 5713
        for the SLM kernel chosen otherwise; in f16 on XeHPG, counting the SLM packing moved a
        16 x 16 tile 5 % ahead of the 32 x 16 one, modeled 18700 against 15891; BWD_WB in bf16 on
        XeHPG, where every slice is gathered and packed, changed 11 of resnet_50's choices, to
        kernels up to 2x slower (res3a_branch2a 7020 -> 14262 cycles)."""
        gemm, hw, operands = self.gemm, self.hw, ("a", "b")
        counted = gemm.problem.kind == "bwd_w" and hw.has_block2d
        if gemm.swapped and config.systolic:  # with slm=1 too (given only): its slices as planned
            return {op: staging(config, gemm, hw, op) for op in operands}
        if not config.systolic or (config.slm and not counted):
            return {op: Staging(_even_share(config, op) if config.slm else _tile(config, op)) for op in operands}
        if counted:
            stagings = {op: staging(config, gemm, hw, op) for op in operands}
            views = {"a": gemm.a, "b": gemm.b}
            if config.slm or not any(
                self._bounded[views[op].tensor] and stagings[op].blocks is None for op in operands
            ):
                return stagings
        blocks = {op: direct_blocks(config, gemm, hw, op) for op in operands}
        if all(plan is not None for plan in blocks.values()):
            return {op: Staging(_tile(config, op), 0, blocks[op]) for op in operands}
        return {op: Staging(_tile(config, op), _element_moves(config, gemm, hw, op)) for op in operands}


def estimate(config: Config, gemm: Gemm, hw: Platform) -> Estimate:
    """What the model would say of the kernel of `config` (see the module docstring)."""
    return Estimator(gemm, hw).estimate(config)


@dataclass(frozen=True)
class Staging:
    """How the plan brings one operand's K block into dpas's layout (`kernel._plan_operand`):
    the tile each thread loads from global memory (its own, or with slm=1 its slice of the
    group tile), the moves reordering what the loads leave (into dpas's layout, or the slice
    into SLM order) and, where 2D blocks load it, their plan (then no moves, no masks)."""

    loaded: tuple[int, int]
    moves: float = 0
    blocks: Block2dPlan | None = None


def _staging_key(config: Config, hw: Platform) -> tuple[Config, bool]:
    """What `staging` reads of a configuration: not the buffer counts or registers (only whether
    loads are prefetched), nor, without SLM, the group's shape."""
    kept = replace(config, grf=0, slm_bufs=1, gmem_bufs=1, k_split=1)
    if not config.slm:
        kept = replace(kept, tg_m=1, tg_n=1, tg_k=1)
    return kept, prefetches(config, hw)


def staging(config: Config, gemm: Gemm, hw: Platform, operand: str) -> Staging:
    """The staging of `operand` ("a" or "b"): loaded straight from memory, as `kernel.plan_direct`
    plans it; through SLM, a slice of the group tile in the first shape `kernel._plan_slices`
    tries that dpas's layout covers, loaded as it would be -- in 2D blocks where they place the
    slice in SLM order, else in the messages and moves cheapest together.  Without dpas the
    estimate counts no moves (SLM holds dense tiles)."""
    view, tile = (gemm.a if operand == "a" else gemm.b), _tile(config, operand)
    buffer = Var(f"{operand}_load", PTR)
    try:  # tiles are laid out only where the plan would lay them out
        check_config(config, gemm, hw)
        check_tiles_can_fit(gemm, config, hw)
    except ConfigError:
        return Staging(tile)
    if not config.slm:
        if not config.systolic:
            return Staging(tile)
        fma = operand_layout(config, gemm, operand, buffer, *tile, view.type)
        plan, load, _ = plan_direct(operand, buffer, view, gemm, config, hw, tile, fma)
        if isinstance(plan, Block2dPlan):
            return Staging(tile, 0, plan)
        return Staging(tile, 0 if load.same_placement(fma) else reorder_moves(fma, load, hw))
    group, threads = _group_tile(config, operand), config.threads_per_group
    if not config.systolic:
        return Staging(_even_share(config, operand))
    line_dim = plan_lines(view, gemm, hw, group, group).line_dim
    for slices in slice_shapes(group, threads, line_dim):
        share = (group[0] // slices[0], group[1] // slices[1])
        fma = operand_layout(config, gemm, operand, buffer, *share, view.type)
        if (fma.offset_map >= 0).all():
            break
    else:
        return Staging(_even_share(config, operand))  # the plan will not place the slices (a ConfigError)
    blocks = block2d_plan(view, gemm, config, hw, operand, fma)
    if blocks is not None:
        return Staging(share, 0, blocks)
    best: tuple[int, TileLayout] | None = None  # chosen by the planner's price of the moves
    for messages, plan in line_plans(view, gemm, hw, share, share, vector_lanes=vector_lanes(config, hw)):
        stage, _ = line_layout(buffer, view.type, *share, plan.line_dim, plan.length, hw.grf_bytes, plan.lanes)
        total = global_cost(messages, config, hw) + (0 if stage.same_placement(fma) else planned_moves(fma, stage, hw))
        if best is None or total < best[0]:
            best = (total, stage)
    assert best is not None  # line_plans offers scattered messages at least
    stage = best[1]
    return Staging(share, 0 if stage.same_placement(fma) else reorder_moves(fma, stage, hw))


def _tile(config: Config, operand: str) -> tuple[int, int]:
    """The thread's own tile of `operand`."""
    return (config.a_rows, config.k_block) if operand == "a" else (config.k_block, config.n_tile)


def _group_tile(config: Config, operand: str) -> tuple[int, int]:
    k_group = config.tg_k * config.k_block
    return (config.tg_m * config.m_tile, k_group) if operand == "a" else (k_group, config.tg_n * config.n_tile)


def _even_share(config: Config, operand: str) -> tuple[int, int]:
    """A thread's share of the group tile with slm=1, whole rows where the threads divide them."""
    group, threads = _group_tile(config, operand), config.threads_per_group
    return (group[0] // threads, group[1]) if group[0] % threads == 0 else (group[0], -(-group[1] // threads))


def _element_moves(config: Config, gemm: Gemm, hw: Platform, operand: str) -> float:
    """A move per element of the operand's tile (a quarter for bytes, which move four at a
    time): B always, A where its rows span K steps or share a GRF (XeHPC)."""
    view = gemm.a if operand == "a" else gemm.b
    per_element = 1.0 if view.type.size == 2 else 0.125
    if operand == "b":
        return config.k_block * config.n_tile * per_element
    moved = config.k_block > k_step(config, gemm) or a_rows_per_grf(hw) > 1
    return config.a_rows * config.k_block * per_element if moved else 0.0


def _estimate(config: Config, gemm: Gemm, hw: Platform, global_loads, stagings) -> Estimate:
    m_groups = -(-gemm.m.size // (config.tg_m * config.m_tile))
    n_groups = -(-gemm.n.size // (config.tg_n * config.n_tile))
    threads = m_groups * n_groups * gemm.groups * config.k_split * config.threads_per_group
    iterations = k_iterations(config, gemm)
    per_iteration = (
        _multiply(config, gemm, hw, stagings)
        + _bias_sums(config, gemm, hw)
        + _loads(config, gemm, hw, global_loads, stagings)
    )
    per_iteration += scalar(
        LOOP_INSTRUCTIONS
        + K_START_INSTRUCTIONS
        + COMPONENT_INSTRUCTIONS * (len(gemm.k.components) - 1) * _k_unpacks(config, gemm)
    )
    once = scalar(FIXED_INSTRUCTIONS) + _epilogue(config, gemm, hw)
    launch = Launch(
        threads,
        config.threads_per_group,
        config.grf,
        _slm_bytes(config, gemm, hw),
        barriers=bool(config.slm) or config.tg_k > 1,
    )
    # the model's traffic at each level (`xegen.emit.roofline.traffic`) for the bytes the loads request
    requested = (
        threads * iterations * (config.a_rows * gemm.a.type.size + config.n_tile * gemm.b.type.size) * config.k_block
    )
    sizes = [view.layout.elements * view.type.size for view in (gemm.a, gemm.b, gemm.c)]
    memory = (Workload(0, "f32", *sizes), int(requested), Tiling(m_groups, n_groups, config.k_split, gemm.groups))
    written = written_iterations(config, hw, iterations)
    return device_estimate(
        hw,
        launch,
        memory,
        per_iteration * iterations + once,
        lambda latency: (
            _wait(config, hw, per_iteration, latency) * iterations
            + _combine_wait(config, gemm, hw)
            + (SCRATCH_ROUND_TRIPS * latency if needs_scratch(gemm.problem, config) else 0.0)
        ),
        once.issue + per_iteration.issue * written,
    )


def _k_unpacks(config: Config, gemm: Gemm) -> int:
    """K coordinates a thread unpacks into components per iteration: one, whose components its
    K rows share, where the group's K blocks divide the innermost component (the builder's
    `components`); else, in a mad kernel reading a view a K row per message (`unpacks_k_rows`),
    each row of its block (bf16 backward weights' pixels of a 56-wide image in blocks of 16: a
    division by 56 per row)."""
    if gemm.k.inner.size % (config.tg_k * config.k_block) == 0 or not unpacks_k_rows(config, gemm):
        return 1
    return config.k_block


@dataclass(frozen=True)
class Launch:
    """What the occupancy formulas (`xegen.launch`) read of a kernel's launch."""

    threads: int
    group_threads: int
    grf: int
    slm_bytes: int = 0
    barriers: bool = False


def device_estimate(
    hw: Platform,
    launch: Launch,
    memory: tuple[Workload, int, Tiling],
    work: Work,
    waits: Callable[[float], float],
    instructions: float,
) -> Estimate:
    """The model's terms for `launch.threads` threads that each do `work` and wait `waits(latency)`
    clocks in all for their loads, given the global loads' latency; `memory`: the problem's
    tensors, the bytes the threads' loads request and the tiling, as `roofline.traffic` takes them."""
    threads = launch.threads
    resident = occupancy(threads, launch.group_threads, hw, launch.grf, launch.slm_bytes, barriers=launch.barriers)
    workload, requested, tiling = memory
    moved = traffic(workload, requested, hw, tiling, resident.groups_per_subslice * hw.subslices)
    wait = waits(global_load_latency(hw, moved))
    busiest = busiest_eu_threads(threads, launch.group_threads, hw)
    busy = max(work.issue, work.alu, work.xmx, work.bytes / hw.load_store_bytes_per_clock)
    compute = max(work.alu, work.xmx) * busiest
    issue = work.issue * busiest
    load_store = work.bytes / hw.load_store_bytes_per_clock * busiest
    # A thread's own time taken as its busy time plus its waits, as the model took it until
    # 2026-11 (`launch.stall`; the model now takes its issue clocks plus its waits): ranked with
    # the model's own form, 35 of the 260 acceptance-matrix kernels took other configurations
    # that model slower, up to 1.7x (XeHPG res3a_branch2a BWD_WB bf16), none faster by as much.
    latency = max(compute, issue, load_store) + stall(resident, busy, wait, busy)
    return Estimate(
        threads, busiest, compute, issue, load_store, moved.dram / hw.dram_bytes_per_clock, latency, instructions
    )


def systolic_floor(config: Config, gemm: Gemm, hw: Platform) -> float:
    """A lower bound of the model's cycles for the kernel of the dpas `config`: its compute term
    counting the multiplies of A by B alone (`emit.cost.Cycles.terms`: the systolic clocks of all
    threads over the EUs' worth they spread over).  Exact in what it counts -- the dpas of every K
    block of every thread's tile, each priced as the model prices a dpas -- so a kernel the model
    prices below it cannot exist; the column sums and the rest of a kernel's work only add."""
    threads = _threads(config, gemm)
    blocks = -(-gemm.k.size // config.k_block) * threads / (config.tg_k * config.k_split)
    kind = "int8" if gemm.a.type.size == 1 else gemm.a.type.kind
    clocks = config.m_tile * config.n_tile * config.k_block / hw.fma_per_clock_per_eu[kind]
    return blocks * clocks / threads * busiest_eu_threads(threads, config.threads_per_group, hw)


def _threads(config: Config, gemm: Gemm) -> int:
    m_groups = -(-gemm.m.size // (config.tg_m * config.m_tile))
    n_groups = -(-gemm.n.size // (config.tg_n * config.n_tile))
    return m_groups * n_groups * gemm.groups * config.k_split * config.threads_per_group


def pipeline_shape(config: Config, hw: Platform) -> tuple[int, int]:
    """(depth, unroll) of the software pipeline the scheduler makes of the K loop
    (`xegen.schedule.buffering`): the global loads run (slm_bufs - 1) + (gmem_bufs - 1)
    iterations ahead, their prefetches one more; the body is unrolled lcm(slm_bufs, gmem_bufs)
    times so that every buffer copy is a constant."""
    prefetch = 1 if prefetches(config, hw) else 0
    return (config.slm_bufs - 1) + (config.gmem_bufs - 1) + prefetch, math.lcm(config.slm_bufs, config.gmem_bufs)


def written_iterations(config: Config, hw: Platform, iterations: int) -> int:
    """How many copies of the K loop's body the kernel holds: the unrolled body of the steady
    loop, the ramp-up's partial iterations and the ramp-down's (`xegen.schedule.pipeline`); the
    whole loop when the steady loop would not run once."""
    depth, unroll = pipeline_shape(config, hw)
    if depth == 0 and unroll == 1:
        return 1
    if iterations - depth < unroll:
        return iterations + depth
    return unroll + 2 * depth + (iterations - depth) % unroll


def _multiply(config: Config, gemm: Gemm, hw: Platform, stagings) -> Work:
    """The multiply instructions of one K block, and the reorders that feed them."""
    m, n, k = config.m_tile, config.n_tile, config.k_block
    columns = n // config.simd
    acc = gemm.acc_type.size
    if config.systolic:
        step = k_step(config, gemm)
        count = -(-m // config.dpas_rows) * (k // step) * columns
        kind = "int8" if gemm.a.type.size == 1 else gemm.a.type.kind
        work = Work(count, count, m * n * k / hw.fma_per_clock_per_eu[kind])
        # the moves into dpas's layout, as the plan makes them: of the thread's tiles loaded
        # straight from memory, or with slm=1 of its slices packed into SLM order (the tiles
        # it reads back are in dpas's layout already)
        return work + scalar(sum(stagings(config, operand).moves for operand in ("a", "b")))
    steps = k // k_step(config, gemm)
    count = m * steps * columns
    alu = max(1.0, config.simd * acc / hw.alu_bytes_per_clock)
    work = Work(count, count * alu)
    if gemm.a.type.kind not in ("f32", "f16") or config.fma == "dp4a":
        # widening bf16 (or int8 for mad) to the accumulator type, or B into dp4a's VNNI form:
        # a move per two registers of the widened tiles
        moved = (m * k + k * n) * acc / (2 * hw.grf_bytes)
        work += Work(moved, moved * max(1.0, 2 * hw.grf_bytes / hw.alu_bytes_per_clock))
    return work


def _bias_sums(config: Config, gemm: Gemm, hw: Platform) -> Work:
    """The column sums of B for one K block (`build.multiply.reduce_columns`: BWD_WB's bias
    gradient, a source zero point's compensation): a dpas of one row per K step and column
    block, a dp4a per 4 K rows and column block, else a mad per K row and column block."""
    if not gemm.sums_b_columns:
        return Work()
    columns = config.n_tile // config.simd
    if config.systolic:
        count = config.k_block // k_step(config, gemm) * columns
        kind = "int8" if gemm.b.type.size == 1 else gemm.b.type.kind
        return Work(count, count, config.n_tile * config.k_block / hw.fma_per_clock_per_eu[kind])
    if config.fma == "dp4a":
        count = config.k_block // 4 * columns
        return Work(count, count * max(1.0, config.simd * 4 / hw.alu_bytes_per_clock))
    count = config.k_block * columns
    return Work(count, count * max(1.0, config.simd * 4 / hw.alu_bytes_per_clock))


def _loads(config: Config, gemm: Gemm, hw: Platform, global_loads, stagings) -> Work:
    """One K block's loads of A and B: the thread's own tiles, or with slm=1 its share of the
    group's tiles through SLM."""
    twice = 2 if prefetches(config, hw) else 1  # a prefetch before each global load
    work = Work()
    for operand in ("a", "b"):
        view, extents = (gemm.a if operand == "a" else gemm.b), _tile(config, operand)
        tile_bytes = extents[0] * extents[1] * view.type.size
        staged = stagings(config, operand)
        loaded, blocks = staged.loaded, staged.blocks
        if blocks is not None:  # 2D blocks: no masks, no zero fill
            work += Work(blocks.cost * twice, blocks.cost * twice, 0.0, loaded[0] * loaded[1] * view.type.size)
        else:
            guarded = operand == "a" and guards_rows(config, gemm)
            work += global_loads(view, loaded, twice, _gather_simd(config, gemm, operand), guarded)
        if config.slm:
            stored = loaded[0] * loaded[1] * view.type.size
            messages = -(-stored // hw.max_block_message_bytes) + -(-tile_bytes // hw.max_block_message_bytes)
            work += Work(
                messages * SLM_MESSAGE_INSTRUCTIONS, messages * SLM_MESSAGE_INSTRUCTIONS, 0, stored + tile_bytes
            )
    if config.slm:
        work += scalar(3 * SYNC_INSTRUCTIONS)  # a fence and two barriers (or a signal and a wait)
    return work


def guards_rows(config: Config, gemm: Gemm) -> bool:
    """Whether the builder's tile guard (`build.builder._tile_guard`) takes A's row checks: the
    configuration allows a guard and the thread's tile lies within one output row (`m_tile`
    divides it)."""
    m = gemm.m
    return may_guard_tile(config, gemm) and len(m.components) > 1 and m.inner.size % config.m_tile == 0


def _gather_simd(config: Config, gemm: Gemm, operand: str) -> int:
    """The exec size of the mad reading `operand` in place (`kernel.gathered_a`), else 0.  The
    estimate prices such a tile as gathered only where it has in-bounds conditions (padding):
    unmasked, the plan still gathers it, but the estimate's price of the block messages it
    replaces is too high there already (about 5 instructions a row on XeLP, where rows at
    constant distances share one pointer and take 3), and crediting the gather on top moved
    XeLP's 14x14 1x1 layers from m_tile=7 to a gathered m_tile=8, 1.5 to 3.5 % slower."""
    return config.simd if operand == "a" and not config.slm and reads_a_in_place(config, gemm) else 0


def _global(
    view: View,
    gemm: Gemm,
    hw: Platform,
    extents: tuple[int, int],
    twice: int,
    bounded: bool,
    gathered: GatheredA | None,
    guarded: tuple[bool, bool] | None = None,
) -> Work:
    """A tile of `extents` loaded from global memory in the cheapest messages (`bounded`: with
    in-bounds conditions), or in `gathered`'s vector messages (mad's A, `kernel.gathered_a`).
    `guarded`: the tile is within one output row and the builder's tile guard may take the
    checks of its row (`kernel.mask_kinds` of the view): where there are such checks, they go
    once, and only the lines of the first and last pixel keep a mask (their column's) and are
    zeroed."""
    if gathered is not None:
        extents, cost, plan = gathered.tile, gathered.messages, gathered.plan
    else:
        lanes = (hw.max_message_simd,) if gemm.a.type.size < 4 else ()
        cost, plan = line_plans(view, gemm, hw, extents, extents, vector_lanes=lanes)[0]
    per_message = GLOBAL_MESSAGE_INSTRUCTIONS[hw.data_messages] * twice
    instructions = cost * per_message
    tile_bytes = extents[0] * extents[1] * view.type.size
    if bounded:
        lines = extents[1 - plan.line_dim] * -(-extents[plan.line_dim] // max(1, plan.length))
        if plan.vector:
            lines = -(-lines // plan.lanes)
        zeroing = -(-tile_bytes // (2 * hw.grf_bytes))
        if guarded is not None and guarded[0]:
            per_pixel = -(-extents[1] // max(1, plan.length)) if plan.line_dim == 1 and not plan.vector else lines
            masked = min(lines, 2 * per_pixel) if guarded[1] else 0
            instructions += MASK_INSTRUCTIONS  # the guard
            lines, zeroing = masked, -(-zeroing * masked // lines)
        instructions += lines * MASK_INSTRUCTIONS + zeroing
    return Work(instructions, instructions, 0.0, tile_bytes)


def _epilogue(config: Config, gemm: Gemm, hw: Platform) -> Work:
    """Converting and storing the C tile (and the bias), and with tg_k > 1 adding the partial
    sums of the other threads along K through SLM."""
    tile = config.m_tile * config.n_tile
    registers = tile * gemm.acc_type.size / hw.grf_bytes
    lines = config.m_tile * -(-config.n_tile * gemm.c.type.size // hw.max_block_message_bytes)
    work = Work(
        registers + lines * STORE_LINE_INSTRUCTIONS,
        registers * 2 + lines * STORE_LINE_INSTRUCTIONS,
        0.0,
        tile * gemm.c.type.size,
    )
    if needs_scratch(gemm.problem, config):
        # the f32 tile added into the scratch buffer, then read back (an exchange) and stored
        # converted, which every group issues (masked off but in the last): `scratch.py`
        atomics = 2 * config.m_tile * -(-config.n_tile * 4 // hw.max_block_message_bytes)
        work += Work(
            registers + atomics * STORE_LINE_INSTRUCTIONS + 2 * SYNC_INSTRUCTIONS,
            registers * 2 + atomics * STORE_LINE_INSTRUCTIONS,
            0.0,
            3 * tile * 4,
        )
    fold = _fold(config, gemm, hw)
    if fold is not None:
        # every thread stores its copy a slice at a time, adds up its slices of all the copies
        # and stores their totals; the first one loads the totals
        per_slice = fold.loads * SLM_MESSAGE_INSTRUCTIONS + config.tg_k * fold.slice_bytes / (2 * hw.grf_bytes)
        messages = -(-fold.copy_bytes // hw.max_block_message_bytes)
        reduce = (
            fold.slices * SLM_MESSAGE_INSTRUCTIONS
            + fold.turns * (per_slice + SLM_MESSAGE_INSTRUCTIONS)
            + messages * SLM_MESSAGE_INSTRUCTIONS
            + 4 * SYNC_INSTRUCTIONS
        )
        work += Work(reduce, reduce, 0.0, 2 * fold.copy_bytes + fold.turns * config.tg_k * fold.slice_bytes)
    elif config.tg_k > 1:
        messages = -(-tile * gemm.acc_type.size // hw.max_block_message_bytes)
        adds = registers / 2
        if gemm.sums_b_columns:  # the column sums follow the accumulators
            messages, adds = messages + 1, adds + 1
        reduce = (config.tg_k - 1) * (messages * SLM_MESSAGE_INSTRUCTIONS + adds) + 2 * SYNC_INSTRUCTIONS
        work += Work(reduce, reduce, 0.0, config.tg_k * tile * gemm.acc_type.size)
    return work


@dataclass(frozen=True)
class Fold:
    """The folded combine of tg_k >= FOLD_THREADS (`kernel.KReduction`) as the plan cuts it."""

    copy_bytes: int  # a thread's accumulators and bias-gradient sums, whole GRFs each
    slice_bytes: int
    slices: int
    turns: int  # slices a thread adds up
    loads: int  # SLM loads per slice: the tg_k copies of it, `chunk` bytes at a time


def _fold(config: Config, gemm: Gemm, hw: Platform) -> Fold | None:
    if not folds_partial_sums(config, gemm, hw):
        return None
    grf = hw.grf_bytes
    copy_bytes = round_up(config.m_tile * config.n_tile * gemm.acc_type.size, grf)
    if gemm.sums_b_columns:
        copy_bytes += round_up(config.n_tile * gemm.acc_type.size, grf)
    chunk = min(round_up(config.m_tile * config.n_tile * gemm.c.type.size, grf), REDUCTION_CHUNK_GRFS * grf)
    slice_bytes = fold_slice_bytes(copy_bytes, config.tg_k, chunk, grf)
    slices = copy_bytes // slice_bytes
    loads = -(-config.tg_k // (chunk // slice_bytes))
    return Fold(copy_bytes, slice_bytes, slices, -(-slices // config.tg_k), loads)


def _wait(config: Config, hw: Platform, per_iteration: Work, latency: float) -> float:
    """Clocks a thread waits per iteration for loads its own instructions do not cover: the
    global loads' `latency` (the model's mix of L1, last-level cache and DRAM), less the
    iteration's instructions when the loop is multi-buffered (the loads run an iteration
    ahead); all of it when it is not (the first multiply needs a line loaded just before it),
    and the SLM round trip too with slm=1."""
    if config.gmem_bufs > 1 or config.slm_bufs > 1:
        return max(0.0, latency - per_iteration.issue)
    return latency + (hw.send_latency("slm") if config.slm else 0.0)


SCRATCH_ROUND_TRIPS = 3  # a scratch buffer's fence, ticket and read-back, each waited for in full


def _combine_wait(config: Config, gemm: Gemm, hw: Platform) -> float:
    """Clocks the first thread along K waits adding the others' partial sums.  Up to
    FOLD_THREADS it loads them from SLM into one register buffer (`kernel.KReduction`: the tile a
    chunk of up to REDUCTION_CHUNK_GRFS registers at a time, then the bias-gradient sums), and
    each load waits for the adds of the one before it; folded, it waits so for the loads of its
    own slices of all the copies, then for the load of the totals.  The model follows that
    thread, so a long combine is a latency the other threads of the group do not hide.  Counted
    from COMBINE_WAIT_THREADS on."""
    if config.tg_k < COMBINE_WAIT_THREADS:
        return 0.0
    fold = _fold(config, gemm, hw)
    if fold is not None:
        return (fold.turns * fold.loads + 1) * hw.send_latency("slm")
    tile_bytes = config.m_tile * config.n_tile * gemm.acc_type.size
    loads = -(-tile_bytes // min(round_up(tile_bytes, hw.grf_bytes), REDUCTION_CHUNK_GRFS * hw.grf_bytes))
    if gemm.sums_b_columns:
        loads += 1
    return (config.tg_k - 1) * loads * hw.send_latency("slm")


# The combine's wait is counted for the groups of more than 8 threads along K the heuristic tries
# where a layer leaves the device idle (`heuristic._k_threads`): without it, res5a_branch2a in f32
# on XeHPC took 7 x 32 tiles with tg_k=16 (2 threads per EU), estimated 3263 clocks and modeled
# 4804, over 7 x 16 (estimated 3706, modeled 3675).  The ranking of tg_k up to 8 was measured
# without it (ESTIMATE_MARGIN's note); counted for every tg_k > 1, it changed 65 of the 429
# choices checked (bench/e2e/backward.py's layers, mb1, f32/bf16/f16/int8, three platforms), 11
# of them to a kernel slower under the model (up to 1.31x: res2a_branch1's BWD_D bf16 on XeHPC).
COMBINE_WAIT_THREADS = 16


def _slm_bytes(config: Config, gemm: Gemm, hw: Platform) -> int:
    """SLM per group: the staged tiles of A and B with their buffers, the partial sums of tg_k."""
    staged = 0
    if config.slm:
        k_group = config.tg_k * config.k_block
        staged = (
            config.slm_bufs
            * k_group
            * (config.tg_m * config.m_tile * gemm.a.type.size + config.tg_n * config.n_tile * gemm.b.type.size)
        )
    fold = _fold(config, gemm, hw)
    if fold is not None:  # every thread's copy and the totals
        return staged + (config.tg_k + 1) * config.tg_m * config.tg_n * fold.copy_bytes
    tile = -(-config.m_tile * config.n_tile * gemm.acc_type.size // hw.grf_bytes) * hw.grf_bytes
    return staged + (config.tg_k - 1) * config.tg_m * config.tg_n * tile
