"""benchdnn convolution descriptors: `g1mb2ic16ih14oc32oh14kh3ph1n"name"` and friends.

A descriptor names the shape of one convolution (not its data types or direction).  Text form:

    gXmbX_icXidXihXiwX_ocXodXohXowX_kdXkhXkwX_sdXshXswX_pdXphXpwX_ddXdhXdwX_nNAME

`_` separates nothing and may appear anywhere between fields; `n` starts the name, which runs to
the end of the text (surrounding double quotes are dropped).  The rules that fill in what is not
given follow benchdnn's:

- `g` 1, `mb` 2, strides 1, dilations 0 (0 means dense; the effective kernel is (k-1)(d+1)+1);
- `ic` and `oc` are required, and for each spatial dimension in use its input size and kernel;
- an output size not given is computed, `o = (i - ek + 2p) / s + 1` with padding 0 if not given;
- an output given without padding gets `p = ((o-1)s - i + ek) / 2`;
- both divisions are C's, truncating toward zero: `ih2kh3sh2` gives `oh = (-1)/2 + 1 = 1`;
- only the `d` dimension given: `h` and `w` copy it; `h` without `w`: `w` copies `h`;
  `d` with only one of `h`/`w` is an error.  A descriptor with `d` is 3-D, with `h` 2-D, with
  only `w` 1-D.

Impossible shapes (an output size below 1, negative left padding, padding at least the effective
kernel on either side, a channel count the groups do not divide) raise `ParseError`.  The
canonical form printed by `format_descriptor` always spells every field of the dimensions in use,
so it re-parses equal.

Where xegen differs from benchdnn (on purpose):

- `g1` is the same problem as no `g`: weights have a group dimension only when g > 1 (benchdnn
  gives `g1` 5-D weights);
- a field given twice is an error (benchdnn keeps the last value), and so is `mb0` (benchdnn
  accepts an empty minibatch);
- a derived negative left padding is an error (benchdnn's parser keeps it; oneDNN then refuses the
  primitive), and so is padding at least the effective kernel on either side (oneDNN accepts it;
  those outputs read only padding);
- a right padding of minus the stride or less is accepted (the input's tail is unused; oneDNN
  asks for right padding + stride > 0);
- values are plain digits, and `_` may appear anywhere between fields (benchdnn's `strtol` also
  takes a sign or spaces, and benchdnn allows one `_` after a field);
- the canonical form separates field groups with `_` and quotes the name; benchdnn reads it back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..errors import Error, ParseError
from .index import trunc_div

SPATIAL = ("d", "h", "w")
# Per spatial dimension: input, output, kernel, stride, padding, dilation.
_PER_DIM = ("i", "o", "k", "s", "p", "d")
_UNUSED_DIM = {"i": 1, "o": 1, "k": 1, "s": 1, "p": 0, "d": 0}  # what an unused dimension holds
FIELDS = (
    "g",
    "mb",
    "ic",
    "id",
    "ih",
    "iw",
    "oc",
    "od",
    "oh",
    "ow",
    "kd",
    "kh",
    "kw",
    "sd",
    "sh",
    "sw",
    "pd",
    "ph",
    "pw",
    "dd",
    "dh",
    "dw",
)
_FIELD_RE = re.compile(r"(mb|[io][cdhw]|k[dhw]|s[dhw]|p[dhw]|d[dhw]|g)")
_NUMBER_RE = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class Descriptor:
    """A convolution shape with every field resolved.  Spatial fields of dimensions the problem
    does not use hold 1 (sizes, kernel, stride) or 0 (padding, dilation)."""

    g: int
    mb: int
    ic: int
    id: int
    ih: int
    iw: int
    oc: int
    od: int
    oh: int
    ow: int
    kd: int
    kh: int
    kw: int
    sd: int
    sh: int
    sw: int
    pd: int
    ph: int
    pw: int
    dd: int
    dh: int
    dw: int
    spatial_dims: int = 2  # 1, 2 or 3: which of d, h, w are in use (the last `spatial_dims`)
    name: str = ""

    # -- derived sizes --------------------------------------------------------------------
    @property
    def used(self) -> tuple[str, ...]:
        """The spatial dimensions in use, outermost first: ("w",), ("h", "w") or ("d", "h", "w")."""
        return SPATIAL[3 - self.spatial_dims :]

    def field(self, prefix: str, dim: str) -> int:
        return getattr(self, prefix + dim)

    def effective_kernel(self, dim: str) -> int:
        return (self.field("k", dim) - 1) * (self.field("d", dim) + 1) + 1

    def right_padding(self, dim: str) -> int:
        """Padding after the input's end (negative when the last input elements are unused)."""
        o, i, s, p = (self.field(x, dim) for x in ("o", "i", "s", "p"))
        return (o - 1) * s - i + self.effective_kernel(dim) - p

    @property
    def icg(self) -> int:
        """Input channels per group."""
        return self.ic // self.g

    @property
    def ocg(self) -> int:
        """Output channels per group."""
        return self.oc // self.g

    def src_dims(self) -> tuple[int, ...]:
        return (self.mb, self.ic, *(self.field("i", d) for d in self.used))

    def dst_dims(self) -> tuple[int, ...]:
        return (self.mb, self.oc, *(self.field("o", d) for d in self.used))

    def wei_dims(self) -> tuple[int, ...]:
        """Weights are (oc, ic, k...) without groups and (g, oc/g, ic/g, k...) with g > 1."""
        kernel = tuple(self.field("k", d) for d in self.used)
        if self.g > 1:
            return (self.g, self.ocg, self.icg, *kernel)
        return (self.oc, self.ic, *kernel)

    def with_mb(self, mb: int) -> Descriptor:
        if mb < 1:
            raise Error(f"minibatch must be at least 1, not {mb}")
        return replace(self, mb=mb)

    def flops(self) -> int:
        """Multiply-adds times two, counting only taps that read the input (not padding)."""
        taps = 1
        for dim in self.used:
            i, o, k, s, p, d = (self.field(x, dim) for x in _PER_DIM)
            taps *= sum(1 for out in range(o) for kk in range(k) if 0 <= out * s - p + kk * (d + 1) < i)
        return 2 * self.mb * self.oc * self.icg * taps

    def __str__(self) -> str:
        return format_descriptor(self)


