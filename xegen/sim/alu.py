"""What the ALU instructions compute, on numpy arrays of source values.

Every function takes the sources as values (what `operands.source` readers return) with
their element types and returns the result as values; the destination then converts them
(wrap-around, saturation, rounding).  Integer arithmetic is exact in int64 (uint64 for
unsigned 64-bit operands) before that conversion, so a 32-bit destination sees the low 32
bits exactly as the hardware writes them.  Float arithmetic rounds once to float32 in the
thread's rounding mode (float64 when a source or the destination is :df).
"""

from __future__ import annotations

import numpy as np

from . import datatypes as dt
from . import fpround

INT64 = np.dtype(np.int64)
UINT64 = np.dtype(np.uint64)


# --- execution types --------------------------------------------------------------------------


def int_compute_dtype(types: list[dt.ElementType]) -> np.dtype:
    """int64, or uint64 when every 64-bit operand is unsigned."""
    wide = [t for t in types if t.size == 8]
    if wide and all(not t.is_signed for t in wide):
        return UINT64
    return INT64


def float_compute_dtype(types: list[dt.ElementType]) -> np.dtype:
    return np.dtype(np.float64) if any(t.name == "df" or t.name in ("q", "uq") for t in types) else np.dtype(np.float32)


def is_float_op(types: list[dt.ElementType]) -> bool:
    return any(t.is_float for t in types)


def as_int(values: list[np.ndarray], dtype: np.dtype) -> list[np.ndarray]:
    return [v if v.dtype == dtype else v.astype(dtype) for v in values]


# --- arithmetic ------------------------------------------------------------------------------


def wrapping(values: list[np.ndarray], ints: np.dtype, width: int) -> list[np.ndarray]:
    """Operands whose numpy arithmetic, evaluated left to right (for mad: the product first),
    wraps at `width` bytes or more, so that the low bits an at-most-`width`-byte destination
    keeps are exact.  numpy's own promotion is used when it is wide enough (int32 + uint16 is
    int32); otherwise every operand is widened to `ints`."""
    wide = max(width, 4)
    if (
        all(v.dtype.kind in "iu" for v in values)
        and all(np.result_type(*values[:n]).itemsize >= wide for n in range(2, len(values) + 1))
        and np.result_type(*values[-2:]).itemsize >= wide
    ):
        return values
    return as_int(values, ints)


def add(a, b, ints: np.dtype | None, mode: fpround.FloatMode, fdtype, width: int = 8):
    if ints is not None:
        a, b = wrapping([a, b], ints, width)
        return a + b
    if fdtype == np.float64:
        return a.astype(np.float64) + b.astype(np.float64)
    return fpround.add(a.astype(np.float32, copy=False), b.astype(np.float32, copy=False), mode.rounding)


def mul(a, b, ints, mode, fdtype, width: int = 8):
    if ints is not None:
        a, b = wrapping([a, b], ints, width)
        return a * b
    if fdtype == np.float64:
        return a.astype(np.float64) * b.astype(np.float64)
    return fpround.mul(a.astype(np.float32, copy=False), b.astype(np.float32, copy=False), mode.rounding)


def wrapping_product(a, b) -> np.ndarray:
    """a * b modulo 2^64 as uint64, each integer source read in its own type (sign-extended only
    when signed): the exact product of two 32-bit operands, in two's complement."""
    return _as_uint64(a) * _as_uint64(b)


def _as_uint64(values) -> np.ndarray:
    values = np.asarray(values)
    if values.dtype.kind == "u":
        return values.astype(np.uint64)
    return values.astype(np.int64).view(np.uint64)


def high_half_of_multiplier(etype):
    """src1 of mach/macl -> its bits 31:16 as a number: shifted arithmetically for a signed type,
    logically for an unsigned one (0x92492493:ud gives 0x9249, :d gives -0x6db7)."""
    if etype.is_signed:
        return lambda b: np.asarray(b).astype(np.int64) >> 16
    return lambda b: np.asarray(b).astype(np.uint64) >> np.uint64(16)


def mad(a, b, c, ints, mode, fdtype, width: int = 8):
    """a + b * c (Xe's operand order), fused for floats."""
    if ints is not None:
        a, b, c = wrapping([a, b, c], ints, width)
        return a + b * c
    if fdtype == np.float64:
        return a.astype(np.float64) + b.astype(np.float64) * c.astype(np.float64)
    return fpround.fma(b, c, a, mode.rounding)


