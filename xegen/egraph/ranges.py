"""Declared variable ranges as users type them: `x:s32[0,1024)`, `x[0,1023]`, `x:u16`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import Error
from ..ir.types import Type

_SPEC = re.compile(
    r"^(?P<name>[A-Za-z_]\w*)(?::(?P<type>[a-z]+\d*))?"
    r"(?:(?P<open>[\[(])\s*(?P<lo>[-+]?\w+)\s*,\s*(?P<hi>[-+]?\w+)\s*(?P<close>[\])]))?$"
)


@dataclass(frozen=True)
class VarSpec:
    name: str
    type: Type | None
    range: range | None


def parse_var_spec(text: str) -> VarSpec:
    """`NAME[:TYPE][RANGE]`: RANGE is `[lo,hi)` (half-open), `[lo,hi]` (inclusive) or `(lo,hi)`."""
    m = _SPEC.match(text.strip())
    if m is None:
        raise Error(f"--var '{text}' is not NAME[:TYPE][RANGE], e.g. x:s32[0,1024)")
    t = None
    if m.group("type"):
        try:
            t = Type.parse(m.group("type"))
        except ValueError:
            raise Error(f"--var '{text}': unknown type '{m.group('type')}'") from None
        if not (t.is_int and t.lanes == 1):
            raise Error(f"--var '{text}': ranges need a scalar integer type, not {t}")
    spec_range = None
    if m.group("open"):
        try:
            lo, hi = int(m.group("lo"), 0), int(m.group("hi"), 0)
        except ValueError:
            raise Error(f"--var '{text}': the bounds must be integers") from None
        if m.group("open") == "(":
            lo += 1
        if m.group("close") == "]":
            hi += 1
        if hi <= lo:
            raise Error(f"--var '{text}': the range is empty")
        if t is not None and (lo < t.min or hi - 1 > t.max):
            raise Error(f"--var '{text}': the range does not fit {t} [{t.min}, {t.max}]")
        spec_range = range(lo, hi)
    return VarSpec(m.group("name"), t, spec_range)
