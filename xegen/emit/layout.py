"""Per-platform encoding layout: the field positions and code tables the encoder and the
decoder share, precomputed once per platform so that hot paths only do dict lookups and
shifts on one 128-bit integer.

XeLP and XeHPG share the Gen12 layout; XeHPC moves the SWSB field (10 bits), the exec
offset (in units of 8 channels), the flag field (f0-f3) and halves the byte subregister
fields (the low bit lives elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import hw as hwlib
from . import tables as T


@dataclass(frozen=True, eq=False)  # identity hash: one Layout per platform
class Layout:
    platform: hwlib.Platform
    xehpc: bool
    grf_bytes: int

    # Common header.
    swsb_shift: int
    swsb_mask: int
    exec_size_shift: int
    chan_off_shift: int
    chan_off_unit: int  # channels per encoded step (4 or 8)
    chan_off_mask: int
    flag_reg_shift: int
    flag_reg_mask: int
    flag_subreg_shift: int
    pred_shift: int
    pred_mask: int

    # Code tables.
    type_codes: dict  # 4-bit binary type codes
    type_by_code: dict
    imm_type_codes: dict  # immediate types (scalars and vectors)
    imm_type_by_code: dict
    ternary_int: dict
    ternary_float: dict
    ternary_int_by_code: dict
    ternary_float_by_code: dict
    pred_modes: dict
    pred_by_code: dict
    sfids: dict
    sfid_by_code: dict
    flag_registers: int


_LAYOUTS: dict[str, Layout] = {}


def layout_for(platform: hwlib.Platform) -> Layout:
    """The (cached) layout of a platform."""
    layout = _LAYOUTS.get(platform.name)
    if layout is None:
        layout = _LAYOUTS[platform.name] = _build_layout(platform)
    return layout


def _build_layout(platform: hwlib.Platform) -> Layout:
    xehpc = T.is_xehpc_layout(platform)
    types = T.binary_type_codes(platform)
    imm_types = {k: v for k, v in types.items() if k not in ("ub", "b", "bf", "bf8", "tf32")}
    imm_types.update(T.immediate_vector_codes())
    t_int = T.ternary_int_codes()
    t_float = T.ternary_float_codes(platform)
    preds = dict(T.predicate_modes(platform))
    sfids = T.sfids(platform)
    return Layout(
        platform=platform,
        xehpc=xehpc,
        grf_bytes=platform.grf_bytes,
        swsb_shift=8,
        swsb_mask=0x3FF if xehpc else 0xFF,
        exec_size_shift=18 if xehpc else 16,
        chan_off_shift=24 if xehpc else 19,
        chan_off_unit=8 if xehpc else 4,
        chan_off_mask=0x3 if xehpc else 0x7,
        flag_reg_shift=22 if xehpc else 23,
        flag_reg_mask=0x3 if xehpc else 0x1,
        flag_subreg_shift=21 if xehpc else 22,
        pred_shift=26 if xehpc else 24,
        pred_mask=0x3 if xehpc else 0xF,
        type_codes=types,
        type_by_code={v: k for k, v in types.items()},
        imm_type_codes=imm_types,
        imm_type_by_code={v: k for k, v in imm_types.items()},
        ternary_int=t_int,
        ternary_float=t_float,
        ternary_int_by_code={v: k for k, v in t_int.items()},
        ternary_float_by_code={v: k for k, v in t_float.items()},
        pred_modes=preds,
        pred_by_code={v: k for k, v in preds.items()},
        sfids=sfids,
        sfid_by_code={v: k for k, v in sfids.items()},
        flag_registers=platform.flag_registers,
    )


# Fixed bit positions shared by all our platforms.
BIT_COMPACTED = 29
BIT_DEBUG = 30
BIT_NOMASK = 31
BIT_ATOMIC = 32
BIT_ACCWREN = 33  # also BranchCtrl on if/else/goto, Serialize on send; XeHPC: dst subreg bit 0
BIT_SATURATE = 34  # EOT on send
BIT_PRED_INV = 28
