"""What each instruction reads and writes, byte by byte, and which SWSB pipe it goes down.

The software scoreboard (`scoreboard.py`) needs, for every instruction, the exact register
bytes it reads and writes (GRF regions with their strides and exec size, send payloads and
responses from the descriptors, dpas operand blocks, flags, accumulators, a0 and the
control registers) and how the hardware orders it:

- out-of-order instructions (sends, dpas, and math where `hw.math_is_out_of_order`) report
  completion through an SBID token;
- in-order instructions go down a pipe (XeLP: one; XeHPG: F, I, L; XeHPC: F, I, L, M; chosen
  by `pipes.py`), in which distances `@n` count.

A `Footprint` is two Python ints: one bit per register *unit* (a GRF row, a0, an
accumulator, the flags, the control registers) for a quick overlap test, and one bit per
byte, 64 bits per unit, for the exact one.  Facts come from IGA's RegDeps.cpp and nGEN's
auto-SWSB (see docs/encoding.md, SWSB); where they differ we take the stricter.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from .. import hw as hwlib
from . import pipes
from . import tables as T
from .instruction import Instruction, Operand, Reg
from .regions import three_source_region

UNIT_BYTES = 64  # byte bits per unit: the largest register (an XeHPC GRF)
GRF_UNITS = 256  # r0..r255
A0_UNIT = 256
ACC_UNIT = 257  # acc0..acc15 (mme0..7 are acc8..15)
FLAG_UNIT = 273  # f0..f3, four bytes each
CONTROL_UNIT = 274  # cr0 at 0, sr0 at 16, ce0 at 32, n0 at 36, ip at 48
OTHER_UNIT = 275  # every other architecture register, as one unit

_CONTROL_OFFSETS = {"cr": 0, "sr": 16, "ce": 32, "n": 36, "ip": 48}
ARCH_FILES = frozenset({"cr", "sr", "ce"})  # accesses that need A@1 around them


class Footprint(NamedTuple):
    units: int = 0
    bytes: int = 0

    def __or__(self, other: Footprint) -> Footprint:
        return Footprint(self.units | other.units, self.bytes | other.bytes)

    def overlaps(self, other: Footprint) -> bool:
        return bool(self.units & other.units) and bool(self.bytes & other.bytes)

    def __bool__(self) -> bool:
        return self.units != 0


EMPTY = Footprint()


def _span(unit: int, start: int, length: int) -> Footprint:
    """Bytes [start, start + length) of one unit."""
    return Footprint(1 << unit, ((1 << length) - 1) << (unit * UNIT_BYTES + start))


def _whole(unit: int, length: int = UNIT_BYTES) -> Footprint:
    return _span(unit, 0, length)


def _units(first: int, count: int) -> Footprint:
    """Every byte of `count` consecutive units."""
    if count <= 0:
        return EMPTY
    return Footprint(((1 << count) - 1) << first, ((1 << (count * UNIT_BYTES)) - 1) << (first * UNIT_BYTES))


ACC_AND_FLAGS = _units(ACC_UNIT, 16) | _whole(FLAG_UNIT)
ALL_GRF = _units(0, GRF_UNITS)
ALL_ACC = _units(ACC_UNIT, 16)


def _file_span(first_unit: int, row_bytes: int, file_byte: int, length: int) -> Footprint:
    """Bytes [file_byte, file_byte + length) of a register file whose registers are `row_bytes`
    long and start at unit `first_unit`, split across registers."""
    units = data = 0
    while length > 0:
        row, within = divmod(file_byte, row_bytes)
        take = min(length, row_bytes - within)
        unit = first_unit + row
        units |= 1 << unit
        data |= ((1 << take) - 1) << (unit * UNIT_BYTES + within)
        file_byte += take
        length -= take
    return Footprint(units, data)


def _element_offsets(exec_size: int, vstride: int, width: int, hstride: int) -> list[int]:
    width = max(width, 1)
    return sorted({(i // width) * vstride + (i % width) * hstride for i in range(exec_size)})


@lru_cache(maxsize=65536)
def region_footprint(reg: Reg, exec_size: int, region: tuple[int, int, int], grf_bytes: int) -> Footprint:
    """The bytes a direct register operand covers with region <v;w,h> over exec_size channels."""
    file = reg.file
    size = T.type_bytes(reg.type) if reg.type in T.TYPES else 4
    vstride, width, hstride = region
    offsets = _element_offsets(exec_size, vstride, width, hstride)
    if file == "r" or file == "acc" or file == "mme":
        first = 0 if file == "r" else ACC_UNIT + (8 if file == "mme" else 0)
        base = reg.number * grf_bytes + reg.subreg * size
        if offsets == list(range(len(offsets))):  # contiguous: one span
            return _file_span(first, grf_bytes, base, len(offsets) * size)
        out = EMPTY
        for offset in offsets:
            out = out | _file_span(first, grf_bytes, base + offset * size, size)
        return out
    if file == "a":
        unit, base, limit = A0_UNIT, reg.subreg * size, 32
    elif file == "f":
        unit, base, limit = FLAG_UNIT, reg.number * 4 + reg.subreg * size, 16
    elif file in _CONTROL_OFFSETS and not (file == "sr" and reg.number):
        unit, base, limit = CONTROL_UNIT, _CONTROL_OFFSETS[file] + reg.subreg * size, UNIT_BYTES
    else:
        return _whole(OTHER_UNIT)
    out = EMPTY
    for offset in offsets:
        start = min(base + offset * size, limit - 1)
        out = out | _span(unit, start, min(size, limit - start))
    return out


# --- facts ---------------------------------------------------------------------------------------

IN_ORDER = "in_order"
OUT_OF_ORDER = "out_of_order"
BRANCH = "branch"
OTHER = "other"  # sync, nop, illegal: no pipe, no registers


@dataclass(frozen=True, slots=True)
class Facts:
    """What the scoreboard needs to know about one instruction."""

    kind: str  # IN_ORDER, OUT_OF_ORDER, BRANCH or OTHER
    reads: Footprint
    writes: Footprint
    pipe: str  # in-order pipe counted for distances ("" on XeLP); "" for the other kinds
    order_class: str  # same class = ordered by hardware (XeLP: short/long/control; else the pipe)
    timeout: int  # in-order: same-pipe instructions after which the result has surely landed
    arch: bool  # reads or writes cr0/sr0/ce0
    writes_channel_enables: bool  # writes ce0 or sr0 (which hold the channel and dispatch masks)
    source_pipes: frozenset  # pipes of the source operand types (XeHPG bare `@n`)
    first_channel: int
    end_channel: int
    no_mask: bool
    predicated: bool
    eot: bool


_FACTS_CACHE: dict = {}


def clear_caches() -> None:
    """Forget cached facts and operand footprints (for timing the pass from a cold start)."""
    _FACTS_CACHE.clear()
    region_footprint.cache_clear()


def instruction_facts(inst: Instruction, platform: hwlib.Platform) -> Facts:
    """What the scoreboard needs to know about `inst` (cached: kernels repeat instructions)."""
    key = (inst, platform.name)
    facts = _FACTS_CACHE.get(key)
    if facts is None:
        if len(_FACTS_CACHE) > 65536:
            _FACTS_CACHE.clear()
        facts = _FACTS_CACHE[key] = _compute_facts(inst, platform)
    return facts


def _compute_facts(inst: Instruction, platform: hwlib.Platform) -> Facts:
    info = inst.info
    fmt = info.format
    grf = platform.grf_bytes
    reads = writes = EMPTY
    if inst.opcode == "sync" or fmt == T.NULLARY:
        kind = OTHER
    elif inst.is_branch:
        kind = BRANCH
    elif T.is_out_of_order(info, platform):
        kind = OUT_OF_ORDER
    else:
        kind = IN_ORDER

    if kind != OTHER:
        if fmt == T.SEND:
            reads, writes = _send_footprints(inst, platform)
        elif fmt == T.DPAS:
            reads, writes = _dpas_footprints(inst, grf)
        else:
            reads, writes = _operand_footprints(inst, platform)
        reads = reads | _flag_reads(inst)
        writes = writes | _flag_writes(inst)
        reads, writes = _implicit_accumulator(inst, reads, writes)

    operands = ([inst.dst] if inst.dst is not None else []) + [s for s in inst.srcs if type(s) is Reg]
    arch = any(r.file in ARCH_FILES for r in operands)
    masks = inst.dst is not None and inst.dst.file in ("ce", "sr")
    pipe = order_class = ""
    timeout = 0
    latency = dict(platform.swsb_pipe_timeout)
    if kind == IN_ORDER:
        pipe = pipes.in_order_pipe(inst, platform)
        order_class = pipes.order_class(inst, platform)
        long = pipe == "L" or pipes.has_64bit_operand(inst)
        timeout = latency["math"] if pipe == "M" else latency["alu64"] if long else latency["alu"]
    elif kind == BRANCH:  # branches count in no pipe here: a distance too small only waits longer
        order_class = pipes.order_class(inst, platform)
        timeout = latency["alu"]
    return Facts(
        kind,
        reads,
        writes,
        pipe,
        order_class,
        timeout,
        arch,
        masks,
        frozenset(pipes.type_pipe(t, platform) for t in pipes.typed_operands(inst)),
        inst.channel_offset,
        inst.channel_offset + inst.exec_size,
        inst.no_mask,
        inst.predicate is not None,
        inst.eot,
    )


def _operand_footprints(inst: Instruction, platform: hwlib.Platform) -> tuple[Footprint, Footprint]:
    fmt = inst.info.format
    grf = platform.grf_bytes
    size = inst.exec_size
    reads = writes = EMPTY
    for index, src in enumerate(inst.srcs):
        if type(src) is not Reg or src.file == "null":
            continue
        if src.mme is not None and src.mme != T.MME_NONE:
            reads = reads | ALL_ACC
            writes = writes | ALL_ACC
        if src.indirect:
            reads = reads | ALL_GRF | _whole(A0_UNIT, 32)
            continue
        if fmt == T.TERNARY:
            region = three_source_region(src, index)
        elif fmt in T.BRANCH_FORMATS:
            region = (0, 1, 0)
        else:
            region = (src.vstride or 0, src.width or 1, src.hstride or 0)
        reads = reads | region_footprint(src, size, region, grf)
    dst = inst.dst
    if dst is not None and dst.file != "null":
        if dst.indirect:
            reads = reads | _whole(A0_UNIT, 32)
            writes = writes | ALL_GRF
        else:
            if fmt in T.BRANCH_FORMATS:  # call/calla: return address and mask, two dwords
                written = region_footprint(dst.retype("ud"), 2, (1, 1, 0), grf)
            else:
                written = region_footprint(dst, size, (dst.hstride or 1, 1, 0), grf)
            if dst.file == "r" and (
                fmt == T.MATH or (platform.byte_writes_read_modify_write and T.type_bytes(dst.type) == 1)
            ):
                # math results (XeHPG read suppression) and XeHPC byte writes (read-modify-write of
                # the register) count as the whole registers they touch
                written = _whole_rows(written)
                if fmt != T.MATH:
                    reads = reads | written
            writes = writes | written
    return reads, writes


def _whole_rows(footprint: Footprint) -> Footprint:
    out = EMPTY
    units = footprint.units
    while units:
        low = units & -units
        out = out | _whole(low.bit_length() - 1)
        units ^= low
    return out


def _rows(reg: Reg, count: int, grf: int) -> Footprint:
    if reg.file != "r" or count <= 0:
        return EMPTY
    count = min(count, GRF_UNITS - reg.number)
    return _file_span(0, grf, reg.number * grf, count * grf)


def _send_footprints(inst: Instruction, platform: hwlib.Platform) -> tuple[Footprint, Footprint]:
    msg = inst.send
    assert msg is not None, "a send carries its message descriptor"
    grf = platform.grf_bytes
    unknown = 31  # lengths in a0: assume the largest message (as IGA does)
    reads = EMPTY
    if msg.desc_in_a0 or msg.exdesc_a0 is not None:
        reads = reads | _whole(A0_UNIT, 32)
    src0 = inst.srcs[0] if inst.srcs else None
    src1 = inst.srcs[1] if len(inst.srcs) > 1 else None
    mlen = msg.message_length if msg.message_length is not None else unknown
    if msg.src1_length is not None:
        src1_length = msg.src1_length
    elif msg.exdesc_a0 is not None:
        src1_length = unknown
    else:
        src1_length = msg.exdesc >> 6 & 0x1F
    if type(src0) is Reg:
        reads = reads | _rows(src0, mlen, grf)
    if type(src1) is Reg:
        reads = reads | _rows(src1, src1_length, grf)
    rlen = msg.response_length if msg.response_length is not None else unknown
    writes = _rows(inst.dst, rlen, grf) if inst.dst is not None else EMPTY
    return reads, writes


def _dpas_footprints(inst: Instruction, grf: int) -> tuple[Footprint, Footprint]:
    """dpas blocks (IGA's getDPASSrcDepUpBound): src0/dst repeat_count rows of exec_size
    elements, src1 (B) exec_size dwords per systolic step, src2 (A) 32-byte rows (dpasw: the
    thread's own ceil(repeat_count/2) of them)."""
    size, rows, depth = inst.exec_size, inst.repeat_count, inst.systolic_depth
    dst, src0, src1, src2 = inst.dst, *inst.srcs[:3]

    def block(reg: Operand | None, nbytes: int) -> Footprint:
        if type(reg) is not Reg or reg.file != "r":
            return EMPTY
        start = reg.number * grf + reg.subreg * T.TYPES[reg.type].bits // 8
        return _file_span(0, grf, start, nbytes)

    reads = block(src0, size * T.type_bytes(src0.type) * rows) if type(src0) is Reg else EMPTY
    reads = reads | block(src1, size * 4 * depth) | block(src2, (inst.own_a_rows - 1) * 32 + depth * 4)
    return reads, block(dst, size * T.type_bytes(dst.type) * rows) if dst is not None else EMPTY


def _flag_bytes(flag, inst: Instruction, whole: bool) -> Footprint:
    if whole:
        return _span(FLAG_UNIT, flag.reg * 4, 4)
    start = flag.reg * 4 + flag.subreg * 2 + inst.channel_offset // 8
    length = max(1, -(-inst.exec_size // 8))
    start = min(start, 15)
    return _span(FLAG_UNIT, start, min(length, 16 - start))


def _flag_reads(inst: Instruction) -> Footprint:
    out = EMPTY
    if inst.predicate is not None:
        out = _flag_bytes(inst.predicate.flag, inst, whole=bool(inst.predicate.mode))
    if inst.cond_modifier is not None and inst.opcode == "sel":
        out = out | _flag_bytes(inst.cond_modifier.flag, inst, whole=False)
    return out


def _flag_writes(inst: Instruction) -> Footprint:
    modifier = inst.cond_modifier
    if modifier is None or inst.opcode == "sel" or inst.info.format == T.MATH:
        return EMPTY
    return _flag_bytes(modifier.flag, inst, whole=False)  # csel included, as IGA counts it


def _implicit_accumulator(inst: Instruction, reads: Footprint, writes: Footprint) -> tuple[Footprint, Footprint]:
    acc01 = _units(ACC_UNIT, 2)
    if inst.opcode in ("mac", "mach", "macl"):
        reads = reads | acc01
    if inst.opcode in ("addc", "subb", "mach", "macl") or ("AccWrEn" in inst.options and not inst.is_branch):
        writes = writes | acc01
    return reads, writes
