"""xegen's integer semantics (docs/ir.md) as z3 bit-vector formulas.

`encode(e, env)` gives the z3 term of an IR expression over scalar integer and bool values:
wrap-around at the type width, truncating / and %, x / 0 = -1 (all ones), x % 0 = x,
MIN / -1 = MIN, shift counts masked to their low log2(width) bits, casts that wrap, clamp
(saturate) or compare with zero (to bool).  Tests check it against `xegen.ir.evaluate`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping

import z3

from ... import ir
from ...errors import UnsupportedError
from ...ir.types import Type

#: width of the exact integer domain used for "mathematical" values and i64 arithmetic
WIDE = 130


def bits_of(t: Type) -> int:
    return t.bits


def variable(name: str, t: Type):
    if t.is_bool:
        return z3.Bool(name)
    return z3.BitVec(name, t.bits)


def constant(value: int, t: Type):
    if t.is_bool:
        return z3.BoolVal(bool(value))
    return z3.BitVecVal(value % (1 << t.bits), t.bits)


def widen(value, t: Type):
    """The mathematical value (signed or unsigned per `t`) as a WIDE-bit vector."""
    if t.is_bool:
        return z3.If(value, z3.BitVecVal(1, WIDE), z3.BitVecVal(0, WIDE))
    extend = z3.SignExt if t.is_signed else z3.ZeroExt
    return extend(WIDE - t.bits, value)


def narrow(wide_value, t: Type):
    """The low bits of a WIDE value as a value of `t` (bool: the lowest bit)."""
    if t.is_bool:
        return z3.Extract(0, 0, wide_value) == 1
    return z3.Extract(t.bits - 1, 0, wide_value)


def _shift_count(count, count_type: Type, t: Type):
    k = (t.bits - 1).bit_length()  # log2(bits)
    low = z3.Extract(k - 1, 0, count)
    return z3.ZeroExt(t.bits - k, low)


def _less(a, b, t: Type, strict: bool):
    if t.is_bool:
        ia, ib = z3.If(a, 1, 0), z3.If(b, 1, 0)
        return ia < ib if strict else ia <= ib
    if t.is_signed:
        return a < b if strict else a <= b
    return z3.ULT(a, b) if strict else z3.ULE(a, b)


class ExactProducts:
    """Multiplication of two symbolic values through an uninterpreted function `product`
    standing for the exact product of the operands' mathematical values, plus true facts about
    it (`lemmas`).  Bit-blasted multipliers make z3 slow; a proof that holds for any function
    with these properties holds for multiplication.  A constant operand stays a real product."""

    def __init__(self, widths: tuple[int, ...] = (8, 16, 32, 64), scaling: bool = False):
        self.widths = widths  # the type widths of the problem (for congruence lemmas)
        self.scaling = scaling  # with the lemmas about factors 2^j apart (many: a last resort)
        sort = z3.BitVecSort(WIDE)
        self.function = z3.Function("product", sort, sort, sort)
        self.quotient_function = z3.Function("quotient", sort, sort, sort)
        self.remainder_function = z3.Function("remainder", sort, sort, sort)
        self.applications: list = []  # (x, y, product) as WIDE-bit values
        self.divisions: list = []  # (n, d, q, r, n == q*d + r)

    def exact(self, x, y):
        """The exact product of two WIDE-bit mathematical values."""
        if z3.is_bv_value(x) or z3.is_bv_value(y):
            return x * y
        p = self.function(x, y)
        self.applications.append((x, y, p))
        return p

    def quotient(self, n, d):
        """Truncating quotient and remainder of two WIDE-bit mathematical values (d nonzero)."""
        q, r = self.quotient_function(n, d), self.remainder_function(n, d)
        self.divisions.append((n, d, q, r, self.exact(q, d)))
        return q, r

    def divide(self, a, b, t: Type, remainder: bool):
        """xegen's / or % of two values of type t (x / 0 = -1, x % 0 = x)."""
        if z3.is_bv_value(b) and z3.is_bv_value(a):
            return None
        q, r = self.quotient(widen(a, t), widen(b, t))
        if remainder:
            return z3.If(b == 0, a, narrow(r, t))
        return z3.If(b == 0, z3.BitVecVal(-1, t.bits), narrow(q, t))

    def shift_left(self, a, count, t: Type):
        """a << count (count already masked, t's width) as a product with 2^count."""
        power = z3.BitVecVal(1, WIDE) << z3.ZeroExt(WIDE - t.bits, count)
        return narrow(self.exact(widen(a, t), power), t)

    def multiply(self, a, b, t: Type):
        """The wrapping product of two values of type t."""
        if z3.is_bv_value(a) or z3.is_bv_value(b):
            return a * b
        return narrow(self.exact(widen(a, t), widen(b, t)), t)

    def lemmas(self) -> list:
        facts = []
        zero = z3.BitVecVal(0, WIDE)
        for n, d, _q, r, qd in self.divisions:  # what truncating division is
            magnitude = z3.If(d < 0, -d, d)
            facts.append(z3.Implies(d != zero, n == qd + r))
            facts.append(z3.Implies(z3.And(d != zero, n >= zero), z3.And(r >= zero, r < magnitude)))
            facts.append(z3.Implies(z3.And(d != zero, n < zero), z3.And(r <= zero, r > -magnitude)))
        for x, y, p in self.applications:
            facts.append(z3.Implies(z3.Or(x == zero, y == zero), p == zero))
            facts.append(z3.Implies(y == 1, p == x))
            facts.append(z3.Implies(x == 1, p == y))
            facts.append(z3.Implies(z3.And(x >= 0, y >= 0), p >= 0))

        apps = self.applications
        if len(apps) <= 12:  # distributivity over a sum of factors (cubic: only for small problems)
            for (x1, y1, p1), (x2, y2, p2), (x3, y3, p3) in itertools.permutations(apps, 3):
                facts.append(z3.Implies(z3.And(x1 == x2, x1 == x3, y3 == y1 + y2), p3 == p1 + p2))
        for (x1, y1, p1), (x2, y2, p2) in itertools.permutations(self.applications, 2):
            # monotone in each factor when the other is the same and non-negative
            facts.append(z3.Implies(z3.And(y1 == y2, y1 >= 0, x1 <= x2), p1 <= p2))
            facts.append(z3.Implies(z3.And(x1 == x2, x1 >= 0, y1 <= y2), p1 <= p2))
            facts.append(z3.Implies(z3.And(y1 == y2, y1 <= 0, x1 <= x2), p2 <= p1))
            facts.append(z3.Implies(z3.And(x1 == y2, y1 == x2), p1 == p2))
            # products of factors equal modulo 2^w are equal modulo 2^w (wrap-around agrees)
            for w in self.widths:
                same_factors = z3.And(_low(x1, w) == _low(x2, w), _low(y1, w) == _low(y2, w))
                facts.append(z3.Implies(same_factors, _low(p1, w) == _low(p2, w)))
            # strictly: a larger factor adds at least one more of the other (positive) factor
            facts.append(z3.Implies(z3.And(y1 == y2, y1 > 0, x1 < x2), p1 + y1 <= p2))
            facts.append(z3.Implies(z3.And(x1 == x2, x1 > 0, y1 < y2), p1 + x1 <= p2))
        if self.scaling:
            facts += self._scaling_lemmas()
        return facts

    def _scaling_lemmas(self) -> list:
        """A factor 2^j times another gives a product 2^j times the other's: x * (y << j) is
        (x * y) << j exactly (no product of 64-bit values reaches 2^128, so nothing wraps in
        WIDE bits), and modulo 2^w when the factors agree only modulo 2^w (a u64 constant
        shifted as an i64), for each j below the problem's widest type."""
        facts = []
        top = max(self.widths)
        for (x1, y1, p1), (x2, y2, p2) in itertools.permutations(self.applications, 2):
            for j in range(1, top):
                facts.append(z3.Implies(z3.And(x1 == x2, y2 == y1 << j), p2 == p1 << j))
                for w in (w for w in self.widths if w > j):
                    same_factors = z3.And(_low(x1, w) == _low(x2, w), _low(y2, w) == _low(y1 << j, w))
                    facts.append(z3.Implies(same_factors, _low(p2, w) == _low(p1 << j, w)))
        return facts


