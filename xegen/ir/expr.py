"""IR expressions: small immutable node classes compared structurally.

Nodes are strictly typed: both operands of `Binary` have the same type (shift counts aside),
and the conversions C would insert are explicit `Cast` nodes.  The builder functions and
Python operators (`2*(a+b) - a`) apply C's promotion rules (`xegen.ir.types`) and insert those
casts; the node constructors only check.

`==` compares structure (so nodes can be dict keys); build IR comparisons with `<`, `<=`, `>`,
`>=`, and `.eq()` / `.ne()`.  Python's `/` builds a truncating division, `%` the matching
remainder, `>>` an arithmetic shift for signed and a logical shift for unsigned types.
"""

from __future__ import annotations

import math
import numbers
import re
import struct
from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields
from operator import attrgetter
from typing import Any, ClassVar

from ..errors import Error
from .semantics import round_float, round_int
from .types import BOOL, F32, MAX_LANES, PTR, S32, TYPE_NAME, Type, common_type, literal_type, promote


class IRTypeError(Error):
    """Operands whose types an operator does not accept (e.g. `~` of a float)."""


# Operator tables -------------------------------------------------------------------------

#: floating-point functions of the math unit, written as calls: `exp2(x)`, `inv(x)` = 1/x
MATH_OPS = ("exp2", "log2", "sqrt", "inv")

#: unary operators: name -> C symbol (the math functions: their own name)
UNARY_OPS = {"neg": "-", "not": "!", "bitnot": "~", **{op: op for op in MATH_OPS}}

#: binary operators: name -> (C symbol or function name, category)
BINARY_OPS = {
    "add": ("+", "arith"),
    "sub": ("-", "arith"),
    "mul": ("*", "arith"),
    "div": ("/", "arith"),
    "mod": ("%", "int"),
    "shl": ("<<", "shift"),
    "shr": (">>", "shift"),
    "and": ("&", "int"),
    "or": ("|", "int"),
    "xor": ("^", "int"),
    "min": ("min", "arith"),
    "max": ("max", "arith"),
    "lt": ("<", "compare"),
    "le": ("<=", "compare"),
    "gt": (">", "compare"),
    "ge": (">=", "compare"),
    "eq": ("==", "compare"),
    "ne": ("!=", "compare"),
    "land": ("&&", "logical"),
    "lor": ("||", "logical"),
}

#: ternary operators: add3(a, b, c) = a + b + c; mad(a, b, c) = a + b * c
TERNARY_OPS = ("add3", "mad")

#: operators written as a call, `min(a, b)`: the math functions, the binary ones a word names,
#: and the ternary ones
CALL_OPS = MATH_OPS + tuple(op for op, (symbol, _) in BINARY_OPS.items() if symbol == op) + TERNARY_OPS

#: words of the text form that cannot name a variable or buffer (nor can a type name)
RESERVED_WORDS = frozenset(
    {
        "true",
        "false",
        "inf",
        "nan",
        *CALL_OPS,
        "broadcast",
        "shuffle",
        "let",
        "for",
        "if",
        "else",
        "alloc",
        "null",
        "sat",
        "unroll",
        "stride",
    }
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


# Base class ------------------------------------------------------------------------------


class Node:
    """Structural equality and a cached structural hash for frozen, slotted dataclasses.

    Hashing and comparing walk the tree with an explicit stack, so a tree thousands of levels
    deep (a long sum parsed from text) hashes and compares without running out of recursion."""

    __slots__ = ("_hash", "_children", "_vars")
    _hash: int  # set once by _hash_children_first
    #: set on first use by `visitor.children` and `visitor.free_vars`: a node never changes, and
    #: the passes walk the same subtrees again and again
    _children: tuple[Node, ...]
    _vars: tuple[Var, ...]
    #: every node class is a dataclass (`fields` reads its fields)
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]
    _key_fields: ClassVar[tuple[str, ...]] = ()
    #: `str(node)`: the printer (printer.py) knows every node class, so it installs its
    #: `format_node` here; the package imports it, so every node prints once `xegen.ir` is loaded
    text_form: ClassVar[Callable[[Node], str]]

    def _key(self) -> tuple:
        getter = type(self).__dict__.get("_key_getter")
        if getter is None:
            getter = _key_getter(tuple(f.name for f in fields(self) if f.compare))
            type.__setattr__(type(self), "_key_getter", getter)
        return getter(self)

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            _hash_children_first(self)
            return self._hash

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if type(self) is not type(other) or hash(self) != hash(other):
            return False
        return _same_structure(self, other)

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __str__(self) -> str:
        return Node.text_form(self)


