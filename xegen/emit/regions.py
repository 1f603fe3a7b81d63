"""The elements a three-source operand reads: its implicit region width.

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
