"""Constant folding with the IR's own semantics: wrap-around, truncating division, shifts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xegen import ir
from xegen.passes import fold_constants


@pytest.mark.parametrize(
    "text, folded",
    [
        ("(s32)2147483647 + 1", "-2147483648"),  # wraps at the type's width
        ("-7 / 2", "-3"),  # truncates toward zero
        ("-7 % 2", "-1"),
        ("1 << 33", "2"),  # the count's low bits
        ("3 < 4 && x", "x"),  # only the constant part folds; `true && x` is not rewritten
    ],
)
def test_folded_constants(text, folded):
    result = fold_constants(ir.parse_expr(text))
    expected = ir.parse_expr(folded)
    assert ir.evaluate(result, {"x": True}) == ir.evaluate(expected, {"x": True})
    assert not any(
        isinstance(n, ir.Binary) and all(isinstance(c, ir.IntImm) for c in (n.a, n.b)) for n in ir.walk(result)
    )


@st.composite
def constant_expressions(draw, depth: int = 3) -> ir.Expr:
    """Integer arithmetic on constants of several types, extremes included (no division by 0)."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        t = draw(st.sampled_from([ir.S32, ir.U32, ir.S64, ir.U8, ir.S16]))
        low, high = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.is_signed else (0, (1 << t.bits) - 1)
        return ir.IntImm(draw(st.sampled_from([low, high, 0, 1, -1 if t.is_signed else 2, 7])), t)
    op = draw(st.sampled_from(["add", "sub", "mul", "div", "mod", "min", "max", "shl", "shr", "and", "xor", "lt"]))
    a, b = draw(constant_expressions(depth - 1)), draw(constant_expressions(depth - 1))
    if op in ("div", "mod") and ir.evaluate(b, {}) == 0:
        b = ir.const(3)
    return ir.binary(op, a, b)


@settings(max_examples=200, deadline=None)
@given(constant_expressions())
def test_folding_a_constant_expression_gives_its_value(e):
    folded = fold_constants(e)
    assert isinstance(folded, (ir.IntImm, ir.BoolImm)) and folded.type == e.type
    assert ir.evaluate(folded, {}) == ir.evaluate(e, {})
