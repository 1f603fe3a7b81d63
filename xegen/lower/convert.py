"""Conversions between IR types, as `mov`s where the hardware converts the IR's way.

- float to integer: `mov` truncates toward zero and clamps (NaN gives 0), as the IR defines;
- integer to float and float to float: `mov` rounds to nearest even (the kernel keeps cr0 at
  round-to-nearest with denormals preserved, see abi.py);
- integer to integer: `mov` keeps the low bits (wrap-around), `(sat)` clamps;
- bf16 to f32 is exact: the 16 bits shifted into the high half of a dword;
- f32 to bf16: `mov :bf` where the platform has the type (`tables.has_bfloat16`), else
  round-to-nearest-even with integer instructions (NaNs stay quiet NaNs);
- 64-bit integers: `mov` on platforms with 64-bit integer instructions, else 32-bit halves.
"""

from __future__ import annotations

import struct

from ..emit import tables as T
from ..emit.instruction import CondModifier, Predicate, Reg
from ..errors import UnsupportedError
from ..ir import evaluate
from ..ir import expr as E
from ..ir.semantics import round_float
from ..ir.types import BF16, F32, S32, U16, U32, Type
from .builder import Builder
from .values import Constant, Region, Value

_BF16_EXACT_SOURCES = frozenset({"f32", "f16", "s8", "u8", "s16", "u16", "bf16"})


def _bits(value: Region) -> Region:
    """bf16 data moved as raw 16-bit words."""
    return Region(value.reg, value.offset, U16, value.lanes, value.stride, value.negate)


def convert(b: Builder, dst: Region, src: Value, saturate: bool = False, predicate: Predicate | None = None) -> None:
    """dst = (dst.type) src, lane by lane (`src` may be a scalar or constant seen by all)."""
    to, frm = dst.type.scalar, src.type.scalar
    if isinstance(src, Constant):
        src = _constant(b, src, to, saturate)
        if isinstance(src, Constant):
            b.mov(
                _bits(dst) if to.kind == "bf16" else dst,
                src if to.kind != "bf16" else Constant(_bf16_bits(src.value), U16, src.lanes),
                predicate=predicate,
            )
            return
        frm = src.type.scalar
    if frm.kind == "bf16" and to.kind == "bf16":
        b.mov(_bits(dst), _bits(src), predicate=predicate)
        if saturate:
            raise UnsupportedError("saturating a bf16 value into bf16 is not supported")
        return
    if frm.kind == "bf16":
        if to == F32 and not saturate:
            b.alu("shl", dst, [_bits(src), Constant(16, U32)], predicate=predicate, types=("ud", "uw", "ud"))
            return
        wide = b.temp(F32, dst.lanes)
        b.alu("shl", wide, [_bits(src), Constant(16, U32)], types=("ud", "uw", "ud"))
        return convert(b, dst, wide, saturate, predicate)
    if to.kind == "bf16":
        if frm.kind not in _BF16_EXACT_SOURCES:
            raise UnsupportedError(f"converting {frm} to bf16 directly is not supported (go through f32)")
        if frm != F32 or saturate:
            wide = b.temp(F32, dst.lanes)
            convert(b, wide, src, saturate)
            src = wide
        if T.has_bfloat16(b.hw):
            b.mov(dst, src, predicate=predicate)
        else:
            _round_to_bf16(b, dst, src, predicate)
        return
    if to.bits == 64 or frm.bits == 64:
        return _convert_64(b, dst, src, saturate, predicate)
    b.mov(dst, src, saturate=saturate and not (frm == to and to.is_int), predicate=predicate)


def _bf16_bits(value: float) -> int:
    rounded = round_float(float(value), BF16)
    return struct.unpack("<I", struct.pack("<f", rounded))[0] >> 16


def _constant(b: Builder, c: Constant, to: Type, saturate: bool) -> Constant:
    """A constant converted at compile time by the IR's own semantics."""
    value = evaluate(E.Cast(to, E.const(c.value, c.type), saturate), {})
    v = float(value) if to.is_float else int(value)
    return Constant(v, to, c.lanes)