def add3(a, b, c, ints, width: int = 8):
    a, b, c = wrapping([a, b, c], ints, width)
    return a + b + c


def avg(a, b, ints):
    a, b = as_int([a, b], ints)
    return (a + b + 1) >> 1


def shift_mask(types: list[dt.ElementType], dst: dt.ElementType) -> int:
    return 63 if any(t.size == 8 for t in types) or dst.size == 8 else 31


def shl(a, b, count_mask: int):
    wide = UINT64 if a.dtype.kind == "u" else INT64
    return a.astype(wide) << (b.astype(np.int64) & count_mask).astype(wide)


def shr(a, a_type: dt.ElementType, b, count_mask: int):
    """Logical shift of the source's bit pattern."""
    raw = a.astype(dt.INT_DTYPES[a_type.size][0]).astype(UINT64)
    return raw >> (b.astype(np.int64) & count_mask).astype(UINT64)


def asr(a, a_type: dt.ElementType, b, count_mask: int):
    signed = a.astype(dt.INT_DTYPES[a_type.size][1]).astype(INT64)
    return signed >> (b.astype(np.int64) & count_mask)


def rotate(a, a_type: dt.ElementType, b, left: bool):
    bits = a_type.bits
    raw = a.astype(dt.INT_DTYPES[a_type.size][0]).astype(UINT64)
    n = (b.astype(np.int64) & (bits - 1)).astype(UINT64)
    mask = np.uint64((1 << bits) - 1) if bits < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    back = (np.uint64(bits) - n) % np.uint64(bits) if bits < 64 else (np.uint64(64) - n) & np.uint64(63)
    if left:
        return ((raw << n) | np.where(n == 0, 0, raw >> back).astype(UINT64)) & mask
    return ((raw >> n) | np.where(n == 0, 0, raw << back).astype(UINT64)) & mask


# --- bit operations --------------------------------------------------------------------------


def _u32(x) -> np.ndarray:
    return x.astype(np.int64).astype(np.uint32) if x.dtype.kind == "i" else x.astype(np.uint32)


def cbit(a, a_type: dt.ElementType):
    raw = a.astype(dt.INT_DTYPES[a_type.size][0]).astype(UINT64)
    count = np.zeros(raw.shape, dtype=np.int64)
    for shift in range(a_type.bits):
        count += ((raw >> np.uint64(shift)) & np.uint64(1)).astype(np.int64)
    return count


def _highest_bit(raw: np.ndarray) -> np.ndarray:
    """Index of the highest set bit of uint32 values, -1 for zero."""
    out = np.full(raw.shape, -1, dtype=np.int64)
    for bit in range(32):
        out = np.where((raw >> np.uint32(bit)) & np.uint32(1), bit, out)
    return out


def lzd(a):
    """Leading zeros of the 32-bit pattern (32 for zero)."""
    return 31 - _highest_bit(_u32(a))


def fbh(a, a_type: dt.ElementType):
    """Bit position (counted from the MSB) of the first bit that differs from the sign (signed)
    or of the first set bit (unsigned); all ones (0xFFFFFFFF) when there is none."""
    raw = _u32(a)
    if a_type.is_signed:
        raw = np.where(raw >> np.uint32(31), ~raw, raw).astype(np.uint32)
    high = _highest_bit(raw)
    return np.where(high < 0, np.int64(0xFFFFFFFF), 31 - high)


def fbl(a):
    """Index of the lowest set bit, 0xFFFFFFFF for zero."""
    raw = _u32(a)
    low = raw & (~raw + np.uint32(1))
    return np.where(raw == 0, np.int64(0xFFFFFFFF), _highest_bit(low))


def bfrev(a):
    raw = _u32(a)
    out = np.zeros(raw.shape, dtype=np.uint32)
    for bit in range(32):
        out |= ((raw >> np.uint32(bit)) & np.uint32(1)) << np.uint32(31 - bit)
    return out


