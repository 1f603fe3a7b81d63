"""Branch semantics as per-channel program counters.

Each channel of a thread has its own pc (the index of the instruction it waits at); a
thread executes at the lowest pc of its live channels, and the channels at that pc are
the enabled ones.  This one rule gives structured (if/else/endif, while/break/cont) and
unstructured (goto/join) SIMD control flow the hardware's meaning, as long as JIP/UIP
point where the hardware says: the channels that take a branch wait at its target until
the others arrive there.  jmpi moves every channel at the jmpi (the thread's IP).

`targets(...)` says, for one branch instruction, which of the channels at it go where.

call, calla and ret are simulated in their scalar form, the one IGC uses for subroutines
(`call (1|M0) r126.0:d LABEL`, `ret (1|M0) r126.0:d`): like jmpi they move the whole thread
(the predicate's channel-0 bit decides).  call writes the return IP (the byte offset of the
next instruction, from the kernel's start) to dword 0 of its destination; calla's target is
such an IP; ret jumps to the IP in dword 0 of its source.  SIMD calls and returns keep
per-channel call masks, and brd/brc diverge and converge channels, in ways the public
documentation does not specify: they raise `UnsupportedInstruction`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from ..emit.instruction import Instruction, Reg
from .errors import SimulationError, UnsupportedInstruction
from .flags import FlagReader

if TYPE_CHECKING:
    from .machine import Machine

BRANCHES = frozenset(
    {
        "jmpi",
        "if",
        "else",
        "endif",
        "while",
        "break",
        "cont",
        "halt",
        "goto",
        "join",
        "call",
        "calla",
        "ret",
        "brd",
        "brc",
    }
)


class Branch:
    """A compiled branch: `targets(at)` -> [(channels (threads, 32) bool, target index)]."""

    def __init__(self, inst: Instruction, index: int, m: Machine):
        self.inst = inst
        self.index = index
        self.next = index + 1
        program = m.program
        op = inst.opcode
        self.op = op
        if op in ("brd", "brc"):
            raise UnsupportedInstruction(
                f"{op} is not simulated: how it diverges and reconverges channels is not publicly specified"
            )
        if op in ("call", "calla", "ret") and inst.exec_size != 1:
            raise UnsupportedInstruction(
                f"{op} ({inst.exec_size}) is not simulated: only the scalar form (1|M0) is; "
                "the call masks of SIMD calls are not publicly specified"
            )
        if inst.srcs and op in ("jmpi", "call"):
            raise SimulationError(f"{op} through a register is not simulated")
        self.program = program
        self.files = m.files
        if op == "calla":
            if inst.jip is None:
                raise SimulationError("calla without a target")
            self.jip = program.index_of.get(inst.jip)
            if self.jip is None:
                raise SimulationError(f"calla target 0x{inst.jip:x} is not an instruction of the kernel")
        else:
            self.jip = program.target(index, inst.jip) if inst.jip is not None else None
        self.uip = program.target(index, inst.uip) if inst.uip is not None else None
        if op == "break" and self.uip is not None:
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

    def _thread_moves(self, at: np.ndarray) -> np.ndarray:
        """Channels of the threads whose IP moves: all of a thread's, decided by the predicate's
        channel-0 bit (jmpi, scalar call and ret)."""
        if self.predicate is None:
            return at
        return at & self.predicate()[:, :1]

    def _return_ip(self, threads: np.ndarray) -> None:
        """call: the return IP into dword 0 of the destination of the calling threads."""
        dst = self.inst.dst
        if dst is None or dst.file != "r":
            return
        offset = dst.number * self.files.grf_bytes + dst.subreg * 4
        words = self.files.grf[:, offset : offset + 4].view(np.uint32)
        words[threads, 0] = self.program.pcs[self.next] if self.next < self.program.end else len(self.program.code)

    def _returns(self, move: np.ndarray) -> list[tuple[np.ndarray, int]]:
        """ret: each moving thread goes to the IP in dword 0 of its source register."""
        src = self.inst.srcs[0]
        if type(src) is not Reg:
            raise SimulationError("ret takes the register holding the return address")
        offset = src.number * self.files.grf_bytes + src.subreg * 4
        ips = self.files.grf[:, offset : offset + 4].view(np.uint32)[:, 0]
        moves = []
        for ip in sorted({int(ips[t]) for t in np.nonzero(move.any(axis=1))[0]}):
            target = self.program.index_of.get(ip)
            if target is None:
                raise SimulationError(f"ret to 0x{ip:x}, which is not an instruction of the kernel")
            moves.append((move & (ips == ip)[:, None], target))
        return moves

    def _target(self, index: int | None, name: str) -> int:
        if index is None:
            raise SimulationError(f"{self.op} without its {name}")
        return index

    def targets(self, at: np.ndarray) -> list[tuple[np.ndarray, int]]:
        op = self.op
        if op in ("jmpi", "call", "calla", "ret"):
            move = self._thread_moves(at)
            stay = (at & ~move, self.next)
            if op == "ret":
                return self._returns(move) + [stay]
            if op != "jmpi":
                self._return_ip(cast(np.ndarray, move.any(axis=1)))  # a 2-D array reduced along one axis
            return [(move, self._target(self.jip, "JIP")), stay]
        if op in ("endif", "join"):
            return [(at, self.next)]
        if op == "else":
            return [(at, self._target(self.jip, "JIP"))]
        taken = self._taken(at)
        stay = at & ~taken
        if op == "if":  # channels whose condition fails wait at JIP (after the else, or the endif)
            return [(taken, self.next), (stay, self._target(self.jip, "JIP"))]
        if op == "while":
            return [(taken, self._target(self.jip, "JIP")), (stay, self.next)]
        if op in ("goto", "halt", "cont", "break"):
            return [(taken, self._target(self.uip, "UIP")), (stay, self.next)]
        raise SimulationError(f"'{op}' is not simulated")
