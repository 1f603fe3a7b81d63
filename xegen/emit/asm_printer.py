"""Print instructions and kernels in IGA's assembly syntax, as `iga64 -d` does.

Columns follow iga64's layout (predicate 7, opcode and exec size 13, flag modifier 10,
destination 12, sources 16 wide) so listings line up the same way; the tests compare token
streams, and iga64's end-of-line message comments (`// wr:1+0, rd:2; ...`) are not
reproduced.
"""

from __future__ import annotations

from collections.abc import Iterable

from .. import hw as hwlib
from ..errors import EncodeError
from . import tables as T
from .bfn_table import BFN_EXPRESSIONS
from .decoder import decode_with_sizes
from .floats import format_float
from .instruction import Imm, Instruction, Operand, Reg, SendDescriptor
from .layout import Layout, layout_for

# Register file of virtual registers (v12.3:f): printed in lowering listings before allocation, never encoded.
VIRTUAL_FILE = "v"

# IGA's column widths.
_PRED_COLUMN = 7
_OPCODE_COLUMN = 13
_FLAG_COLUMN = 10
_DST_COLUMN = 12
_SRC_COLUMN = 16
_SEND_DST_COLUMN = 8
_SEND_SRC_COLUMN = 6
_SEND_DESC_COLUMN = 12

# Ops whose mnemonic carries no "(size|Mn)": their execution size is implicit.
_IMPLICIT_EXEC_SIZE = frozenset({"sync", "nop", "illegal", "jmpi"})
# Ops with no destination operand in the syntax.
_NO_DESTINATION_FORMATS = frozenset({T.SYNC, T.NULLARY, T.JUMP, T.JIP_UIP, T.JIP_ONLY, T.RET})


def label_name(pc: int) -> str:
    """IGA's default label for a byte address: L64, or L_N16 for -16."""
    return f"L{pc}" if pc >= 0 else f"L_N{-pc}"


def format_instruction(inst: Instruction, hw: str | hwlib.Platform, pc: int = 0) -> str:
    """One line of IGA syntax for `inst` located at byte address `pc`."""
    return _Printer(layout_for(hwlib.platform(hw))).instruction(inst, pc)


def _default_text_form(inst: Instruction) -> str:
    return format_instruction(inst, hwlib.DEFAULT)


Instruction.text_form = _default_text_form  # str() of an instruction (instruction.py)


def disassemble(data: bytes, hw: str | hwlib.Platform, pcs: bool = False) -> str:
    """The listing `iga64 -d` prints for kernel bytes; with `pcs`, each instruction is
    prefixed by its byte address (`/* [0010] */`, like iga64 -Xprint-pc)."""
    instructions, sizes = decode_with_sizes(data, hw)
    return format_kernel(instructions, hw, pcs=pcs, sizes=sizes)


def format_kernel(
    instructions: Iterable[Instruction], hw: str | hwlib.Platform, pcs: bool = False, sizes: Iterable[int] | None = None
) -> str:
    """A listing with IGA's block labels (`L<pc>:`); `sizes` are the byte sizes of the
    instructions (16 unless they were compacted)."""
    insts = list(instructions)
    size_list = list(sizes) if sizes is not None else [16] * len(insts)
    addresses = []
    pc = 0
    for size in size_list:
        addresses.append(pc)
        pc += size
    end = pc
    starts = block_starts(insts, addresses, size_list, end)
    printer = _Printer(layout_for(hwlib.platform(hw)))
    lines = []
    for inst, address in zip(insts, addresses, strict=True):
        if address in starts:
            lines.append(f"{label_name(address)}:")
        text = printer.instruction(inst, address)
        lines.append(f"/* [{address:04X}] */ {text}" if pcs else text)
    if end in starts and end != 0:
        lines.append(f"{label_name(end)}:")
    return "\n".join(lines) + "\n"


def block_starts(insts: list[Instruction], addresses: list[int], sizes: list[int], end: int) -> set[int]:
    """Addresses IGA labels: the entry, every branch target inside the kernel, and the
    instruction after every branch or end-of-thread send."""
    starts = {0}
    for inst, address, size in zip(insts, addresses, sizes, strict=True):
        info = T.OPCODES[inst.opcode]
        if info.format in T.BRANCH_FORMATS or (info.format == T.SEND and "EOT" in inst.options):
            starts.add(address + size)
            for offset in (inst.jip, inst.uip):
                if offset is None:
                    continue
                target = offset if info.format == T.CALLA else address + offset
                if 0 <= target <= end:
                    starts.add(target)
    return starts


