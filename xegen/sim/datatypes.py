"""Xe element types as numpy sees them: storage dtypes, value conversions, immediates.

Registers are bytes; an operand reads its elements through a numpy view of its *storage*
dtype (bf is stored as uint16).  `to_value` turns storage into the value an ALU computes
with (bf becomes float32), `from_value` turns a computed value back into storage with the
conversion rules of a Xe destination:

- integer to integer wraps (two's complement), or clamps with saturation;
- float to integer truncates toward zero, clamps to the destination range, NaN gives 0;
- to a float type, a value rounds with the thread's rounding mode (see `fpround`);
- float saturation clamps to [0, 1] (NaN gives 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ElementType:
    name: str
    size: int  # bytes
    storage: np.dtype  # how the bytes are viewed
    is_float: bool
    is_signed: bool

    @property
    def bits(self) -> int:
        return self.size * 8

    @property
    def min(self) -> int:
        return -(1 << (self.bits - 1)) if self.is_signed else 0

    @property
    def max(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.is_signed else (1 << self.bits) - 1


def _t(name: str, size: int, storage, is_float: bool, is_signed: bool) -> ElementType:
    return ElementType(name, size, np.dtype(storage), is_float, is_signed)


TYPES: dict[str, ElementType] = {
    t.name: t
    for t in (
        _t("ub", 1, np.uint8, False, False),
        _t("b", 1, np.int8, False, True),
        _t("uw", 2, np.uint16, False, False),
        _t("w", 2, np.int16, False, True),
        _t("ud", 4, np.uint32, False, False),
        _t("d", 4, np.int32, False, True),
        _t("uq", 8, np.uint64, False, False),
        _t("q", 8, np.int64, False, True),
        _t("hf", 2, np.float16, True, True),
        _t("f", 4, np.float32, True, True),
        _t("df", 8, np.float64, True, True),
        _t("bf", 2, np.uint16, True, True),
        _t("tf32", 4, np.uint32, True, True),
        _t("bf8", 1, np.uint8, True, True),
    )
}

INT_DTYPES = {1: (np.uint8, np.int8), 2: (np.uint16, np.int16), 4: (np.uint32, np.int32), 8: (np.uint64, np.int64)}


def value_dtype(t: ElementType) -> np.dtype:
    """The dtype values of `t` are computed in (bf and tf32 widen to float32)."""
    if t.name in ("bf", "tf32", "bf8"):
        return np.dtype(np.float32)
    return t.storage


# --- bfloat16 / tf32 ------------------------------------------------------------------------


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bf16 (nearest even), returned as uint16 bits; NaN stays NaN."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    lsb = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = (bits + np.uint32(0x7FFF) + lsb) >> np.uint32(16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(nan, (bits >> np.uint32(16)) | np.uint32(0x40), rounded).astype(np.uint16)


def tf32_to_f32(bits: np.ndarray) -> np.ndarray:
    """tf32 keeps the top 19 bits of a float32 in a 32-bit slot."""
    return (np.asarray(bits, dtype=np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def bf8_to_f32(bits: np.ndarray) -> np.ndarray:
    """bf8 (E5M2) is the top byte of a float16."""
    return (np.asarray(bits, dtype=np.uint16) << np.uint16(8)).view(np.float16).astype(np.float32)


def to_value(raw: np.ndarray, t: ElementType) -> np.ndarray:
    """Storage -> computable values."""
    if t.name == "bf":
        return bf16_to_f32(raw)
    if t.name == "tf32":
        return tf32_to_f32(raw)
    if t.name == "bf8":
        return bf8_to_f32(raw)
    return raw


# --- immediates -----------------------------------------------------------------------------


def _vf_byte(byte: int) -> float:
    """An 8-bit restricted float of a :vf immediate: sign, 3-bit exponent (bias 3), 4-bit
    mantissa, no denormals (only 0x00 and 0x80 are zeros)."""
    sign = -1.0 if byte & 0x80 else 1.0
    exponent = (byte >> 4) & 7
    mantissa = byte & 0xF
    if exponent == 0 and mantissa == 0:
        return sign * 0.0
    return sign * (1 + mantissa / 16.0) * 2.0 ** (exponent - 3)


def immediate_values(value: int, type_name: str, count: int) -> tuple[np.ndarray, str]:
    """The elements an immediate supplies to `count` channels, and their element type.

    Scalars broadcast; :uv/:v give eight 4-bit integers (channel i takes nibble i % 8),
    :vf four 8-bit floats (channel i takes byte i % 4)."""
    if type_name == "uv":
        nibbles = [(value >> (4 * i)) & 0xF for i in range(8)]
        return np.array([nibbles[i % 8] for i in range(count)], dtype=np.uint16), "uw"
    if type_name == "v":
        nibbles = [((value >> (4 * i)) & 0xF) - (16 if (value >> (4 * i)) & 8 else 0) for i in range(8)]
        return np.array([nibbles[i % 8] for i in range(count)], dtype=np.int16), "w"
    if type_name == "vf":
        floats = [_vf_byte((value >> (8 * i)) & 0xFF) for i in range(4)]
        return np.array([floats[i % 4] for i in range(count)], dtype=np.float32), "f"
    t = TYPES[type_name]
    raw = np.array([value & ((1 << t.bits) - 1)], dtype=INT_DTYPES[t.size][0]).view(t.storage)
    return raw, type_name
