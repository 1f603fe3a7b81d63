"""Parse IGA assembly text into `Instruction`s (what iga64 accepts for the covered forms).

    parse_asm(text, hw) -> list[Instruction]
    assemble(text, hw)  -> bytes           (16-byte forms, 8 bytes where an instruction says {Compacted})

Labels are `NAME:` definitions; branch operands name them.  An undefined label of IGA's
default form (`L64`, `L_N16`) stands for that byte address, so any listing we print reads
back.  Comments are `//` to the end of the line and `/* ... */`.  Errors raise `ParseError`
with the line and column.
"""

from __future__ import annotations

import re
from dataclasses import replace

from .. import hw as hwlib
from ..errors import EncodeError, ParseError
from . import tables as T
from .encoder import encode_kernel
from .floats import float_to_bits, parse_nan
from .instruction import NO_SWSB, CondModifier, Flag, Imm, Instruction, Predicate, Reg, SendDescriptor, Swsb
from .layout import Layout, layout_for

#: the most instructions a listing may have (1 MiB of code, a few times the largest kernels IGC or
#: xegen emit): a bound on the time an assembly takes (about 0.1 ms a line on one core)
MAX_INSTRUCTIONS = 65_536

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"[+-]?(0[xX][0-9A-Fa-f]+|(\d+\.?\d*([eE][+-]?\d+)?)|(\.\d+([eE][+-]?\d+)?))")
_DEFAULT_LABEL = re.compile(r"L(_N)?(\d+)$")
_FLAG = re.compile(r"f(\d+)\.(\d+)")
_BFN_HEX = re.compile(r"0[xX][0-9A-Fa-f]{1,2}$")
_SPACES = re.compile(r"[ \t\r]*")
_INTEGER = re.compile(r"[+-]?(0[xX][0-9A-Fa-f]+|\d+)")
_SUBFUNCTION = re.compile(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*")
_SPECIAL_FLOAT = re.compile(r"-?(inf|qnan\(0[xX][0-9A-Fa-f]+\)|snan\(0[xX][0-9A-Fa-f]+\))")
_REGISTER_NAME = re.compile(r"([a-z]+?)(\d*)")
_OPTION = re.compile(r"[A-Za-z]*@\d+|\$\d+(\.[A-Za-z]+)?|[A-Za-z]+")
_GRF_NAME = re.compile(r"r\d+")


def parse_asm(text: str, hw: str | hwlib.Platform) -> list[Instruction]:
    """Every instruction of an assembly listing, with label references resolved."""
    return _Assembler(layout_for(hwlib.platform(hw)), text).run()


def assemble(text: str, hw: str | hwlib.Platform) -> bytes:
    """Assemble a listing: 16-byte forms, and 8-byte ones for instructions marked {Compacted}."""
    platform = hwlib.platform(hw)
    parser = _Assembler(layout_for(platform), text)
    instructions = parser.run()
    out = bytearray()
    for inst, (line, column) in zip(instructions, parser.locations, strict=True):
        try:
            out += encode_kernel([inst], platform)
        except EncodeError as error:
            raise ParseError(str(error), text, line, column) from None
    return bytes(out)


def parse_instruction(text: str, hw: str | hwlib.Platform, pc: int = 0) -> Instruction:
    """One instruction (no label definitions); branch labels are relative to `pc`."""
    instructions = _Assembler(layout_for(hwlib.platform(hw)), text, base_pc=pc).run()
    if len(instructions) != 1:
        raise ParseError(f"expected one instruction, found {len(instructions)}", text, 1, 1)
    return instructions[0]


class _Pending:
    """A branch whose label operands are resolved once every label is known."""

    __slots__ = ("index", "jip", "uip", "line", "column")

    def __init__(self, index, jip, uip, line, column):
        self.index, self.jip, self.uip, self.line, self.column = index, jip, uip, line, column


class _Assembler:
    def __init__(self, layout: Layout, text: str, base_pc: int = 0):
        self.layout = layout
        self.platform = layout.platform
        self.text = text
        self.base_pc = base_pc
        self.labels: dict[str, int] = {}
        self.instructions: list[Instruction] = []
        self.pcs: list[int] = []  # byte address of each instruction (compacted ones take 8 bytes)
        self.next_pc = base_pc
        self.locations: list[tuple[int, int]] = []
        self.pending: list[_Pending] = []

    def run(self) -> list[Instruction]:
        in_block_comment = False
        comment_start = (1, 1)
        for number, raw in enumerate(self.text.split("\n"), start=1):
            was_in_comment = in_block_comment
            line, in_block_comment = _strip_comments(raw, in_block_comment)
            if in_block_comment and not was_in_comment:
                comment_start = (number, raw.rfind("/*") + 1)
            _Line(self, line, number).parse()
            if len(self.instructions) > MAX_INSTRUCTIONS:
                raise ParseError(
                    f"more than {MAX_INSTRUCTIONS} instructions; the assembler takes at most that many",
                    self.text,
                    number,
                    1,
                )
        if in_block_comment:
            raise ParseError("unterminated /* comment", self.text, *comment_start)
        self._resolve()
        return self.instructions

    def pc_of(self, index: int) -> int:
        return self.pcs[index] if index < len(self.pcs) else self.next_pc

    def append(self, inst: Instruction) -> None:
        self.instructions.append(inst)
        self.pcs.append(self.next_pc)
        self.next_pc += 8 if "Compacted" in inst.options else 16

    def define_label(self, name: str, line: int, column: int) -> None:
        if name in self.labels:
            raise ParseError(f"label '{name}' is defined twice", self.text, line, column)
        self.labels[name] = self.pc_of(len(self.instructions))

    def _target(self, name: str | int, line: int, column: int) -> int:
        if isinstance(name, int):
            return name
        if name in self.labels:
            return self.labels[name]
        match = _DEFAULT_LABEL.match(name)
        if match:
            value = int(match.group(2))
            return -value if match.group(1) else value
        raise ParseError(f"undefined label '{name}'", self.text, line, column)

    def _resolve(self) -> None:
        for p in self.pending:
            inst = self.instructions[p.index]
            pc = self.pc_of(p.index)
            absolute = T.OPCODES[inst.opcode].format == T.CALLA
            changes = {}
            if p.jip is not None:
                target = self._target(p.jip, p.line, p.column)
                changes["jip"] = target if absolute else target - pc
            if p.uip is not None:
                changes["uip"] = self._target(p.uip, p.line, p.column) - pc
            self.instructions[p.index] = replace(inst, **changes)


def _strip_comments(line: str, in_block: bool) -> tuple[str, bool]:
    """Blank out comments, keeping columns where they were."""
    if not in_block and "/" not in line:
        return line, False
    out = []
    i = 0
    while i < len(line):
        if in_block:
            end = line.find("*/", i)
            if end < 0:
                out.append(" " * (len(line) - i))
                return "".join(out), True
            out.append(" " * (end + 2 - i))
            i = end + 2
            in_block = False
            continue
        slash = line.find("/", i)
        if slash < 0:
            out.append(line[i:])
            break
        out.append(line[i:slash])
        i = slash
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            in_block = True
            continue
        out.append("/")
        i += 1
    return "".join(out), in_block


class _Line:
    """Parser state for one source line."""

    def __init__(self, asm: _Assembler, text: str, number: int):
        self.asm = asm
        self.layout = asm.layout
        self.text = text
        self.number = number
        self.pos = 0

    # -- scanning helpers ---------------------------------------------------------------

    def error(self, message: str, pos: int | None = None) -> ParseError:
        return ParseError(message, self.asm.text, self.number, (self.pos if pos is None else pos) + 1)

    def skip(self) -> None:
        text, pos = self.text, self.pos
        if pos < len(text) and text[pos] in " \t\r":
            spaces = _SPACES.match(text, pos)
            assert spaces is not None  # the pattern matches the empty string
            self.pos = spaces.end()

    def peek(self, s: str) -> bool:
        self.skip()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, what: str | None = None) -> None:
        if not self.accept(s):
            found = self.text[self.pos : self.pos + 12].strip() or "end of line"
            raise self.error(f"expected '{s}'{' ' + what if what else ''}, found '{found}'")

    def ident(self, what: str) -> str:
        self.skip()
        m = _IDENT.match(self.text, self.pos)
        if not m:
            found = self.text[self.pos : self.pos + 12].strip() or "end of line"
            raise self.error(f"expected {what}, found '{found}'")
        self.pos = m.end()
        return m.group(0)

    def integer(self, what: str) -> int:
        self.skip()
        m = _INTEGER.match(self.text, self.pos)
        if not m:
            raise self.error(f"expected {what}")
        self.pos = m.end()
        return _to_int(m.group(0))

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)

    # -- line ---------------------------------------------------------------------------

    def parse(self) -> None:
        if self.at_end():
            return
        # label definitions: NAME ':'
        while True:
            self.skip()
            m = _IDENT.match(self.text, self.pos)
            if m and self.text[m.end() : m.end() + 1] == ":":
                self.asm.define_label(m.group(0), self.number, self.pos + 1)
                self.pos = m.end() + 1
                if self.at_end():
                    return
                continue
            break
        start = self.pos
        inst, jip, uip = self.instruction()
        if not self.at_end():
            raise self.error(f"unexpected '{self.text[self.pos :].strip()[:16]}' at the end of the instruction")
        index = len(self.asm.instructions)
        self.asm.append(inst)
        self.asm.locations.append((self.number, start + 1))
        if jip is not None or uip is not None:
            self.asm.pending.append(_Pending(index, jip, uip, self.number, start + 1))

    def instruction(self):
        self.skip()
        predicate_pos = self.pos
        no_mask, predicate = self.predication()
        self.skip()
        mnemonic_pos = self.pos
        opcode, sub = self.mnemonic()
        info = T.OPCODES.get(opcode)
        if info is None:
            raise self.error(f"unknown mnemonic '{opcode}'", mnemonic_pos)
        if not T.opcode_available(info, self.asm.platform):
            raise self.error(f"'{opcode}' does not exist on {self.asm.platform.display_name}", mnemonic_pos)
        if predicate is not None and not info.predication:
            raise self.error(f"'{opcode}' cannot be predicated", predicate_pos)
        fields: dict = {}
        self.subfunction(info, sub, fields, mnemonic_pos)
        exec_size, channel_offset = 1, 0
        if self.peek("("):
            save = self.pos
            self.pos += 1
            if self.peek_digit():
                exec_size, channel_offset = self.exec_info(save)
            else:
                self.pos = save
        elif opcode not in ("sync", "nop", "illegal", "jmpi"):
            raise self.error(f"expected '(size|Mn)' after '{opcode}'")
        cond = None
        if (
            self.peek("(")
            and not self.peek("(sat)")
            and not self.peek("(abs)")
            and info.format in (T.UNARY, T.BINARY, T.MATH, T.TERNARY)
        ):
            cond = self.cond_modifier()
        fmt = info.format
        jip = uip = None
        if fmt == T.SEND:
            dst, srcs = self.send_operands(fields)
        elif fmt == T.NULLARY:
            dst, srcs = None, ()
        elif fmt == T.SYNC:
            dst, srcs = None, (self.sync_source(sub),)
        elif fmt in T.BRANCH_FORMATS:
            dst, srcs, jip, uip = self.branch_operands(fmt)
        else:
            dst, srcs, fields["saturate"] = self.operands(info, fields, exec_size)
        options, swsb = self.options(fmt)
        if fmt == T.SEND:
            fields, options = self.finish_send(fields, srcs, options)
        if fmt == T.JUMP:
            no_mask = True  # iga64 adds (W) to jmpi
        if fmt == T.MATH and fields.get("function") in T.MATH_MACROS and cond is None:
            cond = CondModifier("eo", predicate.flag if predicate else Flag())
        inst = Instruction(
            opcode,
            exec_size,
            channel_offset,
            dst,
            tuple(srcs),
            predicate,
            no_mask,
            cond,
            swsb=swsb,
            options=tuple(options),
            **fields,
        )
        return inst, jip, uip

    def peek_digit(self) -> bool:
        self.skip()
        return self.pos < len(self.text) and self.text[self.pos].isdigit()

    # -- prefix -------------------------------------------------------------------------

    def predication(self) -> tuple[bool, Predicate | None]:
        if not self.peek("("):
            return False, None
        save = self.pos
        self.pos += 1
        self.skip()
        no_mask = False
        if self.text.startswith("W", self.pos) and not self.text.startswith("W", self.pos + 1):
            no_mask = True
            self.pos += 1
            if self.accept(")"):
                return True, None
            self.expect("&", "between (W and the predicate")
        invert = self.accept("~")
        self.skip()
        m = _FLAG.match(self.text, self.pos)
        if not m:
            if not no_mask and not invert:
                self.pos = save
                return False, None
            raise self.error("expected a flag register like f0.0")
        flag = self.flag_value(m)
        self.pos = m.end()
        mode = ""
        if self.accept("."):
            mode_pos = self.pos
            mode = self.ident("a predicate mode")
            if mode not in self.layout.pred_modes:
                raise self.error(
                    f"predicate mode '.{mode}' does not exist on {self.asm.platform.display_name}", mode_pos
                )
        self.expect(")")
        return no_mask, Predicate(flag, invert, mode)

    def flag_value(self, m: re.Match) -> Flag:
        reg, sub = int(m.group(1)), int(m.group(2))
        if reg >= self.layout.flag_registers or sub > 1:
            raise self.error(f"flag register f{reg}.{sub} does not exist on {self.asm.platform.display_name}")
        return Flag(reg, sub)

    def mnemonic(self) -> tuple[str, str]:
        name = self.ident("an instruction mnemonic")
        sub = ""
        if self.text.startswith(".", self.pos):
            self.pos += 1
            if self.text.startswith("(", self.pos):  # bfn.(expression)
                depth = 0
                start = self.pos
                while self.pos < len(self.text):
                    c = self.text[self.pos]
                    depth += c == "("
                    depth -= c == ")"
                    self.pos += 1
                    if depth == 0:
                        break
                sub = self.text[start : self.pos]
            else:
                m = _SUBFUNCTION.match(self.text, self.pos)
                if not m:
                    raise self.error("expected a subfunction after '.'")
                sub = m.group(0)
                self.pos = m.end()
        return name, sub

    def subfunction(self, info: T.OpcodeInfo, sub: str, fields: dict, pos: int) -> None:
        fmt = info.format
        platform = self.asm.platform
        if fmt == T.MATH:
            if sub not in T.MATH_FUNCTIONS or not T.math_available(sub, platform):
                raise self.error(f"unknown math function '{sub}' on {platform.display_name}", pos)
            fields["function"] = sub
        elif fmt == T.SYNC:
            if sub not in T.SYNC_FUNCTIONS or not T.sync_available(sub, platform):
                raise self.error(f"unknown sync function '{sub}' on {platform.display_name}", pos)
            fields["function"] = sub
        elif fmt == T.SEND:
            if sub not in self.layout.sfids:
                raise self.error(f"unknown shared function '{sub}' on {platform.display_name}", pos)
            fields["sfid"] = sub
        elif info.name == "bfn":
            fields["function"] = self.bfn_function(sub, pos)
        elif fmt == T.DPAS:
            m = re.fullmatch(r"(\d+)x(\d+)", sub)
            if not m:
                raise self.error(f"expected dpas.<depth>x<repeat>, found '.{sub}'", pos)
            fields["systolic_depth"], fields["repeat_count"] = int(m.group(1)), int(m.group(2))
        elif sub == "b" and info.branch_control:
            fields["branch_control"] = True
        elif sub:
            raise self.error(f"'{info.name}' takes no subfunction '.{sub}'", pos)

    def bfn_function(self, sub: str, pos: int) -> int:
        if _BFN_HEX.match(sub):
            return int(sub, 16)
        expression = sub[1:-1] if sub.startswith("(") and sub.endswith(")") else sub
        try:
            return _evaluate_bfn(expression)
        except ValueError as error:
            raise self.error(f"bad bfn function '{sub}': {error}", pos) from None

    def exec_info(self, start: int) -> tuple[int, int]:
        size = self.integer("an execution size")
        if size not in T.EXEC_SIZE_CODES:
            raise self.error(f"execution size {size} is not 1, 2, 4, 8, 16 or 32", start + 1)
        offset = 0
        if self.accept("|"):
            self.skip()
            if not self.text.startswith("M", self.pos):
                raise self.error("expected a channel offset like M0")
            self.pos += 1
            offset = self.integer("a channel offset")
        self.expect(")")
        return size, offset

    def cond_modifier(self) -> CondModifier:
        self.expect("(")
        cond = self.ident("a condition modifier")
        if cond not in T.CONDITION_MODIFIERS:
            raise self.error(f"unknown condition modifier '{cond}'")
        self.expect(")")
        self.skip()
        m = _FLAG.match(self.text, self.pos)
        if not m:
            raise self.error("expected a flag register after the condition modifier")
        flag = self.flag_value(m)
        self.pos = m.end()
        return CondModifier(cond, flag)

    # -- operands -----------------------------------------------------------------------

    def operands(self, info: T.OpcodeInfo, fields: dict, exec_size: int):
        """(dst, srcs, saturate) of an ALU, math, 3-source or dpas instruction."""
        fmt = info.format
        if fmt == T.MATH:
            nsrc = 2 if fields["function"] in T.MATH_TWO_SOURCES else 1
        else:
            nsrc = {T.UNARY: 1, T.BINARY: 2, T.TERNARY: 3, T.DPAS: 3}[fmt]
        saturate = self.accept("(sat)")
        dst = self.register_operand("dst", fmt, info, 0, exec_size)
        srcs = []
        for index in range(nsrc):
            if self.at_end() or self.peek("{"):
                raise self.error(f"'{info.name}' needs {nsrc} source operand(s)")
            srcs.append(self.source(fmt, info, index, exec_size))
        return dst, srcs, saturate

    def source(self, fmt: str, info: T.OpcodeInfo, index: int, exec_size: int):
        self.skip()
        c = self.text[self.pos : self.pos + 1]
        if (
            c.isdigit()
            or c == "."
            or (c in "+-" and self.text[self.pos + 1 : self.pos + 2].isdigit())
            or self.text.startswith(("inf", "-inf", "qnan", "snan", "-qnan", "-snan"), self.pos)
        ):
            return self.immediate()
        return self.register_operand("src", fmt, info, index, exec_size)

    def immediate(self) -> Imm:
        self.skip()
        start = self.pos
        text = self.text
        m = _SPECIAL_FLOAT.match(text, self.pos)
        if m:
            literal = m.group(0)
            self.pos = m.end()
        else:
            m = _NUMBER.match(text, self.pos)
            if not m:
                raise self.error("expected an immediate value")
            literal = m.group(0)
            self.pos = m.end()
        if not self.text.startswith(":", self.pos):
            raise self.error("an immediate needs a type, e.g. 16:d")
        self.pos += 1
        type_pos = self.pos
        type_name = self.ident("a type")
        if type_name not in T.TYPES:
            raise self.error(f"unknown type ':{type_name}'", type_pos)
        try:
            return _immediate_value(literal, type_name)
        except ValueError as error:
            raise self.error(str(error), start) from None

    def register_operand(self, role: str, fmt: str, info: T.OpcodeInfo, index: int, exec_size: int) -> Reg:
        self.skip()
        start = self.pos
        neg = abs_ = False
        if role == "src":
            if self.accept("~") or self.accept("-"):  # iga64 reads both as the negate bit
                neg = True
            if self.accept("(abs)"):
                abs_ = True
        reg = self.register()
        macro_pos = self.pos
        macro = self.macro_suffix(reg)
        if macro is not None and reg[2] is not None:  # iga64 rejects it; dropping it would mislead
            raise self.error("a math macro operand takes no subregister: write rN.mmeM", macro_pos)
        region = self.region()
        type_name = ""
        if self.accept(":"):
            type_pos = self.pos
            type_name = self.ident("a type")
            if type_name not in T.TYPES:
                raise self.error(f"unknown type ':{type_name}'", type_pos)
        else:
            raise self.error(f"operand '{self.text[start : self.pos].strip()}' needs a type like :f", start)
        file, number, subreg, indirect = reg
        kwargs = {}
        if indirect is not None:
            kwargs = {"indirect": True, "addr_subreg": indirect[0], "addr_offset": indirect[1]}
        if macro is not None:
            kwargs["mme"] = macro
        v, w, h = region if region is not None else (None, None, None)
        if fmt == T.DPAS:
            v, w, h = (None, None, 1) if role == "dst" or index == 2 else (1, None, 0)
        elif macro is not None:
            scalar = exec_size == 1
            if role == "dst":
                v, w, h = None, None, 1
            elif fmt == T.TERNARY:
                v, w, h = (None, None, 1) if index == 2 else ((0 if scalar else 1), None, 0)
            else:
                v, w, h = (0 if scalar else 1), 1, 0
        return Reg(file, number, subreg if subreg is not None else 0, type_name, v, w, h, neg, abs_, **kwargs)

    def register(self):
        """(file, number, subreg or None, (a0 subreg, offset) or None)."""
        self.skip()
        start = self.pos
        if self.text.startswith("r[", self.pos):
            self.pos += 2
            self.skip()
            if not self.text.startswith("a0.", self.pos):
                raise self.error("expected a0.N inside r[...]")
            self.pos += 3
            address_subreg = self.integer("an address subregister")
            offset = 0
            if self.accept(","):
                offset = self.integer("an address offset")
            self.expect("]")
            return "r", 0, None, (address_subreg, offset)
        name = self.ident("a register")
        m = _REGISTER_NAME.fullmatch(name)
        if not m:
            raise self.error(f"unknown register '{name}'", start)
        file, digits = m.group(1), m.group(2)
        # mme0..7 and acc8..15 are one register file: name it as iga64 prints it on this platform
        accumulators = T.arf_register_count(T.ARF_CLASSES["acc"], self.asm.platform)
        if file == "acc" and digits and accumulators <= int(digits):
            file, digits = "mme", str(int(digits) - 8)
        elif file == "mme" and 8 + int(digits or 0) < accumulators:
            file, digits = "acc", str(int(digits or 0) + 8)
        if file == "r":
            if not digits:
                raise self.error("expected a register number after 'r'", start)
        elif file not in T.ARF_CLASSES:
            raise self.error(f"unknown register '{name}'", start)
        else:
            cls = T.ARF_CLASSES[file]
            if not T.arf_class_available(cls, self.asm.platform):
                raise self.error(f"register '{file}' does not exist on {self.asm.platform.display_name}", start)
        number = int(digits) if digits else 0
        sub = None
        if self.text.startswith(".", self.pos) and self.text[self.pos + 1 : self.pos + 2].isdigit():
            self.pos += 1
            sub = self.integer("a subregister")
        return file, number, sub, None

    def macro_suffix(self, reg) -> int | None:
        if self.text.startswith(".mme", self.pos):
            self.pos += 4
            value = self.integer("a math macro register")
            if not 0 <= value <= 7:
                raise self.error(f"math macro register mme{value} does not exist")
            return value
        if self.text.startswith(".nomme", self.pos):
            self.pos += 6
            return T.MME_NONE
        return None

    def region(self):
        if not self.text.startswith("<", self.pos):
            return None
        start = self.pos
        self.pos += 1
        first = self.integer("a stride")
        if self.accept(">"):
            return None, None, first
        if self.accept(";"):
            second = self.integer("a width or stride")
            if self.accept(">"):
                return first, None, second
            self.expect(",")
            third = self.integer("a horizontal stride")
            self.expect(">")
            return first, second, third
        if self.accept(","):
            second = self.integer("a horizontal stride")
            self.expect(">")
            return None, first, second  # VxH <w,h>
        raise self.error("malformed region", start)

    # -- sends --------------------------------------------------------------------------

    def send_register(self) -> tuple[Reg, int | None]:
        self.skip()
        start = self.pos
        name = self.ident("a send register")
        if name == "null":
            reg = Reg("null", 0, 0, "ud")
        elif _GRF_NAME.fullmatch(name):
            reg = Reg("r", int(name[1:]), 0, "ud")
        else:
            raise self.error(f"send operands are GRFs or null, not '{name}'", start)
        length = None
        if self.text.startswith(":", self.pos):
            self.pos += 1
            length = self.integer("a length")
        return reg, length

    def descriptor(self, what: str) -> int | tuple[str, int]:
        self.skip()
        if self.text.startswith("a0.", self.pos):
            self.pos += 3
            return "a0", self.integer("an a0 subregister")
        value = self.integer(f"the {what}")
        if not 0 <= value <= 0xFFFFFFFF:
            raise self.error(f"the {what} is a 32-bit value")
        return value

    def send_operands(self, fields: dict):
        dst, _ = self.send_register()
        src0, _ = self.send_register()
        src1, src1_length = self.send_register()
        exdesc = self.descriptor("extended descriptor")
        desc_pos = self.pos
        desc = self.descriptor("descriptor")
        if isinstance(desc, tuple) and desc[1] != 0:
            raise self.error("the descriptor register must be a0.0", desc_pos)
        fields["_send"] = (exdesc, desc, src1_length)
        return dst, [src0, src1]

    def finish_send(self, fields: dict, srcs, options: list[str]):
        exdesc, desc, src1_length = fields.pop("_send")
        sfid = fields.pop("sfid")
        length_in_instruction = T.src1_length_in_instruction(self.asm.platform)
        exdesc_a0 = None
        exdesc_value = 0
        if isinstance(exdesc, tuple):
            exdesc_a0 = exdesc[1]
            if src1_length is not None and length_in_instruction and "ExBSO" not in options:
                options = options + ["ExBSO"]
            if not length_in_instruction:
                src1_length = None
        else:
            exdesc_value = exdesc
            if length_in_instruction:
                implied = (exdesc >> 6) & 0x1F
                if src1_length is None:
                    src1_length = implied
                elif exdesc & 0x7C0 and implied != src1_length:
                    raise self.error("mismatch of the src1 length suffix and ExDesc[10:6]")
                exdesc_value = exdesc & ~0x7FF
            else:
                if src1_length is not None and src1_length != (exdesc >> 6) & 0x1F:
                    raise self.error("mismatch of the src1 length suffix and ExDesc[10:6]")
                src1_length = None
                exdesc_value = exdesc & ~0x3F
        desc_in_a0 = isinstance(desc, tuple)
        fields["send"] = SendDescriptor(
            sfid, 0 if desc_in_a0 else desc, exdesc_value, desc_in_a0, exdesc_a0, src1_length
        )
        return fields, options

    # -- sync and branches --------------------------------------------------------------

    def sync_source(self, function: str):
        self.skip()
        if self.accept("("):
            mask = 0
            if not self.accept(")"):
                while True:
                    self.expect("$", "in a token list")
                    token = self.integer("a token number")
                    if not 0 <= token < 32:
                        raise self.error(f"token ${token} is out of range")
                    mask |= 1 << token
                    if self.accept(")"):
                        break
                    self.expect(",")
            return Imm(mask, "ud")
        if self.peek("null"):
            self.pos += 4
            if self.accept(":"):
                self.ident("a type")
            return Reg("null", 0, 0, "ud", 0, 1, 0)
        value = self.integer("null, a token list or an immediate")
        if self.accept(":"):
            t = self.ident("a type")
            if t != "ud":
                raise self.error("the sync immediate is :ud")
        if not 0 <= value <= 0xFFFFFFFF:
            raise self.error("the sync immediate is a 32-bit value")
        return Imm(value, "ud")

    def branch_register(self) -> Reg:
        file, number, sub, indirect = self.register()
        if indirect is not None:
            raise self.error("branch registers are direct")
        self.region()  # accepted and ignored: a branch register's region is implied
        if self.accept(":"):
            self.ident("a type")
        return Reg(file, number, sub or 0, "d", 0, 1, 0)

    def label_or_register(self):
        self.skip()
        m = _IDENT.match(self.text, self.pos)
        if m and _GRF_NAME.fullmatch(m.group(0)):
            return self.branch_register()
        if m:
            self.pos = m.end()
            return m.group(0)
        value = self.integer("a label")
        return value

    def branch_operands(self, fmt: str):
        dst = None
        srcs = []
        jip = uip = None
        if fmt in (T.CALL, T.CALLA):
            dst = self.branch_register()
        if fmt == T.RET:
            srcs.append(self.branch_register())
            return dst, srcs, None, None
        first = self.label_or_register()
        if isinstance(first, Reg):
            if fmt not in (T.JUMP, T.CALL, T.CALLA):
                raise self.error("this branch takes labels, not registers")
            srcs.append(first)
            return dst, srcs, None, None
        jip = first
        if fmt == T.JIP_UIP:
            if self.at_end() or self.peek("{"):
                uip = jip  # iga64 accepts a single label for both
            else:
                uip = self.label_or_register()
                if isinstance(uip, Reg):
                    raise self.error("expected a label")
        return dst, srcs, jip, uip

    # -- options ------------------------------------------------------------------------

    def options(self, fmt: str) -> tuple[list[str], Swsb]:
        if not self.accept("{"):
            return [], NO_SWSB
        options: list[str] = []
        swsb_parts: list[str] = []
        while not self.accept("}"):
            self.skip()
            start = self.pos
            m = _OPTION.match(self.text, self.pos)
            if not m:
                raise self.error("expected an instruction option or SWSB annotation")
            word = m.group(0)
            self.pos = m.end()
            if "@" in word or word.startswith("$") or word == "NoAccSBSet":
                try:
                    Swsb.parse(word)
                except ValueError as error:
                    raise self.error(str(error), start) from None
                swsb_parts.append(word)
            elif word in T.OPTION_RANK:
                if word not in options:
                    options.append(word)
            else:
                raise self.error(f"unknown instruction option '{word}'", start)
            if not self.accept(","):
                self.expect("}", "to close the options")
                break
        try:
            swsb = Swsb.parse(",".join(swsb_parts)) if swsb_parts else NO_SWSB
        except ValueError as error:
            raise self.error(str(error)) from None
        return options, swsb


