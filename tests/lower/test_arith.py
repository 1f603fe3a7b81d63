"""Multiply-high "magic numbers" for division by constants: the sequences `arith.divide`
emits, modeled with Python integers, against truncating division (the IR's `/`) on the
extremes and on random values, for many divisors.  (The instructions themselves are run in
the simulator by test_expressions.py.)"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xegen.lower.arith import signed_magic, unsigned_magic

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


def to_signed(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def truncating(n: int, d: int) -> int:
    q = abs(n) // abs(d)
    return to_signed(q if (n >= 0) == (d > 0) else -q)


def signed_sequence(n: int, d: int) -> int:
    """What _quotient_signed computes (non-power-of-two divisors)."""
    magic, shift = signed_magic(abs(d))
    m = to_signed(magic)
    q = (m * n) >> 32  # mul acc0 + mach: the high half of the signed product
    if m < 0:
        q = to_signed(q + n)
    q >>= shift
    q = to_signed(q + ((n & 0xFFFFFFFF) >> 31))
    return to_signed(-q) if d < 0 else q


def unsigned_sequence(n: int, d: int) -> int:
    magic, shift, add = unsigned_magic(d)
    q = (n * magic) >> 32
    if add:
        t = ((n - q) & 0xFFFFFFFF) >> 1
        return ((t + q) & 0xFFFFFFFF) >> (shift - 1)
    return q >> shift


def samples(rng: random.Random):
    edge = [0, 1, -1, 2, -2, INT_MIN, INT_MAX, INT_MIN + 1, INT_MAX - 1]
    return edge + [rng.randint(INT_MIN, INT_MAX) for _ in range(300)] + [rng.randint(-1000, 1000) for _ in range(100)]


DIVISORS = [
    3,
    5,
    6,
    7,
    9,
    10,
    11,
    12,
    25,
    125,
    641,
    1000,
    6700417,
    65537,
    1000000007,
    INT_MAX,
    -3,
    -7,
    -10,
    -1000,
    INT_MIN + 1,
]


@pytest.mark.parametrize("d", DIVISORS)
def test_signed_magic_divides_like_c(d):
    rng = random.Random(d)
    for n in samples(rng):
        assert signed_sequence(n, d) == truncating(n, d), (n, d)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(INT_MIN, INT_MAX), d=st.integers(2, INT_MAX), negative=st.booleans())
def test_signed_magic_random(n, d, negative):
    if d & (d - 1) == 0:
        d += 1
    d = -d if negative else d
    assert signed_sequence(n, d) == truncating(n, d)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(0, 0xFFFFFFFF), d=st.integers(3, (1 << 31) - 1))
def test_unsigned_magic_random(n, d):
    if d & (d - 1) == 0:
        d += 1
    assert unsigned_sequence(n, d) == n // d


def test_magic_numbers_of_known_divisors():
    # Hacker's Delight, table 10-1 (signed) and 10-2 (unsigned)
    assert signed_magic(3) == (0x55555556, 0)
    assert signed_magic(5) == (0x66666667, 1)
    assert signed_magic(7) == (0x92492493, 2)
    assert unsigned_magic(3) == (0xAAAAAAAB, 1, False)
    assert unsigned_magic(7) == (0x24924925, 3, True)
