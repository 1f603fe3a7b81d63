"""The math unit's float functions in the IR: typing, text form, interpreter values."""

from __future__ import annotations

import numpy as np
import pytest

from xegen import ir
from xegen.ir.expr import IRTypeError

X = np.array([-2.0, -0.0, 0.0, 0.25, 1.0, 3.0, 1e30, np.inf], dtype=np.float32)


@pytest.mark.parametrize(
    "op, expected",
    [
        ("exp2", [0.25, 1, 1, 2**0.25, 2, 8, np.inf, np.inf]),
        ("log2", [np.nan, -np.inf, -np.inf, -2, 0, np.log2(3.0), np.log2(1e30), np.inf]),
        ("sqrt", [np.nan, -0.0, 0, 0.5, 1, np.sqrt(3.0), np.sqrt(1e30), np.inf]),
        ("inv", [-0.5, -np.inf, np.inf, 4, 1, 1 / 3, 1e-30, 0]),
    ],
)
def test_values_are_rounded_once_to_f32(op, expected):
    x = ir.var("x", "f32x8")
    got = ir.evaluate(ir.unary(op, x), {"x": X})
    np.testing.assert_array_equal(got, np.asarray(expected, dtype=np.float64).astype(np.float32))
    assert got.dtype == np.float32


def test_text_form_reads_back():
    x = ir.var("x", "f32")
    e = ir.unary("inv", ir.unary("exp2", x * 2.0) + 1.0) - ir.unary("sqrt", ir.unary("log2", x))
    text = ir.format_expr(e)
    assert text == "inv(exp2(x:f32 * 2.0) + 1.0) - sqrt(log2(x:f32))"
    assert ir.parse_expr(text) == e


def test_float_operands_only():
    with pytest.raises(IRTypeError, match="does not apply to s32"):
        ir.unary("exp2", ir.var("i", "s32"))
    assert ir.unary("log2", ir.var("h", "f16")).type == ir.F16
