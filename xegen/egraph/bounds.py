"""Bounds of IR expressions from declared variable ranges, for pricing an expression the way the
extractor prices it: the e-graph's interval analysis (rules/intervals.egg) lets a signed
division or remainder by 2^k of a non-negative dividend be a shift or a mask, so a cost that
ignores the ranges would charge a sign fix-up the extractor never pays.

The bounds are conservative in the same way as the rules': an operation whose exact result could
leave its type (wrap) gets its type's whole range.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .. import ir
from ..ir.expr import BINARY_OPS

Bounds = tuple[int, int]


def bounds_function(ranges: Mapping[str, range | tuple[int | None, int | None]]) -> Callable[[ir.Expr], Bounds]:
    """`bounds(e)`: inclusive bounds of every value of integer expression `e`, given the variables'
    ranges (a half-open `range`, or inclusive bounds with None for the type's end); memoized per
    call of this function."""
    ranges = {name: (r.start, r.stop - 1) if isinstance(r, range) else r for name, r in ranges.items()}
    memo: dict[ir.Expr, Bounds] = {}

    def bounds(e: ir.Expr) -> Bounds:
        if e not in memo:
            memo[e] = _clip(e.type, _bounds(e, bounds, ranges))
        return memo[e]

    return bounds


def _type_range(t) -> Bounds:
    return (0, 1) if t.is_bool else (t.min, t.max)


def _clip(t, b: Bounds | None) -> Bounds:
    """b when it lies in t's range (the exact result does not wrap), else t's whole range."""
    lo, hi = _type_range(t)
    if b is None or b[0] < lo or b[1] > hi:
        return lo, hi
    return b


def _bounds(e: ir.Expr, bounds, ranges) -> Bounds | None:
    if not (e.type.is_int or e.type.is_bool) or e.type.lanes != 1:
        return None
    if isinstance(e, ir.Var):
        lo, hi = ranges.get(e.name, (None, None))
        t_lo, t_hi = _type_range(e.type)
        return (t_lo if lo is None else max(lo, t_lo)), (t_hi if hi is None else min(hi, t_hi))
    if isinstance(e, (ir.IntImm, ir.BoolImm)):
        return int(e.value), int(e.value)
    if isinstance(e, ir.Binary) and BINARY_OPS[e.op][1] in ("compare", "logical"):
        return 0, 1
    if isinstance(e, ir.Binary):
        return _binary(e.op, bounds(e.a), e.b, bounds)
    if isinstance(e, ir.Ternary):
        (la, ha), (lb, hb), (lc, hc) = (bounds(x) for x in (e.a, e.b, e.c))
        if e.op == "add3":
            return la + lb + lc, ha + hb + hc
        products = [x * y for x in (lb, hb) for y in (lc, hc)]
        return la + min(products), ha + max(products)
    if isinstance(e, ir.Select):
        (la, ha), (lb, hb) = bounds(e.true_value), bounds(e.false_value)
        return min(la, lb), max(ha, hb)
    if isinstance(e, ir.Cast) and not e.value.type.is_float:
        lo, hi = bounds(e.value)
        if e.saturate:
            t_lo, t_hi = _type_range(e.type)
            return max(t_lo, min(lo, t_hi)), max(t_lo, min(hi, t_hi))
        return lo, hi  # kept only when the target type holds it (_clip)
    if isinstance(e, ir.Unary) and e.op == "neg":
        lo, hi = bounds(e.a)
        return -hi, -lo
    return None


def _binary(op: str, a: Bounds, b_expr: ir.Expr, bounds) -> Bounds | None:
    (la, ha), (lb, hb) = a, bounds(b_expr)
    if op == "add":
        return la + lb, ha + hb
    if op == "sub":
        return la - hb, ha - lb
    if op == "mul":
        products = [x * y for x in (la, ha) for y in (lb, hb)]
        return min(products), max(products)
    if op == "min":
        return min(la, lb), min(ha, hb)
    if op == "max":
        return max(la, lb), max(ha, hb)
    if lb != hb:
        return None
    c = lb  # a constant right operand (by the bounds, so `x / (2 + 2)` counts too)
    if op == "div" and c > 0:
        return _truncating_div(la, c), _truncating_div(ha, c)  # truncation is monotone
    if op == "mod" and c > 0:
        return min(0, max(la, 1 - c)), max(0, min(ha, c - 1))
    if op == "and" and c >= 0:
        return 0, (min(ha, c) if la >= 0 else c)
    return None


def _truncating_div(x: int, c: int) -> int:
    return x // c if x >= 0 else -(-x // c)
