"""Compile one ALU instruction (everything that is not a send, a branch or a sync) into a
closure that executes it for every thread of the batch.

The closure reads its sources through prebuilt views, computes with `alu`, and stores
under the execution mask: the channels the control flow enables (or every channel of the
participating threads for NoMask), narrowed by the predicate.  Condition modifiers write
flag bits for exactly those channels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..emit import tables as T
from ..emit.instruction import Instruction, Reg
from ..emit.regions import three_source_region
from . import alu
from . import datatypes as dt
from .errors import SimulationError, UnsupportedInstruction
from .flags import FlagReader, FlagWriter
from .macros import compile_macro
from .operands import Destination, source

if TYPE_CHECKING:
    from .machine import Machine

Op = Callable[[], None]

RAW_MOVES = ("mov", "csel")

# Instructions whose results the public documentation does not pin down, and why.
NOT_MODELED = {
    "movi": "what its second source selects is not publicly specified",
}


def exec_mask_function(inst: Instruction, m: Machine) -> Callable[[], np.ndarray | None]:
    """The channels an instruction writes before its predicate: (threads, exec) bool, or None
    for "all channels of all threads"."""
    off, size = inst.channel_offset, inst.exec_size
    if off + size > 32:
        raise SimulationError(f"channels {off}..{off + size - 1} exceed 32")
    if inst.no_mask:
        return lambda: m.tmask_col
    end = off + size

    def mask():
        enabled = m.enabled
        return None if enabled is None else enabled[:, off:end]

    return mask


def combined_mask(inst: Instruction, m: Machine):
    """The channels an instruction writes: exec mask & predicate."""
    base = exec_mask_function(inst, m)
    if inst.predicate is None:
        return base
    pred = FlagReader(m.files.flags, inst.predicate, inst.exec_size, inst.channel_offset)

    def mask():
        p = pred()
        b = base()
        return p if b is None else (b & p)

    return mask


def _readers(inst: Instruction, m: Machine, bitwise: bool):
    fmt = T.OPCODES[inst.opcode].format
    readers, types = [], []
    for index, src in enumerate(inst.srcs):
        region = None
        if fmt == T.TERNARY and isinstance(src, Reg):
            region = three_source_region(src, index)
        reader, etype = source(src, inst.exec_size, m.files, region=region, bitwise=bitwise, where=f"src{index}")
        readers.append(reader)
        types.append(etype)
    return readers, types


def compile_alu(inst: Instruction, m: Machine) -> Op:
    op = inst.opcode
    if op == "nop":
        return lambda: None
    if op == "illegal":

        def illegal():
            raise SimulationError("executed an illegal instruction")

        return illegal
    if op in NOT_MODELED:
        raise UnsupportedInstruction(f"{op} is not simulated: {NOT_MODELED[op]}")
    if op == "madm" or (op == "math" and inst.function in T.MATH_MACROS):
        return compile_macro(inst, m, combined_mask(inst, m))
    info = T.OPCODES[op]
    readers, types = _readers(inst, m, info.bitwise)
    dst = Destination(_destination(inst), inst.exec_size, m.files, saturate=inst.saturate)
    builder = _SPECIAL.get(op)
    if builder is not None:
        return builder(inst, m, readers, types, dst)
    compute = _compute_function(inst, types, dst.etype, m)
    if inst.saturate and not alu.is_float_op(types):
        # saturation needs the exact result: no 32-bit wrap-around on the way
        compute = _widened(compute)
    # a move between equal types copies bits (no rounding, no denormal flush)
    raw = (
        op in RAW_MOVES
        and all(t == dst.etype for t in types)
        and dt.value_dtype(dst.etype) == dst.etype.storage
        and not inst.saturate
        and not any(isinstance(s, Reg) and (s.neg or s.abs) for s in inst.srcs)
    )
    return _generic(inst, m, readers, dst, compute, raw)


def _destination(inst: Instruction) -> Reg:
    """An ALU instruction's destination register (the decoder gives each one)."""
    if inst.dst is None:
        raise SimulationError(f"{inst.opcode} without a destination")
    return inst.dst


