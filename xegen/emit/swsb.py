"""Software scoreboard (SWSB) field: encoding and decoding per platform.

What a combined "distance + token" encoding means depends on the instruction class:
sends set a token and wait on a pipe, other token-tracked instructions (dpas, math on
XeLP/XeHPG) set a token, in-order instructions wait for a token's destination.  The tables
below list, per class, which `Swsb` each encodable value stands for.
"""

from __future__ import annotations

from functools import lru_cache

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
    if info.format == T.DPAS or (info.format == T.MATH and layout.platform.math_is_out_of_order):
        return OUT_OF_ORDER_CLASS
    return IN_ORDER_CLASS


def _gen12_table(layout: Layout, cls: str) -> dict[int, Swsb]:
    """All valid 8-bit encodings (XeLP, XeHPG) for one instruction class."""
    table: dict[int, Swsb] = {0: Swsb()}
    pipes = {"": 0}
    if T.has_pipes(layout.platform):
        pipes = {"": 0, "A": 1, "F": 2, "I": 3, "L": 10}
    for pipe, code in pipes.items():
        for d in range(1, 8):
            table[code << 3 | d] = Swsb(d, pipe)
    for s in range(16):
        table[0x20 | s] = Swsb(token=s, token_mode="dst")
        table[0x30 | s] = Swsb(token=s, token_mode="src")
        table[0x40 | s] = Swsb(token=s, token_mode="set")
    if cls == SEND_CLASS:
        pipe, mode = ("A" if T.has_pipes(layout.platform) else ""), "set"
    elif cls == OUT_OF_ORDER_CLASS:
        pipe, mode = "", "set"
    else:
        pipe, mode = "", "dst"
    for d in range(8):
        for s in range(16):
            table[0x80 | d << 4 | s] = Swsb(d, pipe, s, mode)
    return table


def _xehpc_table(cls: str) -> dict[int, Swsb]:
    """All valid 10-bit encodings (XeHPC) for one instruction class."""
    table: dict[int, Swsb] = {0: Swsb(), 0xF0: Swsb(no_acc_sb_set=True)}
    for code, pipe in enumerate(("", "A", "F", "I", "L", "M")):
        for d in range(1, 8):
            table[code << 3 | d] = Swsb(d, pipe)
    for s in range(32):
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
        for d in range(8):
            for s in range(32):
                table[mode << 8 | d << 5 | s] = Swsb(d, pipe, s, token_mode)
    return table


def _canonical_table(layout: Layout, cls: str) -> dict[int, Swsb]:
    if layout.xehpc:
        return _xehpc_table(cls)
    return _gen12_table(layout, cls)


@lru_cache(maxsize=None)
def decode_table(layout: Layout, cls: str) -> dict[int, Swsb]:
    table = _canonical_table(layout, cls)
    # A pipe with distance 0 and no token: iga64 prints nothing for these.
    pipe_codes = range(1, 6) if layout.xehpc else ((1, 2, 3, 10) if T.has_pipes(layout.platform) else ())
    for code in pipe_codes:
        table.setdefault(code << 3, Swsb())
    return table


@lru_cache(maxsize=None)
def encode_table(layout: Layout, cls: str) -> dict[Swsb, int]:
    return {swsb: code for code, swsb in _canonical_table(layout, cls).items()}


def encode_swsb(swsb: Swsb, info: T.OpcodeInfo, layout: Layout) -> int:
    if swsb.empty:
        return 0
    cls = instruction_class(info, layout)
    code = encode_table(layout, cls).get(swsb)
    if code is None:
        raise EncodeError(f"{info.name}: SWSB '{{{swsb}}}' cannot be encoded on {layout.platform.display_name}"
                          f" ({_explain(swsb, cls, layout)})")
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
