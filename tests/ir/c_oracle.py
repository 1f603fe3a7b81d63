"""An independent oracle for C expressions: their types and values by the rules docs/ir.md states.

Expressions are small syntax trees of this module's own (not xegen IR).  They print as text for
`parse_expr`, and `build` makes them with the IR's builder functions from Python numbers; both
must agree with `typed_value` here, which restates the rules from scratch: C's usual arithmetic
conversions, the types of untyped literals, Xe's wrap-around integers and exactly rounded
floats (Fraction arithmetic).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from hypothesis import strategies as st

from xegen import ir

from .oracle import FLOAT_FORMATS, round_exact

INT_BITS = {"s8": 8, "u8": 8, "s16": 16, "u16": 16, "s32": 32, "u32": 32, "s64": 64, "u64": 64}
FLOAT_BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}
KINDS = ("bool", *INT_BITS, *FLOAT_BITS)


class Unknowable(Exception):
    """A result the rules leave open (the sign of min/max of +0 and -0): skip the sample."""


# Syntax trees ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Literal:
    value: int | float | bool
    hex: bool = False  # written 0x...


@dataclass(frozen=True)
class Variable:
    kind: str

    @property
    def name(self) -> str:
        return f"v_{self.kind}"


@dataclass(frozen=True)
class Operation:
    """`op` is a unary (neg, bitnot, not), binary (add, ..., min, max), select, add3 or mad."""

    op: str
    args: tuple


@dataclass(frozen=True)
class Conversion:
    kind: str
    arg: object
    saturate: bool = False


UNARY = {"neg": "-", "bitnot": "~", "not": "!"}
BINARY = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "div": "/",
    "mod": "%",
    "shl": "<<",
    "shr": ">>",
    "and": "&",
    "or": "|",
    "xor": "^",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "eq": "==",
    "ne": "!=",
    "land": "&&",
    "lor": "||",
}
INTEGER_ONLY = ("mod", "shl", "shr", "and", "or", "xor", "bitnot", "add3")
COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")


def text(e, compact: bool = False) -> str:
    """C text, fully parenthesized; `compact` writes `c?a:b` without spaces."""
    if isinstance(e, Literal):
        if isinstance(e.value, bool):
            return "true" if e.value else "false"
        if e.hex:
            return f"0x{e.value:X}"
        return repr(e.value)
    if isinstance(e, Variable):
        return f"{e.name}:{e.kind}"
    if isinstance(e, Conversion):
        return f"(({'sat ' if e.saturate else ''}{e.kind})({text(e.arg, compact)}))"
    args = [text(a, compact) for a in e.args]
    if e.op in UNARY:
        return f"{UNARY[e.op]}({args[0]})"
    if e.op in BINARY:
        return f"({args[0]} {BINARY[e.op]} {args[1]})"
    if e.op == "select":
        return f"({args[0]}?{args[1]}:{args[2]})" if compact else f"({args[0]} ? {args[1]} : {args[2]})"
    return f"{e.op}({', '.join(args)})"  # min, max, add3, mad


def build(e):
    """The IR made by the builder functions, literals given as Python numbers."""
    if isinstance(e, Literal):
        return e.value
    if isinstance(e, Variable):
        return ir.var(e.name, e.kind)
    if isinstance(e, Conversion):
        return ir.cast(e.kind, build(e.arg), e.saturate)
    args = [build(a) for a in e.args]
    if e.op in UNARY:
        return ir.unary(e.op, args[0])
    if e.op == "select":
        return ir.select(*args)
    if e.op in ("add3", "mad"):
        return ir.ternary(e.op, *args)
    return ir.binary(e.op, *args)


# Types ----------------------------------------------------------------------------------------


def is_float(kind: str) -> bool:
    return kind in FLOAT_BITS


def signed(kind: str) -> bool:
    return kind.startswith("s")


def promoted(kind: str) -> str:
    """Integer promotion: bool and integers narrower than 32 bits become s32."""
    return "s32" if kind == "bool" or INT_BITS.get(kind, 32) < 32 else kind


def usual_conversions(a: str, b: str) -> str:
    """The type C converts both operands of an arithmetic operator to."""
    if is_float(a) or is_float(b):
        if not (is_float(a) and is_float(b)):
            return a if is_float(a) else b
        if a == b:
            return a
        if FLOAT_BITS[a] == FLOAT_BITS[b]:
            return "f32"  # f16 with bf16
        return a if FLOAT_BITS[a] > FLOAT_BITS[b] else b
    a, b = promoted(a), promoted(b)
    if a == b:
        return a
    if signed(a) == signed(b):
        return a if INT_BITS[a] > INT_BITS[b] else b
    unsigned_one, signed_one = (b, a) if signed(a) else (a, b)
    return unsigned_one if INT_BITS[unsigned_one] >= INT_BITS[signed_one] else signed_one


def own_kind(e: Literal, hex_literals: bool) -> str:
    """A literal's type on its own: decimal s32/s64/u64 by size, hex as C says, float f32."""
    if isinstance(e.value, bool):
        return "bool"
    if isinstance(e.value, float):
        return "f32"
    candidates = ("s32", "u32", "s64", "u64") if e.hex and hex_literals else ("s32", "s64", "u64")
    return next(k for k in candidates if int_min(k) <= e.value <= int_max(k))


