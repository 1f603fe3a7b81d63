"""Index expressions like those of convolution kernels, written by hand from the formulas of
oneDNN's convolution generator (docs/design.md): input/weight/output offsets in
several layouts, padding checks, packed grid-id unpacking, SLM and GRF offsets.

Every variable has a declared non-negative range.  Divisions and remainders only take dividends
the ranges make non-negative, so C's truncating division and Halide's flooring division agree.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    name: str
    mb: int
    ic: int
    ih: int
    oc: int
    oh: int
    kh: int
    sh: int
    ph: int
    dh: int  # dilation, 0 = dense


SHAPES = (
    Shape("resnet_3x3", mb=2, ic=64, ih=56, oc=64, oh=56, kh=3, sh=1, ph=1, dh=0),
    Shape("resnet_7x7s2", mb=2, ic=3, ih=224, oc=64, oh=112, kh=7, sh=2, ph=3, dh=0),
    Shape("dilated_3x3", mb=1, ic=32, ih=28, oc=32, oh=28, kh=3, sh=1, ph=2, dh=1),
)


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    ranges: dict  # name -> range(lo, hi)


def _cases(s: Shape) -> list[Case]:
    iw, ow, kw, sw, pw, dw = s.ih, s.oh, s.kh, s.sh, s.ph, s.dh
    r = {
        "mb": range(0, s.mb),
        "ic": range(0, s.ic),
        "oc": range(0, s.oc),
        "oh": range(0, s.oh),
        "ow": range(0, s.oh),
        "kh": range(0, s.kh),
        "kw": range(0, s.kh),
        "ih": range(0, s.ih),
        "iw": range(0, s.ih),
    }
    ih_e = f"(oh*{s.sh} + kh*({s.dh}+1) - {s.ph})"
    iw_e = f"(ow*{sw} + kw*({dw}+1) - {pw})"
    gid_n = s.mb * s.oh * ow
    icb = s.ic // 16 if s.ic % 16 == 0 else None
    out = [
        Case("src_nhwc", f"((mb*{s.ih} + {ih_e})*{iw} + {iw_e})*{s.ic} + ic", r),
        Case("src_nchw", f"((mb*{s.ic} + ic)*{s.ih} + {ih_e})*{iw} + {iw_e}", r),
        Case("src_nhwc_bytes", f"(((mb*{s.ih} + {ih_e})*{iw} + {iw_e})*{s.ic} + ic)*4", r),
        Case("wei_oihw", f"((oc*{s.ic} + ic)*{s.kh} + kh)*{kw} + kw", r),
        Case("dst_nchw", f"((mb*{s.oc} + oc)*{s.oh} + oh)*{ow} + ow", r),
        Case("pad_check", f"{ih_e} >= 0 && {ih_e} < {s.ih} && {iw_e} >= 0 && {iw_e} < {iw}", r),
        Case("gid_ow", f"gid % {ow}", {"gid": range(0, gid_n)}),
        Case("gid_oh", f"gid / {ow} % {s.oh}", {"gid": range(0, gid_n)}),
        Case("gid_mb", f"gid / {ow} / {s.oh}", {"gid": range(0, gid_n)}),
        Case(
            "gid_dst",
            f"((gid / {ow} / {s.oh})*{s.oc} + oc)*{s.oh * ow} + gid / {ow} % {s.oh} * {ow} + gid % {ow}",
            {"gid": range(0, gid_n), "oc": r["oc"]},
        ),
        Case("gid_repack", f"(gid / {ow}) * {ow} + gid % {ow}", {"gid": range(0, gid_n)}),
        Case(
            "src_offset_diff",
            f"(((mb*{s.ih} + {ih_e})*{iw} + {iw_e})*{s.ic} + ic) - ((mb*{s.ih} + oh*{s.sh})*{iw} + ow*{sw})*{s.ic}",
            r,
        ),
        Case("k_unroll", f"((kh*{kw} + kw)*{s.ic} + ic + 16)*4 - (kh*{kw} + kw)*{s.ic}*4", r),
    ]
    if icb:
        out += [
            Case("src_nChw16c", f"(((mb*{icb} + ic/16)*{s.ih} + {ih_e})*{iw} + {iw_e})*16 + ic%16", r),
            Case(
                "icb_split",
                f"((icb*16 + ici)/16)*{s.ih * iw * 16} + (icb*16 + ici)%16",
                {"icb": range(0, icb), "ici": range(0, 16)},
            ),
        ]
    return [Case(f"{s.name}.{c.name}", c.text, c.ranges) for c in out]


# Expressions from the generator's other passes (SLM buffering, tiling, hoisting).
OTHER = [
    Case("slm_ring", "(ithr*16 + k % 3 * 256) * 4 + (k / 3) * 0", {"ithr": range(0, 16), "k": range(0, 64)}),
    Case(
        "slm_double_buffer",
        "((k + 1) % 2) * 4096 + ithr * 256 + i * 4",
        {"k": range(0, 64), "ithr": range(0, 16), "i": range(0, 64)},
    ),
    Case(
        "tile_offset",
        "((tg * 4 + ithr) * 8 + i) * 64 + j * 4",
        {"tg": range(0, 1024), "ithr": range(0, 4), "i": range(0, 8), "j": range(0, 16)},
    ),
    Case("strength_mul", "x * 65537 + y * 9", {"x": range(0, 1024), "y": range(0, 1024)}),
    Case("strength_div", "x / 12 + x % 12", {"x": range(0, 4096)}),
    Case("pow2_divmod", "(x / 32) * 32 + x % 32 + (y >> 2 << 2)", {"x": range(0, 100000), "y": range(0, 4096)}),
    Case(
        "sum_of_products",
        "2*(a+b) - a + 3*(b - c) + c*3",
        {"a": range(0, 1024), "b": range(0, 1024), "c": range(0, 1024)},
    ),
    Case("select_minmax", "(x < y ? x : y) + (x < y ? y : x) - min(x, 16)", {"x": range(0, 100), "y": range(0, 100)}),
    Case("nested_bounds", "min(max(x * 4 + 3, 0), 4095) / 4", {"x": range(0, 1024)}),
    Case(
        "loop_invariant",
        "(n * 7 + 3) * k + (n * 7 + 3) * 2 + i",
        {"n": range(0, 64), "k": range(0, 8), "i": range(0, 8)},
    ),
    Case(
        "mad_chain",
        "a * 3 + b * 5 + c * 7 + d * 9 + 11",
        {"a": range(0, 64), "b": range(0, 64), "c": range(0, 64), "d": range(0, 64)},
    ),
    Case("mod_of_sum", "(x * 24 + y * 8 + z) % 8", {"x": range(0, 64), "y": range(0, 64), "z": range(0, 8)}),
    Case("div_of_sum", "(x * 24 + y * 8 + z) / 8", {"x": range(0, 64), "y": range(0, 64), "z": range(0, 8)}),
    Case("compare_shift", "x * 4 + 3 < 64", {"x": range(0, 100)}),
]


def corpus() -> list[Case]:
    cases = [c for s in SHAPES for c in _cases(s)] + OTHER
    return cases + conv_builder_cases()


def conv_builder_cases() -> list[Case]:
    """Expressions the conv builder (xegen.conv) generates, when it exists."""
    try:
        from xegen import conv  # noqa: F401
    except ImportError:
        return []
    try:
        from xegen.conv import corpus_expressions  # type: ignore[attr-defined]
    except ImportError:
        return []
    return [Case(f"conv.{name}", text, ranges) for name, text, ranges in corpus_expressions()]
