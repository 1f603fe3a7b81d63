"""Control flow of a kernel held as a list of 16-byte instructions: basic blocks, their
successors, and re-laying the list out after instructions are inserted or removed.

Branch targets (`jip`/`uip`) are byte offsets relative to the branch (`calla`: absolute),
so instruction `i` sits at byte `16 * i`.  A target may also be the end of the kernel.

Successors are a safe over-approximation of where execution may go next: SIMD branches
(if/else/endif, while/break/cont, goto/join, halt) may fall through or go to any of their
targets, depending on which channels are enabled; a `jmpi` without predicate only jumps;
an unpredicated end-of-thread send ends the thread; `call` goes to its target and, through
the matching `ret`, to the next instruction; `ret` returns after any call.  A branch
through a register (`jmpi r10`, `call r10`, `ret` without any call, `brd`/`brc` with a
register) has targets nobody can know: `Block.unknown_successors` is set and its dataflow
must not rely on any edge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..errors import Error
from .instruction import Instruction

INSTRUCTION_BYTES = 16


@dataclass
class Block:
    """Instructions [start, end) of a kernel; successors and predecessors are block numbers."""

    number: int
    start: int
    end: int
    successors: list[int] = field(default_factory=list)
    predecessors: list[int] = field(default_factory=list)
    unknown_successors: bool = False


@dataclass
class ControlFlow:
    blocks: list[Block]
    block_of: list[int]  # instruction index -> block number
    order: list[int]  # blocks in reverse postorder from the entry (unreachable blocks last)


def is_terminating(inst: Instruction) -> bool:
    """An unpredicated end-of-thread send: nothing runs after it."""
    return inst.eot and inst.predicate is None


def branch_targets(inst: Instruction, index: int, count: int) -> list[int]:
    """Instruction indices (count = the end of the kernel) a branch at `index` names."""
    targets = []
    for offset in (inst.jip, inst.uip):
        if offset is None:
            continue
        absolute = offset if inst.opcode == "calla" else INSTRUCTION_BYTES * index + offset
        if absolute % INSTRUCTION_BYTES or not 0 <= absolute <= INSTRUCTION_BYTES * count:
            raise Error(
                f"instruction {index} ({inst.opcode} at byte 0x{INSTRUCTION_BYTES * index:x}): "
                f"branch target byte 0x{absolute:x} is not an instruction of this "
                f"{count}-instruction kernel"
            )
        targets.append(absolute // INSTRUCTION_BYTES)
    if inst.opcode == "break" and inst.uip is not None:
        targets.append(min(targets[-1] + 1, count))  # a break may leave past the while its UIP names
    return targets


def _successors(inst: Instruction, index: int, count: int, return_sites: list[int]) -> tuple[list[int], bool]:
    """(successor instruction indices, unknown) of the instruction at `index`."""
    if not inst.is_branch:
        return ([] if is_terminating(inst) else [index + 1]), False
    op = inst.opcode
    registered = bool(inst.srcs) and op != "ret"  # jmpi/call/brd/brc through a register
    if registered or (op == "ret" and not return_sites):
        return [], True
    if op == "ret":
        return list(return_sites), False
    targets = branch_targets(inst, index, count)
    if op == "jmpi" and inst.predicate is None:
        return targets, False
    return [index + 1, *targets], False


def build_control_flow(instructions: Sequence[Instruction]) -> ControlFlow:
    count = len(instructions)
    return_sites = sorted({i + 1 for i, inst in enumerate(instructions) if inst.opcode in ("call", "calla")})
    leaders = {0} if count else set()
    successors_of: dict[int, tuple[list[int], bool]] = {}
    for index, inst in enumerate(instructions):
        if inst.is_branch or is_terminating(inst):
            found = _successors(inst, index, count, return_sites)
            successors_of[index] = found
            leaders.add(index + 1)
            leaders.update(found[0])
            if inst.opcode in ("call", "calla"):
                leaders.update(return_sites)
    starts = sorted(i for i in leaders if i < count)
    blocks: list[Block] = []
    block_of = [0] * count
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else count
        blocks.append(Block(number, start, end))
        for i in range(start, end):
            block_of[i] = number
    for block in blocks:
        last = block.end - 1
        targets, unknown = successors_of.get(last, ([last + 1], False))
        block.unknown_successors = unknown
        for target in sorted(set(targets)):
            if target < count and block_of[target] not in block.successors:
                block.successors.append(block_of[target])
    for block in blocks:
        for successor in block.successors:
            blocks[successor].predecessors.append(block.number)
    return ControlFlow(blocks, block_of, _reverse_postorder(blocks))


def _reverse_postorder(blocks: list[Block]) -> list[int]:
    if not blocks:
        return []
    seen = [False] * len(blocks)
    postorder: list[int] = []
    stack: list[tuple[int, int]] = [(0, 0)]
    seen[0] = True
    while stack:  # iterative depth-first search: kernels may have thousands of blocks
        number, child = stack[-1]
        successors = blocks[number].successors
        if child < len(successors):
            stack[-1] = (number, child + 1)
            nxt = successors[child]
            if not seen[nxt]:
                seen[nxt] = True
                stack.append((nxt, 0))
        else:
            stack.pop()
            postorder.append(number)
    order = postorder[::-1]
    order += [b.number for b in blocks if not seen[b.number]]  # unreachable code, in program order
    return order


def relayout(
    instructions: Sequence[Instruction],
    before: Mapping[int, Sequence[Instruction]] | None = None,
    keep: Callable[[int, Instruction], bool] | None = None,
) -> list[Instruction]:
    """The kernel with `before[i]` inserted in front of instruction `i` and the instructions
    for which `keep(i, inst)` is false removed, every branch offset fixed up.

    A branch to instruction `i` lands on the first instruction inserted before `i` (so the
    inserted instructions run on every path into `i`); a branch to a removed instruction
    lands where the instruction after it lands."""
    before = before or {}
    count = len(instructions)
    landing = [0] * (count + 1)  # new index a branch to old index i lands on
    new_index = [0] * count  # new index of kept instruction i
    position = 0
    kept: list[bool] = []
    for i, inst in enumerate(instructions):
        landing[i] = position
        position += len(before.get(i, ()))
        alive = keep is None or keep(i, inst)
        kept.append(alive)
        new_index[i] = position
        if alive:
            position += 1
    landing[count] = position
    out: list[Instruction] = []
    for i, inst in enumerate(instructions):
        out.extend(before.get(i, ()))
        if not kept[i]:
            continue
        if inst.is_branch and (inst.jip is not None or inst.uip is not None):
            inst = _retarget(inst, i, count, new_index[i], landing)
        out.append(inst)
    return out


def _retarget(inst: Instruction, index: int, count: int, new_index: int, landing: list[int]) -> Instruction:
    def moved(offset: int | None) -> int | None:
        if offset is None:
            return None
        absolute = offset if inst.opcode == "calla" else INSTRUCTION_BYTES * index + offset
        if absolute % INSTRUCTION_BYTES or not 0 <= absolute <= INSTRUCTION_BYTES * count:
            raise Error(
                f"instruction {index} ({inst.opcode}): branch target byte 0x{absolute:x} is not an "
                f"instruction of this {count}-instruction kernel"
            )
        target = landing[absolute // INSTRUCTION_BYTES]
        return INSTRUCTION_BYTES * target if inst.opcode == "calla" else INSTRUCTION_BYTES * (target - new_index)

    return replace(inst, jip=moved(inst.jip), uip=moved(inst.uip))


def atomic_groups(instructions: Sequence[Instruction], control: ControlFlow) -> list[tuple[int, int]]:
    """[first, last] index pairs of instruction runs tied together by {Atomic} (each member but
    the last has the option); single instructions are groups of one.  A run may not cross a
    basic-block boundary."""
    groups: list[tuple[int, int]] = []
    count = len(instructions)
    i = 0
    while i < count:
        first = i
        while "Atomic" in instructions[i].options:
            if i + 1 >= count or control.block_of[i + 1] != control.block_of[first] or instructions[i].is_branch:
                raise Error(
                    f"instruction {i} ({instructions[i].opcode} at byte 0x{INSTRUCTION_BYTES * i:x}) has "
                    "{Atomic} but no instruction of its basic block follows it"
                )
            i += 1
        groups.append((first, i))
        i += 1
    return groups
