"""An independent numpy oracle for integer IR: every sample at once, as 64-bit bit patterns.

The interpreter (xegen.ir.semantics) holds a value of type t in t's own numpy dtype and lets
numpy's fixed-width arithmetic wrap.  This oracle shares none of that code nor that
representation: every integer, of any type, is a `uint64` array holding the value's
two's-complement bits, zero-extended from the type's width.  Wrap-around is a mask; signed
readings (comparisons, `/`, `>>`, casts) sign-extend the pattern explicitly.  It restates the
semantics of docs/ir.md from scratch, so agreement with the interpreter means something.
"""

from __future__ import annotations

import numpy as np

from xegen import ir

U64 = np.uint64
ONE = U64(1)


def mask_of(bits: int) -> np.uint64:
    return U64((1 << bits) - 1)


def pattern(values: list[int], t) -> np.ndarray:
    """Python integers of type `t` as zero-extended bit patterns (each converted on its own: numpy
    would turn a list mixing small integers with ones above 2^63 into floats)."""
    return np.array([int(v) & ((1 << t.bits) - 1) for v in values], dtype=U64)


def sign_extend(x: np.ndarray, bits: int) -> np.ndarray:
    """The signed reading of a `bits`-wide pattern, as int64."""
    sign = U64(1 << (bits - 1))
    return ((x ^ sign) - sign).view(np.int64) if bits < 64 else x.view(np.int64)


def as_python(x, t) -> list[int]:
    """Patterns of type `t` back to Python integers (for comparing with other evaluators)."""
    if t.is_bool:
        return [int(v) for v in np.atleast_1d(x)]
    signed = sign_extend(np.atleast_1d(x).astype(U64), t.bits) if t.is_signed else np.atleast_1d(x)
    return [int(v) for v in signed]


def _less(a: np.ndarray, b: np.ndarray, t) -> np.ndarray:
    if t.is_signed:
        return sign_extend(a, t.bits) < sign_extend(b, t.bits)
    return a < b


def _magnitude(x: np.ndarray, t) -> tuple[np.ndarray, np.ndarray]:
    """|x| as uint64 (exact, also for the minimum) and whether x is negative."""
    if not t.is_signed:
        return x, np.zeros(x.shape, bool)
    wide = sign_extend(x, t.bits).view(U64)  # the 64-bit pattern of the same value
    negative = sign_extend(x, t.bits) < 0
    return np.where(negative, U64(0) - wide, wide), negative


def _divide(a: np.ndarray, b: np.ndarray, t, want: str) -> np.ndarray:
    mask = mask_of(t.bits)
    zero = b == 0
    magnitude_a, negative_a = _magnitude(a, t)
    magnitude_b, negative_b = _magnitude(b, t)
    quotient = magnitude_a // np.where(zero, ONE, magnitude_b)  # truncation: divide magnitudes
    quotient = np.where(negative_a != negative_b, U64(0) - quotient, quotient) & mask
    if want == "div":
        return np.where(zero, mask, quotient)  # x / 0: all ones
    remainder = (a - quotient * b) & mask  # wrapping: MIN % -1 = MIN - MIN*-1 = 0
    return np.where(zero, a, remainder)  # x % 0: x


def _shift(op: str, a: np.ndarray, count: np.ndarray, t) -> np.ndarray:
    count = count & U64(t.bits - 1)  # low log2(width) bits of the count's pattern
    if op == "shl":
        return (a << count) & mask_of(t.bits)
    if t.is_signed:
        return (sign_extend(a, t.bits) >> count.view(np.int64)).view(U64) & mask_of(t.bits)
    return a >> count


def _cast(x: np.ndarray, frm, to, saturate: bool) -> np.ndarray:
    if to.is_bool:
        return x != 0
    if frm.is_bool:
        return x.astype(U64)  # 0 or 1 fits every integer type
    wide = sign_extend(x, frm.bits).view(U64) if frm.is_signed else x  # the value's 64-bit pattern
    if saturate:
        if frm.is_signed:
            value = sign_extend(x, frm.bits)
            below = value < to.min
            above = value > to.max if to.max < (1 << 63) else np.zeros(x.shape, bool)
        else:
            below, above = np.zeros(x.shape, bool), x > U64(to.max)
        low = U64(to.min & 0xFFFFFFFFFFFFFFFF)
        wide = np.where(below, low, np.where(above, U64(to.max), wide))
    return wide & mask_of(to.bits)  # the low bits of the value (or of the clamped value)


def evaluate(e: ir.Expr, env: dict[str, np.ndarray]) -> np.ndarray:
    """Patterns (uint64) or bools, one per sample; `env` maps names to patterns (see `pattern`)."""
    with np.errstate(over="ignore"):  # (uint64 wrap-around is the point)
        return _evaluate(e, env)


def _evaluate(e: ir.Expr, env: dict[str, np.ndarray]) -> np.ndarray:
    if isinstance(e, ir.Var):
        return env[e.name]
    if isinstance(e, ir.IntImm):
        return pattern([e.value], e.type).reshape(())
    if isinstance(e, ir.BoolImm):
        return np.asarray(e.value)
    if isinstance(e, ir.Cast):
        value = np.asarray(_evaluate(e.value, env))
        return _cast(value.astype(U64) if not e.value.type.is_bool else value, e.value.type, e.type, e.saturate)
    if isinstance(e, ir.Select):
        return np.where(_evaluate(e.cond, env), _evaluate(e.true_value, env), _evaluate(e.false_value, env))
    t = e.a.type
    if isinstance(e, ir.Unary):
        a = np.asarray(_evaluate(e.a, env))
        if e.op == "not":
            return ~a
        return ((U64(0) - a) if e.op == "neg" else ~a) & mask_of(t.bits)
    if isinstance(e, ir.Ternary):
        a, b, c = (np.asarray(_evaluate(x, env), dtype=U64) for x in (e.a, e.b, e.c))
        return ((a + b + c) if e.op == "add3" else (a + b * c)) & mask_of(t.bits)
    a, b = np.asarray(_evaluate(e.a, env)), np.asarray(_evaluate(e.b, env))
    op = e.op
    if op == "land":
        return a & b
    if op == "lor":
        return a | b
    if op in ("shl", "shr"):
        return _shift(op, a, b, t)
    if op in ("div", "mod"):
        return _divide(a, b, t, op)
    compare = {
        "lt": lambda: _less(a, b, t),
        "gt": lambda: _less(b, a, t),
        "le": lambda: ~_less(b, a, t),
        "ge": lambda: ~_less(a, b, t),
        "eq": lambda: a == b,
        "ne": lambda: a != b,
    }
    if op in compare:
        return compare[op]()
    if op == "min":
        return np.where(_less(b, a, t), b, a)
    if op == "max":
        return np.where(_less(a, b, t), b, a)
    bitwise = {
        "add": np.add,
        "sub": np.subtract,
        "mul": np.multiply,
        "and": np.bitwise_and,
        "or": np.bitwise_or,
        "xor": np.bitwise_xor,
    }[op]
    return bitwise(a, b) & mask_of(t.bits)  # uint64 arithmetic is modulo 2^64, so modulo 2^bits too
