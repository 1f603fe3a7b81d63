"""SWSB hazard checking: does the kernel's software scoreboard order every dependency?

The model (after IGA's SWSB analysis, kept deliberately simple; see docs/sim.md):

- Out-of-order instructions (sends, dpas, and math on XeLP/XeHPG) set an SBID token.  Their
  results never become visible on their own: a later reader of their destination must wait
  on the token (`$n.dst`, `sync.nop {$n.dst}`, `sync.allwr`), a later writer of their
  destination too, and a later writer of one of their payload registers must wait at least
  for the sources to be read (`$n.src`, `sync.allrd`); the predicate and a0 are read at
  issue.  Setting a token again waits for its previous owner.  One out-of-order pipe reads
  sources in issue order: a later send may overwrite an earlier send's payload, a later dpas an
  earlier dpas's sources, and once the later result has landed those bytes are free.
- In-order instructions go down pipes (XeLP: one; XeHPG: F, I, L; XeHPC: F, I, L, M) chosen
  by their types (`xegen.emit.pipes`).  A result is visible once enough later instructions have issued
  (`hw.swsb_latency`: 11, 15 for the long pipe, 18 for in-order math, as IGC assumes), after
  a taken branch (which drains the in-order pipes), or once a later instruction waited on it
  with a distance: `P@d` waits for every pipe-P instruction at least d back in that pipe,
  `A@d` for every in-order instruction at least d back, a bare `@d` for the pipes of the
  instruction's source types (XeLP: its one pipe).  Reading a result that is not yet visible
  is a hazard; so is overwriting it from another pipe.  The hardware orders a flag read
  whatever pipe wrote the flag, and accumulator and a0 reads within one pipe: those need no
  annotation (IGC's code relies on both).  An ALU instruction that writes nothing may read an
  in-order result early: the value goes nowhere (nGEN's XeHPC `mov null` workaround reads).
- After an instruction that reads or writes cr0, sr0 or ce0 the next instruction must wait
  on all pipes (`A@1`, `@1` on XeLP).

Threads are checked per *class*: threads that executed the same instruction sequence share
one state; a class splits when only some of its threads execute an instruction (different
uniform branches) and classes with equal states merge again.  Register footprints are byte
sets (Python ints) over GRF, a0, accumulators, flags and the control registers.  Indirect
operands (r[a0.n]) touch the GRF bytes their a0 words address when the instruction runs
(`BatchChecker` reads a0 of the executing threads), plus those a0 words.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .. import hw as hwlib
from ..emit import pipes
from ..emit import tables as T
from ..emit.instruction import Imm, Instruction, Reg, Swsb
from ..emit.regions import three_source_region
from .errors import SimulationError
from .operands import indirect_addresses, region_elements, registers
from .program import Program, Undecodable

ARCH_FILES = ("cr", "sr", "ce")


@dataclass(frozen=True)
class Hazard:
    kind: str  # RAW, WAW, WAR, arch
    pc: int
    instruction: str
    producer_pc: int | None
    producer: str
    register: str
    detail: str
    threads: int = 0

    def __str__(self) -> str:
        where = f"pc 0x{self.pc:04x} `{self.instruction}`"
        if self.producer_pc is None:
            return f"{where}: {self.detail}"
        return (
            f"{where}: {self.kind} on {self.register}: {self.detail} "
            f"(producer at pc 0x{self.producer_pc:04x} `{self.producer}`)"
        )


# --- register byte map ------------------------------------------------------------------------


class ByteMap:
    """Where each register lives in the footprint bit space."""

    def __init__(self, platform: hwlib.Platform, grf_count: int = 256):
        self.grf_bytes = platform.grf_bytes
        self.grf_end = grf_count * self.grf_bytes
        self.a0 = self.grf_end
        self.acc = self.a0 + 32
        self.flag = self.acc + 16 * self.grf_bytes
        self.special = self.flag + 16
        self.end = self.special + 64
        self.acc_mask = ((1 << (16 * self.grf_bytes)) - 1) << self.acc
        self.flag_mask = ((1 << 16) - 1) << self.flag
        self.special_offsets = {"cr": 0, "sr": 16, "ce": 48, "n": 52, "tm": 56, "ip": 60}

    def base(self, file: str, number: int) -> int | None:
        if file == "r":
            return number * self.grf_bytes
        if file == "a":
            return self.a0
        if file == "acc":
            return self.acc + number * self.grf_bytes
        if file == "mme":
            return self.acc + (8 + number) * self.grf_bytes
        if file == "f":
            return self.flag + 4 * number
        if file in self.special_offsets:
            return self.special + self.special_offsets[file]
        return None

    def describe(self, mask: int) -> str:
        low = (mask & -mask).bit_length() - 1
        if low < self.grf_end:
            return f"r{low // self.grf_bytes}"
        if low < self.acc:
            return "a0"
        if low < self.flag:
            return f"acc{(low - self.acc) // self.grf_bytes}"
        if low < self.special:
            byte = low - self.flag
            return f"f{byte // 4}.{(byte % 4) // 2}"
        for name, offset in self.special_offsets.items():
            if low - self.special < offset + 4:
                return f"{name}0"
        return "special register"


def _span(start: int, size: int) -> int:
    return ((1 << size) - 1) << start


# --- per-instruction facts ---------------------------------------------------------------------


@dataclass
class Facts:
    index: int
    pc: int
    text: str
    reads: int
    writes: int
    out_of_order: bool
    other: bool  # sync and illegal: no pipe
    pipe: str  # counting pipe ("" on XeLP)
    dep_pipe: str  # XeLP: short/long/control; else the pipe
    arch: bool  # touches cr/sr/ce
    swsb: Swsb
    source_pipes: frozenset = frozenset()
    sync: str | None = None
    sync_tokens: int | None = None  # bit mask of tokens named by sync.allrd/allwr, None = all
    latency: int = 11  # instructions until an in-order result has landed
    is_send: bool = False
    is_systolic: bool = False  # dpas, dpasw
    # an ALU instruction that writes nothing (null destination, no flag or accumulator): what it
    # reads of an in-order result goes nowhere, so that read is no hazard (nGEN's XeHPC workaround
    # `mov null`s); its reads of a token's result still count: that is how a thread waits for a
    # message, e.g. IGC's `mov null r40 {$2.dst}` after a fence
    discards_reads: bool = False
    # (is_write, a0 words -> GRF byte addresses, element size) of each indirect operand: the bytes
    # it touches are known only when it runs
    indirect: tuple = ()


class FootprintBuilder:
    def __init__(self, platform: hwlib.Platform, program: Program):
        self.platform = platform
        self.program = program
        self.map = ByteMap(platform)
        self.xelp = not platform.swsb_named_pipes

    def pipe_and_class(self, inst: Instruction) -> tuple[str, str]:
        """(pipe, order class) of an in-order instruction or a branch (xegen.emit.pipes).  Branches
        count in the I pipe here; the SWSB pass counts them in none, which only waits longer."""
        if inst.is_branch:
            return pipes.branch_pipe(self.platform), pipes.order_class(inst, self.platform)
        return pipes.in_order_pipe(inst, self.platform), pipes.order_class(inst, self.platform)

    # footprints
    def region_mask(self, reg: Reg, exec_size: int, offsets: np.ndarray) -> int:
        if reg.file == "null":
            return 0
        if reg.indirect:  # the GRF bytes are known when it runs (`indirect_operands`)
            rows = exec_size // (reg.width or 1) if reg.vstride is None else 1
            return _span(self.map.a0 + 2 * reg.addr_subreg, 2 * rows)
        base = self.map.base(reg.file, reg.number)
        if base is None:
            return 0
        size = T.type_bytes(reg.type) if reg.type in T.TYPES else 4
        start = base + reg.subreg * size
        mask = 0
        for element in set(int(o) for o in offsets):
            mask |= _span(start + element * size, size)
        return mask

    def source_mask(self, inst: Instruction, index: int, src) -> int:
        if isinstance(src, Imm) or src.file == "null":
            return 0
        size = inst.exec_size
        fmt = T.OPCODES[inst.opcode].format
        if fmt == T.TERNARY:
            v, w, h = three_source_region(src, index)
        elif fmt in T.BRANCH_FORMATS:
            v, w, h = 0, 1, 0
        else:
            v, w, h = src.vstride, src.width or 1, src.hstride or 0
            if v is None:
                v = 0
        return self.region_mask(src, size, region_elements(size, v, w, h))

    def dst_mask(self, inst: Instruction) -> int:
        dst = inst.dst
        if dst is None or dst.file == "null":
            return 0
        h = dst.hstride or 1
        return self.region_mask(dst, inst.exec_size, np.arange(inst.exec_size) * h)

    def flag_bytes(self, flag, inst: Instruction, mode: str = "") -> int:
        """The flag bytes of the instruction's channels (.anyNh/.allNh: of whole N-channel groups)."""
        group = int(mode[3:-1]) if mode[:3] in ("any", "all") and mode[-1:] == "h" else 1
        first = (inst.channel_offset // group) * group
        last = -(-(inst.channel_offset + inst.exec_size) // group) * group
        start = self.map.flag + flag.reg * 4 + flag.subreg * 2 + first // 8
        return _span(start, max(1, -(-(last - first) // 8)))

    def grf_rows(self, start: int, count: int) -> int:
        b = self.map.grf_bytes
        return _span(start * b, count * b) if count > 0 else 0

    def facts(self, index: int) -> Facts | None:
        inst = self.program.instructions[index]
        pc = self.program.pcs[index]
        if isinstance(inst, Undecodable):
            return None
        info = T.OPCODES[inst.opcode]
        reads = writes = 0
        fmt = info.format
        sync = inst.function if inst.opcode == "sync" and isinstance(inst.function, str) else None
        sync_tokens = None
        if sync is not None and inst.srcs and isinstance(inst.srcs[0], Imm):
            sync_tokens = inst.srcs[0].value
        if inst.send is not None:
            msg = inst.send
            if msg.desc_in_a0 or msg.exdesc_a0 is not None:
                reads |= _span(self.map.a0, 32)
            mlen = msg.message_length if msg.message_length is not None else 31
            src1_len = msg.src1_length if msg.src1_length is not None else (msg.exdesc >> 6) & 0x1F
            dst, src0, src1 = registers(inst, 2)
            if src0.file == "r":
                reads |= self.grf_rows(src0.number, mlen)
            if src1.file == "r":
                reads |= self.grf_rows(src1.number, src1_len)
            if dst.file == "r":
                rlen = msg.response_length if msg.response_length is not None else 31
                writes |= self.grf_rows(dst.number, rlen)
        elif fmt == T.DPAS:
            reads, writes = self.dpas_masks(inst)
        elif fmt not in (T.SYNC, T.NULLARY):
            for i, src in enumerate(inst.srcs):
                reads |= self.source_mask(inst, i, src)
            writes |= self.dst_mask(inst)
            if inst.opcode in ("mac", "mach"):
                reads |= _span(self.map.acc, 4 * inst.exec_size)
            if inst.opcode in ("addc", "subb") or (inst.opcode == "mach" and "AccWrEn" in inst.options):
                writes |= _span(self.map.acc, 4 * inst.exec_size)
        if inst.predicate is not None:
            reads |= self.flag_bytes(inst.predicate.flag, inst, inst.predicate.mode)
        if inst.cond_modifier is not None and fmt not in (T.MATH,):
            if inst.opcode == "sel":
                reads |= self.flag_bytes(inst.cond_modifier.flag, inst)
            elif inst.opcode != "csel":
                writes |= self.flag_bytes(inst.cond_modifier.flag, inst)
        arch_files = [
            r.file for r in ([inst.dst] if inst.dst is not None else []) + [s for s in inst.srcs if isinstance(s, Reg)]
        ]
        arch = any(f in ARCH_FILES for f in arch_files)
        ooo = T.is_out_of_order(info, self.platform)
        other = inst.opcode in ("sync", "illegal")
        pipe, dep_pipe = ("", "") if (ooo or other) else self.pipe_and_class(inst)
        source_pipes = frozenset(pipes.type_pipe(t, self.platform) for t in pipes.typed_operands(inst))
        latencies = dict(self.platform.swsb_latency)
        # IGC times results out per pipe: the long pipe (XeLP: a 64-bit destination) after 15
        # instructions, math after 18, the rest after 11 (XeHPC's 64-bit integers use the I pipe)
        if fmt == T.MATH:
            latency = latencies["math"]
        elif pipe == "L" or (
            self.xelp and inst.dst is not None and inst.dst.type in T.TYPES and T.type_bytes(inst.dst.type) == 8
        ):
            latency = latencies["alu64"]
        else:
            latency = latencies["alu"]
        discards_reads = writes == 0 and not (ooo or other or inst.is_branch)
        return Facts(
            index,
            pc,
            self.program.text(index),
            reads,
            writes,
            ooo,
            other,
            pipe,
            dep_pipe,
            arch,
            inst.swsb,
            source_pipes,
            sync,
            sync_tokens,
            latency,
            inst.send is not None,
            fmt == T.DPAS,
            discards_reads,
            self.indirect_operands(inst),
        )

    def indirect_operands(self, inst: Instruction) -> tuple:
        """(is_write, a0 words -> GRF byte addresses, element size) of each indirect operand."""
        if inst.send is not None or T.OPCODES[inst.opcode].format in (T.DPAS, T.SYNC, T.NULLARY):
            return ()
        n = inst.exec_size
        operands = [
            (False, src, (src.vstride, src.width or 1, src.hstride or 0))
            for src in inst.srcs
            if isinstance(src, Reg) and src.indirect
        ]
        if inst.dst is not None and inst.dst.indirect:
            h = inst.dst.hstride or 1
            operands.append((True, inst.dst, (n * h, n, h)))
        found = []
        for is_write, reg, region in operands:
            size = T.type_bytes(reg.type)
            try:
                found.append((is_write, indirect_addresses(reg, n, size, region), size))
            except SimulationError:
                continue  # the instruction itself raises this when it runs
        return tuple(found)

    def addressed_bytes(self, addresses: np.ndarray, size: int) -> int:
        """The footprint of `size`-byte GRF elements at byte `addresses`."""
        covered = np.zeros(self.map.grf_end, dtype=bool)
        starts = np.unique(addresses)
        starts = starts[(starts >= 0) & (starts + size <= self.map.grf_end)]
        for byte in range(size):
            covered[starts + byte] = True
        return int.from_bytes(np.packbits(covered, bitorder="little").tobytes(), "little")

    def dpas_masks(self, inst: Instruction) -> tuple[int, int]:
        b = self.map.grf_bytes
        n, rows, depth = inst.exec_size, inst.repeat_count, inst.systolic_depth
        dst, src0, src1, src2 = registers(inst, 3)

        def size_of(t: str) -> float:
            return T.TYPES[t].bits / 8

        def rows_mask(reg: Reg, nbytes: float) -> int:
            if reg.file == "null":
                return 0
            start = reg.number * b + (reg.subreg * int(size_of(reg.type)) if size_of(reg.type) >= 1 else 0)
            first, last = start // b, (start + int(nbytes) - 1) // b
            return self.grf_rows(first, last - first + 1)

        reads = rows_mask(src0, n * size_of(src0.type) * rows) if src0.file != "null" else 0
        reads |= rows_mask(src1, n * 4 * depth)
        own_rows = -(-rows // 2) if inst.opcode == "dpasw" else rows  # dpasw: at most half of A is ours
        reads |= rows_mask(src2, (own_rows - 1) * 32 + depth * 4)
        return reads, rows_mask(dst, n * size_of(dst.type) * rows)


# --- per-class state -------------------------------------------------------------------------------


@dataclass
class Writer:
    pipe: str
    dep_pipe: str
    pipe_id: int
    all_id: int
    issued: int  # instructions issued before it
    visible_after: int  # instructions after which the result has landed
    mask: int
    facts: Facts


@dataclass(frozen=True)
class Token:
    """An out-of-order instruction in flight: the bytes it will write and the payload bytes it
    has yet to read (never its predicate or a0: those are read at issue)."""

    dst: int
    src: int
    facts: Facts


@dataclass
class State:
    counts: dict = field(default_factory=dict)
    all_count: int = 0
    writers: list = field(default_factory=list)
    tokens: dict = field(default_factory=dict)
    arch_pending: Facts | None = None
    issued: int = 0  # instructions issued (sync excluded)
    last_index: int | None = None

    def copy(self) -> State:
        return State(
            dict(self.counts),
            self.all_count,
            list(self.writers),
            dict(self.tokens),
            self.arch_pending,
            self.issued,
            self.last_index,
        )

    def key(self) -> tuple:
        writers = tuple(
            sorted(
                (
                    w.pipe,
                    w.dep_pipe,
                    self.counts.get(w.pipe, 0) - w.pipe_id,
                    self.all_count - w.all_id,
                    self.issued - w.issued,
                    w.mask,
                    w.facts.index,
                )
                for w in self.writers
            )
        )
        tokens = tuple(sorted((n, t.dst, t.src, t.facts.index) for n, t in self.tokens.items()))
        return writers, tokens, None if self.arch_pending is None else self.arch_pending.index, self.last_index


class HazardChecker:
    """Checks one kernel's runs; `start_batch` gives the per-batch stepper."""

    def __init__(self, program: Program, platform: hwlib.Platform):
        self.program = program
        self.platform = platform
        self.builder = FootprintBuilder(platform, program)
        self.facts: list[Facts | None] = [self.builder.facts(i) for i in range(program.end)]
        self.pipes = tuple(p for p in platform.swsb_pipes if p) or ("",)
        flags, a0 = self.builder.map.flag_mask, _span(self.builder.map.a0, 32)
        # Reads the hardware orders without a wait (IGC relies on both): of a flag, whatever wrote it
        # (IGC reads a flag the F pipe wrote in the next I-pipe instruction, and predicates sends on
        # a flag written two instructions earlier); of the accumulators or a0, within one pipe.
        self.ordered_in_any_pipe = flags
        self.ordered_in_one_pipe = self.builder.map.acc_mask | a0
        # a send's descriptors in a0, whatever pipe wrote them (IGC's scratch messages read the
        # a0.2 a mov wrote one instruction earlier)
        self.a0_bytes = a0
        # read when an instruction issues, never pending under a token: predicates and a0
        self.issue_bytes = flags | a0
        self.xelp = self.builder.xelp
        self.hazards: list[Hazard] = []
        self._seen: set = set()

    def start_batch(self, threads: int) -> BatchChecker:
        return BatchChecker(self, threads)

    # --- one instruction on one class state -------------------------------------------------------

    def report(self, kind: str, facts: Facts, producer: Facts | None, mask: int, detail: str, threads: int) -> None:
        key = (kind, facts.index, producer.index if producer else None, detail)
        if key in self._seen:
            return
        self._seen.add(key)
        self.hazards.append(
            Hazard(
                kind,
                facts.pc,
                facts.text,
                producer.pc if producer else None,
                producer.text if producer else "",
                self.builder.map.describe(mask) if mask else "",
                detail,
                threads,
            )
        )

    def _wait_distance(self, state: State, pipes, distance: int) -> None:
        if pipes == "A":
            limit = state.all_count - distance
            state.writers = [w for w in state.writers if w.all_id > limit]
            return
        keep = []
        for w in state.writers:
            if w.pipe in pipes and state.counts.get(w.pipe, 0) - w.pipe_id >= distance:
                continue
            keep.append(w)
        state.writers = keep

    def step(self, state: State, facts: Facts, threads: int) -> None:
        swsb = facts.swsb
        # a taken branch drains the in-order pipes; old enough results have landed
        if state.last_index is not None and facts.index != state.last_index + 1:
            state.writers = []
        state.last_index = facts.index
        if state.writers:
            state.writers = [w for w in state.writers if state.issued - w.issued < w.visible_after]
        # 1. waits named by the annotation
        if swsb.distance:
            if swsb.pipe == "A":
                self._wait_distance(state, "A", swsb.distance)
            elif swsb.pipe or self.xelp:
                self._wait_distance(state, (swsb.pipe,), swsb.distance)
            else:  # a bare @d on a multi-pipe platform: the pipes of the source types
                self._wait_distance(state, facts.source_pipes or frozenset(self.pipes), swsb.distance)
        sets_token = None
        if swsb.token is not None:
            mode = swsb.token_mode
            if facts.out_of_order and mode == "set":
                sets_token = swsb.token
                state.tokens.pop(swsb.token, None)  # re-setting waits for the previous owner
            elif mode == "src":
                token = state.tokens.get(swsb.token)
                if token is not None:
                    if token.dst:
                        state.tokens[swsb.token] = replace(token, src=0)
                    else:
                        state.tokens.pop(swsb.token)
            else:
                state.tokens.pop(swsb.token, None)
        if facts.sync in ("allrd", "allwr"):
            for n in list(state.tokens):
                if facts.sync_tokens is None or facts.sync_tokens >> n & 1:
                    if facts.sync == "allwr":
                        state.tokens.pop(n)
                    else:
                        state.tokens[n] = replace(state.tokens[n], src=0)
        # 2. the instruction after a control-register access waits on all pipes
        if state.arch_pending is not None:
            pending = state.arch_pending
            state.arch_pending = None
            if not (swsb.distance == 1 and (swsb.pipe == "A" or self.xelp)):
                self.report(
                    "arch",
                    facts,
                    pending,
                    0,
                    f"the instruction after a cr0/sr0/ce0 access needs {'@1' if self.xelp else 'A@1'}",
                    threads,
                )
        # 3. dependencies on results still in flight
        reads, writes = facts.reads, facts.writes
        if reads or writes:
            for w in state.writers:
                overlap = 0 if facts.discards_reads else w.mask & reads
                if overlap and overlap & ~self._interlocked(facts, w):
                    self.report("RAW", facts, w.facts, overlap, self._needs(state, w), threads)
                overlap = w.mask & writes
                if overlap and (facts.out_of_order or w.dep_pipe != facts.dep_pipe) and not facts.other:
                    self.report(
                        "WAW",
                        facts,
                        w.facts,
                        overlap,
                        f"overwrites an in-order result of another pipe still in flight; {self._needs(state, w)}",
                        threads,
                    )
            for n, token in list(state.tokens.items()):
                overlap = token.dst & reads
                if overlap:
                    self.report(
                        "RAW",
                        facts,
                        token.facts,
                        overlap,
                        f"reads the result of ${n} without waiting for ${n}.dst",
                        threads,
                    )
                overlap = token.dst & writes
                if overlap:
                    self.report(
                        "WAW",
                        facts,
                        token.facts,
                        overlap,
                        f"overwrites the destination of ${n} without waiting for ${n}.dst",
                        threads,
                    )
                overlap = token.src & writes
                if overlap and self._same_out_of_order_pipe(facts, token.facts):
                    # One out-of-order pipe reads its instructions' sources in order, so a later
                    # instruction of that pipe cannot write before an earlier one has read:
                    # messages leave the EU in order (IGC relies on this), and the systolic pipe
                    # runs dpas in order (nGEN relies on this).  Once the later result is
                    # waited on, those bytes are free: no longer the earlier pending source.
                    state.tokens[n] = replace(token, src=token.src & ~overlap)
                elif overlap:
                    self.report(
                        "WAR", facts, token.facts, overlap, f"overwrites a source of ${n} before ${n}.src", threads
                    )
        # 4. record this instruction
        if facts.out_of_order:
            if sets_token is not None:
                state.tokens[sets_token] = Token(facts.writes, facts.reads & ~self.issue_bytes, facts)
        elif not facts.other:
            pipe = facts.pipe
            pipe_id = state.counts.get(pipe, 0)
            state.counts[pipe] = pipe_id + 1
            all_id = state.all_count
            state.all_count += 1
            if facts.writes:
                state.writers.append(
                    Writer(pipe, facts.dep_pipe, pipe_id, all_id, state.issued, facts.latency, facts.writes, facts)
                )
        if not facts.other:
            state.issued += 1
        if facts.arch:
            state.arch_pending = facts

    @staticmethod
    def _same_out_of_order_pipe(later: Facts, earlier: Facts) -> bool:
        """Both sends, or both dpas: instructions whose pipe reads sources in issue order."""
        return (later.is_send and earlier.is_send) or (later.is_systolic and earlier.is_systolic)

    def _interlocked(self, facts: Facts, w: Writer) -> int:
        """The bytes whose read-after-write from `w` the hardware orders for this instruction."""
        if facts.other:
            return 0
        same_pipe = not facts.out_of_order and (self.xelp or w.dep_pipe == facts.dep_pipe)
        descriptors = self.a0_bytes if facts.is_send else 0
        return self.ordered_in_any_pipe | descriptors | (self.ordered_in_one_pipe if same_pipe else 0)

    def _needs(self, state: State, w: Writer) -> str:
        if self.xelp:
            return f"needs @{max(1, min(7, state.all_count - w.all_id))}"
        distance = max(1, min(7, state.counts.get(w.pipe, 0) - w.pipe_id))
        return f"needs {w.pipe}@{distance}"


class BatchChecker:
    """Hazard state of the thread classes of one batch."""

    def __init__(self, checker: HazardChecker, threads: int):
        self.checker = checker
        self.threads = threads
        self.classes: list[tuple[np.ndarray | None, State]] = [(None, State())]
        self.a0: np.ndarray | None = None  # (threads, 16) words of the batch's a0, see `bind`

    def bind(self, a0_words: np.ndarray) -> None:
        """The batch's a0 registers, read when an instruction with indirect operands runs."""
        self.a0 = a0_words

    def step(self, index: int, tmask: np.ndarray | None) -> None:
        facts = self.checker.facts[index]
        if facts is None:
            return
        if facts.indirect:
            facts = self._resolve_indirect(facts, tmask)
        if tmask is None or len(self.classes) == 1 and self.classes[0][0] is None and tmask.all():
            for members, state in self.classes:
                self.checker.step(state, facts, self._count(members))
            return
        updated = []
        split = False
        for members, state in self.classes:
            full = np.ones(self.threads, dtype=bool) if members is None else members
            inside = full & tmask
            if not inside.any():
                updated.append((members, state))
                continue
            outside = full & ~tmask
            if outside.any():
                split = True
                twin = state.copy()
                self.checker.step(twin, facts, int(inside.sum()))
                updated.append((inside, twin))
                updated.append((outside, state))
            else:
                self.checker.step(state, facts, int(inside.sum()))
                updated.append((members, state))
        self.classes = updated
        if split or len(self.classes) > 1:
            self._merge()

    def _resolve_indirect(self, facts: Facts, tmask: np.ndarray | None) -> Facts:
        """The facts with the GRF bytes the indirect operands address in the executing threads."""
        if self.a0 is None:
            raise SimulationError("the hazard checker needs the batch's a0 (BatchChecker.bind)")
        words = self.a0 if tmask is None else self.a0[tmask]
        reads, writes = facts.reads, facts.writes
        for is_write, addresses, size in facts.indirect:
            mask = self.checker.builder.addressed_bytes(addresses(words), size)
            if is_write:
                writes |= mask
            else:
                reads |= mask
        return replace(facts, reads=reads, writes=writes)

    def _count(self, members) -> int:
        return self.threads if members is None else int(members.sum())

    def _merge(self) -> None:
        groups: dict[tuple, tuple[np.ndarray, State]] = {}
        for members, state in self.classes:
            full = np.ones(self.threads, dtype=bool) if members is None else members
            key = state.key()
            if key in groups:
                groups[key] = (groups[key][0] | full, groups[key][1])
            else:
                groups[key] = (full, state)
        self.classes = [(None if m.all() else m, s) for m, s in groups.values()]
