"""The Xe instruction model: immutable, hashable values that the encoder, decoder, printer,
parser, instruction selection, register allocation and the simulator all share.

An `Instruction` holds what IGA's assembly text says, in Python values:

    add (8|M0) (lt)f1.0  r10.0<1>:d  r11.0<8;8,1>:d  16:d  {I@1}

    Instruction("add", 8, dst=grf(10, 0, "d"), srcs=(grf(11, 0, "d"), imm(16, "d")),
                cond_modifier=CondModifier("lt", Flag(1, 0)), swsb=Swsb(1, "I"))

Registers are `Reg` (direct, or indirect through a0), immediates are `Imm` (the raw bit
pattern plus a type).  Regions left as None get the usual default for their position when
the instruction is built (`<1>` for a destination, `<1;1,0>` for a vector source, `<0;1,0>`
for SIMD1, `<1;0>`/`<1>` for 3-source operands), so hand-written instructions stay short.
Branch targets are byte offsets relative to the branch's own address (`calla`: absolute).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import ClassVar, final

from . import tables as T
from .floats import float_to_bits

# ---------------------------------------------------------------------------------------
# Operands


@final  # no subclasses: `type(op) is Reg`, the fast test hot paths use, then narrows an Operand
@dataclass(frozen=True, slots=True)
class Reg:
    """A register operand.

    `file` is "r" for the GRF or an ARF class name ("null", "a", "acc", "f", "sr", "cr",
    "ce", "n", "tm", "ip", "msg", "tdr", "fc", "dbg", "mme", "sp").  `subreg` counts
    elements of `type`.  Indirect operands (`indirect=True`) read `r[a0.<addr_subreg>,
    <addr_offset>]` where the offset is in bytes; a VxH source has `vstride=None`.
    `mme` is the math-macro extension of math.invm/rsqtm and madm operands (0..7, 8 =
    "nomme").  On a logic instruction (and, or, xor, not) `neg` is a bitwise NOT ("~").
    """

    file: str = "r"
    number: int = 0
    subreg: int = 0
    type: str = "ud"
    vstride: int | None = None
    width: int | None = None
    hstride: int | None = None
    neg: bool = False
    abs: bool = False
    mme: int | None = None
    indirect: bool = False
    addr_subreg: int = 0
    addr_offset: int = 0

    # Small builders that return modified copies.  (The ones instruction selection and register
    # allocation call for every operand build the copy directly: `dataclasses.replace` takes
    # three times as long.)
    def region(self, vstride: int | None, width: int | None = None, hstride: int | None = None) -> Reg:
        """`<v;w,h>` for a 1/2-source operand, `<v;h>` with width None for 3-source src0/src1."""
        return self._copy(self.file, self.number, self.subreg, vstride, width, hstride)

    def stride(self, hstride: int) -> Reg:
        """A destination or 3-source src2 region `<h>`."""
        return self._copy(self.file, self.number, self.subreg, None, None, hstride)

    def scalar(self) -> Reg:
        """Broadcast one element: `<0;1,0>`."""
        return self._copy(self.file, self.number, self.subreg, 0, 1, 0)

    def at(self, file: str, number: int, subreg: int) -> Reg:
        """The same operand in another register (register allocation places virtual ones)."""
        return self._copy(file, number, subreg, self.vstride, self.width, self.hstride)

    def _copy(
        self, file: str, number: int, subreg: int, vstride: int | None, width: int | None, hstride: int | None
    ) -> Reg:
        return Reg(
            file,
            number,
            subreg,
            self.type,
            vstride,
            width,
            hstride,
            self.neg,
            self.abs,
            self.mme,
            self.indirect,
            self.addr_subreg,
            self.addr_offset,
        )

    def retype(self, type: str) -> Reg:
        return replace(self, type=type)

    def __neg__(self) -> Reg:
        return replace(self, neg=not self.neg)

    def __invert__(self) -> Reg:
        return replace(self, neg=not self.neg)

    def __abs__(self) -> Reg:
        return replace(self, abs=True, neg=False)

    @property
    def is_null(self) -> bool:
        return self.file == "null" and not self.indirect

    @property
    def is_grf(self) -> bool:
        return self.file == "r"

    @property
    def byte_offset(self) -> int:
        """Byte offset of the first element within its register."""
        return self.subreg * T.type_bytes(self.type) if self.type else self.subreg


@final
@dataclass(frozen=True, slots=True)
class Imm:
    """An immediate: `value` is the raw bit pattern (zero-extended) of `type`."""

    value: int
    type: str

    @property
    def signed_value(self) -> int:
        bits = _imm_bits(self.type)
        v = self.value & ((1 << bits) - 1)
        return v - (1 << bits) if T.TYPES[self.type].is_signed and v >> (bits - 1) else v

    @property
    def float_value(self) -> float:
        if self.type == "f":
            return struct.unpack("<f", struct.pack("<I", self.value & 0xFFFFFFFF))[0]
        if self.type == "df":
            return struct.unpack("<d", struct.pack("<Q", self.value))[0]
        if self.type == "hf":
            return struct.unpack("<e", struct.pack("<H", self.value & 0xFFFF))[0]
        raise TypeError(f"immediate of type {self.type} is not a float")


Operand = Reg | Imm


def _imm_bits(type_name: str) -> int:
    if type_name in ("uv", "v", "vf"):
        return 32
    return T.TYPES[type_name].bits


# ---------------------------------------------------------------------------------------
# Instruction-level fields


@dataclass(frozen=True, slots=True)
class Flag:
    """A flag (sub)register, `f<reg>.<subreg>`."""

    reg: int = 0
    subreg: int = 0

    def __str__(self) -> str:
        return f"f{self.reg}.{self.subreg}"


@dataclass(frozen=True, slots=True)
class Predicate:
    """`(~f1.0.anyv)`: mode is "" (per channel), "anyv", "allv", "anyNh"/"allNh" (XeLP,
    XeHPG) or "any"/"all" (XeHPC)."""

    flag: Flag = Flag()
    invert: bool = False
    mode: str = ""

    def __str__(self) -> str:
        return ("~" if self.invert else "") + str(self.flag) + (f".{self.mode}" if self.mode else "")


@dataclass(frozen=True, slots=True)
class CondModifier:
    """A condition (flag) modifier `(lt)f1.0`: eq, ne, gt, ge, lt, le, ov, un, eo."""

    cond: str
    flag: Flag = Flag()

    def __str__(self) -> str:
        return f"({self.cond}){self.flag}"


@dataclass(frozen=True, slots=True)
class Swsb:
    """Software scoreboard annotation: an in-order distance (`@3`, `A@1`, `F@2`, `I@1`,
    `L@1`, `M@1`) and/or an SBID token (`$3`, `$3.dst`, `$3.src`).

    `distance` is None when there is no distance; 0 only appears combined with a token
    (iga64 prints `@0,$3.dst` for such encodings)."""

    distance: int | None = None
    pipe: str = ""  # "", "A", "F", "I", "L", "M"
    token: int | None = None
    token_mode: str = "set"  # "set", "dst", "src"
    no_acc_sb_set: bool = False  # XeHPC "NoAccSBSet"

    @property
    def empty(self) -> bool:
        return self.distance is None and self.token is None and not self.no_acc_sb_set

    def __str__(self) -> str:
        parts = []
        if self.no_acc_sb_set:
            parts.append("NoAccSBSet")
        if self.distance is not None:
            parts.append(f"{self.pipe}@{self.distance}")
        if self.token is not None:
            parts.append(f"${self.token}" + ("" if self.token_mode == "set" else f".{self.token_mode}"))
        return ",".join(parts)

    @staticmethod
    def parse(text: str) -> Swsb:
        """`Swsb.parse("A@1,$2.dst")`; raises ValueError on malformed text.  A lone
        zero distance (`@0`) means no distance, as in iga64."""
        swsb = Swsb()
        for part in (p.strip() for p in text.split(",") if p.strip()):
            if part == "NoAccSBSet":
                swsb = replace(swsb, no_acc_sb_set=True)
            elif "@" in part:
                pipe, _, dist = part.partition("@")
                if pipe not in ("", "A", "F", "I", "L", "M") or not dist.isdigit():
                    raise ValueError(f"bad SWSB distance '{part}'")
                swsb = replace(swsb, distance=int(dist), pipe=pipe)
            elif part.startswith("$"):
                number, _, mode = part[1:].partition(".")
                if not number.isdigit() or mode not in ("", "dst", "src"):
                    raise ValueError(f"bad SWSB token '{part}'")
                swsb = replace(swsb, token=int(number), token_mode=mode or "set")
            else:
                raise ValueError(f"bad SWSB annotation '{part}'")
        if swsb.distance == 0 and swsb.token is None:
            swsb = replace(swsb, distance=None, pipe="")
        return swsb


NO_SWSB = Swsb()


@dataclass(frozen=True, slots=True)
class SendDescriptor:
    """The message of a send: shared function, descriptors, and the src1 length.

    `desc`/`exdesc` are the immediate descriptors as IGA prints them; `desc_in_a0` means
    the descriptor comes from a0.0, `exdesc_a0` names the a0 subregister holding the
    extended descriptor.  `src1_length` is the GRF count printed after src1 (`r30:2`) on
    XeHPG and later; None where the length lives in exdesc[10:6] (XeLP, or exdesc in a0
    without ExBSO)."""

    sfid: str
    desc: int = 0
    exdesc: int = 0
    desc_in_a0: bool = False
    exdesc_a0: int | None = None
    src1_length: int | None = None

    @property
    def message_length(self) -> int | None:
        return None if self.desc_in_a0 else (self.desc >> 25) & 0xF

    @property
    def response_length(self) -> int | None:
        return None if self.desc_in_a0 else (self.desc >> 20) & 0x1F


@dataclass(frozen=True, slots=True)
class Instruction:
    """One Xe instruction.

    - `function`: the math function ("inv"), sync function ("nop", "allwr", "bar") or bfn
      truth table (0..255, the value of f(s0=0xAA, s1=0xCC, s2=0xF0)).
    - `systolic_depth`, `repeat_count`: dpas/dpasw `dpas.<depth>x<repeat>`.
    - `jip`, `uip`: branch targets, byte offsets from this instruction (calla: absolute).
    - `options`: instruction options in IGA's order ("Atomic", "Breakpoint", "EOT", ...).
      "Compacted" means the instruction is stored in the 8-byte form (the decoder sets it;
      the encoder honours it).
    - `branch_control`: the ".b" of if/else/goto.
    """

    opcode: str
    exec_size: int = 1
    channel_offset: int = 0
    dst: Reg | None = None
    srcs: tuple[Operand, ...] = ()
    predicate: Predicate | None = None
    no_mask: bool = False
    cond_modifier: CondModifier | None = None
    saturate: bool = False
    function: str | int | None = None
    swsb: Swsb = NO_SWSB
    options: tuple[str, ...] = ()
    jip: int | None = None
    uip: int | None = None
    send: SendDescriptor | None = None
    systolic_depth: int = 0
    repeat_count: int = 0
    branch_control: bool = False
    #: `str(inst)`: one line of IGA syntax for the default platform, installed by asm_printer.py
    #: (which the package imports), so that this model does not depend on its printer
    text_form: ClassVar[Callable[[Instruction], str]]

    def __post_init__(self) -> None:
        if type(self.srcs) is not tuple:  # accept a list, keep the instruction hashable
            object.__setattr__(self, "srcs", tuple(self.srcs))
        # Fill default regions of hand-built operands; decoded instructions are complete.
        if _needs_defaults(self):
            _fill_defaults(self)
        options = self.options
        if options and (len(options) > 1 or type(options) is not tuple):
            canonical = tuple(sorted(dict.fromkeys(options), key=_option_rank))  # iga64 order, no repeats
            if canonical != options:
                object.__setattr__(self, "options", canonical)

    @property
    def info(self) -> T.OpcodeInfo:
        return T.OPCODES[self.opcode]

    @property
    def own_a_rows(self) -> int:
        """Rows of A (32-byte src2 rows) a dpas reads from this thread's registers: all of them,
        or for dpasw ceil(repeat_count/2) (the fused partner's src2 gives the rest)."""
        return -(-self.repeat_count // 2) if self.opcode == "dpasw" else self.repeat_count

    @property
    def is_branch(self) -> bool:
        return T.OPCODES[self.opcode].format in T.BRANCH_FORMATS

    @property
    def eot(self) -> bool:
        return "EOT" in self.options

    def with_swsb(self, swsb: Swsb) -> Instruction:
        return replace(self, swsb=swsb)

    def __str__(self) -> str:
        return Instruction.text_form(self)


def _option_rank(name: str) -> int:
    return T.OPTION_RANK.get(name, len(T.OPTION_RANK))


# ---------------------------------------------------------------------------------------
# Default regions


def _needs_defaults(inst: Instruction) -> bool:
    if inst.send is not None:
        return False
    dst = inst.dst
    if dst is not None and dst.hstride is None:
        return True
    for src in inst.srcs:
        if type(src) is Reg and src.hstride is None and not (src.indirect and src.vstride is None and src.width):
            return True
    return False


def _format_of(inst: Instruction) -> str:
    info = T.OPCODES.get(inst.opcode)
    return info.format if info else ""


def _fill_defaults(inst: Instruction) -> None:
    fmt = _format_of(inst)
    if fmt == T.SEND:
        return
    scalar = inst.exec_size == 1
    dst = inst.dst
    if dst is not None and dst.hstride is None:
        if fmt in T.BRANCH_FORMATS:
            dst = replace(dst, vstride=0, width=1, hstride=0)
        else:
            dst = replace(dst, vstride=None, width=None, hstride=1)
        object.__setattr__(inst, "dst", dst)
    srcs = list(inst.srcs)
    for i, src in enumerate(srcs):
        if type(src) is not Reg or src.hstride is not None:
            continue
        if fmt in (T.TERNARY, T.DPAS):
            if i == 2:
                flat = scalar and fmt == T.TERNARY and src.mme is None
                srcs[i] = replace(src, vstride=None, width=None, hstride=0 if flat else 1)
            else:
                srcs[i] = replace(src, vstride=0 if scalar else 1, width=None, hstride=0)
        elif fmt in T.BRANCH_FORMATS or fmt == T.SYNC:
            srcs[i] = replace(src, vstride=0, width=1, hstride=0)
        elif src.indirect and src.vstride is None and src.width:
            continue  # VxH keeps its <w,h> as given
        else:
            srcs[i] = replace(src, vstride=0 if scalar else 1, width=1, hstride=0)
    object.__setattr__(inst, "srcs", tuple(srcs))


_INSTRUCTION_SLOTS = tuple(Instruction.__dict__[field.name].__set__ for field in fields(Instruction))


def complete_instruction(*values) -> Instruction:
    """An Instruction from every field's value, in declaration order, when they are already
    complete and canonical (every region given, `srcs` a tuple, options in iga64's order), as
    the decoder builds them.  It sets the slots directly, skipping what `__init__` adds for
    hand-built instructions: building instructions is the decoder's largest single cost."""
    inst = object.__new__(Instruction)
    for set_slot, value in zip(_INSTRUCTION_SLOTS, values, strict=True):
        set_slot(inst, value)
    return inst


# ---------------------------------------------------------------------------------------
# Builders


def grf(number: int, subreg: int = 0, type: str = "ud") -> Reg:
    """`r<number>.<subreg>:<type>` with the default region of wherever it is used."""
    return Reg("r", number, subreg, type)


def arf(file: str, number: int = 0, subreg: int = 0, type: str = "ud") -> Reg:
    """An architecture register: arf("acc", 0, 0, "f"), arf("sr", 0, 1)."""
    return Reg(file, number, subreg, type)


def null(type: str = "ud") -> Reg:
    return Reg("null", 0, 0, type)


def acc(number: int = 0, subreg: int = 0, type: str = "f") -> Reg:
    return Reg("acc", number, subreg, type)


def a0(subreg: int = 0, type: str = "uw") -> Reg:
    return Reg("a", 0, subreg, type)


def indirect(addr_subreg: int, offset: int = 0, type: str = "ud") -> Reg:
    """`r[a0.<addr_subreg>, <offset>]`: the register whose byte address is in a0."""
    return Reg("r", 0, 0, type, indirect=True, addr_subreg=addr_subreg, addr_offset=offset)


def send_reg(number: int | None) -> Reg:
    """A send payload register (`r22`), or null when number is None."""
    return Reg("null", 0, 0, "ud") if number is None else Reg("r", number, 0, "ud")


def imm(value: int | float, type: str) -> Imm:
    """An immediate of `type`: imm(16, "d"), imm(-1, "w") (two's complement), imm(1.5, "f").

    For the float types (hf, f, df) the number is a value; to give raw bits write
    Imm(0x3F800000, "f")."""
    if type not in T.TYPES:
        raise ValueError(f"unknown type '{type}'")
    if type in ("hf", "f", "df"):
        return Imm(float_to_bits(float(value), type), type)
    if not isinstance(value, int):
        raise ValueError(f"immediate {value!r} is not an integer for :{type}")
    return Imm(value & ((1 << _imm_bits(type)) - 1), type)
