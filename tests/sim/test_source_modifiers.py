"""Integer source modifiers (-x, (abs)x) act on the value, not at the source's width.

IGC relies on it: on XeHPC it computes `(ulong)a - (ulong)b`, and `get_global_id(d) -
get_global_offset(d)` in size_t, as `add (16|M0) r:q a:ud -b:ud`; a negation that wrapped at 32
bits would make the difference 2^32 too large.  Expected values come from numpy's int64
arithmetic and from the OpenCL C meaning of the kernels.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.conftest import require_tool
from xegen import oracles, sim

from .harness import execute

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


@pytest.mark.parametrize("hw", ["tgllp", "dg2", "pvc"])
def test_integer_negation_and_abs_are_exact(hw):
    a = np.array([[3, 100, -7, 0, INT32_MAX, INT32_MIN, 5, 1] * 2] * 2, np.int32)
    words = np.zeros((2, 32), np.uint16)
    words[:, :16] = [5, 1, 65535, 0, 2, 7, 32768, 1] * 2
    dwords = np.array([[5, 1, 2**32 - 1, 0, 2, 7, 2**31, 1] * 2] * 2, np.uint32)
    signed = np.array([[INT32_MIN, 1, -1, 0, 2, 7, -5, INT32_MAX] * 2] * 2, np.int32)
    region = "<8;8,1>" if hw == "tgllp" else "<1;1,0>"
    # inputs in r20-r50, results from r60 on (a :q result of 16 channels takes 4 GRFs on XeLP/XeHPG)
    run = execute(
        f"""
        add (16|M0) r60.0<1>:d r20.0{region}:d -r30.0{region}:uw
        add (16|M0) r64.0<1>:q r20.0{region}:d -r40.0{region}:ud
        add (16|M0) (sat)r70.0<1>:d r20.0{region}:d -r50.0{region}:d
        mov (16|M0) r72.0<1>:q -r40.0{region}:ud
        mov (16|M0) r80.0<1>:q (abs)r50.0{region}:d
        add (16|M0) r90.0<1>:d r20.0{region}:d -r40.0{region}:ud
    """,
        hw,
        threads=2,
        inputs={20: a, 30: words, 40: dwords, 50: signed},
    )
    wide = a.astype(np.int64)
    np.testing.assert_array_equal(
        run.read(60, np.int32, 16),  # wraps at the destination's 32 bits
        (wide - words[:, :16].astype(np.int64)).astype(np.int32),
    )
    np.testing.assert_array_equal(run.read(64, np.int64, 16), wide - dwords.astype(np.int64))
    np.testing.assert_array_equal(
        run.read(70, np.int32, 16), np.clip(wide - signed.astype(np.int64), INT32_MIN, INT32_MAX)
    )
    np.testing.assert_array_equal(run.read(72, np.int64, 16), -dwords.astype(np.int64))
    np.testing.assert_array_equal(run.read(80, np.int64, 16), np.abs(signed.astype(np.int64)))
    # a 32-bit destination keeps the low 32 bits, as before
    np.testing.assert_array_equal(
        run.read(90, np.uint32, 16), ((wide - dwords.astype(np.int64)) & 0xFFFFFFFF).astype(np.uint32)
    )


WIDE_SUBTRACTION = """
kernel void wide(global const uint* a, global const uint* b, global ulong* difference, global int* ids)
{
    const size_t i = get_global_id(0) - get_global_offset(0);
    difference[i] = (ulong)a[i] - (ulong)b[i];
    ids[2 * i] = get_global_id(0);
    ids[2 * i + 1] = get_global_offset(0);
}
"""


@functools.cache
def wide_zebin(device: str) -> bytes:
    return oracles.ocloc_compile(WIDE_SUBTRACTION, device, options="-cl-std=CL2.0")


@pytest.mark.parametrize("device", ["tgllp", "dg2", "pvc"])
@pytest.mark.parametrize("offset", [0, 5, 1000])
def test_igc_64_bit_subtraction_and_global_offset(device, offset):
    require_tool("ocloc")
    n = 100
    rng = np.random.default_rng(offset)
    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    a[:4], b[:4] = [0, 5, 2**32 - 1, 3], [1, 5, 0, 2**32 - 1]
    difference = np.zeros(n, np.uint64)
    ids = np.full(2 * n, -1, np.int32)
    sim.run(wide_zebin(device), "wide", [a, b, difference, ids], n, 16, global_offset=(offset, 0, 0))
    np.testing.assert_array_equal(difference, a.astype(np.uint64) - b.astype(np.uint64))  # wraps mod 2^64
    np.testing.assert_array_equal(ids[0::2], np.arange(n) + offset)
    np.testing.assert_array_equal(ids[1::2], offset)


NARROW_DIFFERENCES = """
kernel void narrow(global const uchar* a, global const uchar* b, global const short* c, global const ushort* d,
                   global int* out)
{
    const size_t i = get_global_id(0);
    out[4 * i + 0] = (int)a[i] - (int)b[i];
    out[4 * i + 1] = (int)c[i] - (int)d[i];
    out[4 * i + 2] = -(int)d[i];
    out[4 * i + 3] = abs((int)c[i]) - (int)a[i];
}
"""


@pytest.mark.parametrize("device", ["tgllp", "dg2", "pvc"])
def test_igc_differences_of_narrow_unsigned_values(device):
    """IGC subtracts zero-extended bytes and words with a negated narrow source (`-b:ub`)."""
    require_tool("ocloc")
    n = 100
    rng = np.random.default_rng(2)
    a, b = (rng.integers(0, 256, n).astype(np.uint8) for _ in range(2))
    c = rng.integers(-(2**15), 2**15, n).astype(np.int16)
    d = rng.integers(0, 2**16, n).astype(np.uint16)
    a[:3], b[:3], c[:3], d[:3] = [0, 255, 3], [255, 0, 3], [-32768, 32767, 0], [65535, 0, 1]
    out = np.zeros(4 * n, np.int32)
    zebin = oracles.ocloc_compile(NARROW_DIFFERENCES, device)
    sim.run(zebin, "narrow", [a, b, c, d, out], n, 16)
    wa, wb, wc, wd = (x.astype(np.int64) for x in (a, b, c, d))
    expected = np.stack([wa - wb, wc - wd, -wd, np.abs(wc) - wa], axis=1)
    np.testing.assert_array_equal(out.reshape(n, 4), expected)
