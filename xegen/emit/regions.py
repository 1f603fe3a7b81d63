"""Register regions: the elements a three-source operand reads (its implicit region width), and
the moves a strided line of elements takes.

A source region <v;w,h> reads, in channel i, element (i // w) * v + (i % w) * h counted from
its subregister.  Three-source instructions (mad, add3, bfn, ...) write src0 and src1 as
<v;h> and src2 as <h>; the width is implied by the Align1 ternary regioning rules (as IGA
applies them to dependencies; `iga64 -Xprint-deps` shows the bytes, tests/emit/test_regions.py
compares):

- <0;h>: every channel reads the first element (width 1; h must be 0, iga64 accepts any);
- <v;0>: width v, so rows of v channels read one element each, the next row v elements on
  (<4;0> over 8 channels reads elements 0,0,0,0,4,4,4,4);
- <v;h>, h != 0: width v / h, at least 1;
- src2 <h>: channel i reads element i * h, i.e. <h;1,0>.

Lowering (liveness), the SWSB footprints and the simulator all read regions through this one
function.
"""

from __future__ import annotations

from .instruction import Reg


def three_source_region(reg: Reg, index: int) -> tuple[int, int, int]:
    """<v;w,h> of source `index` (0, 1, 2) of a three-source instruction."""
    h = reg.hstride or 0
    if index == 2 or reg.vstride is None:
        return h, 1, 0
    v = reg.vstride
    if v == 0:
        return 0, 1, 0
    if h == 0:
        return v, v, 0
    return v, max(v // h, 1), h


# Moves of strided lines ------------------------------------------------------------------------

MOVE_DST_STRIDES = (1, 2, 4)  # a destination's horizontal stride
# a source's: <w*s;w,s> for 1, 2 and 4, <s;1,0> (one element a row) for 8, 16 and 32
MOVE_SRC_STRIDES = (0, 1, 2, 4, 8, 16, 32)
MAX_MOVE_LANES = 32


def move_instructions(count: int, dst_stride: int, dst_size: int, src_stride: int, src_size: int, grf: int) -> int:
    """The moves a line of `count` elements takes, as the lowering cuts it (`lower.builder`):
    chunks of a power of two of lanes, at most 32, each operand within two GRFs; one element a
    move where the destination's or the source's stride has no encoding.  (A chunk that would
    straddle a third GRF at its actual offset is cut once more; that is not counted.)"""
    if count <= 1:
        return count
    if dst_stride not in MOVE_DST_STRIDES or src_stride not in MOVE_SRC_STRIDES:
        return count
    moves, remaining = 0, count
    while remaining:
        n = 1 << (min(remaining, MAX_MOVE_LANES).bit_length() - 1)
        while n > 1 and (n * dst_stride * dst_size > 2 * grf or ((n - 1) * src_stride + 1) * src_size > 2 * grf):
            n //= 2
        moves += 1
        remaining -= n
    return moves
