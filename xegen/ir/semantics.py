"""The meaning of every IR operator, on numpy arrays: the definition every rule, pass and
simulator instruction is tested against.

Values are numpy arrays of the type's own dtype (bf16 is kept in float32 arrays whose values
lie on the bf16 grid).  Integer arithmetic wraps around at the type's width.

Defined edge cases (the same as RISC-V's, so every operation is total):
- `x / 0` is -1 (all ones: the maximum for unsigned types) and `x % 0` is `x`;
- `MIN / -1` wraps to `MIN` and `MIN % -1` is 0;
- shift counts use only their low log2(width) bits (`x << 33` on s32 is `x << 1`);
- `>>` is arithmetic on signed types and logical on unsigned types;
- float to integer conversion truncates toward zero and clamps to the integer range, NaN gives 0
  (what Xe's `mov` does); integer to integer wraps, or clamps when the cast saturates;
- float min/max return the other operand when one is NaN (Xe `sel.l`/`sel.ge`, IEEE minNum);
- float `mad` is fused for f16, bf16 and f32: a + b*c rounded once.  f64 `mad` is not fused
  (b*c is rounded to f64, then the sum), as the simulator's f64 `mad` does.
Float arithmetic rounds to nearest even in the operation's type (f16 and bf16 are computed in
f32 and rounded, which is exact rounding for + - * /).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .types import BOOL, Type

_DTYPES = {
    "bool": np.bool_,
    "s8": np.int8,
    "u8": np.uint8,
    "s16": np.int16,
    "u16": np.uint16,
    "s32": np.int32,
    "u32": np.uint32,
    "s64": np.int64,
    "u64": np.uint64,
    "f16": np.float16,
    "bf16": np.float32,
    "f32": np.float32,
    "f64": np.float64,
}
_UNSIGNED_OF = {"s8": np.uint8, "s16": np.uint16, "s32": np.uint32, "s64": np.uint64}


def numpy_dtype(t: Type) -> np.dtype:
    """The numpy dtype that holds values of `t` (bf16 lives in float32)."""
    return np.dtype(_DTYPES[t.kind])


# Rounding ---------------------------------------------------------------------------------


def _round_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round float64 values to the bf16 grid (nearest even), returned as float32."""
    x = np.asarray(x, dtype=np.float64)
    bits = x.view(np.uint64)
    # Normal range: round the f64 significand to 8 bits (7 stored): drop 45 low bits.
    keep = np.uint64(1) << np.uint64(45)
    lsb = (bits >> np.uint64(45)) & np.uint64(1)
    rounded = ((bits + (keep >> np.uint64(1)) - np.uint64(1) + lsb) & ~(keep - np.uint64(1))).view(np.float64)
    finite = np.isfinite(x)
    result = np.where(finite, rounded, x)
    # Subnormal range of bf16 (|x| < 2^-126): a fixed grid of 2^-133.
    tiny = np.abs(x) < 2.0**-126
    if np.any(tiny):
        result = np.where(tiny, np.rint(x * 2.0**133) * 2.0**-133, result)
    with np.errstate(over="ignore"):
        return result.astype(np.float32)


def round_array(x, t: Type) -> np.ndarray:
    """Round float values (any float dtype) to type `t`, in `t`'s dtype."""
    if t.kind == "bf16":
        return _round_to_bf16(x)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x).astype(_DTYPES[t.kind])


def round_float(value: float, t: Type) -> float:
    """A Python float rounded to float type `t` (for immediates)."""
    return float(round_array(np.float64(value), t))


_PRECISION = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}


def round_int(value: int, t: Type) -> float:
    """A Python integer of any size rounded once to float type `t` (nearest even)."""
    rounded = _exact_round_int(value, _PRECISION[t.kind])
    if rounded.bit_length() > 1024:
        return math.copysign(math.inf, value)
    return round_float(float(rounded), t)  # exact to f64; only overflow to inf can remain


# Conversions ------------------------------------------------------------------------------


def _int_to_float(x: np.ndarray, to: Type) -> np.ndarray:
    if to.kind in ("f32", "f64") or np.all(np.abs(x.astype(np.float64)) < 2.0**53):
        # int -> f64 is exact below 2^53, so one rounding to the target follows.
        wide = x.astype(np.float64) if to.kind != "f32" else x.astype(np.float32)
        return round_array(wide, to) if to.kind in ("f16", "bf16") else wide.astype(_DTYPES[to.kind])

    # Huge 64-bit integers: round exactly through Python integers.
    def one(v):
        return round_int(int(v), to)

    return np.vectorize(one, otypes=[_DTYPES[to.kind]])(x)


