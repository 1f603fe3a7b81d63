"""Floating-point immediates as IGA writes and reads them.

Printing follows iga64: the shortest of C's "%g" and "%e" (six significant digits) that
reads back to the same value at the immediate's precision, with ".0" added to integral
"%g" forms; otherwise the raw bits in hex.  NaNs print as "qnan(0x..)"/"snan(0x..)" with
their payload, infinities as "inf"/"-inf".
"""

from __future__ import annotations

import math
import struct

# (exponent bits, mantissa bits) of the IEEE formats we print.
_FORMATS = {"hf": (5, 10), "f": (8, 23), "df": (11, 52)}


def bits_to_float(bits: int, type_name: str) -> float:
    if type_name == "f":
        return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]
    if type_name == "df":
        return struct.unpack("<d", struct.pack("<Q", bits & 0xFFFFFFFFFFFFFFFF))[0]
    if type_name == "hf":
        return struct.unpack("<e", struct.pack("<H", bits & 0xFFFF))[0]
    raise ValueError(type_name)


def round_to_f32(value: float) -> float:
    """C's (float) cast of a double: round to nearest, overflow to infinity."""
    if math.isnan(value) or math.isinf(value):
        return value
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:  # rounds beyond FLT_MAX
        return math.copysign(math.inf, value)


def float_to_bits(value: float, type_name: str) -> int:
    """Bits of `value` narrowed to the type the way IGA's parser narrows doubles."""
    if type_name == "df":
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    if type_name == "f":
        return struct.unpack("<I", struct.pack("<f", round_to_f32(value)))[0]
    if type_name == "hf":
        f32 = round_to_f32(value)
        try:
            return struct.unpack("<H", struct.pack("<e", f32))[0]
        except OverflowError:
            return 0xFC00 if f32 < 0 else 0x7C00
    raise ValueError(type_name)


def _nan_text(bits: int, type_name: str) -> str:
    exponent_bits, mantissa_bits = _FORMATS[type_name]
    sign = bits >> (exponent_bits + mantissa_bits) & 1
    quiet_bit = 1 << (mantissa_bits - 1)
    kind = "qnan" if bits & quiet_bit else "snan"
    return f"{'-' if sign else ''}{kind}(0x{bits & (quiet_bit - 1):X})"


def _reads_back(text: str, value: float, single: bool) -> bool:
    parsed = float(text)
    if single:
        parsed = round_to_f32(parsed)
    return parsed == value


def format_float(bits: int, type_name: str) -> str:
    """IGA's text for a hf/f/df immediate given its bits."""
    value = bits_to_float(bits, type_name)
    if math.isnan(value):
        return _nan_text(bits, type_name)
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    single = type_name != "df"  # halves are checked at float precision, as IGA does
    text = f"{value:g}"
    if _reads_back(text, value, single):
        if "." not in text and "e" not in text:
            text += ".0"
        return text
    text = f"{value:e}"
    if _reads_back(text, value, single):
        return text
    return f"0x{bits:X}"


def parse_nan(text: str, type_name: str) -> int | None:
    """Bits of "qnan(0x..)"/"snan(0x..)" (optionally negative) for the type, or None."""
    negative = text.startswith("-")
    body = text[1:] if negative else text
    if not (body.startswith("qnan(") or body.startswith("snan(")) or not body.endswith(")"):
        return None
    payload = int(body[5:-1], 16)  # the payload is hex: qnan(0x1F)
    exponent_bits, mantissa_bits = _FORMATS[type_name]
    quiet_bit = 1 << (mantissa_bits - 1)
    if payload >= quiet_bit or (body.startswith("snan") and payload == 0):
        raise ValueError("NaN payload does not fit the type")
    bits = ((1 << exponent_bits) - 1) << mantissa_bits | payload
    if body.startswith("qnan"):
        bits |= quiet_bit
    if negative:
        bits |= 1 << (exponent_bits + mantissa_bits)
    return bits
