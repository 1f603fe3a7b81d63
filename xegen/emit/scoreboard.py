"""The SWSB pass: software-scoreboard annotations for a whole kernel.

    assign_swsb(instructions, hw) -> instructions

takes a kernel as a list of 16-byte instructions (no "Compacted" option; branch `jip`/`uip`
are byte offsets from the branch) whose SWSB fields are empty or ignored, and returns the
same program with every dependency ordered: `@n`/`F@n`/`I@n`/`L@n`/`M@n`/`A@n` distances for
in-order producers, SBID tokens (`$n` on the producer, `$n.dst`/`$n.src` on consumers) for
out-of-order ones (sends, dpas, and math where `hw.math_is_out_of_order`), and `sync.nop`,
`sync.allrd`/`sync.allwr` where one instruction cannot carry all its waits.  Branch offsets
are fixed up for the inserted instructions (a branch to an instruction lands on the syncs
put in front of it).  `sync.nop`/`sync.allrd`/`sync.allwr` already in the input are dropped
first: their only meaning is SWSB, which this pass recomputes.

    strip_swsb(instructions, sizes=None)   a decoded kernel (IGC's, compacted or not) in the
                                           form assign_swsb takes
    count_syncs(instructions)              the sync.nop/allrd/allwr a kernel holds

How (after IGA's SWSBSetter and nGEN's auto-SWSB, see docs/encoding.md, SWSB):

- Footprints (`footprint.py`) are byte-exact.  Read-after-write, write-after-write and
  write-after-read all count; the hardware orders what stays inside one in-order pipe
  (WAW, WAR, and RAW through the accumulator or flags only).
- The analysis is a forward dataflow over basic blocks (`flow.py`) to a fixed point, so
  dependencies cross branches and loop back edges.  The state at a point is what may still
  be in flight: in-order producers with their distance in their own pipe (the smallest over
  all paths; dropped after `hw.swsb_pipe_timeout` instructions of that pipe), and
  out-of-order producers with their token.  Nothing is flushed at block ends; a wait is
  placed where a dependency is consumed.
- Distances count in-order instructions only (not branches, nops or syncs): a count that is
  too small only waits longer, so this is safe whatever the hardware counts.  `A@n` is used
  with the smallest per-pipe distance, which is right whether `A@n` counts per pipe or over
  all pipes.  Distances above `hw.swsb_max_distance` (7) are written as 7 (waiting for a
  later instruction of an in-order pipe waits for the earlier ones).
- Tokens: an out-of-order instruction that depends on a token takes that token (setting a
  token waits for its previous owner, so the dependency costs nothing); otherwise the least
  recently used free token; otherwise the least recently used one (its previous owner is
  then waited for).  One token wait fits in an instruction; the rest go to one `sync.nop`,
  or one `sync.allwr`/`sync.allrd` naming the tokens in its mask (which also has room for a
  distance).  Combined distance+token forms are used where the encoding has them; a bare
  `@n` only where every reading of it (the source types' pipes, the instruction's own pipe)
  agrees, and never on XeHPC (`hw.swsb_bare_distance_allowed`).
- A wait on an instruction also retires, for later instructions, every dependency that it
  surely covers (a distance waits for everything of that pipe at least that far back).
- But only when the waiting instruction certainly executes whenever the producer did: a
  sync, an unpredicated NoMask instruction, or an unpredicated one covering the producer's
  channels in the same pass through a basic block (the channel mask is constant there).  An
  instruction whose channels are all off is "shot down" and waits for nothing; IGA tracks
  the same hazard.  A wait by an unpredicated instruction still serves later instructions
  inside its channels in the same pass (if they run, so did it).
- Control registers: an instruction reading or writing cr0/sr0/ce0 waits for all pipes
  (`A@1`, XeLP `@1`) and so does the instruction after it.
- `{Atomic}` runs (dpas chains) stay together: their waits go on the first instruction (or
  syncs before it), the token on the last.
- A branch whose target is unknown (through a register) waits for everything first.  An
  end-of-thread send sets no token; nothing is waited for after it.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple, TypeGuard

from .. import hw as hwlib
from ..errors import Error
from . import flow
from . import tables as T
from .footprint import ACC_AND_FLAGS, BRANCH, EMPTY, IN_ORDER, OUT_OF_ORDER, Facts, Footprint, instruction_facts
from .instruction import Imm, Instruction, Reg, Swsb
from .layout import layout_for
from .swsb import encode_table, instruction_class

SWSB_SYNCS = frozenset({"nop", "allrd", "allwr"})  # sync functions that only carry SWSB


# --- public API ------------------------------------------------------------------------------------


def assign_swsb(instructions: list[Instruction], hw: str | hwlib.Platform) -> list[Instruction]:
    """The kernel with SWSB annotations and the sync instructions it needs (see the module doc)."""
    platform = hwlib.platform(hw)
    program = _prepare(list(instructions))
    if not program:
        return []
    return _Scoreboard(program, platform).run()


def strip_swsb(instructions: Sequence[Instruction], sizes: Sequence[int] | None = None) -> list[Instruction]:
    """A kernel in the form `assign_swsb` takes: SWSB fields cleared, `sync.nop`/`sync.allrd`/
    `sync.allwr` removed, every instruction 16 bytes (no "Compacted"), branch offsets fixed.

    `sizes` are the byte sizes of the instructions as laid out now (from
    `decode_with_sizes`, where compacted ones take 8 bytes); by default 16 each."""
    count = len(instructions)
    sizes = list(sizes) if sizes is not None else [flow.INSTRUCTION_BYTES] * count
    if len(sizes) != count:
        raise Error(f"strip_swsb: {count} instructions but {len(sizes)} sizes")
    starts = [0] * (count + 1)
    for i, size in enumerate(sizes):
        starts[i + 1] = starts[i] + size
    index_at = {pc: i for i, pc in enumerate(starts)}
    uniform = []
    for i, inst in enumerate(instructions):
        changes: dict = {"swsb": Swsb(), "options": tuple(o for o in inst.options if o != "Compacted")}
        if inst.is_branch:
            for name in ("jip", "uip"):
                offset = getattr(inst, name)
                if offset is None:
                    continue
                absolute = offset if inst.opcode == "calla" else starts[i] + offset
                target = index_at.get(absolute)
                if target is None:
                    raise Error(
                        f"instruction {i} ({inst.opcode} at byte 0x{starts[i]:x}): branch target byte "
                        f"0x{absolute:x} is not an instruction"
                    )
                changes[name] = (
                    flow.INSTRUCTION_BYTES * target if inst.opcode == "calla" else flow.INSTRUCTION_BYTES * (target - i)
                )
        uniform.append(replace(inst, **changes))
    return flow.relayout(uniform, keep=lambda i, inst: not _is_swsb_sync(inst))


def count_syncs(instructions: Iterable[Instruction]) -> int:
    """How many `sync.nop`/`sync.allrd`/`sync.allwr` a kernel holds (the cost SWSB adds)."""
    return sum(1 for inst in instructions if _is_swsb_sync(inst))


def _is_swsb_sync(inst: Instruction) -> bool:
    return inst.opcode == "sync" and inst.function in SWSB_SYNCS


def _prepare(instructions: list[Instruction]) -> list[Instruction]:
    for i, inst in enumerate(instructions):
        if not isinstance(inst, Instruction):
            raise Error(f"assign_swsb: item {i} is {type(inst).__name__}, not an Instruction")
        if "Compacted" in inst.options:
            raise Error(
                f"assign_swsb: instruction {i} ({inst.opcode}) is compacted; the pass works on 16-byte "
                "instructions (strip_swsb converts a decoded kernel)"
            )
    cleared = [_with_swsb(inst, Swsb()) for inst in instructions]
    if any(_is_swsb_sync(inst) for inst in cleared):
        cleared = flow.relayout(cleared, keep=lambda i, inst: not _is_swsb_sync(inst))
    return cleared


# --- dataflow state --------------------------------------------------------------------------------


class _Origin(NamedTuple):
    """Who produced a dependency, and who waited for it in this pass through the block: for
    deciding whether a wait surely happened."""

    local: bool  # produced earlier in this pass through the current basic block
    no_mask: bool
    first_channel: int
    end_channel: int
    # Channel ranges of unpredicated instructions that waited for it earlier in this pass through
    # the block (for its result, or only for its sources to be read).  A later instruction
    # inside such a range only runs if one of its channels is on, and then so did the waiter.
    done_for: tuple = ()
    read_for: tuple = ()

    def leave_block(self) -> _Origin:
        return _Origin(False, self.no_mask, self.first_channel, self.end_channel)

    def waited_by(self, consumer: Facts, reads_only: bool = False) -> _Origin:
        spans = self.read_for if reads_only else self.done_for
        if _already_waited(consumer, spans):
            return self
        spans = spans + ((consumer.first_channel, consumer.end_channel),)
        return self._replace(read_for=spans) if reads_only else self._replace(done_for=spans)


class _Pending(NamedTuple):
    """An in-order producer whose result (or operand read) may still be in flight."""

    producer: int
    pipe: str
    order_class: str
    stamp: int  # the pipe's counter when it issued: its distance is counter - stamp
    timeout: int
    reads: Footprint
    writes: Footprint
    origin: _Origin


class _Flight(NamedTuple):
    """An out-of-order producer whose token has not been waited for."""

    producer: int
    token: int
    reads: Footprint  # EMPTY once its sources are known to be read
    writes: Footprint
    origin: _Origin


@dataclass
class _Boundary:
    """The state where a basic block starts: distances as ages (counters restart at 0)."""

    pending: dict = field(default_factory=dict)  # producer -> _Pending with stamp = -age
    flights: dict = field(default_factory=dict)  # (producer, token) -> _Flight

    def join(self, other: _Boundary) -> bool:
        """Merge `other` into this boundary; True if anything changed."""
        changed = False
        for key, entry in other.pending.items():
            mine = self.pending.get(key)
            if mine is None:
                self.pending[key] = entry
                changed = True
            elif (
                entry.stamp > mine.stamp
                or (entry.reads | mine.reads) != mine.reads
                or (entry.writes | mine.writes) != mine.writes
            ):
                self.pending[key] = mine._replace(
                    stamp=max(mine.stamp, entry.stamp),
                    reads=mine.reads | entry.reads,
                    writes=mine.writes | entry.writes,
                )
                changed = True
        for key, entry in other.flights.items():
            mine = self.flights.get(key)
            if mine is None:
                self.flights[key] = entry
                changed = True
            elif (entry.reads | mine.reads) != mine.reads or (entry.writes | mine.writes) != mine.writes:
                self.flights[key] = mine._replace(reads=mine.reads | entry.reads, writes=mine.writes | entry.writes)
                changed = True
        return changed


class _State:
    """What may be in flight at one point inside a basic block."""

    __slots__ = ("counters", "pending", "flights")

    def __init__(self, boundary: _Boundary):
        self.counters: dict[str, int] = {}
        self.pending: list[_Pending] = list(boundary.pending.values())
        self.flights: list[_Flight] = list(boundary.flights.values())

    def age(self, entry: _Pending) -> int:
        return self.counters.get(entry.pipe, 0) - entry.stamp

    def boundary(self) -> _Boundary:
        out = _Boundary()
        for e in self.pending:
            age = self.age(e)
            if age < e.timeout:
                out.pending[e.producer] = e._replace(stamp=-age, origin=e.origin.leave_block())
        for f in self.flights:
            key = (f.producer, f.token)
            f = f._replace(origin=f.origin.leave_block())
            mine = out.flights.get(key)
            out.flights[key] = (
                f if mine is None else mine._replace(reads=mine.reads | f.reads, writes=mine.writes | f.writes)
            )
        return out

    def forget_channels(self) -> None:
        """After a write of the channel enables, no earlier producer is 'local' any more."""
        self.pending = [e._replace(origin=e.origin.leave_block()) for e in self.pending]
        self.flights = [f._replace(origin=f.origin.leave_block()) for f in self.flights]


def _covers(consumer: Facts | None, origin: _Origin) -> bool:
    """Does a wait by `consumer` (None: a sync instruction) surely happen whenever the producer
    ran?  Only then is the dependency retired for the instructions after it."""
    if consumer is None:
        return True
    if consumer.predicated:
        return False
    if consumer.no_mask:
        return True
    return (
        origin.local
        and not origin.no_mask
        and consumer.first_channel <= origin.first_channel
        and consumer.end_channel >= origin.end_channel
    )


def _records_wait(consumer: Facts | None) -> TypeGuard[Facts]:
    """A wait that did not retire a dependency still serves later instructions inside the
    waiter's channels (see _Origin) when the waiter is unpredicated and obeys the channel mask."""
    return consumer is not None and not consumer.predicated and not consumer.no_mask