def bfe(width, offset, value, value_type: dt.ElementType):
    """Extract `width` bits at `offset` (both mod 32), sign-extended for a signed type."""
    w = width.astype(np.int64) & 31
    o = offset.astype(np.int64) & 31
    if value_type.is_signed:
        v = value.astype(np.int32).astype(np.int64)
    else:
        v = _u32(value).astype(np.int64)
    fits = w + o < 32
    left = np.where(fits, 32 - w - o, 0)
    right = np.where(fits, 32 - w, o)
    shifted = (v << left) & 0xFFFFFFFF
    if value_type.is_signed:
        shifted = np.where(shifted >= 1 << 31, shifted - (1 << 32), shifted)
    result = shifted >> right
    return np.where(w == 0, 0, result)


def bfi1(width, offset):
    w = width.astype(np.int64) & 31
    o = offset.astype(np.int64) & 31
    return (((np.int64(1) << w) - 1) << o) & 0xFFFFFFFF


def bfi2(mask, insert, base):
    m, i, b = _u32(mask), _u32(insert), _u32(base)
    return (m & i) | (~m & b)


def bfn(a, b, c, table: int):
    """Any 3-input boolean function: bit k of the result is table[(a_k, b_k, c_k)] where the
    table index is the value f(s0=0xAA, s1=0xCC, s2=0xF0) encodes."""
    a, b, c = (x.astype(np.int64).astype(UINT64) if x.dtype.kind == "i" else x.astype(UINT64) for x in (a, b, c))
    out = np.zeros(np.broadcast(a, b, c).shape, dtype=UINT64)
    for index in range(8):
        if not table >> index & 1:
            continue
        term = (a if index & 1 else ~a) & (b if index & 2 else ~b) & (c if index & 4 else ~c)
        out |= term
    return out


def dp4a(acc, a, b, a_type: dt.ElementType, b_type: dt.ElementType):
    """acc + sum of the four byte products of a and b (bytes signed for signed dword types)."""

    def lanes(x, signed):
        raw = _u32(x).astype(np.int64)
        parts = [(raw >> (8 * k)) & 0xFF for k in range(4)]
        if signed:
            parts = [np.where(p >= 128, p - 256, p) for p in parts]
        return parts

    pa, pb = lanes(a, a_type.is_signed), lanes(b, b_type.is_signed)
    total = acc.astype(np.int64)
    for x, y in zip(pa, pb, strict=True):
        total = total + x * y
    return total


# --- comparisons ---------------------------------------------------------------------------------


def compare(cond: str, a, b) -> np.ndarray:
    """cmp's per-channel result (bool)."""
    with np.errstate(invalid="ignore"):
        if cond == "eq":
            return a == b
        if cond == "ne":
            return a != b
        if cond == "gt":
            return a > b
        if cond == "ge":
            return a >= b
        if cond == "lt":
            return a < b
        if cond == "le":
            return a <= b
        if cond == "un":
            return np.isnan(a) | np.isnan(b) if a.dtype.kind == "f" else np.zeros(np.broadcast(a, b).shape, bool)
        if cond == "ov":
            return np.zeros(np.broadcast(a, b).shape, bool)
    raise ValueError(f"condition {cond!r}")


def compare_values(a, b, types: list[dt.ElementType]) -> tuple[np.ndarray, np.ndarray]:
    """Both sources in one type whose comparison is exact."""
    if a.dtype == b.dtype:
        return a, b
    if is_float_op(types):
        f = np.float64 if any(t.name == "df" for t in types) else np.float32
        return a.astype(f, copy=False), b.astype(f, copy=False)
    ints = int_compute_dtype(types)
    return a.astype(ints, copy=False), b.astype(ints, copy=False)


def condition_on_result(cond: str, converted: np.ndarray, exact: np.ndarray | None) -> np.ndarray:
    """A condition modifier's flag value for a result already converted to the destination type."""
    with np.errstate(invalid="ignore"):
        if cond == "eq":
            return converted == 0
        if cond == "ne":
            return converted != 0
        if cond == "gt":
            return converted > 0
        if cond == "ge":
            return converted >= 0
        if cond == "lt":
            return converted < 0
        if cond == "le":
            return converted <= 0
        if cond == "un":
            return np.isnan(converted) if converted.dtype.kind == "f" else np.zeros(converted.shape, bool)
        if cond == "ov":
            if converted.dtype.kind == "f":
                return np.isinf(converted)
            if exact is None:
                return np.zeros(converted.shape, bool)
            return converted.astype(np.int64) != exact.astype(np.int64)
    raise ValueError(f"condition {cond!r}")


