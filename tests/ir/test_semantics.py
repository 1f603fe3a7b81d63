"""The interpreter against two independent oracles (numpy bit patterns, Python integers), and
the documented edge cases."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xegen import EvaluationError, ir
from xegen.ir import semantics
from xegen.ir.types import INT_TYPES, S32, U32

from . import numpy_oracle, oracle
from .strategies import COMPARE, INT_BINARY, deep_int_expr, edge_values, int_values


def max_depth(e) -> int:
    return 1 + max((max_depth(c) for c in ir.children(e)), default=0)


@st.composite
def expression_and_samples(draw):
    e = draw(deep_int_expr())
    variables = ir.free_vars(e)
    samples = 24
    env = {}
    for v in variables:
        edges = edge_values(v.type)
        values = edges + draw(
            st.lists(int_values(v.type), min_size=samples - len(edges), max_size=samples - len(edges))
        )
        values = draw(st.permutations(values))
        env[v.name] = values
    return e, env, samples


@settings(max_examples=300, deadline=None)
@given(expression_and_samples())
def test_interpreter_matches_python_integer_oracle(case):
    e, env, samples = case
    assert max_depth(e) >= 7  # the root plus six levels of operators
    arrays = {
        name: np.array(values, dtype=semantics.numpy_dtype(v.type))
        for v in ir.free_vars(e)
        for name, values in env.items()
        if name == v.name
    }
    got = ir.evaluate(e, arrays) if arrays else ir.evaluate(e)
    got = np.broadcast_to(got, (samples,))
    for i in range(samples):
        row = {name: values[i] for name, values in env.items()}
        expected = oracle.evaluate(e, row)
        assert int(got[i]) == int(expected), f"sample {i}: {row} in {e}"


@settings(max_examples=300, deadline=None)
@given(expression_and_samples())
def test_interpreter_matches_numpy_bit_pattern_oracle(case):
    e, env, samples = case
    assert max_depth(e) >= 7
    types = {v.name: v.type for v in ir.free_vars(e)}
    arrays = {name: np.array(values, dtype=semantics.numpy_dtype(types[name])) for name, values in env.items()}
    patterns = {name: numpy_oracle.pattern(values, types[name]) for name, values in env.items()}
    got = np.broadcast_to(ir.evaluate(e, arrays), (samples,))
    expected = np.broadcast_to(numpy_oracle.evaluate(e, patterns), (samples,))
    assert [int(v) for v in got] == numpy_oracle.as_python(expected, e.type), f"{env} in {e}"


def test_random_expressions_can_hold_every_integer_operator():
    """The operator lists `deep_int_expr` draws from are the IR's: no operator is left out."""
    binary = set(INT_BINARY) | {"shl", "shr"} | set(COMPARE) | {"land", "lor"}
    assert binary == set(ir.expr.BINARY_OPS)
    integer_unary = set(ir.expr.UNARY_OPS) - set(ir.expr.MATH_OPS)  # the math functions take floats only
    assert integer_unary == {"neg", "bitnot", "not"} and set(ir.expr.TERNARY_OPS) == {"add3", "mad"}


def every_pair(values: list[int]) -> tuple[list[int], list[int]]:
    return [x for x in values for _ in values], [y for _ in values for y in values]


