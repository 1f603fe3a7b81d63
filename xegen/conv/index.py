"""Index arithmetic for the builder: IR expressions that carry a known value range.

`Idx` pairs an s32 IR expression with bounds [lo, hi] on its value (over all threads, loop
iterations and lanes).  The builder uses the bounds only to leave out masks that can never be
false (`0 <= ih` when there is no padding); the expressions themselves stay plain, so the
e-graph optimizer sees `ih = oh*2 + kh - 3` as written.  Operations with an identity operand
(`x*1`, `x+0`, `x/1`) are not emitted, and constants are folded, so the IR does not carry noise.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..ir import Expr, IntImm, Var, const, logical_and
from ..ir.expr import Shuffle
from ..ir.types import S32, Type


@dataclass(frozen=True)
class Idx:
    expr: Expr
    lo: int
    hi: int

    @staticmethod
    def const(value: int) -> Idx:
        return Idx(const(value, S32), value, value)

    @staticmethod
    def of(var: Var, lo: int, hi: int) -> Idx:
        return Idx(var, lo, hi)

    @property
    def is_const(self) -> bool:
        return isinstance(self.expr, IntImm)

    @property
    def lanes(self) -> int:
        return self.expr.type.lanes

    # -- arithmetic ----------------------------------------------------------------------------
    def __add__(self, other: Idx | int) -> Idx:
        other = _idx(other)
        if other.is_const and other.lo == 0:
            return self
        if self.is_const and self.lo == 0:
            return other
        if self.is_const and other.is_const:
            return Idx.const(self.lo + other.lo)
        if other.is_const and other.lo < 0:  # print x - 3, not x + -3
            return Idx(self.expr - (-other.lo), self.lo + other.lo, self.hi + other.hi)
        return Idx(self.expr + other.expr, self.lo + other.lo, self.hi + other.hi)

    __radd__ = __add__

    def __sub__(self, other: Idx | int) -> Idx:
        other = _idx(other)
        if other.is_const:
            return self + (-other.lo)
        return Idx(self.expr - other.expr, self.lo - other.hi, self.hi - other.lo)

    def __rsub__(self, other: int) -> Idx:
        return _idx(other) - self

    def __mul__(self, other: Idx | int) -> Idx:
        other = _idx(other)
        if other.is_const:
            c = other.lo
            if c == 0:
                return Idx.const(0)
            if c == 1:
                return self
            if self.is_const:
                return Idx.const(self.lo * c)
            low, high = sorted((self.lo * c, self.hi * c))
            return Idx(self.expr * c, low, high)
        if self.is_const:
            return other * self
        corners = [a * b for a in (self.lo, self.hi) for b in (other.lo, other.hi)]
        return Idx(self.expr * other.expr, min(corners), max(corners))

    __rmul__ = __mul__

    def div(self, c: int) -> Idx:
        """Truncating division by a positive constant (monotonic, so bounds divide too)."""
        if c == 1:
            return self
        if self.is_const:
            return Idx.const(trunc_div(self.lo, c))
        return Idx(self.expr / c, trunc_div(self.lo, c), trunc_div(self.hi, c))

    def mod(self, c: int) -> Idx:
        """Truncating remainder by a positive constant."""
        if c == 1:
            return Idx.const(0)
        if self.is_const:
            return Idx.const(self.lo - trunc_div(self.lo, c) * c)
        if self.lo >= 0:
            return Idx(self.expr % c, 0, min(self.hi, c - 1))
        return Idx(self.expr % c, -(c - 1), c - 1)

    # -- masks ---------------------------------------------------------------------------------
    def below(self, bound: int) -> Expr | None:
        """`self < bound`, or None when that always holds."""
        return None if self.hi < bound else self.expr < bound

    def at_least(self, bound: int) -> Expr | None:
        """`bound <= self`, or None when that always holds."""
        return None if self.lo >= bound else bound <= self.expr

    def in_range(self, low: int, high: int) -> list[Expr]:
        """The conditions for `low <= self < high` that are not always true."""
        return [m for m in (self.at_least(low), self.below(high)) if m is not None]

    def divisible_by(self, c: int) -> list[Expr]:
        """`self % c == 0`, unless c is 1."""
        if c == 1:
            return []
        return [(self.expr % c).eq(0)]


def _idx(value: Idx | int) -> Idx:
    return value if isinstance(value, Idx) else Idx.const(int(value))


def trunc_div(a: int, b: int) -> int:
    """a / b rounded toward zero, as C and Xe divide."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def all_of(conditions: Iterable[Expr | None]) -> Expr | None:
    """The conjunction of the conditions that are not None (None if there are none)."""
    present = [c for c in conditions if c is not None]
    if not present:
        return None
    result = present[0]
    for c in present[1:]:
        result = logical_and(result, c)
    return result


def lane_ids(lanes: int) -> Expr:
    """The constant vector 0, 1, ..., lanes-1 (one s32 per lane)."""
    return Shuffle(tuple(IntImm(i) for i in range(lanes)), tuple(range(lanes)))


def lane_var(lanes: int) -> Var:
    return Var(f"lane_ids{lanes}", Type("s32", lanes))
