"""IGC's code for what the corpus does not cover — atomics (uniform ones become SIMD1
messages), a private array kept in registers (indirect access through a0), a local-memory
scan with barriers in a loop, divergent loops, conversions — built by ocloc for tgllp, dg2
and pvc, run with several local sizes (partial sub-groups and partial edge groups
included) with the SWSB hazard checks on, and compared with numpy references written here.

The kernels are tests/sim/kernels/<name>.cl; each `Case` makes the arguments of one launch
and checks the buffers afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.emit.corpus import LSC_OPTIONS, Variant
from xegen import sim

KERNELS = Path(__file__).resolve().parent / "kernels"
INT32_MIN, INT32_MAX = int(np.iinfo(np.int32).min), int(np.iinfo(np.int32).max)
# (items n = global size, local size): partial last sub-groups (7, 100) and partial edge groups
LAUNCHES = [(1000, 64), (1003, 7), (333, 100), (1, 1), (517, 256)]


@dataclass(frozen=True)
class Source:
    """The part of a corpus kernel the corpus compiler reads."""

    source: str


@dataclass(frozen=True)
class Build:
    """A kernel source and an ocloc variant, in the shape `corpus.zebin` takes."""

    kernel: Source
    variant: Variant


@dataclass(frozen=True)
class Case:
    """arguments(rng, n, local) -> the kernel's arguments; check(arguments, n, local) asserts."""

    arguments: Callable[[np.random.Generator, int, int], list]
    check: Callable[[list, int, int], None]


def _values(rng: np.random.Generator, n: int, low: int = -3000, high: int = 3000) -> np.ndarray:
    """n int32 values in [low, high) with INT32_MAX, INT32_MIN, 0, -1 and 1 first."""
    x = rng.integers(low, high, n).astype(np.int32)
    special = np.array([INT32_MAX, INT32_MIN, 0, -1, 1], dtype=np.int32)[:n]
    x[: special.size] = special
    return x


def _wrap32(value: int) -> int:
    """An integer wrapped to int32 (two's complement)."""
    return (int(value) + 2**31) % 2**32 - 2**31


def _as_int32(values) -> np.ndarray:
    return np.array([_wrap32(v) for v in values], dtype=np.int32)


def _or_of_bits(positions: np.ndarray) -> int:
    result = 0
    for position in positions:
        result |= 1 << int(position)
    return result


# --- atomics ---------------------------------------------------------------------------------------


def atomics_arguments(rng, n, local):
    counters = np.array([0, 0, INT32_MIN, INT32_MAX, 0, 7, 0, 0, 0, -1, 0], np.int32)
    unsigned = np.array([0, 0xFFFFFFFF], np.uint32)
    untouched = np.full(n, -5, np.int32)
    return [
        counters,
        unsigned,
        _values(rng, n),
        untouched.copy(),
        untouched.copy(),
        np.zeros(8, np.int32),
        rng.integers(0, 2, n).astype(np.int32),
        untouched.copy(),
        n,
    ]


def atomics_check(args, n, local):
    counters, unsigned, x, swapped, ticket, hist, slots, slot_old, _ = args
    total = int(x.astype(np.int64).sum())
    expected = [
        n,
        total,
        x.max(),
        x.min(),
        np.bitwise_xor.reduce(x),
        9,
        -total,
        -n,
        _or_of_bits(x & 31),
        ~_or_of_bits(x & 15),
        n,
    ]
    np.testing.assert_array_equal(counters, _as_int32(expected))
    np.testing.assert_array_equal(unsigned, [x.view(np.uint32).max(), x.view(np.uint32).min()])
    # cmpxchg(7 -> 9) succeeds once whatever the order; inc hands out every ticket once
    assert np.count_nonzero(swapped == 7) == 1 and np.count_nonzero(swapped == 9) == n - 1
    np.testing.assert_array_equal(np.sort(ticket), np.arange(n))
    np.testing.assert_array_equal(hist, np.bincount(x & 7, minlength=8))
    assert set(np.unique(slot_old).tolist()) <= {0, 1}  # each slot's value before its cmpxchg
    np.testing.assert_array_equal(slots, np.where(slot_old == (x & 1), x, slot_old))


