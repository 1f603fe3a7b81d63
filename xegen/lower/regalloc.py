"""Register allocation: place every virtual register in the GRF, then rewrite the operands.

Linear scan over live intervals (`liveness.py`), byte-exact: a register may take any bytes
that no register with an overlapping interval holds, at its alignment.  GRF-aligned registers
(vectors, GRF buffers, message payloads) are placed from the bottom of the file up, scalars
from the top down, so that scalars share GRFs instead of scattering across them.  Registers
pinned to a physical place (r0, the pushed payload, the end-of-thread register) keep it, and
nothing else may use those bytes while they are live.

Then `banks.avoid_conflicts` moves registers whose dpas or three-source reads share a GRF bank
to free places where they do not (a preference: it never makes a kernel fail to fit).

A kernel that does not fit raises `RegisterAllocationError`, naming the point where the live
registers exceed the file: the caller may retry with a smaller configuration; nothing is
ever spilled.
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import replace
from typing import NoReturn

from ..emit.instruction import Instruction, Reg
from ..errors import ConfigError
from .banks import Banks, avoid_conflicts, read_groups
from .liveness import live_intervals
from .program import Op
from .values import TYPE_BYTES, VIRTUAL


class RegisterAllocationError(ConfigError):
    """The kernel's live values do not fit the register file (a smaller configuration may)."""

    def __init__(self, message: str, needed_bytes: int, available_bytes: int):
        self.needed_bytes = needed_bytes
        self.available_bytes = available_bytes
        super().__init__(message)


