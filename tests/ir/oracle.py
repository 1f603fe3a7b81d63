"""An independent oracle for integer IR: plain Python integers, one sample at a time.

It shares no code with xegen.ir.semantics (which works on numpy arrays): it restates the
documented semantics from scratch, so agreement between the two means something.
"""

from __future__ import annotations

import math
from fractions import Fraction

from xegen import ir


def wrap(value: int, t) -> int:
    bits = t.bits
    value &= (1 << bits) - 1
    if t.is_signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def clamp(value: int, t) -> int:
    return max(t.min, min(t.max, value))


def truncating_divide(a: int, b: int, t) -> tuple[int, int]:
    if b == 0:
        return wrap(-1, t), a
    quotient = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        quotient = -quotient
    return wrap(quotient, t), wrap(a - quotient * b, t)


def evaluate(e: ir.Expr, env: dict[str, int]):
    if isinstance(e, ir.Var):
        return env[e.name]
    if isinstance(e, (ir.IntImm, ir.BoolImm)):
        return e.value
    if isinstance(e, ir.Unary):
        a = evaluate(e.a, env)
        if e.op == "not":
            return not a
        return wrap(-a if e.op == "neg" else ~a, e.type)
    if isinstance(e, ir.Binary):
        a, b = evaluate(e.a, env), evaluate(e.b, env)
        t = e.a.type
        op = e.op
        if op in ("land", "lor"):
            return (a and b) if op == "land" else (a or b)
        if op in ("lt", "le", "gt", "ge", "eq", "ne"):
            return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b}[op]
        if op in ("shl", "shr"):
            count = (b % (1 << 64)) & (t.bits - 1)
            if op == "shl":
                return wrap(a << count, t)
            return wrap(a >> count, t)  # Python >> is arithmetic on negative numbers, logical otherwise
        if op in ("div", "mod"):
            return truncating_divide(a, b, t)[0 if op == "div" else 1]
        result = {
            "add": a + b,
            "sub": a - b,
            "mul": a * b,
            "and": a & b,
            "or": a | b,
            "xor": a ^ b,
            "min": min(a, b),
            "max": max(a, b),
        }[op]
        return wrap(result, t)
    if isinstance(e, ir.Ternary):
        a, b, c = (evaluate(x, env) for x in (e.a, e.b, e.c))
        return wrap(a + b + c if e.op == "add3" else a + b * c, e.type)
    if isinstance(e, ir.Select):
        return evaluate(e.true_value, env) if evaluate(e.cond, env) else evaluate(e.false_value, env)
    if isinstance(e, ir.Cast):
        value = evaluate(e.value, env)
        if e.type.is_bool:
            return value != 0
        value = int(value)
        return clamp(value, e.type) if e.saturate else wrap(value, e.type)
    raise TypeError(f"the oracle does not evaluate {type(e).__name__}")


# Floats: exact rational arithmetic, rounded once ------------------------------------------

#: significant bits, smallest normal exponent, largest exponent
FLOAT_FORMATS = {"f16": (11, -14, 15), "bf16": (8, -126, 127), "f32": (24, -126, 127), "f64": (53, -1022, 1023)}


def round_exact(x: Fraction, kind: str) -> float:
    """The float of format `kind` nearest to the rational `x` (ties to even; subnormals; too
    large gives inf), as a Python float.  A zero result keeps the sign of `x`."""
    precision, min_exponent, max_exponent = FLOAT_FORMATS[kind]
    if x == 0:
        return 0.0
    sign = -1 if x < 0 else 1
    magnitude = abs(x)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    while Fraction(2) ** exponent > magnitude:
        exponent -= 1
    while Fraction(2) ** (exponent + 1) <= magnitude:
        exponent += 1
    ulp = Fraction(2) ** (max(exponent, min_exponent) - precision + 1)
    quotient, remainder = divmod(magnitude, ulp)
    if remainder * 2 > ulp or (remainder * 2 == ulp and quotient % 2 == 1):
        quotient += 1
    rounded = quotient * ulp
    if rounded >= Fraction(2) ** (max_exponent + 1):
        return math.copysign(math.inf, sign)
    return math.copysign(float(rounded), sign)