def _low(v, w: int):
    """The low w bits of a bit-vector."""
    return z3.Extract(w - 1, 0, v)


def encode(e: ir.Expr, env: Mapping[str, object], products: ExactProducts | None = None):
    """The z3 term for `e`; `env` maps variable names to z3 terms of the variable's type.
    With `products`, multiplications of two symbolic values go through it."""
    memo: dict = {}

    def go(x: ir.Expr):
        key = id(x)
        if key in memo:
            return memo[key][1]
        value = _encode_node(x, go, env, products)
        memo[key] = (x, value)
        return value

    return go(e)


def _encode_node(e: ir.Expr, go: Callable, env: Mapping[str, object], products: ExactProducts | None = None):
    t = e.type
    if t.lanes != 1 or not (t.is_int or t.is_bool):
        raise UnsupportedError(f"no bit-vector meaning for {t} expression {e}")
    if isinstance(e, ir.Var):
        return env[e.name]
    if isinstance(e, ir.IntImm):
        return constant(e.value, t)
    if isinstance(e, ir.BoolImm):
        return z3.BoolVal(e.value)
    if isinstance(e, ir.Unary):
        a = go(e.a)
        return {"neg": lambda: -a, "bitnot": lambda: ~a, "not": lambda: z3.Not(a)}[e.op]()
    if isinstance(e, ir.Binary):
        if products is not None and e.op == "mul":
            return products.multiply(go(e.a), go(e.b), e.a.type)
        if products is not None and e.op in ("div", "mod"):
            value = products.divide(go(e.a), go(e.b), e.a.type, e.op == "mod")
            if value is not None:
                return value
        if products is not None and e.op == "shl":
            return products.shift_left(go(e.a), _shift_count(go(e.b), e.b.type, e.a.type), e.a.type)
        return _binary(e, go(e.a), go(e.b))
    if isinstance(e, ir.Ternary):
        a, b, c = go(e.a), go(e.b), go(e.c)
        if e.op == "add3":
            return a + b + c
        return a + (products.multiply(b, c, t) if products is not None else b * c)
    if isinstance(e, ir.Select):
        return z3.If(go(e.cond), go(e.true_value), go(e.false_value))
    if isinstance(e, ir.Cast):
        return _cast(go(e.value), e.value.type, t, e.saturate)
    raise UnsupportedError(f"no bit-vector meaning for {type(e).__name__}")


