"""plan=depthwise for backward weights (BWD_W, BWD_WB) of depthwise convolutions: the channels
across the SIMD lanes, each thread reducing a share of the output pixels with every tap's sum
(and the bias gradient's) in registers.

    diff_wei[c][kd][kh][kw] = sum over mb, od, oh, ow of src[mb][c][id][ih][iw] * diff_dst[mb][c][od][oh][ow]
    diff_bias[c]            = sum over mb, od, oh, ow of diff_dst[mb][c][od][oh][ow]

A work item is what a forward row-plan thread computes (`rows.py`): `m_tile` consecutive outputs
along w of one output row, for `n_tile` channels.  Its diff_dst pixels are loaded once, and per
kernel row (kd, kh) the input segment they read, each segment pixel serving every kw tap and every
output that reads it, exactly the forward walk's pixels; the multiply-adds go into the tap's
accumulators instead of the output's:

    for each item of the thread's share:                                 the loop
        dd[p] = diff_dst pixel p, a block message each    (masked past the last item)
        for each kernel row r (unrolled):
            segment r: the row's input pixels, a block message each (masked where padding)
            acc[r][kw] += segment[pixel(p, kw)] * dd[p]   for p < m_tile, kw < KW      (mad)
        bias += dd[p]                                                       (BWD_WB)
    partial sums of the group's tg_k threads through SLM; thread k sums lines k, k + tg_k, ...
    and writes them (converted), or adds them with float atomics when k_split groups share the
    channels (f32 weights: the launcher zeroes the outputs, `kernel.outputs_to_zero`; bf16 and
    f16: into f32 sums in a scratch buffer, the last group to arrive converts them, `scratch.py`)

The mads read f16, and bf16 where the platform has the type (XeHPG, XeHPC), as they are loaded:
mixed-mode mads into f32 sums, no widening moves; XeLP's bf16 is widened to f32 first.
A block along w never overlaps the one before (m_tile divides OW: an overlap would be summed
twice), nor do channel blocks when groups add with atomics (n_tile divides the channels).

Keys: fma=mad, simd, n_tile (channels per thread), m_tile (outputs along w per item), tg_k
(threads of a group sharing its channels' reduction), k_split (groups sharing them), gmem_bufs,
grf; tg_m = tg_n = 1, k_block = 1, slm = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeVar

from ..conv.problem import Problem
from ..emit.tables import has_bfloat16
from ..errors import ConfigError
from ..hw import Platform
from ..ir import Var
from ..ir.types import BF16, F16, F32, PTR, Type
from .config import Config, Given, check_config
from .gemm import Gemm, check_index_range
from .rows import RegisterBudget, RowPlan, Rows, budget_variants, contiguous_channels
from .scratch import TICKET, Scratch, needs_scratch, partial_sums_scratch
from .tiles import TileLayout, dense_layout, line_layout

DIRECTIONS = ("BWD_W", "BWD_WB")
MAX_TAPS = 49  # accumulator lines (KD*KH*KW) a thread keeps in registers
LARGEST_M_TILE = 16


def unsuited(problem: Problem, hw: Platform) -> str | None:
    """Why the backward-weights row plan cannot compute `problem` (None: it can)."""
    desc = problem.desc
    if problem.direction not in DIRECTIONS:
        return f"it computes {', '.join(DIRECTIONS)}, not {problem.direction}"
    if desc.g == 1 or desc.icg != 1 or desc.ocg != 1:
        return "its backward weights are for depthwise convolutions (one channel per group)"
    if desc.oc < min(hw.simd_widths):
        return f"oc={desc.oc} channels fill fewer than {min(hw.simd_widths)} lanes"
    if taps(problem) > MAX_TAPS:
        return f"its {taps(problem)} kernel taps' sums do not fit in registers (at most {MAX_TAPS})"
    return None


def taps(problem: Problem) -> int:
    desc = problem.desc
    return desc.kd * desc.kh * desc.kw


def operand_type(problem: Problem, hw: Platform) -> Type:
    """The type the mads read: f16, and bf16 where the platform has it, as they are (mixed-mode
    mads into f32 sums); f32 otherwise (XeLP's bf16 widened)."""
    t = problem.type_of("src")
    return t if t == F16 or (t == BF16 and has_bfloat16(hw)) else F32


@dataclass
class DepthwiseWeightsPlan(RowPlan):
    gemm: Gemm
    config: Config
    hw: Platform
    rows: Rows  # the forward walk of an item: its outputs along w and the segment pixels they read
    grid: tuple[int, int, int]  # channel blocks, k_split, 1
    items: int  # work items of the problem: mb x od x oh x blocks per row
    per_thread: int  # items each thread reduces (the last threads' past `items` are masked)
    operand: Type
    segment: TileLayout  # KD*KH rows x pixels lines of n_tile input channels
    dd: TileLayout  # m_tile lines of n_tile diff_dst channels
    wide_dd: TileLayout | None  # dd widened to f32
    work: TileLayout | None  # `copies` lines: widened segment pixels the mads read
    copies: int
    acc: TileLayout  # taps lines of n_tile f32 sums
    bias_acc: TileLayout | None  # n_tile f32 sums of diff_dst (BWD_WB)
    line_sum: TileLayout  # one line's sum over the group's threads
    partial: TileLayout  # `chunk` partial sums read back from SLM at once
    chunk: int
    store: TileLayout  # one line converted to the weights' type
    grf_buffers: list[tuple[Var, int]]
    holders: int  # threads whose partial sums SLM holds at once: tg_k, or half of them (`reduction_plan`)

    prefetch = False

    @property
    def lines(self) -> int:
        """Sums a thread keeps: one per tap, then the bias's."""
        return self.acc.rows + (self.bias_acc is not None)

    @property
    def slm_bytes(self) -> int:
        if self.config.tg_k == 1:
            return 0
        return self.lines * self.holders * self.config.n_tile * 4

    @property
    def iterations(self) -> int:
        return self.per_thread

    @property
    def thread_group(self) -> tuple[int, int, int]:
        return (self.config.tg_n, self.config.tg_k, 1)

    @property
    def tiling(self) -> tuple[int, int, int, int]:
        """(m_groups, n_groups, k_groups, batches): each column of groups reads its own channels."""
        return (1, 1, self.grid[1], self.grid[0])

    @property
    def reducers(self) -> int:
        """Threads sharing a block of channels: tg_k per group times k_split groups."""
        return self.config.tg_k * self.config.k_split

    @property
    def scratch(self) -> Scratch | None:
        """Where k_split groups meet when the weights are 16-bit (`scratch.py`): a counter per
        thread slot of a block of channels (and kernel row), tg_k of them."""
        if not needs_scratch(self.problem, self.config):
            return None
        return partial_sums_scratch(self.problem, self.grid[0] * self.grid[2] * self.config.tg_k)


def plan_depthwise_weights(gemm: Gemm, config: Config, hw: Platform) -> DepthwiseWeightsPlan:
    """The registers and grid of the backward-weights row plan for `config`; ConfigError if it
    does not apply."""
    problem = gemm.problem
    reason = unsuited(problem, hw)
    if reason:
        raise ConfigError(f"plan=depthwise: {reason}")
    check_index_range(problem)
    desc = problem.desc
    check_reduction_keys(config, problem, hw)
    check_config(config, gemm, hw)
    n, m = config.n_tile, config.m_tile
    rows = Rows(desc, m)
    grf = hw.grf_bytes
    starts = math.gcd(n, desc.oc)
    for tensor in ("src", "dst"):
        if not contiguous_channels(problem.layout_of(tensor), n, starts, problem.type_of(tensor).size, hw):
            raise ConfigError(
                f"plan=depthwise: {tensor} ({problem.layout_of(tensor).tag}) does not hold the {n} channels "
                "of a pixel in one dword-aligned block; use a channels-last layout or plan=gemm"
            )
    row_count = desc.kd * desc.kh
    pixels = len(rows.pixels)
    segment = line_layout(Var("segment", PTR), problem.type_of("src"), row_count * pixels, n, 1, n, grf)[0]
    return reduction_plan(DepthwiseWeightsPlan, gemm, config, hw, rows, segment, taps(problem), (n, (pixels, 4, 2)))


PlanT = TypeVar("PlanT", bound=DepthwiseWeightsPlan)


def reduction_plan(
    plan_class: type[PlanT],
    gemm: Gemm,
    config: Config,
    hw: Platform,
    rows: Rows,
    segment: TileLayout,
    sums: int,
    work_shape: tuple[int, tuple[int, ...]],
    kernel_rows: int = 1,
    **extra,
) -> PlanT:
    """What the backward-weights row plans (`config.plan`: depthwise, or first) share around
    their `segment`: diff_dst's lines, `sums` lines of f32 sums and the bias's, the SLM
    reduction's lines, a work buffer of (values, copies to try) `work_shape` for the segment
    widened where the mads read another type, the register budget, the grid (channel blocks,
    k_split, `kernel_rows`); ConfigError if the registers or SLM do not fit."""
    problem = gemm.problem
    n, m, grf = config.n_tile, config.m_tile, hw.grf_bytes
    dst_type, wei_type = problem.type_of("dst"), problem.type_of("wei")
    operand = operand_type(problem, hw)
    dd = line_layout(Var("dd", PTR), dst_type, m, n, 1, n, grf)[0]
    wide_dd = line_layout(Var("dd_wide", PTR), operand, m, n, 1, n, grf)[0] if dst_type != operand else None
    acc = line_layout(Var("acc", PTR), F32, sums, n, 1, n, grf)[0]
    bias_acc = line_layout(Var("bias_acc", PTR), F32, 1, n, 1, n, grf)[0] if problem.has_bias else None
    line_sum = line_layout(Var("line_sum", PTR), F32, 1, n, 1, n, grf)[0]
    holders = slm_holders(config, sums + problem.has_bias, hw)
    chunk = max(1, min(holders, hw.max_block_message_bytes // (n * 4)))
    partial = dense_layout(Var("partial", PTR), F32, chunk, n)
    store = line_layout(Var("w_store", PTR), wei_type, 1, n, 1, n, grf)[0]
    fixed = [(acc.buffer, acc.bytes), (segment.buffer, segment.bytes), (dd.buffer, dd.bytes)]
    for layout in (wide_dd, bias_acc):
        if layout is not None:
            fixed.append((layout.buffer, layout.bytes))
    fixed += [(line_sum.buffer, line_sum.bytes), (store.buffer, store.bytes)]
    if needs_scratch(problem, config):
        fixed.append((TICKET, 4))
    if config.tg_k > 1:
        fixed.append((partial.buffer, partial.bytes))
    budget = RegisterBudget(config, hw, fixed, [segment.bytes, dd.bytes])
    work, copies = None, 0
    if segment.type != operand:
        work, copies = budget.rotating(Var("a_work", PTR), operand, 1, *work_shape)
    buffers = budget.check("use a smaller m_tile")
    items = rows.spatial_blocks
    per_thread = -(-items // (config.tg_k * config.k_split))
    if config.gmem_bufs > 1 and per_thread > 1 and per_thread * config.tg_k * config.k_split > items:
        raise ConfigError(
            f"plan={config.plan}: gmem_bufs={config.gmem_bufs}: the last threads' shares end past the {items} "
            "items, so their loop's trip count varies and cannot be pipelined; use gmem_bufs=1, or tg_k x k_split "
            "dividing the items"
        )
    grid = (-(-problem.desc.oc // n), config.k_split, kernel_rows)
    plan = plan_class(
        gemm,
        config,
        hw,
        rows,
        grid,
        items,
        per_thread,
        operand,
        segment,
        dd,
        wide_dd,
        work,
        copies,
        acc,
        bias_acc,
        line_sum,
        partial,
        chunk,
        store,
        buffers,
        holders,
        **extra,
    )
    if plan.slm_bytes > hw.max_slm_bytes:
        raise ConfigError(
            f"plan={config.plan}: tg_k={config.tg_k} threads' partial sums need {plan.slm_bytes} bytes of SLM "
            f"(half of them, folded, where tg_k is even), more than {hw}'s {hw.max_slm_bytes}"
        )
    return plan


def slm_holders(config: Config, lines: int, hw: Platform) -> int:
    """Threads whose `lines` partial sums SLM holds at once: all tg_k where they fit in a
    group's SLM, else half of them (the upper half's sums folded into the lower half's first:
    XeHPG's 64 KB hold 32 threads' 22 lines of 16 channels, not 64 threads')."""
    tg_k = config.tg_k
    if lines * tg_k * config.n_tile * 4 <= hw.max_slm_bytes or tg_k % 2:
        return tg_k
    return tg_k // 2


def check_reduction_keys(config: Config, problem: Problem, hw: Platform) -> None:
    """The keys of a backward-weights row plan (`config.plan`: depthwise, or first) that do not apply."""
    desc, plan = problem.desc, config.plan
    if config.fma != "mad":
        raise ConfigError(f"plan={plan}: fma={config.fma}: its backward weights multiply with mad, a channel per lane")
    for key, default in (("k_block", 1), ("slm", 0), ("slm_bufs", 1), ("tg_m", 1), ("tg_n", 1)):
        if getattr(config, key) != default:
            raise ConfigError(
                f"plan={plan}: {key}={getattr(config, key)} does not apply to backward weights (it must "
                f"stay {default}): threads share a block of channels along tg_k and k_split"
            )
    if config.n_tile > desc.oc:
        raise ConfigError(f"plan={plan}: n_tile={config.n_tile} exceeds oc={desc.oc}")
    if config.n_tile > hw.max_message_simd:
        raise ConfigError(
            f"plan={plan}: n_tile={config.n_tile}: the sums go out one channel per lane of a scatter, at most "
            f"{hw.max_message_simd} on {hw}"
        )
    if config.k_split > 1 and desc.oc % config.n_tile:
        raise ConfigError(
            f"plan={plan}: with k_split={config.k_split} the channel blocks add with atomics and must not "
            f"overlap: n_tile={config.n_tile} must divide oc={desc.oc}"
        )
    if desc.ow % config.m_tile:
        raise ConfigError(
            f"plan={plan}: m_tile={config.m_tile} must divide ow={desc.ow} (overlapping blocks would be summed twice)"
        )


def depthwise_weights_configs(gemm: Gemm, hw: Platform, given: Given) -> list[Config]:
    """The backward-weights row plan's configurations, best first (`reduction_configs`)."""
    problem = gemm.problem
    if unsuited(problem, hw) or given.get("plan", "depthwise") != "depthwise":
        return []
    return reduction_configs(problem, hw, given, "depthwise")


def reduction_configs(problem: Problem, hw: Platform, given: Given, plan: str, kernel_rows: int = 1) -> list[Config]:
    """Configurations of a backward-weights row plan (`plan`: depthwise, or first, whose groups
    also split the `kernel_rows`), best first: n_tile = simd (2*simd where a pixel of simd
    channels would not fill a GRF, and then also the largest of the two that divides OC);
    m_tile the largest divisors of OW; the threads sharing a
    block of channels, tg_k in a group times k_split groups adding with float atomics (into a
    scratch buffer for bf16 and f16 weights, `scratch.py`), for four, two and eight threads per
    EU over the device, at most one per item; for bf16 and f16 also one group of 32, 16 or the
    most threads a group takes (plan=first the most first).  The estimate ranks them
    (`row_estimate.py`).  plan=first also offers n_tile = simd after a block that fills GRFs:
    twice the groups where the sums stay in one group (resnet_50's conv1 in bf16 on XeHPC: 56503
    modeled cycles with 16 channels, 28 groups of 64 threads, against 91838 with 32, 14 groups of 32)."""
    desc = problem.desc
    simd = given.get("simd") or max(w for w in hw.simd_widths if w * 4 <= 64 and w <= desc.oc)
    size = problem.type_of("src" if plan == "depthwise" else "dst").size
    fills = [t for t in (simd, 2 * simd) if t <= desc.oc and (t * size) % hw.grf_bytes == 0]
    offered = fills[:1] + [simd] if plan == "first" else fills[:1]
    if plan == "depthwise" and fills and desc.oc % fills[0]:
        # a block that fills GRFs but does not divide the channels keeps them in one group:
        # also the largest that divides them, whose groups can split the reduction (mobilenet_v2's
        # 144 channels in bf16 on XeHPC: 32 per block, or 16 in 28 groups, 14527 -> 1362 cycles)
        offered += [t for t in (2 * simd, simd) if t <= desc.oc and desc.oc % t == 0][:1]
    n_tiles = [given["n_tile"]] if "n_tile" in given else list(dict.fromkeys(offered)) or [simd]
    m_tiles = [given["m_tile"]] if "m_tile" in given else _m_tiles(desc.ow)
    most_in_group = hw.max_work_group_size // simd
    configs = []
    for n_tile in n_tiles:
        blocks = -(-desc.oc // n_tile) * kernel_rows
        split = desc.oc % n_tile == 0  # groups may share a block of channels
        f32_weights = problem.type_of("wei") == F32
        for m_tile in m_tiles:
            items = Rows(desc, m_tile).spatial_blocks
            shapes = []
            if split:
                target = -(-2 * hw.eu_count // blocks)
                for threads in (2 * target, target, 4 * target):
                    for tg_k in (8, 4, 16):
                        tg_k = max(1, min(tg_k, most_in_group, items))
                        shapes.append((tg_k, max(1, min(threads, items) // tg_k)))
            if not (split and f32_weights):
                # plan=first: a group is all the threads a block of channels and kernel row has, and
                # the estimate misses how few per EU leave its loads' latency exposed (resnet_50's
                # conv1 in bf16 on XeHPG: 55,556 modeled cycles with tg_k=32, 38,850 with 64)
                counts = (most_in_group, 32, 16) if plan == "first" else (32, 16, most_in_group)
                shapes += [(min(tg_k, most_in_group, items), 1) for tg_k in counts]
            shapes = [(given.get("tg_k", t), given.get("k_split", k)) for t, k in shapes]
            for tg_k, k_split in dict.fromkeys(shapes):
                base = Config("mad", simd, 1, 1, m_tile, n_tile, 1, tg_k=tg_k, k_split=k_split, plan=plan)
                configs += budget_variants(base, hw, given, [1, 2], ("tg_k", "k_split"))
    return list(dict.fromkeys(configs))


def _m_tiles(ow: int) -> list[int]:
    """Outputs along w per item, best first: the three largest divisors of OW up to
    LARGEST_M_TILE (a block must not overlap another)."""
    divisors = [m for m in range(min(ow, LARGEST_M_TILE), 0, -1) if ow % m == 0]
    return divisors[:3]