@pytest.mark.parametrize("t", INT_TYPES, ids=str)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_every_operator_of_every_type_on_all_pairs_of_edge_values(t, data):
    """Each operator, at each integer type, on every pair (triple) of the type's edge values and
    some random ones, against the numpy oracle: the deep random expressions above reach some
    (operator, type) pairs only rarely (a tree keeps one type for long stretches)."""
    values = edge_values(t) + data.draw(st.lists(int_values(t), min_size=6, max_size=6))
    x, y = ir.var("x", t), ir.var("y", t)
    cases = [(ir.Unary(op, x), {"x": values}) for op in ("neg", "bitnot")]
    pairs = dict(zip("xy", every_pair(values), strict=True))
    cases += [(ir.Binary(op, x, y), pairs) for op in ir.expr.BINARY_OPS if op not in ("land", "lor")]
    for count_type in INT_TYPES:  # shift counts of every type: their low bits count
        counts = edge_values(count_type) + list(range(t.bits - 2, t.bits + 3))
        xs, cs = [v for v in values for _ in counts], [c for _ in values for c in counts]
        for op in ("shl", "shr"):
            cases.append((ir.Binary(op, x, ir.var("c", count_type)), {"x": xs, "c": cs}))
    small = values[:9]
    triples = {
        "x": [a for a in small for _ in small for _ in small],
        "y": [b for _ in small for b in small for _ in small],
        "z": [c for _ in small for _ in small for c in small],
    }
    cases += [(ir.Ternary(op, x, y, ir.var("z", t)), triples) for op in ir.expr.TERNARY_OPS]
    cases += [(ir.Cast(to, x, saturate), {"x": values}) for to in INT_TYPES for saturate in (False, True)]
    cases += [(ir.Select(ir.Binary("lt", x, y), x, y), pairs)]
    for e, env in cases:
        types = {v.name: v.type for v in ir.free_vars(e)}
        arrays = {
            n: np.array([int(v) for v in vs], dtype=object).astype(semantics.numpy_dtype(types[n]))
            for n, vs in env.items()
        }
        got = [int(v) for v in ir.evaluate(e, arrays)]
        patterns = {n: numpy_oracle.pattern(vs, types[n]) for n, vs in env.items()}
        assert got == numpy_oracle.as_python(numpy_oracle.evaluate(e, patterns), e.type), str(e)


@pytest.mark.parametrize(
    "text, expected",
    [
        # worked by hand from docs/ir.md, one per rule the bit-pattern oracle restates
        ("(s8)-128:s8 / (s8)-1", 128),
        ("div.s8(-128:s8, -1:s8)", -128),
        ("mod.s8(-128:s8, -1:s8)", 0),
        ("div.u16(7:u16, 0:u16)", 65535),
        ("mod.s64(-7:s64, 0:s64)", -7),
        ("div.s64(-9223372036854775808:s64, -1:s64)", -9223372036854775808),
        ("shr.s16(-32768:s16, 17:s16)", -16384),
        ("shr.u16(32768:u16, 17:u16)", 16384),
        ("shl.s8(1:s8, 7:s8)", -128),
        ("(sat u8)-1", 0),
        ("(sat s8)200:u8", 127),
        ("(sat u32)-9223372036854775808:s64", 0),
        ("(sat s64)18446744073709551615:u64", 9223372036854775807),
        ("(u16)-1:s8", 65535),
        ("min.u64(18446744073709551615:u64, 1:u64)", 1),
        ("mad.s8(1:s8, 16:s8, 8:s8)", -127),
    ],
)
def test_the_numpy_oracle_knows_the_rules(text, expected):
    e = ir.parse_expr(text)
    assert numpy_oracle.as_python(numpy_oracle.evaluate(e, {}), e.type) == [expected]


def scalar(text: str, **env):
    return ir.evaluate(ir.parse_expr(text), env).item()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("-7 / 2", -3),
        ("-7 % 2", -1),
        ("7 / -2", -3),
        ("7 % -2", 1),  # truncation toward zero
        ("5 / 0", -1),
        ("5 % 0", 5),
        ("-5 % 0", -5),  # division by zero is defined
        ("5:u32 / 0:u32", 4294967295),
        ("(s32)-2147483648 / -1", -2147483648),
        ("(s32)-2147483648 % -1", 0),
        ("1 << 33", 2),
        ("-8 >> 1", -4),
        ("4294967288:u32 >> 1:u32", 2147483644),
        ("1 << -1", -2147483648),
        ("2147483647 + 1", -2147483648),
        ("(u8)300", 44),
        ("(sat u8)300", 255),
        ("(sat s8)-300", -128),
        ("(s32)3.9", 3),
        ("(s32)-3.9", -3),
        ("(s32)1e20", 2147483647),
        ("(u32)-1.5", 0),
        ("(s32)nan", 0),
        ("(u64)-1", 18446744073709551615),
        ("(s8)(u64)18446744073709551615", -1),
        ("(sat s64)18446744073709551615:u64", 9223372036854775807),
        ("(s64)1e30", 9223372036854775807),
        ("(u64)1e30", 18446744073709551615),
        ("min(-1, 1:u32)", 1),
        ("-1 < 1:u32", False),
        ("(s16)32767 + (s16)1", 32768),  # s16 operands promote to s32
        ("(f16)1.0 && -1e-10", True),  # each && operand is a bool on its own: no f16 rounding to -0
        ("(f16)0.0 || 1e-10", True),
    ],
)
def test_documented_edge_cases(text, expected):
    assert scalar(text) == expected


