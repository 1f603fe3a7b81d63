"""xegen's integer semantics and egglog's i64 primitives over z3's mathematical integers.

The second encoding of an instance (`prove.py` uses it when the bit-vector one is beyond z3):
every value is its mathematical integer (a u32 lies in 0..2^32-1, an s8 in -128..127) and every
operation is translated exactly, so a proof here is a proof of the bit-vector claim:
- wrap-around: the exact result minus k * 2^bits for the one integer k that brings it into the
  type's range (a fresh variable with that range as its definition);
- truncating a / b for b != 0: fresh q, r with a = q*b + r, |r| < |b|, and r = 0 or r of a's
  sign.  These determine q and r (Euclid's division, mirrored for negative a), so they are
  the truncating quotient and remainder, not an approximation of them;
- shifts by a symbolic count: a case per count (the counts are few);
- bitwise and/or/xor of symbolic values: through z3's int2bv/bv2int at the type's width.
Fresh variables appear only in their defining constraints, which every value of the original
variables satisfies for exactly one choice of them: asserting the definitions is sound.

Where wrap-around is excluded by the premises (the range-guarded rules), z3's arithmetic
solver sees the claim over plain integers, which is what those rules say.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

import z3

from ... import ir
from ...errors import UnsupportedError
from ...ir.types import Type
from .model import Instance
from .prims import I64_MAX, I64_MIN
from .sample import check_batch


@dataclass
class Candidate:
    """A fact the premises may imply, and what it makes of the formulas: the `replaces`
    definitions give way to the simpler `consequences` (implied by them and the fact), and a
    fresh variable may be replaced by the term it then equals (`substitution`).  Once the fact
    is proven from the premises, every model of the formulas is one of the simplified formulas,
    so a proof with the simplified formulas is a proof."""

    fact: object
    consequences: list
    replaces: list = field(default_factory=list)
    substitution: tuple | None = None


class Encoder:
    """Builds the integer formulas of one instance; `definitions` collects the defining
    constraints of the fresh variables it introduces."""

    def __init__(self):
        self.definitions: list = []
        #: the case-by-case definitions of powers of two and logarithms: a proof may first try
        #: without them (with only the facts in `definitions` about those values, which they imply)
        self.exact: list = []
        #: facts the premises may imply (a value does not wrap: it is the exact one; a dividend
        #: >= 0 and divisor > 0: plain Euclidean division; a divisor is not zero); a staged proof
        #: tries each, in the order made (inner first)
        self.candidates: list[Candidate] = []
        #: (dividend, index of its pair of sign candidates): where a proof may split into cases
        self.dividends: list[tuple] = []
        self._powers: dict = {}  # (count id, limit) -> (count, limit, the variable 2^count)
        self._memo: dict = {}  # wraps and divisions already made
        self._counter = itertools.count()

    def fresh(self, kind: str):
        return z3.Int(f"{kind}#{next(self._counter)}")

    # -- helpers ----------------------------------------------------------------------------
    def wrap(self, value, lo: int, hi: int):
        """`value` reduced modulo hi - lo + 1 into [lo, hi]."""
        value = z3.simplify(value)
        if z3.is_int_value(value):
            v = value.as_long()
            return z3.IntVal((v - lo) % (hi - lo + 1) + lo)
        key = ("wrap", value.get_id(), lo, hi)
        if key in self._memo:  # the same value wrapped twice: one variable (z3 sees they are equal)
            return self._memo[key]
        k, r = self.fresh("wraps"), self.fresh("wrapped")
        self._memo[key] = r
        definition = z3.And(r == value - k * (hi - lo + 1), r >= lo, r <= hi)
        self.definitions.append(definition)
        self.candidates.append(Candidate(k == 0, [value >= lo, value <= hi], [definition], (r, value)))
        return r

    def wrap_to(self, value, t: Type):
        if t.is_bool:
            return self.wrap(value, 0, 1) == 1
        return self.wrap(value, t.min, t.max)

    def divide(self, a, b):
        """Truncating quotient and remainder of a by b, defined when b != 0."""
        a, b = z3.simplify(a), z3.simplify(b)
        if z3.is_int_value(a) and z3.is_int_value(b) and b.as_long() != 0:
            x, y = a.as_long(), b.as_long()
            q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
            return z3.IntVal(q), z3.IntVal(x - q * y)
        key = ("divide", a.get_id(), b.get_id())
        if key in self._memo:  # the same division twice (a rule's (/ a b) and (% a b)): one q, r
            return self._memo[key]
        q, r = self._memo[key] = self.fresh("quotient"), self.fresh("remainder")
        magnitude = z3.If(b < 0, -b, b)
        definition = z3.Implies(
            b != 0, z3.And(a == q * b + r, z3.If(a >= 0, z3.And(r >= 0, r < magnitude), z3.And(r <= 0, r > -magnitude)))
        )
        self.definitions.append(definition)
        self.dividends.append((a, len(self.candidates)))
        self.candidates.append(Candidate(z3.And(a >= 0, b > 0), [a == q * b + r, r >= 0, r < b], [definition]))
        self.candidates.append(Candidate(z3.And(a <= 0, b > 0), [a == q * b + r, r <= 0, r > -b], [definition]))
        return q, r

    def choose(self, kind: str, value, fact, simple):
        """A fresh variable equal to `value`, which is `simple` where `fact` holds (an IR
        division's result is the quotient where the divisor is not zero)."""
        v = self.fresh(kind)
        definition = v == value
        self.definitions.append(definition)
        self.candidates.append(Candidate(fact, [], [definition], (v, simple)))
        return v

    def floor_divide_by_power(self, a, count, limit: int):
        """floor(a / 2^count) for 0 <= count < limit."""
        count = z3.simplify(count)
        if z3.is_int_value(count):
            return a / (1 << count.as_long())  # z3's / by a positive constant floors
        power = self.power_of_two(count, limit)
        q, r = self.fresh("shifted"), self.fresh("shifted_out")
        self.definitions += [a == q * power + r, r >= 0, r < power]  # Euclid: q is the floor
        return q

    def power_of_two(self, count, limit: int):
        """2^count for 0 <= count < limit: a variable defined by a case per count, one per count
        term, with 2^c1 = 2^c2 where c1 = c2 (so that z3 sees one power where the rule has one)."""
        count = z3.simplify(count)
        if z3.is_int_value(count):
            return z3.IntVal(1 << count.as_long())
        key = (count.get_id(), limit)
        if key not in self._powers:
            cases = z3.IntVal(1 << (limit - 1))
            for k in reversed(range(limit - 1)):
                cases = z3.If(count == k, z3.IntVal(1 << k), cases)
            power = self.fresh("power")
            self.exact.append(power == cases)
            # what the cases imply, for proofs without them: bounds at the type widths
            self.definitions.append(power >= 1)
            for k in (7, 8, 15, 16, 31, 32, 62, 63):
                if k < limit:
                    self.definitions += [
                        z3.Implies(count <= k, power <= 1 << k),
                        z3.Implies(count >= k, power >= 1 << k),
                    ]
            for other_count, other_limit, other_power in self._powers.values():
                self.definitions.append(
                    z3.Implies(
                        z3.And(count == other_count, count >= 0, count < min(limit, other_limit)), power == other_power
                    )
                )
            self._powers[key] = (count, limit, power)
        return self._powers[key][2]

    def log2(self, a):
        """floor(log2(a)) for a > 0: k with 2^k <= a < 2^(k+1)."""
        cases = z3.IntVal(0)
        for k in range(1, 63):
            cases = z3.If(a >= 1 << k, k, cases)
        k = self.fresh("log2")
        self.exact.append(k == cases)
        power = self.power_of_two(k, 63)
        self.definitions.append(z3.Implies(a > 0, z3.And(power <= a, a < 2 * power, k >= 0, k <= 62)))
        return k

    @staticmethod
    def bitwise(op: str, a, b, bits: int, signed: bool):
        x, y = z3.Int2BV(a, bits), z3.Int2BV(b, bits)
        value = z3.BV2Int(x & y if op == "and" else x | y if op == "or" else x ^ y, is_signed=False)
        return z3.If(value >= 1 << (bits - 1), value - (1 << bits), value) if signed else value

    # -- IR --------------------------------------------------------------------------------
    def encode(self, e: ir.Expr, env: Mapping[str, object]):
        """The value of `e`: an Int for integer types, a Bool for bool."""
        memo: dict = {}

        def go(x: ir.Expr):
            if id(x) not in memo:
                memo[id(x)] = (x, self._node(x, go, env))
            return memo[id(x)][1]

        return go(e)

    def _node(self, e: ir.Expr, go, env):
        t = e.type
        if t.lanes != 1 or not (t.is_int or t.is_bool):
            raise UnsupportedError(f"no integer meaning for {t} expression {e}")
        if isinstance(e, ir.Var):
            return env[e.name]
        if isinstance(e, ir.IntImm):
            return z3.IntVal(e.value)
        if isinstance(e, ir.BoolImm):
            return z3.BoolVal(e.value)
        if isinstance(e, ir.Unary):
            a = go(e.a)
            if e.op == "not":
                return z3.Not(a)
            if e.op == "neg":
                return self.wrap_to(-a, t)
            return -a - 1 if t.is_signed else t.max - a  # bitnot
        if isinstance(e, ir.Binary):
            return self._binary(e.op, go(e.a), go(e.b), e.a.type, e.b.type)
        if isinstance(e, ir.Ternary):
            a, b, c = go(e.a), go(e.b), go(e.c)
            return self.wrap_to(a + b + c if e.op == "add3" else a + b * c, t)
        if isinstance(e, ir.Select):
            return z3.If(go(e.cond), go(e.true_value), go(e.false_value))
        if isinstance(e, ir.Cast):
            return self._cast(go(e.value), e.value.type, t, e.saturate)
        raise UnsupportedError(f"no integer meaning for {type(e).__name__}")

    def _binary(self, op: str, a, b, t: Type, count_type: Type):
        if op in ("land", "lor"):
            return z3.And(a, b) if op == "land" else z3.Or(a, b)
        if t.is_bool and op in ("lt", "le", "gt", "ge", "min", "max"):
            a, b = z3.If(a, 1, 0), z3.If(b, 1, 0)
        comparisons = {
            "eq": lambda: a == b,
            "ne": lambda: a != b,
            "lt": lambda: a < b,
            "le": lambda: a <= b,
            "gt": lambda: a > b,
            "ge": lambda: a >= b,
        }
        if op in comparisons:
            return comparisons[op]()
        if op in ("min", "max"):
            value = z3.If(a <= b, a, b) if op == "min" else z3.If(a <= b, b, a)
            return value == 1 if t.is_bool else value
        if op in ("add", "sub", "mul"):
            return self.wrap_to(a + b if op == "add" else a - b if op == "sub" else a * b, t)
        if op in ("div", "mod"):
            q, r = self.divide(a, b)
            if z3.is_int_value(z3.simplify(b)) and z3.simplify(b).as_long() != 0 and (op == "mod" or not t.is_signed):
                return r if op == "mod" else q
            if op == "mod":
                return self.choose("mod", z3.If(b == 0, a, r), b != 0, r)  # x % 0 = x
            # x / 0 = -1 (all ones); MIN / -1 wraps (the only quotient out of range)
            value = z3.If(b == 0, z3.IntVal(-1 if t.is_signed else t.max), z3.If(q > t.max, t.min, q))
            return self.choose("div", value, z3.And(b != 0, q <= t.max), q)
        if op in ("shl", "shr"):
            count = self.wrap(b, 0, t.bits - 1)  # the count's low log2(bits) bits
            if op == "shl":
                return self.wrap_to(a * self.power_of_two(count, t.bits), t)
            return self.floor_divide_by_power(a, count, t.bits)  # arithmetic (signed) or logical
        if op in ("and", "or", "xor"):
            return self.bitwise(op, a, b, t.bits, t.is_signed)
        raise UnsupportedError(f"no integer meaning for '{op}'")

    def _cast(self, value, source: Type, target: Type, saturate: bool):
        if target.is_bool:
            return value if source.is_bool else value != 0
        if source.is_bool:
            return z3.If(value, 1, 0)
        if saturate:
            return z3.If(value < target.min, target.min, z3.If(value > target.max, target.max, value))
        if target.min <= source.min and source.max <= target.max:
            return value  # widening: the same number
        return self.wrap_to(value, target)

    # -- egglog's i64 primitives --------------------------------------------------------------
    def primitive(self, op: str, args: list, defined: list):
        """The primitive on i64 Ints, appending its definedness (checked arithmetic) to `defined`."""
        in_i64 = lambda v: z3.And(v >= I64_MIN, v <= I64_MAX)  # noqa: E731
        if op in ("+", "-", "*"):
            a, b = args
            value = a + b if op == "+" else a - b if op == "-" else a * b
            defined.append(in_i64(value))
            return value
        if op in ("/", "%"):
            a, b = args
            defined.append(b != 0)
            defined.append(z3.Not(z3.And(a == I64_MIN, b == -1)))
            q, r = self.divide(a, b)
            return q if op == "/" else r
        if op in ("&", "|", "^"):
            return self.bitwise({"&": "and", "|": "or", "^": "xor"}[op], args[0], args[1], 64, True)
        if op == "not-i64":
            return -args[0] - 1
        if op in ("<<", ">>"):
            a, b = args
            defined.append(z3.And(b >= 0, b <= 63))
            if op == "<<":
                return self.wrap(a * self.power_of_two(b, 64), I64_MIN, I64_MAX)
            return self.floor_divide_by_power(a, b, 64)
        if op == "log2":
            defined.append(args[0] > 0)
            return self.log2(args[0])
        if op in ("min", "max"):
            a, b = args
            return z3.If(a <= b, a, b) if op == "min" else z3.If(a <= b, b, a)
        raise ValueError(f"unknown primitive {op}")


def _compare(op: str, a, b):
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "!=": a != b, "=": a == b}[op]