# --- private array ---------------------------------------------------------------------------------


def private_array_arguments(rng, n, local):
    return [_values(rng, 64, -1000, 1000), _values(rng, n, -500, 500), np.full(2 * n, -5, np.int32), 3]


def private_array_check(args, n, local):
    data, index, out, scale = args
    a = _as_int32(data.astype(np.int64) * scale + np.arange(64))
    np.testing.assert_array_equal(out[0::2], a[index & 63])
    np.testing.assert_array_equal(out[1::2], a[(index[0] + np.arange(n) // local) & 63])


# --- local-memory scan -----------------------------------------------------------------------------


def scan_arguments(rng, n, local):
    return [_values(rng, n), np.full(n, -5, np.int32), sim.local(4 * local), n]


def scan_check(args, n, local):
    data, out, _, _ = args
    sums = [np.cumsum(data[start : start + local].astype(np.int64)) for start in range(0, n, local)]
    np.testing.assert_array_equal(out, _as_int32(np.concatenate(sums)))


# --- divergent loops -------------------------------------------------------------------------------


def divergent_arguments(rng, n, local):
    counters = np.array([0, 0, INT32_MIN, INT32_MAX, 0], np.int32)
    return [_values(rng, n), np.full(n, -5, np.int32), counters, np.zeros(8, np.int32), n]


def _divergent_item(v: int) -> int:
    """One work-item of divergent.cl with Python integers (C's truncating / and %, 32-bit wrap)."""
    acc = 0
    for k in range(v & 15):
        if k == 11:
            break
        if abs(_wrap32(k + v)) % 3 == 0:
            continue
        acc = _wrap32(acc + _wrap32(k * v))
    if v < 0:
        return _wrap32(-acc) ^ v
    if v > 1000:
        quotient = abs(acc) // 7 * (1 if acc >= 0 else -1)
        return _wrap32(quotient + v % 5)
    return _wrap32(((acc * v) >> 32) + (acc >> 3))


def divergent_check(args, n, local):
    x, out, counters, hist, _ = args
    values = [int(v) for v in x]
    np.testing.assert_array_equal(out, [_divergent_item(v) for v in values])
    expected = [
        sum(v < 0 for v in values),
        sum(v & 0xFF for v in values if v > 1000),
        max(values),
        min(values),
        np.bitwise_xor.reduce(x),
    ]
    np.testing.assert_array_equal(counters, _as_int32(expected))
    np.testing.assert_array_equal(hist, np.bincount(x.view(np.uint32) % 8, minlength=8))


# --- conversions -----------------------------------------------------------------------------------

SPECIAL_FLOATS = [
    0.0,
    -0.0,
    0.5,
    1.5,
    2.5,
    -2.5,
    3.5,
    -0.5,
    255.5,
    256.0,
    -1.0,
    32767.5,
    -32768.7,
    40000.0,
    2.5e9,
    -2.5e9,
    1e30,
    -1e30,
    np.inf,
    -np.inf,
    np.nan,
    1e-40,
    -7.25,
    123456.78,
]


def conversions_arguments(rng, n, local):
    f = (rng.standard_normal(n) * 10.0 ** rng.integers(0, 6, n)).astype(np.float32)
    special = np.array(SPECIAL_FLOATS, np.float32)[:n]
    f[: special.size] = special
    return [
        f,
        _values(rng, n, INT32_MIN, INT32_MAX),
        np.zeros(n, np.uint8),
        np.zeros(4 * n, np.int16),
        np.zeros(4 * n, np.int32),
        np.zeros(4 * n, np.float32),
        np.zeros(n, np.uint32),
        n,
    ]


def _saturate(values: np.ndarray, rounding, dtype) -> np.ndarray:
    """OpenCL's _sat conversion of floats: round, clamp to the type, NaN -> 0."""
    info = np.iinfo(dtype)
    rounded = rounding(np.nan_to_num(values.astype(np.float64), nan=0.0))
    return np.clip(rounded, info.min, info.max).astype(dtype)


def conversions_check(args, n, local):
    f, a, u8, s16, ri, m, hi, _ = args
    wide = a.astype(np.int64)
    np.testing.assert_array_equal(u8, _saturate(f, np.trunc, np.uint8))
    np.testing.assert_array_equal(s16[0::4], _saturate(f, np.rint, np.int16))  # rint: ties to even
    np.testing.assert_array_equal(s16[1::4], _saturate(f, np.trunc, np.int16))
    np.testing.assert_array_equal(s16[2::4], np.clip(wide, -32768, 32767))
    np.testing.assert_array_equal(s16[3::4], a.astype(np.int16))
    np.testing.assert_array_equal(ri[0::4], _saturate(f, np.trunc, np.int32))
    np.testing.assert_array_equal(ri[1::4], _saturate(f * np.float32(0.37), np.floor, np.int32))
    np.testing.assert_array_equal(ri[2::4], np.abs(wide).astype(np.uint32).view(np.int32))
    np.testing.assert_array_equal(ri[3::4], np.clip(wide + 2000000000, INT32_MIN, INT32_MAX))
    np.testing.assert_allclose(m[0::4], np.sqrt(np.abs(f)), rtol=2e-7, atol=0)  # native_sqrt: within an ulp
    np.testing.assert_array_equal(m[1::4], np.floor(f) + np.ceil(f))
    np.testing.assert_array_equal(m[2::4], a.astype(np.float32))
    x = f.astype(np.float64)
    with np.errstate(over="ignore"):  # 1e30 squared overflows float32 to inf, as the kernel's fma does
        fused = (x * x - 1.0).astype(np.float32)
    np.testing.assert_allclose(m[3::4], fused, rtol=2e-7, atol=0)  # fma rounds once
    ua = [int(v) for v in a.view(np.uint32)]
    expected = [
        ((v * 0x9E3779B9) >> 32) + bin(v).count("1") + (32 - v.bit_length()) + (((v << 7) | (v >> 25)) & 0xFFFFFFFF)
        for v in ua
    ]
    np.testing.assert_array_equal(hi, np.array(expected, np.uint64) & np.uint64(0xFFFFFFFF))


CASES = {
    "atomics": Case(atomics_arguments, atomics_check),
    "private_array": Case(private_array_arguments, private_array_check),
    "scan": Case(scan_arguments, scan_check),
    "divergent": Case(divergent_arguments, divergent_check),
    "conversions": Case(conversions_arguments, conversions_check),
}
VARIANTS = [Variant(device, "-cl-std=CL2.0") for device in ("tgllp", "dg2", "pvc")]
LSC = Variant("dg2", f"-cl-std=CL2.0 {LSC_OPTIONS}", "lsc")
BUILDS = [(name, variant) for name in CASES for variant in VARIANTS] + [("atomics", LSC), ("scan", LSC)]


def zebin(corpus, name: str, variant: Variant) -> bytes:
    return corpus.zebin(Build(Source((KERNELS / f"{name}.cl").read_text()), variant))


@pytest.mark.parametrize("name, variant", BUILDS, ids=[f"{n}-{v.id}" for n, v in BUILDS])
def test_igc_kernel_matches_numpy_with_hazard_checks(corpus, name, variant):
    binary = zebin(corpus, name, variant)
    case = CASES[name]
    for seed, (n, local) in enumerate(LAUNCHES):
        args = case.arguments(np.random.default_rng(seed), n, local)
        result = sim.run(binary, name, args, n, local)  # raises HazardError on a missing wait
        assert result.threads == sum(-(-min(local, n - start) // result.simd) for start in range(0, n, local))
        case.check(args, n, local)


def test_uniform_atomics_are_simd1_messages(corpus):
    """The atomics kernel exercises what it is meant to: IGC's SIMD1 HDC A64 atomics."""
    from xegen import hw as hwlib
    from xegen.emit.zebin import read_zebin
    from xegen.sim.program import Program

    for device in ("tgllp", "dg2", "pvc"):
        variant = next(v for v in VARIANTS if v.device == device)
        code = read_zebin(zebin(corpus, "atomics", variant)).kernel("atomics").code
        sends = [
            i
            for i in Program(code, hwlib.platform(device)).instructions
            if getattr(i, "send", None) is not None and i.send.sfid == "dc1" and i.exec_size == 1
        ]
        assert len(sends) >= 8, device
