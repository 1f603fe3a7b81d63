"""Emitting legal instructions on virtual registers.

`Builder.alu(opcode, dst, srcs)` takes values of any width and splits them into instructions
that respect the Xe register-region rules: each operand spans at most two GRFs, a row of a
source region never crosses a GRF boundary, destination strides are 1, 2 or 4, immediates sit
where the format allows them (src1 of two-source instructions, 16-bit src0/src2 of
three-source ones).  What cannot be encoded is split into narrower instructions, down to one
element at a time, or (immediates) moved into a register first.

Every instruction is NoMask (`(W)`): the IR describes one hardware thread, so lanes are data,
not SIMT work-items, and predication comes only from flags the kernel computes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Protocol, TypeGuard

from .. import hw as hwlib
from ..emit import tables as T
from ..emit.instruction import CondModifier, Flag, Imm, Instruction, Operand, Predicate, Reg, SendDescriptor
from ..errors import UnsupportedError
from ..ir.types import F16, Type
from .program import Program, Span
from .values import TYPE_BYTES, VIRTUAL, Constant, Region, Value, VReg, VRegTable, xe_type

XeTypes = tuple[str | None, ...]  # Xe types of dst and sources, in order (None: the operand's own)


class Placed(Protocol):
    """A source already in hardware form (a flag, the accumulator, a vector immediate, a 2-D
    region): `at` gives its operand for lanes [position, position + n) of an instruction, None
    when no single operand reads those lanes (the instruction is cut smaller)."""

    lanes: int
    stride: int

    def at(self, position: int, n: int, grf: int, ternary: bool = False) -> Operand | None: ...


Source = Value | Placed  # what an ALU instruction reads

MAX_EXEC = 32
COMMUTATIVE = frozenset({"add", "mul", "and", "or", "xor"})
REVERSED_CONDITION = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq", "ne": "ne"}


def _float_bits(value: float, t: Type) -> int:
    if t.kind == "f32":
        return struct.unpack("<I", struct.pack("<f", value))[0]
    if t.kind == "f16":
        return struct.unpack("<H", struct.pack("<e", value))[0]
    if t.kind == "f64":
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    if t.kind == "bf16":
        return struct.unpack("<I", struct.pack("<f", value))[0] >> 16
    raise UnsupportedError(f"no immediate form for {t}")


def immediate(c: Constant, xe: str | None = None) -> Imm:
    """The immediate of a constant, as Xe type `xe` (default: the constant's own)."""
    t = c.type
    if t.is_bool:
        return Imm(0xFFFFFFFF if c.value else 0, "ud")
    xe = xe or xe_type(t)
    bits = 8 * TYPE_BYTES[xe]
    if t.is_float:
        raw = _float_bits(float(c.value), t)
        if xe == "bf":
            xe = "uw"  # bf16 immediates travel as their bit pattern
        return Imm(raw, xe)
    if xe in ("b", "ub"):  # there are no byte immediates: a word one, sign- or zero-extended
        xe, bits = ("w" if xe == "b" else "uw"), 16
    return Imm(int(c.value) & ((1 << bits) - 1), xe)


def fits16(c: Constant) -> str | None:
    """The 16-bit immediate type a three-source instruction can take `c` as, if any."""
    if c.type.is_int:
        v = int(c.value)
        if -0x8000 <= v <= 0x7FFF:
            return "w"
        if 0 <= v <= 0xFFFF:  # zero-extended to the execution type: the same value, signed or not
            return "uw"
        return None
    if c.type == F16:
        return "hf"
    return None


class Builder:
    """Creates virtual registers and appends legal instructions to a `Program`."""

    def __init__(self, hw: hwlib.Platform, reuse_payloads: bool = True):
        self.hw = hw
        self.reuse_payloads = reuse_payloads  # a message may reuse an earlier one's address payload
        self.grf = hw.grf_bytes
        self.vregs = VRegTable(hw.grf_bytes)
        self.program = Program(self.vregs)
        self.flag_unit = 8 if T.is_xehpc_layout(hw) else 4  # channel-offset granularity
        self.sinking = False  # ops emitted now are moves out of a message's temporary

    # --- registers ----------------------------------------------------------------------------
    def temp(self, t: Type, lanes: int = 1, name: str = "t") -> Region:
        """A fresh register for `lanes` elements of `t` (GRF-aligned when a vector)."""
        size = t.size * lanes
        reg = self.vregs.new(size, name, self.grf if lanes > 1 else max(4, t.size))
        self.program.kill(reg)  # whatever the bytes held before is dead here
        return Region(reg, 0, t, lanes, 1)

    def grfs(self, count: int, name: str) -> VReg:
        reg = self.vregs.grfs(count, name)
        self.program.kill(reg)
        return reg

    def flag_lanes(self, lanes: int) -> int:
        """Lanes for a fresh register that a predicated sequence runs on: `lanes`, or rounded up
        to a whole flag unit where `lanes`' power-of-two pieces would start a piece off one
        (7 lanes: 4, 2, 1, the last at lane 6), which no channel offset encodes."""
        rest = lanes % self.flag_unit
        return lanes if rest & (rest - 1) == 0 else lanes + self.flag_unit - rest

    def scratch_flag(self, lanes: int = 1) -> Flag:
        """A flag for short internal sequences (min/max, NaN checks): the last flag register,
        which conditions never hold (`Conditions.flag_for`)."""
        return Flag(self.hw.flag_registers - 1, 0)

    # --- emission -----------------------------------------------------------------------------
    def emit(self, inst: Instruction, target: str | None = None, kills=None):
        op = self.program.add(inst, target, kills)
        op.sinkable = self.sinking
        return op

    @contextmanager
    def sinkable(self) -> Iterator[None]:
        """The ops emitted inside move a load's data out of its temporary: `sink.py` may place
        them later, where the data is first needed."""
        self.sinking = True
        try:
            yield
        finally:
            self.sinking = False

    def label(self, name: str) -> None:
        self.program.label(name)

    def new_label(self, hint: str) -> str:
        return self.program.new_label(hint)

    def jump(self, target: str, predicate: Predicate | None = None) -> None:
        self.emit(Instruction("jmpi", 1, predicate=predicate, no_mask=True, jip=0), target=target)

    def send(
        self,
        sfid: str,
        dst: VReg | None,
        src0: VReg,
        src1: VReg | None,
        desc: int,
        exdesc: int,
        src1_length: int,
        exec_size: int = 1,
        predicate: Predicate | None = None,
        eot: bool = False,
        dst_offset: int = 0,
        src0_offset: int = 0,
        src1_offset: int = 0,
        filled: tuple[tuple[int, int], ...] = (),
        src1_used: int | None = None,
    ) -> None:
        """A send with immediate descriptors; register operands are whole GRFs of virtual
        registers (offsets in bytes, multiples of the GRF size).  `filled` are the byte ranges
        of `dst` the response overwrites when all its lanes run (sends are NoMask): unless the
        send is predicated they end the liveness of what those bytes held, so a value written
        there before (a zero fill) is dead.  `src1_used` is how many bytes of src1 carry data
        (for liveness: the rest of its GRFs are don't-care)."""
        in_instruction = T.src1_length_in_instruction(self.hw)
        if not in_instruction:
            exdesc |= (src1_length & 0x1F) << 6
        descriptor = SendDescriptor(sfid, desc, exdesc, src1_length=src1_length if in_instruction else None)

        def reg(v: VReg | None, offset: int) -> Reg:
            if v is None:
                return Reg("null", 0, 0, "ud")
            if offset % self.grf:
                raise UnsupportedError("a message operand must start on a GRF boundary")
            return Reg(VIRTUAL, v.id, offset // 4, "ud")

        op = self.emit(
            Instruction(
                "send",
                exec_size,
                dst=reg(dst, dst_offset),
                srcs=(reg(src0, src0_offset), reg(src1, src1_offset)),
                predicate=predicate,
                no_mask=True,
                send=descriptor,
                options=("EOT",) if eot else (),
            ),
            kills=tuple(Span(dst.id, start, end) for start, end in filled)
            if dst is not None and predicate is None
            else None,
        )
        if src1_used is not None and src1 is not None:
            op.reads = tuple(
                Span(s.reg, s.start, s.start + src1_used) if s.reg == src1.id and s.start == src1_offset else s
                for s in op.reads
            )

    # --- ALU with legal regions ---------------------------------------------------------------
    def alu(
        self,
        opcode: str,
        dst: Region | Reg,
        srcs: Sequence[Source],
        *,
        cond: CondModifier | None = None,
        predicate: Predicate | None = None,
        saturate: bool = False,
        function=None,
        options: tuple[str, ...] = (),
        lanes: int | None = None,
        types: XeTypes | None = None,
        channel_base: int = 0,
    ) -> None:
        """`opcode` on every lane of `dst` (a Region, or a null/flag/accumulator Reg with
        `lanes`).  `types` overrides the Xe types of dst and sources (e.g. ("ud", "uw"); None: the
        operand's own).
        Lane i reads predicate and condition bit `channel_base + i` of its flag."""
        fmt = T.OPCODES[opcode].format
        if fmt == T.TERNARY and isinstance(dst, Region) and not self._ternary_destination_ok(dst):
            staged = self.temp(dst.type, dst.lanes)  # the hardware wants an aligned destination
            self.alu(
                opcode,
                staged,
                srcs,
                cond=cond,
                predicate=predicate,
                saturate=saturate,
                function=function,
                options=options,
                types=types,
                channel_base=channel_base,
            )
            self.alu("mov", dst, [staged], types=(types[0], types[0]) if types and types[0] else None)
            return
        total = dst.lanes if isinstance(dst, Region) else (lanes or 1)
        srcs, swapped = self._place_immediates(opcode, fmt, list(srcs), predicate is not None)
        if fmt == T.BINARY and len(srcs) > 1 and self._odd_byte_source(srcs[1], types):
            srcs[1] = self._restaged(srcs[1], types[2] if types and len(types) > 2 else None)
        if swapped and opcode == "cmp":
            assert cond is not None  # (a cmp sets a flag)
            cond = CondModifier(REVERSED_CONDITION[cond.cond], cond.flag)
        flagged = predicate is not None or cond is not None
        # a min or max (sel with a condition) writes its flag bits but nothing reads them (its
        # callers give it the scratch flag): a piece may start off a flag unit, at channel offset 0
        flag_read = predicate is not None or (cond is not None and opcode != "sel")
        if isinstance(dst, Reg) and dst.file == "null" and cond is not None and total & (total - 1) and total < 32:
            # a comparison into flag bits only: run it on a power of two of lanes (the extra
            # flag bits are don't-care) rather than at a channel offset the encoding may lack
            total = 1 << total.bit_length()
        position = 0
        while position < total:
            n = self._chunk(fmt, dst, srcs, position, total - position, types, flag_read, channel_base)
            operands = [self._operand(s, position, n, fmt, i, types) for i, s in enumerate(srcs)]
            d = self._dst(dst, position, n, types)
            self.emit(
                Instruction(
                    opcode,
                    n,
                    channel_offset=channel_base + position
                    if flagged and (channel_base + position) % self.flag_unit == 0
                    else 0,
                    dst=d,
                    srcs=tuple(operands),
                    predicate=predicate,
                    no_mask=True,
                    cond_modifier=cond,
                    saturate=saturate,
                    function=function,
                    options=options,
                )
            )
            position += n

    def mov(
        self,
        dst: Region,
        src: Value,
        saturate: bool = False,
        predicate: Predicate | None = None,
        types: tuple[str | None, str | None] | None = None,
    ) -> None:
        if types is None and dst.type.kind == "bf16" and (isinstance(src, Constant) or src.type.kind == "bf16"):
            types = ("uw", "uw")  # bf16 data moves as its bits (XeLP has no :bf at all)
        self.alu("mov", dst, [src], saturate=saturate, predicate=predicate, types=types)

    def scalar(self, value: Value, t: Type | None = None) -> Region:
        """`value` in a register (constants are moved into a fresh scalar)."""
        if isinstance(value, Region):
            return value
        t = t or value.type
        out = self.temp(t)
        self.mov(out, Constant(value.value, t))
        return out

    # --- helpers ------------------------------------------------------------------------------
    def _odd_byte_source(self, value: Source, types) -> TypeGuard[Region]:
        """XeHPC encodes src1 subregisters in 2-byte units: a byte operand at an odd byte
        offset (or with an odd stride) cannot be src1."""
        if not T.is_xehpc_layout(self.hw) or not isinstance(value, Region):
            return False
        xe = types[2] if types and len(types) > 2 and types[2] else xe_type(value.type)
        if TYPE_BYTES[xe] != 1:
            return False
        return value.offset % 2 == 1 or (value.lanes > 1 and value.stride % 2 == 1)

    def _restaged(self, value: Region, xe: str | None) -> Region:
        """`value` copied to a fresh register with 2-byte lanes (keeps its type)."""
        lanes = value.lanes if value.stride else 1
        out = Region(self.temp(value.type, 2 * lanes).reg, 0, value.type, lanes, 2 if lanes > 1 else 1)
        self.alu(
            "mov",
            out,
            [
                value
                if value.stride or value.lanes == 1
                else Region(value.reg, value.offset, value.type, 1, 1, value.negate)
            ],
            types=(xe, xe) if xe else None,
        )
        return out if value.stride or value.lanes == 1 else out.broadcast(value.lanes)

    def _ternary_destination_ok(self, dst: Region) -> bool:
        """Three-source destinations start at `tables.ternary_dst_alignment` bytes: a scalar
        register is simply aligned so; a place inside a larger register may not be."""
        alignment = T.ternary_dst_alignment(self.hw)
        if dst.offset % alignment:
            return False
        if dst.reg.alignment < alignment and dst.reg.fixed is None:
            dst.reg.alignment = alignment
        return dst.reg.alignment >= alignment or dst.reg.fixed is not None

    def _place_immediates(
        self, opcode: str, fmt: str, srcs: list[Source], predicated: bool = False
    ) -> tuple[list[Source], bool]:
        """Sources with every immediate where the format allows one (swapping commutative
        operands, else moving the constant into a register); True when src0/src1 swapped."""
        swapped = False
        if fmt == T.BINARY or fmt == T.MATH:
            first = srcs[0] if len(srcs) == 2 else None
            if isinstance(first, Constant):
                swappable = (
                    opcode in COMMUTATIVE
                    or opcode == "cmp"
                    or (opcode == "sel" and not predicated and not first.type.is_float)
                )
                if swappable and not isinstance(srcs[1], Constant):
                    srcs = [srcs[1], first]
                    swapped = True
                else:
                    srcs[0] = self.scalar(first)
            if fmt == T.MATH:  # math takes no immediates
                srcs = [self.scalar(s) if isinstance(s, Constant) else s for s in srcs]
            for i, s in enumerate(srcs):
                if isinstance(s, Constant) and s.type.bits == 64 and opcode != "mov":
                    srcs[i] = self.scalar(s)
            return srcs, swapped
        if fmt == T.TERNARY:
            if opcode in ("mad", "dp4a") and isinstance(srcs[1], Constant) and not isinstance(srcs[2], Constant):
                srcs[1], srcs[2] = srcs[2], srcs[1]
            if opcode == "add3":
                constants = [s for s in srcs if isinstance(s, Constant)]
                registers = [s for s in srcs if not isinstance(s, Constant)]
                if len(constants) == 1:
                    srcs = [registers[0], registers[1], constants[0]]
                elif len(constants) >= 2:
                    srcs = [constants[0], registers[0] if registers else self.scalar(constants[2]), constants[1]]
            for i, s in enumerate(srcs):
                if isinstance(s, Constant) and (i == 1 or fits16(s) is None):
                    srcs[i] = self.scalar(s)
        return srcs, swapped

    def _chunk(
        self,
        fmt: str,
        dst,
        srcs: list[Source],
        position: int,
        remaining: int,
        types,
        flagged: bool,
        channel_base: int = 0,
    ) -> int:
        n = 1
        while n * 2 <= min(remaining, MAX_EXEC):
            n *= 2
        if flagged and (channel_base + position) % self.flag_unit:
            raise UnsupportedError(
                f"a predicated vector operation needs lane {channel_base + position} to "
                f"start a multiple of {self.flag_unit} lanes"
            )
        while n > 1:
            if flagged and (channel_base + position) % self.flag_unit:
                raise UnsupportedError(
                    f"a predicated vector operation needs lane {channel_base + position} to "
                    f"start a multiple of {self.flag_unit} lanes"
                )
            ok = self._dst(dst, position, n, types) is not None
            ok = ok and all(
                self._operand(s, position, n, fmt, i, types, probe=True) is not None for i, s in enumerate(srcs)
            )
            if ok:
                return n
            n //= 2
        return 1

    def one_instruction(self, opcode: str, dst: Region | Reg, srcs: Sequence[Source], lanes: int, types=None) -> bool:
        """Whether `alu(opcode, dst, srcs, lanes=lanes, types=types)` (unpredicated, no condition)
        is one instruction: `alu` splits what no region encodes (a source spanning three GRFs,
        a strided three-source operand, a count not a power of two).  A sequence whose
        instructions meet in the accumulator (`mul acc0` + `mach`, `addc` + its carry) splits
        itself, so that each piece's partner reads what that piece wrote.  Emits nothing (a
        constant counts as the immediate or scalar `alu` makes of it, neither of which splits)."""
        fmt = T.OPCODES[opcode].format
        return self._chunk(fmt, dst, list(srcs), 0, lanes, types, False) == lanes

    def _type_of(self, value: Value, index: int, types) -> str:
        if types is not None and index + 1 < len(types) and types[index + 1] is not None:
            return types[index + 1]
        return xe_type(value.type) if not value.type.is_bool else "ud"

    def _dst(self, dst, position: int, n: int, types):
        if isinstance(dst, Reg):
            if dst.file in ("null",):
                t = types[0] if types else dst.type
                return Reg("null", 0, 0, t).stride(1)
            if dst.file == "acc":
                size = TYPE_BYTES[dst.type]
                if n * size > 2 * self.grf:
                    return None
                at = (dst.subreg + position) * size  # bytes into the accumulator, from acc<number>
                return Reg("acc", dst.number + at // self.grf, at % self.grf // size, dst.type).stride(1)
            return dst.stride(1) if n * TYPE_BYTES[dst.type] <= 2 * self.grf else None
        xe = types[0] if types and types[0] else xe_type(dst.type)
        size = TYPE_BYTES[xe]
        if dst.lanes == 1 or n == 1:
            region = dst.lane(position) if dst.lanes > 1 else dst
            return self._reg(region, xe).stride(1)
        s = dst.stride
        if s not in (1, 2, 4):
            return None
        start = dst.offset + position * s * dst.size
        end = start + ((n - 1) * s + 1) * size
        if (end - 1) // self.grf - start // self.grf > 1 or n * s * size > 2 * self.grf:
            return None
        return self._reg(dst.slice(position, n), xe).stride(s)

    def _reg(self, region: Region, xe: str) -> Reg:
        size = TYPE_BYTES[xe]
        if region.offset % size:
            raise UnsupportedError(f"{region.reg!r}+{region.offset} is not aligned to :{xe}")
        return Reg(VIRTUAL, region.reg.id, region.offset // size, xe, neg=region.negate)

    def _operand(self, value: Source, position: int, n: int, fmt: str, index: int, types, probe: bool = False):
        if hasattr(value, "at"):  # a flag, accumulator or vector immediate
            return value.at(position, n, self.grf, fmt == T.TERNARY)
        xe = self._type_of(value, index, types)
        if isinstance(value, Constant):
            return immediate(value, fits16(value) if fmt == T.TERNARY else xe)
        size = TYPE_BYTES[xe]
        scalar = value.lanes == 1 or value.stride == 0
        if scalar:
            reg = self._reg(Region(value.reg, value.offset, value.type, 1, 1, value.negate), xe)
            if fmt == T.TERNARY:
                return reg.stride(0) if index == 2 else reg.region(0, None, 0)
            return reg.region(0, 1, 0)
        s = value.stride
        start = value.offset + position * s * size
        span_end = start + ((n - 1) * s + 1) * size
        first_grf = start // self.grf
        if (span_end - 1) // self.grf - first_grf > 1:
            return None
        reg = self._reg(value.slice(position, n), xe)
        if n == 1:
            if fmt == T.TERNARY:
                return reg.stride(0) if index == 2 else reg.region(0, None, 0)
            return reg.region(0, 1, 0)
        if fmt == T.TERNARY:
            if index == 2:
                return reg.stride(s) if s in (1, 2, 4) else None
            if s != 1:
                return None
            return reg.region(1, None, 0)
        if fmt == T.DPAS:
            return reg
        if s in (1, 2, 4):
            width = min(n, 16)
            while width >= 1:
                if width * s <= 32 and self._rows_fit(start, n, width, s, size):
                    return reg.region(width * s, width, s)
                width //= 2
            return None
        if s in (8, 16, 32):
            return reg.region(s, 1, 0)
        return None

    def _rows_fit(self, start: int, n: int, width: int, s: int, size: int) -> bool:
        for row in range(-(-n // width)):
            row_start = start + row * width * s * size
            row_end = row_start + ((width - 1) * s + 1) * size
            if (row_end - 1) // self.grf != row_start // self.grf:
                return False
        return True


def accumulator_runs(total: int, limit: int, fits: Callable[[int, int], bool]) -> Iterator[tuple[int, int]]:
    """(start, n) runs covering lanes [0, total) for a sequence whose instructions meet in the
    accumulator (`mul acc0` + `mach`/`macl`, `addc`/`subb` + the add that reads the carry):
    aligned powers of two of at most `limit` lanes, each as long as `fits(start, n)` allows
    (`Builder.one_instruction` of every instruction of the run that touches the accumulator).
    Such an instruction writes or reads the accumulator from the element its own lanes name,
    so each must be one instruction and its partner must come before the next run: a run that
    `alu` split would have its second piece write where the partner does not read, or
    overwrite what the partner of the first piece reads.  Aligned, a run never straddles an
    accumulator register."""
    start = 0
    while start < total:
        n = 1 << (min(limit, total - start).bit_length() - 1)
        if start:
            n = min(n, start & -start)
        while n > 1 and not fits(start, n):
            n //= 2
        yield start, n
        start += n


class PhysicalOperand:
    """A source that is not a virtual register: a flag (`f0.0:uw`) read as a scalar, or an
    accumulator read lane by lane (`acc0.0<8;8,1>:ud`)."""

    def __init__(self, reg: Reg, vector: bool = False):
        self.reg = reg
        self.vector = vector
        self.lanes = 1
        self.stride = 0

    def at(self, position: int, n: int, grf: int, ternary: bool = False) -> Reg:
        if not self.vector:
            return self.reg.region(0, None, 0) if ternary else self.reg.region(0, 1, 0)
        size = TYPE_BYTES[self.reg.type]
        at = (self.reg.subreg + position) * size  # lane `position` of a piece the builder split off
        reg = replace(self.reg, number=self.reg.number + at // grf, subreg=at % grf // size)
        if n == 1:
            return reg.region(0, None, 0) if ternary else reg.region(0, 1, 0)
        if ternary:
            return reg.region(1, None, 0)
        width = min(n, grf // size)
        return reg.region(width, width, 1)

    def __repr__(self) -> str:
        return f"PhysicalOperand({self.reg})"


class RowsOperand:
    """A source read as rows of `width` elements of Xe type `xe` in a virtual register: lane i
    reads element (i // width) * row_stride + (i % width) * col_stride, counted from byte
    `offset` (a 2-D region `<row_stride;width,col_stride>`, e.g. each of a row's values
    repeated `width` times with col_stride 0).  Chunks start and end on whole rows, or stay
    inside one row.  A source of one- and two-source instructions only."""

    def __init__(self, reg: VReg, offset: int, xe: str, width: int, row_stride: int, col_stride: int):
        self.reg, self.offset, self.xe = reg, offset, xe
        self.width, self.row_stride, self.col_stride = width, row_stride, col_stride
        self.lanes, self.stride = width, col_stride

    @staticmethod
    def encodable(width: int, row_stride: int, col_stride: int) -> bool:
        return width in (1, 2, 4, 8, 16) and row_stride in (0, 1, 2, 4, 8, 16, 32) and col_stride in (0, 1, 2, 4)

    def at(self, position: int, n: int, grf: int, ternary: bool = False) -> Reg | None:
        w, rs, cs = self.width, self.row_stride, self.col_stride
        size = TYPE_BYTES[self.xe]
        row, col = divmod(position, w)
        first = self.offset + (row * rs + col * cs) * size

        def reg() -> Reg:
            return Reg(VIRTUAL, self.reg.id, first // size, self.xe)

        if ternary:
            return None
        if n == 1 or (cs == 0 and col + n <= w):
            return reg().region(0, 1, 0)
        if col + n <= w:  # inside one row: a 1-D line
            return reg().region(n * cs, n, cs) if _within(first, ((n - 1) * cs + 1) * size, grf, 1) else None
        if col or n % w:
            return None
        rows = n // w
        row_bytes = ((w - 1) * cs + 1) * size
        if not all(_within(first + r * rs * size, row_bytes, grf, 1) for r in range(rows)):
            return None  # an element row may not cross a GRF boundary
        if not _within(first, ((rows - 1) * rs + (w - 1) * cs + 1) * size, grf, 2):
            return None
        return reg().region(rs, w, cs)

    def __repr__(self) -> str:
        return f"RowsOperand({self.reg!r}+{self.offset}:{self.xe} <{self.row_stride};{self.width},{self.col_stride}>)"


def _within(start: int, nbytes: int, grf: int, grfs: int) -> bool:
    """Whether `nbytes` from byte `start` lie within `grfs` consecutive GRFs."""
    return (start + max(nbytes, 1) - 1) // grf - start // grf < grfs
