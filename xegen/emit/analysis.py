"""What a kernel's instructions do, counted: loops, the inner loop, sends, FMA instructions.

Works on decoded instructions (ours or IGC's) with their byte sizes, so the same numbers can be
compared between xegen's kernels and a peer's.  A loop is a backward branch (jmpi, while, goto,
brc, …) and the instructions from its target to the branch; the inner loop is the innermost loop
that contains a multiply-add (the compute loop of a GEMM or convolution).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import tables as T
from .instruction import Instruction

FMA_OPCODES = frozenset({"dpas", "dpasw", "dp4a"})


def is_fma(inst: Instruction) -> bool:
    """A math instruction of the convolution: dpas/dpasw/dp4a, or a floating-point mad."""
    if inst.opcode in FMA_OPCODES:
        return True
    return inst.opcode == "mad" and inst.dst is not None and inst.dst.type in ("f", "hf", "bf", "df")


def is_send(inst: Instruction) -> bool:
    return inst.opcode in ("send", "sendc")


def is_sync(inst: Instruction) -> bool:
    return inst.opcode == "sync"


_GLOBAL_SFIDS = frozenset({"ugm", "ugml", "tgm", "dc0", "dc1", "dc2", "dcro"})
_HDC_SFIDS = frozenset({"dc0", "dc1", "dc2", "dcro"})
_LSC_FENCE = 0x1F  # LSC opcode
_HDC_FENCE = 0x07  # HDC dc0 message type
_SLM_BTI = 0xFE  # HDC binding table index of shared local memory


def message_target(inst: Instruction) -> str:
    """Where a send's data lives: "slm", "global" (memory through the caches), "fence" (a memory
    fence of either), or "other" (end of thread, barriers, samplers, ...)."""
    send = inst.send
    if send is None:
        return "other"
    sfid = send.sfid
    if sfid in ("slm", "ugm", "ugml") and not send.desc_in_a0 and send.desc & 0x3F == _LSC_FENCE:
        return "fence"
    if sfid in _HDC_SFIDS and not send.desc_in_a0:
        if sfid == "dc0" and (send.desc >> 14) & 0x1F == _HDC_FENCE:
            return "fence"
        if send.desc & 0xFF == _SLM_BTI:
            return "slm"
    if sfid == "slm":
        return "slm"
    return "global" if sfid in _GLOBAL_SFIDS else "other"


_LSC_LOAD = 0x0  # LSC opcode
_LSC_ADDRESS_BTI = 3  # LSC desc[30:29]: the surface is a binding table index (exdesc[31:24])
_GENERAL_STATE_BTI = 0xFF  # with BTI addressing: General State, where the dispatch payload lives


def reads_dispatch_payload(inst: Instruction) -> bool:
    """Whether a send loads the dispatch's payload from the indirect object heap: an LSC load
    through bti[255] (XeHPG/XeHPC prologues: IGC's on XeHPC, xegen's).  Every thread of a
    launch reads the same few bytes of arguments there, so they come from the caches."""
    send = inst.send
    if send is None or send.sfid != "ugm" or send.desc_in_a0 or send.exdesc_a0 is not None:
        return False
    return (
        send.desc & 0x3F == _LSC_LOAD
        and (send.desc >> 29) & 3 == _LSC_ADDRESS_BTI
        and send.exdesc >> 24 == _GENERAL_STATE_BTI
    )


def payload_bytes(inst: Instruction, grf_bytes: int) -> int:
    """Bytes of registers a send fills (its response) or hands over as data (src1): exact for
    block and dword messages, an over-estimate for byte and word ones, which take a dword slot
    per element."""
    send = inst.send
    if send is None:
        return 0
    src1 = send.src1_length if send.src1_length is not None else (send.exdesc >> 6) & 0x1F
    return ((send.response_length or 0) + src1) * grf_bytes


@dataclass(frozen=True)
class Loop:
    start: int  # index of the first instruction of the body (the branch target)
    end: int  # index of the backward branch (inclusive)

    def __contains__(self, other: Loop) -> bool:
        return self.start <= other.start and other.end <= self.end and other != self

    @property
    def size(self) -> int:
        return self.end - self.start + 1


@dataclass(frozen=True)
class Counts:
    instructions: int
    sends: int
    fmas: int
    syncs: int

    @property
    def math_density(self) -> float:
        """FMA instructions per instruction."""
        return self.fmas / self.instructions if self.instructions else 0.0


def byte_offsets(instructions: Sequence[Instruction], sizes: Sequence[int] | None = None) -> list[int]:
    offsets, pc = [], 0
    for i, inst in enumerate(instructions):
        offsets.append(pc)
        pc += sizes[i] if sizes is not None else (8 if "Compacted" in inst.options else 16)
    return offsets


def loops(instructions: Sequence[Instruction], sizes: Sequence[int] | None = None) -> list[Loop]:
    """Every backward branch and its body, in program order of the branches."""
    offsets = byte_offsets(instructions, sizes)
    index_of = {pc: i for i, pc in enumerate(offsets)}
    found = []
    for i, inst in enumerate(instructions):
        if T.OPCODES[inst.opcode].format not in T.BRANCH_FORMATS or inst.jip is None:
            continue
        targets = [inst.jip] + ([inst.uip] if inst.opcode == "while" and inst.uip is not None else [])
        for offset in targets:
            if offset < 0 and offsets[i] + offset in index_of:
                found.append(Loop(index_of[offsets[i] + offset], i))
                break
    return found


def count(instructions: Sequence[Instruction]) -> Counts:
    return Counts(
        instructions=len(instructions),
        sends=sum(is_send(i) for i in instructions),
        fmas=sum(is_fma(i) for i in instructions),
        syncs=sum(is_sync(i) for i in instructions),
    )


def inner_loop(instructions: Sequence[Instruction], sizes: Sequence[int] | None = None) -> Loop | None:
    """The innermost loop with FMA instructions (the one with most of them if several); None
    when no loop multiplies (fully unrolled code)."""
    candidates = [
        lp for lp in loops(instructions, sizes) if any(is_fma(i) for i in instructions[lp.start : lp.end + 1])
    ]
    innermost = [lp for lp in candidates if not any(other in lp for other in candidates)]
    if not innermost:
        return None
    return max(innermost, key=lambda lp: (count(instructions[lp.start : lp.end + 1]).fmas, -lp.start))


@dataclass(frozen=True)
class KernelCounts:
    total: Counts
    inner: Counts | None  # None: the kernel has no loop around its multiplies

    def as_dict(self) -> dict:
        inner = self.inner
        return {
            "instructions": self.total.instructions,
            "sends": self.total.sends,
            "fmas": self.total.fmas,
            "syncs": self.total.syncs,
            "inner_loop_instructions": inner.instructions if inner else None,
            "inner_loop_sends": inner.sends if inner else None,
            "inner_loop_fmas": inner.fmas if inner else None,
            "inner_loop_math_density": round(inner.math_density, 4) if inner else None,
        }


def kernel_counts(instructions: Sequence[Instruction], sizes: Sequence[int] | None = None) -> KernelCounts:
    loop = inner_loop(instructions, sizes)
    inner = count(instructions[loop.start : loop.end + 1]) if loop else None
    return KernelCounts(count(instructions), inner)