def _exact_round_int(v: int, precision: int) -> int:
    """Round integer v to `precision` significant bits, nearest even."""
    magnitude = abs(v)
    drop = magnitude.bit_length() - precision
    if drop <= 0:
        return v
    quotient, remainder = divmod(magnitude, 1 << drop)
    half = 1 << (drop - 1)
    if remainder > half or (remainder == half and quotient & 1):
        quotient += 1
    return (quotient << drop) * (1 if v >= 0 else -1)


def _float_to_int(x: np.ndarray, to: Type) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    truncated = np.trunc(np.nan_to_num(x, nan=0.0, posinf=np.inf, neginf=-np.inf))
    low, high = float(to.min), float(to.max)
    if to.bits < 64:
        return np.clip(truncated, low, high).astype(np.int64).astype(_DTYPES[to.kind])
    # 64-bit: the maximum is not a double; values at or above 2^63 (2^64) clamp to it.
    limit = 2.0**63 if to.is_signed else 2.0**64
    big = truncated >= limit
    safe = np.clip(truncated, low, np.nextafter(limit, 0))
    result = safe.astype(_DTYPES[to.kind])
    return np.where(big, np.array(to.max, dtype=_DTYPES[to.kind]), result)


def _saturate_int(x: np.ndarray, frm: Type, to: Type) -> np.ndarray:
    if frm.kind == "u64":
        return np.minimum(x, np.uint64(to.max)).astype(_DTYPES[to.kind])
    wide = x.astype(np.int64)
    low = max(to.min, -(1 << 63))
    clipped = np.maximum(wide, low)
    if to.max < (1 << 63):
        clipped = np.minimum(clipped, to.max)
    return clipped.astype(_DTYPES[to.kind])


def convert(x, frm: Type, to: Type, saturate: bool = False) -> np.ndarray:
    """Cast values of scalar kind `frm` to `to` (see the module docstring for the rules)."""
    x = np.asarray(x)
    if frm.kind == to.kind and not saturate:
        return x
    with np.errstate(over="ignore", invalid="ignore"):
        if to.is_bool:
            return x != 0
        if frm.is_bool:
            x = x.astype(np.int32)
            frm = Type("s32")
        if to.is_float:
            if frm.is_float:
                result = round_array(x, to)
            else:
                result = _int_to_float(x, to)
            if saturate:  # saturation to a float type clamps to [0, 1]
                result = np.clip(result, 0, 1).astype(result.dtype)
            return result
        if frm.is_float:
            return _float_to_int(x, to)
        if saturate:
            return _saturate_int(x, frm, to)
        return x.astype(_DTYPES[to.kind])


# Integer division -------------------------------------------------------------------------


def _divide(a: np.ndarray, b: np.ndarray, t: Type) -> tuple[np.ndarray, np.ndarray]:
    """Truncating quotient and remainder with the defined results for zero and MIN / -1."""
    dtype = _DTYPES[t.kind]
    zero = b == 0
    if not t.is_signed:
        safe = np.where(zero, np.ones_like(b), b)
        quotient = np.where(zero, np.array(t.max, dtype=dtype), a // safe)
        remainder = np.where(zero, a, a % safe)
        return quotient.astype(dtype), remainder.astype(dtype)
    unsigned = _UNSIGNED_OF[t.kind]
    ua = np.where(a < 0, (0 - a.astype(unsigned)), a.astype(unsigned)).astype(unsigned)
    ub = np.where(b < 0, (0 - b.astype(unsigned)), b.astype(unsigned)).astype(unsigned)
    ub = np.where(zero, np.ones_like(ub), ub)
    uq = ua // ub
    negative = (a < 0) != (b < 0)
    quotient = np.where(negative, (0 - uq).astype(unsigned), uq).astype(dtype)
    quotient = np.where(zero, np.array(-1, dtype=dtype), quotient)
    remainder = (a - quotient * b).astype(dtype)
    remainder = np.where(zero, a, remainder)
    return quotient, remainder


# Operators --------------------------------------------------------------------------------


def unary(op: str, x: np.ndarray, t: Type) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        if op == "neg":
            return -x if t.is_float else (0 - x).astype(_DTYPES[t.kind])
        if op == "not":
            return np.logical_not(x)
        if op == "bitnot":
            return np.invert(x)
    if op in _MATH:
        # computed in float64 and rounded once to the type, as the simulator's math unit does
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return round_array(_MATH[op](np.asarray(x, dtype=np.float64)), t)
    raise ValueError(f"unknown unary operator {op!r}")


_MATH: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp2": np.exp2,
    "log2": np.log2,
    "sqrt": np.sqrt,
    "inv": lambda x: 1 / x,
}


