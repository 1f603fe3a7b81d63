"""plan=first for backward data (BWD_D) of first layers: the output channels (the reduction)
across the SIMD lanes, each lane summing its share of every input gradient, the lanes summed
once at the end.

    diff_src[mb][ic][id][ih][iw] = sum over oc, kd, kh, kw of diff_dst[mb][oc][od][oh][ow] * wei[oc][ic][kd][kh][kw]

The GEMM plan's backward data of a 7x7 RGB layer has the 3 input channels as its N side and the
output channels as K: three lanes' worth of outputs per row of A, long dependent mad chains and
more address arithmetic than multiplies.  Here the walk is backward data's row walk
(`rows.backward_data_walks`: one walk per stride phase, no multiply by a tap between outputs,
the phases along w in one walk), as plan=depthwise's backward data walks it, with the roles of
the lanes turned: a lane is a *read* channel (an output channel of the convolution), and a
thread's `m_tile` outputs of every w phase hold IC lines of partial sums each.  Its loop walks
the blocks of `n_tile` output channels and, for each, the phase's kernel rows:

    segment[q]         = diff_dst[mb][c0 .. c0+n)[od][oh][ow0 + pixel q]        (a block per pixel)
    weights[v*IC + ic] = wei[c0 .. c0+n)[ic][kd][kh][kw of tap v]               (a block or gather per line)
    acc[line*IC + ic] += segment[pixel(p, kw)] * weights[v*IC + ic]             (mad, lane by lane)

so no multiply-add falls on a tap between outputs (those reaching past diff_dst's edges multiply
the zeros of a masked load, as forward's padding does).
After the loop each accumulator line is summed across its lanes (adjacent pairs added, halving
the values each step: about two adds per line), and the sums, IC values per input pixel, go
out in scatters.

The mads read f16 and bf16 as they are where the platform has the type (mixed-mode mads into
f32 sums, as plan=depthwise's backward data), f32 otherwise (both operands widened per row).

Keys: fma=mad, simd, n_tile (output channels per lane block: simd or 2*simd, dividing OC),
m_tile (outputs along w per walk), tg_m, gmem_bufs, grf; tg_n = 1, k_block = 1, k_split = 1,
slm = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..conv.problem import Problem
from ..emit.tables import has_bfloat16
from ..errors import ConfigError
from ..hw import Platform
from ..ir import Var
from ..ir.types import BF16, F16, F32, PTR, Type
from .config import Config, Given, check_config
from .first_layer import MAX_INPUT_CHANNELS, segment_order
from .gemm import Gemm, check_index_range
from .rows import (
    RegisterBudget,
    RowPlan,
    Rows,
    backward_data_walks,
    budget_variants,
    contiguous_channels,
    m_tile_options,
)
from .tiles import TileLayout, dense_layout, line_layout


def unsuited(problem: Problem, hw: Platform) -> str | None:
    """Why plan=first cannot compute `problem`'s backward data (None: it can)."""
    desc = problem.desc
    if problem.direction != "BWD_D":
        return f"this planner computes BWD_D, not {problem.direction}"
    if desc.g > 1:
        return "it is for ungrouped convolutions (g = 1)"
    if desc.ic > MAX_INPUT_CHANNELS:
        return f"it is for at most {MAX_INPUT_CHANNELS} input channels, not ic={desc.ic}"
    if desc.oc % min(hw.simd_widths):
        return f"oc={desc.oc} is not a multiple of {min(hw.simd_widths)} lanes"
    if segment_order(problem.layout_of("src"), desc.ic) is None:
        return f"diff_src ({problem.layout_of('src').tag}) has neither channels nor w innermost"
    return None


def operand_type(problem: Problem, hw: Platform) -> Type:
    """The type the mads read: f16, and bf16 where the platform has the type, as they are; f32 otherwise."""
    t = problem.type_of("dst")
    if t == F16 or (t == BF16 and has_bfloat16(hw)):
        return t
    return F32


