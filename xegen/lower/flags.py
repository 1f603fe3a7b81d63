"""Repeated flag computations: a condition computed again while the flag still holds it, and
a loop's conditions that are the same on every trip.

Instruction selection evaluates a message's mask right before the message, so consecutive
messages under the same mask (a prefetch and the load of the same block, the rows of a tile)
each set the flag again.  A *chain* is an unpredicated `cmp` into a flag followed by `cmp`s
into the same flag predicated by it (`a && b && c`, `a || b`), every source a virtual register
or an immediate.  Within a basic block, a chain identical to the one that set the flag last is
dropped when nothing between them wrote that flag register or any byte the chain reads.

A chain in a loop whose sources the loop never writes, into a flag register nothing else in
the loop writes, and that nothing in the loop reads before the chain, holds the same value on
every trip: it moves in front of the loop's label (`hoist_invariant_flags`; a gather's bounds
check inside a reduction loop, three `cmp`s a trip).
"""

from __future__ import annotations

from ..emit.instruction import Imm, Reg
from .liveness import basic_blocks, flatten
from .program import Label, Op, Program, Span
from .values import VIRTUAL


def _is_cmp_into(inst, flag) -> bool:
    return (
        inst.opcode == "cmp"
        and inst.cond_modifier is not None
        and inst.cond_modifier.flag == flag
        and inst.dst is not None
        and inst.dst.file == "null"
        and all(isinstance(src, Imm) or src.file == VIRTUAL for src in inst.srcs)
    )


def _chain(ops: list[Op], start: int, end: int) -> int:
    """One past the last op of the chain starting at `start` (== start when none starts)."""
    first = ops[start].inst
    if (
        first is None
        or first.cond_modifier is None
        or first.predicate is not None
        or not _is_cmp_into(first, first.cond_modifier.flag)
    ):
        return start
    flag = first.cond_modifier.flag
    at = start + 1
    while at < end:
        inst = ops[at].inst
        if (
            inst is None
            or not _is_cmp_into(inst, flag)
            or inst.predicate is None
            or inst.predicate.flag != flag
            or inst.predicate.mode
        ):
            break
        at += 1
    return at


def _flag_registers_written(inst) -> set[int]:
    written = set()
    if inst.cond_modifier is not None:
        written.add(inst.cond_modifier.flag.reg)
    if inst.dst is not None and inst.dst.file == "f":
        written.add(inst.dst.number)
    return written


def _overlaps(writes, reads) -> bool:
    return any(w.reg == r.reg and w.start < r.end and r.start < w.end for w in writes for r in reads)


def _repeated(ops: list[Op], start: int, end: int) -> set[int]:
    """Indices of ops in [start, end) that repeat the chain their flag already holds."""
    held: dict[int, tuple[tuple, tuple[Span, ...]]] = {}  # flag register -> (chain, bytes it read)
    dropped: set[int] = set()
    at = start
    while at < end:
        stop = _chain(ops, at, end)
        if stop > at:
            first = ops[at].inst
            assert first is not None and first.cond_modifier is not None  # (_chain found a chain there)
            flag = first.cond_modifier.flag
            chain = tuple(op.inst for op in ops[at:stop])
            if held.get(flag.reg, (None,))[0] == chain:
                dropped.update(range(at, stop))
            else:
                held[flag.reg] = (chain, tuple(span for op in ops[at:stop] for span in op.reads))
            at = stop
            continue
        op = ops[at]
        if op.inst is not None:
            for reg in _flag_registers_written(op.inst):
                held.pop(reg, None)
        for reg in [reg for reg, (_, reads) in held.items() if _overlaps(op.writes, reads)]:
            del held[reg]
        at += 1
    return dropped


def drop_repeated_flags(program: Program) -> int:
    """Remove repeated flag chains from `program` in place; returns how many ops went."""
    ops, labels = flatten(program)
    dropped: set[int] = set()
    for block in basic_blocks(ops, labels):
        dropped |= _repeated(ops, block.start, block.end)
    if dropped:
        index, kept = 0, []
        for item in program.items:
            if isinstance(item, Label) or index not in dropped:
                kept.append(item)
            if not isinstance(item, Label):
                index += 1
        program.items = kept
    return len(dropped)


