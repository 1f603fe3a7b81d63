"""Hardware functions that `Call` statements invoke: messages, multiply-add, synchronization.

Each function is an immutable record of its attributes; the operands are the call's
arguments.  Register operands are `Ptr`s into GRF buffers, memory operands `Ptr`s into
global or SLM buffers.  The interpreter (`xegen.ir.execute`) gives each one its meaning;
the layouts below are what instruction selection must reproduce.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from .expr import Expr, IRTypeError, Node, Ptr
from .types import Type

SEND_OPS = ("load", "store", "atomic", "prefetch")
SEND_KINDS = ("block", "scattered", "block2d")
BLOCK2D_TRANSFORMS = ("none", "vnni", "transpose")
SEND_SPACES = ("global", "slm")
ATOMIC_OPS = (
    "add",
    "sub",
    "min",
    "max",
    "and",
    "or",
    "xor",
    "inc",
    "dec",
    "xchg",
    "cmpxchg",
    "fadd",
    "fsub",
    "fmin",
    "fmax",
)
FENCE_SPACES = ("global", "slm")


class Func(Node):
    """Base of call targets.  Subclasses set `name` and `arg_names`; a trailing '?' in an
    argument name means the argument may be None (printed `null`)."""

    __slots__ = ()
    name: ClassVar[str]
    arg_names: ClassVar[tuple[str, ...]] = ()

    def attributes(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def expected_args(self) -> tuple[str, ...]:
        return self.arg_names

    def check_args(self, args: tuple) -> None:
        names = self.expected_args()
        if len(args) != len(names):
            raise IRTypeError(f"{self.name} takes {len(names)} arguments ({', '.join(names)}), not {len(args)}")
        for name, arg in zip(names, args, strict=True):
            optional = name.endswith("?")
            if arg is None:
                if not optional:
                    raise IRTypeError(f"{self.name}: argument '{name}' cannot be null")
                continue
            if not isinstance(arg, Expr):
                raise IRTypeError(f"{self.name}: argument '{name.rstrip('?')}' is not an expression")
            wants_pointer = name.rstrip("?") in ("dst", "src0", "src1", "src2", "src", "reg", "mem")
            if wants_pointer != isinstance(arg, Ptr):
                kind = "a pointer (&buf[offset])" if wants_pointer else "a value"
                raise IRTypeError(f"{self.name}: argument '{name.rstrip('?')}' must be {kind}")


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise IRTypeError(message)


@dataclass(frozen=True, slots=True, eq=False)
class Send(Func):
    """A memory message between global/SLM memory and GRF.

    block:     `count` elements of `type`, contiguous from the memory pointer, into the
               register pointer; arguments (mem, reg, mask).
    scattered: `count` slots; slot s reads/writes `elems` consecutive elements at
               mem + offsets[s]; registers hold the data component-major (element e of slot s
               at reg + (e*count + s)*size); arguments (mem, offsets, reg, mask).
    atomic:    scattered read-modify-write of `atomic` per slot (cmpxchg takes the compare
               values then the new values; inc and dec take none, and reg may be null).  With
               `returns`, each enabled slot's old memory value then replaces its component 0
               in reg (at reg + s*size, over the first operand; inc and dec need reg);
               masked-off slots keep theirs.  prefetch: a load with no register operand (reg
               is null).
    block2d:   (XeHPC's LSC 2D block load) a block of `elems` rows of `count` elements from a
               row-major surface of `height` rows, `width` bytes each, `pitch` bytes apart,
               starting at the memory pointer; arguments (mem, x, y, reg, mask): the block's
               first column x (elements) and row y, signed.  Elements outside the surface read
               as 0.  Registers: row r at r * P bytes, P = the row's bytes rounded up to a power
               of two (`block2d_row_bytes`); with `transform=vnni`, each group of 4 / size rows
               is one register row of dwords (the earlier row in the low bits), as dpas reads B;
               with `transform=transpose` (d32, d64), memory column c is register row c.
    mask:      null, a scalar bool, or one bool per element (block) / slot (scattered); a
               block2d takes null or a scalar."""

    name: ClassVar[str] = "send"
    op: str
    kind: str
    space: str
    type: Type
    count: int
    elems: int = 1
    atomic: str = ""
    width: int = 0  # block2d: the surface's row bytes, rows and row pitch in bytes
    height: int = 0
    pitch: int = 0
    transform: str = "none"  # block2d: none, vnni or transpose
    returns: bool = False  # atomic: the old values come back into reg

    def __post_init__(self):
        _require(self.op in SEND_OPS, f"send op must be one of {', '.join(SEND_OPS)}")
        _require(self.kind in SEND_KINDS, f"send kind must be one of {', '.join(SEND_KINDS)}")
        _require(self.space in SEND_SPACES, f"send space must be one of {', '.join(SEND_SPACES)}")
        _require(
            self.type.lanes == 1 and (self.type.is_int or self.type.is_float), "send type must be a scalar number type"
        )
        _require(self.count >= 1 and self.elems >= 1, "send count and elems must be positive")
        _require((self.op == "atomic") == (self.atomic != ""), "an atomic send names its operation, and only it")
        _require(self.atomic in ("", *ATOMIC_OPS), f"atomic operation must be one of {', '.join(ATOMIC_OPS)}")
        _require(self.op != "atomic" or self.kind == "scattered", "atomics are scattered messages")
        _require(not self.returns or self.op == "atomic", "only atomic sends return values")
        _require(self.kind != "block" or self.elems == 1, "elems applies to scattered and block2d messages only")
        _require(self.transform in BLOCK2D_TRANSFORMS, f"transform must be one of {', '.join(BLOCK2D_TRANSFORMS)}")
        if self.kind == "block2d":
            self._check_block2d()
        else:
            _require(
                self.width == self.height == self.pitch == 0 and self.transform == "none",
                "width, height, pitch and transform apply to block2d messages only",
            )

    def _check_block2d(self) -> None:
        """The limits of the hardware's 2D block loads (after Intel's XeTLA checks,
        `include/common/core/arch_config.hpp` and `limitation.hpp`)."""
        size = self.type.size
        _require(self.space == "global" and self.op in ("load", "prefetch"), "block2d messages load global memory")
        _require(size in (1, 2, 4, 8), "block2d elements are 1, 2, 4 or 8 bytes")
        _require(
            64 <= self.width < 1 << 24 and self.width % max(4, size) == 0,
            f"block2d surface width {self.width}: 64 bytes to 2^24, a multiple of {max(4, size)}",
        )
        _require(1 <= self.height <= 1 << 24, f"block2d surface height {self.height}: 1 to 2^24 rows")
        _require(
            self.width <= self.pitch < 1 << 24 and self.pitch % 8 == 0,
            f"block2d pitch {self.pitch}: at least the width {self.width}, a multiple of 8",
        )
        width, rows = self.count, self.elems
        _require(1 <= rows <= 32, f"block2d block height {rows}: 1 to 32 rows")
        row_bytes = width * size
        if self.transform == "vnni":
            _require(size in (1, 2), "a vnni block2d load takes d8 or d16 elements")
            group = 4 // size
            _require(
                group <= width <= 16 and group <= rows and rows % group == 0,
                f"vnni block2d {width}x{rows}: width {group} to 16, rows a multiple of {group}",
            )
        elif self.transform == "transpose":
            _require(size in (4, 8), "a transposed block2d load takes d32 or d64 elements")
            _require(
                (width <= 8 and rows & (rows - 1) == 0) if size == 4 else (rows == 8 and width in (1, 2, 4)),
                f"transposed block2d {width}x{rows}: d32 up to 8 columns and a power-of-two rows, d64 8 rows "
                "of 1, 2 or 4 columns",
            )
        else:
            _require(
                row_bytes <= 64 and row_bytes % 4 == 0 and row_bytes & (row_bytes - 1) == 0,
                f"block2d block width {width}: rows of 4 to 64 bytes, a power of two",
            )

    def expected_args(self) -> tuple[str, ...]:
        no_data = self.op == "prefetch" or (self.atomic in ("inc", "dec") and not self.returns)
        reg = "reg?" if no_data else "reg"
        if self.kind == "block":
            return ("mem", reg, "mask?")
        if self.kind == "block2d":
            return ("mem", "x", "y", reg, "mask?")
        return ("mem", "offsets", reg, "mask?")

    def check_args(self, args: tuple) -> None:
        super(Send, self).check_args(args)
        if self.kind == "block2d" and args[-1] is not None and args[-1].type.lanes > 1:
            raise IRTypeError("a block2d message's mask is one bool for the whole message")

    @property
    def register_bytes(self) -> int:
        """Bytes of register data the message reads or writes."""
        if self.kind == "block2d":
            rows, row_bytes = block2d_register_shape(self)
            return rows * _power_of_two_at_least(row_bytes)
        operands = 2 if self.atomic == "cmpxchg" else 0 if self.atomic in ("inc", "dec") else 1
        if self.returns:
            operands = max(operands, 1)  # the old values of inc and dec
        return self.count * self.elems * self.type.size * (operands if self.op == "atomic" else 1)


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def block2d_register_shape(f: Send) -> tuple[int, int]:
    """(register rows, bytes of data in each) of a block2d load: its rows, the rows of dword
    groups after the VNNI transform, or its columns after the transpose."""
    size, width, rows = f.type.size, f.count, f.elems
    if f.transform == "vnni":
        return rows // (4 // size), width * 4
    if f.transform == "transpose":
        return width, rows * size
    return rows, width * size


def block2d_row_bytes(f: Send) -> int:
    """Register bytes from one register row of a block2d load to the next."""
    return _power_of_two_at_least(block2d_register_shape(f)[1])


@dataclass(frozen=True, slots=True, eq=False)
class Dpas(Func):
    """Systolic multiply-add: dst[r][n] = src0[r][n] + sum_k A[r][k] * B[k][n].

    r < rcount (M), n < exec_size (N), k < sdepth * OPS where OPS = 32 / bits(src type).
    Layouts (bytes from each pointer): dst/src0 row-major, element (r, n) at (r*N + n)*size;
    src1 = B in VNNI form, dword (s, n) at (s*N + n)*4 holding OPS consecutive k values
    (k = s*OPS + j); src2 = A, row r of sdepth dwords at r*sdepth*4.

    `dpasw` (XeHPG) is the fused-pair form: threads 2i and 2i+1 of a group (the group's threads
    in order, dimension 0 fastest) multiply one shared A, each by its own B into its own dst.
    Each thread's src2 holds only `own_rows` = ceil(rcount/2) rows; the shared A is the even
    thread's src2 rows 0..own_rows-1 followed by the odd thread's rows 0..rcount-own_rows-1.
    Both threads of a pair must execute it together, and groups need an even thread count."""

    name: ClassVar[str] = "dpas"
    arg_names: ClassVar[tuple[str, ...]] = ("dst", "src0?", "src1", "src2")
    exec_size: int
    sdepth: int
    rcount: int
    dst_type: Type
    src1_type: Type
    src2_type: Type
    dpasw: bool = False

    def __post_init__(self):
        _require(self.exec_size in (8, 16), "dpas exec_size must be 8 or 16")
        _require(self.sdepth == 8, "dpas systolic depth must be 8")
        _require(1 <= self.rcount <= 8, "dpas repeat count must be 1..8")
        _require(
            self.src1_type.bits == self.src2_type.bits and self.src1_type.bits in (8, 16, 32),
            "dpas sources must both be 8- or 16-bit (or tf32)",
        )
        _require(
            self.dst_type.kind in ("f32", "s32", "u32", "f16", "bf16"), "dpas dst must be f32, s32, u32, f16 or bf16"
        )

    @property
    def ops_per_channel(self) -> int:
        return 32 // self.src1_type.bits

    @property
    def own_rows(self) -> int:
        """Rows of A read from this thread's src2: all of them, or for dpasw its half."""
        return -(-self.rcount // 2) if self.dpasw else self.rcount


@dataclass(frozen=True, slots=True, eq=False)
class Mad(Func):
    """dst[i] = src0[i] + src1[i*src1_stride] * src2[i*src2_stride] for i < exec_size,
    computed in dst_type (sources converted to it; float mad is fused).  Strides are in
    elements; 0 broadcasts element 0.  A null src0 means 0."""

    name: ClassVar[str] = "mad"
    arg_names: ClassVar[tuple[str, ...]] = ("dst", "src0?", "src1", "src2")
    exec_size: int
    dst_type: Type
    src1_type: Type
    src2_type: Type
    src1_stride: int = 1
    src2_stride: int = 1

    def __post_init__(self):
        _require(1 <= self.exec_size <= 32, "mad exec_size must be 1..32")
        _require(self.src1_stride >= 0 and self.src2_stride >= 0, "mad strides must be ≥ 0")


@dataclass(frozen=True, slots=True, eq=False)
class Dp4a(Func):
    """dst[i] = src0[i] + sum_j src1[i].byte[j] * src2[i].byte[j] (j < 4) in 32-bit integers;
    src1/src2 are dwords of four s8/u8 values; strides in dwords (0 broadcasts)."""

    name: ClassVar[str] = "dp4a"
    arg_names: ClassVar[tuple[str, ...]] = ("dst", "src0?", "src1", "src2")
    exec_size: int
    dst_type: Type
    src1_type: Type
    src2_type: Type
    src1_stride: int = 1
    src2_stride: int = 1

    def __post_init__(self):
        _require(1 <= self.exec_size <= 32, "dp4a exec_size must be 1..32")
        _require(self.dst_type.kind in ("s32", "u32"), "dp4a dst must be s32 or u32")
        _require(self.src1_type.kind in ("s8", "u8") and self.src2_type.kind in ("s8", "u8"), "dp4a sources are s8/u8")


@dataclass(frozen=True, slots=True, eq=False)
class Reorder(Func):
    """Convert and move a 2-D block: dst[r*drs + c*dcs] = (dst_type)src[r*srs + c*scs] for
    r < rows, c < cols (strides in elements of each side's type)."""

    name: ClassVar[str] = "reorder"
    arg_names: ClassVar[tuple[str, ...]] = ("dst", "src")
    src_type: Type
    dst_type: Type
    rows: int
    cols: int
    src_row_stride: int
    src_col_stride: int
    dst_row_stride: int
    dst_col_stride: int
    saturate: bool = False

    def __post_init__(self):
        _require(self.rows >= 1 and self.cols >= 1, "reorder needs a positive block")


@dataclass(frozen=True, slots=True, eq=False)
class Barrier(Func):
    """Thread-group barrier: signal, then wait for all threads of the group."""

    name: ClassVar[str] = "barrier"


@dataclass(frozen=True, slots=True, eq=False)
class Signal(Func):
    """First half of a split barrier: this thread has arrived."""

    name: ClassVar[str] = "signal"


@dataclass(frozen=True, slots=True, eq=False)
class Wait(Func):
    """Second half of a split barrier: wait until every thread has signalled."""

    name: ClassVar[str] = "wait"


@dataclass(frozen=True, slots=True, eq=False)
class Fence(Func):
    """Make this thread's earlier writes to `space` visible before later signals (slm: to the
    thread group), or before its later messages to every thread of the device (global)."""

    name: ClassVar[str] = "fence"
    space: str = "slm"

    def __post_init__(self):
        _require(self.space in FENCE_SPACES, f"fence space must be one of {', '.join(FENCE_SPACES)}")


@dataclass(frozen=True, slots=True, eq=False)
class EndOfThread(Func):
    name: ClassVar[str] = "eot"


FUNCS: dict[str, type[Func]] = {
    cls.name: cls for cls in (Send, Dpas, Mad, Dp4a, Reorder, Barrier, Signal, Wait, Fence, EndOfThread)
}