def int_min(kind: str) -> int:
    return -(1 << (INT_BITS[kind] - 1)) if signed(kind) else 0


def int_max(kind: str) -> int:
    return (1 << (INT_BITS[kind] - (1 if signed(kind) else 0))) - 1


# Values ---------------------------------------------------------------------------------------


def wrap(value: int, kind: str) -> int:
    bits = INT_BITS[kind]
    value &= (1 << bits) - 1
    return value - (1 << bits) if signed(kind) and value >> (bits - 1) else value


def round_to(x: Fraction, kind: str, negative_zero: bool = False) -> float:
    """Exact `x` rounded to float `kind`; an exact zero is -0.0 when `negative_zero`."""
    if x == 0:
        return -0.0 if negative_zero else 0.0
    return round_exact(x, kind)


def convert(value, frm: str, to: str, saturate: bool = False):
    """A value of type `frm` as type `to` (the IR's casts)."""
    if to == "bool":
        return value != 0
    if frm == "bool":
        value, frm = int(value), "s32"
    if is_float(to):
        if is_float(frm):
            exact = frm == to or value == 0 or not math.isfinite(value)
            result = value if exact else round_exact(Fraction(value), to)
        else:
            result = round_to(Fraction(value), to)
        return min(max(result, 0.0), 1.0) if saturate and not math.isnan(result) else result
    if is_float(frm):
        if math.isnan(value):
            return 0
        if math.isinf(value):
            return int_max(to) if value > 0 else int_min(to)
        return min(max(math.trunc(value), int_min(to)), int_max(to))
    if saturate:
        return min(max(value, int_min(to)), int_max(to))
    return wrap(value, to)


def float_add(a: float, b: float, kind: str) -> float:
    if not (math.isfinite(a) and math.isfinite(b)):
        return a + b  # IEEE rules for inf and NaN (Python floats follow them)
    both_negative_zero = a == 0 and b == 0 and math.copysign(1, a) < 0 and math.copysign(1, b) < 0
    return round_to(Fraction(a) + Fraction(b), kind, both_negative_zero)


def float_multiply(a: float, b: float, kind: str) -> float:
    if not (math.isfinite(a) and math.isfinite(b)):
        return a * b
    negative = (math.copysign(1, a) < 0) != (math.copysign(1, b) < 0)
    return round_to(Fraction(a) * Fraction(b), kind, negative)


def float_divide(a: float, b: float, kind: str) -> float:
    negative = (math.copysign(1, a) < 0) != (math.copysign(1, b) < 0)
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, -1 if negative else 1)
    if not (math.isfinite(a) and math.isfinite(b)):
        return a / b
    return round_to(Fraction(a) / Fraction(b), kind, negative)


def float_mad(a: float, b: float, c: float, kind: str) -> float:
    """a + b*c: rounded once for f16, bf16 and f32; f64 rounds the product first."""
    if kind == "f64":
        return float_add(a, float_multiply(b, c, kind), kind)
    if not all(math.isfinite(v) for v in (a, b, c)):
        return a + b * c
    product_negative = (math.copysign(1, b) < 0) != (math.copysign(1, c) < 0)
    exact = Fraction(a) + Fraction(b) * Fraction(c)
    both_negative_zero = a == 0 and b * c == 0 and math.copysign(1, a) < 0 and product_negative
    return round_to(exact, kind, both_negative_zero)


def float_min_max(op: str, a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return b if math.isnan(a) else a
    if a == 0 and b == 0 and math.copysign(1, a) != math.copysign(1, b):
        raise Unknowable("min/max of +0 and -0")
    return min(a, b) if op == "min" else max(a, b)


def integer_divide(a: int, b: int, kind: str) -> tuple[int, int]:
    if b == 0:
        return wrap(-1, kind), a
    quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return wrap(quotient, kind), wrap(a - quotient * b, kind)


def arithmetic(op: str, a, b, kind: str):
    if is_float(kind):
        if op == "add":
            return float_add(a, b, kind)
        if op == "sub":
            return float_add(a, -b, kind)
        if op == "mul":
            return float_multiply(a, b, kind)
        if op == "div":
            return float_divide(a, b, kind)
        return float_min_max(op, a, b)
    if op in ("div", "mod"):
        return integer_divide(a, b, kind)[op == "mod"]
    return wrap(
        {
            "add": a + b,
            "sub": a - b,
            "mul": a * b,
            "and": a & b,
            "or": a | b,
            "xor": a ^ b,
            "min": min(a, b),
            "max": max(a, b),
        }[op],
        kind,
    )


def compare(op: str, a, b) -> bool:
    return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b}[op]