@pytest.mark.parametrize("t", INT_TYPES, ids=str)
def test_wrap_around_at_every_width(t):
    x = ir.var("x", t)
    e = ir.Binary("add", x, ir.IntImm(1, t))
    assert ir.evaluate(e, {"x": t.max}).item() == t.min
    e = ir.Binary("sub", x, ir.IntImm(1, t))
    assert ir.evaluate(e, {"x": t.min}).item() == t.max
    e = ir.Binary("mul", x, x)
    assert ir.evaluate(e, {"x": t.max}).item() == oracle.wrap(t.max * t.max, t)


def struct_round(value: float, code: str) -> float:
    """Round through the C library's conversion (struct), independent of numpy."""
    return struct.unpack(code, struct.pack(code, value))[0]


def bf16_exact(value: float) -> float:
    """Round to bf16 with exact rational arithmetic: nearest, ties to even."""
    if not math.isfinite(value) or value == 0:
        return value
    return oracle.round_exact(Fraction(value), "bf16")


@settings(max_examples=400, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=True, width=64))
def test_float_rounding_matches_independent_implementations(value):
    assert semantics.round_float(value, ir.F32) == struct_round(value, "f") or np.isnan(value)
    with np.errstate(all="ignore"):
        assert semantics.round_float(value, ir.F16) == struct_round(value, "e") if abs(value) < 65520 else True
    assert semantics.round_float(value, ir.BF16) == bf16_exact(value)


@settings(max_examples=200, deadline=None)
@given(st.floats(width=32, allow_nan=False), st.floats(width=32, allow_nan=False))
def test_f16_and_bf16_arithmetic_round_once(a, b):
    for t, rounder in ((ir.F16, lambda v: struct_round(v, "e") if abs(v) < 65520 else None), (ir.BF16, bf16_exact)):
        x, y = semantics.round_float(a, t), semantics.round_float(b, t)
        if rounder(x) is None or rounder(y) is None or not np.isfinite(x * y) or not np.isfinite(x + y):
            continue
        got_add = ir.evaluate(ir.Binary("add", ir.FloatImm(x, t), ir.FloatImm(y, t))).item()
        got_mul = ir.evaluate(ir.Binary("mul", ir.FloatImm(x, t), ir.FloatImm(y, t))).item()
        expected_add, expected_mul = (
            rounder(float(Fraction(x) + Fraction(y))),
            rounder(float(Fraction(x) * Fraction(y))),
        )
        if expected_add is not None:
            assert got_add == expected_add
        if expected_mul is not None:
            assert got_mul == expected_mul


def test_float_min_max_ignore_nan():
    assert scalar("min(nan, 2.0)") == 2.0
    assert scalar("max(1.0, nan)") == 1.0


def mad_value(a: float, b: float, c: float, t: ir.Type) -> float:
    e = ir.Ternary("mad", ir.FloatImm(a, t), ir.FloatImm(b, t), ir.FloatImm(c, t))
    return ir.evaluate(e).item()


def exact_mad(a: float, b: float, c: float, t: ir.Type) -> float:
    return oracle.round_exact(Fraction(a) + Fraction(b) * Fraction(c), t.kind)


F32_MAX = float((2 - Fraction(1, 2**23)) * 2**127)
BF16_MAX = float((2 - Fraction(1, 2**7)) * 2**127)