def select_min_max(cond: str, a, b) -> np.ndarray:
    """sel.(l|le) is min, sel.(ge|g) is max; a NaN operand yields the other one."""
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        if cond in ("lt", "le"):
            return np.fmin(a, b)
        if cond in ("gt", "ge"):
            return np.fmax(a, b)
    return np.where(compare(cond, a, b), a, b)


# --- rounding and math -----------------------------------------------------------------------


def round_op(op: str, a):
    with np.errstate(invalid="ignore"):
        if op == "rndd":
            return np.floor(a)
        if op == "rndu":
            return np.ceil(a)
        if op == "rnde":
            return np.rint(a)
        if op == "rndz":
            return np.trunc(a)
        if op == "frc":
            return a - np.floor(a)
    raise ValueError(op)


def math_function(function: str, a, b, out_dtype) -> np.ndarray:
    """Extended math on float values, computed in float64 and rounded once (the hardware's
    results are within a few ulp of these)."""
    x = a.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if function == "inv":
            r = 1.0 / x
        elif function == "log":
            r = np.log2(x)
        elif function == "exp":
            r = np.exp2(x)
        elif function == "sqt":
            r = np.sqrt(x)
        elif function == "rsqt":
            r = 1.0 / np.sqrt(x)
        elif function == "sin":
            r = np.sin(x)
        elif function == "cos":
            r = np.cos(x)
        elif function == "fdiv":
            r = x / b.astype(np.float64)
        elif function == "pow":
            r = np.power(x, b.astype(np.float64))
        else:
            raise ValueError(function)
        return r.astype(out_dtype)


def int_divide(a, b, signed: bool) -> tuple[np.ndarray, np.ndarray]:
    """Truncating 32-bit quotient and remainder; x/0 gives all ones and x%0 gives x, MIN/-1
    wraps (the IR interpreter's definitions)."""
    if signed:
        x = a.astype(np.int32).astype(np.int64)
        y = b.astype(np.int32).astype(np.int64)
    else:
        x = _u32(a).astype(np.int64)
        y = _u32(b).astype(np.int64)
    zero = y == 0
    safe = np.where(zero, 1, y)
    q = np.abs(x) // np.abs(safe)
    q = np.where((x < 0) != (safe < 0), -q, q)
    r = x - q * safe
    q = np.where(zero, -1, q)
    r = np.where(zero, x, r)
    return q, r


# --- stochastic rounding (srnd, XeHPC) -----------------------------------------------------------


def stochastic_round(x: np.ndarray, random: np.ndarray, to: str) -> np.ndarray:
    """srnd: f -> hf or hf -> bf8, as the bits of the destination type.  The low bits of the
    random operand (13 for f -> hf, 8 for hf -> bf8; its bit 0 under the mantissa's bit 0) are
    added to the source's magnitude, which is then truncated; NaN stays NaN and infinity
    infinity, finite values truncate to at most the largest finite result (IGC's vISA SRND)."""
    if random.dtype.kind == "f":  # src1 has src0's float type: its bits are the random number
        random = random.view(np.uint32 if random.dtype.itemsize == 4 else np.uint16)
    noise = random.astype(np.int64) & (0x1FFF if to == "hf" else 0xFF)
    if to == "hf":
        bits = x.astype(np.float32).view(np.uint32).astype(np.int64)
        sign, magnitude, infinity = bits >> 31, bits & 0x7FFFFFFF, 0x7F800000
        perturbed = np.minimum(magnitude + noise, infinity - 1).astype(np.uint32).view(np.float32)
        finite = fpround.from_float64(perturbed.astype(np.float64), np.dtype(np.float16), fpround.RTZ)
        result = finite.view(np.uint16).astype(np.int64)
        special = np.where(magnitude > infinity, 0x7E00, 0x7C00)
        return ((sign << 15) | np.where(magnitude >= infinity, special, result)).astype(np.uint16)
    bits = x.astype(np.float16).view(np.uint16).astype(np.int64)
    sign, magnitude, infinity = bits >> 15, bits & 0x7FFF, 0x7C00
    result = np.minimum(magnitude + noise, infinity - 1) >> 8  # bf8 is the top byte of an hf
    special = np.where(magnitude > infinity, 0x7E, 0x7C)
    return ((sign << 7) | np.where(magnitude >= infinity, special, result)).astype(np.uint8)
