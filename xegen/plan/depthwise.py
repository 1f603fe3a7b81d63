"""plan=depthwise: depthwise convolutions, and grouped ones with few channels per group, with the
output channels across the SIMD lanes.

The GEMM plan puts a group's output channels across the lanes: with one channel per group (a
depthwise convolution) fifteen of sixteen lanes idle, and a dpas multiplies zeros.  Here a lane
is an output channel of any group: a block of `n_tile` consecutive output channels covers
G = n_tile / OCg whole groups, whose G*ICg input channels are consecutive in memory too.  A
thread computes `m_tile` consecutive outputs of one row (`rows.py`) for its block:

    for each kernel row (kd, kh):                                    the K loop
        segment: for each input pixel the outputs read, its G*ICg channels, one block message
                 (masked where the pixel is padding; the registers are zeroed first)
        weights: for each kw tap and input channel i < ICg, one value per lane (a gather)
        [widen to f32 (bf16, int8); replicate per lane: lane l of
         A_i is channel (l / OCg)*ICg + i of the pixel, when ICg or OCg > 1]
        mad: acc[p] += A_i[pixel(p, kw)] * W[kw][i]   for p < m_tile, kw < KW, i < ICg

so each loaded pixel serves every kw tap and every output reading it, and the multiply-adds are
exactly the problem's (no zeros).  Depthwise convolutions (ICg = OCg = 1) need no register moves
at all: the mad reads the loaded pixels and weights as they are.  int8 accumulates in f32, which
is exact while every partial sum stays below 2^24 (the plan refuses problems where it may not).
The epilogue is the GEMM's (`xegen.build.epilogue`): bias, ReLU, conversion, a block store per
output pixel.

Backward data is the same kernel over diff_dst (`rows.backward_data_walks`): the convolution of
diff_dst with the kernel flipped, one walk per phase of the strides (group_id2), so that no
multiply-add falls on a tap between outputs.  Backward weights is `depthwise_weights.py`.

Keys: fma=mad, simd (lanes per mad), n_tile (output channels per thread, a multiple of simd and
of OCg), m_tile (outputs along w per thread), tg_m/tg_n (threads per group along the pixels and
the channels), gmem_bufs, grf.  The other keys keep their defaults (k_block=1: the reduction runs
over kernel rows, not K blocks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..conv.layout import Block, Layout
from ..conv.problem import Problem
from ..emit.tables import has_bfloat16
from ..errors import ConfigError
from ..hw import Platform
from ..ir import Var
from ..ir.types import BF16, F16, F32, PTR, Type
from .config import Config, Given, check_config
from .gemm import Gemm, check_index_range
from .rows import (
    RegisterBudget,
    RowPlan,
    Rows,
    RowWalk,
    backward_data_walks,
    budget_variants,
    contiguous_channels,
    m_tile_options,
    row_divisors,
)
from .tiles import TileLayout, dense_layout, line_layout

DIRECTIONS = ("FWD_I", "FWD_D", "FWD_B", "BWD_D")
MAX_CHANNELS_PER_GROUP = 8  # beyond that, a group's channels fill the GEMM plan's lanes
F32_EXACT = 2**24  # integers up to this are exact in f32
DENSE_GROUP = 8  # input channels per group from which a dpas's K is full enough (`gemm_multiplies_faster`)


def unsuited(problem: Problem, hw: Platform) -> str | None:
    """Why plan=depthwise cannot compute `problem` on `hw` (None: it can)."""
    desc = problem.desc
    if problem.direction not in DIRECTIONS:
        return f"it computes {', '.join(DIRECTIONS)}, not {problem.direction}"
    if problem.quantization or any(problem.post_op_tensor(i) for i in range(len(problem.post_ops))):
        return "its epilogue applies eltwise post-ops only (no sum, binary, prelu, scales or zero points)"
    if desc.g == 1:
        return "it is for grouped convolutions (g > 1)"
    if max(desc.icg, desc.ocg) > MAX_CHANNELS_PER_GROUP:
        return (
            f"it is for groups of at most {MAX_CHANNELS_PER_GROUP} channels; ICg={desc.icg}, OCg={desc.ocg} "
            "fill the GEMM plan's lanes"
        )
    channels = walks(problem)[0].out_channels
    if channels < min(hw.simd_widths):
        return f"{channels} output channels fill fewer than {min(hw.simd_widths)} lanes"
    if problem.types.is_int8 and not int8_sums_are_exact(problem):
        return "its f32 accumulation of int8 products could round (a sum may reach 2^24)"
    return None


def gemm_multiplies_faster(problem: Problem, hw: Platform) -> bool:
    """Whether the GEMM plan is the better default: with DENSE_GROUP input channels per group or
    more its K (KD*KH*KW*ICg) fills a dpas (or dp4a), which multiplies f16, bf16 and int8 several
    times faster than this plan's f32 mads (resnext50's 32 groups of 8 channels in bf16 model 2.7x
    (XeHPG) and 4x (XeHPC) faster with it: bench/e2e/classes.py)."""
    multiplier = hw.has_dpas or problem.types.is_int8  # dp4a on XeLP
    return walks(problem)[0].in_per_group >= DENSE_GROUP and problem.type_of("src") != F32 and multiplier


def int8_sums_are_exact(problem: Problem) -> bool:
    """Whether every partial sum of an int8 problem stays below 2^24 in magnitude (f32 exact)."""
    largest = max(abs(v) for t in (problem.types.src, problem.types.wei) for v in _int8_range(t))
    products = problem.reduction_size
    return products * largest * largest < F32_EXACT


def _int8_range(kind: str) -> tuple[int, int]:
    return (0, 255) if kind == "u8" else (-128, 127)


def operand_type(problem: Problem, hw: Platform) -> Type:
    """The type the mads read: f16 as it is (mixed-mode mads into f32), bf16 as it is where the
    platform has the type (XeHPG, XeHPC: no widening moves; resnext50's g32x4 in bf16 on XeHPG,
    11,576 -> 9,032 modeled cycles), everything else as f32 (as the GEMM plan's mads:
    `multiply.operand_type`)."""
    t = problem.type_of(walks(problem)[0].reads)
    if t == F16 or (t == BF16 and has_bfloat16(hw)):
        return t
    return F32


def walks(problem: Problem) -> list[RowWalk]:
    """The forward row walks the kernel computes: the convolution itself going forward, one per
    phase of the strides for backward data (`rows.backward_data_walks`)."""
    if problem.is_forward:
        return [RowWalk.forward(problem.desc)]
    return backward_data_walks(problem)


@dataclass
class DepthwisePlan(RowPlan):
    gemm: Gemm
    config: Config
    hw: Platform
    rows: Rows  # the first phase's (the forward convolution's)
    phases: tuple[Rows, ...]  # one per stride phase of backward data (group_id2), else (rows,)
    grid: tuple[int, int, int]
    in_channels: int  # input channels a segment pixel holds: the block's groups x ICg
    operand: Type  # the type the mads read
    copies: int  # work buffers replicated or widened pixels rotate through (0: the mads read the segment)
    segment: TileLayout  # pixels x in_channels, a GRF-aligned line per pixel
    weights: TileLayout  # (KW*ICg) x n_tile as gathered: vector kw*ICg + i per line
    weights_block: bool  # a vector's lanes are adjacent in memory: one block load, not a gather
    work: TileLayout | None  # copies*ICg lines of n_tile operand values
    wide_weights: TileLayout | None  # the weights in the operand type, when they are widened
    acc: TileLayout  # m_tile x n_tile f32
    store: TileLayout  # m_tile x n_tile of the output type (acc itself for f32 outputs)
    store_block: bool  # each output pixel's channels are one block message (else a scatter)
    bias: TileLayout | None
    grf_buffers: list[tuple[Var, int]]

    @property
    def slm_bytes(self) -> int:
        return 0

    #: no prefetch one iteration ahead: with gmem_bufs=2 the loads themselves run an iteration ahead
    prefetch = False

    @property
    def tiling(self) -> tuple[int, int, int, int]:
        """(m_groups, n_groups, k_groups, batches) for the cost model: each column of groups
        reads only its own channels of the input, like an independent GEMM."""
        return (self.grid[1] * self.grid[2], 1, 1, self.grid[0])

    @property
    def walk(self) -> RowWalk:
        return self.rows.path

    @property
    def widens(self) -> bool:
        return self.operand != self.problem.type_of("src")

    @property
    def replicates(self) -> bool:
        return self.walk.in_per_group > 1 or self.walk.out_per_group > 1


def plan_depthwise(gemm: Gemm, config: Config, hw: Platform) -> DepthwisePlan:
    """The registers and grid of plan=depthwise for `config`; ConfigError if it does not apply."""
    problem = gemm.problem
    reason = unsuited(problem, hw)
    if reason:
        raise ConfigError(f"plan=depthwise: {reason}")
    check_index_range(problem)
    phase_walks = walks(problem)
    walk = phase_walks[0]
    _check_keys(config, phase_walks)  # first: a key this plan does not take is the clearer error
    check_config(config, gemm, hw)
    desc = problem.desc
    phases = tuple(Rows(desc, config.m_tile, walk=w) for w in phase_walks)
    rows = phases[0]
    in_pg, out_pg = walk.in_per_group, walk.out_per_group
    in_channels = config.n_tile // out_pg * in_pg
    # channel blocks start at multiples of n_tile, the last one moved back to end at the channels' end
    starts = math.gcd(config.n_tile, walk.out_channels)
    read = problem.layout_of(walk.reads)
    src_type = problem.type_of(walk.reads)
    if not contiguous_channels(read, in_channels, starts // out_pg * in_pg, src_type.size, hw):
        raise ConfigError(
            f"plan=depthwise: {walk.reads} ({read.tag}) does not hold the {in_channels} channels of a "
            "pixel the block reads in one dword-aligned block; use a channels-last layout or plan=gemm"
        )
    out_type = problem.type_of(walk.writes)
    store_block = contiguous_channels(problem.layout_of(walk.writes), config.n_tile, starts, out_type.size, hw)
    grf = hw.grf_bytes
    wei_type = problem.type_of("wei")
    operand = operand_type(problem, hw)
    n = config.n_tile
    vectors = max(len(r.taps()) for r in phases) * in_pg
    pixels = max(len(r.pixels) for r in phases)
    segment = line_layout(Var("segment", PTR), src_type, pixels, in_channels, 1, in_channels, grf)[0]
    weights = line_layout(Var("w_load", PTR), wei_type, vectors, n, 1, n, grf)[0]
    weights_block = _adjacent_lanes(problem.layout_of("wei"), walk, n, starts, wei_type.size, hw)
    wide_weights = None
    if operand != wei_type:
        wide_weights = line_layout(Var("w_wide", PTR), operand, vectors, n, 1, n, grf)[0]
    lines = max(r.lines for r in phases)  # m_tile outputs of each walk along w
    acc = dense_layout(Var("acc", PTR), F32, lines, n)
    store = (
        acc
        if out_type == F32 and (n * 4) % grf == 0
        else line_layout(Var("c_store", PTR), out_type, lines, n, 1, n, grf)[0]
    )
    bias = line_layout(Var("bias_load", PTR), problem.bias_type, 1, n, 1, n, grf)[0] if problem.has_bias else None
    needs_work = operand != src_type or in_pg > 1 or out_pg > 1
    fixed = [(acc.buffer, acc.bytes), (segment.buffer, segment.bytes), (weights.buffer, weights.bytes)]
    if wide_weights is not None:
        fixed.append((wide_weights.buffer, wide_weights.bytes))
    if store is not acc:
        fixed.append((store.buffer, store.bytes))
    if bias is not None:
        fixed.append((bias.buffer, bias.bytes))
    budget = RegisterBudget(config, hw, fixed, [segment.bytes, weights.bytes])
    work, copies = None, 0
    if needs_work:
        work, copies = budget.rotating(Var("a_work", PTR), operand, in_pg, n, (pixels, 4, 2))
    buffers = budget.check("use a smaller m_tile/n_tile")
    channel_blocks = -(-walk.out_channels // n)
    spatial_blocks = max(r.spatial_blocks for r in phases)
    grid = (-(-channel_blocks // config.tg_n), -(-spatial_blocks // config.tg_m), len(phases))
    return DepthwisePlan(
        gemm,
        config,
        hw,
        rows,
        phases,
        grid,
        in_channels,
        operand,
        copies,
        segment,
        weights,
        weights_block,
        work,
        wide_weights,
        acc,
        store,
        store_block,
        bias,
        buffers,
    )


def _adjacent_lanes(layout: Layout, walk: RowWalk, n: int, starts: int, size: int, hw: Platform) -> bool:
    """Whether a weights vector's `n` lanes (lane l: group g0 + l/OCg, output channel l%OCg, for
    any g0 a multiple of starts/OCg) are adjacent in memory, dword aligned, in one block message:
    the output channels innermost and the groups next (`k… i g o`), or with one channel per
    group, the groups innermost."""
    out_pg = walk.out_per_group
    if out_pg == 1 and contiguous_channels(layout, n, starts, size, hw, dim=0):
        return True  # the groups innermost, or inside one block of them (Goihw16g)
    if walk.transposed and out_pg > 1 or layout.inner_blocks(0) or layout.inner_blocks(1) or len(layout.blocks) < 2:
        return False
    groups, channels = layout.blocks[-2:]
    if channels != Block(1, out_pg, 1) or groups.dim != 0 or groups.stride != out_pg:
        return False
    alignment = math.gcd(starts, *(b.stride for b in layout.blocks[:-2])) * size
    return (n * size) % 4 == 0 and alignment % 4 == 0 and n * size <= hw.max_block_message_bytes


def _check_keys(config: Config, phase_walks: list[RowWalk]) -> None:
    if config.fma != "mad":
        raise ConfigError(
            f"plan=depthwise: fma={config.fma}: one channel per lane multiplies with mad "
            "(a dpas would sum over lanes of other groups)"
        )
    for key, default in (("k_block", 1), ("k_split", 1), ("slm", 0), ("slm_bufs", 1)):
        if getattr(config, key) != default:
            raise ConfigError(
                f"plan=depthwise: {key}={getattr(config, key)} does not apply (it must stay {default}): "
                "the loop runs over kernel rows, each thread loading its own pixels"
            )
    walk = phase_walks[0]
    if config.n_tile % walk.out_per_group:
        raise ConfigError(
            f"plan=depthwise: n_tile={config.n_tile} must hold whole groups of {walk.out_per_group} output channels"
        )
    if config.n_tile > walk.out_channels:
        raise ConfigError(f"plan=depthwise: n_tile={config.n_tile} exceeds the {walk.out_channels} output channels")
    row = _row_length(phase_walks)
    if config.m_tile > row:
        raise ConfigError(f"plan=depthwise: m_tile={config.m_tile} exceeds the {row} outputs of a row")


def _row_length(phase_walks: list[RowWalk]) -> int:
    """Outputs along w of the shortest phase's rows (of the output's rows going forward)."""
    return min(w.axis("w").outputs for w in phase_walks)


def depthwise_configs(gemm: Gemm, hw: Platform, given: Given) -> list[Config]:
    """plan=depthwise's configurations for `gemm`, best first (none where it does not apply):
    16 output channels per thread (or 32, or the exec size of smaller problems) and as many
    outputs along w as keep the device's threads busy (below), with the given keys fixed."""
    return _configs(gemm, hw, given, fallback=False)


