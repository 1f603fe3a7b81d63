"""A kernel under construction: instructions on virtual registers, with labels.

`Program` is a list of `Op`s (one `xegen.emit.Instruction` each, operands on virtual
registers) and `Label`s.  Each `Op` knows which bytes of which virtual registers it reads and
writes, so liveness (`liveness.py`) never has to look at instruction formats again.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..emit import tables as T
from ..emit.asm_printer import format_instruction
from ..emit.instruction import Instruction, Reg
from ..emit.regions import three_source_region
from .values import TYPE_BYTES, VIRTUAL


@dataclass(frozen=True)
class Label:
    name: str


@dataclass(frozen=True)
class Span:
    """Bytes [start, end) of virtual register `reg` (an id)."""

    reg: int
    start: int
    end: int


@dataclass
class Op:
    """One instruction on virtual registers.

    `target` names the label a `jmpi` goes to.  `reads`/`writes` are filled from the operands;
    `kills` are the bytes whose previous value this instruction replaces (it writes each of
    them, unconditionally), which ends their liveness going backwards.  `sinkable`: a move out
    of a message's temporary, which `sink.py` may place later."""

    inst: Instruction | None  # None: a marker that only ends liveness (`kills`), never emitted
    target: str | None = None
    reads: tuple[Span, ...] = ()
    writes: tuple[Span, ...] = ()
    kills: tuple[Span, ...] = ()
    sinkable: bool = False


Item = Op | Label


# --- operand footprints -------------------------------------------------------------------------


def _elements(exec_size: int, vstride: int, width: int, hstride: int) -> int:
    """Index of the last element a <v;w,h> region touches, plus one."""
    width = max(1, min(width, exec_size))
    rows = -(-exec_size // width)
    return (rows - 1) * vstride + (width - 1) * hstride + 1


def _span(reg: Reg, count_bytes: int) -> Span:
    start = reg.subreg * TYPE_BYTES.get(reg.type, 4)
    return Span(reg.number, start, start + count_bytes)


def _source_span(inst: Instruction, reg: Reg, index: int, fmt: str) -> Span:
    size = TYPE_BYTES[reg.type]
    if fmt == T.TERNARY:
        v, w, h = three_source_region(reg, index)
    else:
        v, w, h = reg.vstride or 0, reg.width or 1, reg.hstride or 0
    return _span(reg, _elements(inst.exec_size, v, w, h) * size)


def _dpas_spans(inst: Instruction) -> tuple[list[Span], list[Span]]:
    dst, src0, src1, src2 = inst.dst, *inst.srcs
    assert dst is not None and isinstance(src0, Reg) and isinstance(src1, Reg) and isinstance(src2, Reg)
    rows, columns, depth = inst.repeat_count, inst.exec_size, inst.systolic_depth
    reads, writes = [], []
    if dst.file == VIRTUAL:
        writes.append(_span(dst, rows * columns * TYPE_BYTES[dst.type]))
    if src0.file == VIRTUAL:
        reads.append(_span(src0, rows * columns * TYPE_BYTES[src0.type]))
    if src1.file == VIRTUAL:
        reads.append(_span(src1, depth * columns * 4))
    if src2.file == VIRTUAL:
        reads.append(_span(src2, inst.own_a_rows * depth * 4))
    return reads, writes


def send_lengths(inst: Instruction) -> tuple[int, int, int]:
    """(src0 GRFs, src1 GRFs, dst GRFs) of a send with immediate descriptors."""
    desc = inst.send
    assert desc is not None
    src1 = desc.src1_length if desc.src1_length is not None else (desc.exdesc >> 6) & 0x1F
    return desc.message_length or 0, src1, desc.response_length or 0


def footprint(inst: Instruction, grf_bytes: int) -> tuple[tuple[Span, ...], tuple[Span, ...], tuple[Span, ...]]:
    """(reads, writes, kills) of an instruction's virtual operands."""
    fmt = T.OPCODES[inst.opcode].format
    reads: list[Span] = []
    writes: list[Span] = []
    kills: list[Span] = []
    if fmt == T.SEND:
        src0_len, src1_len, dst_len = send_lengths(inst)
        src0, src1 = inst.srcs[0], inst.srcs[1] if len(inst.srcs) > 1 else None
        if isinstance(src0, Reg) and src0.file == VIRTUAL:
            reads.append(_span(src0, src0_len * grf_bytes))
        if isinstance(src1, Reg) and src1.file == VIRTUAL and src1_len:
            reads.append(_span(src1, src1_len * grf_bytes))
        if inst.dst is not None and inst.dst.file == VIRTUAL and dst_len:
            writes.append(_span(inst.dst, dst_len * grf_bytes))
        return tuple(reads), tuple(writes), ()
    if fmt == T.DPAS:
        r, w = _dpas_spans(inst)
        return tuple(r), tuple(w), tuple(w)
    for index, src in enumerate(inst.srcs):
        if isinstance(src, Reg) and src.file == VIRTUAL:
            reads.append(_source_span(inst, src, index, fmt))
    dst = inst.dst
    if dst is not None and dst.file == VIRTUAL:
        size = TYPE_BYTES[dst.type]
        h = dst.hstride or 1
        span = _span(dst, ((inst.exec_size - 1) * h + 1) * size)
        writes.append(span)
        unconditional = inst.predicate is None or inst.opcode == "sel"
        if unconditional and (h == 1 or inst.exec_size == 1):
            kills.append(span)
    return tuple(reads), tuple(writes), tuple(kills)


class Program:
    """Items in order, plus the virtual registers they use."""

    def __init__(self, vregs):
        self.vregs = vregs
        self.items: list[Item] = []
        self._labels = 0

    def new_label(self, hint: str) -> str:
        self._labels += 1
        return f"{hint}_{self._labels}"

    def label(self, name: str) -> None:
        self.items.append(Label(name))

    def add(self, inst: Instruction, target: str | None = None, kills: tuple[Span, ...] | None = None) -> Op:
        """Append an instruction; `kills` overrides which bytes it overwrites entirely (what a
        message response fills)."""
        reads, writes, full = footprint(inst, self.vregs.grf_bytes)
        if kills is not None:
            full = kills
        op = Op(inst, target, reads, writes, full)
        self.items.append(op)
        return op

    def kill(self, reg) -> None:
        """A marker: `reg`'s old contents are dead here (a buffer's scope begins)."""
        self.items.append(Op(None, kills=(Span(reg.id, 0, max(reg.reserved, reg.size)),)))

    @property
    def ops(self) -> list[Op]:
        return [item for item in self.items if isinstance(item, Op)]

    def listing(self, hw) -> str:
        """The program in IGA syntax on virtual registers (`v7.2:f`), jumps to named labels."""
        lines = []
        for item in self.items:
            if isinstance(item, Label):
                lines.append(f"{item.name}:")
            elif item.inst is not None:
                text = format_instruction(item.inst, hw)
                lines.append(f"        {text}" + (f"  // -> {item.target}" if item.target else ""))
        return "\n".join(lines) + "\n"
