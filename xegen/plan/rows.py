"""What the row plans (`depthwise.py`, `first_layer.py`) share: a thread's outputs, the kernel
rows its loop walks, the input pixels each row reads, and which channel runs move in one message.

A thread computes `m_tile` consecutive outputs along the innermost spatial dimension (w; the only
one of a 1-D problem) of one output row (mb, od, oh), for a block of output channels, one output
channel per SIMD lane.  Its loop runs over the kernel's rows: (kd, kh), every tap of the kernel
but the innermost dimension's (3-D problems have KD*KH rows, 2-D problems KH, 1-D problems one).
Each iteration loads the row's *segment*: the input pixels its outputs read in that row, each
once, so that a pixel serves every kw tap and every output that reads it (output p reads pixel
p*SW + kw*(DW+1) of the segment through tap kw).

The last block of a row, and the last block of channels, are moved back to end where the row
(the channels) end instead of running past them: they overlap the block before, whose outputs
they compute and write again with the same values, so no output needs a mask and no load leaves
its tensor.  Out-of-range thread indices (a grid rounded up to whole thread groups) are clamped
the same way.

What the loop computes is a `RowWalk`: which tensor it reads and which it writes, and per
spatial dimension an `Axis` saying which position an output reads through a tap, where it is
written and which kernel position the tap is.  Going forward that is the descriptor itself;
backward data is a walk of diff_dst per stride phase (`backward_data_walks`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

from ..conv.descriptor import Descriptor
from ..conv.index import Idx
from ..conv.layout import Layout
from ..conv.problem import Problem
from ..errors import ConfigError
from ..hw import Platform
from ..ir import Var
from ..ir.types import Type
from .config import RESERVED_GRFS, Config, Given
from .gemm import Gemm, stride_phases
from .tiles import TileLayout, line_layout, round_up

SPATIAL = ("d", "h", "w")


@dataclass(frozen=True)
class Axis:
    """One spatial dimension as a row plan walks it.  Output o (o < `outputs`) reads position
    o*stride + t*step - pad of the tensor read (`inputs` long) through tap t (t < `taps`), and is
    written at position o*out_stride + out_offset; tap t is kernel position
    kernel_first + kernel_step*t.  Forward: the descriptor's O, I, K, S, D+1, P, and the identity."""

    outputs: int
    inputs: int
    taps: int
    stride: int
    step: int
    pad: int
    out_stride: int = 1
    out_offset: int = 0
    kernel_first: int = 0
    kernel_step: int = 1

    @staticmethod
    def forward(desc: Descriptor, dim: str) -> Axis:
        f = desc.field
        return Axis(f("o", dim), f("i", dim), f("k", dim), f("s", dim), f("d", dim) + 1, f("p", dim))


@dataclass(frozen=True)
class RowWalk:
    """What a row kernel computes, as a forward convolution over (d, h, w) `axes`: it reads
    `reads`, writes `writes`, and a lane's output channel (`out_per_group` per group) sums over
    `in_per_group` channels of the tensor read.  `transposed`: the weights are indexed
    [g][read channel][written channel] (backward data) instead of [g][written][read].
    `w_more`: further walks along w over the same outputs and with the same stride and step
    (the other stride phases along w of backward data), whose outputs a thread computes too,
    from the same segment."""

    reads: str
    writes: str
    axes: tuple[Axis, Axis, Axis]
    out_per_group: int
    in_per_group: int
    out_channels: int
    transposed: bool = False
    w_more: tuple[Axis, ...] = ()

    @staticmethod
    def forward(desc: Descriptor) -> RowWalk:
        d, h, w = (Axis.forward(desc, dim) for dim in SPATIAL)
        return RowWalk("src", "dst", (d, h, w), desc.ocg, desc.icg, desc.oc)

    def axis(self, dim: str) -> Axis:
        return self.axes[SPATIAL.index(dim)]

    @property
    def w_axes(self) -> tuple[Axis, ...]:
        return (self.axis("w"), *self.w_more)