class _Printer:
    def __init__(self, layout: Layout):
        self.layout = layout
        self.platform = layout.platform

    # -- whole line ---------------------------------------------------------------------

    def instruction(self, inst: Instruction, pc: int) -> str:
        info = _check_printable(inst)
        fmt = info.format
        out = [
            self._mask_and_predicate(inst).ljust(_PRED_COLUMN),
            " ",
            self._mnemonic(inst, info).ljust(_OPCODE_COLUMN),
            " ",
        ]
        flag = ""
        if inst.cond_modifier is not None and fmt != T.SEND:
            flag = str(inst.cond_modifier)
        out.append(flag.ljust(_FLAG_COLUMN))
        operands = self._operands(inst, info, pc)
        options = self._options(inst)
        if operands:
            out.append("  ")
            out.append("  ".join(operands))
        if options:
            out.append(" " + options)
        return "".join(out).rstrip()

    def _mask_and_predicate(self, inst: Instruction) -> str:
        pred = inst.predicate
        if not inst.no_mask and pred is None:
            return ""
        text = "(W" if inst.no_mask else "("
        if pred is not None:
            text += ("&" if inst.no_mask else "") + str(pred)
        return text + ")"

    def _mnemonic(self, inst: Instruction, info: T.OpcodeInfo) -> str:
        name = inst.opcode
        fmt = info.format
        if fmt in (T.MATH, T.SYNC):
            name += f".{inst.function}"
        elif fmt == T.SEND:
            name += f".{inst.send.sfid}" if inst.send is not None else ""
        elif inst.opcode == "bfn":
            assert isinstance(inst.function, int)  # _check_printable
            name += f".({BFN_EXPRESSIONS[inst.function]})"
        elif fmt == T.DPAS:
            name += f".{inst.systolic_depth}x{inst.repeat_count}"
        elif inst.branch_control:
            name += ".b"
        if inst.opcode in _IMPLICIT_EXEC_SIZE:
            return name
        return f"{name} ({inst.exec_size}|M{inst.channel_offset})"

    def _options(self, inst: Instruction) -> str:
        parts = list(inst.options)
        if not inst.swsb.empty:
            parts.append(str(inst.swsb))
        return "{" + ",".join(parts) + "}" if parts else ""

    # -- operands -----------------------------------------------------------------------

    def _operands(self, inst: Instruction, info: T.OpcodeInfo, pc: int) -> list[str]:
        fmt = info.format
        if fmt == T.SEND:
            return self._send_operands(inst)
        if fmt == T.NULLARY:
            return []
        out: list[str] = []
        if fmt in (T.JUMP, T.JIP_UIP, T.JIP_ONLY, T.CALL, T.CALLA, T.RET):
            return self._branch_operands(inst, fmt, pc)
        if fmt == T.SYNC:
            return [self._sync_source(inst)]
        macro = (fmt == T.MATH and inst.function in T.MATH_MACROS) or inst.opcode == "madm"
        dst = inst.dst
        if dst is not None:
            out.append(self._dst(dst, fmt, macro, inst.saturate).ljust(_DST_COLUMN))
        for index, src in enumerate(inst.srcs):
            text = self._source(inst, info, index, src, macro)
            out.append(text.ljust(_SRC_COLUMN) if index < len(inst.srcs) - 1 or len(inst.srcs) == 1 else text)
        return out

    def _register_name(self, reg: Reg, show_subreg: bool) -> str:
        if reg.file in ("r", VIRTUAL_FILE):
            name = f"{reg.file}{reg.number}"
            has_subregs = True
        else:
            cls = T.ARF_CLASSES[reg.file]
            name = reg.file + (str(reg.number) if reg.number or cls.numbered else "")
            has_subregs = cls.has_subregisters
        if reg.mme is not None:
            return name + (".nomme" if reg.mme == T.MME_NONE else f".mme{reg.mme}")
        if (show_subreg and has_subregs) or reg.subreg:
            name += f".{reg.subreg}"
        return name

    def _indirect(self, reg: Reg) -> str:
        offset = f",{reg.addr_offset}" if reg.addr_offset else ""
        return f"r[a0.{reg.addr_subreg}{offset}]"

    def _dst(self, dst: Reg, fmt: str, macro: bool, saturate: bool) -> str:
        if fmt == T.DPAS:
            return f"{self._register_name(dst, False)}:{dst.type}"
        sat = "(sat)" if saturate else ""
        if dst.indirect:
            text = self._indirect(dst)
        else:
            text = self._register_name(dst, not macro)
        if macro:
            return f"{sat}{text}:{dst.type}"
        return f"{sat}{text}<{dst.hstride}>:{dst.type}"

    def _modifier(self, info: T.OpcodeInfo, src: Reg) -> str:
        if info.bitwise and src.neg and not src.abs:
            return "~"  # logic ops: the negate bit is a bitwise NOT (iga64 keeps "-(abs)")
        return ("-" if src.neg else "") + ("(abs)" if src.abs else "")

    def _source(self, inst: Instruction, info: T.OpcodeInfo, index: int, src, macro: bool) -> str:
        if type(src) is Imm:
            return self._immediate(src)
        fmt = info.format
        mod = self._modifier(info, src)
        if fmt == T.DPAS:
            return f"{self._register_name(src, index == 2)}:{src.type}"
        if src.indirect:
            text = self._indirect(src)
        else:
            text = self._register_name(src, not macro)
        if macro:
            return f"{mod}{text}:{src.type}"
        if fmt == T.TERNARY:
            region = f"<{src.hstride}>" if index == 2 else f"<{src.vstride};{src.hstride}>"
        elif src.vstride is None:
            region = f"<{src.width},{src.hstride}>"
        else:
            region = f"<{src.vstride};{src.width},{src.hstride}>"
        return f"{mod}{text}{region}:{src.type}"

    def _immediate(self, value: Imm) -> str:
        return f"{format_immediate(value)}:{value.type}"

    def _sync_source(self, inst: Instruction) -> str:
        src = inst.srcs[0]
        if type(src) is Imm:
            if inst.function in ("allrd", "allwr"):
                return "(" + ",".join(f"${i}" for i in range(32) if src.value >> i & 1) + ")"
            return f"0x{src.value:X}"
        return "null"

    def _branch_operands(self, inst: Instruction, fmt: str, pc: int) -> list[str]:
        out = []
        if fmt in (T.CALL, T.CALLA):
            out.append(self._register_name(_checked_register(inst.dst), True).ljust(_DST_COLUMN))
        if inst.srcs:
            out.append(self._register_name(_checked_register(inst.srcs[0]), True))
            return out
        jip = inst.jip
        assert jip is not None  # _check_printable
        if fmt == T.CALLA:
            out.append(label_name(jip).ljust(_SRC_COLUMN))
            return out
        if fmt not in (T.CALL,):
            out.append(" " * _DST_COLUMN)
        out.append(label_name(pc + jip).ljust(_SRC_COLUMN))
        if fmt == T.JIP_UIP:
            assert inst.uip is not None  # _check_printable
            out.append(label_name(pc + inst.uip).ljust(_SRC_COLUMN))
        return out

    def _send_operands(self, inst: Instruction) -> list[str]:
        msg = inst.send
        assert msg is not None  # _check_printable
        dst = self._register_name(_checked_register(inst.dst), False)
        src0 = self._register_name(_checked_register(inst.srcs[0]), False)
        src1 = self._register_name(_checked_register(inst.srcs[1]), False)
        if msg.src1_length is not None:
            src1 += f":{msg.src1_length}"
        exdesc = f"a0.{msg.exdesc_a0}" if msg.exdesc_a0 is not None else f"0x{msg.exdesc:X}"
        desc = "a0.0" if msg.desc_in_a0 else f"0x{msg.desc:08X}"
        return [
            dst.ljust(_SEND_DST_COLUMN),
            src0.ljust(_SEND_SRC_COLUMN),
            src1.ljust(_SEND_SRC_COLUMN),
            exdesc.ljust(_SEND_DESC_COLUMN),
            desc.ljust(_SEND_DESC_COLUMN),
        ]