@dataclass
class FirstLayerDataPlan(RowPlan):
    gemm: Gemm
    config: Config
    hw: Platform
    rows: Rows  # the first phase's
    phases: tuple[Rows, ...]  # one per stride phase (group_id2); their loops walk the channel blocks too
    grid: tuple[int, int, int]
    operand: Type  # the type the mads read
    segment: TileLayout  # pixels x n_tile diff_dst values, a GRF-aligned line per pixel
    wide_segment: TileLayout | None  # the segment in the operand type, when widened
    weights: TileLayout  # (taps*IC) x n_tile: line v*IC + ic
    wide_weights: TileLayout | None
    weights_block: bool  # each weights line is one block message (else a gather)
    acc: TileLayout  # (lines*IC) x n_tile f32 partial sums, line (f*m_tile + p)*IC + ic
    sums: TileLayout  # half of acc: the lane sums, halved step by step; its first lines*IC values are the results
    store: TileLayout  # lines*IC values of diff_src's type (sums itself for f32)
    grf_buffers: list[tuple[Var, int]]

    slm_bytes = 0
    bias = None
    #: no prefetch one iteration ahead: with gmem_bufs=2 the loads themselves run an iteration ahead
    prefetch = False

    @property
    def tiling(self) -> tuple[int, int, int, int]:
        """(m_groups, n_groups, k_groups, batches) for the cost model: every group reads all of
        the weights and its own pixels of diff_dst, which are the GEMM's M or, where the
        formulation puts the input channels along M (its A the weights), its N."""
        groups = self.grid[1] * self.grid[2]
        return (1, groups, 1, 1) if self.gemm.a.tensor == "wei" else (groups, 1, 1, 1)

    @property
    def channel_blocks(self) -> int:
        return self.problem.desc.oc // self.config.n_tile

    @property
    def results(self) -> int:
        """Values a thread writes: IC per output of every walk along w."""
        return self.rows.lines * self.problem.desc.ic


