"""Induction variables: a loop's index arithmetic kept in a register and stepped each trip.

In a loop `for (v = init; v < bound)`, an integer expression `e` affine in v (v * C + R, C a
constant, R made of values the loop does not change) equals a register that starts at e(init)
and grows by C each trip.  A block's offset `k * 2048 + base`, a gather's addresses
`fixed + broadcast(k * 32 + t, 8)`: computed again every trip they cost a multiply and adds,
stepped they cost one add.  32-bit arithmetic wraps modulo 2^32 either way, so the register
holds e's exact value at every trip.

The statement lowering asks `LoopInductions.register` for every integer expression it computes
in the innermost runtime loop's body.  The first time a candidate is asked for, its register is
set in front of the loop (the instructions are moved there) and `step_all` adds the steps at
the end of the body, after every use.  A candidate has at least two operations and takes at
least two instructions to compute (lowered once on the side to count them): `v * C + x` is one
`mad` on XeHPG, a register of its own would save nothing there, and a multiply and an add on
XeLP.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.visitor import substitute, walk
from .program import Op
from .values import Constant, Region

#: operations (binary or ternary nodes) an expression needs to get an induction register
MIN_OPERATIONS = 2

_NOT_AFFINE = None


@dataclass
class Induction:
    reg: Region
    step: int


class LoopInductions:
    """The induction registers of one loop, made as its body's lowering asks for them."""

    def __init__(self, var: E.Var, init: E.Expr, body: S.Stmt, preheader: int):
        self.var = var
        self.init = init
        self.preheader = preheader  # where in the program's items the registers are set
        self.variant = _bound_inside(body)
        self.slopes: dict[E.Expr, int | None] = {}
        self.made: dict[E.Expr, Induction] = {}
        self.rejected: set[E.Expr] = set()  # affine, but computed in one instruction

    def register(self, e: E.Expr, lowering) -> Region | None:
        """`e`'s induction register (made now if `e` is a candidate), or None."""
        made = self.made.get(e)
        if made is not None:
            return made.reg
        if e in self.rejected or not _candidate_shape(e):
            return None
        step = self.slope(e)
        if not step:  # (None: not affine; 0: the loop does not change it)
            return None
        if self.instructions(e, lowering) < 2:  # (a register would save nothing)
            self.rejected.add(e)
            return None
        items = lowering.b.program.items
        mark = len(items)
        with _aside(lowering):
            reg = lowering.b.temp(e.type.scalar, e.type.lanes, name="iv")
            lowering.into(substitute(e, {self.var: self.init}), reg)
        moved = items[mark:]
        del items[mark:]
        items[self.preheader : self.preheader] = moved
        self.preheader += len(moved)
        self.made[e] = Induction(reg, step)
        return reg

    def instructions(self, e: E.Expr, lowering) -> int:
        """How many instructions computing `e` in the loop takes: lowered, counted and taken
        out again (the platform decides: an integer `mad` where it has one)."""
        items = lowering.b.program.items
        mark = len(items)
        with _aside(lowering):
            lowering.value(e)
        count = sum(1 for item in items[mark:] if isinstance(item, Op) and item.inst is not None)
        del items[mark:]
        return count

    def step_all(self, lowering) -> None:
        """Add each register's step (at the end of the loop's body)."""
        for e, induction in self.made.items():
            scalar = e.type.scalar
            step = E.const(induction.step, scalar)  # (the step as a value of the type: wrapped)
            assert isinstance(step, E.IntImm)
            lowering.b.alu("add", induction.reg, [induction.reg, Constant(step.value, scalar)])

    def slope(self, e: E.Expr) -> int | None:
        """C when `e` is v * C + R with R invariant in the loop (0: e is invariant), None when
        it is not affine in v."""
        if e in self.slopes:
            return self.slopes[e]
        result = self._slope(e)
        self.slopes[e] = result
        return result

    def _slope(self, e: E.Expr) -> int | None:
        t = e.type
        if not t.is_int:
            return 0 if self._invariant(e) else _NOT_AFFINE
        if isinstance(e, E.Var):
            if e.name == self.var.name:
                return 1
            return _NOT_AFFINE if e.name in self.variant else 0
        if isinstance(e, E.IntImm):
            return 0
        if isinstance(e, E.Broadcast):
            return self.slope(e.value)
        if isinstance(e, E.Cast):
            inner = e.value.type
            if inner.is_int and inner.scalar.bits == t.scalar.bits and not e.saturate:
                return self.slope(e.value)  # (the same bits, read as the other signedness)
            return 0 if self._invariant(e) else _NOT_AFFINE
        if isinstance(e, E.Binary):
            a, b = self.slope(e.a), self.slope(e.b)
            if a is None or b is None:
                return _NOT_AFFINE
            if e.op == "add":
                return a + b
            if e.op == "sub":
                return a - b
            if a == 0 and b == 0:
                return 0
            if e.op == "mul":
                return _product(a, e.b, b) if b == 0 else _product(b, e.a, a)
            count = _constant(e.b)
            if e.op == "shl" and b == 0 and count is not None and 0 <= count < t.scalar.bits:
                return a << count
            return _NOT_AFFINE
        if isinstance(e, E.Ternary):
            a, b, c = self.slope(e.a), self.slope(e.b), self.slope(e.c)
            if a is None or b is None or c is None:
                return _NOT_AFFINE
            if e.op == "add3":
                return a + b + c
            # mad(a, b, c) = a + b * c
            if b == 0 and c == 0:
                return a
            product = _product(b, e.c, c) if c == 0 else _product(c, e.b, b)
            return _NOT_AFFINE if product is None else a + product
        return 0 if self._invariant(e) else _NOT_AFFINE

    def _invariant(self, e: E.Expr) -> bool:
        for node in walk(e):
            if isinstance(node, E.Load):  # (a buffer the loop may write)
                return False
            if isinstance(node, E.Var) and (node.name == self.var.name or node.name in self.variant):
                return False
        return True