def _key_getter(names: tuple[str, ...]) -> Callable[[Node], tuple]:
    """A function from a node to the tuple of its fields `names` (an `attrgetter`, which builds
    the tuple in C: hashing and comparing call it for every node they meet)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda node: (one(node),)
    return lambda node: ()


def _nodes_in_key(node: Node) -> list[Node]:
    """The nodes among `node`'s compared fields (directly or in a tuple)."""
    found = []
    for value in node._key():
        if isinstance(value, Node):
            found.append(value)
        elif isinstance(value, tuple):
            found.extend(item for item in value if isinstance(item, Node))
    return found


def _hash_children_first(root: Node) -> None:
    """Cache the hash of `root` and of the nodes below it that have none, deepest first, so
    that hashing a node never recurses far (its children's hashes are already cached)."""
    pending, order, seen = [root], [], set()
    while pending:
        node = pending.pop()
        if id(node) in seen or hasattr(node, "_hash"):
            continue
        seen.add(id(node))
        order.append(node)
        pending.extend(_nodes_in_key(node))
    for node in reversed(order):  # children come after their parents in `order`
        if not hasattr(node, "_hash"):
            object.__setattr__(node, "_hash", hash((type(node).__name__, node._key())))


def _same_structure(a: Node, b: Node) -> bool:
    """Do two nodes of one type and hash have equal fields, all the way down?"""
    pending, seen = [(a, b)], set()
    while pending:
        x, y = pending.pop()
        if x is y:
            continue
        if isinstance(x, Node) or isinstance(y, Node):
            if type(x) is not type(y) or hash(x) != hash(y):
                return False
            if (id(x), id(y)) not in seen:  # (shared subtrees are compared once)
                seen.add((id(x), id(y)))
                pending.extend(zip(x._key(), y._key(), strict=True))
        elif isinstance(x, tuple) and isinstance(y, tuple):
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y, strict=True))
        elif x != y:
            return False
    return True


class Expr(Node):
    """Base of all expressions; every expression has a `type`."""

    __slots__ = ()
    type: Type

    def __bool__(self):
        raise TypeError("an IR expression has no truth value; use select() or .eq()/.ne() to build IR")

    # arithmetic
    def __add__(self, other):
        return binary("add", self, other)

    def __radd__(self, other):
        return binary("add", other, self)

    def __sub__(self, other):
        return binary("sub", self, other)

    def __rsub__(self, other):
        return binary("sub", other, self)

    def __mul__(self, other):
        return binary("mul", self, other)

    def __rmul__(self, other):
        return binary("mul", other, self)

    def __truediv__(self, other):
        return binary("div", self, other)

    def __rtruediv__(self, other):
        return binary("div", other, self)

    def __mod__(self, other):
        return binary("mod", self, other)

    def __rmod__(self, other):
        return binary("mod", other, self)

    def __lshift__(self, other):
        return binary("shl", self, other)

    def __rlshift__(self, other):
        return binary("shl", other, self)

    def __rshift__(self, other):
        return binary("shr", self, other)

    def __rrshift__(self, other):
        return binary("shr", other, self)

    def __and__(self, other):
        return binary("and", self, other)

    def __rand__(self, other):
        return binary("and", other, self)

    def __or__(self, other):
        return binary("or", self, other)

    def __ror__(self, other):
        return binary("or", other, self)

    def __xor__(self, other):
        return binary("xor", self, other)

    def __rxor__(self, other):
        return binary("xor", other, self)

    def __neg__(self):
        return unary("neg", self)

    def __invert__(self):
        return unary("bitnot", self)

    # comparisons (== and != stay structural)
    def __lt__(self, other):
        return binary("lt", self, other)

    def __le__(self, other):
        return binary("le", self, other)

    def __gt__(self, other):
        return binary("gt", self, other)

    def __ge__(self, other):
        return binary("ge", self, other)

    def eq(self, other) -> Expr:
        return binary("eq", self, other)

    def ne(self, other) -> Expr:
        return binary("ne", self, other)

    def cast(self, type: Type | str, saturate: bool = False) -> Expr:
        return cast(type, self, saturate)


