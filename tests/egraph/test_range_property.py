"""simplify() against the interpreter on index arithmetic with declared ranges: the range-guarded
rules (div/mod, comparisons, min/max, magic-number division) fire on these, unlike on random
expressions with huge constants.  Ranges sit anywhere: negative, around zero, and against the
type's extremes, where a missing no-wrap guard would show."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen import ir
from xegen.egraph import simplify
from xegen.ir.types import S32, S64, U32

from .helpers import same_values

NAMES = ("x", "y", "z")
SMALL = (1, 2, 3, 4, 7, 8, 16, 56, 64, 100, 255, 1000, 4096, 65536)


@st.composite
def declared_range(draw, t: ir.Type) -> range:
    """A range of t: small and negative, around zero, or against one of the type's ends."""
    size = draw(st.integers(1, 5000))
    where = draw(st.sampled_from(("zero", "negative", "top", "bottom", "wide")))
    if where == "zero":
        lo = draw(st.integers(0, 100))
    elif where == "negative":
        lo = draw(st.integers(-5000, -1))
    elif where == "top":
        lo = t.max + 1 - size - draw(st.integers(0, 50))
    elif where == "bottom":
        lo = t.min + draw(st.integers(0, 50))
    else:
        lo, size = draw(st.integers(t.min, 0)), draw(st.integers(1, t.max))
    lo = max(lo, t.min)
    return range(lo, min(lo + size, t.max + 1))


@st.composite
def index_expr(draw, t: ir.Type, depth: int) -> ir.Expr:
    if depth == 0 or draw(st.integers(0, 4)) == 0:
        if draw(st.integers(0, 2)):
            return ir.Var(draw(st.sampled_from(NAMES)), t)
        value = draw(st.sampled_from(SMALL)) * (-1 if t.is_signed and draw(st.booleans()) else 1)
        return ir.IntImm(value, t)
    op = draw(st.sampled_from(("add", "add", "sub", "mul", "div", "mod", "min", "max", "shl", "shr", "and", "select")))
    a = draw(index_expr(t, depth - 1))
    if op in ("mul", "div", "mod", "shl", "shr", "and"):
        c = draw(st.sampled_from(SMALL)) if op not in ("shl", "shr") else draw(st.integers(0, 5))
        if op in ("div", "mod") and t.is_signed and draw(st.integers(0, 5)) == 0:
            c = -c
        return ir.Binary(op, a, ir.IntImm(c, t))
    b = draw(index_expr(t, depth - 1))
    if op == "select":
        cond = ir.Binary(draw(st.sampled_from(("lt", "le", "eq", "ne"))), a, draw(index_expr(t, 1)))
        return ir.Select(cond, a, b)
    return ir.Binary(op, a, b)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_property_ranged_index_arithmetic_is_equivalent_and_never_costlier(data):
    t = data.draw(st.sampled_from([S32, U32, S64]))
    e = data.draw(index_expr(t, data.draw(st.integers(1, 4))))
    if data.draw(st.booleans()):  # a comparison of two index expressions (masks, bounds checks)
        e = ir.Cast(S32, ir.Binary(data.draw(st.sampled_from(("lt", "le"))), e, data.draw(index_expr(t, 2))))
    names = sorted({v.name for v in ir.walk(e) if isinstance(v, ir.Var)})
    ranges = {name: data.draw(declared_range(t)) for name in names}
    hw = data.draw(st.sampled_from(["xelp", "xehpg", "xehpc"]))
    r = simplify(e, hw, ranges=ranges)
    ok, counterexample = same_values(e, r.result, ranges, n=256)
    assert ok, (str(e), ranges, str(r.result), counterexample)
    assert r.cost_after <= r.cost_before