def _generic(inst: Instruction, m: Machine, readers, dst: Destination, compute, raw: bool) -> Op:
    mask_of = combined_mask(inst, m)
    accwr = _acc_write(inst, m)
    cond = inst.cond_modifier if inst.opcode != "csel" else None  # csel's condition only selects
    n = len(readers)
    if cond is not None:
        flag = FlagWriter(m.files.flags, cond.flag, inst.exec_size, inst.channel_offset)
        cname = cond.cond

        def run_and_flag():
            mask = mask_of()
            result = compute([r() for r in readers])
            converted = dst.convert(result, m.mode)
            values = dt.to_value(converted, dst.etype)
            flag(alu.condition_on_result(cname, values, result if result.dtype.kind in "iu" else None), mask)
            dst.store_raw(converted, mask)
            if accwr is not None:
                accwr(result, mask)

        return run_and_flag

    if raw and accwr is None:
        store = dst.store_raw
        if n == 1:
            r0 = readers[0]
            return lambda: store(r0(), mask_of())
        return lambda: store(compute([r() for r in readers]), mask_of())

    def run():
        mask = mask_of()
        result = compute([r() for r in readers])
        dst.store(result, mask, m.mode)
        if accwr is not None:
            accwr(result, mask)

    return run


def _acc_write(inst: Instruction, m: Machine):
    """AccWrEn on an ordinary instruction also writes the result to acc0."""
    if "AccWrEn" not in inst.options or inst.dst is None or inst.opcode in ("mach", "addc", "subb"):
        return None
    acc = Destination(Reg("acc", 0, 0, inst.dst.type, hstride=1), inst.exec_size, m.files)
    return lambda result, mask: acc.store(result, mask, m.mode)


# --- ordinary computations ------------------------------------------------------------------------


def _widened(compute):
    """`compute` on its integer operands widened to 64 bits."""

    def widened(values):
        return compute([x.astype(np.int64) if x.dtype.kind in "iu" and x.dtype.itemsize < 8 else x for x in values])

    return widened


