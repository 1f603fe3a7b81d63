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

The segment moves in gather messages, a value per lane, each lane masked by whether its pixel is
inside the input (the left and right padding: a block message has one mask for all its values);
the rows above and below the input are masked as a whole.  Then

    acc[p] += segment[(p*SW + kw*(DW+1))*IC + ic] * W[kw][ic]      (the segment value broadcast)

for every output p, tap kw and channel ic of the row: each value is loaded once per row and read
by every output and tap that needs it, and the multiply-adds are exactly the problem's.  The
weights of a row are a block message per (kw, ic) of the thread's output channels.  int8
accumulates in f32, exact while partial sums stay below 2^24 (else the plan does not apply);
bf16 and int8 are widened to f32 in registers, f16 goes into mixed-mode mads.

Keys: fma=mad, simd, n_tile (output channels per thread), m_tile (outputs along w per thread),
tg_m/tg_n, gmem_bufs, grf; the others keep their defaults (k_block=1: the loop walks kernel rows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping

from ..conv.layout import Layout
from ..conv.problem import Problem
from ..errors import ConfigError
from ..hw import Platform
from ..ir import Var
from ..ir.types import F16, F32, PTR, Type
from .config import RESERVED_GRFS, Config, check_config
from .depthwise import int8_sums_are_exact
from .gemm import Gemm, check_index_range
from .rows import Rows, contiguous_channels, m_tile_options
from .tiles import Piece, TileLayout, dense_layout, line_layout, round_up, span

MAX_INPUT_CHANNELS = 4  # beyond that, the GEMM plan's K lines are long enough


def unsuited(problem: Problem, hw: Platform) -> str | None:
    """Why plan=first cannot compute `problem` on `hw` (None: it can)."""
    desc = problem.desc
    if not problem.is_forward:
        return "it computes forward convolutions only"
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
    if problem.types.is_int8 and not int8_sums_are_exact(problem):
        return "its f32 accumulation of int8 products could round (a sum may reach 2^24)"
    return None


def segment_order(layout: Layout, channels: int) -> str | None:
    """"channels" when a pixel's channels are innermost and pixels along w follow each other
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
class FirstLayerPlan:
    gemm: Gemm
    config: Config
    hw: Platform
    rows: Rows
    grid: tuple[int, int, int]
    order: str  # "channels" (a row folds kw and ic) or "w" (a row folds kw; the loop walks ic)
    row_channels: int  # input channels a row folds: IC, or 1
    lanes: int  # values per gather message
    segment: TileLayout  # 1 x (span * row_channels) values, a message's worth per GRF-aligned piece
    wide_segment: TileLayout | None  # the segment in f32, when widened
    weights: TileLayout  # (KW*row_channels) x n_tile, a GRF-aligned line per (kw, ic)
    wide_weights: TileLayout | None
    weights_block: bool  # each weights line is one block message (else a gather)
    acc: TileLayout
    store: TileLayout
    store_block: bool  # each output pixel's channels are one block message (else a scatter)
    bias: TileLayout | None
    grf_buffers: list[tuple[Var, int]]

    @property
    def problem(self) -> Problem:
        return self.gemm.problem

    @property
    def iterations(self) -> int:
        return self.rows.iterations

    @property
    def thread_group(self) -> tuple[int, int, int]:
        return (self.config.tg_n, self.config.tg_m, 1)

    @property
    def slm_bytes(self) -> int:
        return 0

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
    check_config(config, gemm, hw)
    desc = problem.desc
    _check_keys(config, desc)
    order = segment_order(problem.layout_of("src"), desc.ic)
    row_channels = desc.ic if order == "channels" else 1
    rows = Rows(desc, config.m_tile, channels=1 if order == "channels" else desc.ic)
    grf = hw.grf_bytes
    n, m = config.n_tile, config.m_tile
    src_type, wei_type, out_type = (problem.type_of(t) for t in ("src", "wei", "dst"))
    operand = operand_type(problem)
    lanes = hw.max_message_simd
    segment = gather_layout(Var("segment", PTR), src_type, rows.span * row_channels, lanes, grf)
    wide_segment = None if operand == src_type else \
        dense_layout(Var("segment_wide", PTR), operand, 1, rows.span * row_channels)
    vectors = desc.kw * row_channels
    weights = line_layout(Var("w_load", PTR), wei_type, vectors, n, 1, n, grf)[0]
    wide_weights = None if operand == wei_type else line_layout(Var("w_wide", PTR), operand, vectors, n, 1, n, grf)[0]
    starts = math.gcd(n, desc.oc)
    weights_block = contiguous_channels(problem.layout_of("wei"), n, starts, wei_type.size, hw, dim=0)
    store_block = contiguous_channels(problem.layout_of("dst"), n, starts, out_type.size, hw)
    acc = dense_layout(Var("acc", PTR), F32, m, n)
    store = acc if out_type == F32 and (n * 4) % grf == 0 else \
        line_layout(Var("c_store", PTR), out_type, m, n, 1, n, grf)[0]
    bias = line_layout(Var("bias_load", PTR), problem.bias_type, 1, n, 1, n, grf)[0] if problem.has_bias else None
    buffers = [(acc.buffer, acc.bytes), (segment.buffer, segment.bytes), (weights.buffer, weights.bytes)]
    buffers += [(b.buffer, b.bytes) for b in (wide_segment, wide_weights, bias) if b is not None]
    if store is not acc:
        buffers.append((store.buffer, store.bytes))
    loaded = round_up(segment.bytes, grf) + round_up(weights.bytes, grf)  # copied gmem_bufs times
    used = sum(round_up(size, grf) for _, size in buffers) + (config.gmem_bufs - 1) * loaded
    if used > (config.grf - RESERVED_GRFS) * grf:
        raise ConfigError(f"plan=first: the kernel needs {used // grf + RESERVED_GRFS} GRFs ({used // grf} for its "
                          f"buffers{f', gmem_bufs={config.gmem_bufs}' if config.gmem_bufs > 1 else ''} + "
                          f"{RESERVED_GRFS} reserved) but grf={config.grf}: use a smaller m_tile/n_tile")
    channel_blocks = -(-desc.oc // n)
    grid = (-(-channel_blocks // config.tg_n), -(-rows.spatial_blocks // config.tg_m), 1)
    return FirstLayerPlan(gemm, config, hw, rows, grid, order, row_channels, lanes, segment, wide_segment, weights,
                          wide_weights, weights_block, acc, store, store_block, bias,
                          [(var, round_up(size, grf)) for var, size in buffers])


def gather_layout(buffer: Var, type: Type, count: int, lanes: int, grf_bytes: int) -> TileLayout:
    """`count` values in gather messages of `lanes` values, each message's on whole GRFs."""
    pitch = round_up(lanes * type.size, grf_bytes) // type.size
    pieces = tuple(Piece(span(0, 1), span(first, min(lanes, count - first)), k * pitch, 0, 1)
                   for k, first in enumerate(range(0, count, lanes)))
    return TileLayout(buffer, type, 1, count, pieces, len(pieces) * pitch)


def _check_keys(config: Config, desc) -> None:
    if config.fma != "mad":
        raise ConfigError(f"plan=first: fma={config.fma}: this plan multiplies with mad")
    for key, default in (("k_block", 1), ("k_split", 1), ("slm", 0), ("slm_bufs", 1)):
        if getattr(config, key) != default:
            raise ConfigError(f"plan=first: {key}={getattr(config, key)} does not apply (it must stay {default}): "
                              "the loop runs over kernel rows, each thread loading its own input")
    if config.n_tile > desc.oc:
        raise ConfigError(f"plan=first: n_tile={config.n_tile} exceeds oc={desc.oc}")
    if config.m_tile > desc.ow:
        raise ConfigError(f"plan=first: m_tile={config.m_tile} exceeds ow={desc.ow}")


def first_layer_configs(gemm: Gemm, hw: Platform, given: Mapping[str, object]) -> list[Config]:
    """plan=first's configurations for `gemm`, best first (none where it does not apply): 16
    output channels per thread, then 32; 16 outputs along w, then 8, 4; the given keys fixed."""
    problem = gemm.problem
    if unsuited(problem, hw) or given.get("plan", "first") != "first":
        return []
    desc = problem.desc
    simd = given.get("simd") or max(w for w in hw.simd_widths if w * 4 <= 64 and w <= desc.oc)
    n_tiles = [given["n_tile"]] if "n_tile" in given else [t for t in (simd, 2 * simd) if t <= desc.oc]
    m_tiles = [given["m_tile"]] if "m_tile" in given else m_tile_options(desc, (16, 8, 4))
    configs = []
    for n_tile in n_tiles:
        for m_tile in m_tiles:
            rows = Rows(desc, m_tile)
            tg_m = given.get("tg_m") or max(1, min(4, rows.spatial_blocks))
            base = Config("mad", simd, tg_m, given.get("tg_n", 1), m_tile, n_tile, 1, plan="first")
            bufs = [given["gmem_bufs"]] if "gmem_bufs" in given else [2, 1]
            grfs = [given["grf"]] if "grf" in given else sorted(hw.grf_counts)
            configs += [replace(base, gmem_bufs=b, grf=g, **{k: v for k, v in given.items()
                                                             if k not in ("plan", "gmem_bufs", "grf")})
                        for g in grfs for b in bufs]
    return list(dict.fromkeys(configs))