def _already_waited(consumer: Facts, spans: tuple) -> bool:
    if consumer.no_mask or not spans:
        return False
    return any(a <= consumer.first_channel and consumer.end_channel <= b for a, b in spans)


# --- what one instruction (or {Atomic} group) needs ------------------------------------------------


@dataclass
class _Needs:
    distance: int | None = None  # smallest distance over the in-order producers waited for
    pipes: set = field(default_factory=set)  # their pipes
    every_pipe: bool = False  # the distance must be A@n (control registers, unknown branches)
    tokens: dict = field(default_factory=dict)  # token -> "dst" | "src"

    def wait_for_everything_in_order(self) -> None:
        self.every_pipe = True
        self.distance = 1

    def add_distance(self, pipe: str, distance: int) -> None:
        self.pipes.add(pipe)
        self.distance = distance if self.distance is None else min(self.distance, distance)

    def add_token(self, token: int, mode: str) -> None:
        if self.tokens.get(token) != "dst":
            self.tokens[token] = mode


def _collect_needs(state: _State, facts: Facts, needs: _Needs) -> None:
    """Add what `facts`' instruction must wait for in `state` to `needs`.  (The hot loop of the
    pass: footprints are compared unit mask first, bytes only when units meet.)"""
    read_units, read_bytes = facts.reads
    write_units, write_bytes = facts.writes
    if not (read_units or write_units):
        return
    in_order = facts.kind in (IN_ORDER, BRANCH)
    counters = state.counters
    exempt = ~ACC_AND_FLAGS.bytes
    for e in state.pending:
        age = counters.get(e.pipe, 0) - e.stamp
        if age >= e.timeout or (e.origin.done_for and _already_waited(facts, e.origin.done_for)):
            continue
        same_order = in_order and e.order_class == facts.order_class
        e_units, e_bytes = e.writes
        if e_units & read_units and e_bytes & read_bytes:
            # within one in-order pipe the hardware orders accumulator and flag dependencies
            if not same_order or e_bytes & read_bytes & exempt:
                needs.add_distance(e.pipe, age)
                continue
        if (
            write_units
            and not same_order
            and (
                (e_units & write_units and e_bytes & write_bytes)
                or (e.reads.units & write_units and e.reads.bytes & write_bytes)
            )
        ):
            needs.add_distance(e.pipe, age)
    for f in state.flights:
        origin = f.origin
        if origin.done_for and _already_waited(facts, origin.done_for):
            continue
        f_units, f_bytes = f.writes
        if f_units and (
            (f_units & read_units and f_bytes & read_bytes) or (f_units & write_units and f_bytes & write_bytes)
        ):
            needs.add_token(f.token, "dst")
        elif (
            f.reads.units & write_units
            and f.reads.bytes & write_bytes
            and not (origin.read_for and _already_waited(facts, origin.read_for))
        ):
            needs.add_token(f.token, "src")


