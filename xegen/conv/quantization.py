"""int8 quantization attributes as benchdnn spells them: `--attr-scales` and `--attr-zero-points`.

    --attr-scales=ARG:POLICY[:SCALE[:DATA_TYPE]][+...]        ARG src, wei or dst
    --attr-zero-points=ARG:POLICY[:ZEROPOINT[:DATA_TYPE]][+...]   ARG src or dst

POLICY is `common` (one value, given as SCALE or ZEROPOINT) or `per_oc` (one value per output
channel, passed at run time as a tensor: `wei_scales`, f32, or `dst_zero_points`, s32; benchdnn
refuses a value with it).  Weights take per_oc scales; dst takes per_oc zero points
(benchdnn's `per_dim_1`, the same thing for dst); src takes a common zero point, which must be a
value of src's type (the kernel fills the padding with it).  DATA_TYPE, if given, must be the
default (f32 for scales, s32 for zero points).

oneDNN's formula (its quantization attributes documentation), all in f32:

    dst = post_ops(src_scale * wei_scale[oc] * conv_s32(src - src_zp, wei) + bias) / dst_scale + dst_zp[oc]

then rounded to nearest even and saturated for an integer destination, where conv_s32 sums the
products of the taps inside the input only (padding contributes nothing).  Weight zero points
and per-channel source zero points are not supported.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..errors import Error, UnsupportedError

F32_MAX = float(np.finfo(np.float32).max)

_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_INT = re.compile(r"[+-]?\d+$")


@dataclass(frozen=True)
class Quantization:
    src_scale: float = 1.0
    wei_scale: float = 1.0
    wei_scale_per_oc: bool = False
    dst_scale: float = 1.0
    dst_zero_point: int = 0
    dst_zero_point_per_oc: bool = False
    src_zero_point: int = 0

    def __bool__(self) -> bool:
        return self != Quantization()

    @property
    def tensors(self) -> tuple[str, ...]:
        """The run-time tensors it reads (one value per output channel each)."""
        return (("wei_scales",) if self.wei_scale_per_oc else ()) + (
            ("dst_zero_points",) if self.dst_zero_point_per_oc else ()
        )

    @property
    def scales_text(self) -> str:
        parts = []
        if self.src_scale != 1.0:
            parts.append(f"src:common:{_number(self.src_scale)}")
        if self.wei_scale_per_oc:
            parts.append("wei:per_oc")
        elif self.wei_scale != 1.0:
            parts.append(f"wei:common:{_number(self.wei_scale)}")
        if self.dst_scale != 1.0:
            parts.append(f"dst:common:{_number(self.dst_scale)}")
        return "+".join(parts)

    @property
    def zero_points_text(self) -> str:
        parts = [f"src:common:{self.src_zero_point}"] if self.src_zero_point else []
        if self.dst_zero_point_per_oc:
            parts.append("dst:per_oc")
        elif self.dst_zero_point:
            parts.append(f"dst:common:{self.dst_zero_point}")
        return "+".join(parts)

    def __str__(self) -> str:
        options = [("--attr-scales", self.scales_text), ("--attr-zero-points", self.zero_points_text)]
        return " ".join(f"{name}={text}" for name, text in options if text)


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


def _entries(option: str, text: str) -> list[list[str]]:
    text = text.strip().strip("'\"")
    if not text:
        return []
    entries = [entry.strip() for entry in text.split("+")]
    if not all(entries):
        raise Error(f"{option} '{text}': an empty entry (a '+' with nothing on one side)")
    return [entry.split(":") for entry in entries]


def _policy(option: str, entry: str, fields: list[str], allowed: dict[str, str]) -> str:
    if len(fields) < 2 or not fields[1]:
        raise Error(f"{option} '{entry}': a policy must follow the argument (common or per_oc)")
    policy = fields[1].lower()
    policy = allowed.get(policy, policy)
    if policy not in ("common", "per_oc"):
        raise Error(
            f"{option} '{entry}': unknown or unsupported policy '{fields[1]}' "
            f"(known: common, {', '.join(allowed) or 'per_oc'})"
        )
    return policy


def _value(
    option: str, entry: str, fields: list[str], policy: str, pattern: re.Pattern, default_type: str, what: str
) -> str | None:
    value = fields[2] if len(fields) > 2 else None
    if policy != "common" and value is not None and value != "":
        raise Error(f"{option} '{entry}': a {policy} {what} takes its values at run time, not '{value}'")
    if policy == "common":
        if not value:
            raise Error(f"{option} '{entry}': the common policy needs a {what} value")
        if not pattern.match(value):
            raise Error(f"{option} '{entry}': {what} '{value}' is not a{'n integer' if pattern is _INT else ' number'}")
    if len(fields) > 3 and fields[3].lower() != default_type:
        raise UnsupportedError(
            f"{option} '{entry}': {what}s of type '{fields[3]}' are not supported (only {default_type})"
        )
    if len(fields) > 4:
        raise Error(f"{option} '{entry}': unexpected '{':'.join(fields[4:])}' after the data type")
    return value


def parse_quantization(scales: str = "", zero_points: str = "") -> Quantization:
    """The attributes of benchdnn's `--attr-scales` and `--attr-zero-points` values."""
    values: dict = {}
    seen: set[tuple[str, str]] = set()
    for fields in _entries("--attr-scales", scales):
        entry = ":".join(fields)
        arg = fields[0].lower()
        if arg == "src0":
            arg = "src"
        if arg not in ("src", "wei", "dst"):
            raise Error(f"--attr-scales '{entry}': unknown argument '{fields[0]}' (known: src, wei, dst)")
        if ("scale", arg) in seen:
            raise Error(f"--attr-scales: '{arg}' is given twice")
        seen.add(("scale", arg))
        allowed = {"per_dim_0": "per_oc"} if arg == "wei" else {}
        policy = _policy("--attr-scales", entry, fields, allowed)
        if policy == "per_oc" and arg != "wei":
            raise UnsupportedError(f"--attr-scales '{entry}': {arg} scales are common only (as oneDNN's convolutions)")
        value = _value("--attr-scales", entry, fields, policy, _FLOAT, "f32", "scale")
        if policy == "per_oc":
            values["wei_scale_per_oc"] = True
        else:
            assert value is not None  # _value demands one under the common policy
            scale = float(np.float32(float(value))) if abs(float(value)) <= F32_MAX else math.inf
            if not 0 < abs(scale) < math.inf:
                raise Error(f"--attr-scales '{entry}': scale {value} is not a non-zero f32")
            values[f"{arg}_scale"] = scale
    for fields in _entries("--attr-zero-points", zero_points):
        entry = ":".join(fields)
        arg = fields[0].lower()
        if arg == "src0":
            arg = "src"
        if arg == "wei":
            raise UnsupportedError(
                f"--attr-zero-points '{entry}': weight zero points are not supported (only src and dst)"
            )
        if arg not in ("src", "dst"):
            raise Error(f"--attr-zero-points '{entry}': unknown argument '{fields[0]}' (known: src, wei, dst)")
        if ("zp", arg) in seen:
            raise Error(f"--attr-zero-points: '{arg}' is given twice")
        seen.add(("zp", arg))
        policy = _policy("--attr-zero-points", entry, fields, {"per_dim_1": "per_oc"})
        if policy == "per_oc" and arg == "src":
            raise UnsupportedError(
                f"--attr-zero-points '{entry}': src zero points are common only (one per input "
                "channel would need a per-channel padding fill and compensation)"
            )
        value = _value("--attr-zero-points", entry, fields, policy, _INT, "s32", "zero point")
        if policy == "per_oc":
            values["dst_zero_point_per_oc"] = True
        else:
            assert value is not None  # _value demands one under the common policy
            if not -(2**31) <= int(value) < 2**31:
                raise Error(f"--attr-zero-points '{entry}': zero point {value} is beyond s32")
            values[f"{arg}_zero_point"] = int(value)
    return Quantization(**values)