def _to_int(text: str) -> int:
    """A decimal or 0x-hex integer literal (leading zeros allowed, unlike int(x, 0))."""
    body = text.lstrip("+-")
    value = int(body, 16) if body[:2] in ("0x", "0X") else int(body, 10)
    return -value if text.startswith("-") else value


def _immediate_value(literal: str, type_name: str) -> Imm:
    info = T.TYPES[type_name]
    if type_name in ("hf", "f", "df", "tf32"):
        float_type = "f" if type_name == "tf32" else type_name
        nan = parse_nan(literal, float_type) if "nan" in literal else None
        if nan is not None:
            return Imm(nan, type_name)
        if literal.lstrip("+-").lower().startswith("0x"):  # raw bits (negated as an integer, as iga64 does)
            value = int(literal, 16)
            if not -(1 << info.bits) < value < (1 << info.bits):
                raise ValueError(f"{literal} does not fit :{type_name}")
            return Imm(value & ((1 << info.bits) - 1), type_name)
        if not any(c in literal for c in ".eEn"):
            raise ValueError(f"integer literal {literal} for :{type_name}: write a float ({literal}.0) or hex bits")
        return Imm(float_to_bits(float(literal), float_type), type_name)
    if (
        any(c in literal for c in ".eE")
        and not literal.lstrip("+-").lower().startswith("0x")
        or "inf" in literal
        or "nan" in literal
    ):
        raise ValueError(f"'{literal}' is not an integer for :{type_name}")
    value = _to_int(literal)
    bits = 32 if type_name in ("uv", "v", "vf") else info.bits
    if not -(1 << (bits - 1)) <= value < (1 << bits):
        raise ValueError(f"{literal} does not fit :{type_name}")
    return Imm(value & ((1 << bits) - 1), type_name)


