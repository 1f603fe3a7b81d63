"""Conversions through `mov` between the 64-bit types (:q, :uq, :df) and the narrower ones:
wrap-around, sign and zero extension, saturation, float to integer (truncate, clamp, NaN to 0)
and rounding, checked against the IR interpreter (`xegen.ir`, the reference semantics) and
against rounding results worked out by hand.

XeHPC has 64-bit integer and double-precision ALUs; XeHPG moves :q/:uq too (IGC's address
arithmetic) but has no doubles, so the :df cases run on XeHPC only.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xegen.ir import evaluate, parse_expr, parse_type

from .harness import execute

THREADS = 4
LANES = 8  # 8 qwords are two GRFs on XeHPG, the most one operand may span
KEEP_DENORMALS = "(W) or (1|M0) cr0.0<1>:ud cr0.0<0;1,0>:ud 0x4C0:uw\nsync.nop null {A@1}\n"  # IR never flushes
IR_TYPES = {
    "q": "s64",
    "uq": "u64",
    "d": "s32",
    "ud": "u32",
    "w": "s16",
    "uw": "u16",
    "b": "s8",
    "ub": "u8",
    "df": "f64",
    "f": "f32",
    "hf": "f16",
}
DTYPES = {
    "q": np.int64,
    "uq": np.uint64,
    "d": np.int32,
    "ud": np.uint32,
    "w": np.int16,
    "uw": np.uint16,
    "b": np.int8,
    "ub": np.uint8,
    "df": np.float64,
    "f": np.float32,
    "hf": np.float16,
}
INT64_EDGES = [
    0,
    1,
    -1,
    2**63 - 1,
    -(2**63),
    2**31 - 1,
    -(2**31),
    2**31,
    2**32 - 1,
    2**32,
    -(2**32) - 1,
    255,
    -128,
    2**53 + 1,
    -(2**53 + 1),
    2**62 + 2**38 + 1,
    2**63 - 2**39,
    -(2**63 - 2**39) - 1,
]
UINT64_EDGES = [0, 1, 2**64 - 1, 2**63, 2**63 - 1, 2**63 + 2**39, 2**63 + 2**39 + 1, 2**32, 2**32 - 1, 65535]
FLOAT64_EDGES = [
    0.0,
    -0.0,
    1.5,
    -1.5,
    0.5,
    -0.9999,
    2.0**63,
    -(2.0**63),
    2.0**64,
    2.0**63 - 1024.0,
    2**31 - 0.5,
    -(2**31) - 0.5,
    2.0**31,
    4294967295.75,
    4294967296.0,
    65504.0,
    65520.0,
    -65520.0,
    65519.99,
    3.4028235677973366e38,
    3.4028235677973366e38 * 2,
    1.0 + 2.0**-24,
    1.0 + 2.0**-24 + 2.0**-60,
    1.0 + 2.0**-11 + 2.0**-40,
    2.0**-130,
    -(2.0**-149),
    1e-310,
    np.inf,
    -np.inf,
    np.nan,
    1e300,
    -1e300,
]
seeds = st.integers(0, 2**32 - 1)


def sample(seed: int, type_name: str) -> np.ndarray:
    """(THREADS, LANES) values of an Xe type: random ones with the type's edge values mixed in."""
    rng = np.random.default_rng(seed)
    shape = (THREADS, LANES)
    if type_name == "df":
        values = rng.standard_normal(shape) * 10.0 ** rng.integers(-40, 40, shape)
        edges = np.array(FLOAT64_EDGES)
    elif type_name in ("f", "hf"):
        dtype = DTYPES[type_name]
        with np.errstate(over="ignore"):  # large values become inf in hf, an edge value too
            values = (rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 6, shape)).astype(dtype)
        info = np.finfo(dtype)
        edges = np.array([0.0, -0.0, info.max, -info.max, info.tiny, np.inf, -np.inf, np.nan, -2.5], dtype)
    else:
        info = np.iinfo(DTYPES[type_name])
        values = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=DTYPES[type_name])
        extra = INT64_EDGES if type_name == "q" else UINT64_EDGES if type_name == "uq" else []
        edges = np.array(sorted({info.min, info.max, 0, 1, *extra}, key=abs), dtype=object).astype(DTYPES[type_name])
    values = values.astype(DTYPES[type_name])
    picks = rng.random(shape) < 0.3
    values[picks] = rng.choice(edges, size=int(picks.sum()))
    values.flat[: len(edges[:LANES])] = edges[:LANES]  # thread 0 always sees the first edges
    return values


def reference(expression: str, a: np.ndarray, source: str) -> np.ndarray:
    return evaluate(parse_expr(expression, {"a": parse_type(IR_TYPES[source])}), {"a": a})