def format_descriptor(desc: Descriptor) -> str:
    """The canonical text: every field of the dimensions in use, groups separated by `_`."""
    used = desc.used

    def spatial(prefix: str) -> str:
        return "".join(f"{prefix}{d}{desc.field(prefix, d)}" for d in used)

    parts = [
        f"g{desc.g}mb{desc.mb}",
        f"ic{desc.ic}{spatial('i')}",
        f"oc{desc.oc}{spatial('o')}",
        spatial("k"),
        spatial("s"),
        spatial("p"),
        spatial("d"),
    ]
    if desc.name:
        parts.append(f'n"{desc.name}"')
    return "_".join(parts)


def parse_descriptor(text: str) -> Descriptor:
    """Parse a benchdnn descriptor, applying benchdnn's defaults; raise ParseError if it is
    malformed or describes an impossible convolution."""
    given, name = _scan(text)
    return _resolve(given, name, text)


def _scan(text: str) -> tuple[dict[str, tuple[int, int]], str]:
    """Fields as {name: (value, column)} and the name."""
    given: dict[str, tuple[int, int]] = {}
    pos = 0
    stripped = text.strip()
    offset = len(text) - len(text.lstrip())
    while pos < len(stripped):
        column = offset + pos + 1
        char = stripped[pos]
        if char == "_":
            pos += 1
            continue
        if char == "n":
            name = stripped[pos + 1 :]
            if name.startswith('"'):
                if len(name) < 2 or not name.endswith('"'):
                    raise ParseError("the name's opening \" has no closing \"", text, 1, offset + pos + 2)
                name = name[1:-1]
            return given, name
        field = _FIELD_RE.match(stripped, pos)
        if field is None:
            raise ParseError(
                f"unknown descriptor field at '{stripped[pos : pos + 8]}' (fields: {', '.join(FIELDS)}, "
                "then n and the name)",
                text,
                1,
                column,
            )
        key = field.group(0)
        number = _NUMBER_RE.match(stripped, field.end())
        if number is None:
            raise ParseError(f"'{key}' needs a non-negative integer value", text, 1, column)
        if key in given:
            raise ParseError(f"'{key}' is given twice", text, 1, column)
        given[key] = (int(number.group(0)), column)
        pos = number.end()
    return given, ""


