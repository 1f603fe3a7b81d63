"""Branch semantics as per-channel program counters.

Each channel of a thread has its own pc (the index of the instruction it waits at); a
thread executes at the lowest pc of its live channels, and the channels at that pc are
the enabled ones.  This one rule gives structured (if/else/endif, while/break/cont) and
unstructured (goto/join) SIMD control flow the hardware's meaning, as long as JIP/UIP
point where the hardware says: the channels that take a branch wait at its target until
the others arrive there.  jmpi moves every channel at the jmpi (the thread's IP).

`targets(...)` says, for one branch instruction, which of the channels at it go where.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..emit.instruction import Instruction
from .errors import SimulationError
from .flags import FlagReader

if TYPE_CHECKING:
    from .machine import Machine

BRANCHES = frozenset({"jmpi", "if", "else", "endif", "while", "break", "cont", "halt", "goto", "join",
                      "call", "calla", "ret", "brd", "brc"})


class Branch:
    """A compiled branch: `targets(at)` -> [(channels (threads, 32) bool, target index)]."""

    def __init__(self, inst: Instruction, index: int, m: "Machine"):
        self.inst = inst
        self.index = index
        self.next = index + 1
        program = m.program
        op = inst.opcode
        self.op = op
        if op in ("call", "calla", "ret", "brd", "brc"):
            raise SimulationError(f"'{op}' is not simulated")
        if inst.srcs and op == "jmpi":
            raise SimulationError("jmpi through a register is not simulated")
        self.jip = program.target(index, inst.jip) if inst.jip is not None else None
        self.uip = program.target(index, inst.uip) if inst.uip is not None else None
        if op == "break":
            # break leaves the loop: past the while its UIP names
            self.uip = self.uip + 1
        self.predicate = None
        size = inst.exec_size
        self.lanes = slice(inst.channel_offset, inst.channel_offset + size)
        if inst.predicate is not None:
            self.predicate = FlagReader(m.files.flags, inst.predicate, size, inst.channel_offset)
        self.threads = m.files.threads

    def _taken(self, at: np.ndarray) -> np.ndarray:
        """Channels at the branch whose predicate holds (all of them without a predicate)."""
        taken = np.zeros_like(at)
        if self.predicate is None:
            taken[:, self.lanes] = at[:, self.lanes]
        else:
            taken[:, self.lanes] = at[:, self.lanes] & self.predicate()
        return taken

    def targets(self, at: np.ndarray) -> list[tuple[np.ndarray, int]]:
        op = self.op
        if op == "jmpi":
            if self.predicate is None:
                return [(at, self.jip)]
            # the thread's IP moves: one decision per thread from channel 0's flag bit
            taken = self.predicate()[:, :1]
            move = at & taken
            return [(move, self.jip), (at & ~move, self.next)]
        if op in ("endif", "join"):
            return [(at, self.next)]
        if op == "else":
            return [(at, self.jip)]
        taken = self._taken(at)
        stay = at & ~taken
        if op == "if":  # channels whose condition fails wait at JIP (after the else, or the endif)
            return [(taken, self.next), (stay, self.jip)]
        if op == "while":
            return [(taken, self.jip), (stay, self.next)]
        if op in ("goto", "halt", "cont", "break"):
            return [(taken, self.uip), (stay, self.next)]
        raise SimulationError(f"'{op}' is not simulated")
