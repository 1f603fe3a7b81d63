"""Virtual registers and the values instruction selection computes with.

Instruction selection works on *virtual registers* (`VReg`): a run of bytes that the register
allocator later places in the GRF.  Vectors and GRF buffers are GRF-aligned (their regions can
then be checked against GRF boundaries before allocation); scalars are aligned to their size
and packed several to a GRF by the allocator.

Operands inside instructions are `xegen.emit.Reg`s with file "v": `number` is the virtual
register's id and `subreg` counts elements of the operand's type from the start of the
virtual register (it may run past one GRF).  The allocator rewrites them to real registers.

Values of expressions are `Region`s (lanes of a virtual register, evenly strided) or
`Constant`s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..emit.asm_printer import VIRTUAL_FILE
from ..errors import UnsupportedError
from ..ir.types import Type

VIRTUAL = VIRTUAL_FILE  # the register file name of virtual operands, for the lowering's modules

# IR scalar kind -> Xe type name.  bf16 is "bf" where the platform has it (see `xe_type`).
_XE_TYPES = {
    "s8": "b",
    "u8": "ub",
    "s16": "w",
    "u16": "uw",
    "s32": "d",
    "u32": "ud",
    "s64": "q",
    "u64": "uq",
    "f16": "hf",
    "bf16": "bf",
    "f32": "f",
    "f64": "df",
    "ptr": "uq",
}

# Xe type name -> bytes
TYPE_BYTES = {"b": 1, "ub": 1, "w": 2, "uw": 2, "hf": 2, "bf": 2, "d": 4, "ud": 4, "f": 4, "q": 8, "uq": 8, "df": 8}


def xe_type(t: Type) -> str:
    """The Xe type holding IR scalar type `t` (bf16 values are moved as :bf or :uw)."""
    if t.is_bool:
        raise UnsupportedError("a bool value has no register type (booleans live in flags)")
    return _XE_TYPES[t.kind]


@dataclass(eq=False)
class VReg:
    """A virtual register: `size` bytes, placed at a multiple of `alignment` bytes.

    `reserved` bytes (at least `size`) are kept free for it: whole GRFs for anything a send
    reads or writes.  `fixed` pins it to a physical byte address (r0, the pushed payload, the
    end-of-thread payload register)."""

    id: int
    size: int
    alignment: int
    name: str
    reserved: int
    fixed: int | None = None

    def __repr__(self) -> str:
        return f"%{self.name}{self.id}"


class VRegTable:
    """All virtual registers of a kernel, numbered in creation order (so allocation is
    deterministic)."""

    def __init__(self, grf_bytes: int):
        self.grf_bytes = grf_bytes
        self.regs: list[VReg] = []

    def new(
        self, size: int, name: str, alignment: int | None = None, fixed: int | None = None, whole_grfs: bool = False
    ) -> VReg:
        """A virtual register of `size` bytes; by default GRF-aligned when larger than 8 bytes,
        else aligned to its size.  `whole_grfs` reserves whole GRFs (send payloads)."""
        if alignment is None:
            # small values at least dword-aligned: XeHPC cannot address odd bytes in src1
            alignment = self.grf_bytes if size > 8 or whole_grfs else max(4, size)
        reserved = -(-size // self.grf_bytes) * self.grf_bytes if whole_grfs else size
        reg = VReg(len(self.regs), size, alignment, name, reserved, fixed)
        self.regs.append(reg)
        return reg

    def grfs(self, count: int, name: str) -> VReg:
        return self.new(count * self.grf_bytes, name, self.grf_bytes, whole_grfs=True)

    def scalar(self, t: Type | str, name: str = "s") -> VReg:
        size = TYPE_BYTES[t] if isinstance(t, str) else t.size
        return self.new(size, name, size)

    def __getitem__(self, index: int) -> VReg:
        return self.regs[index]

    def __len__(self) -> int:
        return len(self.regs)


@dataclass(frozen=True)
class Region:
    """`lanes` elements of IR scalar type `type` in a virtual register, starting `offset`
    bytes in, `stride` elements apart (stride 0: one element seen by every lane)."""

    reg: VReg
    offset: int
    type: Type
    lanes: int = 1
    stride: int = 1
    negate: bool = False  # a source modifier: -x (integers, floats) or ~x (logic instructions)

    def __neg__(self) -> Region:
        return replace(self, negate=not self.negate)

    @property
    def size(self) -> int:
        return self.type.size

    @property
    def is_scalar(self) -> bool:
        return self.lanes == 1 or self.stride == 0

    @property
    def end(self) -> int:
        """One past the last byte touched."""
        return self.offset + ((self.lanes - 1) * self.stride + 1) * self.size

    def lane(self, i: int) -> Region:
        return Region(self.reg, self.offset + i * self.stride * self.size, self.type, 1, 1, self.negate)

    def slice(self, start: int, count: int) -> Region:
        return Region(
            self.reg,
            self.offset + start * self.stride * self.size,
            self.type,
            count,
            self.stride if count > 1 else 1,
            self.negate,
        )

    def broadcast(self, lanes: int) -> Region:
        """This scalar seen by `lanes` lanes."""
        return Region(self.reg, self.offset, self.type, lanes, 0 if lanes > 1 else 1, self.negate)

    def plain(self) -> Region:
        """Without a source modifier."""
        return replace(self, negate=False)

    def as_type(self, t: Type) -> Region:
        """The same bytes read as `t` (lanes scale with the element size; dense regions only)."""
        if t.size == self.size:
            return replace(self, type=t)
        if self.lanes == 1 and t.size < self.size:
            return Region(self.reg, self.offset, t, 1, 1, self.negate)
        if self.stride not in (0, 1) and self.lanes > 1:
            raise UnsupportedError("cannot reinterpret a strided region")
        total = self.lanes * self.size
        if total % t.size:
            raise UnsupportedError(f"{self.lanes} x {self.type} is not a whole number of {t}")
        return Region(self.reg, self.offset, t, total // t.size, 1)


@dataclass(frozen=True)
class Constant:
    """An immediate value of IR type `type` (a Python int, float or bool), seen by `lanes` lanes."""

    value: int | float | bool
    type: Type
    lanes: int = 1

    def broadcast(self, lanes: int) -> Constant:
        return Constant(self.value, self.type, lanes)


Value = Region | Constant
