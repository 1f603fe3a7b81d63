"""plan=first for backward weights (BWD_W, BWD_WB) of first layers: the output channels across
the SIMD lanes, each thread reducing a share of the output pixels into one kernel row's
KW x IC sums, the input values broadcast as forward's plan=first broadcasts them.

    diff_wei[oc][ic][kd][kh][kw] = sum over mb, od, oh, ow of src[mb][id][ih][iw][ic] * diff_dst[mb][od][oh][ow][oc]
    diff_bias[oc]                = sum over mb, od, oh, ow of diff_dst[mb][od][oh][ow][oc]

The GEMM plan's M for backward weights is (kd, kh, kw, ic): 147 for a 7x7 RGB layer, a K loop
over pixels whose A (the im2col of src) is gathered value by value.  Here the walk is the
backward-weights row plan's (`depthwise_weights.py`): a work item is `m_tile` consecutive outputs
along w of one output row, its diff_dst pixels loaded once (n_tile channels each, a block
message); what changes is the input side, which is forward plan=first's: the item's *segment*
of the thread's kernel row, every input value its outputs read in that row, is one contiguous
run of span x IC values (channels innermost): where it is inside the row, a few dword block
messages from its first dword (at the same byte of a dword for every item, `phase`) to the end
of a GRF; at the row's ends, gathered a message of values at a time, each lane masked by
whether its pixel is inside the input.  Then

    acc[kw*IC + ic] += segment[(p*SW + kw*(DW+1))*IC + ic] * dd[p]      (the segment value broadcast)

for every output p, tap kw and channel ic: the multiply-adds are exactly the problem's.  A
thread keeps one kernel row's KW x IC sums (21 lines for 7x7x3: the 147 of all rows would not
fit the registers); the kernel rows are grid dimension 2, so each row's threads reload the
items' diff_dst pixels.  The threads of a block of channels and a kernel row combine their sums
as the depthwise plan's do (SLM within the group, float atomics across k_split groups for f32
weights); every kernel row sums the bias gradient, the first writes it.

The mads read f16, and bf16 where the platform has the type, as diff_dst is loaded (mixed-mode
mads into f32 sums); f32 otherwise, the segment widened once per item where its type differs.

Keys: fma=mad, simd, n_tile, m_tile, tg_k, k_split, gmem_bufs, grf; tg_m = tg_n = 1,
k_block = 1, slm = 0 (as plan=depthwise's backward weights).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..conv.problem import Problem
from ..errors import ConfigError
from ..hw import Platform
from ..ir import Var
from ..ir.types import PTR
from . import depthwise_weights
from .config import Config, Given, check_config
from .depthwise_weights import DepthwiseWeightsPlan, check_reduction_keys, reduction_configs, reduction_plan
from .first_layer import MAX_INPUT_CHANNELS, inside_bounds, segment_blocks, segment_order, segment_phase
from .gemm import Gemm, check_index_range
from .rows import Rows, contiguous_channels
from .tiles import TileLayout, dense_layout, round_up


def unsuited(problem: Problem, hw: Platform) -> str | None:
    """Why plan=first cannot compute `problem`'s backward weights (None: it can)."""
    desc = problem.desc
    if problem.direction not in depthwise_weights.DIRECTIONS:
        return f"this planner computes {', '.join(depthwise_weights.DIRECTIONS)}, not {problem.direction}"
    if desc.g > 1:
        return "it is for ungrouped convolutions (g = 1)"
    if desc.ic > MAX_INPUT_CHANNELS:
        return f"it is for at most {MAX_INPUT_CHANNELS} input channels, not ic={desc.ic}"
    if desc.oc < min(hw.simd_widths):
        return f"oc={desc.oc} channels fill fewer than {min(hw.simd_widths)} lanes"
    if segment_order(problem.layout_of("src"), desc.ic) != "channels":
        return f"its backward weights read src with the channels innermost, not {problem.layout_of('src').tag}"
    return None


