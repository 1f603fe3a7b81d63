"""Per-platform encoding layout: the resolved field table (`fields.py`) and the code tables
the encoder and the decoder share, built once per platform so that hot paths only do dict
lookups and shifts on one 128-bit integer.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import hw as hwlib
from . import tables as T
from .fields import Formats, layout_fields


@dataclass(frozen=True, eq=False)  # identity hash: one Layout per platform
class Layout:
    platform: hwlib.Platform
    xehpc: bool
    grf_bytes: int
    fields: Formats  # every format's fields (fields.py)

    # Code tables.
    type_codes: dict[str, int]  # 4-bit binary type codes
    type_by_code: dict[int, str]
    imm_type_codes: dict[str, int]  # immediate types (scalars and vectors)
    imm_type_by_code: dict[int, str]
    ternary_int: dict[str, int]
    ternary_float: dict[str, int]
    ternary_int_by_code: dict[int, str]
    ternary_float_by_code: dict[int, str]
    pred_modes: dict[str, int]
    pred_by_code: dict[int, str]
    sfids: dict[str, int]
    sfid_by_code: dict[int, str]
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
        fields=layout_fields(platform),
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