def _set_type(node: Expr, type: Type) -> None:
    object.__setattr__(node, "type", type)


# Leaves ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Var(Expr):
    name: str
    type: Type = S32

    def __post_init__(self):
        # the name must print and parse back as this variable
        if not (isinstance(self.name, str) and _NAME.fullmatch(self.name)):
            raise IRTypeError(f"variable name {self.name!r} is not an identifier ([A-Za-z_][A-Za-z_0-9]*)")
        if self.name in RESERVED_WORDS or TYPE_NAME.fullmatch(self.name):
            raise IRTypeError(f"'{self.name}' is a reserved word, not a variable name")


@dataclass(frozen=True, slots=True, eq=False)
class IntImm(Expr):
    value: int
    type: Type = S32

    def __post_init__(self):
        if isinstance(self.value, bool) or not isinstance(self.value, numbers.Integral):
            raise IRTypeError(f"an integer immediate needs an integer value, not {self.value!r}")
        object.__setattr__(self, "value", int(self.value))  # (numpy integers become Python ints)
        if not self.type.is_int:
            raise IRTypeError(f"an integer immediate needs an integer type, not {self.type}")
        if not self.type.can_represent(self.value):
            raise IRTypeError(f"{self.value} does not fit {self.type}")


def _float_bits(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


@dataclass(frozen=True, slots=True, eq=False)
class FloatImm(Expr):
    """A floating-point immediate; `value` is already rounded to `type` (compared bitwise, so NaN == NaN)."""

    value: float
    type: Type = F32

    def __post_init__(self):
        if not self.type.is_float:
            raise IRTypeError(f"a float immediate needs a float type, not {self.type}")
        value = self.value
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            value = round_int(int(value), self.type)  # one rounding, even above 2^53
        object.__setattr__(self, "value", round_float(float(value), self.type))

    def _key(self) -> tuple:
        return (_float_bits(self.value) if not math.isnan(self.value) else "nan", self.type)


@dataclass(frozen=True, slots=True, eq=False)
class BoolImm(Expr):
    value: bool
    type: Type = field(default=BOOL, init=False, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "value", bool(self.value))


# Operators -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Unary(Expr):
    op: str
    a: Expr
    type: Type = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        t = self.a.type
        if self.op == "neg":
            ok = t.is_int or t.is_float
        elif self.op == "not":
            ok = t.is_bool
        elif self.op == "bitnot":
            ok = t.is_int
        elif self.op in MATH_OPS:
            ok = t.is_float
        else:
            raise ValueError(f"unknown unary operator {self.op!r}")
        if not ok:
            raise IRTypeError(f"'{UNARY_OPS[self.op]}' does not apply to {t}")
        _set_type(self, t)


@dataclass(frozen=True, slots=True, eq=False)
class Binary(Expr):
    op: str
    a: Expr
    b: Expr
    type: Type = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        if self.op not in BINARY_OPS:
            raise ValueError(f"unknown binary operator {self.op!r}")
        symbol, category = BINARY_OPS[self.op]
        ta, tb = self.a.type, self.b.type
        if category == "shift":
            ok = ta.is_int and tb.is_int and ta.lanes == tb.lanes
        elif category == "logical":
            ok = ta.is_bool and ta == tb
        elif category == "compare":
            ok = ta == tb and not ta.is_ptr
        elif category == "int":
            ok = ta == tb and ta.is_int
        else:  # arith
            ok = ta == tb and (ta.is_int or ta.is_float)
        if not ok:
            raise IRTypeError(f"'{symbol}' does not apply to {ta} and {tb}")
        _set_type(self, BOOL.with_lanes(ta.lanes) if category == "compare" else ta)


@dataclass(frozen=True, slots=True, eq=False)
class Ternary(Expr):
    """add3(a, b, c) = a + b + c and mad(a, b, c) = a + b * c, all operands of one type."""

    op: str
    a: Expr
    b: Expr
    c: Expr
    type: Type = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        if self.op not in TERNARY_OPS:
            raise ValueError(f"unknown ternary operator {self.op!r}")
        t = self.a.type
        if not (t == self.b.type == self.c.type and (t.is_int or t.is_float)):
            raise IRTypeError(f"{self.op} needs three numbers of one type, not {t}, {self.b.type}, {self.c.type}")
        if self.op == "add3" and not t.is_int:
            raise IRTypeError(f"add3 needs integers, not {t}")
        _set_type(self, t)


@dataclass(frozen=True, slots=True, eq=False)
class Select(Expr):
    cond: Expr
    true_value: Expr
    false_value: Expr
    type: Type = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        if not self.cond.type.is_bool:
            raise IRTypeError(f"a select condition must be bool, not {self.cond.type}")
        if self.true_value.type != self.false_value.type:
            raise IRTypeError(f"select arms differ: {self.true_value.type} and {self.false_value.type}")
        if self.cond.type.lanes not in (1, self.true_value.type.lanes):
            raise IRTypeError("a select condition must be scalar or have the arms' lanes")
        _set_type(self, self.true_value.type)


@dataclass(frozen=True, slots=True, eq=False)
class Cast(Expr):
    """Conversion to `type`: integers wrap (or clamp when `saturate`); float to integer truncates
    toward zero and clamps to the range, NaN giving 0; to float rounds to nearest even."""

    type: Type
    value: Expr
    saturate: bool = False

    def __post_init__(self):
        if self.type.lanes != self.value.type.lanes:
            raise IRTypeError(f"cannot cast {self.value.type} to {self.type}: lane counts differ")
        if self.type.is_ptr or self.value.type.is_ptr:
            raise IRTypeError("pointers cannot be cast")


@dataclass(frozen=True, slots=True, eq=False)
class Load(Expr):
    """`type` (lanes elements) read from `buffer` at byte `offset`; lane i at offset + i*stride.

    `stride` is in bytes; None means dense (the element size).  A vector `offset` (one byte
    offset per lane) is a gather and takes no stride."""

    buffer: Var
    offset: Expr
    type: Type
    stride: int | None = None

    def __post_init__(self):
        if not self.buffer.type.is_ptr:
            raise IRTypeError(f"load from '{self.buffer.name}', which is not a buffer")
        if not self.offset.type.is_int or self.offset.type.lanes not in (1, self.type.lanes):
            raise IRTypeError(f"a load offset must be an integer scalar or one per lane, not {self.offset.type}")
        if self.offset.type.lanes > 1 and self.stride is not None:
            raise IRTypeError("a gather (vector offset) takes no stride")


@dataclass(frozen=True, slots=True, eq=False)
class Ptr(Expr):
    """The address `buffer + offset` (bytes): how calls name memory and register operands."""

    buffer: Var
    offset: Expr
    type: Type = field(default=PTR, init=False, compare=False, repr=False)

    def __post_init__(self):
        if not self.buffer.type.is_ptr:
            raise IRTypeError(f"'{self.buffer.name}' is not a buffer")
        if not (self.offset.type.is_int and self.offset.type.lanes == 1):
            raise IRTypeError(f"a pointer offset must be an integer scalar, not {self.offset.type}")


@dataclass(frozen=True, slots=True, eq=False)
class Broadcast(Expr):
    value: Expr
    lanes: int
    type: Type = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        if self.value.type.lanes != 1 or not 2 <= self.lanes <= MAX_LANES:
            raise IRTypeError(f"broadcast takes a scalar to 2 to {MAX_LANES} lanes")
        _set_type(self, self.value.type.with_lanes(self.lanes))


@dataclass(frozen=True, slots=True, eq=False)
class Shuffle(Expr):
    """Lanes of the concatenation of `vectors`, picked by `indices`."""

    vectors: tuple[Expr, ...]
    indices: tuple[int, ...]
    type: Type = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        if not self.vectors or not 1 <= len(self.indices) <= MAX_LANES:
            raise IRTypeError(f"shuffle needs at least one vector and 1 to {MAX_LANES} indices")
        kind = self.vectors[0].type.scalar
        if any(v.type.scalar != kind for v in self.vectors):
            raise IRTypeError("shuffled vectors must share an element type")
        total = sum(v.type.lanes for v in self.vectors)
        if any(not 0 <= i < total for i in self.indices):
            raise IRTypeError(f"shuffle index out of range 0..{total - 1}")
        _set_type(self, kind.with_lanes(len(self.indices)))


# Builders (C promotion rules) ------------------------------------------------------------


def _wrap(value: int, type: Type) -> int:
    bits = type.bits
    value &= (1 << bits) - 1
    if type.is_signed and value >> (bits - 1):
        value -= 1 << bits
    return value


def const(value: int | float | bool, type: Type | str | None = None) -> Expr:
    """An immediate; without a type: bool, s32/s64/u64 by magnitude, or f32."""
    if isinstance(type, str):
        type = Type.parse(type)
    if isinstance(value, bool):
        if type not in (None, BOOL):
            raise IRTypeError(f"a bool constant cannot have type {type}")
        return BoolImm(value)
    if type is None:
        type = literal_type(value) if isinstance(value, int) else F32
    if type.lanes > 1:
        return Broadcast(const(value, type.scalar), type.lanes)
    if type.is_float:
        return FloatImm(value, type)
    if type.is_bool:
        return BoolImm(bool(value))
    if isinstance(value, float):
        raise IRTypeError(f"{value} is not an integer")
    return IntImm(_wrap(value, type), type)


def as_expr(value, like: Type | None = None) -> Expr:
    """Turn a Python number into an immediate, taking the promoted type of `like` where C would."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return BoolImm(value)
    if isinstance(value, (int, float)):
        if like is None or like.is_ptr:
            return const(value)
        if isinstance(value, float) and like.is_float:
            return const(value, like.scalar)  # a float literal takes the other operand's precision
        literal = literal_type(value) if isinstance(value, int) else F32
        return const(value, common_type(like.scalar, literal))
    raise TypeError(f"cannot make an IR expression of {value!r}")


def cast(type: Type | str, value, saturate: bool = False) -> Expr:
    """Convert `value` to `type` (lanes follow the value when `type` is scalar)."""
    if isinstance(type, str):
        type = Type.parse(type)
    value = as_expr(value)
    if type.lanes == 1 and value.type.lanes > 1:
        type = type.with_lanes(value.type.lanes)
    if value.type == type and not saturate:
        return value
    return Cast(type, value, saturate)


def _match_lanes(a: Expr, b: Expr) -> tuple[Expr, Expr]:
    if a.type.lanes == b.type.lanes:
        return a, b
    if a.type.lanes == 1:
        return Broadcast(a, b.type.lanes), b
    if b.type.lanes == 1:
        return a, Broadcast(b, a.type.lanes)
    raise IRTypeError(f"lane counts differ: {a.type} and {b.type}")


def _to_bool(e: Expr) -> Expr:
    """C truth value of a number: e != 0."""
    if e.type.is_bool:
        return e
    return binary("ne", e, 0)


def _operands(a, b) -> tuple[Expr, Expr]:
    """Both operands as expressions, Python numbers typed after the other operand."""
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        a = as_expr(a)
    if not isinstance(a, Expr):
        a = as_expr(a, b.type)
    if not isinstance(b, Expr):
        b = as_expr(b, a.type)
    return a, b


def unary(op: str, a) -> Expr:
    a = as_expr(a)
    if op == "not":
        return Unary("not", _to_bool(a))
    if op in ("neg", "bitnot") and (a.type.is_bool or (a.type.is_int and a.type.bits < 32)):
        a = cast(promote(a.type), a)
    return Unary(op, a)


def binary(op: str, a, b) -> Expr:
    """Build `a op b` with C's conversions: promotion, common type, bool contexts."""
    category = BINARY_OPS[op][1]
    # shift and logical operands convert separately (C converts each `&&` operand to bool on
    # its own), so a literal keeps its own type there: `h && -1e-10` with h f16 is not `h && -0.0`
    a, b = (as_expr(a), as_expr(b)) if category in ("shift", "logical") else _operands(a, b)
    if category == "logical":
        a, b = _match_lanes(_to_bool(a), _to_bool(b))
        return Binary(op, a, b)
    a, b = _match_lanes(a, b)
    if category == "shift":
        return Binary(op, cast(promote(a.type), a), cast(promote(b.type), b))
    if category == "int" and (a.type.is_float or b.type.is_float):
        raise IRTypeError(f"'{BINARY_OPS[op][0]}' does not apply to {a.type} and {b.type}")
    if a.type.is_bool and b.type.is_bool and op in ("eq", "ne"):
        return Binary(op, a, b)
    if a.type.is_ptr or b.type.is_ptr:
        raise IRTypeError(f"'{BINARY_OPS[op][0]}' does not apply to buffers")
    target = common_type(a.type, b.type)
    return Binary(op, cast(target, a), cast(target, b))


def ternary(op: str, a, b, c) -> Expr:
    """add3(a, b, c) or mad(a, b, c), all three converted to the type C gives `a + b + c` or
    `a + b * c`: Python numbers count with the type C gives a literal there, so
    `mad(x, y, 1.5)` is f32 like `x + y * 1.5`, and no literal is converted to a narrower type."""
    if op == "add3":
        target = binary("add", binary("add", a, b), c).type
    else:
        target = binary("add", a, binary("mul", b, c)).type
    if op == "add3" and target.is_float:
        raise IRTypeError(f"add3 needs integers, not {target}")
    values = [cast(target.scalar, as_expr(x, target)) for x in (a, b, c)]
    values = [Broadcast(v, target.lanes) if v.type.lanes < target.lanes else v for v in values]
    return Ternary(op, *values)


def add3(a, b, c) -> Expr:
    return ternary("add3", a, b, c)


def mad(a, b, c) -> Expr:
    """a + b * c"""
    return ternary("mad", a, b, c)


def min_(a, b) -> Expr:
    return binary("min", a, b)


def max_(a, b) -> Expr:
    return binary("max", a, b)


def logical_and(a, b) -> Expr:
    return binary("land", a, b)


def logical_or(a, b) -> Expr:
    return binary("lor", a, b)


def logical_not(a) -> Expr:
    return unary("not", a)


def select(cond, true_value, false_value) -> Expr:
    cond = _to_bool(as_expr(cond))
    t, f = _operands(true_value, false_value)
    if t.type != f.type:
        if t.type.is_bool and f.type.is_bool:
            t, f = _match_lanes(t, f)
        else:
            t, f = _match_lanes(t, f)
            target = common_type(t.type, f.type)
            t, f = cast(target, t), cast(target, f)
    if cond.type.lanes > 1 and t.type.lanes == 1:
        t, f = Broadcast(t, cond.type.lanes), Broadcast(f, cond.type.lanes)
    return Select(cond, t, f)


def load(buffer: Var, offset, type: Type | str, stride: int | None = None) -> Load:
    if isinstance(type, str):
        type = Type.parse(type)
    return Load(buffer, as_expr(offset), type, stride)


def ptr(buffer: Var, offset=0) -> Ptr:
    return Ptr(buffer, as_expr(offset))


def buffer(name: str) -> Var:
    """A buffer variable (its type is `ptr`; loads and stores say the element type)."""
    return Var(name, PTR)


def var(name: str, type: Type | str = S32) -> Var:
    return Var(name, Type.parse(type) if isinstance(type, str) else type)
