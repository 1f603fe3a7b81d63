"""Software scoreboard (SWSB) field: encoding and decoding per platform.

What a combined "distance + token" encoding means depends on the instruction class:
sends set a token and wait on a pipe, other token-tracked instructions (dpas, math on
XeLP/XeHPG) set a token, in-order instructions wait for a token's destination.  The tables
below list, per class, which `Swsb` each encodable value stands for.
"""

from __future__ import annotations

from functools import cache

from ..errors import DecodeError, EncodeError
from . import tables as T
from .instruction import Swsb
from .layout import Layout

# Instruction classes for the combined encodings.
SEND_CLASS = "send"
OUT_OF_ORDER_CLASS = "ooo"  # dpas, and math where it is token-tracked
IN_ORDER_CLASS = "inorder"


def instruction_class(info: T.OpcodeInfo, layout: Layout) -> str:
    if info.format == T.SEND:
        return SEND_CLASS
    if T.is_out_of_order(info, layout.platform):
        return OUT_OF_ORDER_CLASS
    return IN_ORDER_CLASS


# Pipe codes of the distance forms (`code << 3 | distance`), per encoding width.
_PIPE_CODES = {8: {"": 0, "A": 1, "F": 2, "I": 3, "L": 10}, 10: {"": 0, "A": 1, "F": 2, "I": 3, "L": 4, "M": 5}}


def _pipe_codes(platform) -> dict[str, int]:
    """The distance forms' pipes the platform has: "" (a bare @n), "A" (all) and its named pipes."""
    codes = _PIPE_CODES[platform.swsb_bits]
    if not platform.swsb_named_pipes:
        return {"": 0}
    return {pipe: code for pipe, code in codes.items() if pipe in ("", "A") or pipe in platform.swsb_pipes}


def _eight_bit_table(layout: Layout, cls: str) -> dict[int, Swsb]:
    """All valid 8-bit encodings (XeLP, XeHPG) for one instruction class."""
    platform = layout.platform
    distances = range(1, platform.swsb_max_distance + 1)
    tokens = range(platform.swsb_tokens)
    table: dict[int, Swsb] = {0: Swsb()}
    for pipe, code in _pipe_codes(platform).items():
        for d in distances:
            table[code << 3 | d] = Swsb(d, pipe)
    for s in tokens:
        table[0x20 | s] = Swsb(token=s, token_mode="dst")
        table[0x30 | s] = Swsb(token=s, token_mode="src")
        table[0x40 | s] = Swsb(token=s, token_mode="set")
    if cls == SEND_CLASS:
        pipe, mode = ("A" if platform.swsb_named_pipes else ""), "set"
    elif cls == OUT_OF_ORDER_CLASS:
        pipe, mode = "", "set"
    else:
        pipe, mode = "", "dst"
    for d in range(distances.stop):
        for s in tokens:
            table[0x80 | d << 4 | s] = Swsb(d, pipe, s, mode)
    return table


def _ten_bit_table(layout: Layout, cls: str) -> dict[int, Swsb]:
    """All valid 10-bit encodings (XeHPC) for one instruction class."""
    platform = layout.platform
    distances = range(1, platform.swsb_max_distance + 1)
    tokens = range(platform.swsb_tokens)
    table: dict[int, Swsb] = {0: Swsb(), 0xF0: Swsb(no_acc_sb_set=True)}
    for pipe, code in _pipe_codes(platform).items():
        for d in distances:
            table[code << 3 | d] = Swsb(d, pipe)
    for s in tokens:
        table[0x80 | s] = Swsb(token=s, token_mode="dst")
        table[0xA0 | s] = Swsb(token=s, token_mode="src")
        table[0xC0 | s] = Swsb(token=s, token_mode="set")
    if cls == SEND_CLASS:
        modes = {1: ("A", "set"), 2: ("F", "set"), 3: ("I", "set")}
    elif cls == OUT_OF_ORDER_CLASS:
        modes = {1: ("", "set"), 2: ("", "src"), 3: ("", "dst")}
    else:
        modes = {1: ("", "dst"), 2: ("", "src"), 3: ("A", "dst")}
    for mode, (pipe, token_mode) in modes.items():
        for d in range(distances.stop):
            for s in tokens:
                table[mode << 8 | d << 5 | s] = Swsb(d, pipe, s, token_mode)
    return table


# The SWSB encoding of each field width (hw.Platform.swsb_bits).
_TABLES = {8: _eight_bit_table, 10: _ten_bit_table}


def _canonical_table(layout: Layout, cls: str) -> dict[int, Swsb]:
    return _TABLES[layout.platform.swsb_bits](layout, cls)


@cache
def decode_table(layout: Layout, cls: str) -> dict[int, Swsb]:
    table = _canonical_table(layout, cls)
    # A pipe with distance 0 and no token: iga64 prints nothing for these.
    for pipe, code in _pipe_codes(layout.platform).items():
        if pipe:
            table.setdefault(code << 3, Swsb())
    return table


@cache
def encode_table(layout: Layout, cls: str) -> dict[Swsb, int]:
    return {swsb: code for code, swsb in _canonical_table(layout, cls).items()}


def encode_swsb(swsb: Swsb, info: T.OpcodeInfo, layout: Layout) -> int:
    if swsb.empty:
        return 0
    cls = instruction_class(info, layout)
    code = encode_table(layout, cls).get(swsb)
    if code is None:
        raise EncodeError(
            f"{info.name}: SWSB '{{{swsb}}}' cannot be encoded on {layout.platform.display_name}"
            f" ({_explain(swsb, cls, layout)})"
        )
    return code


def decode_swsb(bits: int, info: T.OpcodeInfo, layout: Layout, offset: int) -> Swsb:
    swsb = decode_table(layout, instruction_class(info, layout)).get(bits)
    if swsb is None:
        raise DecodeError(f"{info.name}: invalid SWSB field 0x{bits:x}", offset)
    return swsb


def _explain(swsb: Swsb, cls: str, layout: Layout) -> str:
    if swsb.token is not None and swsb.token >= layout.platform.swsb_tokens:
        return f"tokens are $0..${layout.platform.swsb_tokens - 1}"
    if swsb.distance is not None and swsb.distance > layout.platform.swsb_max_distance:
        return f"distances are 1..{layout.platform.swsb_max_distance}"
    if swsb.pipe and swsb.pipe not in layout.platform.swsb_pipes:
        return f"pipes are {', '.join(p for p in layout.platform.swsb_pipes if p) or 'not named'}"
    if swsb.no_acc_sb_set:
        return "NoAccSBSet exists on XeHPC only"
    if swsb.distance is not None and swsb.token is not None:
        return f"this distance/token combination is not valid for a {cls} instruction"
    return "invalid combination"
