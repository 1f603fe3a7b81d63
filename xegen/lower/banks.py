"""GRF bank conflicts: placing registers so that dpas and three-source instructions read their
sources from different banks.

The GRF is split in two banks (register rN is in bank bit `hw.grf_bank_bit` of N: N & 1 on
XeLP and XeHPC, (N >> 1) & 1 on XeHPG, as nGEN's `Bundle::locate` has it).  Reading several
sources of one instruction from the same bank costs extra cycles; it never changes a result,
so the rules are preferences, not legality:

- a three-source instruction (mad, add3, bfn, dp4a, ...) should not read all three sources
  from one bank.  It runs in passes of one GRF of 32-bit lanes; each pass reads one register
  of every source, so the rule holds pass by pass;
- a dpas should read src0 and src2 from different banks (the first register of each, as
  oneDNN's convolution generator and IGC's allocator check it).

What the hardware does require of these operands (GRF-aligned dpas operands, a dpas
destination that overlaps no source other than an identical src0) instruction selection and
the allocator guarantee: `calls.py` rejects misaligned or overlapping operands, and registers
live at the same instruction never share bytes.

`avoid_conflicts` runs after allocation: it moves registers whose reads conflict to other free
places (free over their whole live interval, so the allocation stays valid) when that lowers
the number of conflicts, weighting instructions inside loops more.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..emit import tables as T
from ..emit.instruction import Reg
from ..emit.regions import three_source_region
from .program import Op
from .values import TYPE_BYTES, VIRTUAL

LOOP_WEIGHT = 8  # a conflict inside a loop counts this many times one just outside it


@dataclass(frozen=True)
class Read:
    """A register read: byte `offset` of virtual register `reg`, or physical byte `offset` when
    `reg` is None."""

    reg: int | None
    offset: int


@dataclass(frozen=True)
class Group:
    """Reads one instruction makes together: a conflict when all of them are in one bank (the
    three sources of a pass, or dpas src0 and src2).  `weight` counts executions (loops)."""

    reads: tuple[Read, ...]
    weight: int


def _read(reg: Reg, byte: int, grf: int) -> Read | None:
    if reg.file == VIRTUAL:
        return Read(reg.number, reg.subreg * TYPE_BYTES[reg.type] + byte)
    if reg.file == "r" and not reg.indirect:
        return Read(None, reg.number * grf + reg.subreg * TYPE_BYTES[reg.type] + byte)
    return None  # immediates, null, flags, accumulators: no GRF bank


def _ternary_groups(inst, grf: int, weight: int) -> list[Group]:
    sources = [s for s in inst.srcs if isinstance(s, Reg)]
    if len(sources) != 3 or any(_read(s, 0, grf) is None for s in sources):
        return []
    lanes_per_pass = grf // 4
    groups = []
    for first_lane in range(0, inst.exec_size, lanes_per_pass):
        reads: list[Read] = []
        for index, src in enumerate(inst.srcs):
            v, w, h = three_source_region(src, index)
            element = (first_lane // w) * v + (first_lane % w) * h
            read = _read(src, element * TYPE_BYTES[src.type], grf)
            assert read is not None  # (checked above: every source is in the GRF)
            reads.append(read)
        groups.append(Group(tuple(reads), weight))
    return groups


def _dpas_group(inst, grf: int, weight: int) -> list[Group]:
    src0, src2 = _read(inst.srcs[0], 0, grf), _read(inst.srcs[2], 0, grf)
    if src0 is None or src2 is None:
        return []
    return [Group((src0, src2), weight)]


def loop_depths(ops: list[Op], labels: dict[str, int]) -> list[int]:
    """How many loops (backward jumps) contain each op."""
    depth = [0] * len(ops)
    for i, op in enumerate(ops):
        if op.target is not None and labels[op.target] <= i:
            for j in range(labels[op.target], i + 1):
                depth[j] += 1
    return depth


def read_groups(ops: list[Op], labels: dict[str, int], grf: int) -> list[Group]:
    """The reads of every dpas and three-source instruction that should not share a bank."""
    depths = loop_depths(ops, labels)
    groups: list[Group] = []
    for op, depth in zip(ops, depths, strict=True):
        inst = op.inst
        if inst is None:
            continue
        weight = LOOP_WEIGHT**depth
        fmt = T.OPCODES[inst.opcode].format
        if fmt == T.DPAS:
            groups += _dpas_group(inst, grf, weight)
        elif fmt == T.TERNARY:
            groups += _ternary_groups(inst, grf, weight)
    return groups


class Banks:
    """Conflicts of a placement (virtual register id -> byte address)."""

    def __init__(self, groups: list[Group], bank_bit: int, grf: int):
        self.bank_bit = bank_bit
        self.grf = grf
        self.of_reg: dict[int, list[Group]] = {}
        for group in groups:
            for reg in sorted({read.reg for read in group.reads if read.reg is not None}):
                self.of_reg.setdefault(reg, []).append(group)

    def bank(self, read: Read, placed: dict[int, int]) -> int:
        address = read.offset if read.reg is None else placed[read.reg] + read.offset
        return (address // self.grf >> self.bank_bit) & 1

    def conflicts(self, group: Group, placed: dict[int, int]) -> bool:
        if len({(read.reg, read.offset // self.grf) for read in group.reads}) == 1:
            return False  # one register read several times: nothing to separate
        return len({self.bank(read, placed) for read in group.reads}) == 1

    def cost(self, groups, placed: dict[int, int]) -> int:
        return sum(group.weight for group in groups if self.conflicts(group, placed))


MAX_ROUNDS = 4


def avoid_conflicts(placed: dict[int, int], banks: Banks, vregs, free_places) -> None:
    """Move registers (in place in `placed`) to free places with fewer weighted conflicts;
    `free_places(r)` are the byte ranges free of every register live together with `r`."""
    grf = banks.grf
    period = 2 << banks.bank_bit  # GRFs after which the bank pattern repeats
    for _ in range(MAX_ROUNDS):
        moved = False
        for r in sorted(banks.of_reg):
            groups = banks.of_reg[r]
            current = banks.cost(groups, placed)
            if current == 0 or vregs[r].fixed is not None:
                continue
            best, best_cost = placed[r], current
            for at in _candidates(vregs[r], free_places(r), grf, period):
                placed[r] = at
                cost = banks.cost(groups, placed)
                if cost < best_cost:
                    best, best_cost = at, cost
            placed[r] = best
            moved = moved or best_cost < current
        if not moved:
            return


def _candidates(reg, free: list[tuple[int, int]], grf: int, period: int) -> list[int]:
    """For each place in the bank pattern (GRF index modulo `period`), the first address in the
    `free` ranges where register `reg` fits (the last one for registers the allocator packs
    from the top)."""
    size, alignment = max(reg.reserved, 1), reg.alignment
    from_top = alignment < grf
    found: dict[int, int] = {}
    for start, end in reversed(free) if from_top else free:
        lo = -(-start // alignment) * alignment
        hi = (end - size) // alignment * alignment
        addresses = range(hi, lo - 1, -alignment) if from_top else range(lo, hi + 1, alignment)
        for address in addresses:
            if size <= grf and address // grf != (address + size - 1) // grf:
                continue  # a scalar never straddles a GRF boundary
            found.setdefault(address // grf % period, address)
            if len(found) == period:
                return sorted(found.values())
    return sorted(found.values())