# --- placing the waits ---------------------------------------------------------------------------------


@dataclass
class _Plan:
    syncs: list  # sync instructions to insert before the group
    first: Swsb  # annotation of the group's first instruction
    last: Swsb  # annotation of its last one (the same instruction for a single one)
    bare_pipe: str = ""  # the pipe a bare "@n" on the first instruction stands for


def _sync(function: str, swsb: Swsb, mask: int | None = None) -> Instruction:
    source = Imm(mask, "ud") if mask is not None else Reg("null", 0, 0, "ud", 0, 1, 0)
    return Instruction("sync", function=function, srcs=(source,), swsb=swsb)


def _with_swsb(inst: Instruction, swsb: Swsb) -> Instruction:
    """`inst.with_swsb(swsb)` without re-validating the (unchanged) operands: this runs once per
    instruction of every kernel."""
    if inst.swsb == swsb:
        return inst
    copy = object.__new__(Instruction)
    for name in Instruction.__slots__:
        object.__setattr__(copy, name, swsb if name == "swsb" else getattr(inst, name))
    return copy


def _sync_mask(sync: Instruction, tokens: int) -> tuple[int, bool] | None:
    """(tokens waited for, for their results) of a sync.allrd/allwr; None for sync.nop."""
    if sync.function not in ("allrd", "allwr"):
        return None
    source = sync.srcs[0]
    mask = source.value if type(source) is Imm else (1 << tokens) - 1
    return mask, sync.function == "allwr"