def _evaluate_bfn(expression: str) -> int:
    """The truth table of a bfn expression over s0, s1, s2 with ~ & ^ | and parentheses."""
    expression = expression.strip()
    if expression == "zeros":
        return 0
    if expression == "ones":
        return 0xFF
    tokens = re.findall(r"s[012]|[~&|^()]|\S", expression)
    position = 0

    def parse_or() -> int:
        nonlocal position
        value = parse_xor()
        while position < len(tokens) and tokens[position] == "|":
            position += 1
            value |= parse_xor()
        return value

    def parse_xor() -> int:
        nonlocal position
        value = parse_and()
        while position < len(tokens) and tokens[position] == "^":
            position += 1
            value ^= parse_and()
        return value

    def parse_and() -> int:
        nonlocal position
        value = parse_unary()
        while position < len(tokens) and tokens[position] == "&":
            position += 1
            value &= parse_unary()
        return value

    def parse_unary() -> int:
        nonlocal position
        if position >= len(tokens):
            raise ValueError("unexpected end of expression")
        token = tokens[position]
        position += 1
        if token == "~":
            return ~parse_unary() & 0xFF
        if token == "(":
            value = parse_or()
            if position >= len(tokens) or tokens[position] != ")":
                raise ValueError("missing ')'")
            position += 1
            return value
        if token in ("s0", "s1", "s2"):
            return {"s0": 0xAA, "s1": 0xCC, "s2": 0xF0}[token]
        raise ValueError(f"unexpected '{token}'")

    value = parse_or()
    if position != len(tokens):
        raise ValueError(f"unexpected '{tokens[position]}'")
    return value & 0xFF
