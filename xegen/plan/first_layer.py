"""plan=first: convolutions with few input channels (a network's first layer: RGB, audio), the
kernel's row folded into the reduction.

The GEMM plan's K is (kd, kh, kw, ic) with ic innermost: with ic = 3 a K block is a handful of
3-element lines, each its own message and mask.  Here a thread computes `m_tile` consecutive
outputs of one row for `n_tile` output channels (one per lane, `rows.py`), and its loop walks the
kernel rows; in each it loads the row's *segment* once: every input value its outputs read in that
row, which in the input's own layout is one contiguous run:

- channels innermost (nhwc, ndhwc, nwc): the span's pixels with all their channels, span x IC
  values; the loop runs over (kd, kh) and a row folds (kw, ic) into the reduction;
- w innermost (nchw, ncdhw, ncw): the span's pixels of one channel; the loop runs over
  (ic, kd, kh) and a row folds kw into the reduction.

Where the whole segment is inside the input (the thread's outputs are not at the row's ends, the
row is not padding) it moves in a few block messages of dwords.  Elsewhere it moves in gather
messages, a value per lane, each lane masked by whether its pixel is inside the input (the left
and right padding: a block message has one mask for all its values), the rows above and below
the input masked as a whole; the kernel holds both versions of the loop and a branch per thread,
before them, picks one.  The dword blocks start where
the segment's first value is, rounded down to a dword, which is at the same byte of a dword for
every thread (`phase`; else the segment always gathers); the registers hold the segment from that
byte on either way.  Then

    acc[p] += segment[(p*SW + kw*(DW+1))*IC + ic] * W[kw][ic]      (the segment value broadcast)

for every output p, tap kw and channel ic of the row: each value is loaded once per row and read
by every output and tap that needs it, and the multiply-adds are exactly the problem's.  The
weights of a row are a block message per (kw, ic) of the thread's output channels.  int8
accumulates in f32, exact while partial sums stay below 2^24 (else the plan does not apply);
bf16 and int8 are widened to f32 in registers, f16 goes into mixed-mode mads.

With fma=dpas (f16, bf16; int8 when asked for) a row's KW*IC values are the K of one dpas block,
padded to the dpas K step: before the loop the threads of a group pack every row's weights in
VNNI form into SLM (`Systolic`), and each iteration copies output p's K values out of the
segment into A's layout and reads the row's B from SLM.

Keys: fma (mad or dpas), simd, n_tile (output channels per thread), m_tile (outputs along w per
thread), tg_m/tg_n, gmem_bufs, grf; k_block is the plan's (a row's K, padded), slm is 1 with dpas
and 0 with mad, k_split and slm_bufs stay 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..conv.layout import Layout
from ..conv.problem import Problem
from ..errors import ConfigError
from ..hw import Platform
from ..ir import Var
from ..ir.types import F16, F32, PTR, Type
from .config import RESERVED_GRFS, SYSTOLIC, Config, Given, check_config, k_step
from .depthwise import int8_sums_are_exact
from .gemm import Gemm, check_index_range
from .rows import RowPlan, Rows, budget_variants, contiguous_channels, m_tile_options, row_divisors
from .tiles import (
    Piece,
    Progression,
    TileLayout,
    blocked_c_layout,
    dense_layout,
    dpas_a_layout,
    line_layout,
    round_up,
    span,
    vnni_layout,
)

MAX_INPUT_CHANNELS = 4  # beyond that, the GEMM plan's K lines are long enough


def unsuited(problem: Problem, hw: Platform) -> str | None:
    """Why plan=first cannot compute `problem` on `hw` (None: it can)."""
    desc = problem.desc
    if not problem.is_forward:
        return "it computes forward convolutions only"
    if problem.quantization or any(problem.post_op_tensor(i) for i in range(len(problem.post_ops))):
        return "its epilogue applies eltwise post-ops only (no sum, binary, prelu, scales or zero points)"
    if desc.g > 1:
        return "it is for ungrouped convolutions (g = 1)"
    if desc.ic > MAX_INPUT_CHANNELS:
        return f"it is for at most {MAX_INPUT_CHANNELS} input channels, not ic={desc.ic}"
    if desc.oc < min(hw.simd_widths):
        return f"oc={desc.oc} channels fill fewer than {min(hw.simd_widths)} lanes"
    if segment_order(problem.layout_of("src"), desc.ic) is None:
        return f"src ({problem.layout_of('src').tag}) has neither channels nor w innermost"
    if problem.types.is_int8 and not hw.has_dpas:
        return "int8 multiplies four products per lane with the GEMM plan's dp4a, faster than f32 mads"
    return None


def segment_order(layout: Layout, channels: int) -> str | None:
    """ "channels" when a pixel's channels are innermost and pixels along w follow each other
    (nhwc), "w" when w is innermost (nchw), None otherwise."""
    last = layout.ndims - 1
    zero = layout.offset_of((0,) * layout.ndims)
    step_w = layout.offset_of((0,) * last + (1,)) - zero if layout.dims[last] > 1 else channels
    if layout.unit_stride_run(1) == channels and not layout.inner_blocks(1) and step_w == channels:
        return "channels"
    if layout.unit_stride_run(last) == layout.dims[last] and not layout.inner_blocks(last):
        return "w"
    return None


def operand_type(problem: Problem) -> Type:
    """The type the mads read: f16 as it is (mixed mode into f32), the rest as f32."""
    return F16 if problem.type_of("src") == F16 else F32


@dataclass
class Systolic:
    """The registers and SLM of plan=first with dpas."""

    a: TileLayout  # m_tile x k_block: A in dpas's layout, as the multiply reads it
    a_rows: TileLayout  # a, without the padding columns (the copies out of the segment fill these)
    a_source: TileLayout  # m_tile x K: where each A value sits in the segment registers
    b: TileLayout  # k_block x n_tile: B in VNNI form, read from SLM each iteration
    w_rows: TileLayout  # K x n_tile: a row of weights as loaded (before the loop)
    w_pack: TileLayout  # k_block x n_tile: the row in VNNI form, stored to SLM
    w_pack_rows: TileLayout  # w_pack without the padding rows
    slm: Var
    rounds: int  # rows of weights each thread of a group packs (the last rounds may be past the end)


@dataclass
class FirstLayerPlan(RowPlan):
    gemm: Gemm
    config: Config
    hw: Platform
    rows: Rows
    grid: tuple[int, int, int]
    order: str  # "channels" (a row folds kw and ic) or "w" (a row folds kw; the loop walks ic)
    row_channels: int  # input channels a row folds: IC, or 1
    lanes: int  # values per gather message
    segment: TileLayout  # 1 x (span * row_channels) values, consecutive from byte `phase`
    phase: int | None  # bytes between the dword the segment's first value is in and that value (None: varies)
    blocks: tuple[tuple[int, int], ...]  # (byte, dwords) of the block messages of an inside segment
    wide_segment: TileLayout | None  # the segment in f32, when widened
    weights: TileLayout  # (KW*row_channels) x n_tile, a GRF-aligned line per (kw, ic)
    wide_weights: TileLayout | None
    weights_block: bool  # each weights line is one block message (else a gather)
    acc: TileLayout
    store: TileLayout
    store_block: bool  # each output pixel's channels are one block message (else a scatter)
    bias: TileLayout | None
    grf_buffers: list[tuple[Var, int]]  # the kernel's registers but `loop_buffers`
    loop_buffers: list[tuple[Var, int]]  # the loop's global-load targets: each version of the loop has its own
    systolic: Systolic | None = None  # with dpas

    @property
    def slm_bytes(self) -> int:
        """The weights of every row in VNNI form (dpas), one row per thread and round."""
        if self.systolic is None:
            return 0
        return self.systolic.rounds * self.config.tg_m * self.systolic.b.bytes

    #: no prefetch one iteration ahead: with gmem_bufs=2 the loads themselves run an iteration ahead
    prefetch = False

    @property
    def tiling(self) -> tuple[int, int, int, int]:
        """(m_groups, n_groups, k_groups, batches) for the cost model: groups along the pixels
        and along the output channels of one GEMM."""
        return (self.grid[1], self.grid[0], 1, 1)

    @property
    def row_values(self) -> int:
        """Values a segment holds: the span's pixels times the channels a row folds."""
        return self.rows.span * self.row_channels

    def inside(self) -> tuple[int, int] | None:
        """(lo, hi): the segment moves in blocks when lo <= iw0 and iw0 + span <= hi (the blocks'
        extra bytes before and after the segment inside the row); None: it always gathers."""
        return inside_bounds(self.phase, self.blocks, self.row_values * self.segment.type.size, self.row_channels, self)

    @property
    def row_k(self) -> int:
        """The K of one row: its taps times the channels it folds."""
        return self.problem.desc.kw * self.row_channels

    def value(self, p: int, kw: int, ic: int) -> int:
        """The segment value output p reads through tap kw and (folded) channel ic."""
        return self.rows.pixel(p, kw) * self.row_channels + ic