@dataclass(frozen=True)
class Rows:
    """The row walk of a problem for output blocks of `m_tile` pixels along w (`walk`: the
    problem's forward convolution unless given)."""

    desc: Descriptor
    m_tile: int
    channels: int = 1  # input channels the loop walks too (outermost), for inputs with w innermost
    walk: RowWalk | None = None

    @cached_property
    def path(self) -> RowWalk:
        """The walk these rows follow."""
        return self.walk or RowWalk.forward(self.desc)

    @property
    def kd(self) -> int:
        return self.path.axis("d").taps

    @property
    def kh(self) -> int:
        return self.path.axis("h").taps

    @property
    def kw(self) -> int:
        return self.path.axis("w").taps

    @property
    def ow(self) -> int:
        return self.path.axis("w").outputs

    @property
    def iterations(self) -> int:
        """Kernel rows (times the channels walked): the K loop's trip count."""
        return self.channels * self.kd * self.kh

    @property
    def blocks_per_row(self) -> int:
        return -(-self.ow // self.m_tile)

    @property
    def spatial_blocks(self) -> int:
        """Output blocks of the whole problem: minibatch x od x oh x blocks per row."""
        walk = self.path
        return self.desc.mb * walk.axis("d").outputs * walk.axis("h").outputs * self.blocks_per_row

    @property
    def w_pad(self) -> int:
        """Columns the block's segment starts before its first output times the stride: the
        largest padding of its walks along w."""
        return max(axis.pad for axis in self.path.w_axes)

    @property
    def lines(self) -> int:
        """Outputs of a block: m_tile of each walk along w."""
        return self.m_tile * len(self.path.w_axes)

    def taps(self) -> list[tuple[int, int, int]]:
        """(walk along w, its tap kw, the weights vector) of every tap of a block's outputs."""
        out: list[tuple[int, int, int]] = []
        for f, axis in enumerate(self.path.w_axes):
            out += [(f, kw, len(out) + kw) for kw in range(axis.taps)]
        return out

    def pixel(self, p: int, kw: int, f: int = 0) -> int:
        """The segment pixel (from the block's first input column) output p of walk f along w
        reads through tap kw."""
        w = self.path.w_axes[f]
        return p * w.stride + kw * w.step + self.w_pad - w.pad

    @cached_property
    def pixels(self) -> tuple[int, ...]:
        """The segment's pixels the outputs read, in order (all of the span unless the stride
        skips some)."""
        return tuple(sorted({self.pixel(p, kw, f) for p in range(self.m_tile) for f, kw, _ in self.taps()}))

    @property
    def span(self) -> int:
        """Input columns from the block's first to the last one read."""
        return self.pixels[-1] + 1


class RowPlan:
    """What the row plans (depthwise, first layer) share: their problem, K loop trips and group
    shape, read from the `gemm`, `rows` and `config` fields each declares."""

    gemm: Gemm
    rows: Rows
    config: Config

    @property
    def problem(self) -> Problem:
        return self.gemm.problem

    @property
    def iterations(self) -> int:
        return self.rows.iterations

    @property
    def thread_group(self) -> tuple[int, int, int]:
        return (self.config.tg_n, self.config.tg_m, 1)


class RegisterBudget:
    """The GRF bytes a row plan's buffers take against `config.grf` (less the reserved GRFs):
    each buffer rounded up to whole GRFs, the loaded ones `gmem_bufs` times."""

    def __init__(self, config: Config, hw: Platform, fixed: list[tuple[Var, int]], loaded: list[int]):
        self.config, self.grf = config, hw.grf_bytes
        self.fixed = fixed
        self.available = (config.grf - RESERVED_GRFS) * self.grf
        self.used = sum(round_up(size, self.grf) for _, size in fixed)
        self.used += (config.gmem_bufs - 1) * sum(round_up(size, self.grf) for size in loaded)

    def rotating(self, buffer: Var, type: Type, lines: int, n: int, counts: tuple[int, ...]) -> tuple[TileLayout, int]:
        """A work buffer of `copies` x `lines` lines of n values that widened or replicated pixels
        rotate through: the first of `counts` the registers allow (all of a row's pixels, so
        that the scheduler may run ahead, else a few), added to the buffers."""
        line = round_up(n * type.size, self.grf)
        for copies in dict.fromkeys(counts):
            if self.used + copies * lines * line <= self.available:
                break
        work = line_layout(buffer, type, copies * lines, n, 1, n, self.grf)[0]
        self.fixed.append((work.buffer, work.bytes))
        self.used += round_up(work.bytes, self.grf)
        return work, copies

    def check(self, advice: str) -> list[tuple[Var, int]]:
        """The buffers with their GRF-rounded sizes; ConfigError (with `advice`) if they do not fit."""
        grf, config = self.grf, self.config
        if self.used > self.available:
            raise ConfigError(
                f"plan={config.plan}: the kernel needs {self.used // grf + RESERVED_GRFS} GRFs ({self.used // grf} "
                f"for its buffers{f', gmem_bufs={config.gmem_bufs}' if config.gmem_bufs > 1 else ''} + "
                f"{RESERVED_GRFS} reserved) but grf={config.grf}: {advice}"
            )
        return [(var, round_up(size, grf)) for var, size in self.fixed]


def budget_variants(
    base: Config, hw: Platform, given: Given, bufs: list[int], applied: tuple[str, ...] = ()
) -> list[Config]:
    """`base` with each GRF count and each count of load buffers (`bufs`, in the planner's order)
    to try, unless given, and the other given keys (but `applied`, which the planner has set)."""
    bufs = [given["gmem_bufs"]] if "gmem_bufs" in given else bufs
    grfs = [given["grf"]] if "grf" in given else sorted(hw.grf_counts)
    overrides = {k: v for k, v in given.items() if k not in ("plan", "gmem_bufs", "grf", *applied)}
    return [replace(base, gmem_bufs=b, grf=g, **overrides) for g in grfs for b in bufs]


def m_tile_options(ow: int, choices: tuple[int, ...]) -> list[int]:
    """Output blocks along w to try, largest first: the choices that fit a row of `ow` outputs (a
    block never runs past the row's end: it is moved back instead), or the whole row when shorter."""
    fitting = [m for m in choices if m <= ow]
    return fitting or [ow]


def row_divisors(length: int, choices: tuple[int, ...]) -> list[int]:
    """The blocks between the smallest and the largest choice that tile a row of `length`
    outputs exactly, largest first.  Each sets another thread count: one may fill the EUs
    evenly where the power-of-two choices leave the busiest EU a thread more than the rest."""
    return [d for d in range(min(max(choices), length), min(choices) - 1, -1) if length % d == 0]


def contiguous_channels(layout: Layout, count: int, start_multiple: int, size: int, hw: Platform, dim: int = 1) -> bool:
    """Whether `count` consecutive channels (dimension `dim`: 1 of activations, 0 of ungrouped
    weights) from any start that is a multiple of `start_multiple` sit next to each other in
    memory, dword aligned, and fit one block message: the channels innermost (nhwc, ndhwc, nwc,
    hwio), or inside one inner block (nChw16c)."""
    run = layout.unit_stride_run(dim)
    if run == 0:
        return False
    if layout.inner_blocks(dim) and (run % count or start_multiple % count):
        return False  # a run must stay inside one block of channels
    if not layout.inner_blocks(dim) and run < count:
        return False
    alignment = math.gcd(start_multiple, *layout.strides_besides(dim)) * size
    return (count * size) % 4 == 0 and alignment % 4 == 0 and count * size <= hw.max_block_message_bytes


def backward_data_walks(problem: Problem) -> list[RowWalk]:
    """Backward data as forward row walks of diff_dst, one per phase of the strides
    (`gemm.StridePhases`): a phase with first tap k0 and residue r writes diff_src at i = q*S + r
    and reads diff_dst o = q + (r + P - k0*E)/S - t*E*T/S through its taps k = k0 + t*T.  Taken
    in reverse order (t' = taps-1-t) that is a forward walk of stride 1 and dilation E*T/S, the
    kernel flipped, so no multiply-add falls on a tap between outputs; with stride 1 there is one
    phase, the convolution of diff_dst with the flipped kernel.  Residues no phase reaches
    (fewer taps than the stride) are left to the launcher's zero fill (`Gemm.skips_outputs`);
    phases with no position inside diff_src are left out.  The phases along w go in one walk
    (`RowWalk.w_more`) when they have as many positions (IW a multiple of SW): a thread then
    computes the outputs of every w phase of its block, each diff_dst pixel it loads serving
    the taps of all of them."""
    desc = problem.desc
    phases = stride_phases(problem)
    per_dim: list[list[Axis]] = []
    for dim in SPATIAL:
        if dim not in desc.used:
            per_dim.append([Axis(1, 1, 1, 1, 1, 0)])
            continue
        ph = phases[dim]
        axes = []
        for k0 in range(ph.count):
            taps = -(-(ph.kernel - k0) // ph.tap_step)
            r = ph.residue(Idx.const(k0)).lo
            outputs = -(-(ph.inputs - r) // ph.stride)
            if outputs <= 0:
                continue
            offset = (r + ph.padding - k0 * ph.dilation) // ph.stride  # exact
            step = ph.output_step
            pad = (taps - 1) * step - offset
            first = k0 + (taps - 1) * ph.tap_step
            axes.append(Axis(outputs, ph.outputs, taps, 1, step, pad, ph.stride, r, first, -ph.tap_step))
        per_dim.append(axes)
    w_phases = per_dim[2]
    if len({axis.outputs for axis in w_phases}) == 1:
        w_walks = [(w_phases[0], tuple(w_phases[1:]))]
    else:
        w_walks = [(axis, ()) for axis in w_phases]
    return [
        RowWalk("dst", "src", (d, h, w), desc.icg, desc.ocg, desc.ic, transposed=True, w_more=more)
        for d in per_dim[0]
        for h in per_dim[1]
        for w, more in w_walks
    ]
