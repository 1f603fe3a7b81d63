"""bounds.bounds_function: every value an expression takes on inputs within the variables' ranges
lies within its bounds (the interpreter decides), for random expressions of every integer type."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen import ir
from xegen.egraph.bounds import bounds_function
from xegen.ir.types import INT_TYPES

from ..ir.strategies import int_expr
from .helpers import sample_env


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_every_value_lies_within_the_bounds(data):
    t = data.draw(st.sampled_from(INT_TYPES))
    e = data.draw(int_expr(t, data.draw(st.integers(1, 4))))
    variables = sorted({v for v in ir.walk(e) if isinstance(v, ir.Var)}, key=lambda v: v.name)
    ranges = {}
    for v in variables:
        if data.draw(st.booleans()):
            lo = min(v.type.max, max(v.type.min, data.draw(st.integers(-300, 300))))
            ranges[v.name] = range(lo, min(v.type.max + 1, lo + data.draw(st.integers(1, 3000))))
    env = sample_env(variables, ranges, n=200)
    bounds = bounds_function(ranges)
    for sub in ir.walk(e):
        if isinstance(sub, ir.Expr) and sub.type.is_int and sub.type.lanes == 1:
            lo, hi = bounds(sub)
            values = np.asarray(ir.evaluate(sub, env)).astype(object)
            assert lo <= values.min() and values.max() <= hi, (str(sub), lo, hi, ranges)


def test_a_sum_that_may_wrap_gets_its_types_range():
    a = ir.var("a")
    bounds = bounds_function({"a": range(0, 1 << 31)})
    assert bounds(a + 1) == (ir.S32.min, ir.S32.max)
    assert bounds(a / 8) == (0, ((1 << 31) - 1) // 8)
    assert bounds_function({"a": (-7, 7)})(a % 4) == (-3, 3)