class _Occupancy:
    """Byte ranges held by live registers, kept sorted by start."""

    def __init__(self):
        self.starts: list[int] = []
        self.ranges: list[tuple[int, int, int]] = []  # (start, end, reg id)

    def add(self, start: int, end: int, reg: int) -> None:
        i = bisect.bisect_left(self.starts, start)
        self.starts.insert(i, start)
        self.ranges.insert(i, (start, end, reg))

    def remove(self, reg: int) -> None:
        for i, (_, _, r) in enumerate(self.ranges):
            if r == reg:
                del self.starts[i]
                del self.ranges[i]
                return

    def gaps(self, limit: int, extra: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Free byte ranges of [0, limit), also avoiding `extra` ranges."""
        taken = sorted([(s, e) for s, e, _ in self.ranges] + extra)
        free, at = [], 0
        for s, e in taken:
            if s > at:
                free.append((at, s))
            at = max(at, e)
        if at < limit:
            free.append((at, limit))
        return free


def _place(size: int, alignment: int, gaps: list[tuple[int, int]], grf: int, from_top: bool) -> int | None:
    if from_top:
        for start, end in reversed(gaps):
            at = (end - size) // alignment * alignment
            # a scalar never straddles a GRF boundary
            if size <= grf and at // grf != (at + size - 1) // grf:
                at = ((at + size - 1) // grf) * grf - size
                at = at // alignment * alignment
            if at >= start:
                return at
        return None
    for start, end in gaps:
        at = -(-start // alignment) * alignment
        if size <= grf and at // grf != (at + size - 1) // grf:
            at = -(-at // grf) * grf
        if at + size <= end:
            return at
    return None


BIG_GRFS = 4  # registers at least this many GRFs are placed first, among themselves


def allocate(
    ops: list[Op],
    labels: dict[str, int],
    vregs,
    grf_count: int,
    grf_bytes: int,
    kernel_name: str = "kernel",
    bank_bit: int | None = None,
) -> dict[int, int]:
    """Virtual register id -> physical byte address.

    Two passes: the big registers (GRF buffers, wide message payloads) first, each at the
    lowest address free of the big ones whose intervals overlap its own, so that they pack
    like an interval graph; then every other register by linear scan in the holes.  With
    `bank_bit` (`hw.grf_bank_bit`), registers then move to avoid bank conflicts."""
    intervals = live_intervals(ops, labels, vregs, grf_bytes)
    limit = grf_count * grf_bytes
    placed: dict[int, int] = {}
    reserved: list[tuple[int, int, int, int]] = []  # (first, last, start byte, end byte)
    for r, (first, last) in intervals.items():
        reg = vregs[r]
        if reg.fixed is not None:
            placed[r] = reg.fixed
            reserved.append((first, last, reg.fixed, reg.fixed + reg.reserved))
    big = sorted(
        (span[0], r)
        for r, span in intervals.items()
        if vregs[r].fixed is None and vregs[r].reserved >= BIG_GRFS * grf_bytes
    )
    for start, r in big:
        reg, end = vregs[r], intervals[r][1]
        taken = [(s0, e0) for first, last, s0, e0 in reserved if first <= end and last >= start]
        at = _place(reg.reserved, reg.alignment, _free(taken, limit), grf_bytes, from_top=False)
        if at is None:
            _fail(kernel_name, grf_count, start, reg, taken, vregs, intervals, placed, limit)
        placed[r] = at
        reserved.append((start, end, at, at + reg.reserved))
    order = sorted((span[0], r) for r, span in intervals.items() if r not in placed)
    by_end: list[tuple[int, int]] = []  # (end, reg) of active registers, a heap by end
    occupancy = _Occupancy()
    for start, r in order:
        while by_end and by_end[0][0] < start:
            _, gone = heapq.heappop(by_end)
            occupancy.remove(gone)
        reg = vregs[r]
        end = intervals[r][1]
        pinned = [(s0, e0) for first, last, s0, e0 in reserved if first <= end and last >= start]
        gaps = occupancy.gaps(limit, pinned)
        at = _place(reg.reserved, reg.alignment, gaps, grf_bytes, from_top=reg.alignment < grf_bytes)
        if at is None:
            taken = pinned + [(s0, e0) for s0, e0, _ in occupancy.ranges]
            _fail(kernel_name, grf_count, start, reg, taken, vregs, intervals, placed, limit)
        placed[r] = at
        occupancy.add(at, at + reg.reserved, r)
        heapq.heappush(by_end, (end, r))
    if bank_bit is not None:

        def free_places(r: int) -> list[tuple[int, int]]:
            first, last = intervals[r]
            return _free(
                [
                    (at, at + max(vregs[o].reserved, 1))
                    for o, at in placed.items()
                    if o != r and intervals[o][0] <= last and intervals[o][1] >= first
                ],
                limit,
            )

        banks = Banks(read_groups(ops, labels, grf_bytes), bank_bit, grf_bytes)
        avoid_conflicts(placed, banks, vregs, free_places)
    return placed


def _free(taken: list[tuple[int, int]], limit: int) -> list[tuple[int, int]]:
    free, at = [], 0
    for s, e in sorted(taken):
        if s > at:
            free.append((at, s))
        at = max(at, e)
    if at < limit:
        free.append((at, limit))
    return free


def _fail(kernel_name, grf_count, start, reg, taken, vregs, intervals, placed, limit) -> NoReturn:
    live = sorted(
        ((vregs[r].reserved, vregs[r].name) for r, at in placed.items() if intervals[r][0] <= start <= intervals[r][1]),
        reverse=True,
    )
    used = sum(e - s for s, e in taken)
    biggest = ", ".join(f"{name} ({size} B)" for size, name in live[:6])
    raise RegisterAllocationError(
        f"kernel {kernel_name} does not fit {grf_count} GRFs: at instruction {start} {used} bytes are taken "
        f"and {reg.name} needs {reg.reserved} more (largest live: {biggest}); try a smaller tile or more GRFs",
        used + reg.reserved,
        limit,
    )


def _physical(reg: Reg, placed: dict[int, int], grf: int, whole: bool = False) -> Reg:
    if reg.file != VIRTUAL:
        return reg
    size = TYPE_BYTES[reg.type]
    address = placed[reg.number] + reg.subreg * size
    if whole:
        if address % grf:
            raise AssertionError(f"message operand at byte {address} is not GRF-aligned")
        return reg.at("r", address // grf, 0)
    return reg.at("r", address // grf, (address % grf) // size)


def rewrite(ops: list[Op], placed: dict[int, int], grf: int) -> list[Instruction]:
    """The instructions with physical registers."""
    out = []
    for op in ops:
        inst = op.inst
        if inst is None:
            continue
        whole = inst.send is not None
        dst = _physical(inst.dst, placed, grf, whole) if isinstance(inst.dst, Reg) else inst.dst
        srcs = tuple(_physical(s, placed, grf, whole) if isinstance(s, Reg) else s for s in inst.srcs)
        out.append(replace(inst, dst=dst, srcs=srcs))
    return out


def registers_used(placed: dict[int, int], vregs, grf: int) -> int:
    """How many distinct GRFs hold any register at some point."""
    used: set[int] = set()
    for r, at in placed.items():
        used.update(range(at // grf, -(-(at + max(1, vregs[r].reserved)) // grf)))
    return len(used)