# --- the pass ----------------------------------------------------------------------------------------


class _Scoreboard:
    def __init__(self, program: list[Instruction], platform: hwlib.Platform):
        self.program = program
        self.platform = platform
        self.layout = layout_for(platform)
        self.single_pipe = not platform.swsb_named_pipes
        self.tokens = platform.swsb_tokens
        self.control = flow.build_control_flow(program)
        self.facts = [instruction_facts(inst, platform) for inst in program]
        groups = flow.atomic_groups(program, self.control)
        self.groups_of_block: list[list[tuple[int, int]]] = [[] for _ in self.control.blocks]
        for first, last in groups:
            self.groups_of_block[self.control.block_of[first]].append((first, last))
        self._check_groups(groups)
        self.token_of: dict[int, int] = {}  # group's first instruction -> its token
        self.last_used = [-1] * self.tokens  # when each token was last handed out
        self.handed_out = 0
        self._encodable_cache: dict = {}
        self._plans: dict = {}

    def _check_groups(self, groups: list[tuple[int, int]]) -> None:
        for first, last in groups:
            if first == last:
                continue
            members = range(first, last + 1)
            kinds = {self.facts[i].kind for i in members}
            sends = any(self.program[i].info.format == T.SEND for i in members)
            if sends or kinds not in ({IN_ORDER}, {OUT_OF_ORDER}):
                raise Error(
                    f"instructions {first}..{last}: an {{Atomic}} run must be all dpas or all in-order "
                    f"ALU instructions, not {', '.join(sorted(kinds))}"
                )

    # -- driver --

    def run(self) -> list[Instruction]:
        before: dict[int, list[Instruction]] = {}
        annotations: dict[int, Swsb] = {}
        reached = self._solve(before, annotations)
        for block in self.control.blocks:
            if not reached[block.number]:  # unreachable code: nothing can be in flight
                self._run_block(block.number, _Boundary(), before, annotations)
        annotated = [
            _with_swsb(inst, annotations[i]) if i in annotations else inst for i, inst in enumerate(self.program)
        ]
        return flow.relayout(annotated, before)

    def _solve(self, before: dict, annotations: dict) -> list[bool]:
        """Run the blocks to the fixed point of their entry states, recording each block's
        annotations on every run: its last run saw its final entry state.  Returns which
        blocks are reachable."""
        blocks = self.control.blocks
        rank = {number: position for position, number in enumerate(self.control.order)}
        entries: list[_Boundary | None] = [None] * len(blocks)
        entries[0] = _Boundary()
        queue = [(rank[0], 0)]
        queued = {0}
        while queue:
            _, number = heapq.heappop(queue)
            queued.discard(number)
            entry = entries[number]
            assert entry is not None  # a block is queued once it has an entry state
            exit_state = self._run_block(number, entry, before, annotations)
            if exit_state is None:
                continue
            for successor in blocks[number].successors:
                successor_entry = entries[successor]
                if successor_entry is None:
                    successor_entry = entries[successor] = _Boundary()
                    successor_entry.join(exit_state)
                    changed = True
                else:
                    changed = successor_entry.join(exit_state)
                if changed and successor not in queued:
                    queued.add(successor)
                    heapq.heappush(queue, (rank[successor], successor))
        return [entry is not None for entry in entries]

    def _run_block(self, number: int, boundary: _Boundary, before: dict, annotations: dict) -> _Boundary | None:
        """Walk one block from its entry state, recording where its waits go.  Returns the exit
        state (None when the block cannot fall or branch anywhere)."""
        block = self.control.blocks[number]
        state = _State(boundary)
        for first, last in self.groups_of_block[number]:
            plan = self._step(state, first, last, unknown_exit=block.unknown_successors and last == block.end - 1)
            if plan.syncs:
                before[first] = plan.syncs
            else:
                before.pop(first, None)
            annotations[first] = plan.first
            if last != first:
                annotations[last] = plan.last
        if not block.successors:
            return None
        return state.boundary()

    # -- one group --

    def _step(self, state: _State, first: int, last: int, unknown_exit: bool) -> _Plan:
        facts = self.facts
        members = range(first, last + 1)
        needs = _Needs()
        for i in members:
            _collect_needs(state, facts[i], needs)
        arch_before = first > 0 and facts[first - 1].arch
        if arch_before or any(facts[i].arch for i in members):
            needs.wait_for_everything_in_order()
        if unknown_exit:  # nobody knows what runs next: leave nothing in flight
            for f in state.flights:
                needs.add_token(f.token, "dst")
            if state.pending:
                needs.wait_for_everything_in_order()
        producer = facts[last]
        set_token = None
        if producer.kind == OUT_OF_ORDER and not producer.eot:
            set_token = self._choose_token(state, first, needs)
            needs.tokens.pop(set_token, None)  # setting the token waits for its previous owner
        plan = self._plan(first, last, needs, set_token, arch_first=arch_before, force_syncs=unknown_exit)
        self._apply(state, plan, first, last, set_token)
        return plan

    def _apply(self, state: _State, plan: _Plan, first: int, last: int, set_token: int | None) -> None:
        for sync in plan.syncs:
            self._retire(state, sync.swsb, None, "", _sync_mask(sync, self.tokens))
        self._retire(state, plan.first, self.facts[first], plan.bare_pipe)
        facts = self.facts
        for i in range(first, last + 1):
            f = facts[i]
            origin = _Origin(True, f.no_mask, f.first_channel, f.end_channel)
            if f.kind == IN_ORDER:
                counter = state.counters.get(f.pipe, 0)
                if f.reads or f.writes:
                    state.pending.append(
                        _Pending(i, f.pipe, f.order_class, counter, f.timeout, f.reads, f.writes, origin)
                    )
                state.counters[f.pipe] = counter + 1
                state.pending = [e for e in state.pending if e.pipe != f.pipe or state.age(e) < e.timeout]
            if f.writes_channel_enables:
                state.forget_channels()
        if set_token is not None:
            producer = facts[last]
            reads = writes = EMPTY
            for i in range(first, last + 1):
                reads, writes = reads | facts[i].reads, writes | facts[i].writes
            origin = _Origin(True, producer.no_mask, producer.first_channel, producer.end_channel)
            state.flights = [fl for fl in state.flights if fl.token != set_token or not _covers(producer, fl.origin)]
            state.flights.append(_Flight(last, set_token, reads, writes, origin))

    def _retire(
        self,
        state: _State,
        swsb: Swsb,
        consumer: Facts | None,
        bare_pipe: str,
        sync_all: tuple[int, bool] | None = None,
    ) -> None:
        """Drop the dependencies that the waits `swsb` (and a sync.allrd/allwr's (token mask,
        is allwr)) of an instruction surely satisfy; consumer None is a sync instruction."""
        if swsb.distance:
            d = swsb.distance
            if swsb.pipe == "A" or self.single_pipe:
                pipes = None
            else:
                pipes = swsb.pipe or bare_pipe
            kept = []
            for e in state.pending:
                if (pipes is None or e.pipe == pipes) and state.age(e) >= d:
                    if _covers(consumer, e.origin):
                        continue
                    if _records_wait(consumer):
                        e = e._replace(origin=e.origin.waited_by(consumer))
                kept.append(e)
            state.pending = kept
        if swsb.token is not None and swsb.token_mode in ("dst", "src"):
            self._retire_tokens(state, 1 << swsb.token, swsb.token_mode == "dst", consumer)
        if sync_all is not None:
            self._retire_tokens(state, sync_all[0], sync_all[1], None)

    def _retire_tokens(self, state: _State, mask: int, dst: bool, consumer: Facts | None) -> None:
        kept = []
        for f in state.flights:
            if mask >> f.token & 1:
                if _covers(consumer, f.origin):
                    if dst or not f.writes:
                        continue
                    f = f._replace(reads=EMPTY)
                elif _records_wait(consumer):
                    f = f._replace(origin=f.origin.waited_by(consumer, reads_only=not dst))
            kept.append(f)
        state.flights = kept

    # -- tokens --

    def _choose_token(self, state: _State, first: int, needs: _Needs) -> int:
        token = self.token_of.get(first)
        if token is not None:
            return token
        if needs.tokens:  # take a token it waits for anyway: the set waits for its owner
            token = min(needs.tokens, key=lambda t: (needs.tokens[t] != "dst", t))
        else:
            live = {f.token for f in state.flights}
            free = [t for t in range(self.tokens) if t not in live]
            if free:
                token = min(free, key=lambda t: (self.last_used[t], t))
            else:  # all busy: the one least recently handed out, preferring ones only reading
                writing = {f.token for f in state.flights if f.writes}
                token = min(range(self.tokens), key=lambda t: (t in writing, self.last_used[t], t))
        self.token_of[first] = token
        self.last_used[token] = self.handed_out
        self.handed_out += 1
        return token

    # -- encoding the waits --

    def _encodable(self, swsb: Swsb, inst: Instruction) -> bool:
        cls = instruction_class(inst.info, self.layout)
        key = (swsb, cls)
        known = self._encodable_cache.get(key)
        if known is None:
            known = self._encodable_cache[key] = swsb.empty or swsb in encode_table(self.layout, cls)
        return known

    def _distance_forms(self, needs: _Needs, facts: Facts | None) -> list[tuple[str, str]]:
        """(pipe written, pipe a bare form stands for) ways to write the needed distance on an
        instruction with `facts` (None: a sync)."""
        if needs.distance is None:
            return []
        if self.single_pipe:
            return [("", "")]
        forms = []
        if len(needs.pipes) == 1 and not needs.every_pipe:
            pipe = next(iter(needs.pipes))
            forms.append((pipe, pipe))
            if self.platform.swsb_bare_distance_allowed and facts is not None and self._bare_means(facts, pipe):
                forms.append(("", pipe))
        forms.append(("A", ""))
        return forms

    @staticmethod
    def _bare_means(facts: Facts, pipe: str) -> bool:
        """May a bare `@n` on this instruction stand for pipe `pipe`?  IGA and the simulator read
        it as the pipes of the source types, nGEN as the instruction's own pipe: use it only where
        every reading agrees (for math and dpas, which have no in-order pipe, IGC writes it too)."""
        if facts.source_pipes != {pipe}:
            return False
        return facts.kind == OUT_OF_ORDER or (facts.kind == IN_ORDER and facts.pipe == pipe)

    def _plan(
        self, first: int, last: int, needs: _Needs, set_token: int | None, arch_first: bool, force_syncs: bool
    ) -> _Plan:
        """Where each wait goes: on the group's first instruction or on syncs before it.  Plans
        depend only on the waits and the instruction's class, so they are cached."""
        inst, facts = self.program[first], self.facts[first]
        key = (
            instruction_class(inst.info, self.layout),
            facts.kind,
            facts.pipe,
            facts.source_pipes,
            needs.distance,
            frozenset(needs.pipes),
            needs.every_pipe,
            tuple(sorted(needs.tokens.items())),
            set_token,
            first == last,
            arch_first,
            force_syncs,
        )
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._make_plan(first, last, needs, set_token, arch_first, force_syncs)
        return plan

    def _make_plan(
        self, first: int, last: int, needs: _Needs, set_token: int | None, arch_first: bool, force_syncs: bool
    ) -> _Plan:
        inst = self.program[first]
        facts = self.facts[first]
        distance = None if needs.distance is None else min(needs.distance, self.platform.swsb_max_distance)
        tokens = sorted(needs.tokens.items(), key=lambda item: (item[1] != "dst", item[0]))
        set_here = set_token is not None and first == last
        set_swsb = Swsb(token=set_token) if set_token is not None else Swsb()

        # What the first instruction could carry: (distance form or None, token wait or None).
        carry_options: list[tuple[tuple[str, str] | None, tuple[int, str] | None]] = [(None, None)]
        if not force_syncs:
            forms = self._distance_forms(needs, facts)
            # an instruction setting a token has no room for a token wait; nor, as IGA does it, does the
            # first dpas of an {Atomic} chain (the chain's token is set on its last one)
            chained = first != last and facts.kind == OUT_OF_ORDER
            waits = (
                []
                if set_here or chained
                else ([(t, m) for t, m in tokens] + [(t, "dst") for t, m in tokens if m == "src"])
            )
            carry_options = [(form, wait) for wait in waits for form in forms]
            carry_options += [(None, wait) for wait in waits]
            carry_options += [(form, None) for form in forms]
            carry_options.append((None, None))
        best, best_cost = None, None
        for form, wait in carry_options:
            swsb = Swsb(token=set_token) if set_here else Swsb()
            if form is not None:
                swsb = replace(swsb, distance=distance, pipe=form[0])
            if wait is not None:
                swsb = replace(swsb, token=wait[0], token_mode=wait[1])
            if not self._encodable(swsb, inst):
                continue
            left_tokens = [(t, m) for t, m in tokens if wait is None or t != wait[0]]
            syncs = self._syncs(left_tokens, None if form is not None else distance, needs)
            if arch_first and form is not None and syncs:
                continue  # the instruction right after a control-register access must carry A@1
            # waiting for a send's result where only its sources were needed costs the send's
            # whole latency, a sync instruction one issue slot: fewer such waits first
            cost = (wait is not None and wait[1] != dict(tokens)[wait[0]], len(syncs))
            if best_cost is None or cost < best_cost:
                best, best_cost = _Plan(syncs, swsb, swsb if first == last else set_swsb, form[1] if form else ""), cost
        assert best is not None  # the last option, every wait on syncs, always fits
        return best

    def _syncs(self, tokens: list[tuple[int, str]], distance: int | None, needs: _Needs) -> list[Instruction]:
        """The fewest sync instructions carrying the given token waits and distance, the one
        carrying the distance first."""
        forms = self._distance_forms(needs, None) if distance is not None else []
        dist_swsb = Swsb(distance, forms[0][0]) if forms else Swsb()
        if not tokens:
            return [_sync("nop", dist_swsb)] if forms else []
        if len(tokens) == 1:
            token, mode = tokens[0]
            for form in forms or [("", "")]:  # one sync.nop with the token wait (and the distance if it fits)
                for m in (mode, "dst") if mode == "src" else (mode,):
                    swsb = Swsb(distance, form[0], token, m) if forms else Swsb(token=token, token_mode=m)
                    if self._encodable(swsb, _SYNC_NOP):
                        return [_sync("nop", swsb)]
        # sync.allwr/allrd name their tokens in a mask, which leaves the field for the distance;
        # the tokens whose sources alone are needed go on an allrd of their own
        results = sum(1 << t for t, m in tokens if m == "dst")
        sources = sum(1 << t for t, m in tokens if m == "src")
        if not results:
            return [_sync("allrd", dist_swsb, sources)]
        return [_sync("allwr", dist_swsb, results)] + ([_sync("allrd", Swsb(), sources)] if sources else [])


_SYNC_NOP = _sync("nop", Swsb())