def hoist_invariant_flags(program: Program) -> int:
    """Move loop-invariant flag chains in front of their loops, innermost loops first and then
    out of the loops around them; returns how many chains moved."""
    moved = 0
    while _hoist_one(program):
        moved += 1
    return moved


def _hoist_one(program: Program) -> bool:
    items = program.items
    label_at = {item.name: i for i, item in enumerate(items) if isinstance(item, Label)}
    for end, item in enumerate(items):
        if isinstance(item, Op) and item.inst is not None and item.inst.opcode == "jmpi":
            top = label_at.get(item.target or "", end)
            if top < end and _closed(items, label_at, top, end):
                chain = _invariant_chain(items, top, end)
                if chain is not None:
                    start, stop, flag = chain
                    at = _in_front(items, label_at, top, end, flag)
                    items[at:at] = items[start:stop]
                    shift = stop - start
                    del items[start + shift : stop + shift]
                    return True
    return False


def _in_front(items: list, label_at: dict[str, int], top: int, end: int, flag: int) -> int:
    """Where a chain into `flag` that runs before the loop goes: in front of its label, or in
    front of the guard (a `cmp` and a `jmpi` past the loop) when it has one, whose count of
    executions is the code's before the loop (lower/counts.py).  Not where that `cmp` writes
    `flag`: an if's jump over a then-part that starts with the loop would look the same (the
    loop counter's `mov` comes between them as isel lays loops out, but not by necessity)."""
    if top >= 2:
        jump, compare = items[top - 1], items[top - 2]
        if (
            isinstance(jump, Op)
            and jump.inst is not None
            and jump.inst.opcode == "jmpi"
            and label_at.get(jump.target or "", -1) > end
            and isinstance(compare, Op)
            and compare.inst is not None
            and compare.inst.opcode == "cmp"
            and flag not in _flag_registers_written(compare.inst)
        ):
            return top - 2
    return top


def _closed(items: list, label_at: dict[str, int], top: int, end: int) -> bool:
    """Whether control enters the loop [top, end] only at its label and leaves it only at its
    end: no jump between the inside and the outside."""
    inside_labels = {item.name for item in items[top + 1 : end + 1] if isinstance(item, Label)}
    for i, item in enumerate(items):
        if not (isinstance(item, Op) and item.inst is not None and item.inst.opcode == "jmpi"):
            continue
        inside = top <= i <= end
        target = label_at.get(item.target or "")
        if target is None:
            return False
        if inside and not top <= target <= end:
            return False
        if not inside and item.target in inside_labels:
            return False
    return True


def _invariant_chain(items: list, top: int, end: int) -> tuple[int, int, int] | None:
    """[start, stop) of the first chain in the loop's body that can move out, and its flag
    register; None if there is none."""
    body = list(range(top + 1, end + 1))
    ops = [items[i] for i in body if isinstance(items[i], Op)]
    where = [i for i in body if isinstance(items[i], Op)]
    for at in range(len(ops)):
        # a chain runs in consecutive items (no label between)
        stop = _chain(ops, at, len(ops))
        if stop == at or where[stop - 1] - where[at] != stop - 1 - at:
            continue
        first = ops[at].inst
        assert first is not None and first.cond_modifier is not None
        flag = first.cond_modifier.flag.reg
        reads = tuple(span for op in ops[at:stop] for span in op.reads)
        others = ops[:at] + ops[stop:]
        if any(op.inst is not None and flag in _flag_registers_written(op.inst) for op in others):
            continue
        if any(_overlaps((*op.writes, *op.kills), reads) for op in others):
            continue
        if any(op.inst is not None and flag in _flag_registers_read(op.inst) for op in ops[:at]):
            continue
        return where[at], where[stop - 1] + 1, flag
    return None


def _flag_registers_read(inst) -> set[int]:
    read = set()
    if inst.predicate is not None:
        read.add(inst.predicate.flag.reg)
    for src in inst.srcs:
        if isinstance(src, Reg) and src.file == "f":
            read.add(src.number)
    return read