def depthwise_fallbacks(gemm: Gemm, hw: Platform, given: Given) -> list[Config]:
    """plan=depthwise's configurations to compile only when every one of `depthwise_configs`
    fails to (its registers run out at allocation), before the heuristic gives up on the plan:
    the smaller blocks a grouped problem is not offered (SMALL_M_TILES, see `_m_tiles`), then every
    block on fewer lanes.  8 groups of 4 bf16 channels (6x6) on XeLP run out of registers with
    m_tile=4 (widened and replicated pixels) and fit with 2, which models 4599 cycles against the
    GEMM plan's 6030."""
    return _configs(gemm, hw, given, fallback=True)


def _configs(gemm: Gemm, hw: Platform, given: Given, fallback: bool) -> list[Config]:
    problem = gemm.problem
    if unsuited(problem, hw) or given.get("plan", "depthwise") != "depthwise":
        return []
    if "plan" not in given and gemm_multiplies_faster(problem, hw):
        return []
    phase_walks = walks(problem)
    channels = phase_walks[0].out_channels
    simd = given.get("simd") or max(w for w in hw.simd_widths if w * 4 <= 64 and w <= channels)
    configs = _configs_of_width(problem, phase_walks, hw, given, simd, offered=not fallback, smaller=fallback)
    if fallback and "simd" not in given:
        # narrower lanes halve the registers a pixel's channels take: a long row of taps (the
        # conformer's 31 on XeLP's 128 GRFs) fits with 8 channels per thread where 16 do not
        for narrower in sorted((w for w in hw.simd_widths if w < simd), reverse=True):
            configs += _configs_of_width(problem, phase_walks, hw, given, narrower, offered=True, smaller=True)
    return list(dict.fromkeys(configs))