class Oracle:
    """Types and values of one sample: `env` maps variable names to values."""

    def __init__(self, env: dict, hex_literals: bool, only_types: bool = False):
        self.env = env
        self.hex_literals = hex_literals  # the text form types hex literals as C does; builders see ints
        self.only_types = only_types  # (then an unknowable value is as good as any)

    def typed_value(self, e) -> tuple[str, object]:
        if isinstance(e, Literal):
            kind = own_kind(e, self.hex_literals)
            return kind, literal_as(e.value, kind)
        if isinstance(e, Variable):
            return e.kind, self.env[e.name]
        if isinstance(e, Conversion):
            kind, value = self.typed_value(e.arg)
            return e.kind, convert(value, kind, e.kind, e.saturate)
        if e.op in UNARY:
            return self.unary(e.op, *self.typed_value(e.args[0]))
        if e.op == "select":
            return self.select(*e.args)
        if e.op in ("add3", "mad"):
            return self.ternary(e.op, *e.args)
        if e.op in ("shl", "shr"):
            return self.shift(e.op, *e.args)
        return self.binary(e.op, *e.args)

    def operands(self, a, b) -> tuple[tuple[str, object], tuple[str, object]]:
        """Both operands typed: an untyped literal takes its type from the other operand (the
        left one of two literals stands alone)."""
        if isinstance(a, Literal) and not isinstance(b, Literal):
            typed_b = self.typed_value(b)
            return self.literal_beside(a, typed_b[0]), typed_b
        typed_a = self.typed_value(a)
        typed_b = self.literal_beside(b, typed_a[0]) if isinstance(b, Literal) else self.typed_value(b)
        return typed_a, typed_b

    def literal_beside(self, e, other: str) -> tuple[str, object]:
        if isinstance(e.value, float) and is_float(other):
            return other, literal_as(e.value, other)  # a float literal takes the other's precision
        return self.typed_value(e)

    def common(self, a, b) -> tuple[str, object, object]:
        (ka, va), (kb, vb) = self.operands(a, b)
        kind = usual_conversions(ka, kb)
        return kind, convert(va, ka, kind), convert(vb, kb, kind)

    def unary(self, op: str, kind: str, value):
        if op == "not":
            return "bool", not convert(value, kind, "bool")
        if not is_float(kind):
            value, kind = convert(value, kind, promoted(kind)), promoted(kind)
        if op == "neg":
            return kind, -value if is_float(kind) else wrap(-value, kind)
        return kind, wrap(~value, kind)

    def binary(self, op: str, a, b):
        if op in ("land", "lor"):
            (ka, va), (kb, vb) = self.typed_value(a), self.typed_value(b)
            x, y = convert(va, ka, "bool"), convert(vb, kb, "bool")
            return "bool", (x and y) if op == "land" else (x or y)
        kind, x, y = self.common(a, b)
        if op in COMPARISONS:
            return "bool", compare(op, x, y)
        try:
            return kind, arithmetic(op, x, y, kind)
        except Unknowable:
            if self.only_types:
                return kind, x
            raise

    def shift(self, op: str, a, b):
        (ka, va), (kb, vb) = self.typed_value(a), self.typed_value(b)
        kind = promoted(ka)
        value, count = convert(va, ka, kind), convert(vb, kb, promoted(kb)) & (INT_BITS[kind] - 1)
        return kind, wrap(value << count if op == "shl" else value >> count, kind)

    def select(self, cond, a, b):
        kc, vc = self.typed_value(cond)
        (ka, va), (kb, vb) = self.operands(a, b)
        kind = ka if ka == kb else usual_conversions(ka, kb)  # no promotion when the arms agree
        return kind, convert(va, ka, kind) if convert(vc, kc, "bool") else convert(vb, kb, kind)

    def ternary(self, op: str, a, b, c):
        """add3/mad compute in the type C gives `a + b + c` / `a + b * c`."""
        shape = (
            Operation("add", (Operation("add", (a, b)), c))
            if op == "add3"
            else Operation("add", (a, Operation("mul", (b, c))))
        )
        kind = self.typed_value(shape)[0]
        x, y, z = (self.value_as(e, kind) for e in (a, b, c))
        if op == "add3":
            return kind, wrap(x + y + z, kind)
        if is_float(kind):
            return kind, float_mad(x, y, z, kind)
        return kind, wrap(x + y * z, kind)

    def value_as(self, e, kind: str):
        """An operand converted to `kind` (a number literal rounded once, from its own value)."""
        if isinstance(e, Literal) and not isinstance(e.value, bool) and is_float(kind):
            return literal_as(e.value, kind)
        own, value = self.typed_value(e)
        return convert(value, own, kind)