def plan_first_layer_data(gemm: Gemm, config: Config, hw: Platform) -> FirstLayerDataPlan:
    """The registers and grid of plan=first for backward data; ConfigError if it does not apply."""
    problem = gemm.problem
    reason = unsuited(problem, hw)
    if reason:
        raise ConfigError(f"plan=first: {reason}")
    check_index_range(problem)
    desc = problem.desc
    walks = backward_data_walks(problem)
    _check_keys(config, problem, walks)
    check_config(config, gemm, hw)
    n, grf = config.n_tile, hw.grf_bytes
    blocks = desc.oc // n
    phases = tuple(Rows(desc, config.m_tile, channels=blocks, walk=w) for w in walks)
    dd_type, wei_type, out_type = (problem.type_of(t) for t in ("dst", "wei", "src"))
    if not contiguous_channels(problem.layout_of("dst"), n, n, dd_type.size, hw):
        raise ConfigError(
            f"plan=first: diff_dst ({problem.layout_of('dst').tag}) does not hold the {n} channels of a pixel in "
            "one dword-aligned block; use a channels-last layout or plan=gemm"
        )
    operand = operand_type(problem, hw)
    pixels = max(len(r.pixels) for r in phases)
    vectors = max(len(r.taps()) for r in phases) * desc.ic
    lines = max(r.lines for r in phases) * desc.ic
    segment = line_layout(Var("segment", PTR), dd_type, pixels, n, 1, n, grf)[0]
    weights = line_layout(Var("w_load", PTR), wei_type, vectors, n, 1, n, grf)[0]
    wide_segment = wide_weights = None
    if operand != dd_type:
        wide_segment = line_layout(Var("segment_wide", PTR), operand, pixels, n, 1, n, grf)[0]
    if operand != wei_type:
        wide_weights = line_layout(Var("w_wide", PTR), operand, vectors, n, 1, n, grf)[0]
    acc = dense_layout(Var("acc", PTR), F32, lines, n)
    sums = dense_layout(Var("lane_sums", PTR), F32, 1, lines * n // 2)
    store = sums if out_type == F32 else dense_layout(Var("c_store", PTR), out_type, 1, lines)
    fixed = [(acc.buffer, acc.bytes), (sums.buffer, sums.bytes), (segment.buffer, segment.bytes)]
    fixed += [(weights.buffer, weights.bytes)]
    fixed += [(t.buffer, t.bytes) for t in (wide_segment, wide_weights) if t is not None]
    if store is not sums:
        fixed.append((store.buffer, store.bytes))
    weights_block = contiguous_channels(problem.layout_of("wei"), n, n, wei_type.size, hw, dim=0)
    budget = RegisterBudget(config, hw, fixed, [segment.bytes, weights.bytes])
    buffers = budget.check("use a smaller m_tile/n_tile")
    spatial_blocks = max(r.spatial_blocks for r in phases)
    grid = (1, -(-spatial_blocks // config.tg_m), len(phases))
    return FirstLayerDataPlan(
        gemm,
        config,
        hw,
        phases[0],
        phases,
        grid,
        operand,
        segment,
        wide_segment,
        weights,
        wide_weights,
        weights_block,
        acc,
        sums,
        store,
        buffers,
    )


def _check_keys(config: Config, problem: Problem, walks) -> None:
    if config.fma != "mad":
        raise ConfigError(f"plan=first: fma={config.fma}: backward data sums the output channels with mad")
    for key, default in (("tg_n", 1), ("k_block", 1), ("k_split", 1), ("tg_k", 1), ("slm", 0), ("slm_bufs", 1)):
        if getattr(config, key) != default:
            raise ConfigError(
                f"plan=first: {key}={getattr(config, key)} does not apply to backward data (it must stay "
                f"{default}): a thread sums every output channel of its pixels itself"
            )
    n, oc = config.n_tile, problem.desc.oc
    if n % config.simd or n & (n - 1) or oc % n:
        raise ConfigError(
            f"plan=first: n_tile={n} must be a power of two, a multiple of simd={config.simd} and divide oc={oc}"
        )
    row = min(w.axis("w").outputs for w in walks)
    if config.m_tile > row:
        raise ConfigError(f"plan=first: m_tile={config.m_tile} exceeds the {row} outputs of a phase's row")


def first_layer_data_configs(gemm: Gemm, hw: Platform, given: Given) -> list[Config]:
    """plan=first's backward-data configurations, best first: blocks of simd or 2*simd output
    channels (those whose diff_dst pixels fill whole GRFs first), blocks of outputs along w from 8
    (then 4, 16, 2), each with the GRF counts and load buffers to try; the estimate ranks them.
    Unless plan=first is asked for, none for 1x1 kernels, nor with a SIMD width none of whose
    blocks fill a GRF (below: the GEMM plan is faster there)."""
    problem = gemm.problem
    if unsuited(problem, hw) or given.get("plan", "first") != "first":
        return []
    desc = problem.desc
    if "plan" not in given and desc.kd * desc.kh * desc.kw == 1:
        # one tap: the reduction is OC alone, and the lane sums and the weights every thread
        # reloads cost more than the GEMM plan's transposed multiply (3 to 56x56, 1x1, to 64
        # channels: 3249 modeled cycles against 3155 in f32 on XeHPG, 783 against 483 in bf16 on XeHPC)
        return []
    simds = [given["simd"]] if "simd" in given else [w for w in hw.simd_widths if w * 4 <= 64 and desc.oc % w == 0]
    walks = backward_data_walks(problem)
    row = min(w.axis("w").outputs for w in walks)
    m_tiles = [given["m_tile"]] if "m_tile" in given else m_tile_options(row, (8, 4, 16, 2))
    configs = []
    size = problem.type_of("dst").size
    for simd in sorted(simds, reverse=True):
        n_tiles = [t for t in (simd, 2 * simd) if desc.oc % t == 0]
        # first the blocks whose pixels fill whole GRFs: an LSC load that ends inside a GRF goes
        # through a temporary and a move, waited for at once (16 bf16 channels in XeHPC's 64-byte GRFs)
        n_tiles.sort(key=lambda t: (t * size) % hw.grf_bytes != 0)
        if not n_tiles or ("plan" not in given and (n_tiles[0] * size) % hw.grf_bytes):
            # no block of channels fills a GRF (16 bf16 channels on XeHPC): every pixel's load
            # waits in full, one after the other (3 to 16 channels, 3x3 on 56x56, bf16 on XeHPC:
            # 4868 modeled cycles against the GEMM plan's 776), so this simd is not offered
            continue
        n_tiles = [given["n_tile"]] if "n_tile" in given else n_tiles
        for n_tile in n_tiles:
            for m_tile in m_tiles:
                spatial = max(Rows(desc, m_tile, walk=w).spatial_blocks for w in walks)
                tg_m = given.get("tg_m") or max(1, min(4, spatial))
                base = Config("mad", simd, tg_m, 1, m_tile, n_tile, 1, plan="first")
                configs += budget_variants(base, hw, given, [1, 2])
    return list(dict.fromkeys(configs))
