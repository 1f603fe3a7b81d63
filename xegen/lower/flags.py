"""Repeated flag computations: a condition computed again while the flag still holds it.

Instruction selection evaluates a message's mask right before the message, so consecutive
messages under the same mask (a prefetch and the load of the same block, the rows of a tile)
each set the flag again.  A *chain* is an unpredicated `cmp` into a flag followed by `cmp`s
into the same flag predicated by it (`a && b && c`, `a || b`), every source a virtual register
or an immediate.  Within a basic block, a chain identical to the one that set the flag last is
dropped when nothing between them wrote that flag register or any byte the chain reads.
"""

from __future__ import annotations

from ..emit.instruction import Imm
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
