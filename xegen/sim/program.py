"""A kernel's code, decoded once: instructions, their byte pcs, and branch targets as indices.

Decoding goes through `xegen.emit.decode_one` (the simulator never encodes).  IGC pads its
kernels with zero bytes that iga64 also skips ("unexpected padding at end of kernel"), so
trailing zeros that do not form a whole instruction end the program instead of being an
error.  Bytes that do not decode anywhere else become an `Undecodable` entry: running into
it raises the decoder's error with its byte offset, while a kernel that never reaches it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from .. import hw as hwlib
from ..emit.asm_printer import format_instruction
from ..emit.decoder import decode_one
from ..emit.instruction import Instruction
from ..errors import DecodeError
from .errors import SimulationError


@dataclass(frozen=True)
class Undecodable:
    pc: int
    error: DecodeError


class Program:
    def __init__(self, code: bytes, platform: hwlib.Platform):
        self.platform = platform
        self.code = bytes(code)
        self.instructions: list[Instruction | Undecodable] = []
        self.pcs: list[int] = []
        self.sizes: list[int] = []
        offset = 0
        while offset < len(self.code):
            rest = self.code[offset:]
            if len(rest) < 16 and not any(rest):
                break  # padding
            try:
                inst, size = decode_one(self.code, offset, platform)
            except DecodeError as error:
                self.instructions.append(Undecodable(offset, error))
                self.pcs.append(offset)
                self.sizes.append(len(rest))
                break
            self.instructions.append(inst)
            self.pcs.append(offset)
            self.sizes.append(size)
            offset += size
        self.end = len(self.instructions)
        self.index_of = {pc: i for i, pc in enumerate(self.pcs)}

    def __len__(self) -> int:
        return len(self.instructions)

    def start_index(self, offset: int) -> int:
        """The instruction at byte `offset`, where threads start (the dispatch's entry point)."""
        found = self.index_of.get(offset)
        if found is None:
            raise SimulationError(f"the kernel's entry point 0x{offset:x} is not an instruction")
        return found

    def target(self, index: int, relative: int) -> int:
        """The instruction index a branch at `index` reaches with a byte offset `relative`."""
        pc = self.pcs[index] + relative
        found = self.index_of.get(pc)
        if found is None:
            if pc == len(self.code) or pc == (self.pcs[-1] + self.sizes[-1] if self.pcs else 0):
                return self.end
            raise SimulationError(f"pc 0x{self.pcs[index]:x}: branch target 0x{pc:x} is not an instruction")
        return found

    def text(self, index: int) -> str:
        """IGA text of instruction `index` (for messages)."""
        if index >= self.end:
            return "<end of kernel>"
        inst = self.instructions[index]
        if isinstance(inst, Undecodable):
            return f"<undecodable: {inst.error}>"
        return " ".join(format_instruction(inst, self.platform, pc=self.pcs[index]).split())

    @cached_property
    def listing(self) -> list[str]:
        return [self.text(i) for i in range(self.end)]

    def where(self, index: int) -> str:
        pc = self.pcs[index] if index < self.end else len(self.code)
        return f"pc 0x{pc:04x} ({self.text(index)})"
