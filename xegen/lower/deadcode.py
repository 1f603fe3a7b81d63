"""Dead-code elimination on virtual registers: drop instructions whose results nobody reads.

Instruction selection lowers every `let` and every value of the dispatch payload it is asked
for (all three local ids, say) without knowing which a later instruction reads.  An
instruction is dead when its only effect is writing virtual registers and none of the bytes it
writes is live after it (`liveness.block_liveness`).  Removing one can make its sources dead,
so the pass repeats until nothing changes.

Never removed: messages, branches, syncs, anything that writes a flag (a conditional
modifier), the accumulator (AccWrEn, `addc`/`subb`/`mach` carry) or a physical register.
"""

from __future__ import annotations

from .liveness import Units, block_liveness, flatten
from .program import Item, Label, Op, Program
from .values import VIRTUAL

# Instructions whose only effect is their destination operand.
PURE_OPCODES = frozenset(
    {
        "mov",
        "sel",
        "csel",
        "not",
        "and",
        "or",
        "xor",
        "bfn",
        "shl",
        "shr",
        "asr",
        "rol",
        "ror",
        "add",
        "add3",
        "mul",
        "mad",
        "avg",
        "frc",
        "rndd",
        "rnde",
        "rndu",
        "rndz",
        "lzd",
        "fbl",
        "fbh",
        "cbit",
        "bfe",
        "bfi1",
        "bfi2",
        "bfrev",
        "math",
        "dp4a",
        "dpas",
        "dpasw",
    }
)


def _removable(op: Op) -> bool:
    inst = op.inst
    return (
        inst is not None
        and inst.opcode in PURE_OPCODES
        and inst.cond_modifier is None
        and "AccWrEn" not in inst.options
        and inst.dst is not None
        and inst.dst.file == VIRTUAL
    )


def _dead_ops(ops: list[Op], labels: dict[str, int], units: Units) -> set[int]:
    blocks, reads, kills, _, live_out = block_liveness(ops, labels, units)
    dead = set()
    for b, block in enumerate(blocks):
        live = live_out[b]
        for i in range(block.end - 1, block.start - 1, -1):
            op = ops[i]
            if _removable(op):
                written = 0
                for span in op.writes:
                    written |= units.touched(span)
                if not written & live:
                    dead.add(i)
                    continue
            live = (live & ~kills[i]) | reads[i]
    return dead


def eliminate_dead_code(program: Program) -> int:
    """Remove dead instructions from `program` in place; returns how many went."""
    units = Units(program.vregs)
    removed = 0
    while True:
        ops, labels = flatten(program)
        dead = _dead_ops(ops, labels, units)
        if not dead:
            return removed
        removed += len(dead)
        index = 0
        kept: list[Item] = []
        for item in program.items:
            if isinstance(item, Label):
                kept.append(item)
                continue
            if index not in dead:
                kept.append(item)
            index += 1
        program.items = kept
