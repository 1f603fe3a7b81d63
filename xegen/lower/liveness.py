"""Liveness of virtual registers: where each one holds a value that a later instruction may read.

A backward dataflow over the basic blocks of the program (labels start blocks, `jmpi` and the
end-of-thread send end them).  Liveness is tracked per dword of each register (`Units`):
a unit is live before an instruction if the instruction reads it, or if it is live after it
and the instruction does not overwrite all of it (`Op.kills`).  Partial writes (a lane of a
vector, a predicated move or message, the bytes of a response's last GRF past its data) keep
the older bytes alive; an unpredicated message response ends the life of the bytes it fills.

The result is one interval per register, in instruction indices: from the first point where
it is live or touched to the last.  The hull is conservative inside loops in exactly the
right way: a value live around a back edge is live at every instruction of the loop.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from .program import Label, Op, Program


@dataclass
class Block:
    start: int  # index of its first op
    end: int  # one past its last op
    successors: list[int]


def basic_blocks(ops: list[Op], labels: dict[str, int]) -> list[Block]:
    starts = {0}
    for index in labels.values():
        starts.add(index)
    for i, op in enumerate(ops):
        if op.inst is not None and (op.inst.opcode == "jmpi" or op.inst.eot):
            starts.add(i + 1)
    ordered = sorted(s for s in starts if s < len(ops))
    block_of = {s: b for b, s in enumerate(ordered)}
    blocks = []
    for b, start in enumerate(ordered):
        end = ordered[b + 1] if b + 1 < len(ordered) else len(ops)
        last = ops[end - 1].inst
        successors = []
        if last is not None and last.opcode == "jmpi":
            target = ops[end - 1].target
            assert target is not None  # (a jmpi names its label)
            successors.append(block_of[labels[target]])
        falls_through = last is None or (not last.eot and not (last.opcode == "jmpi" and last.predicate is None))
        if falls_through and end < len(ops):
            successors.append(b + 1)
        blocks.append(Block(start, end, successors))
    return blocks


def flatten(program: Program) -> tuple[list[Op], dict[str, int]]:
    """The program's ops and the op index each label names."""
    ops: list[Op] = []
    labels: dict[str, int] = {}
    for item in program.items:
        if isinstance(item, Label):
            labels[item.name] = len(ops)
        else:
            ops.append(item)
    return ops, labels


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


UNIT_BYTES = 4


class Units:
    """Liveness units: each dword of a register, so that a buffer written piece by piece is
    dead above its first writes instead of all the way back to its scope."""

    def __init__(self, vregs, unit: int = UNIT_BYTES):
        self.unit = unit
        self.base: list[int] = []
        self.count: list[int] = []
        self.sizes: list[int] = []
        total = 0
        for reg in vregs.regs:
            size = max(reg.reserved, reg.size, 1)
            self.base.append(total)
            self.sizes.append(size)
            self.count.append(-(-size // unit))
            total += self.count[-1]
        self.owner_start = sorted((b, r) for r, b in enumerate(self.base) if self.count[r])

    def mask(self, reg: int) -> int:
        return ((1 << self.count[reg]) - 1) << self.base[reg]

    def touched(self, span) -> int:
        """Bit mask of the units a span reads or writes."""
        first = span.start // self.unit
        last = min((max(span.end, span.start + 1) - 1) // self.unit, self.count[span.reg] - 1)
        return ((1 << (last - first + 1)) - 1) << (self.base[span.reg] + first)

    def covered(self, span) -> int:
        """Bit mask of the units a span overwrites completely."""
        size = self.sizes[span.reg]
        first = -(-span.start // self.unit)
        last = self.count[span.reg] - 1 if span.end >= size else span.end // self.unit - 1
        if last < first:
            return 0
        return ((1 << (last - first + 1)) - 1) << (self.base[span.reg] + first)

    def owners(self, live: int):
        """The registers with any live unit."""
        starts = [b for b, _ in self.owner_start]
        while live:
            low = (live & -live).bit_length() - 1
            i = bisect.bisect_right(starts, low) - 1
            reg = self.owner_start[i][1]
            yield reg
            live &= ~self.mask(reg)


def block_liveness(ops: list[Op], labels: dict[str, int], units: Units):
    """The blocks, each op's read and overwritten unit masks, and each block's live-out mask."""
    blocks = basic_blocks(ops, labels)
    reads = [0] * len(ops)
    kills = [0] * len(ops)
    for i, op in enumerate(ops):
        for span in op.reads:
            reads[i] |= units.touched(span)
        for span in op.kills:
            kills[i] |= units.covered(span)

    gen, kill = [], []
    for block in blocks:
        g = k = 0
        for i in range(block.end - 1, block.start - 1, -1):
            g = (g & ~kills[i]) | reads[i]
            k |= kills[i]
        gen.append(g)
        kill.append(k)

    live_in = [0] * len(blocks)
    live_out = [0] * len(blocks)
    changed = True
    while changed:
        changed = False
        for b in range(len(blocks) - 1, -1, -1):
            out = 0
            for s in blocks[b].successors:
                out |= live_in[s]
            new_in = gen[b] | (out & ~kill[b])
            if out != live_out[b] or new_in != live_in[b]:
                live_out[b], live_in[b] = out, new_in
                changed = True
    return blocks, reads, kills, live_in, live_out


def live_intervals(ops: list[Op], labels: dict[str, int], vregs, grf: int) -> dict[int, tuple[int, int]]:
    """Register id -> (first, last) op index where any of its units is live or touched."""
    if not ops:
        return {}
    units = Units(vregs)
    blocks, _, _, live_in, live_out = block_liveness(ops, labels, units)

    first: dict[int, int] = {}
    last: dict[int, int] = {}

    def touch(reg: int, index: int) -> None:
        if reg not in first or index < first[reg]:
            first[reg] = index
        if reg not in last or index > last[reg]:
            last[reg] = index

    for b, block in enumerate(blocks):
        for reg in units.owners(live_in[b]):
            touch(reg, block.start)
        for reg in units.owners(live_out[b]):
            touch(reg, block.end - 1)
    for i, op in enumerate(ops):
        for span in op.reads:
            touch(span.reg, i)
        for span in op.writes:
            touch(span.reg, i)
    return {reg: (first[reg], last[reg]) for reg in first}
