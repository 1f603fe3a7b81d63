"""Floating point with Xe's control register: rounding modes and denormal handling.

cr0.0 bits [5:4] choose the rounding mode of float results (0 nearest even, 1 toward +inf,
2 toward -inf, 3 toward zero); bits 6, 7 and 10 keep double, single and half precision
denormals (0 flushes them to zero, on inputs and results).  IGC switches to round toward
zero around its integer division sequences, so the directed modes must be exact.

Exact rounding works on an *unevaluated sum* `s + e` of two float64 arrays that equals the
exact result: float32 products are exact in float64, and a sum's rounding error comes from
TwoSum.  `round_pair` then rounds that exact value once to the target precision, in any mode.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RNE, RU, RD, RTZ = 0, 1, 2, 3  # cr0.0[5:4]
MODE_NAMES = {RNE: "nearest even", RU: "toward +inf", RD: "toward -inf", RTZ: "toward zero"}

_F32_TINY = np.float32(2.0**-126)
_F16_TINY = np.float16(2.0**-14)
_F64_TINY = 2.0**-1022


@dataclass(frozen=True)
class FloatMode:
    """What cr0.0 says about float arithmetic."""

    rounding: int = RNE
    keep_denormals_f16: bool = False
    keep_denormals_f32: bool = False
    keep_denormals_f64: bool = False

    @staticmethod
    def from_cr0(value: int) -> FloatMode:
        return FloatMode((value >> 4) & 3, bool(value >> 10 & 1), bool(value >> 7 & 1), bool(value >> 6 & 1))

    def keeps(self, dtype: np.dtype) -> bool:
        if dtype == np.float32:
            return self.keep_denormals_f32
        if dtype == np.float16:
            return self.keep_denormals_f16
        return self.keep_denormals_f64


DEFAULT_MODE = FloatMode()


def flush_denormals(x: np.ndarray) -> np.ndarray:
    """Denormal values become zero of the same sign."""
    tiny = {np.dtype(np.float32): _F32_TINY, np.dtype(np.float16): _F16_TINY}.get(x.dtype, _F64_TINY)
    small = np.abs(x) < tiny
    if not np.any(small):
        return x
    return np.where(small, np.copysign(np.zeros((), dtype=x.dtype), x), x)


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s + e == a + b exactly, s = fl(a + b) (Knuth's TwoSum)."""
    s = a + b
    bv = s - a
    e = (a - (s - bv)) + (b - bv)
    return s, e


def round_pair(s: np.ndarray, e: np.ndarray | None, target: np.dtype, mode: int) -> np.ndarray:
    """Round the exact value s + e (float64; |e| at most half an ulp of s) to `target`
    (float32 or float16) in rounding mode `mode`."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = s.astype(target)
        if mode == RNE and e is None:
            return r
        r64 = r.astype(np.float64)
        # sign of (r - exact); the subtraction r64 - s is exact (Sterbenz), and a rounded
        # difference keeps the sign of the exact one.
        d = (r64 - s) - e if e is not None else (r64 - s)
        if mode == RNE:
            # r = RNE(s) is wrong only when s sits exactly on a midpoint and e breaks the tie.
            if e is None:
                return r
            toward = np.where(r64 > s, np.float64(-np.inf), np.float64(np.inf)).astype(target)
            other = np.nextafter(r, toward)
            tie = (r64 != s) & ((r64 + other.astype(np.float64)) * 0.5 == s) & (e != 0)
            if np.any(tie):
                # keep r when it lies on the same side of s as e, else take the neighbour
                keep = np.sign(r64 - s) == np.sign(e)
                r = np.where(tie & ~keep, other, r)
            return r
        if mode == RTZ:
            adjust = (d != 0) & (np.sign(d) == np.sign(r64))
            return np.where(adjust, np.nextafter(r, np.zeros((), dtype=target)), r)
        if mode == RU:
            return np.where(d < 0, np.nextafter(r, np.array(np.inf, dtype=target)), r)
        return np.where(d > 0, np.nextafter(r, np.array(-np.inf, dtype=target)), r)


# --- arithmetic at float32 precision ------------------------------------------------------------


def _wide(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def add(a: np.ndarray, b: np.ndarray, mode: int, target=np.float32) -> np.ndarray:
    if mode == RNE and target == np.float32 and a.dtype == np.float32 and b.dtype == np.float32:
        return a + b
    s, e = two_sum(_wide(a), _wide(b))
    return round_pair(s, e, np.dtype(target), mode)


def mul(a: np.ndarray, b: np.ndarray, mode: int, target=np.float32) -> np.ndarray:
    if mode == RNE and target == np.float32 and a.dtype == np.float32 and b.dtype == np.float32:
        return a * b
    with np.errstate(over="ignore", invalid="ignore"):
        return round_pair(_wide(a) * _wide(b), None, np.dtype(target), mode)


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: int, target=np.float32) -> np.ndarray:
    """a * b + c rounded once (the product of two float32/float16 values is exact in float64)."""
    with np.errstate(over="ignore", invalid="ignore"):
        p, c = np.broadcast_arrays(_wide(a) * _wide(b), _wide(c))
        if mode == RNE and np.dtype(target) == np.float32:
            # Rounding the float64 sum to float32 is already exact unless that sum sits exactly
            # halfway between two float32 values, or is tiny: only those take the exact path.
            s = p + c
            r = s.astype(np.float32)
            halfway = (s.view(np.uint64) & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)
            suspect = halfway | (np.abs(s) < 2.0**-125)
            if suspect.any():
                s_s, e_s = two_sum(p[suspect], c[suspect])
                r[suspect] = round_pair(s_s, np.where(np.isfinite(s_s), e_s, 0.0), np.dtype(np.float32), RNE)
            return r
        s, e = two_sum(p, c)
        # inf/NaN propagate through s; the error term is meaningless there
        e = np.where(np.isfinite(s), e, 0.0)
        return round_pair(s, e, np.dtype(target), mode)


def from_float64(x: np.ndarray, target: np.dtype, mode: int) -> np.ndarray:
    """Round float64 values (exact) to float32/float16."""
    return round_pair(_wide(x), None, np.dtype(target), mode)


def from_int(x: np.ndarray, target: np.dtype, mode: int) -> np.ndarray:
    """Round integers to float32/float16/float64 in `mode`."""
    target = np.dtype(target)
    if x.dtype.itemsize <= 4:
        s = x.astype(np.float64)  # exact
        if target == np.float64:
            return s
        return round_pair(s, None, target, mode)
    # 64-bit integers: float64 itself may round, so carry the exact remainder.  Both halves
    # (bits 63:32 and 31:0) are exact in float64, and TwoSum of them gives the rounded value
    # and its error for every value, including those that round to +-2^63 or above.
    high_bits = 0xFFFF_FFFF_0000_0000 if x.dtype.kind == "u" else -(1 << 32)
    high = x & x.dtype.type(high_bits)
    s, e = two_sum(high.astype(np.float64), (x - high).astype(np.float64))
    if target == np.float64:
        return s
    return round_pair(s, e, target, mode)