_SOURCE_COUNTS = {
    T.UNARY: (1,),
    T.BINARY: (2,),
    T.TERNARY: (3,),
    T.DPAS: (3,),
    T.SEND: (2,),
    T.SYNC: (1,),
    T.NULLARY: (0,),
    T.JUMP: (0, 1),
    T.JIP_UIP: (0,),
    T.JIP_ONLY: (0,),
    T.CALL: (0, 1),
    T.CALLA: (0, 1),
    T.RET: (1,),
}
_WITH_DESTINATION = frozenset({T.UNARY, T.BINARY, T.MATH, T.TERNARY, T.DPAS, T.SEND, T.CALL, T.CALLA})


def _checked_register(operand: Operand | None) -> Reg:
    """A send or branch operand, which `_check_printable` has checked is a register."""
    assert type(operand) is Reg
    return operand


def _check_printable(inst: Instruction) -> T.OpcodeInfo:
    """The opcode's description, after checking the fields the text needs are well formed
    (hand-built instructions can hold anything)."""
    info = T.OPCODES.get(inst.opcode)
    if info is None:
        raise EncodeError(f"unknown opcode '{inst.opcode}'")

    def bad(field: str, message: str) -> EncodeError:
        return EncodeError(f"{inst.opcode}: {field}: {message}")

    fmt = info.format
    if fmt == T.MATH and inst.function not in T.MATH_FUNCTIONS:
        raise bad("function", f"unknown math function {inst.function!r}")
    if fmt == T.SYNC and inst.function not in T.SYNC_FUNCTIONS:
        raise bad("function", f"unknown sync function {inst.function!r}")
    if inst.opcode == "bfn" and not (isinstance(inst.function, int) and 0 <= inst.function <= 0xFF):
        raise bad("function", "bfn needs an 8-bit truth table")
    if fmt == T.SEND and (not isinstance(inst.send, SendDescriptor) or inst.dst is None or len(inst.srcs) != 2):
        raise bad("operands", "a send needs dst, src0, src1 and a SendDescriptor")
    if fmt in (T.JIP_UIP, T.JIP_ONLY) and (inst.jip is None or (fmt == T.JIP_UIP and inst.uip is None)):
        raise bad("jip", "missing branch target")
    if fmt in (T.JUMP, T.CALL, T.CALLA) and inst.jip is None and not inst.srcs:
        raise bad("jip", "missing branch target")
    if fmt in (T.CALL, T.CALLA) and not isinstance(inst.dst, Reg):
        raise bad("dst", "call needs a register for the return address")
    sources = _SOURCE_COUNTS.get(fmt)
    if fmt == T.MATH:
        sources = (2,) if inst.function in T.MATH_TWO_SOURCES else (1,)
    if sources is not None and len(inst.srcs) not in sources:
        raise bad("operands", f"expected {' or '.join(map(str, sources))} source(s), got {len(inst.srcs)}")
    if fmt in _WITH_DESTINATION and inst.dst is None:
        raise bad("dst", "missing destination")
    registers_only = fmt in T.BRANCH_FORMATS or fmt == T.SEND
    for operand in ((inst.dst,) if inst.dst is not None else ()) + tuple(inst.srcs):
        if registers_only and not isinstance(operand, Reg):
            raise bad("operands", f"{operand!r} is not a register")
        if not isinstance(operand, (Reg, Imm)) or operand.type not in T.TYPES:
            raise bad("operands", f"{operand!r} is not a register or immediate with a known type")
        if isinstance(operand, Reg) and operand.file not in ("r", VIRTUAL_FILE) and operand.file not in T.ARF_CLASSES:
            raise bad("operands", f"unknown register file '{operand.file}'")
    return info


def format_immediate(value: Imm) -> str:
    """The value part of an immediate as iga64 prints it (no type suffix)."""
    t = value.type
    if t in ("b", "w", "d", "q"):
        return str(value.signed_value)
    if t in ("hf", "f", "df"):
        return format_float(value.value, t)
    if t == "tf32":
        return format_float(value.value, "f")
    return f"0x{value.value:X}"
