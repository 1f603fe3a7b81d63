"""Compacted (8-byte) Xe instructions: expansion to the 16-byte native form, and the inverse.

An instruction with bit 29 set is 8 bytes long.  Most of its fields are indices into per-platform
tables whose entries hold a group of native bits (execution control, types, subregisters, source
regions); the rest (opcode, SWSB, register numbers, a 12-bit immediate) are copied.  Where those
native fields sit is the field table's (`fields.py`); this module holds the compacted word's own
layout and the tables.  Expanding is a table lookup per index; compacting searches the tables for an
entry equal to the native bits (the first one, as Intel's tools do).

Which instructions have a compacted form: one-source and two-source ALU instructions,
three-source ones (mad, add3, bfn, csel, bfe, bfi2, dp4a, dpas; madm on XeHPC only), and
sync.  Sends, math, branches and nop have none on any Xe platform (XeLP, XeHPG, XeHPC).

Table sources (facts; the code around them is ours):
  * XeLP (gfx12) and XeHPG (xehp, Gfx12.5): Mesa `src/intel/compiler/brw_eu_compact.c`
    (`gfx12_*`, `xehp_*` tables and the bit groups of `set_uncompacted_*`), cross-checked
    with IGC's GED tables (`ged_compaction_tables.cpp`).
  * XeHPC: IGC's GED (`visa/iga/GEDLibrary/.../ged_compaction_tables.cpp`, the XeHPC
    tables); the compacted layout is the one Mesa documents for Xe2
    (`brw_eu_inst.h`, `F20`/`FD20` fields), which XeHPC already uses.
  * Which opcodes compact: GED's per-platform opcode tables (`ged_model_*.cpp`).
The tests check every expansion against `iga64` (disassemble the compacted word, then
assemble the text with `-Xforce-no-compact`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import hw as hwlib
from ..errors import DecodeError
from .fields import COMPACTED, Binary, Field, Formats, Ternary, layout_fields

Fragment = tuple[int, int]  # (high bit, low bit), inclusive

COMPACTED_BIT = COMPACTED  # CmptCtrl, the same bit in both forms


def field_bits(word: int, fragment: Fragment) -> int:
    high, low = fragment
    return (word >> low) & ((1 << (high - low + 1)) - 1)


def take_bits(word: int, fragments: tuple[Fragment, ...]) -> int:
    """Concatenate bit groups of `word`, the first fragment in the most significant place."""
    value = 0
    for high, low in fragments:
        value = (value << (high - low + 1)) | field_bits(word, (high, low))
    return value


def place_bits(word: int, fragments: tuple[Fragment, ...], value: int) -> int:
    """Inverse of `take_bits`: spread `value` over the fragments of `word`."""
    for high, low in reversed(fragments):
        width = high - low + 1
        mask = ((1 << width) - 1) << low
        word = (word & ~mask) | ((value & ((1 << width) - 1)) << low)
        value >>= width
    return word


def _width(fragments: tuple[Fragment, ...]) -> int:
    return sum(high - low + 1 for high, low in fragments)


@dataclass(frozen=True)
class IndexedField:
    """A compacted-word index selecting a table entry that fills native bit groups."""

    name: str
    index: tuple[Fragment, ...]  # where the index sits in the compacted word
    table: tuple[int, ...]
    native: tuple[Fragment, ...]  # where the entry's bits go, most significant first

    def __post_init__(self) -> None:
        if len(self.table) > 1 << _width(self.index):
            raise ValueError(f"{self.name}: {len(self.table)} entries do not fit a {_width(self.index)}-bit index")
        if any(entry >> _width(self.native) for entry in self.table):
            raise ValueError(f"{self.name}: an entry is wider than its {_width(self.native)} native bits")


@dataclass(frozen=True)
class CopiedField:
    """Bits copied unchanged between the compacted and the native word."""

    name: str
    compact: Fragment
    native: Fragment


@dataclass(frozen=True)
class CompactFormat:
    """One compacted layout: the index fields, the copied fields, and the immediate if any."""

    name: str
    indexed: tuple[IndexedField, ...]
    copied: tuple[CopiedField, ...]
    # Two-source forms carry a 12-bit immediate in place of src1's index and register.
    immediate: Fragment | None = None
    # The fields the immediate replaces (they are neither expanded nor compacted with an immediate).
    replaced_by_immediate: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompactionScheme:
    """Everything about compaction on one platform."""

    native: Formats  # the platform's native fields (fields.py)
    two_source: CompactFormat  # also one-source instructions and sync
    three_source: CompactFormat
    dpas: CompactFormat  # the three-source layout dpas uses (its own tables on XeHPC)
    two_source_opcodes: frozenset[int]
    three_source_opcodes: frozenset[int]
    dpas_opcodes: frozenset[int]

    def format_for(self, opcode: int) -> CompactFormat | None:
        if opcode in self.dpas_opcodes:
            return self.dpas
        if opcode in self.three_source_opcodes:
            return self.three_source
        if opcode in self.two_source_opcodes:
            return self.two_source
        return None


# --- Tables --------------------------------------------------------------------------
# Each entry is the native bit groups of its field, concatenated most significant first
# (see the *_BITS tuples below).  Numbers transcribed from the sources in the docstring.

GFX12_CONTROL = (
    0x000004,
    0x000003,
    0x002000,
    0x002004,
    0x002003,
    0x080004,
    0x000024,
    0x0A0004,
    0x000000,
    0x010004,
    0x000013,
    0x060004,
    0x020004,
    0x022004,
    0x040004,
    0x000104,
    0x0A0003,
    0x000184,
    0x002001,
    0x000144,
    0x0001C4,
    0x082004,
    0x000023,
    0x000033,
    0x0A2004,
    0x080003,
    0x022000,
    0x010003,
    0x0A0084,
    0x020003,
    0x008003,
    0x002024,
)

GFX12_DATATYPE = (
    0xD6954,
    0x06954,
    0x02B54,
    0x56D54,
    0xD4954,
    0xD2954,
    0x54D54,
    0x00800,
    0xD0954,
    0x2ECCC,
    0xB68CC,
    0x52D54,
    0x96844,
    0x50D54,
    0x36CCC,
    0x16C44,
    0x07154,
    0x2CCCC,
    0x00822,
    0x02844,
    0x26C2A,
    0x0EC22,
    0x97044,
    0x0694C,
    0x8C8CC,
    0x06854,
    0x2EC4C,
    0x02822,
    0x06834,
    0x06814,
    0x068D4,
    0x02954,
)

GFX12_SUBREG = (
    0x0000,
    0x4000,
    0x1000,
    0x3000,
    0x0080,
    0x2000,
    0x5000,
    0x0008,
    0x0100,
    0x6000,
    0x7000,
    0x0200,
    0x0004,
    0x0300,
    0x0280,
    0x0180,
    0x0380,
    0x001C,
    0x0010,
    0x000C,
    0x0018,
    0x0014,
    0x0002,
    0x0140,
    0x0040,
    0x0084,
    0x005C,
    0x0042,
    0x018C,
    0x0020,
    0x0060,
    0x6300,
)

GFX12_SRC0 = (
    0x464,
    0x000,
    0x466,
    0x465,
    0x002,
    0x200,
    0x240,
    0x340,
    0x224,
    0x300,
    0x226,
    0x344,
    0x467,
    0x100,
    0x001,
    0xF10,
)

GFX12_SRC1 = (
    0x119,
    0x000,
    0x919,
    0x800,
    0x519,
    0x8D0,
    0x080,
    0x089,
    0x889,
    0x0D0,
    0x0D1,
    0x0C0,
    0xD19,
    0x400,
    0xC00,
    0x8D1,
)

XEHP_SRC0 = (
    0x100,
    0x000,
    0x102,
    0x101,
    0x002,
    0x200,
    0x240,
    0x340,
    0x300,
    0x103,
    0x001,
    0xF10,
    0x460,
    0x140,
    0x448,
    0x202,
)

XEHP_SRC1 = (
    0x040,
    0x000,
    0x840,
    0x800,
    0x440,
    0x8D0,
    0x080,
    0x0D0,
    0x0C0,
    0xC40,
    0x400,
    0xC00,
    0x118,
    0x880,
    0x809,
    0x844,
)

GFX12_3SRC_CONTROL = (
    0x04A540004,
    0x04A540003,
    0x048540003,
    0x04A542003,
    0x048542003,
    0x048540013,
    0x04A540013,
    0x048542013,
    0x04A542013,
    0x04A542004,
    0x048540004,
    0x04A550004,
    0x04A540024,
    0x048542004,
    0x04A542000,
    0x04A550003,
    0x048542033,
    0x048542023,
    0x04A542033,
    0x04A542023,
    0x048540023,
    0x048540033,
    0x04A540023,
    0x04A540033,
    0x048550004,
    0x04A552004,
    0x04A542024,
    0x04A442000,
    0x048540024,
    0x04A550024,
    0x04A542002,
    0x048550003,
)

XEHP_3SRC_CONTROL = (
    0x0094540004,
    0x0094540003,
    0x0090540003,
    0x0094542003,
    0x0090542003,
    0x0090540013,
    0x0094540013,
    0x0090542013,
    0x0094542013,
    0x0094542004,
    0x0090540004,
    0x0094550004,
    0x0094540024,
    0x0090542004,
    0x0094542000,
    0x0094550003,
    0x0090542023,
    0x0090542033,
    0x0094542023,
    0x0094542033,
    0x0090540033,
    0x0090540023,
    0x0027CC0003,
    0x0007CC4003,
    0x0127CC4003,
    0x0107CC4003,
    0x0127CC0003,
    0x0007CC0003,
    0x0027CC4003,
    0x0107CC0003,
    0x016F544003,
    0x016F540003,
)

GFX12_3SRC_SOURCE = (
    0x12C300,
    0x12C242,
    0x16C343,
    0x12C343,
    0x160143,
    0x16C34B,
    0x14C343,
    0x10C300,
    0x16C300,
    0x16CB43,
    0x16E343,
    0x160100,
    0x10C343,
    0x12E300,
    0x12E343,
    0x12C34B,
    0x120143,
    0x12C308,
    0x120100,
    0x16E300,
    0x12CB00,
    0x14C300,
    0x12CB43,
    0x16CB4B,
    0x14C34B,
    0x16E34B,
    0x162143,
    0x160943,
    0x16C308,
    0x16CB00,
    0x120943,
    0x14CB43,
)

XEHP_3SRC_SOURCE = (
    0x120300,
    0x120201,
    0x160301,
    0x120301,
    0x160101,
    0x160309,
    0x140301,
    0x160300,
    0x100300,
    0x160B01,
    0x162301,
    0x160100,
    0x100301,
    0x122300,
    0x122301,
    0x120309,
    0x120101,
    0x120308,
    0x120100,
    0x162300,
    0x120B00,
    0x140300,
    0x120B01,
    0x160B09,
    0x122100,
    0x120900,
    0x122900,
    0x121100,
    0x121900,
    0x120500,
    0x121500,
    0x122500,
)

GFX12_3SRC_SUBREG = (
    0x00000,
    0x20000,
    0x00180,
    0xA0000,
    0x80380,
    0x60000,
    0x40000,
    0x02000,
    0x01000,
    0xC0000,
    0x80000,
    0xE0000,
    0x06000,
    0x00080,
    0x04000,
    0x03000,
    0x05000,
    0x07000,
    0x00100,
    0x00200,
    0x00300,
    0x00280,
    0x00380,
    0xC0380,
    0x20100,
    0x20180,
    0x40180,
    0x80300,
    0x80280,
    0x60080,
    0xA0380,
    0x40080,
)

XEHPC_CONTROL = (
    0x00004,
    0x00800,
    0x00084,
    0x00000,
    0x00802,
    0x00005,
    0x00803,
    0x00804,
    0x14802,
    0x10802,
    0x00801,
    0x10800,
    0x14800,
    0x14803,
    0x14004,
    0x10803,
    0x10004,
    0x08000,
    0x14005,
    0x0C000,
    0x10005,
    0x0C800,
    0x04800,
    0x00884,
    0x38800,
    0x00003,
    0x04004,
    0x00104,
    0x00125,
    0x00002,
    0x14025,
    0x14015,
)

XEHPC_DATATYPE = (
    0xBE8EE,
    0x00800,
    0x06844,
    0xD6954,
    0x2ECEE,
    0x06954,
    0x06866,
    0x02B54,
    0x36CCE,
    0xB68CC,
    0xDE976,
    0x07044,
    0x2ECCC,
    0x068CC,
    0x02A44,
    0x02AAC,
    0x2CCCC,
    0x36CEE,
    0x068EE,
    0x00A40,
    0xD4954,
    0x08C44,
    0x968EE,
    0x04844,
    0x8C8CC,
    0x07844,
    0x0695A,
    0x2EC4E,
    0x36CCC,
    0x0EC44,
    0x2ECCE,
    0x16C44,
)

XEHPC_SUBREG = (
    0x000,
    0x400,
    0x080,
    0x200,
    0x100,
    0x004,
    0x008,
    0x020,
    0x180,
    0x010,
    0x600,
    0x108,
    0x500,
    0x300,
    0x00C,
    0x210,
)

XEHPC_SRC0 = (
    0x100,
    0x000,
    0x200,
    0x300,
    0x710,
    0x102,
    0x002,
    0x110,
)

XEHPC_SRC1 = (
    0x0000,
    0x0800,
    0x0010,
    0x0050,
    0x1000,
    0x8800,
    0x0040,
    0x0020,
    0x0018,
    0x0008,
    0x0030,
    0x0060,
    0x0070,
    0x0840,
    0x0820,
    0x1808,
)

XEHPC_3SRC_CONTROL = (
    0x01B8EC004,
    0x01B8EC084,
    0x01B0EC004,
    0x0128A8005,
    0x0120A8005,
    0x01B0EC084,
    0x0128A8004,
    0x036998005,
    0x02A8A8004,
    0x01B8EC800,
    0x01B0EC003,
    0x0120A8004,
    0x02A0A8004,
    0x036998004,
    0x02A8B4004,
    0x036998800,
)

XEHPC_DPAS_CONTROL = (
    0x000F99004,
    0x004F99004,
    0x020F99004,
    0x024F99004,
    0x000F98004,
    0x024F98004,
    0x02DEA9004,
    0x02DF69004,
    0x02DEB5004,
    0x02DF75004,
    0x02DEA8004,
    0x009EA9004,
    0x009E69004,
    0x009EA5004,
    0x009E65004,
    0x009EA8004,
)

XEHPC_3SRC_SOURCE = (
    0x160B01,
    0x160301,
    0x120201,
    0x160A01,
    0x160201,
    0x16E142,
    0x14C142,
    0x122201,
    0x120100,
    0x120301,
    0x160001,
    0x160101,
    0x16C142,
    0x120300,
    0x122301,
    0x140300,
)

XEHPC_DPAS_SOURCE = (
    0x120100,
    0x120500,
    0x120900,
    0x121100,
    0x121500,
    0x121900,
    0x122100,
    0x122500,
    0x122900,
    0x120102,
    0x120502,
    0x121102,
    0x121502,
    0x122902,
    0x12010E,
    0x12150E,
)

XEHPC_3SRC_SUBREG = (
    0x00000,
    0x80000,
    0x04000,
    0xE0000,
    0x40000,
    0xA0000,
    0x20000,
    0x60000,
    0xC0000,
    0x02101,
    0x02102,
    0x0A103,
    0x20806,
    0x004E8,
    0x20C27,
    0x3A101,
    0x22105,
    0x29880,
    0x00804,
    0x00300,
    0x01000,
    0x00280,
    0x02000,
    0x10000,
    0x00800,
    0xB0000,
    0x90000,
    0x30000,
    0x50000,
    0xD0000,
    0x70000,
    0xF0000,
)

# --- Native bit groups each table fills ----------------------------------------------
# A group runs across several native fields (fields.py): the tables were built over these
# runs of bits, so they are written as runs here.

# Two-source (and one-source) forms.
# Control: cond modifier; saturate, AccWrEn, Atomic, NoMask; predicate inversion and
# control, flag, channel offset, exec size.  XeHPC moved flag and exec fields and has no
# AccWrEn bit here (33 is its dst subregister low bit).
GFX12_CONTROL_BITS = ((95, 92), (34, 31), (28, 16))
XEHPC_CONTROL_BITS = ((95, 92), (34, 34), (32, 31), (28, 18))
# Datatype: src1 file and type, src0 file, dst file and hstride, immediate flags, src0 and
# dst types, dst address mode.
DATATYPE_BITS = ((98, 98), (91, 88), (66, 66), (50, 46), (43, 35))
GFX12_SUBREG_BITS = ((103, 99), (71, 67), (55, 51))  # src1, src0, dst subregister
XEHPC_SUBREG_BITS = ((87, 87), (71, 67), (55, 51), (33, 33))  # src0 and dst subregister with their low bits
GFX12_SRC0_BITS = ((87, 80), (65, 64), (45, 44))  # src0 region, addr mode, modifiers
XEHPC_SRC0_BITS = ((86, 80), (65, 64), (45, 44))
GFX12_SRC1_BITS = ((121, 112), (97, 96))  # src1 modifiers, region, addr mode
XEHPC_SRC1_BITS = ((121, 120), (118, 112), (103, 99), (97, 96))  # ... and src1 subregister

# Three-source forms.
GFX12_3SRC_CONTROL_BITS = ((95, 92), (90, 88), (82, 80), (50, 50), (48, 48), (42, 36), (34, 31), (28, 16))
XEHP_3SRC_CONTROL_BITS = ((95, 92), (90, 88), (82, 80), (50, 50), (49, 48), (42, 36), (34, 31), (28, 16))
XEHPC_3SRC_CONTROL_BITS = ((95, 92), (90, 88), (82, 80), (50, 48), (42, 36), (34, 34), (32, 31), (28, 18))
THREE_SOURCE_SOURCE_BITS = ((114, 112), (98, 96), (91, 91), (87, 83), (66, 64), (47, 43), (35, 35))
THREE_SOURCE_SUBREG_BITS = ((119, 115), (103, 99), (71, 67), (55, 51))

# --- Layouts of the compacted word ---------------------------------------------------

COMPACT_OPCODE = (6, 0)


def _copies(
    native: Formats,
    operands: Binary | Ternary,
    swsb: Fragment,
    dst: Fragment,
    src0: Fragment,
    src1: Fragment,
    src2: Fragment | None = None,
) -> tuple[CopiedField, ...]:
    """The fields copied unchanged: where they sit in the compacted word (the arguments) and in
    the native one (the field table; `operands` is its binary or ternary format)."""
    copies = [
        ("opcode", COMPACT_OPCODE, native.header.opcode),
        ("debug", (7, 7), native.header.breakpoint),
        ("swsb", swsb, native.header.swsb),
        ("dst register", dst, operands.dst.number),
        ("src0 register", src0, operands.src0.number),
    ]
    if src2 is not None:
        assert isinstance(operands, Ternary), "only three-source formats have a src2"
        copies.append(("src2 register", src2, operands.src2.number))
    copies.append(("src1 register", src1, operands.src1.number))
    return tuple(CopiedField(name, compact, _one_piece(field)) for name, compact, field in copies)


def _one_piece(field: Field) -> Fragment:
    (piece,) = field.pieces
    return piece


def _gfx12_two_source(native: Formats, src0_table: tuple[int, ...], src1_table: tuple[int, ...]) -> CompactFormat:
    return CompactFormat(
        name="two-source",
        indexed=(
            IndexedField("control index", ((28, 24),), GFX12_CONTROL, GFX12_CONTROL_BITS),
            IndexedField("datatype index", ((34, 30),), GFX12_DATATYPE, DATATYPE_BITS),
            IndexedField("subregister index", ((39, 35),), GFX12_SUBREG, GFX12_SUBREG_BITS),
            IndexedField("src0 index", ((51, 48),), src0_table, GFX12_SRC0_BITS),
            IndexedField("src1 index", ((55, 52),), src1_table, GFX12_SRC1_BITS),
        ),
        copied=_copies(native, native.binary, swsb=(15, 8), dst=(23, 16), src0=(47, 40), src1=(63, 56)),
        immediate=(63, 52),
        replaced_by_immediate=("src1 index", "src1 register"),
    )


def _gfx12_three_source(
    native: Formats, control_table: tuple[int, ...], control_bits: tuple[Fragment, ...], source_table: tuple[int, ...]
) -> CompactFormat:
    return CompactFormat(
        name="three-source",
        indexed=(
            IndexedField("control index", ((28, 24),), control_table, control_bits),
            IndexedField("source index", ((34, 30),), source_table, THREE_SOURCE_SOURCE_BITS),
            IndexedField("subregister index", ((39, 35),), GFX12_3SRC_SUBREG, THREE_SOURCE_SUBREG_BITS),
        ),
        copied=_copies(native, native.ternary, swsb=(15, 8), dst=(23, 16), src0=(47, 40), src1=(63, 56), src2=(55, 48)),
    )


def _xehpc_three_source(
    native: Formats, control_table: tuple[int, ...], source_table: tuple[int, ...]
) -> CompactFormat:
    return CompactFormat(
        name="three-source",
        indexed=(
            IndexedField("control index", ((21, 18),), control_table, XEHPC_3SRC_CONTROL_BITS),
            IndexedField("source index", ((25, 22),), source_table, THREE_SOURCE_SOURCE_BITS),
            IndexedField("subregister index", ((31, 30), (28, 26)), XEHPC_3SRC_SUBREG, THREE_SOURCE_SUBREG_BITS),
        ),
        copied=_copies(native, native.ternary, swsb=(17, 8), dst=(39, 32), src0=(47, 40), src1=(63, 56), src2=(55, 48)),
    )


def _xehpc_two_source(native: Formats) -> CompactFormat:
    return CompactFormat(
        name="two-source",
        indexed=(
            IndexedField("control index", ((22, 18),), XEHPC_CONTROL, XEHPC_CONTROL_BITS),
            IndexedField("src0 index", ((25, 23),), XEHPC_SRC0, XEHPC_SRC0_BITS),
            IndexedField("datatype index", ((31, 30), (28, 26)), XEHPC_DATATYPE, DATATYPE_BITS),
            IndexedField("subregister index", ((51, 48),), XEHPC_SUBREG, XEHPC_SUBREG_BITS),
            IndexedField("src1 index", ((55, 52),), XEHPC_SRC1, XEHPC_SRC1_BITS),
        ),
        copied=_copies(native, native.binary, swsb=(17, 8), dst=(39, 32), src0=(47, 40), src1=(63, 56)),
        immediate=(63, 52),
        replaced_by_immediate=("src1 index", "src1 register"),
    )


# --- Which opcodes compact ------------------------------------------------------------

# One- and two-source opcodes with a compacted form on every Xe platform: sync; add, mul,
# avg; frc, rndu, rndd, rnde, rndz; mac, mach; lzd, fbh, fbl, cbit; addc, subb; mov, sel,
# movi, not, and, or, xor, shr, shl; asr; ror, rol, cmp, cmpn; bfrev; bfi1.
_COMMON_TWO_SOURCE = frozenset([0x01, *range(0x40, 0x50), *range(0x61, 0x6A), 0x6C, 0x6E, 0x6F, 0x70, 0x71, 0x77, 0x79])
_GFX12_THREE_SOURCE = frozenset([0x58, 0x5B, 0x72, 0x78, 0x7A])  # dp4a, mad, csel, bfe, bfi2

_XELP, _XEHPG, _XEHPC = (layout_fields(p) for p in (hwlib.XELP, hwlib.XEHPG, hwlib.XEHPC))

SCHEMES: dict[str, CompactionScheme] = {
    # Keyed by hw.Platform.name.
    "xelp": CompactionScheme(
        native=_XELP,
        two_source=_gfx12_two_source(_XELP, GFX12_SRC0, GFX12_SRC1),
        three_source=_gfx12_three_source(_XELP, GFX12_3SRC_CONTROL, GFX12_3SRC_CONTROL_BITS, GFX12_3SRC_SOURCE),
        dpas=_gfx12_three_source(_XELP, GFX12_3SRC_CONTROL, GFX12_3SRC_CONTROL_BITS, GFX12_3SRC_SOURCE),
        two_source_opcodes=_COMMON_TWO_SOURCE | {0x50, 0x51},
        three_source_opcodes=_GFX12_THREE_SOURCE,
        dpas_opcodes=frozenset(),
    ),
    "xehpg": CompactionScheme(
        native=_XEHPG,
        two_source=_gfx12_two_source(_XEHPG, XEHP_SRC0, XEHP_SRC1),
        three_source=_gfx12_three_source(_XEHPG, XEHP_3SRC_CONTROL, XEHP_3SRC_CONTROL_BITS, XEHP_3SRC_SOURCE),
        dpas=_gfx12_three_source(_XEHPG, XEHP_3SRC_CONTROL, XEHP_3SRC_CONTROL_BITS, XEHP_3SRC_SOURCE),
        two_source_opcodes=_COMMON_TWO_SOURCE | {0x50, 0x51},
        # ... and add3, dpas, dpasw, bfn; XeHPG's dpas shares the three-source tables.
        three_source_opcodes=_GFX12_THREE_SOURCE | {0x52, 0x59, 0x5A, 0x6B},
        dpas_opcodes=frozenset(),
    ),
    "xehpc": CompactionScheme(
        native=_XEHPC,
        two_source=_xehpc_two_source(_XEHPC),
        three_source=_xehpc_three_source(_XEHPC, XEHPC_3SRC_CONTROL, XEHPC_3SRC_SOURCE),
        dpas=_xehpc_three_source(_XEHPC, XEHPC_DPAS_CONTROL, XEHPC_DPAS_SOURCE),
        two_source_opcodes=_COMMON_TWO_SOURCE | {0x53, 0x54},  # ... and macl, srnd
        three_source_opcodes=_GFX12_THREE_SOURCE | {0x52, 0x5D, 0x6B},  # ... and add3, madm, bfn
        dpas_opcodes=frozenset([0x59]),
    ),
}

# --- Immediates -----------------------------------------------------------------------

# Immediate type codes (the 4-bit type field of an immediate operand).
_UV, _UW, _UD, _V, _W, _D, _VF, _HF, _F = 0, 1, 2, 4, 5, 6, 8, 9, 10
_TYPE_NAMES = {
    0: "uv",
    1: "uw",
    2: "ud",
    3: "uq",
    4: "v",
    5: "w",
    6: "d",
    7: "q",
    8: "vf",
    9: "hf",
    10: "f",
    11: "df",
    12: "type 12",
    13: "bf",
    14: "type 14",
    15: "type 15",
}


def _sign_extend(value: int, bits: int) -> int:
    return value - (1 << bits) if value & (1 << (bits - 1)) else value


def expand_immediate(type_code: int, compact: int) -> int | None:
    """The 32-bit immediate a 12-bit compacted one stands for, or None for types without one.

    Floats keep their 12 most significant bits (sign, exponent, top of the mantissa),
    integers their 12 least significant (signed ones sign-extended); 16-bit types are
    replicated into both halves of the dword as the native encoding requires.
    """
    if type_code == _F:
        return compact << 20
    if type_code == _HF:
        return (compact << 20) | (compact << 4)
    if type_code in (_UD, _UV, _V, _VF):
        return compact
    if type_code == _UW:
        return (compact << 16) | compact
    if type_code == _D:
        return _sign_extend(compact, 12) & 0xFFFFFFFF
    if type_code == _W:
        half = _sign_extend(compact, 12) & 0xFFFF
        return (half << 16) | half
    return None


def compact_immediate(type_code: int, value: int) -> int | None:
    """The 12-bit form of a 32-bit immediate, or None if it has none (inverse of expand_immediate)."""
    for candidate in _immediate_candidates(type_code, value):
        if expand_immediate(type_code, candidate) == value:
            return candidate
    return None


def _immediate_candidates(type_code: int, value: int) -> tuple[int, ...]:
    if type_code in (_F, _HF):
        return ((value >> 20) & 0xFFF,)
    return (value & 0xFFF,)


# --- Expansion and compaction ---------------------------------------------------------


def scheme(hw: str | hwlib.Platform) -> CompactionScheme:
    platform = hwlib.platform(hw)
    return SCHEMES[platform.name]


def is_compacted(data: bytes) -> bool:
    """True when the instruction starting at data[0] is an 8-byte compacted one."""
    return len(data) >= 4 and bool(int.from_bytes(data[:4], "little") >> COMPACTED_BIT & 1)


def _immediate_type(native: int, fields: Formats) -> int | None:
    """The type code of the immediate operand of a two-source native word, if it has one."""
    binary = fields.binary
    if binary.src0_is_immediate.get(native):
        return binary.src0.type.get(native)
    if binary.src1_is_immediate.get(native):
        return binary.src1.type.get(native)
    return None


def expand_compacted(data: bytes, hw: str | hwlib.Platform, offset: int = 0) -> bytes:
    """The 16-byte native instruction a compacted 8-byte one stands for.

    `offset` is where `data` sits in its kernel; error messages name it.  Raises
    DecodeError when the bytes are not a compacted instruction this platform has.
    """
    platform = hwlib.platform(hw)
    if len(data) != 8:
        raise DecodeError(f"a compacted instruction is 8 bytes, got {len(data)}", offset)
    word = int.from_bytes(data, "little")
    if not word >> COMPACTED_BIT & 1:
        raise DecodeError("not a compacted instruction (bit 29, CmptCtrl, is clear)", offset)
    opcode = field_bits(word, COMPACT_OPCODE)
    platform_scheme = SCHEMES[platform.name]
    layout = platform_scheme.format_for(opcode)
    if layout is None:
        raise DecodeError(f"opcode 0x{opcode:02x} has no compacted form on {platform}", offset)

    native = 0
    for copied in layout.copied:
        if copied.name not in layout.replaced_by_immediate:
            native = place_bits(native, (copied.native,), field_bits(word, copied.compact))
    for indexed in layout.indexed:
        if indexed.name in layout.replaced_by_immediate:
            continue
        index = take_bits(word, indexed.index)
        if index >= len(indexed.table):
            raise DecodeError(
                f"{layout.name} {indexed.name} {index} is past the end of {platform}'s "
                f"{len(indexed.table)}-entry table",
                offset,
            )
        native = place_bits(native, indexed.native, indexed.table[index])

    if layout.immediate is not None:
        type_code = _immediate_type(native, platform_scheme.native)
        if type_code is None:
            for name in layout.replaced_by_immediate:
                native = _expand_named(native, word, layout, name)
        else:
            value = expand_immediate(type_code, field_bits(word, layout.immediate))
            if value is None:
                raise DecodeError(
                    f"a compacted immediate cannot have type {_TYPE_NAMES[type_code]} (datatype index selects it)",
                    offset,
                )
            immediate = platform_scheme.native.binary.immediate
            native = native & ~immediate.positions | immediate.put(value)
    return native.to_bytes(16, "little")


def _expand_named(native: int, word: int, layout: CompactFormat, name: str) -> int:
    for indexed in layout.indexed:
        if indexed.name == name:
            return place_bits(native, indexed.native, indexed.table[take_bits(word, indexed.index)])
    for copied in layout.copied:
        if copied.name == name:
            return place_bits(native, (copied.native,), field_bits(word, copied.compact))
    raise AssertionError(f"{layout.name} has no field {name}")


def compact(data: bytes, hw: str | hwlib.Platform) -> bytes | None:
    """The 8-byte compacted form of a 16-byte native instruction, or None if it has none.

    Picks the first matching entry of each table, as iga64's -Xautocompact does; bits an
    immediate overwrites are don't-cares in the lookup.
    """
    platform = hwlib.platform(hw)
    if len(data) != 16:
        raise DecodeError(f"a native instruction is 16 bytes, got {len(data)}", 0)
    native = int.from_bytes(data, "little")
    if native >> COMPACTED_BIT & 1:
        return None
    platform_scheme = SCHEMES[platform.name]
    layout = platform_scheme.format_for(platform_scheme.native.header.opcode.get(native))
    if layout is None:
        return None

    type_code = _immediate_type(native, platform_scheme.native) if layout.immediate is not None else None
    immediate = platform_scheme.native.binary.immediate if type_code is not None else None
    word = 1 << COMPACTED_BIT
    for copied in layout.copied:
        if immediate is None or copied.name not in layout.replaced_by_immediate:
            word = place_bits(word, (copied.compact,), field_bits(native, copied.native))
    for indexed in layout.indexed:
        if immediate is not None and indexed.name in layout.replaced_by_immediate:
            continue
        index = _find_entry(indexed, native, immediate)
        if index is None:
            return None
        word = place_bits(word, indexed.index, index)
    if immediate is not None:
        assert type_code is not None and layout.immediate is not None  # what `immediate` was chosen on
        small = compact_immediate(type_code, immediate.get(native))
        if small is None:
            return None
        word = place_bits(word, (layout.immediate,), small)

    # Bits no field maps (reserved bits, a 64-bit immediate's high half, ...) make the
    # instruction incompactable: the round trip must give back every bit.
    result = word.to_bytes(8, "little")
    if expand_compacted(result, platform) != data:
        return None
    return result


def _find_entry(indexed: IndexedField, native: int, immediate: Field | None) -> int | None:
    relevant = (1 << _width(indexed.native)) - 1
    if immediate is not None:
        # Native bits inside the immediate dword are overwritten by it: don't care.
        position = 0
        for high, low in reversed(indexed.native):
            if low >= immediate.shift:
                relevant &= ~(((1 << (high - low + 1)) - 1) << position)
            position += high - low + 1
    wanted = take_bits(native, indexed.native) & relevant
    for index, entry in enumerate(indexed.table):
        if entry & relevant == wanted:
            return index
    return None