def _compute_function(inst: Instruction, types: list[dt.ElementType], dst_type: dt.ElementType, m: Machine):
    op = inst.opcode
    all_types = types + [dst_type]
    floats = alu.is_float_op(types)
    ints = None if floats else alu.int_compute_dtype(all_types)
    fdtype = alu.float_compute_dtype(all_types)

    if op == "mov":
        return lambda v: v[0]
    width = dst_type.size  # integer results only need to be exact in the destination's bits
    if op == "add":
        return lambda v: alu.add(v[0], v[1], ints, m.mode, fdtype, width)
    if op == "mul":
        if dst_type.is_float or floats:
            return lambda v: alu.mul(v[0], v[1], ints, m.mode, fdtype)
        return _integer_multiply(inst, m, ints)
    if op == "mad":
        return lambda v: alu.mad(v[0], v[1], v[2], ints, m.mode, fdtype, width)
    if op == "add3":
        return lambda v: alu.add3(v[0], v[1], v[2], ints or alu.INT64, width)
    if op == "avg":
        return lambda v: alu.avg(v[0], v[1], ints or alu.INT64)
    if op in ("and", "or", "xor"):
        func = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
        wide = alu.int_compute_dtype(all_types)

        def logic(v):
            a, b = v
            if a.dtype == b.dtype:
                return func(a, b)
            return func(a.astype(wide), b.astype(wide))

        return logic
    if op == "not":
        return lambda v: np.invert(v[0])
    if op in ("shl", "shr", "asr", "ror", "rol"):
        count_mask = alu.shift_mask(types, dst_type)
        t0 = types[0]
        if op == "shl":
            return lambda v: alu.shl(v[0], v[1], count_mask)
        if op == "shr":
            return lambda v: alu.shr(v[0], t0, v[1], count_mask)
        if op == "asr":
            return lambda v: alu.asr(v[0], t0, v[1], count_mask)
        return lambda v: alu.rotate(v[0], t0, v[1], op == "rol")
    if op == "sel":
        return _sel(inst, m, types)
    if op in ("rndd", "rndu", "rnde", "rndz", "frc"):
        return lambda v: alu.round_op(op, v[0])
    if op == "lzd":
        return lambda v: alu.lzd(v[0])
    if op == "fbh":
        return lambda v: alu.fbh(v[0], types[0])
    if op == "fbl":
        return lambda v: alu.fbl(v[0])
    if op == "cbit":
        return lambda v: alu.cbit(v[0], types[0])
    if op == "bfrev":
        return lambda v: alu.bfrev(v[0])
    if op == "bfe":
        return lambda v: alu.bfe(v[0], v[1], v[2], types[2])
    if op == "bfi1":
        return lambda v: alu.bfi1(v[0], v[1])
    if op == "bfi2":
        return lambda v: alu.bfi2(v[0], v[1], v[2])
    if op == "bfn":
        table = inst.function
        if not isinstance(table, int):
            raise SimulationError(f"bfn with the function {table!r}, not a truth table")
        return lambda v: alu.bfn(v[0], v[1], v[2], table)
    if op == "dp4a":
        return lambda v: alu.dp4a(v[0], v[1], v[2], types[1], types[2])
    if op == "math":
        return _math(inst, types, dst_type)
    if op == "csel":
        cond = inst.cond_modifier.cond if inst.cond_modifier else "ne"
        return lambda v: np.where(alu.compare(cond, v[2], np.zeros((), v[2].dtype)), v[0], v[1])
    raise SimulationError(f"'{op}' is not simulated")


def _sel(inst: Instruction, m: Machine, types):
    if inst.cond_modifier is not None:
        cond = inst.cond_modifier.cond

        def minmax(v):
            a, b = alu.compare_values(v[0], v[1], types)
            return alu.select_min_max(cond, a, b)

        return minmax
    if inst.predicate is not None:
        pred = FlagReader(m.files.flags, inst.predicate, inst.exec_size, inst.channel_offset)
        same = types[0] == types[1]

        def select(v):
            a, b = v
            if not same:
                a, b = alu.compare_values(a, b, types)
            return np.where(pred(), a, b)

        return select
    return lambda v: v[0]


def _math(inst: Instruction, types, dst_type: dt.ElementType):
    function = inst.function
    if not isinstance(function, str):
        raise SimulationError(f"math with the function {function!r}")
    if function in ("idiv", "iqot", "irem"):
        signed = types[0].is_signed or types[1].is_signed

        def divide(v):
            q, r = alu.int_divide(v[0], v[1], signed)
            return r if function == "irem" else q

        return divide
    out = np.float64 if dst_type.name == "df" else np.float32
    second = len(types) > 1
    return lambda v: alu.math_function(function, v[0], v[1] if second else None, out)


