"""Send messages: LSC (`lsc`), legacy HDC (`hdc`), gateway barriers; memory through `spaces`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...emit.instruction import Instruction
from ..compile_alu import combined_mask
from ..errors import SimulationError
from .hdc import compile_hdc
from .lsc import compile_lsc
from .payload import message

if TYPE_CHECKING:
    from ..machine import Machine

GATEWAY_BARRIER_SIGNAL = 0x4


def compile_send(inst: Instruction, m: Machine):
    """A closure performing the message of a (non end-of-thread) send for every thread."""
    mask_of = combined_mask(inst, m)
    msg = message(inst)
    sfid = msg.sfid
    if sfid in ("ugm", "ugml", "slm"):
        return compile_lsc(inst, m, mask_of)
    if sfid in ("dc0", "dc1", "dcro"):
        return compile_hdc(inst, m, mask_of)
    if sfid == "gtwy":
        function = msg.desc & 0xFF
        if function == GATEWAY_BARRIER_SIGNAL:

            def signal():
                mask = mask_of()
                threads = m.participating() if mask is None else mask.any(axis=1)
                m.barrier_signal(threads)

            return signal
        raise SimulationError(f"gateway message 0x{msg.desc:08x} is not simulated")
    if sfid == "null":
        return lambda: None
    raise SimulationError(f"messages to '{sfid}' are not simulated")