@dataclass
class FirstLayerWeightsPlan(DepthwiseWeightsPlan):
    """The depthwise backward-weights plan's walk and reduction with a first layer's segment:
    `segment` is one line of span x IC values, `work` (copies = 1) that line widened to f32,
    `acc` the KW x IC lines of the thread's kernel row; grid = (channel blocks, k_split, KD*KH)."""

    lanes: int  # values per gather of the segment
    phase: int | None  # bytes between the dword the segment's first value is in and that value (None: varies)
    blocks: tuple[tuple[int, int], ...]  # (byte, dwords) of the block messages of an inside segment

    @property
    def row_values(self) -> int:
        return self.rows.span * self.problem.desc.ic

    def inside(self) -> tuple[int, int] | None:
        """(lo, hi): an item's segment moves in blocks when lo <= iw0 and iw0 + span <= hi;
        None: it always gathers (`first_layer.inside_bounds`)."""
        size = self.segment.type.size
        return inside_bounds(self.phase, self.blocks, self.row_values * size, self.problem.desc.ic, self)

    @property
    def segment_values(self) -> TileLayout:
        """The segment's span x IC values as one line (after the phase's bytes)."""
        t = self.segment.type
        return dense_layout(self.segment.buffer, t, 1, self.row_values, base=(self.phase or 0) // t.size)

    def value(self, p: int, kw: int, ic: int) -> int:
        """The segment value output p reads through tap kw and channel ic."""
        return self.rows.pixel(p, kw) * self.problem.desc.ic + ic

    @property
    def tiling(self) -> tuple[int, int, int, int]:
        """(m_groups, n_groups, k_groups, batches): each channel block and kernel row reads its
        own share of the inputs."""
        return (self.grid[2], 1, self.grid[1], self.grid[0])


def plan_first_layer_weights(gemm: Gemm, config: Config, hw: Platform) -> FirstLayerWeightsPlan:
    """The registers and grid of plan=first for backward weights; ConfigError if it does not apply."""
    problem = gemm.problem
    reason = unsuited(problem, hw)
    if reason:
        raise ConfigError(f"plan=first: {reason}")
    check_index_range(problem)
    desc = problem.desc
    check_reduction_keys(config, problem, hw)
    check_config(config, gemm, hw)
    n, m = config.n_tile, config.m_tile
    rows = Rows(desc, m)
    grf = hw.grf_bytes
    if not contiguous_channels(problem.layout_of("dst"), n, math.gcd(n, desc.oc), problem.type_of("dst").size, hw):
        raise ConfigError(
            f"plan=first: diff_dst ({problem.layout_of('dst').tag}) does not hold the {n} channels of a pixel in "
            "one dword-aligned block; use a channels-last layout or plan=gemm"
        )
    src_type = problem.type_of("src")
    values = rows.span * desc.ic
    # as forward plan=first's: dword blocks from the segment's first dword where it is inside the
    # row, here up to the end of its last GRF: a message ending inside a GRF would load into a
    # temporary and wait for it right away (XeHPC f32: 47 dwords after the first 64 are four
    # messages, three of them waited for in turn)
    phase = segment_phase(problem, rows, desc.ic, "channels")
    blocks = segment_blocks(round_up((phase or 0) + values * src_type.size, grf), hw)
    covered = sum(4 * dwords for _, dwords in blocks)
    base = (phase or 0) // src_type.size
    segment = dense_layout(Var("segment", PTR), src_type, 1, values, base=base)
    segment = replace(segment, elements=round_up(covered, grf) // src_type.size)
    kernel_rows = desc.kd * desc.kh
    sums = desc.kw * desc.ic
    return reduction_plan(
        FirstLayerWeightsPlan,
        gemm,
        config,
        hw,
        rows,
        segment,
        sums,
        (values, (1,)),
        kernel_rows,
        lanes=hw.max_message_simd,
        phase=phase,
        blocks=blocks,
    )


def first_layer_weights_configs(gemm: Gemm, hw: Platform, given: Given) -> list[Config]:
    """plan=first's backward-weights configurations, best first (`reduction_configs`, each
    kernel row a column of groups of its own)."""
    problem = gemm.problem
    if unsuited(problem, hw) or given.get("plan", "first") != "first":
        return []
    desc = problem.desc
    return reduction_configs(problem, hw, given, "first", desc.kd * desc.kh)