def _acc_slots(dst: Reg, exec_size: int) -> np.ndarray:
    """The accumulator's exact-product slots (one per dword of acc0-15) a dword-typed operand at
    `dst`'s region covers: the implicit accumulator of mach/macl/mac has the destination's
    subregister and stride, so `mul acc0.3 ...` feeds `mach r66.3 ...`."""
    size = dt.TYPES[dst.type].size
    first = dst.subreg * size // 4
    return first + np.arange(exec_size) * max(1, (dst.hstride or 1) * size // 4)


def _integer_multiply(inst: Instruction, m: Machine, ints):
    """Integer mul; when the destination is the accumulator, remember the exact product (its
    64 bits, two's complement) for a following mach/macl (IGC's 32x32 multiply: mul acc0:d a:d
    b:uw; mach, nGEN's division by constants: mul acc0 x:d M:uw; mach q:d x:d M:ud)."""
    dst = _destination(inst)
    if dst.file != "acc":
        return lambda v: alu.mul(v[0], v[1], ints, m.mode, None, dt.TYPES[dst.type].size)
    slots = _acc_slots(dst, inst.exec_size) + m.files.register_base("acc", dst.number) // 4
    mask_of = combined_mask(inst, m)
    wide = m.files.acc_wide

    def multiply(v):
        a, b = v
        product = alu.wrapping_product(a, b).view(np.int64)
        mask = mask_of()
        full = np.broadcast_to(product, (wide.shape[0], inst.exec_size))
        if mask is None:
            wide[:, slots] = full
        else:
            wide[:, slots] = np.where(mask, full, wide[:, slots])
        return product

    return multiply


# --- instructions with extra inputs or outputs ---------------------------------------------------


def _cmp(inst: Instruction, m: Machine, readers, types, dst: Destination) -> Op:
    if inst.cond_modifier is None:
        raise SimulationError("cmp without a condition modifier")
    cond = inst.cond_modifier.cond
    mask_of = combined_mask(inst, m)
    flag = FlagWriter(m.files.flags, inst.cond_modifier.flag, inst.exec_size, inst.channel_offset)
    nan_aware = inst.opcode == "cmpn"
    r0, r1 = readers
    storage = dst.etype.storage
    int_storage = dt.INT_DTYPES[dst.etype.size][1]

    def run():
        mask = mask_of()
        a, b = alu.compare_values(r0(), r1(), types)
        result = alu.compare(cond, a, b)
        if nan_aware and a.dtype.kind == "f":
            # cmpn: a NaN src1 makes every condition but eq true (src0 NaN: as cmp)
            result = np.where(np.isnan(b) & ~np.isnan(a), cond != "eq", result)
        flag(result, mask)
        if not dst.is_null:
            dst.store_raw(np.where(result, -1, 0).astype(int_storage).view(storage), mask)

    return run


def _sel_special(inst: Instruction, m: Machine, readers, types, dst: Destination) -> Op:
    """sel: the predicate chooses the source, it does not disable channels."""
    compute = _sel(inst, m, types)
    mask_of = exec_mask_function(inst, m)
    storage = dst.etype.storage

    def run():
        result = compute([r() for r in readers])
        if result.dtype == storage and not inst.saturate:
            dst.store_raw(result, mask_of())  # a selected value keeps its bits
        else:
            dst.store(result, mask_of(), m.mode)

    return run


def _mach(inst: Instruction, m: Machine, readers, types, dst: Destination) -> Op:
    """mach/macl: the accumulator holds src0 x (src1's low 16 bits) from the mul before; adding
    src0 x (src1's high 16 bits) << 16 gives the exact 64-bit product of src0 and src1, each
    read in its own type (a :ud source is never sign-extended).  macl returns its low 32 bits,
    mach its high 32 bits; mach without AccWrEn on platforms without macl (XeLP, XeHPG) is
    IGC's low multiply and returns the low 32 bits too.  With AccWrEn the low 32 bits also go
    to the accumulator.  The implicit accumulator has the destination's region."""
    files = m.files
    has_macl = T.opcode_available(T.OPCODES["macl"], files.platform)
    low = inst.opcode == "macl" or (not has_macl and "AccWrEn" not in inst.options)
    slots = _acc_slots(dst.reg, inst.exec_size)
    mask_of = combined_mask(inst, m)
    accwr = "AccWrEn" in inst.options
    acc = (
        Destination(Reg("acc", 0, dst.reg.subreg, "ud", hstride=dst.reg.hstride or 1), inst.exec_size, files)
        if accwr
        else None
    )
    high_half = alu.high_half_of_multiplier(types[1])
    r0, r1 = readers

    def run():
        mask = mask_of()
        a, b = r0(), r1()
        partial = files.acc_wide[:, slots].view(np.uint64)
        product = partial + (alu.wrapping_product(a, high_half(b)) << np.uint64(16))
        low_bits = product & np.uint64(0xFFFFFFFF)
        dst.store_raw(
            (low_bits if low else product >> np.uint64(32)).astype(np.uint32).view(dst.etype.storage)
            if dst.etype.size == 4
            else dst.convert(low_bits if low else product >> np.uint64(32), m.mode),
            mask,
        )
        if acc is not None:
            acc.store_raw(low_bits.astype(np.uint32), mask)
            kept = product.view(np.int64)
            files.acc_wide[:, slots] = kept if mask is None else np.where(mask, kept, files.acc_wide[:, slots])

    return run


def _mac(inst: Instruction, m: Machine, readers, types, dst: Destination) -> Op:
    """mac: dst = acc0 + src0 * src1, the accumulator read in the destination's type and region."""
    stride = dst.reg.hstride or 1
    acc_src, acc_type = source(Reg("acc", 0, dst.reg.subreg, dst.etype.name, stride, 1, 0), inst.exec_size, m.files)
    compute_types = types + [acc_type, dst.etype]
    floats = alu.is_float_op(compute_types)
    ints = None if floats else alu.int_compute_dtype(compute_types)
    fdtype = alu.float_compute_dtype(compute_types)
    mask_of = combined_mask(inst, m)
    r0, r1 = readers
    return lambda: dst.store(alu.mad(acc_src(), r0(), r1(), ints, m.mode, fdtype), mask_of(), m.mode)


def _carry(inst: Instruction, m: Machine, readers, types, dst: Destination) -> Op:
    """addc/subb: the 32-bit sum/difference to dst, the carry/borrow bit to acc0."""
    mask_of = combined_mask(inst, m)
    acc = Destination(Reg("acc", 0, 0, "ud", hstride=1), inst.exec_size, m.files)
    subtract = inst.opcode == "subb"
    r0, r1 = readers
    flag, cname = None, ""
    if inst.cond_modifier is not None:
        flag = FlagWriter(m.files.flags, inst.cond_modifier.flag, inst.exec_size, inst.channel_offset)
        cname = inst.cond_modifier.cond

    def run():
        mask = mask_of()
        a = r0().astype(np.int64) & 0xFFFFFFFF
        b = r1().astype(np.int64) & 0xFFFFFFFF
        exact = a - b if subtract else a + b
        carry = (exact < 0) if subtract else (exact > 0xFFFFFFFF)
        result = exact & 0xFFFFFFFF
        converted = dst.convert(result, m.mode)
        if flag is not None:
            values = dt.to_value(converted, dst.etype)
            flag(alu.condition_on_result(cname, values, result), mask)
        dst.store_raw(converted, mask)
        acc.store(carry.astype(np.uint32), mask, m.mode)

    return run


def _srnd(inst: Instruction, m: Machine, readers, types, dst: Destination) -> Op:
    """srnd: stochastic rounding of f to hf, or hf to bf8, with the random bits of src1."""
    if (types[0].name, dst.etype.name) not in (("f", "hf"), ("hf", "bf8")):
        raise SimulationError(f"srnd from :{types[0].name} to :{dst.etype.name} (only f -> hf and hf -> bf8)")
    mask_of = combined_mask(inst, m)
    r0, r1 = readers
    to, storage = dst.etype.name, dst.etype.storage
    return lambda: dst.store_raw(alu.stochastic_round(r0(), r1(), to).view(storage), mask_of())


_SPECIAL = {
    "srnd": _srnd,
    "cmp": _cmp,
    "cmpn": _cmp,
    "sel": _sel_special,
    "mach": _mach,
    "macl": _mach,
    "mac": _mac,
    "addc": _carry,
    "subb": _carry,
}