# (a, b, c, type, a + b*c rounded once, worked out by hand): ties of b*c broken by a tiny a,
# sums that an f64 rounding would put exactly on a tie, both signs, subnormals, overflow.
FUSED_CASES = [
    # 2^24+2 + (1+2^-23)(1-2^-23) = 2^24+3 - 2^-46: just below the tie 2^24+3, so down to 2^24+2
    (2.0**24 + 2, 1 + 2.0**-23, 1 - 2.0**-23, ir.F32, 2.0**24 + 2),
    # 2^24+2 - (1+2^-23)(1-2^-23) = 2^24+1 + 2^-46: just above the tie 2^24+1, so up to 2^24+2
    (2.0**24 + 2, -(1 + 2.0**-23), 1 - 2.0**-23, ir.F32, 2.0**24 + 2),
    (-(2.0**24 + 2), 1 + 2.0**-23, -(1 - 2.0**-23), ir.F32, -(2.0**24 + 2)),
    # 1 + 1.0003452 * 5.9584075e-08 = 1 + 2^-24 + 4e-18 (in f32): above the tie, so 1 + 2^-23
    (1.0, float(np.float32(1.0003452)), float(np.float32(5.9584075e-08)), ir.F32, 1 + 2.0**-23),
    # (1 + 2^-12)^2 - 1 = 2^-11 + 2^-24 exactly (unfused: 2^-11)
    (-1.0, 1 + 2.0**-12, 1 + 2.0**-12, ir.F32, 2.0**-11 + 2.0**-24),
    # 18631 * 1801*2^103 = 2^128 - 2^103, the tie between the largest f32 and 2^128: a tiny
    # negative a keeps the largest f32; a tiny positive one (or none: ties to even) overflows
    (-(2.0**-149), 18631.0, 1801 * 2.0**103, ir.F32, F32_MAX),
    (2.0**-149, 18631.0, 1801 * 2.0**103, ir.F32, math.inf),
    (0.0, 18631.0, 1801 * 2.0**103, ir.F32, math.inf),
    (2.0**-149, -18631.0, 1801 * 2.0**103, ir.F32, -F32_MAX),
    # subnormals: 2^-126 * 2^-24 (1 + 2^-23) = 2^-150 + 2^-173, above half the smallest subnormal
    (0.0, 2.0**-126, 2.0**-24 * (1 + 2.0**-23), ir.F32, 2.0**-149),
    (0.0, 2.0**-126, 2.0**-24, ir.F32, 0.0),  # exactly half of it: ties to even, zero
    (-(2.0**-149), 2.0**-126, 2.0**-24 * (1 + 2.0**-23), ir.F32, -0.0),  # 2^-173 - 2^-150
    # bf16: -1.59375 * 7516192768 = -11979243520 is a tie between two bf16 values; the tiny
    # negative a breaks it away from the even one (-11945377792) to -12012486656
    (-2.971649718878743e-35, -1.59375, 7516192768.0, ir.BF16, -12012486656.0),
    (2.971649718878743e-35, -1.59375, 7516192768.0, ir.BF16, -11945377792.0),
    # 7 * 73*2^119 = 2^128 - 2^119, the tie between the largest bf16 and 2^128
    (-(2.0**-133), 7.0, 73 * 2.0**119, ir.BF16, BF16_MAX),
    (2.0**-133, 7.0, 73 * 2.0**119, ir.BF16, math.inf),
    # f16: 63 * 1040 = 65520, the tie between 65504 and 2^16
    (-(2.0**-24), 63.0, 1040.0, ir.F16, 65504.0),
    (2.0**-24, 63.0, 1040.0, ir.F16, math.inf),
    (2.0**-24, -63.0, -1040.0, ir.F16, math.inf),
    (0.0, 2.0**-14, 3 * 2.0**-11, ir.F16, 2.0**-23),  # 1.5 * 2^-24 ties to the even 2 * 2^-24
]


@pytest.mark.parametrize("a, b, c, t, expected", FUSED_CASES)
def test_float_mad_is_rounded_once(a, b, c, t, expected):
    assert exact_mad(a, b, c, t) == expected  # the hand-worked value is the exact rounding
    got = mad_value(a, b, c, t)
    assert got == expected and math.copysign(1, got) == math.copysign(1, expected)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from((ir.F16, ir.BF16, ir.F32)),
    st.lists(st.floats(width=32, allow_nan=False), min_size=3, max_size=3),
    st.lists(st.integers(-40, 40), min_size=3, max_size=3),
)
def test_float_mad_matches_exact_rounding(t, values, scales):
    a, b, c = (semantics.round_float(v * 2.0**k, t) for v, k in zip(values, scales, strict=True))
    if not all(math.isfinite(v) for v in (a, b, c)):
        return
    expected = exact_mad(a, b, c, t)
    got = mad_value(a, b, c, t)
    assert got == expected or (got == 0 and expected == 0), (a, b, c, t)