def _binary(e: ir.Binary, a, b):
    op, t = e.op, e.a.type
    if op in ("land", "lor"):
        return z3.And(a, b) if op == "land" else z3.Or(a, b)
    if op in ("eq", "ne"):
        return a == b if op == "eq" else a != b
    if op in ("lt", "le"):
        return _less(a, b, t, op == "lt")
    if op in ("gt", "ge"):
        return _less(b, a, t, op == "gt")
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        if t.is_signed:
            return z3.If(b == 0, z3.BitVecVal(-1, t.bits), a / b)  # bvsdiv: truncating, MIN/-1 = MIN
        return z3.UDiv(a, b)  # bvudiv: x / 0 is all ones
    if op == "mod":
        return z3.SRem(a, b) if t.is_signed else z3.URem(a, b)  # x % 0 = x in both
    if op == "shl":
        return a << _shift_count(b, e.b.type, t)
    if op == "shr":
        count = _shift_count(b, e.b.type, t)
        return a >> count if t.is_signed else z3.LShR(a, count)
    if op == "and":
        return a & b
    if op == "or":
        return a | b
    if op == "xor":
        return a ^ b
    if op == "min":
        return z3.If(_less(a, b, t, False), a, b)
    if op == "max":
        return z3.If(_less(a, b, t, False), b, a)
    raise UnsupportedError(f"no bit-vector meaning for '{op}'")


def _cast(value, source: Type, target: Type, saturate: bool):
    if target.is_bool:
        return value if source.is_bool else value != 0
    if source.is_bool:
        return z3.If(value, z3.BitVecVal(1, target.bits), z3.BitVecVal(0, target.bits))
    if saturate:
        wide = widen(value, source)
        low, high = z3.BitVecVal(target.min, WIDE), z3.BitVecVal(target.max, WIDE)
        clamped = z3.If(wide < low, low, z3.If(wide > high, high, wide))
        return z3.Extract(target.bits - 1, 0, clamped)
    if target.bits == source.bits:
        return value
    if target.bits < source.bits:
        return z3.Extract(target.bits - 1, 0, value)
    extend = z3.SignExt if source.is_signed else z3.ZeroExt
    return extend(target.bits - source.bits, value)