def _configs_of_width(
    problem: Problem, phase_walks: list[RowWalk], hw: Platform, given: Given, simd: int, offered: bool, smaller: bool
) -> list[Config]:
    """Configurations of `simd` lanes: their n_tiles, each with the offered and/or the smaller
    m_tiles of `_m_tiles`."""
    walk = phase_walks[0]
    channels, out_pg = walk.out_channels, walk.out_per_group
    n_tiles = [t for t in (simd, 2 * simd, 4 * simd) if t <= channels and t % out_pg == 0]
    # first the blocks whose pixels fill whole GRFs: an LSC load that ends inside a GRF of the
    # segment goes through a temporary and a move (`xegen.lower.messages`), one per pixel
    size = problem.type_of(walk.reads).size
    fills = [t for t in n_tiles if (t // out_pg * walk.in_per_group * size) % hw.grf_bytes == 0]
    n_tiles = fills[:1] + [t for t in n_tiles[:2] if t not in fills[:1]]
    if "n_tile" in given:
        n_tiles = [given["n_tile"]]
    configs = []
    for n_tile in n_tiles:
        offered_m, smaller_m = _m_tiles(problem, phase_walks, hw, n_tile, given)
        for m_tile in (offered_m if offered else []) + (smaller_m if smaller else []):
            spatial_blocks = max(Rows(problem.desc, m_tile, walk=w).spatial_blocks for w in phase_walks)
            tg_m = given.get("tg_m") or max(1, min(4, spatial_blocks))
            base = Config(
                "mad",
                simd,
                tg_m,
                given.get("tg_n", 1),
                m_tile,
                n_tile,
                1,
                plan="depthwise",
                grf=given.get("grf", min(hw.grf_counts)),
            )
            configs += budget_variants(base, hw, given, _buffer_counts(problem, phase_walks, m_tile))
    return configs


def _buffer_counts(problem: Problem, phase_walks: list[RowWalk], m_tile: int) -> list[int]:
    """Copies of the row registers to try, best first.  A loop of three kernel rows (a 3x3 or
    3-tap kernel) gets a copy per row as well: all its loads are in flight at once and the
    thread waits for one load's latency instead of two (with two copies the third row's loads
    wait for the first row's multiply-adds: mobilenet_v2 block16_dw in f32 on XeHPC models 480
    cycles with two, 287 with three)."""
    trips = max(Rows(problem.desc, m_tile, walk=w).iterations for w in phase_walks)
    return [3, 2, 1] if trips == 3 else [2, 1]


SMALL_M_TILES = (2,)  # more threads, for layers whose loads need more threads per EU to hide them


def _m_tiles(
    problem: Problem, phase_walks: list[RowWalk], hw: Platform, n_tile: int, given: Given
) -> tuple[list[int], list[int]]:
    """Outputs along w per thread: those offered, best first, and the smaller ones kept for when
    every offered one runs out of registers.  Offered: the largest that still gives every EU two
    threads (a thread waits for its loads; a second one hides the wait), then the rest by thread
    count; then SMALL_M_TILES, which the estimate takes where waits dominate (mobilenet_v2's
    block1_dw in bf16 on XeHPC models 2161 cycles with m_tile=2 against 2981 with 4: each row's
    weights are 16-bit gathers, waited for one by one).  Not m_tile=1 but in a loop of three
    rows, whose loads are all in flight at once (below): elsewhere each output's mads then
    wait on a sync.allwr for the next row's loads too, which the estimate does not see
    (block16_dw in f32 on XeHPC: estimated 662 cycles, modeled 1167, against 1076 with
    m_tile=4)."""
    if "m_tile" in given:
        return [given["m_tile"]], []
    desc = problem.desc
    options = m_tile_options(_row_length(phase_walks), (16, 8, 4))
    if problem.is_forward:
        # and the other blocks that tile a row (resnext50's conv3_g32x8 in f32 on XeHPC: 1,867
        # modeled cycles with m_tile=8, 1,749 with 7); not for backward data, where they displaced
        # a faster kernel from the model's choices (conv2_g32x4 in bf16 on XeHPG: 7,424 -> 9,910)
        options += [d for d in row_divisors(_row_length(phase_walks), (16, 8, 4)) if d not in options]
    walk = phase_walks[0]
    channel_blocks = -(-walk.out_channels // n_tile)

    def threads(m: int) -> int:
        return sum(Rows(desc, m, walk=w).spatial_blocks for w in phase_walks) * channel_blocks

    busy = [m for m in options if threads(m) >= 2 * hw.eu_count]
    ranked = busy + sorted((m for m in options if m not in busy), key=lambda m: -threads(m))
    smaller = [m for m in SMALL_M_TILES if m < min(ranked)]
    if max(walk.in_per_group, walk.out_per_group) > 1:
        # grouped: every pixel's channels are replicated across the lanes of their group, moves
        # the estimate undercounts (0.6 of the model on resnext50's groups of 4), and a smaller
        # block replicates more pixels per output (conv2_g32x4 in bf16 on XeHPC models 11326
        # cycles with m_tile=2 against 8228 with 4): offered only once the others run out
        return ranked, smaller
    if max(Rows(desc, 1, walk=w).iterations for w in phase_walks) == 3 and min(ranked + smaller) > 1:
        # a loop of three rows keeps all its loads in flight (gmem_bufs=3): one output per thread
        # no longer waits for the next row's loads (block16_dw in bf16 on XeHPC: 251 modeled
        # cycles, against 293 with two), and the model chooses (`row_model_choices`)
        smaller.append(1)
    return ranked + smaller, []
