"""Where every field of a native Xe instruction sits: one table per instruction format.

Each field is declared once here: its name, its bits, and how the two native layouts differ
(`GEN12`: XeLP, XeHP, XeHPG; `XEHPC`), the layout a platform uses being
`hw.Platform.instruction_layout`.  The encoder, the decoder and compaction take positions
from these tables and spell none themselves, so a field cannot be written in one place and
read from another (nGEN declares its instruction layouts once for both directions in the
same way).

A field is one or more pieces of the 128-bit instruction, the most significant first:
`(39, 36)` is bits 39..36, `5` is bit 5 alone, `((55, 51), (33, 33))` is a six-bit value
whose top five bits are 55..51 and whose low bit is 33.  `bits(..., unit=8)` holds a value
in steps of 8 (XeHPC's channel offset is stored divided by 8), `bits(..., signed=True)` a
two's-complement value.  `varies(gen12=..., xehpc=...)` gives a field per layout; a layout
left out does not have the field (its `present` is False and it holds only 0).

The formats, after the reference tables of IGA and nGEN (see docs/isa.md):

- `header`: what every format shares (opcode, SWSB, execution size, predication, ...);
- `binary`: one- and two-source ALU instructions and math, whose operand fields sync and
  the branches use too (branch registers are `binary.src0`/`binary.dst`);
- `ternary`: three-source instructions (mad, add3, bfn, ...), whose operand fields dpas uses;
- `dpas`, `send`, `sync`, `branch`: the fields only those instructions have.

`layout_fields(platform)` resolves the tables for one platform: a tree of `Group`s whose
leaves are `Field`s with `get(bits)`, `put(value)` and `fits(value)`.  Each kind of group
(`Header`, `Binary`, `BinarySource`, ...) is a class naming its members with their types, so
that a misspelt field is a type error; resolving checks the classes against the tables.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar, Union

from .. import hw as hwlib

GEN12 = "gen12"  # XeLP, XeHP, XeHPG
XEHPC = "xehpc"
LAYOUTS = (GEN12, XEHPC)

Piece = tuple[int, int]  # (high bit, low bit), inclusive


@dataclass(frozen=True)
class Bits:
    """A field declaration: pieces (most significant first), the unit of the value, its sign."""

    pieces: tuple[Piece, ...]
    unit: int = 1
    signed: bool = False


def _piece(spec) -> Piece:
    return (spec, spec) if isinstance(spec, int) else tuple(spec)


def bits(*pieces: Piece | int, unit: int = 1, signed: bool = False) -> Bits:
    return Bits(tuple(_piece(p) for p in pieces), unit, signed)


@dataclass(frozen=True)
class Varies:
    """A field whose bits differ per layout (None: the layout has no such field)."""

    gen12: object = None
    xehpc: object = None


def varies(gen12=None, xehpc=None) -> Varies:
    return Varies(gen12, xehpc)


# A table entry: a field's bits (given directly, per layout, or computed from the platform), or a
# group of fields.
Spec = Union[int, Piece, tuple[Piece, ...], Bits, Varies, Callable[[hwlib.Platform], Piece], "Table"]
Table = dict[str, Spec]


# ---------------------------------------------------------------------------------------
# The tables

COMPACTED = 29  # CmptCtrl: the same bit in both layouts and in the compacted form

HEADER: Table = {
    "opcode": (6, 0),
    "opcode_reserved": 7,  # must be zero
    "swsb": lambda platform: (7 + platform.swsb_bits, 8),  # hw.Platform.swsb_bits wide
    "exec_size": varies(gen12=(18, 16), xehpc=(20, 18)),  # log2 of the execution size
    "channel_offset": varies(gen12=bits((21, 19), unit=4), xehpc=bits((25, 24), unit=8)),
    "flag_subreg": varies(gen12=22, xehpc=21),
    "flag_reg": varies(gen12=23, xehpc=(23, 22)),
    "predicate": varies(gen12=(27, 24), xehpc=(27, 26)),  # 0 none, 1 normal, then the any/all modes
    "predicate_invert": 28,
    "compacted": COMPACTED,
    "breakpoint": 30,
    "no_mask": 31,
    "atomic": 32,
    "acc_write_enable": varies(gen12=33),  # XeHPC: bit 33 is the destination's low subregister bit
    "saturate": 34,
}

# Subregisters are byte offsets.  XeHPC's 64-byte registers need six bits: the dst and src0
# fields gain a low bit elsewhere, src1 and the three-source operands hold even offsets only.
# A math-macro operand (math.invm/rsqtm, madm) holds its mme register in the subregister bits.
BINARY: Table = {
    "condition": (95, 92),  # condition modifier; math: the function
    "src0_is_immediate": 46,
    "src1_is_immediate": 47,
    "immediate": (127, 96),  # a 32-bit immediate (a 16-bit one twice), or the low half of a 64-bit one
    "immediate_high": (95, 64),  # the high half of a 64-bit immediate (one-source instructions)
    "dst": {
        "indirect": 35,
        "type": (39, 36),
        "hstride": (49, 48),
        "file": 50,  # 1 GRF, 0 architecture register
        "subreg": varies(gen12=(55, 51), xehpc=((55, 51), (33, 33))),
        "mme": (55, 51),
        "number": (63, 56),
        "address_offset": varies(gen12=bits((59, 50), signed=True), xehpc=bits((59, 50), (33, 33), signed=True)),
        "address_subreg": (63, 60),
    },
    "src0": {
        "type": (43, 40),
        "modifiers": (45, 44),  # bit 1 negate (logic: NOT), bit 0 abs
        "hstride": (65, 64),
        "file": 66,
        "subreg": varies(gen12=(71, 67), xehpc=((71, 67), (87, 87))),
        "mme": (71, 67),
        "number": (79, 72),
        "address_offset": varies(gen12=bits((75, 66), signed=True), xehpc=bits((75, 66), (87, 87), signed=True)),
        "address_subreg": (79, 76),
        "indirect": 80,
        "width": (83, 81),
        "vstride": varies(gen12=(87, 84), xehpc=(86, 84)),  # all ones: VxH
    },
    "src1": {
        "type": (91, 88),
        "modifiers": (121, 120),
        "hstride": (97, 96),
        "file": 98,
        "subreg": varies(gen12=(103, 99), xehpc=bits((103, 99), unit=2)),
        "mme": (103, 99),
        "number": (111, 104),
        "address_offset": varies(gen12=bits((107, 98), signed=True), xehpc=bits((107, 98), unit=2, signed=True)),
        "address_subreg": (111, 108),
        "indirect": 112,
        "width": (115, 113),
        "vstride": varies(gen12=(119, 116), xehpc=(118, 116)),
    },
}

# Three-source types are 3-bit codes read as integer or float types by `float`.
TERNARY: Table = {
    "float": 39,  # the execution type: 1 float, 0 integer
    "condition": (95, 92),
    "bfn_condition": (45, 44),  # bfn: eq/gt/lt, where src0's modifiers would be
    "bfn_function": ((95, 92), (87, 84)),  # bfn: the truth table
    "src0_is_immediate": 46,
    "src2_is_immediate": 47,
    "src0_immediate": (79, 64),
    "src2_immediate": (127, 112),
    "dst": {
        "type": (38, 36),
        "hstride": (49, 48),  # 0: <1>, 1: <2>
        "file": 50,
        "subreg": varies(gen12=(55, 51), xehpc=((55, 51), (33, 33))),
        "mme": (55, 51),
        "number": (63, 56),
    },
    "src0": {
        "type": (42, 40),
        "modifiers": (45, 44),
        "vstride": ((43, 43), (35, 35)),  # 0, 1, 4, 8 as 0..3
        "hstride": (65, 64),
        "file": 66,
        "subreg": varies(gen12=(71, 67), xehpc=bits((71, 67), unit=2)),
        "mme": (71, 67),
        "number": (79, 72),
    },
    "src1": {
        "type": (90, 88),
        "modifiers": (87, 86),
        "vstride": ((91, 91), (83, 83)),
        "hstride": (97, 96),
        "file": 98,
        "subreg": varies(gen12=(103, 99), xehpc=bits((103, 99), unit=2)),
        "mme": (103, 99),
        "number": (111, 104),
    },
    "src2": {
        "type": (82, 80),
        "modifiers": (85, 84),
        "hstride": (113, 112),
        "file": 114,
        "subreg": varies(gen12=(119, 115), xehpc=bits((119, 115), unit=2)),
        "mme": (119, 115),
        "number": (127, 120),
    },
}

# dpas uses the three-source operand fields (no regions or modifiers) and these.
DPAS: Table = {
    "repeat_count": (45, 43),  # the count - 1
    "systolic_depth": (49, 48),  # log2
    "src1_precision": (87, 86),  # sub-byte sources: 1 four-bit, 2 two-bit elements of a ub/b type
    "src2_precision": (85, 84),
    "reserved": varies(xehpc=33),  # no low subregister bit for the destination: must be zero
}

# Send registers are whole GRFs in the `binary` operands' file and number fields.
SEND: Table = {
    "sfid": (95, 92),
    "serialize": varies(gen12=33),
    "reserved": varies(xehpc=33),  # XeHPC has no Serialize: must be zero
    "eot": 34,
    "desc": ((123, 122), (71, 67), (55, 51), (121, 113), (91, 81)),
    "desc_in_a0": 48,
    "exdesc": bits((127, 124), (97, 96), (65, 64), (47, 35), unit=1 << 11),  # ExDesc[31:11]
    "exdesc_in_a0": 49,
    "exdesc_a0_subreg": (42, 40),  # with the extended descriptor in a0
    "exbso": 39,
    "cps": 35,
    "src1_length": (103, 99),  # XeLP: ExDesc[10:6]
}

SYNC: Table = {
    "function": (95, 92),
    "src0_register": (86, 66),  # src0's register, region and address bits: zero (null)
    "reserved": varies(xehpc=33),  # must be zero
}

# Branch registers, immediate flags and the jump immediate are the `binary` fields.
BRANCH: Table = {
    "jip": (127, 96),  # a byte offset from the branch, two's complement (calla: an absolute address)
    "uip": (95, 64),
    "branch_control": 33,  # if, else, goto: ".b"
}

FORMATS: Table = {
    "header": HEADER,
    "binary": BINARY,
    "ternary": TERNARY,
    "dpas": DPAS,
    "send": SEND,
    "sync": SYNC,
    "branch": BRANCH,
}


# ---------------------------------------------------------------------------------------
# Resolved fields


class Field:
    """A resolved field.  `get(bits)` is its value in instruction `bits`; `put(value)` the
    instruction bits that hold `value` (out-of-range values wrap: check `fits` first).
    `positions` masks the instruction bits it occupies; `limit` is one more than its largest
    unsigned value; a field in one piece starts at bit `shift`."""

    __slots__ = ("name", "pieces", "unit", "signed", "width", "positions", "limit", "shift", "present")

    def __init__(self, name: str, pieces: tuple[Piece, ...], unit: int = 1, signed: bool = False):
        self.name = name
        self.pieces = pieces
        self.unit = unit
        self.signed = signed
        self.width = sum(high - low + 1 for high, low in pieces)
        self.limit = unit << self.width
        self.shift = pieces[-1][1] if pieces else 0
        self.present = self.width > 0
        self.positions = 0
        for high, low in pieces:
            if not 0 <= low <= high < 128:
                raise ValueError(f"{name}: bits {high}..{low} are not inside a 128-bit instruction")
            piece = ((1 << (high - low + 1)) - 1) << low
            if self.positions & piece:
                raise ValueError(f"{name}: its pieces overlap")
            self.positions |= piece

    def fits(self, value: int) -> bool:
        if value % self.unit:
            return False
        raw = value // self.unit
        if self.signed:
            return -(1 << (self.width - 1)) <= raw < (1 << (self.width - 1))
        return 0 <= raw < (1 << self.width)

    def get(self, bits: int) -> int:
        raw = 0
        for high, low in self.pieces:
            width = high - low + 1
            raw = raw << width | (bits >> low) & ((1 << width) - 1)
        if self.signed and raw >> (self.width - 1):
            raw -= 1 << self.width
        return raw * self.unit

    def put(self, value: int) -> int:
        raw = value // self.unit
        out = 0
        for high, low in reversed(self.pieces):
            width = high - low + 1
            out |= (raw & ((1 << width) - 1)) << low
            raw >>= width
        return out

    def __repr__(self) -> str:
        return f"Field({self.name}, {self.pieces})"


class _PlainField(Field):
    """One piece, unsigned, unit 1: most fields, read with one shift and one mask."""

    __slots__ = ("_mask",)

    def __init__(self, name: str, pieces: tuple[Piece, ...]):
        super().__init__(name, pieces)
        self._mask = self.limit - 1

    def fits(self, value: int) -> bool:
        return 0 <= value <= self._mask

    def get(self, bits: int) -> int:
        return bits >> self.shift & self._mask

    def put(self, value: int) -> int:
        return (value & self._mask) << self.shift


class _ScaledField(Field):
    """One piece, unsigned, counted in units (a channel offset, an even subregister)."""

    __slots__ = ("_mask",)

    def __init__(self, name: str, pieces: tuple[Piece, ...], unit: int):
        super().__init__(name, pieces, unit)
        self._mask = (1 << self.width) - 1

    def fits(self, value: int) -> bool:
        return 0 <= value < self.limit and not value % self.unit

    def get(self, bits: int) -> int:
        return (bits >> self.shift & self._mask) * self.unit

    def put(self, value: int) -> int:
        return (value // self.unit & self._mask) << self.shift


class Group:
    """Fields under names: a format, or one operand of a format.  `positions` covers them all.

    Each kind of group is a subclass below that declares its members' names and types; the
    tables above give their bits.  Resolving a table checks that the two name the same
    members, so a field added to one and not the other fails at import."""

    def __init__(self, name: str, members: dict[str, Field | Group]):
        self.name = name
        self.positions = 0
        self.members = members
        for key, member in members.items():
            setattr(self, key, member)
            self.positions |= member.positions

    def __repr__(self) -> str:
        return f"Group({self.name}, {list(self.members)})"


class Register(Group):
    """What every register operand has (a three-source destination has only this)."""

    type: Field
    hstride: Field
    file: Field
    subreg: Field
    mme: Field
    number: Field


class BinaryDst(Register):
    indirect: Field
    address_offset: Field
    address_subreg: Field


class BinarySource(BinaryDst):
    modifiers: Field
    width: Field
    vstride: Field


class TernarySource(Register):
    modifiers: Field


class TernaryRegionSource(TernarySource):
    vstride: Field


class Header(Group):
    opcode: Field
    opcode_reserved: Field
    swsb: Field
    exec_size: Field
    channel_offset: Field
    flag_subreg: Field
    flag_reg: Field
    predicate: Field
    predicate_invert: Field
    compacted: Field
    breakpoint: Field
    no_mask: Field
    atomic: Field
    acc_write_enable: Field
    saturate: Field


class Binary(Group):
    condition: Field
    src0_is_immediate: Field
    src1_is_immediate: Field
    immediate: Field
    immediate_high: Field
    dst: BinaryDst
    src0: BinarySource
    src1: BinarySource


class Ternary(Group):
    float: Field
    condition: Field
    bfn_condition: Field
    bfn_function: Field
    src0_is_immediate: Field
    src2_is_immediate: Field
    src0_immediate: Field
    src2_immediate: Field
    dst: Register
    src0: TernaryRegionSource
    src1: TernaryRegionSource
    src2: TernarySource


class Dpas(Group):
    repeat_count: Field
    systolic_depth: Field
    src1_precision: Field
    src2_precision: Field
    reserved: Field


class Send(Group):
    sfid: Field
    serialize: Field
    reserved: Field
    eot: Field
    desc: Field
    desc_in_a0: Field
    exdesc: Field
    exdesc_in_a0: Field
    exdesc_a0_subreg: Field
    exbso: Field
    cps: Field
    src1_length: Field


class Sync(Group):
    function: Field
    src0_register: Field
    reserved: Field


class Branch(Group):
    jip: Field
    uip: Field
    branch_control: Field


class Formats(Group):
    """Every format of one platform: `layout_fields(platform)`."""

    header: Header
    binary: Binary
    ternary: Ternary
    dpas: Dpas
    send: Send
    sync: Sync
    branch: Branch


def _field(name: str, spec) -> Field:
    if spec is None:
        return Field(name, ())
    if isinstance(spec, Bits):
        pieces, unit, signed = spec.pieces, spec.unit, spec.signed
    elif isinstance(spec, int) or isinstance(spec[0], int):
        pieces, unit, signed = (_piece(spec),), 1, False
    else:
        pieces, unit, signed = tuple(_piece(p) for p in spec), 1, False
    if len(pieces) == 1 and not signed:
        return _PlainField(name, pieces) if unit == 1 else _ScaledField(name, pieces, unit)
    return Field(name, pieces, unit, signed)


G = TypeVar("G", bound=Group)


def _resolve_group(name: str, table: Table, kind: type[G], platform: hwlib.Platform) -> G:
    declared = typing.get_type_hints(kind)
    if set(table) != set(declared):
        raise ValueError(f"{name}: the table's fields {sorted(table)} are not {kind.__name__}'s {sorted(declared)}")
    members: dict[str, Field | Group] = {}
    for key, spec in table.items():
        member_name, member_kind = f"{name}.{key}", declared[key]
        if isinstance(spec, dict) and issubclass(member_kind, Group):
            members[key] = _resolve_group(member_name, spec, member_kind, platform)
        elif not isinstance(spec, dict) and member_kind is Field:
            members[key] = _resolve_field(member_name, spec, platform)
        else:
            what = "a group of fields" if isinstance(spec, dict) else "one field"
            raise ValueError(f"{member_name}: {what} where {kind.__name__} declares a {member_kind.__name__}")
    return kind(name, members)


def _resolve_field(name: str, spec: Spec, platform: hwlib.Platform) -> Field:
    if callable(spec):
        spec = spec(platform)
    if isinstance(spec, Varies):
        spec = getattr(spec, platform.instruction_layout)
    return _field(name, spec)


def layout_fields(platform: hwlib.Platform) -> Formats:
    """Every format's fields on `platform` (build once per platform: `layout.layout_for`)."""
    if platform.instruction_layout not in LAYOUTS:
        raise ValueError(f"{platform}: unknown instruction layout '{platform.instruction_layout}'")
    return _resolve_group("instruction", FORMATS, Formats, platform)
