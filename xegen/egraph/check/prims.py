"""egglog's i64 primitives, exactly: Python integers for the sampler, z3 terms for the prover.

egglog computes `+ - * / %` with Rust's checked operations (overflow, division by zero and
MIN / -1 fail), `<<` and `>>` fail for counts outside 0..63 (and `<<` drops the bits shifted
out), `log2` needs a positive argument.  A rule whose computation fails does not fire, so
failure is a premise, not an error.
"""

from __future__ import annotations

import z3

from .smt import WIDE

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


class Fail(Exception):
    """The primitive fails: the rule does not fire."""


def _check(value: int) -> int:
    if not I64_MIN <= value <= I64_MAX:
        raise Fail
    return value


def _wrap64(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


def apply(op: str, args: list[int]) -> int:
    """One primitive on Python integers (raises Fail)."""
    if op == "+":
        return _check(args[0] + args[1])
    if op == "-":
        return _check(args[0] - args[1])
    if op == "*":
        return _check(args[0] * args[1])
    if op in ("/", "%"):
        a, b = args
        if b == 0 or (a == I64_MIN and b == -1):
            raise Fail
        q = abs(a) // abs(b)
        q = q if (a < 0) == (b < 0) else -q
        return q if op == "/" else a - q * b
    if op == "&":
        return args[0] & args[1]
    if op == "|":
        return args[0] | args[1]
    if op == "^":
        return args[0] ^ args[1]
    if op == "not-i64":
        return ~args[0]
    if op == "<<":
        a, b = args
        if not 0 <= b <= 63:
            raise Fail
        return _wrap64(a << b)
    if op == ">>":
        a, b = args
        if not 0 <= b <= 63:
            raise Fail
        return a >> b
    if op == "log2":
        if args[0] <= 0:
            raise Fail
        return args[0].bit_length() - 1
    if op == "min":
        return min(args)
    if op == "max":
        return max(args)
    raise ValueError(f"unknown primitive {op}")


def compare(op: str, a: int, b: int) -> bool:
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "!=": a != b, "=": a == b}[op]


# z3 ---------------------------------------------------------------------------------------
# An i64 value is kept as a signed bit-vector of the fewest bits known to hold it (a u16
# constant needs 17): operations run at the width their result needs, and only results that
# reach 64 bits need egglog's overflow checks.  This keeps z3's division circuits small.


class Sized:
    """A signed integer as a `width`-bit vector (sign-extending it gives the i64); `nonneg`
    records that it is known to be >= 0 (it came from an unsigned value)."""

    __slots__ = ("bv", "width", "nonneg")

    def __init__(self, bv, width: int, nonneg: bool = False):
        self.bv, self.width, self.nonneg = bv, width, nonneg

    def at(self, width: int):
        return self.bv if width == self.width else z3.SignExt(width - self.width, self.bv)

    @property
    def i64(self):
        return self.at(64)


def literal(value: int) -> Sized:
    width = max(2, (value if value >= 0 else ~value).bit_length() + 1)
    return Sized(z3.BitVecVal(value, width), width, value >= 0)


def wide(value: int):
    """An i64 literal as a 64-bit vector."""
    return z3.BitVecVal(value, 64)


def apply_z3(op: str, args: list[Sized], defined: list, fresh, products=None) -> Sized:
    """The primitive on sized i64 values, appending its definedness to `defined`.  With
    `products` (smt.ExactProducts), symbolic multiplications use its exact-product function."""
    if op == "*" and products is not None and not (z3.is_bv_value(args[0].bv) or z3.is_bv_value(args[1].bv)):
        a, b = args
        exact = products.exact(z3.SignExt(WIDE - a.width, a.bv), z3.SignExt(WIDE - b.width, b.bv))
        defined.append(exact >= z3.BitVecVal(I64_MIN, WIDE))
        defined.append(exact <= z3.BitVecVal(I64_MAX, WIDE))
        return Sized(z3.Extract(63, 0, exact), 64, a.nonneg and b.nonneg)
    if op in ("+", "-", "*"):
        a, b = args
        width = min(64, a.width + b.width if op == "*" else max(a.width, b.width) + 1)
        x, y = a.at(width), b.at(width)
        if width == 64:
            if op == "+":
                defined += [z3.BVAddNoOverflow(x, y, True), z3.BVAddNoUnderflow(x, y)]
            elif op == "-":
                defined += [z3.BVSubNoOverflow(x, y), z3.BVSubNoUnderflow(x, y, True)]
            else:
                defined += [z3.BVMulNoOverflow(x, y, True), z3.BVMulNoUnderflow(x, y)]
        nonneg = a.nonneg and b.nonneg and op != "-" and width < 64
        return Sized(x + y if op == "+" else x - y if op == "-" else x * y, width, nonneg)
    if op in ("/", "%"):
        a, b = args
        width = min(64, max(a.width, b.width) + 1)  # one more bit: MIN / -1 at the narrower width
        x, y = a.at(width), b.at(width)
        defined.append(y != 0)
        if width == 64:
            defined.append(z3.Not(z3.And(x == wide(I64_MIN), y == wide(-1))))
        if a.nonneg and b.nonneg:
            # known non-negative: signed and unsigned division agree, and the unsigned form lets
            # z3 match an unsigned IR division (it cannot relate the two quickly on its own)
            return Sized(z3.UDiv(x, y) if op == "/" else z3.URem(x, y), width, True)
        return Sized(x / y if op == "/" else z3.SRem(x, y), width)
    if op in ("&", "|", "^", "min", "max"):
        a, b = args
        width = max(a.width, b.width)
        x, y = a.at(width), b.at(width)
        if op == "min":
            return Sized(z3.If(x <= y, x, y), width, a.nonneg and b.nonneg)
        if op == "max":
            return Sized(z3.If(x <= y, y, x), width, a.nonneg or b.nonneg)
        nonneg = (a.nonneg or b.nonneg) if op == "&" else (a.nonneg and b.nonneg)
        return Sized(x & y if op == "&" else x | y if op == "|" else x ^ y, width, nonneg)
    if op == "not-i64":
        return Sized(~args[0].bv, args[0].width)
    if op in ("<<", ">>"):
        a, b = args
        count = b.i64
        defined.append(z3.And(count >= 0, count <= 63))
        if op == "<<":
            return Sized(a.i64 << count, 64)
        return Sized(a.i64 >> count, 64, a.nonneg)
    if op == "log2":
        a = args[0].i64
        k = fresh("log2")
        defined.append(a > 0)
        defined.append(z3.And(k >= 0, k <= 62))
        # 2^k <= a < 2^(k+1), the upper bound compared unsigned (2^63 is no i64)
        defined.append(z3.And(wide(1) << k <= a, z3.ULT(a, wide(1) << (k + 1))))
        return Sized(k, 64, True)
    raise ValueError(f"unknown primitive {op}")


def compare_z3(op: str, a: Sized, b: Sized):
    width = max(a.width, b.width)
    x, y = a.at(width), b.at(width)
    return {
        "<": lambda: x < y,
        "<=": lambda: x <= y,
        ">": lambda: x > y,
        ">=": lambda: x >= y,
        "!=": lambda: x != y,
        "=": lambda: x == y,
    }[op]()
