"""IR types: scalar kinds, vectors of them, pointers, and C-like promotion rules.

A `Type` is a scalar kind (`s32`, `f16`, ...) and a lane count (`s32x8` is eight s32 lanes).
`ptr` is the type of buffer variables (a 64-bit address); loads and stores say the element type.

Integer promotion (what `a + b` builds, and what `parse_expr` does), as in C:
1. bool, s8, u8, s16 and u16 operands of arithmetic are first converted to s32.
2. If either operand is floating point, both become the wider float (f64 > f32 > f16, bf16;
   f16 with bf16 gives f32).
3. Otherwise both are integers of at least 32 bits: the same signedness gives the wider type;
   an unsigned type at least as wide as the signed one wins; a wider signed type wins over a
   narrower unsigned one (s64 with u32 gives s64).
Shifts promote each operand on its own and take the left operand's type.
Comparisons promote both operands as above and give bool.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_INT_BITS = {"s8": 8, "u8": 8, "s16": 16, "u16": 16, "s32": 32, "u32": 32, "s64": 64, "u64": 64}
_FLOAT_BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}
KINDS = ("bool", *_INT_BITS, *_FLOAT_BITS, "ptr")
#: the most lanes a vector type may have (Xe's widest register operand is 32 lanes; messages and
#: `shuffle` build wider values, but nothing near this many)
MAX_LANES = 1024


@dataclass(frozen=True, slots=True)
class Type:
    kind: str
    lanes: int = 1

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown type kind {self.kind!r}")
        if not 1 <= self.lanes <= MAX_LANES:
            raise ValueError(f"a vector type has 1 to {MAX_LANES} lanes, not {self.lanes}")

    # -- classification ------------------------------------------------------------------
    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_int(self) -> bool:
        return self.kind in _INT_BITS

    @property
    def is_float(self) -> bool:
        return self.kind in _FLOAT_BITS

    @property
    def is_ptr(self) -> bool:
        return self.kind == "ptr"

    @property
    def is_signed(self) -> bool:
        return self.kind[0] == "s" or self.is_float

    @property
    def is_vector(self) -> bool:
        return self.lanes > 1

    @property
    def bits(self) -> int:
        """Bits of one lane (bool counts as 8, ptr as 64)."""
        if self.kind in _INT_BITS:
            return _INT_BITS[self.kind]
        if self.kind in _FLOAT_BITS:
            return _FLOAT_BITS[self.kind]
        return 64 if self.is_ptr else 8

    @property
    def size(self) -> int:
        """Bytes of one lane in memory."""
        return self.bits // 8

    @property
    def min(self) -> int:
        if not self.is_int:
            raise ValueError(f"{self} has no integer range")
        return -(1 << (self.bits - 1)) if self.is_signed else 0

    @property
    def max(self) -> int:
        if not self.is_int:
            raise ValueError(f"{self} has no integer range")
        return (1 << (self.bits - 1)) - 1 if self.is_signed else (1 << self.bits) - 1

    def can_represent(self, value: int) -> bool:
        return self.min <= value <= self.max

    # -- derived types ---------------------------------------------------------------------
    @property
    def scalar(self) -> Type:
        return self if self.lanes == 1 else Type(self.kind, 1)

    def with_lanes(self, lanes: int) -> Type:
        return self if lanes == self.lanes else Type(self.kind, lanes)

    def with_kind(self, kind: str) -> Type:
        return Type(kind, self.lanes)

    def __str__(self) -> str:
        return self.kind if self.lanes == 1 else f"{self.kind}x{self.lanes}"

    def __repr__(self) -> str:
        return f"Type({str(self)!r})"

    @staticmethod
    def parse(text: str) -> Type:
        """`s32`, `f16x8`: raises ValueError for anything else."""
        kind, sep, lanes = text.partition("x")
        if kind not in KINDS or (sep and not (lanes.isdigit() and lanes.isascii())):
            raise ValueError(f"unknown type {text!r}")
        if sep and not 1 <= int(lanes) <= MAX_LANES:
            raise ValueError(f"{text}: a vector type has 1 to {MAX_LANES} lanes")
        return Type(kind, int(lanes) if sep else 1)


BOOL = Type("bool")
S8, U8, S16, U16 = Type("s8"), Type("u8"), Type("s16"), Type("u16")
S32, U32, S64, U64 = Type("s32"), Type("u32"), Type("s64"), Type("u64")
F16, BF16, F32, F64 = Type("f16"), Type("bf16"), Type("f32"), Type("f64")
PTR = Type("ptr")

INT_TYPES = (S8, U8, S16, U16, S32, U32, S64, U64)
FLOAT_TYPES = (F16, BF16, F32, F64)
SCALAR_TYPES = (BOOL, *INT_TYPES, *FLOAT_TYPES)


#: what a type name looks like (a kind, perhaps with a lane count): never a variable name
TYPE_NAME = re.compile(rf"(?:{'|'.join(KINDS)})(?:x[0-9]+)?")


def promote(t: Type) -> Type:
    """Integer promotion of one operand: narrow integers and bool become s32."""
    if t.is_bool or (t.is_int and t.bits < 32):
        return S32.with_lanes(t.lanes)
    return t


def common_type(a: Type, b: Type) -> Type:
    """The type both operands of an arithmetic or comparison operator convert to (C rules)."""
    lanes = max(a.lanes, b.lanes)
    a, b = promote(a.scalar), promote(b.scalar)
    if a == b:
        return a.with_lanes(lanes)
    if a.is_float or b.is_float:
        if not (a.is_float and b.is_float):
            return (a if a.is_float else b).with_lanes(lanes)
        if a.bits != b.bits:
            return (a if a.bits > b.bits else b).with_lanes(lanes)
        return F32.with_lanes(lanes)  # f16 with bf16
    if a.is_signed == b.is_signed:
        return (a if a.bits >= b.bits else b).with_lanes(lanes)
    signed, unsigned = (a, b) if a.is_signed else (b, a)
    if unsigned.bits >= signed.bits:
        return unsigned.with_lanes(lanes)
    return signed.with_lanes(lanes)


def literal_type(value: int) -> Type:
    """The type a decimal integer literal gets without annotation: s32 if it fits, else s64, else
    u64 (C has no type for a decimal literal above s64's maximum; it is u64 here)."""
    if S32.can_represent(value):
        return S32
    if S64.can_represent(value):
        return S64
    return U64


def hex_literal_type(value: int) -> Type:
    """The type C gives a hexadecimal literal: the first of s32, u32, s64, u64 that holds it."""
    return next(t for t in (S32, U32, S64, U64) if t.can_represent(value))
