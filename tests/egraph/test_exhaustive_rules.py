"""Rules checked on every value of narrow types (or the extremes and a dense sample of s32) with the
IR interpreter, beside `xegen rules check`'s z3 proofs: a second, independent witness for the block
rules of rules/divmod.egg (the hardest proofs, found only by the checker's integer encoding).

    (x * a + y) / b  ->  x / (b / a)            a | b, 0 <= y < a, x >= 0, no wrap
    (x * a + y) % b  ->  (x % (b / a)) * a + y
    (p + q) / b      ->  p / b                  d | p, d | b, 0 <= q < d, p >= 0, no wrap
    (p + q) % b      ->  p % b + q
    0 <= x && x < c  ->  (u32)x < c             c >= 0  (rules/compare.egg)
"""

from __future__ import annotations

import numpy as np
import pytest

from xegen import ir

TYPES = {"s8": (np.int8, 127), "u8": (np.uint8, 255), "s16": (np.int16, 32767), "u16": (np.uint16, 65535)}


def evaluate(text: str, t: str, **values: np.ndarray) -> np.ndarray:
    """`text` with OP(a, b) spelled as the exact operation of type t (op.t(a, b): no C promotion)
    and {name} as a variable of type t."""
    for name in values:
        text = text.replace(f"{{{name}}}", f"{name}:{t}")
    for op in ("add", "mul", "div", "mod", "shr"):
        text = text.replace(f"{op.upper()}(", f"{op}.{t}(")
    return ir.evaluate(ir.parse_expr(text), values)


def cases(t: str):
    """(a, b, x values, y values) meeting the rules' guards, x * a + y within the type."""
    dtype, limit = TYPES[t]
    for a in (1, 2, 3, 4, 8, 12):
        for b in (a, 2 * a, 3 * a, 8 * a):
            if b > limit:
                continue
            x_hi = min(limit // a, 400)
            x, y = np.meshgrid(np.arange(0, x_hi + 1), np.arange(0, a))
            x, y = x.ravel(), y.ravel()
            keep = x * a + y <= limit
            yield a, b, x[keep].astype(dtype), y[keep].astype(dtype)


@pytest.mark.parametrize("t", sorted(TYPES))
def test_blocks_divide_and_leave_remainders_like_the_rules_say(t):
    checked = 0
    for a, b, x, y in cases(t):
        c = lambda v: f"(({t}){v})"  # noqa: E731  a constant of type t
        rows = f"ADD(MUL({{x}}, {c(a)}), {{y}})"
        np.testing.assert_array_equal(
            evaluate(f"DIV({rows}, {c(b)})", t, x=x, y=y),
            evaluate(f"DIV({{x}}, {c(b // a)})", t, x=x),
            err_msg=f"{t} a={a} b={b}",
        )
        np.testing.assert_array_equal(
            evaluate(f"MOD({rows}, {c(b)})", t, x=x, y=y),
            evaluate(f"ADD(MUL(MOD({{x}}, {c(b // a)}), {c(a)}), {{y}})", t, x=x, y=y),
            err_msg=f"{t} a={a} b={b}",
        )
        # the aligned-sum forms, with p = x * a a multiple of d = a
        p = (x.astype(np.int64) * a).astype(x.dtype)
        np.testing.assert_array_equal(
            evaluate(f"DIV(ADD({{p}}, {{q}}), {c(b)})", t, p=p, q=y), evaluate(f"DIV({{p}}, {c(b)})", t, p=p)
        )
        np.testing.assert_array_equal(
            evaluate(f"MOD(ADD({{p}}, {{q}}), {c(b)})", t, p=p, q=y),
            evaluate(f"ADD(MOD({{p}}, {c(b)}), {{q}})", t, p=p, q=y),
        )
        checked += x.size
    assert checked > 1000


@pytest.mark.parametrize("t", sorted(TYPES))
def test_a_shift_of_a_non_negative_value_is_a_division(t):
    dtype, limit = TYPES[t]
    x = np.arange(0, limit + 1, dtype=dtype)
    for s in range(np.dtype(dtype).itemsize * 8 - 1):
        np.testing.assert_array_equal(
            evaluate(f"SHR({{x}}, (({t}){s}))", t, x=x),
            evaluate(f"DIV({{x}}, (({t}){1 << s}))", t, x=x),
            err_msg=f"{t} >> {s}",
        )


def test_a_range_check_is_one_unsigned_comparison():
    rng = np.random.default_rng(0)
    extremes = [-(2**31), -(2**31) + 1, -57, -1, 0, 1, 55, 56, 57, 2**31 - 2, 2**31 - 1]
    x = np.concatenate([np.array(extremes), rng.integers(-(2**31), 2**31, 20000), np.arange(-300, 300)]).astype(
        np.int32
    )
    for c in (0, 1, 56, 65536, 2**31 - 1):
        both = ir.evaluate(ir.parse_expr(f"x >= 0 && x < {c}"), {"x": x})
        one = ir.evaluate(ir.parse_expr(f"(u32)x < (u32){c}"), {"x": x})
        np.testing.assert_array_equal(both, one, err_msg=f"c={c}")