def same_bits(got: np.ndarray, expected: np.ndarray) -> None:
    """Equal values with equal signs of zero; any NaN matches any NaN."""
    got, expected = np.asarray(got), np.asarray(expected).astype(got.dtype)
    if got.dtype.kind == "f":
        both_nan = np.isnan(got) & np.isnan(expected)
        bits = np.dtype(f"u{got.dtype.itemsize}")
        mismatch = (got.view(bits) != expected.view(bits)) & ~both_nan
    else:
        mismatch = got != expected
    assert not mismatch.any(), (
        f"{mismatch.sum()} lanes differ, e.g. got {got[mismatch][:4]}, expected "
        f"{expected[mismatch][:4]}, at (thread, lane) {np.argwhere(mismatch)[:4].tolist()}"
    )


# (destination, source, saturate, IR expression); the platforms are chosen by the types
CONVERSIONS = [
    # 64-bit integers to narrower integers wrap, or clamp with (sat)
    ("d", "q", False, "(s32)a"),
    ("ud", "q", False, "(u32)a"),
    ("w", "q", False, "(s16)a"),
    ("ub", "q", False, "(u8)a"),
    ("d", "uq", False, "(s32)a"),
    ("b", "uq", False, "(s8)a"),
    ("d", "q", True, "(sat s32)a"),
    ("ub", "q", True, "(sat u8)a"),
    ("uw", "uq", True, "(sat u16)a"),
    ("d", "uq", True, "(sat s32)a"),
    ("ud", "q", True, "(sat u32)a"),
    # between the 64-bit integers: the same bits, or clamped
    ("uq", "q", False, "(u64)a"),
    ("q", "uq", False, "(s64)a"),
    ("uq", "q", True, "(sat u64)a"),
    ("q", "uq", True, "(sat s64)a"),
    # narrower integers to 64 bits: sign or zero extension by the source's type
    ("q", "d", False, "(s64)a"),
    ("q", "ud", False, "(s64)a"),
    ("uq", "b", False, "(u64)a"),
    ("uq", "w", False, "(u64)a"),
    ("q", "uw", False, "(s64)a"),
    ("uq", "d", True, "(sat u64)a"),
    # 64-bit integers to float: rounded once, to nearest even
    ("f", "q", False, "(f32)a"),
    ("f", "uq", False, "(f32)a"),
    ("hf", "q", False, "(f16)a"),
    ("hf", "uq", False, "(f16)a"),
    ("df", "q", False, "(f64)a"),
    ("df", "uq", False, "(f64)a"),
    # doubles to integers: truncate toward zero, clamp to the range, NaN gives 0
    ("q", "df", False, "(s64)a"),
    ("uq", "df", False, "(u64)a"),
    ("d", "df", False, "(s32)a"),
    ("ud", "df", False, "(u32)a"),
    ("w", "df", False, "(s16)a"),
    ("ub", "df", False, "(u8)a"),
    ("b", "df", True, "(s8)a"),
    # doubles to and from the other floats
    ("f", "df", False, "(f32)a"),
    ("hf", "df", False, "(f16)a"),
    ("df", "f", False, "(f64)a"),
    ("df", "hf", False, "(f64)a"),
    ("df", "d", False, "(f64)a"),
    ("df", "ud", False, "(f64)a"),
]


def _platforms(dst: str, src: str) -> list[str]:
    return ["pvc"] if "df" in (dst, src) else ["dg2", "pvc"]


CASES = [
    pytest.param(hw, *case, id=f"{hw}-{'sat-' if case[2] else ''}{case[0]}-from-{case[1]}")
    for case in CONVERSIONS
    for hw in _platforms(case[0], case[1])
]


@pytest.mark.parametrize("hw, dst, src, saturate, expression", CASES)
@settings(max_examples=6, deadline=None)
@given(seed=seeds)
def test_mov_converts_like_the_ir(hw, dst, src, saturate, expression, seed):
    a = sample(seed, src)
    sat = "(sat)" if saturate else ""
    run = execute(f"{KEEP_DENORMALS}mov ({LANES}|M0) {sat}r10.0<1>:{dst} r20.0<1;1,0>:{src}", hw, inputs={20: a})
    with np.errstate(over="ignore", invalid="ignore"):
        expected = reference(expression, a, src)
    same_bits(run.read(10, DTYPES[dst], LANES), expected)


