"""Patch a kernel's code as NEO's linker does before the first dispatch (Linker::
patchInstructionsSegments and resolveBuiltins, compute-runtime shared/source/compiler_interface).

- R_PER_THREAD_PAYLOAD_OFFSET, and any relocation to `__INTEL_PER_THREAD_OFF`: where the
  per-thread data starts in the indirect data, CTD size - inline bytes
  (`dispatch.per_thread_data_offset`).
- `__INTEL_PATCH_CROSS_THREAD_OFFSET_OFF_R0` (IGC's prologue adds it to r0.0): the size of the
  implicit-arguments structure NEO puts before the cross-thread data, when the kernel needs
  one (stack calls, printf...).  Otherwise NEO leaves the instruction as compiled, and so does
  the simulator; kernels that need implicit arguments are refused.
- A relocation without a symbol: 0.
- Any other symbol (global variables, constants, functions, `__SubDeviceID`): refused, the
  simulator has no such segments.

The value goes in by type: R_ZE_SYM_ADDR 8 bytes, R_ZE_SYM_ADDR_32 its low and
R_ZE_SYM_ADDR_32_HI its high 4 bytes, R_PER_THREAD_PAYLOAD_OFFSET 4 bytes.
"""

from __future__ import annotations

import struct

from ..emit.zebin import R_PER_THREAD_PAYLOAD_OFFSET, R_ZE_SYM_ADDR, R_ZE_SYM_ADDR_32, R_ZE_SYM_ADDR_32_HI, ZebinKernel
from ..errors import UnsupportedError
from .dispatch import per_thread_data_offset

PER_THREAD_OFFSET_SYMBOL = "__INTEL_PER_THREAD_OFF"
IMPLICIT_ARGS_SYMBOL = "__INTEL_PATCH_CROSS_THREAD_OFFSET_OFF_R0"


def relocate(kernel: ZebinKernel) -> bytes:
    """The kernel's code with its relocations applied."""
    if not kernel.relocations:
        return kernel.code
    code = bytearray(kernel.code)
    for r in kernel.relocations:
        if r.type == R_PER_THREAD_PAYLOAD_OFFSET or r.symbol == PER_THREAD_OFFSET_SYMBOL:
            value = per_thread_data_offset(kernel)
        elif r.symbol == IMPLICIT_ARGS_SYMBOL:
            if kernel.execution_env.has_stack_calls:
                raise UnsupportedError(
                    f"kernel {kernel.name} needs NEO's implicit-arguments structure (it makes "
                    "stack calls), which the simulator does not provide"
                )
            continue  # NEO leaves it as compiled when there are no implicit arguments
        elif not r.symbol:
            value = 0
        else:
            raise UnsupportedError(
                f"kernel {kernel.name} refers to symbol '{r.symbol}' (relocation at code offset "
                f"0x{r.offset:x}); global variables, constants and functions are not simulated"
            )
        _patch(code, r.offset, r.type, value, kernel.name)
    return bytes(code)


def _patch(code: bytearray, offset: int, kind: int, value: int, kernel: str) -> None:
    if kind == R_ZE_SYM_ADDR:
        raw = struct.pack("<Q", value % 2**64)
    elif kind in (R_ZE_SYM_ADDR_32, R_PER_THREAD_PAYLOAD_OFFSET):
        raw = struct.pack("<I", value & 0xFFFFFFFF)
    elif kind == R_ZE_SYM_ADDR_32_HI:
        raw = struct.pack("<I", (value >> 32) & 0xFFFFFFFF)
    else:
        raise UnsupportedError(
            f"kernel {kernel}: relocation type {kind} at code offset 0x{offset:x} is not one NEO applies to code"
        )
    if offset < 0 or offset + len(raw) > len(code):
        raise UnsupportedError(f"kernel {kernel}: relocation at code offset 0x{offset:x} lies outside the code")
    code[offset : offset + len(raw)] = raw
