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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from ..conv.descriptor import Descriptor
from ..conv.layout import Layout
from ..conv.problem import Problem
from ..hw import Platform
from .config import Config
from .gemm import Gemm


@dataclass(frozen=True)
class Rows:
    """The row walk of a problem for output blocks of `m_tile` pixels along w."""

    desc: Descriptor
    m_tile: int
    channels: int = 1  # input channels the loop walks too (outermost), for inputs with w innermost

    @property
    def iterations(self) -> int:
        """Kernel rows (times the channels walked): the K loop's trip count."""
        return self.channels * self.desc.kd * self.desc.kh

    @property
    def blocks_per_row(self) -> int:
        return -(-self.desc.ow // self.m_tile)

    @property
    def spatial_blocks(self) -> int:
        """Output blocks of the whole problem: minibatch x od x oh x blocks per row."""
        d = self.desc
        return d.mb * d.od * d.oh * self.blocks_per_row

    def pixel(self, p: int, kw: int) -> int:
        """The segment pixel (from the block's first input column) output p reads through tap kw."""
        return p * self.desc.sw + kw * (self.desc.dw + 1)

    @cached_property
    def pixels(self) -> tuple[int, ...]:
        """The segment's pixels the outputs read, in order (all of the span unless the stride
        skips some)."""
        return tuple(sorted({self.pixel(p, kw) for p in range(self.m_tile) for kw in range(self.desc.kw)}))

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


def m_tile_options(desc: Descriptor, choices: tuple[int, ...]) -> list[int]:
    """Output blocks along w to try, largest first: the choices that fit the row (a block never
    runs past the row's end: it is moved back instead), or the whole row when it is shorter."""
    fitting = [m for m in choices if m <= desc.ow]
    return fitting or [desc.ow]


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