def test_saturated_double_clamps_to_zero_one():
    a = sample(5, "df")
    run = execute(
        f"{KEEP_DENORMALS}mov ({LANES}|M0) (sat)r10.0<1>:df r20.0<1;1,0>:df\n"
        f"mov ({LANES}|M0) (sat)r12.0<1>:f r20.0<1;1,0>:df",
        "pvc",
        inputs={20: a},
    )
    # clamped to [0, 1], NaN gives 0 (the sign of a zero result is not asserted)
    expected = np.where(np.isnan(a), 0.0, np.clip(a, 0.0, 1.0))
    np.testing.assert_array_equal(run.read(10, np.float64, LANES), expected)
    np.testing.assert_array_equal(run.read(12, np.float32, LANES), expected.astype(np.float32))


# Rounding worked out by hand (hex floats: the significand's bits are visible).  f32 keeps 24
# significant bits: above 2^63 its step is 2^40, between 2^62 and 2^63 it is 2^39.
HAND_ROUNDED = [
    # (source type, source value, f32 result in each of: nearest even, toward +inf, toward -inf, toward zero)
    ("uq", 2**63 + 2**39 + 1, ["0x1.000002p+63", "0x1.000002p+63", "0x1.0p+63", "0x1.0p+63"]),  # just past the tie
    ("uq", 2**63 + 2**39, ["0x1.0p+63", "0x1.000002p+63", "0x1.0p+63", "0x1.0p+63"]),  # the tie: even
    ("uq", 2**64 - 1, ["0x1.0p+64", "0x1.0p+64", "0x1.fffffep+63", "0x1.fffffep+63"]),
    ("q", 2**63 - 1, ["0x1.0p+63", "0x1.0p+63", "0x1.fffffep+62", "0x1.fffffep+62"]),
    ("q", -(2**63) + 1, ["-0x1.0p+63", "-0x1.fffffep+62", "-0x1.0p+63", "-0x1.fffffep+62"]),
    ("q", -(2**63), ["-0x1.0p+63"] * 4),
    ("q", 2**62 + 2**38 + 1, ["0x1.000002p+62", "0x1.000002p+62", "0x1.0p+62", "0x1.0p+62"]),
    ("q", -(2**24 + 1), ["-0x1.0p+24", "-0x1.0p+24", "-0x1.000002p+24", "-0x1.0p+24"]),
    ("q", 0, ["0x0.0p+0"] * 4),
    ("q", -1, ["-0x1.0p+0"] * 4),
]
MODE_BITS = [0x00, 0x10, 0x20, 0x30]  # cr0.0[5:4]


@pytest.mark.parametrize("mode", range(4), ids=["nearest-even", "toward-plus-inf", "toward-minus-inf", "toward-zero"])
def test_64_bit_integers_round_once_to_float_in_every_mode(mode):
    """A 64-bit integer rounded to float64 first and then to f32 can land on a tie it was not
    on (2^63 + 2^39 + 1 becomes 2^63 + 2^39): the conversion must round the exact value."""
    columns = {"q": [], "uq": []}
    for src, value, results in HAND_ROUNDED:
        columns[src].append((value, results[mode]))
    for src, cases in columns.items():
        a = np.zeros(LANES, DTYPES[src])
        a[: len(cases)] = [v for v, _ in cases]
        run = execute(
            f"(W) or (1|M0) cr0.0<1>:ud cr0.0<0;1,0>:ud 0x{MODE_BITS[mode]:X}:uw\nsync.nop null {{A@1}}\n"
            f"mov ({LANES}|M0) r10.0<1>:f r20.0<1;1,0>:{src}",
            "pvc",
            inputs={20: a},
        )
        got = run.read(10, np.float32, LANES)[:, : len(cases)]
        expected = np.array([float.fromhex(r) for _, r in cases], np.float32)
        same_bits(got, np.broadcast_to(expected, got.shape))


def test_double_results_below_the_f32_range_flush_unless_cr0_keeps_them():
    a = np.array([2.0**-130, -(2.0**-140), 1e-310, 2.0**-126, -0.0, 0.0, 1.0, 2.0**-149], np.float64)
    flushed = execute(f"mov ({LANES}|M0) r10.0<1>:f r20.0<1;1,0>:df", "pvc", inputs={20: a})
    kept = execute(f"{KEEP_DENORMALS}mov ({LANES}|M0) r10.0<1>:f r20.0<1;1,0>:df", "pvc", inputs={20: a})
    # 2^-130 and 2^-140 are f32 denormals (exact); 1e-310 is below half the smallest one
    same_bits(
        flushed.read(10, np.float32, LANES),
        np.broadcast_to(np.array([0.0, -0.0, 0.0, 2.0**-126, -0.0, 0.0, 1.0, 0.0], np.float32), (THREADS, LANES)),
    )
    same_bits(
        kept.read(10, np.float32, LANES),
        np.broadcast_to(
            np.array([2.0**-130, -(2.0**-140), 0.0, 2.0**-126, -0.0, 0.0, 1.0, 2.0**-149], np.float32), (THREADS, LANES)
        ),
    )
