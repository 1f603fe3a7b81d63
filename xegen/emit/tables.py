"""Facts about the Xe native ISA as data: opcodes, types, registers, predication, functions.

Everything here is a table the encoder, decoder, printer and parser share.  Where the
platforms differ, the difference is keyed by the `xegen.hw.Platform` record's fields
(never by platform name): the XeHPC generation's facts follow its native encoding layout
(`hw.Platform.instruction_layout`).  Where each field sits in the instruction is `fields.py`.

Sources: IGA's models and the `iga64` tool itself (the oracle), oneDNN nGEN's
`ngen_gen12.hpp`; see docs/encoding.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .. import hw as hwlib
from .fields import XEHPC

# ---------------------------------------------------------------------------------------
# Platform capabilities that `xegen.hw.Platform` does not spell out (yet).  They are
# derived here from its fields, in one place, so that a new field in hw.py replaces one
# line: the XeHPC-generation features go with its instruction layout, the
# XeHPG-generation features with dpas and LSC messages.


def is_xehpc_layout(platform: hwlib.Platform) -> bool:
    """The XeHPC encoding (`fields.XEHPC`) and the features that came with it."""
    return platform.instruction_layout == XEHPC


def _xelp_generation(platform: hwlib.Platform) -> bool:
    return not platform.has_dpas


def has_bfloat16(platform: hwlib.Platform) -> bool:
    """The :bf type (XeHPG and later)."""
    return not _xelp_generation(platform)


def has_integer_divide_math(platform: hwlib.Platform) -> bool:
    """math.idiv/iqot/irem (XeLP only; later platforms emulate integer division)."""
    return _xelp_generation(platform)


def has_stack_pointer_register(platform: hwlib.Platform) -> bool:
    """The `sp` ARF (XeLP only)."""
    return _xelp_generation(platform)


def ternary_dst_alignment(platform: hwlib.Platform) -> int:
    """Byte alignment of a 3-source destination: iga64 rejects others (XeLP 8, XeHPC 2)."""
    if is_xehpc_layout(platform):
        return 2
    return 8 if _xelp_generation(platform) else 1


def src1_length_in_instruction(platform: hwlib.Platform) -> bool:
    """XeHPG and later encode the send src1 length in the instruction, not in ExDesc[10:6]."""
    return platform.has_lsc


# ---------------------------------------------------------------------------------------
# Opcodes

# Instruction formats: which operand slots an opcode has and how they are encoded.
UNARY = "unary"  # dst, src0 (register or immediate)
BINARY = "binary"  # dst, src0, src1 (src1 register or immediate)
MATH = "math"  # binary layout, the function in the condition-modifier field
TERNARY = "ternary"  # dst, src0..src2 in the 3-source layout
DPAS = "dpas"  # 3-source layout with systolic depth and repeat count
SEND = "send"  # dst, src0, src1 and message descriptors
SYNC = "sync"  # src0 only, the function in the condition-modifier field
NULLARY = "nullary"  # no operands (nop, illegal)
JUMP = "jump"  # jmpi: label or register
JIP_UIP = "jip_uip"  # if, else, break, cont, goto, halt, brc: two labels
JIP_ONLY = "jip_only"  # endif, while, join, brd: one label
CALL = "call"  # call: dst register and a label or register
CALLA = "calla"  # calla: dst register and an absolute address
RET = "ret"  # ret: src0 register

BRANCH_FORMATS = frozenset({JUMP, JIP_UIP, JIP_ONLY, CALL, CALLA, RET})


@dataclass(frozen=True, slots=True)
class OpcodeInfo:
    name: str
    code: int  # bits 6:0
    format: str
    requires: str = ""  # a Platform boolean that must be true ("has_add3"), or ""
    predication: bool = True  # accepts a predicate
    cond_modifier: bool = False  # accepts a condition modifier (flag modifier)
    saturate: bool = False
    source_modifiers: bool = False
    bitwise: bool = False  # logic op: a source negation means bitwise NOT, printed "~"
    out_of_order: bool = False  # token-tracked (send/dpas; math where math_is_out_of_order)
    branch_control: bool = False  # supports the ".b" BranchCtrl bit (if, else, goto)


def _op(name: str, code: int, fmt: str, flags: str = "", requires: str = "") -> OpcodeInfo:
    # flags: P predication, C cond modifier, S saturate, M source modifiers, B bitwise,
    #        O out of order, R branch control.  Predication is on unless "-" is given.
    return OpcodeInfo(
        name=name,
        code=code,
        format=fmt,
        requires=requires,
        predication="-" not in flags,
        cond_modifier="C" in flags,
        saturate="S" in flags,
        source_modifiers="M" in flags,
        bitwise="B" in flags,
        out_of_order="O" in flags,
        branch_control="R" in flags,
    )


_OPCODE_LIST: tuple[OpcodeInfo, ...] = (
    _op("illegal", 0x00, NULLARY, "-"),
    _op("sync", 0x01, SYNC, "-"),
    _op("jmpi", 0x20, JUMP),
    _op("brd", 0x21, JIP_ONLY),
    _op("if", 0x22, JIP_UIP, "R"),
    _op("brc", 0x23, JIP_UIP),
    _op("else", 0x24, JIP_UIP, "-R"),
    _op("endif", 0x25, JIP_ONLY, "-"),
    _op("while", 0x27, JIP_ONLY),
    _op("break", 0x28, JIP_UIP),
    _op("cont", 0x29, JIP_UIP),
    _op("halt", 0x2A, JIP_UIP),
    _op("calla", 0x2B, CALLA),
    _op("call", 0x2C, CALL),
    _op("ret", 0x2D, RET),
    _op("goto", 0x2E, JIP_UIP, "R"),
    _op("join", 0x2F, JIP_ONLY),
    _op("send", 0x31, SEND, "O"),
    _op("sendc", 0x32, SEND, "O"),
    _op("math", 0x38, MATH, "SM"),
    _op("add", 0x40, BINARY, "CSM"),
    _op("mul", 0x41, BINARY, "CSM"),
    _op("avg", 0x42, BINARY, "CSM"),
    _op("frc", 0x43, UNARY, "CM"),
    _op("rndu", 0x44, UNARY, "CSM"),
    _op("rndd", 0x45, UNARY, "CSM"),
    _op("rnde", 0x46, UNARY, "CSM"),
    _op("rndz", 0x47, UNARY, "CSM"),
    _op("mac", 0x48, BINARY, "CSM"),
    _op("mach", 0x49, BINARY, "M"),
    _op("lzd", 0x4A, UNARY, "CSM"),
    _op("fbh", 0x4B, UNARY),
    _op("fbl", 0x4C, UNARY),
    _op("cbit", 0x4D, UNARY),
    _op("addc", 0x4E, BINARY, "C"),
    _op("subb", 0x4F, BINARY, "CS"),
    _op("add3", 0x52, TERNARY, "CSM", requires="has_add3"),
    _op("macl", 0x53, BINARY, "M", requires="has_macl"),
    _op("srnd", 0x54, BINARY, "-", requires="has_srnd"),
    _op("dp4a", 0x58, TERNARY, "CS"),
    _op("dpas", 0x59, DPAS, "-O", requires="has_dpas"),
    _op("dpasw", 0x5A, DPAS, "-O", requires="has_dpasw"),
    _op("mad", 0x5B, TERNARY, "CSM"),
    _op("madm", 0x5D, TERNARY, "M", requires="has_madm"),
    _op("nop", 0x60, NULLARY, "-"),
    _op("mov", 0x61, UNARY, "CSM"),
    _op("sel", 0x62, BINARY, "CSM"),
    _op("movi", 0x63, BINARY, "SM"),
    _op("not", 0x64, UNARY, "CMB"),
    _op("and", 0x65, BINARY, "CMB"),
    _op("or", 0x66, BINARY, "CMB"),
    _op("xor", 0x67, BINARY, "CMB"),
    _op("shr", 0x68, BINARY, "CSM"),
    _op("shl", 0x69, BINARY, "CSM"),
    _op("bfn", 0x6B, TERNARY, "C", requires="has_bfn"),
    _op("asr", 0x6C, BINARY, "CSM"),
    _op("ror", 0x6E, BINARY, "C"),
    _op("rol", 0x6F, BINARY, "C"),
    _op("cmp", 0x70, BINARY, "CM"),
    _op("cmpn", 0x71, BINARY, "CM"),
    _op("csel", 0x72, TERNARY, "-CSM"),
    _op("bfrev", 0x77, UNARY),
    _op("bfe", 0x78, TERNARY),
    _op("bfi1", 0x79, BINARY),
    _op("bfi2", 0x7A, TERNARY),
)

OPCODES: Mapping[str, OpcodeInfo] = MappingProxyType({o.name: o for o in _OPCODE_LIST})
OPCODES_BY_CODE: Mapping[int, OpcodeInfo] = MappingProxyType({o.code: o for o in _OPCODE_LIST})

# Platform capabilities that hw.py does not describe (yet): derived from the SWSB layout.
_EXTRA_CAPABILITIES = {
    "has_macl": is_xehpc_layout,
    "has_srnd": is_xehpc_layout,
}


def opcode_available(info: OpcodeInfo, platform: hwlib.Platform) -> bool:
    if not info.requires:
        return True
    if info.requires in _EXTRA_CAPABILITIES:
        return _EXTRA_CAPABILITIES[info.requires](platform)
    return bool(getattr(platform, info.requires))


def is_out_of_order(info: OpcodeInfo, platform: hwlib.Platform) -> bool:
    """Token-tracked instructions: sends, dpas, and math where the platform says so."""
    return info.out_of_order or (info.format == MATH and platform.math_is_out_of_order)


# ---------------------------------------------------------------------------------------
# Data types


@dataclass(frozen=True, slots=True)
class TypeInfo:
    name: str
    bits: int  # element size in bits (sub-byte dpas types: 4 or 2)
    is_float: bool
    is_signed: bool


_TYPE_LIST = (
    TypeInfo("ub", 8, False, False),
    TypeInfo("uw", 16, False, False),
    TypeInfo("ud", 32, False, False),
    TypeInfo("uq", 64, False, False),
    TypeInfo("b", 8, False, True),
    TypeInfo("w", 16, False, True),
    TypeInfo("d", 32, False, True),
    TypeInfo("q", 64, False, True),
    TypeInfo("hf", 16, True, True),
    TypeInfo("f", 32, True, True),
    TypeInfo("df", 64, True, True),
    TypeInfo("bf", 16, True, True),
    TypeInfo("tf32", 32, True, True),
    TypeInfo("bf8", 8, True, True),
    # vector immediates: eight 4-bit integers (uv, v) or four 8-bit floats (vf)
    TypeInfo("uv", 32, False, False),
    TypeInfo("v", 32, False, True),
    TypeInfo("vf", 32, True, True),
    # dpas sub-byte source precisions
    TypeInfo("u4", 4, False, False),
    TypeInfo("s4", 4, False, True),
    TypeInfo("u2", 2, False, False),
    TypeInfo("s2", 2, False, True),
)
TYPES: Mapping[str, TypeInfo] = MappingProxyType({t.name: t for t in _TYPE_LIST})


def type_bytes(type_name: str) -> int:
    """Bytes per element; sub-byte and vector-immediate types count as their container."""
    info = TYPES[type_name]
    if info.name in ("uv", "v", "vf"):
        return 2 if info.name != "vf" else 4
    return max(1, info.bits // 8)


# 4-bit type field of the 1/2-source layout.  Which codes exist depends on the platform.
_BINARY_TYPE_CODES = {"ub": 0, "uw": 1, "ud": 2, "uq": 3, "b": 4, "w": 5, "d": 6, "q": 7, "hf": 9, "f": 10, "df": 11}
_BINARY_IMMEDIATE_VECTOR_CODES = {"uv": 0, "v": 4, "vf": 8}
# 3-bit type field of the 3-source layout plus the shared execution-type bit (1 = float).
_TERNARY_INT_CODES = {"ub": 0, "uw": 1, "ud": 2, "uq": 3, "b": 4, "w": 5, "d": 6, "q": 7}
_TERNARY_FLOAT_CODES = {"hf": 1, "f": 2, "df": 3}


def binary_type_codes(platform: hwlib.Platform) -> dict[str, int]:
    codes = dict(_BINARY_TYPE_CODES)
    if has_bfloat16(platform):
        codes["bf"] = 13
    if is_xehpc_layout(platform):
        codes["bf8"] = 8
        codes["tf32"] = 14
    return codes


def ternary_float_codes(platform: hwlib.Platform) -> dict[str, int]:
    codes = dict(_TERNARY_FLOAT_CODES)
    if has_bfloat16(platform):
        codes["bf"] = 5
    if is_xehpc_layout(platform):
        codes["bf8"] = 0
        codes["tf32"] = 6
    return codes


def ternary_int_codes() -> dict[str, int]:
    return dict(_TERNARY_INT_CODES)


def immediate_vector_codes() -> dict[str, int]:
    return dict(_BINARY_IMMEDIATE_VECTOR_CODES)


# dpas sub-byte precision field (2 bits): the element type is then ub/b in the type field.
DPAS_PRECISIONS: Mapping[str, tuple[str, int]] = MappingProxyType(
    {
        "u4": ("ub", 1),
        "s4": ("b", 1),
        "u2": ("ub", 2),
        "s2": ("b", 2),
    }
)


# ---------------------------------------------------------------------------------------
# Registers


@dataclass(frozen=True, slots=True)
class RegisterClass:
    name: str  # syntax: "acc"
    nibble: int  # RegNum[7:4] of the ARF encoding
    base: int  # RegNum[3:0] of register 0 of this class (mme0 = acc8)
    count_by_layout: tuple[int, int]  # registers on (XeLP/XeHPG, XeHPC); 0 = unnumbered
    bytes_per_register: tuple[int, int]
    numbered: bool  # printed with a number ("cr0"); "null", "ce", "ip", "sp" are not
    has_subregisters: bool  # "ce", "ip" and "null" print no subregister
    on_xelp_only: bool = False


_REGISTER_CLASS_LIST = (
    RegisterClass("null", 0x0, 0, (0, 0), (32, 64), False, False),
    RegisterClass("a", 0x1, 0, (1, 1), (32, 32), True, True),
    RegisterClass("acc", 0x2, 0, (8, 16), (32, 64), True, True),
    RegisterClass("mme", 0x2, 8, (8, 8), (32, 64), True, True),
    RegisterClass("f", 0x3, 0, (2, 4), (4, 4), True, True),
    RegisterClass("ce", 0x4, 0, (0, 0), (4, 4), False, False),
    RegisterClass("msg", 0x5, 0, (8, 8), (4, 4), True, True),
    RegisterClass("sp", 0x6, 0, (0, 0), (16, 16), False, True, on_xelp_only=True),
    RegisterClass("sr", 0x7, 0, (2, 2), (16, 16), True, True),
    RegisterClass("cr", 0x8, 0, (1, 1), (12, 12), True, True),
    RegisterClass("n", 0x9, 0, (1, 1), (12, 12), True, True),
    RegisterClass("ip", 0xA, 0, (0, 0), (4, 4), False, False),
    RegisterClass("tdr", 0xB, 0, (1, 1), (16, 16), True, True),
    RegisterClass("tm", 0xC, 0, (1, 1), (20, 20), True, True),
    RegisterClass("fc", 0xD, 0, (4, 4), (128, 128), True, True),
    RegisterClass("dbg", 0xF, 0, (1, 1), (8, 8), True, True),
)
ARF_CLASSES: Mapping[str, RegisterClass] = MappingProxyType({c.name: c for c in _REGISTER_CLASS_LIST})
GRF = "r"


def arf_class_available(cls: RegisterClass, platform: hwlib.Platform) -> bool:
    return not cls.on_xelp_only or has_stack_pointer_register(platform)


def arf_register_count(cls: RegisterClass, platform: hwlib.Platform) -> int:
    return cls.count_by_layout[1 if is_xehpc_layout(platform) else 0]


def arf_bytes_per_register(cls: RegisterClass, platform: hwlib.Platform) -> int:
    return cls.bytes_per_register[1 if is_xehpc_layout(platform) else 0]


def arf_encode(file: str, number: int) -> int:
    cls = ARF_CLASSES[file]
    return (cls.nibble << 4) | (cls.base + number)


def arf_decode(code: int, platform: hwlib.Platform) -> tuple[str, int] | None:
    """(class name, register number) of an 8-bit ARF register number, or None if unknown."""
    nibble, low = code >> 4, code & 0xF
    for cls in _REGISTER_CLASS_LIST:
        if cls.nibble != nibble or not arf_class_available(cls, platform):
            continue
        number = low - cls.base
        count = arf_register_count(cls, platform)
        if cls.name == "acc" and number >= count:
            continue  # the high numbers are mme registers
        if number < 0 or number >= max(count, 1):
            continue
        return cls.name, number
    return None


# Math macro extension registers (math.invm/rsqtm and madm): mme0..mme7 and "nomme" (8).
MME_NONE = 8


# ---------------------------------------------------------------------------------------
# Predication, condition modifiers, functions

# Predicate control (4 bits on XeLP/XeHPG).
PREDICATE_MODES_XELP: Mapping[str, int] = MappingProxyType(
    {
        "": 1,
        "anyv": 2,
        "allv": 3,
        "any2h": 4,
        "all2h": 5,
        "any4h": 6,
        "all4h": 7,
        "any8h": 8,
        "all8h": 9,
        "any16h": 10,
        "all16h": 11,
        "any32h": 12,
        "all32h": 13,
    }
)
# Predicate control (2 bits on XeHPC): any/all over the execution size.
PREDICATE_MODES_XEHPC: Mapping[str, int] = MappingProxyType({"": 1, "any": 2, "all": 3})


def predicate_modes(platform: hwlib.Platform) -> Mapping[str, int]:
    return PREDICATE_MODES_XEHPC if is_xehpc_layout(platform) else PREDICATE_MODES_XELP


CONDITION_MODIFIERS: Mapping[str, int] = MappingProxyType(
    {
        "eq": 1,
        "ne": 2,
        "gt": 3,
        "ge": 4,
        "lt": 5,
        "le": 6,
        "ov": 8,
        "un": 9,
        "eo": 15,
    }
)
CONDITION_BY_CODE = {v: k for k, v in CONDITION_MODIFIERS.items()}

# Extended math functions and their source counts.
MATH_FUNCTIONS: Mapping[str, int] = MappingProxyType(
    {
        "inv": 1,
        "log": 2,
        "exp": 3,
        "sqt": 4,
        "rsqt": 5,
        "sin": 6,
        "cos": 7,
        "fdiv": 9,
        "pow": 10,
        "idiv": 11,
        "iqot": 12,
        "irem": 13,
        "invm": 14,
        "rsqtm": 15,
    }
)
MATH_BY_CODE = {v: k for k, v in MATH_FUNCTIONS.items()}
MATH_TWO_SOURCES = frozenset({"fdiv", "pow", "idiv", "iqot", "irem", "invm"})
MATH_MACROS = frozenset({"invm", "rsqtm"})


def math_available(function: str, platform: hwlib.Platform) -> bool:
    """iga64 accepts integer division only on XeLP, and fdiv/pow on none of our platforms."""
    if function in ("fdiv", "pow"):
        return False
    if function in ("idiv", "iqot", "irem"):
        return has_integer_divide_math(platform)
    return True


SYNC_FUNCTIONS: Mapping[str, int] = MappingProxyType(
    {
        "nop": 0,
        "allrd": 2,
        "allwr": 3,
        "fence": 13,
        "bar": 14,
        "host": 15,
    }
)
SYNC_BY_CODE = {v: k for k, v in SYNC_FUNCTIONS.items()}


def sync_available(function: str, platform: hwlib.Platform) -> bool:
    return function != "fence" or is_xehpc_layout(platform)


# Shared functions (SFID) of send messages, per platform family.
_SFIDS_XELP = {
    "null": 0,
    "smpl": 2,
    "gtwy": 3,
    "dc2": 4,
    "rc": 5,
    "urb": 6,
    "ts": 7,
    "vme": 8,
    "dcro": 9,
    "dc0": 10,
    "pixi": 11,
    "dc1": 12,
}
_SFIDS_XEHP = {
    "null": 0,
    "ugml": 1,
    "smpl": 2,
    "gtwy": 3,
    "dc2": 4,
    "rc": 5,
    "urb": 6,
    "btd": 7,
    "rta": 8,
    "dcro": 9,
    "dc0": 10,
    "pixi": 11,
    "dc1": 12,
    "tgm": 13,
    "slm": 14,
    "ugm": 15,
}


def sfids(platform: hwlib.Platform) -> dict[str, int]:
    return dict(_SFIDS_XEHP if src1_length_in_instruction(platform) else _SFIDS_XELP)


# Instruction options, in the order iga64 prints them.
OPTION_ORDER: tuple[str, ...] = (
    "AccWrEn",
    "Atomic",
    "Breakpoint",
    "Compacted",
    "EOT",
    "NoCompact",
    "Serialize",
    "ExBSO",
    "CPS",
)
OPTION_RANK: Mapping[str, int] = MappingProxyType({name: i for i, name in enumerate(OPTION_ORDER)})

EXEC_SIZES = (1, 2, 4, 8, 16, 32)
EXEC_SIZE_CODES: Mapping[int, int] = MappingProxyType({s: i for i, s in enumerate(EXEC_SIZES)})

# Region encodings.
STRIDE_CODES: Mapping[int, int] = MappingProxyType({0: 0, 1: 1, 2: 2, 4: 3, 8: 4, 16: 5, 32: 6})
STRIDE_BY_CODE = {v: k for k, v in STRIDE_CODES.items()}
WIDTH_CODES: Mapping[int, int] = MappingProxyType({1: 0, 2: 1, 4: 2, 8: 3, 16: 4})
WIDTH_BY_CODE = {v: k for k, v in WIDTH_CODES.items()}
HSTRIDE_CODES: Mapping[int, int] = MappingProxyType({0: 0, 1: 1, 2: 2, 4: 3})
HSTRIDE_BY_CODE = {v: k for k, v in HSTRIDE_CODES.items()}
TERNARY_VSTRIDE_CODES: Mapping[int, int] = MappingProxyType({0: 0, 1: 1, 4: 2, 8: 3})
TERNARY_VSTRIDE_BY_CODE = {v: k for k, v in TERNARY_VSTRIDE_CODES.items()}

# dpas systolic depth encodings (log2) and repeat counts 1..8.
SYSTOLIC_DEPTH_CODES: Mapping[int, int] = MappingProxyType({1: 0, 2: 1, 4: 2, 8: 3})
SYSTOLIC_DEPTH_BY_CODE = {v: k for k, v in SYSTOLIC_DEPTH_CODES.items()}
