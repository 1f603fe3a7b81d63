"""Copies out of message temporaries move down to where their data is first needed.

A load whose data cannot land where the IR keeps it (16-bit gathers, whose response has a dword
per lane; a block ending inside a GRF, whose tail the response leaves undefined) is received in a
temporary and moved into place (`messages.py`).  Moved right after the send, each such move waits
for its load's whole latency before the next load is even sent: a row of them runs one latency
after another.  This pass lets those moves (the ops isel marked `sinkable`) sink past the
instructions that follow, so the loads of a run are all in flight before the first move waits.

A move stops sinking before the first instruction that reads or writes the bytes it writes, or
writes the temporary it reads; at a label or a branch (its block ends there); and when the
temporaries of the moves held back would take more than `BUDGET_GRFS` registers (each stays live
until its move).  Moves keep their order among themselves.
"""

from __future__ import annotations

from .program import Label, Op, Program, Span

BUDGET_GRFS = 16


def _overlap(a: tuple[Span, ...], b: tuple[Span, ...]) -> bool:
    return any(x.reg == y.reg and x.start < y.end and y.start < x.end for x in a for y in b)


def _ends_block(op: Op) -> bool:
    inst = op.inst
    return op.target is not None or (inst is not None and (inst.jip is not None or "EOT" in inst.options))


def sink_copies(program: Program, grf_bytes: int) -> None:
    """Move every sinkable op of `program` down as far as the rules above allow, in place."""
    out: list = []
    held: list[Op] = []  # sinkable moves not yet placed, oldest first

    def held_bytes() -> int:
        return sum(-(-(s.end - s.start) // grf_bytes) * grf_bytes for op in held for s in op.reads)

    def release(count: int) -> None:
        out.extend(held[:count])
        del held[:count]

    for item in program.items:
        if isinstance(item, Label) or _ends_block(item):
            release(len(held))
            out.append(item)
            continue
        touched = item.reads + item.writes + item.kills
        # the last held move this item depends on, and every move before it, go first
        last = max(
            (i for i, op in enumerate(held) if _overlap(op.writes, touched) or _overlap(op.reads, item.writes)),
            default=-1,
        )
        release(last + 1)
        if item.sinkable:
            held.append(item)
            while held and held_bytes() > BUDGET_GRFS * grf_bytes:
                release(1)
        else:
            out.append(item)
    release(len(held))
    program.items = out