def plan_first_layer(gemm: Gemm, config: Config, hw: Platform) -> FirstLayerPlan:
    """The registers and grid of plan=first for `config`; ConfigError if it does not apply."""
    problem = gemm.problem
    reason = unsuited(problem, hw)
    if reason:
        raise ConfigError(f"plan=first: {reason}")
    check_index_range(problem)
    desc = problem.desc
    _check_keys(config, gemm, hw)  # first: a key this plan does not take is the clearer error
    check_config(config, gemm, hw)
    if problem.types.is_int8 and not config.systolic and not int8_sums_are_exact(problem):
        raise ConfigError(
            "plan=first: fma=mad accumulates int8 products in f32, which could round here (a sum "
            "may reach 2^24); use fma=dpas"
        )
    order = segment_order(problem.layout_of("src"), desc.ic)
    assert order is not None  # `unsuited` turned the other layouts down
    row_channels = desc.ic if order == "channels" else 1
    rows = Rows(desc, config.m_tile, channels=1 if order == "channels" else desc.ic)
    grf = hw.grf_bytes
    n, m = config.n_tile, config.m_tile
    src_type, wei_type, out_type = (problem.type_of(t) for t in ("src", "wei", "dst"))
    lanes = hw.max_message_simd
    values = rows.span * row_channels
    phase = segment_phase(problem, rows, row_channels, order)
    segment = dense_layout(Var("segment", PTR), src_type, 1, values, base=(phase or 0) // src_type.size)
    segment = replace(segment, elements=round_up(segment.elements * src_type.size, grf) // src_type.size)
    blocks = segment_blocks((phase or 0) + values * src_type.size, hw)
    row_k = desc.kw * row_channels
    starts = math.gcd(n, desc.oc)
    weights_block = contiguous_channels(problem.layout_of("wei"), n, starts, wei_type.size, hw, dim=0)
    store_block = contiguous_channels(problem.layout_of("dst"), n, starts, out_type.size, hw)
    weights = line_layout(Var("w_load", PTR), wei_type, row_k, n, 1, n, grf)[0]
    wide_segment = wide_weights = systolic = None
    if config.systolic:
        systolic = _systolic(rows, row_channels, config, gemm, segment, weights, grf)
        acc = blocked_c_layout(Var("acc", PTR), problem.acc_type, m, n, config.dpas_rows, config.simd)
        buffers = [
            (systolic.a.buffer, systolic.a.bytes),
            (systolic.b.buffer, systolic.b.bytes),
            (weights.buffer, weights.bytes),
            (systolic.w_pack.buffer, systolic.w_pack.bytes),
        ]
        # the global loads of both loops (the rows' and, before it, the weights'), copied gmem_bufs times
        loaded = round_up(segment.bytes, grf) + round_up(weights.bytes, grf)
    else:
        operand = operand_type(problem)
        if operand != src_type:
            wide_segment = dense_layout(Var("segment_wide", PTR), operand, 1, rows.span * row_channels)
        if operand != wei_type:
            wide_weights = line_layout(Var("w_wide", PTR), operand, row_k, n, 1, n, grf)[0]
        acc = dense_layout(Var("acc", PTR), F32, m, n)
        buffers = [(weights.buffer, weights.bytes)]
        buffers += [(b.buffer, b.bytes) for b in (wide_segment, wide_weights) if b is not None]
        loaded = round_up(segment.bytes, grf) + round_up(weights.bytes, grf)
    store = (
        acc
        if out_type == F32 and acc.type == F32 and not config.systolic and (n * 4) % grf == 0
        else line_layout(Var("c_store", PTR), out_type, m, n, 1, n, grf)[0]
    )
    bias = line_layout(Var("bias_load", PTR), problem.bias_type, 1, n, 1, n, grf)[0] if problem.has_bias else None
    buffers = [(acc.buffer, acc.bytes)] + buffers
    if bias is not None:
        buffers.append((bias.buffer, bias.bytes))
    if store is not acc:
        buffers.append((store.buffer, store.bytes))
    loop_buffers = [(segment.buffer, segment.bytes)]
    if not config.systolic:  # the mads' weights are loaded in the loop (dpas: before it, into SLM)
        buffers.remove((weights.buffer, weights.bytes))
        loop_buffers.append((weights.buffer, weights.bytes))
    used = sum(round_up(size, grf) for _, size in buffers + loop_buffers) + (config.gmem_bufs - 1) * loaded
    if used > (config.grf - RESERVED_GRFS) * grf:
        raise ConfigError(
            f"plan=first: the kernel needs {used // grf + RESERVED_GRFS} GRFs ({used // grf} for its "
            f"buffers{f', gmem_bufs={config.gmem_bufs}' if config.gmem_bufs > 1 else ''} + "
            f"{RESERVED_GRFS} reserved) but grf={config.grf}: use a smaller m_tile/n_tile"
        )
    channel_blocks = -(-desc.oc // n)
    grid = (-(-channel_blocks // config.tg_n), -(-rows.spatial_blocks // config.tg_m), 1)
    plan = FirstLayerPlan(
        gemm,
        config,
        hw,
        rows,
        grid,
        order,
        row_channels,
        lanes,
        segment,
        phase,
        blocks,
        wide_segment,
        weights,
        wide_weights,
        weights_block,
        acc,
        store,
        store_block,
        bias,
        [(var, round_up(size, grf)) for var, size in buffers],
        [(var, round_up(size, grf)) for var, size in loop_buffers],
        systolic,
    )
    if plan.slm_bytes > hw.max_slm_bytes:
        raise ConfigError(
            f"plan=first: the weights take {plan.slm_bytes} bytes of SLM per group, more than "
            f"{hw}'s {hw.max_slm_bytes}: use a smaller n_tile or tg_m"
        )
    return plan


def row_k_block(problem: Problem, config: Config, gemm: Gemm) -> int:
    """The K a row folds (KW*IC with the channels innermost, else KW), padded to the multiply's K step."""
    desc = problem.desc
    row_channels = desc.ic if segment_order(problem.layout_of("src"), desc.ic) == "channels" else 1
    return round_up(desc.kw * row_channels, k_step(config, gemm))


def _systolic(
    rows: Rows, row_channels: int, config: Config, gemm: Gemm, segment: TileLayout, weights: TileLayout, grf: int
) -> Systolic:
    desc = gemm.problem.desc
    m, n, k = config.m_tile, config.n_tile, config.k_block
    step = k_step(config, gemm)
    row_k = desc.kw * row_channels
    src_type, wei_type = gemm.a.type, gemm.b.type
    a = dpas_a_layout(Var("a", PTR), src_type, m, k, step, grf)
    b = vnni_layout(Var("b", PTR), wei_type, k, n, step, config.simd)
    w_pack = vnni_layout(Var("w_pack", PTR), wei_type, k, n, step, config.simd)
    # where output p's K value kw*C + c sits in the segment registers: runs of K values at
    # consecutive registers (all of a row without dilation, unless a gather message ends inside)
    pieces = []
    for p in range(m):
        places = [
            segment.offset(0, rows.pixel(p, k // row_channels) * row_channels + k % row_channels) for k in range(row_k)
        ]
        start = 0
        for k in range(1, row_k + 1):
            if k == row_k or places[k] != places[k - 1] + 1:
                pieces.append(Piece(span(p, 1), span(start, k - start), places[start], 0, 1))
                start = k
    a_source = TileLayout(segment.buffer, src_type, m, row_k, tuple(pieces), segment.elements)
    rounds = -(-desc.kd * desc.kh * rows.channels // config.tg_m)
    return Systolic(
        a, clipped(a, m, row_k), a_source, b, weights, w_pack, clipped(w_pack, row_k, n), Var("b_slm", PTR), rounds
    )


def clipped(layout: TileLayout, rows: int, cols: int) -> TileLayout:
    """`layout` without the elements at a row >= rows or a column >= cols (padding that a copy
    leaves alone)."""
    pieces = []
    for piece in layout.pieces:
        r, c = _below(piece.rows, rows), _below(piece.cols, cols)
        if r is not None and c is not None:
            pieces.append(Piece(r, c, piece.base, piece.row_stride, piece.col_stride))
    return TileLayout(layout.buffer, layout.type, rows, cols, tuple(pieces), layout.elements)


def _below(progression: Progression, limit: int) -> Progression | None:
    if progression.start >= limit:
        return None
    count = min(progression.count, (limit - 1 - progression.start) // progression.step + 1)
    return Progression(progression.start, progression.step, count)


def inside_bounds(
    phase: int | None, blocks: tuple[tuple[int, int], ...], row_bytes: int, row_channels: int, plan: RowPlan
) -> tuple[int, int] | None:
    """(lo, hi): a segment of `row_bytes` starting `phase` bytes into its first dword moves in
    `blocks` when lo <= iw0 and iw0 + span <= hi (the blocks' extra bytes before and after it
    inside the row); None: it always gathers."""
    if phase is None:
        return None
    tail = sum(4 * dwords for _, dwords in blocks) - phase - row_bytes
    per_pixel = row_channels * plan.problem.type_of("src").size
    return -(-phase // per_pixel), plan.problem.desc.iw - -(-tail // per_pixel)


def segment_phase(problem: Problem, rows: Rows, row_channels: int, order: str) -> int | None:
    """The byte of its dword at which every thread's segment starts, for every row; None when
    it is not the same for all."""
    desc, layout, size = problem.desc, problem.layout_of("src"), problem.type_of("src").size
    w = layout.ndims - 1
    walked = [d for d in range(w) if d != 1 or order == "w"]  # mb, (c,) d, h: where a row starts
    strides = [
        layout.offset_of(tuple(int(i == d) for i in range(layout.ndims))) - layout.offset_of((0,) * layout.ndims)
        for d in walked
    ]
    if any((stride * size) % 4 for stride, d in zip(strides, walked, strict=True) if layout.dims[d] > 1):
        return None
    starts = {b * rows.m_tile for b in range(rows.blocks_per_row)} | {desc.ow - rows.m_tile}
    phases = {((o * desc.sw - desc.pw) * row_channels * size) % 4 for o in starts if o <= desc.ow - rows.m_tile}
    return phases.pop() if len(phases) == 1 else None


def segment_blocks(nbytes: int, hw: Platform) -> tuple[tuple[int, int], ...]:
    """(byte, dwords) of the block messages covering `nbytes` from byte 0, rounded up to dwords."""
    total = round_up(nbytes, 4)
    step = hw.max_block_message_bytes
    return tuple((first, min(step, total - first) // 4) for first in range(0, total, step))


def _check_keys(config: Config, gemm: Gemm, hw: Platform) -> None:
    desc = gemm.problem.desc
    if config.fma not in ("mad", "dpas"):
        raise ConfigError(f"plan=first: fma={config.fma}: this plan multiplies with mad or dpas")
    k_block = row_k_block(gemm.problem, config, gemm)
    if config.k_block != k_block:
        raise ConfigError(
            f"plan=first: k_block={config.k_block}: a row folds {k_block} values of K here (kw x ic, "
            "padded to the multiply's K step); leave k_block to the plan"
        )
    slm = int(config.systolic)
    for key, value in (("k_split", 1), ("slm", slm), ("slm_bufs", 1)):
        if getattr(config, key) != value:
            raise ConfigError(
                f"plan=first: {key}={getattr(config, key)} does not apply with fma={config.fma} (it must "
                f"be {value}): the loop runs over kernel rows"
                + (", the weights staged in SLM" if slm else ", each thread loading its own input")
            )
    if config.n_tile > desc.oc:
        raise ConfigError(f"plan=first: n_tile={config.n_tile} exceeds oc={desc.oc}")
    if config.m_tile > desc.ow:
        raise ConfigError(f"plan=first: m_tile={config.m_tile} exceeds ow={desc.ow}")


def first_layer_configs(gemm: Gemm, hw: Platform, given: Given) -> list[Config]:
    """plan=first's configurations for `gemm`, in the planner's order (none where it does not
    apply; the heuristic ranks them by `row_estimate.py`): 16 output channels per thread, then 32
    (dpas: 32, then 16); 16 outputs along w, then 8, 4 (dpas: 16, 8), then smaller blocks, then
    (mad) the divisors of OW from 16 down to 4; gmem_bufs 1, then 2; the given keys fixed."""
    problem = gemm.problem
    if unsuited(problem, hw) or given.get("plan", "first") != "first":
        return []
    if "plan" not in given and problem.types.is_int8:
        # int8's dpas K step is 32: a row's KW*IC values (21 for 7x7x3, 9 for 3x3x3) pad it by a
        # third or more, while the GEMM plan pads KH*KW*IC once; resnet_50's conv1 models 1.46x
        # (u8:s8:f32) and 1.16x (s8:s8:s32) slower here on XeHPG, so int8 stays with the GEMM plan
        return []
    desc = problem.desc
    a_type = problem.type_of("src")
    fma = given.get("fma") or ("dpas" if hw.has_dpas and a_type.kind in ("f16", "bf16", "s8", "u8") else "mad")
    m_choices: tuple[int, ...]
    if fma in SYSTOLIC:
        simd = given.get("simd") or hw.dpas_exec_size
        m_choices, tg_most = (16, 8), 16  # groups share the weights in SLM: many threads per group
    else:
        simd = given.get("simd") or max(w for w in hw.simd_widths if w * 4 <= 64 and w <= desc.oc)
        m_choices, tg_most = (16, 8, 4), 4
    n_tiles = [given["n_tile"]] if "n_tile" in given else [t for t in (2 * simd, simd) if t <= desc.oc]
    if fma not in SYSTOLIC:
        n_tiles.reverse()  # mad: the weights of a row take n_tile registers per value of K
    # and smaller blocks after them: more threads, for the estimate to take where a thread's
    # waits need more threads per EU to hide them (mobilenet_v2's conv1 in bf16 on XeHPC models
    # 2592 cycles with m_tile=2 against 3379 with 16)
    m_tiles = (
        [given["m_tile"]]
        if "m_tile" in given
        else m_tile_options(desc.ow, m_choices) + [m for m in (4, 2) if m < min(m_choices) and m < desc.ow]
    )
    if "m_tile" not in given and fma not in SYSTOLIC:
        # (resnet_50's conv1 in f32 on XeHPG: m_tile=16, 3,136 threads for 512 EUs, 37,506
        # modeled cycles; m_tile=7, 3,584 threads, 7 on every EU, 32,049)
        m_tiles += [d for d in row_divisors(desc.ow, m_choices) if d not in m_tiles]
    configs = []
    for n_tile in n_tiles:
        for m_tile in m_tiles:
            rows = Rows(desc, m_tile)
            tg_m = given.get("tg_m") or max(1, min(tg_most, rows.spatial_blocks))
            base = Config(
                fma, simd, tg_m, given.get("tg_n", 1), m_tile, n_tile, 1, plan="first", slm=int(fma in SYSTOLIC)
            )
            base = replace(base, k_block=row_k_block(problem, base, gemm))
            # one copy of the row's loads first: the scheduler's second copy hides nothing in this
            # loop (the row's first multiply waits on a sync.allwr, which waits for the next row's
            # loads too): mobilenet_v2's conv1 in f32 on XeHPC models 3227 cycles with
            # gmem_bufs=1 and 4720 with 2 (m_tile=16), resnet_50's conv1 in bf16 6087 and 8196
            configs += budget_variants(base, hw, given, [1, 2])
    return list(dict.fromkeys(configs))