def _number(value, t: Type):
    """A value as a number (bool: 0 or 1)."""
    return z3.If(value, 1, 0) if t.is_bool else value


class Formula:
    """An instance as integer formulas: `premises`, the `definitions` of the fresh variables (but
    for the `exact` case-by-case ones of powers of two and logarithms), `side` claims (the
    rule's computations are defined and build constants of their types) and `claims` (the sides
    are equal, a bound holds); `env` and `symbols` give the variables' and i64 symbols' terms
    (for models), `candidates` the Encoder's (for staged proofs)."""

    def __init__(self, instance: Instance):
        enc = Encoder()
        self.instance = instance
        premises: list = []
        self.env: dict = {}
        for v in instance.variables:
            if v.type.is_bool:
                self.env[v.name] = z3.Bool(v.name)
            else:
                self.env[v.name] = z3.Int(v.name)
                premises.append(z3.And(self.env[v.name] >= v.type.min, self.env[v.name] <= v.type.max))
        self.symbols: dict = {}
        types = {v.name: v.type for v in instance.variables}

        def i64_symbol(name: str):
            s = z3.Int(name)
            premises.append(z3.And(s >= I64_MIN, s <= I64_MAX))
            return s

        for symbol, var_name in instance.const_links.items():
            x, t = self.env[var_name], types[var_name]
            if t.kind == "u64":  # the i64 holds the bit pattern: a variable of its own, so that
                s = self.symbols[symbol] = i64_symbol(symbol)  # products see no case split
                premises.append(x == z3.If(s < 0, s + (1 << 64), s))
            else:
                self.symbols[symbol] = z3.If(x, 1, 0) if t.is_bool else x
        self.bounded: dict = {}  # lattice symbol -> the value it bounds
        for symbol, kind, e in instance.lattice:
            s = self.symbols[symbol] = i64_symbol(symbol)
            value = self.bounded[symbol] = _number(enc.encode(e, self.env), e.type)
            premises.append(s <= value if kind == "lo" else value <= s)
        for symbol in instance.free:
            self.symbols[symbol] = i64_symbol(symbol)

        def i64(x, defined):
            tag = x[0]
            if tag == "lit":
                return z3.IntVal(x[1])
            if tag == "sym":
                return self.symbols[x[1]]
            return enc.primitive(x[1], [i64(a, defined) for a in x[2]], defined)

        for symbol, expression in instance.definitions:
            self.symbols[symbol] = i64(expression, premises)
        for op, a, b in instance.conditions:
            premises.append(_compare(op, i64(a, premises), i64(b, premises)))
        for kind, args in instance.facts:
            if kind == "InLoop":
                v, init, bound = (enc.encode(a, self.env) for a in args)
                premises.append(z3.And(init <= v, v < bound))
            elif kind == "LetValue":
                v, e = (enc.encode(a, self.env) for a in args)
                premises.append(v == e)
        for e, k in instance.multiples:
            premises.append(self._multiple(enc, _number(enc.encode(e, self.env), e.type), i64(k, premises)))
        side: list = []
        for hole in instance.holes:
            value = i64(hole.value, side)
            t = hole.var.type
            self.env[hole.var.name] = enc.wrap_to(value, t)
            if not hole.wrap:  # a constant the rule builds must be one of its type
                side.append(
                    z3.Or(value == 0, value == 1)
                    if t.is_bool
                    else z3.BoolVal(True)
                    if t.kind == "u64"
                    else z3.And(value >= t.min, value <= t.max)
                )
        claims: list = []
        for lhs, rhs in instance.equal:
            claims.append(enc.encode(lhs, self.env) == enc.encode(rhs, self.env))
        for e, k in instance.claimed_multiples:
            claims.append(self._multiple(enc, _number(enc.encode(e, self.env), e.type), i64(k, side)))
        for kind, e, bound in instance.bounds:
            value = _number(enc.encode(e, self.env), e.type)
            b = i64(bound, side)
            claims.append(b <= value if kind == "lo" else value <= b)
        self.premises = premises
        self.definitions, self.exact = enc.definitions, enc.exact
        self.side, self.claims = side, claims
        self.candidates, self.dividends = enc.candidates, enc.dividends

    @staticmethod
    def _multiple(enc: Encoder, value, k):
        """value is a multiple of k, k nonzero (its truncating remainder is zero)."""
        _, r = enc.divide(value, k)
        return z3.And(k != 0, r == 0)

    def confirm(self, model):
        """The interpreter's verdict on the model's assignment: a Violation, or None if the rule
        holds there (the translation would be wrong)."""
        number = lambda term: model.eval(term, model_completion=True)  # noqa: E731
        values = {
            v.name: [
                int(z3.is_true(number(self.env[v.name]))) if v.type.is_bool else number(self.env[v.name]).as_long()
            ]
            for v in self.instance.variables
        }
        slack = {}
        for symbol, kind, _ in self.instance.lattice:
            bound, value = number(self.symbols[symbol]).as_long(), number(self.bounded[symbol]).as_long()
            slack[symbol] = [value - bound if kind == "lo" else bound - value]
        for symbol in self.instance.free:
            slack[symbol] = [number(self.symbols[symbol]).as_long()]
        return check_batch(self.instance, values, slack)

    def goal(self):
        """Premises and the negated claim: unsatisfiable exactly when the instance holds."""
        claims = self.side + self.claims
        return [
            *self.premises,
            *self.definitions,
            *self.exact,
            z3.Not(z3.And(*claims)) if claims else z3.BoolVal(False),
        ]