def _resolve(given: dict[str, tuple[int, int]], name: str, text: str) -> Descriptor:
    def fail(message: str, key: str | None = None):
        column = given[key][1] if key in given else 1
        raise ParseError(message, text, 1, column)

    value = {key: v for key, (v, _) in given.items()}
    g = value.get("g", 1)
    mb = value.get("mb", 2)
    for key in ("ic", "oc"):
        if value.get(key, 0) == 0:
            fail(f"'{key}' is required and must be at least 1", key)
    if g < 1:
        fail("groups 'g' must be at least 1", "g")
    if mb < 1:
        fail("minibatch 'mb' must be at least 1", "mb")
    for key in ("ic", "oc"):
        if value[key] % g:
            fail(f"{key}={value[key]} is not divisible by the {g} groups", key)

    dims: dict[str, dict[str, int]] = {}
    for dim in SPATIAL:
        if not _in_use(value, dim):
            continue
        dims[dim] = _resolve_dim(value, dim, fail)

    if not dims:
        fail("a convolution needs at least one spatial dimension (e.g. ih and kh)")
    if "d" in dims and ("h" in dims) != ("w" in dims):
        missing = "w" if "h" in dims else "h"
        fail(f"a 3-D descriptor gives all of d, h and w, or only d (the '{missing}' fields are missing)")
    if "d" in dims and "h" not in dims:
        dims["h"] = dims["w"] = dict(dims["d"])
    elif "h" in dims and "w" not in dims:
        dims["w"] = dict(dims["h"])
    spatial_dims = 3 if "d" in dims else 2 if "h" in dims else 1

    fields = {"g": g, "mb": mb, "ic": value["ic"], "oc": value["oc"]}
    for dim in SPATIAL:
        for prefix in _PER_DIM:
            fields[prefix + dim] = dims[dim][prefix] if dim in dims else _UNUSED_DIM[prefix]
    return Descriptor(**fields, spatial_dims=spatial_dims, name=name)


def _in_use(value: dict[str, int], dim: str) -> bool:
    """benchdnn's rule: a dimension is in use when a size, kernel or dilation is non-zero, the
    stride differs from 1 or the padding is positive."""
    return (
        any(value.get(p + dim, 0) for p in ("i", "o", "k", "d"))
        or value.get("s" + dim, 1) != 1
        or value.get("p" + dim, 0) > 0
    )


def _resolve_dim(value: dict[str, int], dim: str, fail) -> dict[str, int]:
    i, k = value.get("i" + dim, 0), value.get("k" + dim, 0)
    if i < 1:
        fail(f"'i{dim}' is required (at least 1) when the {dim} dimension is used", "i" + dim)
    if k < 1:
        fail(f"'k{dim}' is required (at least 1) when the {dim} dimension is used", "k" + dim)
    s = value.get("s" + dim, 1)
    if s < 1:
        fail(f"stride 's{dim}' must be at least 1", "s" + dim)
    d = value.get("d" + dim, 0)
    ek = (k - 1) * (d + 1) + 1
    o = value.get("o" + dim, 0)
    # benchdnn computes the defaults in C, whose division truncates toward zero
    if o == 0:
        p = value.get("p" + dim, 0)
        o = trunc_div(i - ek + 2 * p, s) + 1
        if o < 1:
            fail(
                f"the {dim} output size would be {o}: input i{dim}={i} with padding {p} is smaller than "
                f"the effective kernel {ek}",
                "k" + dim,
            )
    elif "p" + dim in value:
        p = value["p" + dim]
    else:
        p = trunc_div((o - 1) * s - i + ek, 2)
        if p < 0:
            fail(
                f"o{dim}={o} needs negative padding p{dim}={p} with i{dim}={i}, k{dim}={k}, s{dim}={s} "
                "(oneDNN takes padding of at least 0)",
                "o" + dim,
            )
    if p >= ek:
        fail(
            f"padding p{dim}={p} is not smaller than the effective kernel {ek}: outputs would read only padding",
            "p" + dim if "p" + dim in value else "o" + dim,
        )
    right = (o - 1) * s - i + ek - p
    if right >= ek:
        fail(
            f"o{dim}={o} is too large for i{dim}={i}: the last outputs would read only padding "
            f"(right padding {right} ≥ effective kernel {ek})",
            "o" + dim,
        )
    return {"i": i, "o": o, "k": k, "s": s, "p": p, "d": d}