@contextmanager
def _aside(lowering) -> Iterator[None]:
    """Lowering outside the statement at hand: none of the values it computed so far is reused
    (they are computed in the loop), and nothing it computes now is kept for later."""
    computed, lowering.computed = lowering.computed, {}
    sinking, lowering.b.sinking = lowering.b.sinking, False
    inductions, lowering.inductions = lowering.inductions, None
    try:
        yield
    finally:
        lowering.computed, lowering.b.sinking, lowering.inductions = computed, sinking, inductions


def _candidate_shape(e: E.Expr) -> bool:
    """A 32-bit integer expression with enough operations to be worth a register."""
    if not isinstance(e, (E.Binary, E.Ternary)) or not e.type.is_int or e.type.scalar.bits != 32:
        return False
    operations = 0
    for node in walk(e):
        if isinstance(node, (E.Binary, E.Ternary)):
            operations += 1
            if operations >= MIN_OPERATIONS:
                return True
    return False


def _product(slope: int, factor: E.Expr, factor_slope: int) -> int | None:
    """The slope of x * factor where x's is `slope`: affine when the factor is a constant."""
    value = _constant(factor)
    return slope * value if factor_slope == 0 and value is not None else _NOT_AFFINE


def _constant(e: E.Expr) -> int | None:
    if isinstance(e, E.IntImm):
        return e.value
    if isinstance(e, E.Broadcast):
        return _constant(e.value)
    return None


def _bound_inside(body: S.Stmt) -> set[str]:
    """The names a loop's body binds (lets, loops, buffers): their values may change each trip."""
    names = set()
    for node in walk(body):
        if isinstance(node, S.Let):
            names.add(node.var.name)
        elif isinstance(node, S.For):
            names.add(node.var.name)
        elif isinstance(node, S.Alloc):
            names.add(node.buffer.name)
    return names