def test_f64_mad_rounds_the_product_first():
    # (1 + 2^-52)(1 - 2^-52) = 1 - 2^-104 rounds to 1.0 in f64; minus 1 that is 0 (fused: -2^-104)
    assert mad_value(-1.0, 1 + 2.0**-52, 1 - 2.0**-52, ir.F64) == 0.0


def test_large_integers_convert_to_narrow_floats_with_one_rounding():
    # 2^60 + 2^52 + 1 lies just above a bf16 tie (2^60 + 2^52): one rounding goes up to
    # 2^60 + 2^53; rounding through f64 first would land on the tie and go to the even 2^60
    value = (1 << 60) + (1 << 52) + 1
    got = ir.evaluate(ir.Cast(ir.BF16, ir.IntImm(value, ir.S64))).item()
    assert got == oracle.round_exact(Fraction(value), "bf16") == float((1 << 60) + (1 << 53))
    assert ir.const(value, ir.BF16).value == float((1 << 60) + (1 << 53))  # so does a literal


def test_vectors_evaluate_lane_by_lane():
    e = ir.parse_expr("broadcast(a, 4) * shuffle<3,2,1,0>(broadcast(b, 2), broadcast(c, 2))")
    got = ir.evaluate(e, {"a": 2, "b": 5, "c": 7})
    assert got.tolist() == [14, 14, 10, 10]
    many = ir.evaluate(e, {"a": np.array([1, 2], np.int32), "b": 1, "c": 3})
    assert many.tolist() == [[3, 3, 1, 1], [6, 6, 2, 2]]


def test_unbound_and_out_of_range_variables_are_errors():
    with pytest.raises(EvaluationError, match="variable 'a' has no value"):
        ir.evaluate(ir.parse_expr("a + 1"))
    with pytest.raises(EvaluationError, match=r"a = -1 does not fit u32 \[0, 4294967295\]"):
        ir.evaluate(ir.parse_expr("a:u32 + 1:u32"), {"a": -1})


@pytest.mark.parametrize(
    "binding, t, words",
    [
        (np.array([3, 300]), "u8", r"x = 300 does not fit u8 \[0, 255\]"),
        (np.array([-129, 5], np.int64), "s8", r"x = -129 does not fit s8"),
        (np.array([1.0, 1.7]), "u8", r"x = 1.7 is not an integer \(u8\)"),
        (np.array([np.nan]), "s32", "is not an integer"),
        (np.array([2**63], np.uint64), "s64", "does not fit s64"),
        (np.array([0, 1, 5]), "bool", r"x = 5 is not a bool"),
        (5, "bool", r"x = 5 is not a bool"),
        (np.array([1, 2]), "s32x4", r"needs 4 lanes"),
        (1, "ptr", r"'x' is a buffer \(ptr\)"),
    ],
)
def test_bad_bindings_are_errors_for_arrays_as_for_numbers(binding, t, words):
    with pytest.raises(EvaluationError, match=words):
        ir.evaluate(ir.var("x", t), {"x": binding})


def test_bindings_that_fit_are_converted():
    assert ir.evaluate(ir.var("x", "u8"), {"x": np.array([0.0, 255.0])}).tolist() == [0, 255]
    assert ir.evaluate(ir.var("x", "u64"), {"x": [2**64 - 1]}).tolist() == [2**64 - 1]
    assert ir.evaluate(ir.var("x", "bool"), {"x": np.array([0, 1])}).tolist() == [False, True]
    assert ir.evaluate(ir.var("x", "s32x4"), {"x": 7}).tolist() == [7, 7, 7, 7]
    # an integer beyond f64's 53 bits rounds once to f32, as a cast of it does
    value = (1 << 60) + (1 << 36) + 1
    expected = oracle.round_exact(Fraction(value), "f32")
    assert expected == float((1 << 60) + (1 << 37))
    assert ir.evaluate(ir.var("x", "f32"), {"x": value}).item() == expected
    assert ir.evaluate(ir.var("x", "f32"), {"x": np.array([value], np.int64)}).tolist() == [expected]


def test_shift_count_of_another_type_uses_low_bits():
    e = ir.Binary("shl", ir.IntImm(1, U32), ir.IntImm(-31, S32))  # -31 & 31 == 1
    assert ir.evaluate(e).item() == 2