def literal_as(value, kind: str):
    """A literal's value as type `kind` (floats rounded once from the written value)."""
    if isinstance(value, float) or (is_float(kind) and not isinstance(value, bool)):
        return round_to(Fraction(value), kind, math.copysign(1, value) < 0)
    return value


# Random expressions ---------------------------------------------------------------------------

INT_LITERALS = (0, 1, -1, 7, -300, 2**31 - 1, 2**31, -(2**31), 2**32 - 1, 2**32, 2**63 - 1, 2**63, -(2**63), 2**64 - 1)
FLOAT_LITERALS = (
    0.0,
    -0.0,
    1.5,
    -2.5,
    0.1,
    1e10,
    -1e-10,
    65504.0,
    65520.0,
    3.0e38,
    1e-45,
    2.0**-149,
    16777217.0,
    1.7976931348623157e308,
)


def edge_values(kind: str) -> list:
    if kind == "bool":
        return [False, True]
    if kind in INT_BITS:
        low, high = int_min(kind), int_max(kind)
        return sorted({0, 1, low, high, low + 1, high - 1} | ({-1} if signed(kind) else set()))
    precision, min_exponent, max_exponent = FLOAT_FORMATS[kind]
    largest = float((2 - Fraction(2) ** (1 - precision)) * Fraction(2) ** max_exponent)
    tiny = 2.0 ** (min_exponent - precision + 1)
    return [0.0, -0.0, 1.0, -1.0, largest, -largest, tiny, 2.0**min_exponent, math.inf, -math.inf, math.nan]


def values(kind: str):
    """A strategy for values of `kind` (floats on the type's grid)."""
    if kind == "bool":
        return st.booleans()
    if kind in INT_BITS:
        return st.integers(int_min(kind), int_max(kind))
    return st.floats(allow_nan=True, allow_infinity=True, width=64 if kind == "f64" else 32).map(
        lambda v: v if not math.isfinite(v) or v == 0 else round_exact(Fraction(v), kind)
    )


@st.composite
def literal(draw) -> Literal:
    choice = draw(st.sampled_from(("int", "int", "hex", "float", "bool")))
    if choice == "int":
        return Literal(draw(st.one_of(st.sampled_from(INT_LITERALS), st.integers(-(2**63), 2**64 - 1))))
    if choice == "hex":
        return Literal(
            draw(st.one_of(st.sampled_from([v for v in INT_LITERALS if v >= 0]), st.integers(0, 2**64 - 1))), hex=True
        )
    if choice == "float":
        return Literal(
            draw(st.one_of(st.sampled_from(FLOAT_LITERALS), st.floats(allow_nan=False, allow_infinity=False)))
        )
    return Literal(draw(st.booleans()))


def standalone_kind(e, hex_literals: bool = True) -> str:
    """The type of `e` (types do not depend on values: any values of the variables do)."""
    zeros = {Variable(kind).name: edge_values(kind)[0] for kind in KINDS}
    return Oracle(zeros, hex_literals, only_types=True).typed_value(e)[0]


@st.composite
def expression(draw, depth: int):
    """A random C expression over variables and untyped literals of every type."""
    if depth == 0:
        if draw(st.booleans()):
            return Variable(draw(st.sampled_from(KINDS)))
        return draw(literal())

    def operand(needs_integer: bool = False):
        e = draw(expression(draw(st.integers(0, depth - 1))))
        if needs_integer and is_float(standalone_kind(e)):
            e = Conversion(draw(st.sampled_from(tuple(INT_BITS))), e)
        return e

    kind = draw(st.sampled_from(("unary", "binary", "binary", "binary", "select", "ternary", "conversion")))
    if kind == "unary":
        op = draw(st.sampled_from(tuple(UNARY)))
        return Operation(op, (operand(op in INTEGER_ONLY),))
    if kind == "binary":
        op = draw(st.sampled_from((*BINARY, "min", "max")))
        integer_only = op in INTEGER_ONLY
        return Operation(op, (operand(integer_only), operand(integer_only)))
    if kind == "select":
        return Operation("select", (operand(), operand(), operand()))
    if kind == "ternary":
        op = draw(st.sampled_from(("add3", "mad")))
        return Operation(op, (operand(op == "add3"), operand(op == "add3"), operand(op == "add3")))
    return Conversion(draw(st.sampled_from(KINDS)), operand(), draw(st.booleans()))


def variables(e) -> set[Variable]:
    if isinstance(e, Variable):
        return {e}
    if isinstance(e, Conversion):
        return variables(e.arg)
    if isinstance(e, Operation):
        return set().union(*(variables(a) for a in e.args))
    return set()
