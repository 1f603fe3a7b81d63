"""The three-source region rule (xegen.emit.regions), pinned with iga64.

`iga64 -Xprint-deps` prints, for every instruction it disassembles, the register bytes each
source reads.  For every <v;h> region of src0/src1 and <h> of src2, every execution size and
two element sizes, our bytes (encoded by us, read by iga64) must read exactly the bytes
iga64 says, on all three platforms.
"""

from __future__ import annotations

import re

import pytest

from xegen import hw as hwlib
from xegen import oracles
from xegen.emit import Instruction, encode_kernel, grf
from xegen.emit.footprint import UNIT_BYTES, region_footprint
from xegen.emit.regions import three_source_region

PLATFORMS = [hwlib.XELP, hwlib.XEHPG, hwlib.XEHPC]
REGIONS = [(v, h) for v in (0, 1, 4, 8) for h in (0, 1, 2, 4)]
EXEC_SIZES = (1, 2, 4, 8, 16)
TYPES = {"f": 4, "hf": 2}
SOURCES = ((20, 2), (40, 0), (60, 1))  # (register, subregister) of src0, src1, src2


def _mad(exec_size: int, type_name: str, v: int, h: int) -> Instruction:
    (r0, s0), (r1, s1), (r2, s2) = SOURCES
    return Instruction(
        "mad",
        exec_size,
        dst=grf(10, 0, type_name),
        srcs=(
            grf(r0, s0, type_name).region(v, None, h),
            grf(r1, s1, type_name).region(v, None, h),
            grf(r2, s2, type_name).stride(h),
        ),
    )


def _our_bytes(inst: Instruction, index: int, platform: hwlib.Platform) -> set[tuple[int, int]]:
    """(register, byte) pairs the footprint of source `index` covers."""
    src = inst.srcs[index]
    footprint = region_footprint(src, inst.exec_size, three_source_region(src, index), platform.grf_bytes)
    return {divmod(bit, UNIT_BYTES) for bit in range(footprint.bytes.bit_length()) if footprint.bytes >> bit & 1}


def _iga64_bytes(text: str, grf_bytes: int) -> set[tuple[int, int]]:
    """`r20[8-11,24-27]`, `r10` (a whole register), `r10:2` (two) as (register, byte) pairs."""
    out = set()
    for number, count, ranges in re.findall(r"r(\d+)(?::(\d+)|\[([\d,\-]+)\])?", text):
        number = int(number)
        if ranges:
            for part in ranges.split(","):
                first, _, last = part.partition("-")
                out.update((number, b) for b in range(int(first), int(last or first) + 1))
        else:
            out.update((number + r, b) for r in range(int(count or 1)) for b in range(grf_bytes))
    return out


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_three_source_regions_read_what_iga64_says(platform, iga64):
    cases = [(_mad(n, t, v, h), (v, h)) for (v, h) in REGIONS for n in EXEC_SIZES for t in TYPES]
    listing = oracles.iga64_disassemble(
        encode_kernel([inst for inst, _ in cases], platform), platform, extra=("-Xprint-deps",)
    )
    deps = [dict(re.findall(r"(s\d):\{([^}]*)\}", line)) for line in listing.splitlines() if line.startswith("// s0:")]
    assert len(deps) == len(cases)
    for (inst, region), sources in zip(cases, deps, strict=True):
        for index in range(3):
            ours = _our_bytes(inst, index, platform)
            theirs = _iga64_bytes(sources[f"s{index}"], platform.grf_bytes)
            width = three_source_region(inst.srcs[index], index)[1]
            context = f"{platform.name} mad ({inst.exec_size}) :{inst.dst.type} src{index} <{region[0]};{region[1]}>"
            if inst.exec_size >= width:  # always at SIMD8 and SIMD16 (widths are at most 8)
                assert ours == theirs, context
            else:  # fewer channels than one row: iga64 counts the whole row, the channels read a part of it
                assert ours <= theirs, context


def test_a_zero_horizontal_stride_repeats_each_element_vstride_times(iga64):
    """<4;0> over 8 channels reads elements 0,0,0,0,4,4,4,4: width 4, not 1 (which would read
    0,4,...,28).  By hand: r20.2:f starts at byte 8, so bytes 8-11 and 24-27 of r20."""
    inst = _mad(8, "f", 4, 0)
    assert three_source_region(inst.srcs[0], 0) == (4, 4, 0)
    expected = {(20, b) for b in (*range(8, 12), *range(24, 28))}
    assert _our_bytes(inst, 0, hwlib.XEHPG) == expected
    listing = oracles.iga64_disassemble(encode_kernel([inst], hwlib.XEHPG), hwlib.XEHPG, extra=("-Xprint-deps",))
    line = next(line for line in listing.splitlines() if line.startswith("// s0:"))
    assert _iga64_bytes(re.search(r"s0:\{([^}]*)\}", line).group(1), 32) == expected
