"""Which in-order pipe an instruction goes down, from the platform's scoreboard fields.

One rule for the SWSB pass (`footprint.py`, `scoreboard.py`) and the simulator's hazard
checker (`xegen.sim.hazards`).  The facts are `hw.Platform`'s:

- `swsb_pipes`: XeLP has one in-order pipe, whose distances name none (`@2`); XeHPG has F
  (float), I (integer) and L (long: 64-bit), XeHPC adds M (math);
- `math_is_out_of_order`: math is token-tracked (XeLP, XeHPG) or goes down the M pipe (XeHPC);
- `swsb_long_pipe_rule`: "any_64bit_operand" (XeHPG: a 64-bit destination or source sends an
  instruction down L) or "float64_destination" (XeHPC: only :df results; 64-bit integers use I).

Out-of-order instructions (sends, dpas, token-tracked math) have no in-order pipe.
"""

from __future__ import annotations

from .. import hw as hwlib
from . import tables as T
from .instruction import Instruction

ANY_64BIT_OPERAND = "any_64bit_operand"
FLOAT64_DESTINATION = "float64_destination"


def is_64bit(type_name: str) -> bool:
    info = T.TYPES.get(type_name)
    return info is not None and info.bits == 64


def typed_operands(inst: Instruction) -> list[str]:
    """The types of the sources, immediates included."""
    return [s.type for s in inst.srcs if s.type in T.TYPES]


def has_64bit_operand(inst: Instruction) -> bool:
    types = typed_operands(inst) + ([inst.dst.type] if inst.dst is not None else [])
    return any(is_64bit(t) for t in types)


def type_pipe(type_name: str, platform: hwlib.Platform) -> str:
    """The pipe of an operand type (what a bare `@n` names on XeHPG): L for the 64-bit types
    the long pipe takes, F for floats, I for the rest."""
    info = T.TYPES.get(type_name)
    if info is None:
        return "I"
    if info.bits == 64 and (info.is_float or platform.swsb_long_pipe_rule == ANY_64BIT_OPERAND):
        return "L"
    return "F" if info.is_float else "I"


def in_order_pipe(inst: Instruction, platform: hwlib.Platform) -> str:
    """The pipe whose distance counter an in-order ALU instruction advances ("" on XeLP)."""
    if not platform.swsb_named_pipes:
        return ""
    if inst.info.format == T.MATH and not platform.math_is_out_of_order:
        return "M"
    if platform.swsb_long_pipe_rule == FLOAT64_DESTINATION:
        return type_pipe(inst.dst.type, platform) if inst.dst is not None else "I"
    # ANY_64BIT_OPERAND: the destination's type (src0's without one) picks F or I
    sources = typed_operands(inst)
    main = inst.dst.type if inst.dst is not None else (sources[0] if sources else "ud")
    if is_64bit(main) or any(is_64bit(t) for t in sources):
        return "L"
    return type_pipe(main, platform)


def branch_pipe(platform: hwlib.Platform) -> str:
    """Branches are integer instructions: the I pipe (XeLP: its one pipe)."""
    return "I" if platform.swsb_named_pipes else ""


def order_class(inst: Instruction, platform: hwlib.Platform) -> str:
    """Instructions of one class are kept in order by the hardware: those of one pipe.  XeLP's
    one pipe still lets 64-bit ("long") results land after later short ones, and branches
    ("control") apart."""
    if inst.is_branch:
        return branch_pipe(platform) or "control"
    if platform.swsb_named_pipes:
        return in_order_pipe(inst, platform)
    return "long" if has_64bit_operand(inst) else "short"