def _round_to_bf16(b: Builder, dst: Region, src: Region, predicate) -> None:
    """Round f32 to bf16, nearest even, with integer instructions; NaN keeps a quiet NaN."""
    lanes = dst.lanes
    work = b.flag_lanes(lanes)  # the NaN check's cmp and predicated sel run on whole flag units
    if src.lanes == 1 or src.stride == 0:
        bits = src.as_type(U32).lane(0).broadcast(work)
    elif src.stride == 1 and work == lanes:
        bits = src.as_type(U32)
    else:
        dense = b.temp(F32, work)
        b.mov(dense.slice(0, lanes), src)
        bits = dense.as_type(U32)
    lanes = work
    low = b.temp(U32, lanes)
    b.alu("shr", low, [bits, Constant(16, U32)])
    b.alu("and", low, [low, Constant(1, U32)])
    total = b.temp(U32, lanes)
    b.alu("add", total, [bits, low])
    b.alu("add", total, [total, Constant(0x7FFF, U32)])
    b.alu("shr", total, [total, Constant(16, U32)])
    quiet = b.temp(U32, lanes)
    b.alu("shr", quiet, [bits, Constant(16, U32)])
    b.alu("or", quiet, [quiet, Constant(0x40, U32)])
    flag = b.scratch_flag(lanes)
    as_float = Region(bits.reg, bits.offset, F32, bits.lanes, bits.stride)
    b.alu("cmp", Reg("null", 0, 0, "f"), [as_float, as_float], cond=CondModifier("ne", flag), lanes=lanes)
    b.alu("sel", total, [quiet, total], predicate=Predicate(flag))
    b.mov(_bits(dst), total.slice(0, dst.lanes), predicate=predicate, types=("uw", "ud"))


def _convert_64(b: Builder, dst: Region, src: Region, saturate: bool, predicate) -> None:
    to, frm = dst.type.scalar, src.type.scalar
    if b.hw.has_int64_arithmetic or (to.is_float or frm.is_float):
        if (to.is_float and to.bits == 64 or frm.is_float and frm.bits == 64) and not b.hw.has_fp64:
            raise UnsupportedError(f"{b.hw.display_name} has no 64-bit floating point")
        if not b.hw.has_int64_arithmetic and (to.is_int and to.bits == 64 or frm.is_int and frm.bits == 64):
            raise UnsupportedError(
                f"converting between {frm} and {to} needs 64-bit integer instructions, "
                f"which {b.hw.display_name} does not have"
            )
        b.mov(dst, src, saturate=saturate, predicate=predicate)
        return
    if saturate:
        raise UnsupportedError(f"saturating {frm} to {to} needs 64-bit integer instructions")
    if to.bits == 64 and frm.bits < 64:  # extend into two dwords
        low, high = halves(dst)
        wide = src
        if frm.bits < 32:
            wide = b.temp(S32 if frm.is_signed else U32, dst.lanes)
            b.mov(wide, src)
        b.mov(
            low,
            wide if not isinstance(wide, Region) else wide.as_type(U32) if wide.lanes == 1 else wide,
            predicate=predicate,
            types=("ud", "ud"),
        )
        if frm.is_signed:
            b.alu("asr", high, [wide, Constant(31, U32)], predicate=predicate, types=("d", "d", "ud"))
        else:
            b.mov(high, Constant(0, U32), predicate=predicate)
        return
    if frm.bits == 64 and to.bits < 64:  # the low dword, then narrow
        low, _ = halves(src)
        b.mov(
            dst,
            low.as_type(to) if to.bits == 32 else low,
            predicate=predicate,
            types=None if to.bits == 32 else (None, "ud"),
        )
        return
    # 64 to 64 of another signedness: the same bits
    b.mov(dst.as_type(U32) if dst.lanes == 1 else halves(dst)[0], halves(src)[0], predicate=predicate)
    b.mov(halves(dst)[1], halves(src)[1], predicate=predicate)


def halves(value: Region) -> tuple[Region, Region]:
    """The low and high dwords of each 64-bit lane."""
    stride = 2 * value.stride if value.lanes > 1 else 1
    if value.lanes > 1 and value.stride == 0:
        stride = 0
    low = Region(value.reg, value.offset, U32, value.lanes, stride)
    high = Region(value.reg, value.offset + 4, U32, value.lanes, stride)
    return low, high