def _shift_count(b: np.ndarray, t: Type) -> np.ndarray:
    return (b.astype(np.uint64) & np.uint64(t.bits - 1)).astype(_DTYPES[t.kind])


def binary(op: str, a: np.ndarray, b: np.ndarray, t: Type, result: Type | None = None) -> np.ndarray:
    """`a op b` for operands of scalar kind `t` (for shifts, `t` is the left operand's type)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if t.is_float:
            return _float_binary(op, a, b, t)
        if op == "add":
            return a + b
        if op == "sub":
            return a - b
        if op == "mul":
            return a * b
        if op == "div":
            return _divide(a, b, t)[0]
        if op == "mod":
            return _divide(a, b, t)[1]
        if op == "shl":
            return np.left_shift(a, _shift_count(b, t))
        if op == "shr":
            return np.right_shift(a, _shift_count(b, t))
        if op in ("and", "land"):
            return a & b
        if op in ("or", "lor"):
            return a | b
        if op == "xor":
            return a ^ b
        if op == "min":
            return np.minimum(a, b)
        if op == "max":
            return np.maximum(a, b)
        return _compare(op, a, b)


def _compare(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return {
        "lt": np.less,
        "le": np.less_equal,
        "gt": np.greater,
        "ge": np.greater_equal,
        "eq": np.equal,
        "ne": np.not_equal,
    }[op](a, b)


def _float_binary(op: str, a: np.ndarray, b: np.ndarray, t: Type) -> np.ndarray:
    if op in ("lt", "le", "gt", "ge", "eq", "ne"):
        return _compare(op, a, b)
    if op == "min":
        return np.fmin(a, b)
    if op == "max":
        return np.fmax(a, b)
    operation = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}.get(op)
    if operation is None:
        raise ValueError(f"'{op}' does not apply to {t}")
    value = operation(a, b)
    return round_array(value, t) if t.kind == "bf16" else value


def ternary(op: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, t: Type) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        if op == "add3":
            return a + b + c
        if t.is_int:
            return a + b * c
        if t.kind == "f64":
            return a + b * c  # not fused: two roundings
        return round_array(_fused_sum_round_to_odd(a, b, c), t)


def _fused_sum_round_to_odd(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a + b*c for f16, bf16 and f32 values, rounded to f64 with round-to-odd.

    The product of two values of at most 24 significant bits is exact in f64, and TwoSum gives
    the error of the f64 sum exactly.  Rounding to odd keeps a sticky bit: a value rounded to
    odd in f64 (53 bits) rounds to any format of at most 51 bits exactly as the exact value
    would, so the one rounding to the target type that follows is the only one that counts."""
    a, b, c = (np.asarray(x, dtype=np.float64) for x in (a, b, c))
    product = b * c
    total = a + product
    # TwoSum (Knuth): error = (a + product) - total, exactly (no overflow is possible here)
    back = total - a
    error = (a - (total - back)) + (product - back)
    inexact = np.isfinite(total) & (error != 0)
    even = (total.view(np.uint64) & np.uint64(1)) == 0
    toward_error = np.nextafter(total, np.where(error > 0, np.inf, -np.inf))
    return np.where(inexact & even, toward_error, total)


def select(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(cond, a, b)


def scalar_value(x: np.ndarray, t: Type):
    """A Python number (or list for vectors) for printing a result."""
    x = np.asarray(x)
    if t == BOOL or t.is_bool:
        return x.astype(bool).tolist()
    if t.is_int:
        return x.astype(object).tolist() if x.dtype == np.uint64 else x.tolist()
    return x.astype(np.float64).tolist()
