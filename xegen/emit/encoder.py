"""Encode `Instruction`s into the 16-byte native Xe form.

The whole instruction is built as one 128-bit Python integer (bit n of the instruction =
bit n of the int) and converted to little-endian bytes at the end.  Every field goes where
the field table (`fields.py`) puts it; fields that the printed IGA syntax does not show are
written the way iga64 writes them, so our bytes equal `iga64 -a -Xforce-no-compact` on our
printed text.

Anything that cannot be encoded for the platform raises `EncodeError` naming the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .. import hw as hwlib
from ..errors import EncodeError
from . import tables as T
from .compaction import compact
from .fields import BinaryDst, BinarySource, Field, Register, TernaryRegionSource
from .instruction import Imm, Instruction, Reg
from .layout import Layout, layout_for
from .swsb import encode_swsb

_MASK32 = 0xFFFFFFFF


def encode(inst: Instruction, hw: str | hwlib.Platform) -> bytes:
    """The native encoding of one instruction: 16 bytes, or the 8-byte compacted form when
    the instruction has the option "Compacted" (an EncodeError if it has none)."""
    layout = layout_for(hwlib.platform(hw))
    return _finish(inst, encode_int(inst, layout).to_bytes(16, "little"), layout)


def encode_kernel(instructions: Iterable[Instruction], hw: str | hwlib.Platform) -> bytes:
    """Concatenated encodings of a whole kernel (branch offsets are taken as given)."""
    layout = layout_for(hwlib.platform(hw))
    out = bytearray()
    for inst in instructions:
        out += _finish(inst, encode_int(inst, layout).to_bytes(16, "little"), layout)
    return bytes(out)


def _finish(inst: Instruction, native: bytes, layout: Layout) -> bytes:
    if "Compacted" not in inst.options:
        return native

    word = compact(native, layout.platform)
    if word is None:
        raise _fail(inst, "options", "this instruction has no compacted form")
    return word


def encode_int(inst: Instruction, layout: Layout) -> int:
    info = T.OPCODES.get(inst.opcode)
    if info is None:
        raise EncodeError(f"unknown opcode '{inst.opcode}'")
    if not T.opcode_available(info, layout.platform):
        raise EncodeError(f"{inst.opcode}: opcode does not exist on {layout.platform.display_name}")
    if inst.dst is not None and type(inst.dst) is not Reg:
        raise _fail(inst, "dst", f"{inst.dst!r} is not a register")
    for src in inst.srcs:
        if type(src) is not Reg and type(src) is not Imm:
            raise _fail(inst, "srcs", f"{src!r} is not a register or an immediate")
    bits = _encode_common(inst, info, layout)
    return bits | _FORMAT_ENCODERS[info.format](inst, info, layout)


def _fail(inst: Instruction, field: str, message: str) -> EncodeError:
    return EncodeError(f"{inst.opcode}: {field}: {message}")


# ---------------------------------------------------------------------------------------
# Common header: opcode, SWSB, exec size, predication, flags, options.


def _encode_common(inst: Instruction, info: T.OpcodeInfo, layout: Layout) -> int:
    H = layout.fields.header
    bits = H.opcode.put(info.code) | H.swsb.put(encode_swsb(inst.swsb, info, layout))
    code = T.EXEC_SIZE_CODES.get(inst.exec_size)
    if code is None:
        raise _fail(inst, "exec size", f"{inst.exec_size} is not one of 1, 2, 4, 8, 16, 32")
    bits |= H.exec_size.put(code)
    offset, field = inst.channel_offset, H.channel_offset
    if not field.fits(offset):
        raise _fail(
            inst,
            "channel offset",
            f"M{offset} is not encodable on {layout.platform.display_name}"
            f" (multiples of {field.unit} up to M{field.limit - field.unit})",
        )
    bits |= field.put(offset)

    flag = None
    pred = inst.predicate
    if pred is not None:
        if not info.predication:
            raise _fail(inst, "predicate", "this instruction cannot be predicated")
        mode = layout.pred_modes.get(pred.mode)
        if mode is None:
            raise _fail(inst, "predicate", f"mode '.{pred.mode}' does not exist on {layout.platform.display_name}")
        bits |= H.predicate.put(mode)
        if pred.invert:
            bits |= H.predicate_invert.put(1)
        flag = pred.flag
    cmod = inst.cond_modifier
    if cmod is not None:
        if flag is not None and flag != cmod.flag:
            raise _fail(inst, "flag", f"predicate {flag} and condition modifier {cmod.flag} must use the same flag")
        flag = cmod.flag
    if flag is not None:
        if not (0 <= flag.reg < layout.flag_registers and flag.subreg in (0, 1)):
            raise _fail(inst, "flag", f"{flag} does not exist on {layout.platform.display_name}")
        bits |= H.flag_reg.put(flag.reg) | H.flag_subreg.put(flag.subreg)
    if inst.no_mask:
        bits |= H.no_mask.put(1)
    if inst.saturate:
        if not info.saturate:
            raise _fail(inst, "saturate", "this instruction does not saturate")
        bits |= H.saturate.put(1)
    for option in inst.options:
        if option == "Atomic":
            bits |= H.atomic.put(1)
        elif option == "Breakpoint":
            bits |= H.breakpoint.put(1)
        elif option == "AccWrEn":
            if not H.acc_write_enable.present or info.format in T.BRANCH_FORMATS or info.format in (T.SEND, T.NULLARY):
                raise _fail(inst, "options", "AccWrEn is not available here")
            bits |= H.acc_write_enable.put(1)
        elif option in ("Compacted", "NoCompact"):
            pass  # Compacted: _finish packs the native bits into 8 bytes
        elif option in ("EOT", "Serialize", "ExBSO", "CPS"):
            if info.format != T.SEND:
                raise _fail(inst, "options", f"{option} is only allowed on send instructions")
        else:
            raise _fail(inst, "options", f"unknown or unsupported option '{option}'")
    if inst.branch_control:
        if not info.branch_control:
            raise _fail(inst, "branch control", "only if, else and goto take '.b'")
        bits |= layout.fields.branch.branch_control.put(1)
    return bits


# ---------------------------------------------------------------------------------------
# Operands


def _type_code(inst: Instruction, where: str, type_name: str, layout: Layout) -> int:
    code = layout.type_codes.get(type_name)
    if code is None:
        raise _fail(inst, where, f"type ':{type_name}' is not encodable on {layout.platform.display_name}")
    return code


def _reg_number(inst: Instruction, where: str, reg: Reg, layout: Layout) -> tuple[int, int]:
    """(file bit, 8-bit register number)."""
    if reg.file == "r":
        if not 0 <= reg.number <= 255:
            raise _fail(inst, where, f"r{reg.number} is out of range (r0..r255)")
        return 1, reg.number
    cls = T.ARF_CLASSES.get(reg.file)
    if cls is None or not T.arf_class_available(cls, layout.platform):
        raise _fail(inst, where, f"register '{reg.file}' does not exist on {layout.platform.display_name}")
    count = T.arf_register_count(cls, layout.platform)
    if not (reg.number == 0 if count == 0 else 0 <= reg.number < count):
        raise _fail(inst, where, f"{reg.file}{reg.number} does not exist on {layout.platform.display_name}")
    return 0, T.arf_encode(reg.file, reg.number)


def _direct(inst: Instruction, where: str, reg: Reg, operand: Register, layout: Layout) -> int:
    """The file, number and subregister fields of a direct operand.  A math-macro operand's
    subregister field holds its mme register."""
    file_bit, number = _reg_number(inst, where, reg, layout)
    bits = operand.file.put(file_bit) | operand.number.put(number)
    if reg.mme is not None:
        if not 0 <= reg.mme <= T.MME_NONE:
            raise _fail(inst, where, f"math macro register mme{reg.mme} does not exist")
        return bits | operand.mme.put(reg.mme)
    if reg.type not in T.TYPES:
        raise _fail(inst, where, f"unknown type ':{reg.type}'")
    byte = reg.subreg * T.type_bytes(reg.type)
    field = operand.subreg
    if not 0 <= byte < field.limit:
        raise _fail(inst, where, f"subregister {reg.subreg} (byte {byte}) is out of range")
    if byte % field.unit:
        raise _fail(inst, where, f"odd byte offset {byte} is not encodable here on {layout.platform.display_name}")
    return bits | field.put(byte)


def _indirect(inst: Instruction, where: str, reg: Reg, operand: BinaryDst, layout: Layout) -> int:
    """The address fields of an indirect operand r[a0.n, offset]."""
    if not operand.address_subreg.fits(reg.addr_subreg):
        raise _fail(inst, where, f"a0.{reg.addr_subreg} is out of range")
    offset, field = reg.addr_offset, operand.address_offset
    if not field.fits(offset):
        low, high = -field.limit // 2, field.limit // 2 - 1
        if low <= offset <= high:
            platform = layout.platform.display_name
            raise _fail(inst, where, f"odd byte offset {offset} is not encodable here on {platform}")
        raise _fail(inst, where, f"address offset {offset} is out of range ({low}..{high})")
    return operand.indirect.put(1) | field.put(offset) | operand.address_subreg.put(reg.addr_subreg)


def _encode_binary_dst(inst: Instruction, dst: Reg, layout: Layout) -> int:
    D = layout.fields.binary.dst
    if dst.mme is not None:
        if dst.indirect:
            raise _fail(inst, "dst", "math macro operands are direct registers")
        dst = _with_region(dst, None, None, 1)  # the implicit <1>
    hs = _code(T.HSTRIDE_CODES, dst.hstride)
    if hs is None or hs == 0:
        raise _fail(inst, "dst", f"region <{dst.hstride}> is not a destination stride (1, 2, 4)")
    bits = D.type.put(_type_code(inst, "dst", dst.type, layout)) | D.hstride.put(hs)
    if dst.indirect:
        return bits | _indirect(inst, "dst", dst, D, layout)
    return bits | _direct(inst, "dst", dst, D, layout)


def _code(codes: Mapping[int, int], value: int | None) -> int | None:
    """The code of a region's stride or width, None if it has none (or the region leaves it out)."""
    return None if value is None else codes.get(value)


def _with_region(reg: Reg, vstride: int | None, width: int | None, hstride: int | None) -> Reg:
    if (reg.vstride, reg.width, reg.hstride) == (vstride, width, hstride):
        return reg
    return Reg(
        reg.file,
        reg.number,
        reg.subreg,
        reg.type,
        vstride,
        width,
        hstride,
        reg.neg,
        reg.abs,
        reg.mme,
        reg.indirect,
        reg.addr_subreg,
        reg.addr_offset,
    )


def _encode_binary_src(
    inst: Instruction, info: T.OpcodeInfo, where: str, src: Reg, S: BinarySource, layout: Layout
) -> int:
    """A register source of the 1/2-source layout, with its type and modifiers."""
    if src.mme is not None:
        if src.indirect:
            raise _fail(inst, where, "math macro operands are direct registers")
        scalar = inst.exec_size == 1
        src = _with_region(src, 0 if scalar else 1, 1, 0)  # the implicit region iga64 writes
    hs = _code(T.HSTRIDE_CODES, src.hstride)
    width = _code(T.WIDTH_CODES, src.width)
    if hs is None or width is None:
        raise _fail(inst, where, f"region <{src.vstride};{src.width},{src.hstride}> is not encodable")
    if src.vstride is None:
        if not src.indirect:
            raise _fail(inst, where, "a VxH region <w,h> needs an indirect operand")
        vs: int | None = S.vstride.limit - 1  # VxH: the all-ones vertical stride
    else:
        vs = T.STRIDE_CODES.get(src.vstride)
    if vs is None:
        raise _fail(inst, where, f"vertical stride {src.vstride} is not encodable")
    bits = S.hstride.put(hs) | S.width.put(width) | S.vstride.put(vs)
    bits |= S.type.put(_type_code(inst, where, src.type, layout))
    bits |= S.modifiers.put(_source_mods(inst, info, where, src))
    if src.indirect:
        return bits | _indirect(inst, where, src, S, layout)
    return bits | _direct(inst, where, src, S, layout)


def _source_mods(inst: Instruction, info: T.OpcodeInfo, where: str, src: Reg) -> int:
    """2-bit modifier field: bit 0 abs, bit 1 negate (or bitwise NOT on logic ops)."""
    if not (src.neg or src.abs):
        return 0
    if not info.source_modifiers:
        raise _fail(inst, where, "source modifiers are not supported")
    return (2 if src.neg else 0) | (1 if src.abs else 0)


def _immediate_bits(inst: Instruction, where: str, value: Imm, layout: Layout) -> tuple[int, int]:
    """(type code, 64-bit immediate payload; 16-bit values replicated into both halves)."""
    code = layout.imm_type_codes.get(value.type)
    if code is None:
        raise _fail(inst, where, f"an immediate of type ':{value.type}' is not encodable")
    width = T.TYPES[value.type].bits if value.type not in ("uv", "v", "vf") else 32
    v = value.value
    if not 0 <= v < (1 << width):
        raise _fail(inst, where, f"immediate 0x{v:x} does not fit :{value.type}")
    if width == 16:
        v = v | v << 16
    return code, v


# ---------------------------------------------------------------------------------------
# Formats


def _encode_unary_binary(inst: Instruction, info: T.OpcodeInfo, layout: Layout) -> int:
    B = layout.fields.binary
    nsrc = 1 if info.format == T.UNARY else 2
    if info.format == T.MATH:
        nsrc = _math_sources(inst, layout)
    if inst.dst is None or len(inst.srcs) != nsrc:
        raise _fail(inst, "operands", f"expected a destination and {nsrc} source(s)")
    bits = _encode_binary_dst(inst, inst.dst, layout)
    if inst.cond_modifier is not None and info.format != T.MATH:
        if not info.cond_modifier:
            raise _fail(inst, "condition modifier", "this instruction takes no condition modifier")
        cond = T.CONDITION_MODIFIERS.get(inst.cond_modifier.cond)
        if cond is None:
            raise _fail(inst, "condition modifier", f"unknown condition '{inst.cond_modifier.cond}'")
        bits |= B.condition.put(cond)
    if info.format == T.MATH:
        bits |= B.condition.put(_math_function(inst, layout))
    src0 = inst.srcs[0]
    if type(src0) is Imm:
        if nsrc == 2:
            raise _fail(inst, "src0", "only the last source may be an immediate")
        code, payload = _immediate_bits(inst, "src0", src0, layout)
        if payload >> 32 and inst.cond_modifier is not None:
            raise _fail(inst, "src0", "a 64-bit immediate leaves no room for a condition modifier")
        return (
            bits
            | B.src0.type.put(code)
            | B.src0_is_immediate.put(1)
            | B.immediate.put(payload)
            | B.immediate_high.put(payload >> 32)
        )
    bits |= _encode_binary_src(inst, info, "src0", src0, B.src0, layout)
    if nsrc == 1:
        return bits
    src1 = inst.srcs[1]
    if type(src1) is Imm:
        code, payload = _immediate_bits(inst, "src1", src1, layout)
        if payload >> 32:
            raise _fail(inst, "src1", "a 64-bit immediate can only be the single source of a 1-source instruction")
        return bits | B.src1.type.put(code) | B.src1_is_immediate.put(1) | B.immediate.put(payload)
    return bits | _encode_binary_src(inst, info, "src1", src1, B.src1, layout)


def _math_sources(inst: Instruction, layout: Layout) -> int:
    return 2 if inst.function in T.MATH_TWO_SOURCES else 1


def _math_function(inst: Instruction, layout: Layout) -> int:
    fn = inst.function
    if not isinstance(fn, str) or fn not in T.MATH_FUNCTIONS or not T.math_available(fn, layout.platform):
        raise _fail(inst, "math function", f"'{fn}' does not exist on {layout.platform.display_name}")
    cmod = inst.cond_modifier
    if fn in T.MATH_MACROS:
        if cmod is not None and cmod.cond != "eo":
            raise _fail(inst, "condition modifier", "math macros only take the implicit (eo) flag")
    elif cmod is not None:
        raise _fail(inst, "condition modifier", "math takes no condition modifier")
    return T.MATH_FUNCTIONS[fn]


# 3-source operands


def _ternary_type(inst: Instruction, where: str, type_name: str, layout: Layout, float_exec: bool) -> int:
    table = layout.ternary_float if float_exec else layout.ternary_int
    code = table.get(type_name)
    if code is None:
        kind = "float" if float_exec else "integer"
        raise _fail(
            inst,
            where,
            f"type ':{type_name}' cannot be mixed into a 3-source {kind} instruction on {layout.platform.display_name}",
        )
    return code


def _ternary_operand(inst: Instruction, where: str, reg: Reg, operand: Register, layout: Layout, hs_code: int) -> int:
    """A 3-source register operand: horizontal stride, file, subregister, number."""
    if reg.indirect:
        raise _fail(inst, where, "3-source instructions take no indirect operands")
    return _direct(inst, where, reg, operand, layout) | operand.hstride.put(hs_code)


def _ternary_src_hs(inst: Instruction, where: str, reg: Reg) -> int:
    hs = _code(T.HSTRIDE_CODES, reg.hstride)
    if hs is None:
        raise _fail(inst, where, f"horizontal stride {reg.hstride} is not encodable")
    return hs


def _ternary_vstride(inst: Instruction, where: str, reg: Reg) -> int:
    vs = _code(T.TERNARY_VSTRIDE_CODES, reg.vstride)
    if vs is None or reg.width is not None:
        raise _fail(inst, where, f"3-source region <{reg.vstride};{reg.hstride}> is not encodable (vstride 0, 1, 4, 8)")
    return vs


def _ternary_imm(inst: Instruction, where: str, value: Imm, layout: Layout, float_exec: bool) -> tuple[int, int]:
    if T.TYPES[value.type].bits != 16 or value.type == "bf":
        raise _fail(inst, where, f"3-source immediates are 16-bit (w, uw, hf), not :{value.type}")
    if not 0 <= value.value < 0x10000:
        raise _fail(inst, where, f"immediate 0x{value.value:x} does not fit :{value.type}")
    return _ternary_type(inst, where, value.type, layout, float_exec), value.value


def _ternary_source(
    inst: Instruction,
    info: T.OpcodeInfo,
    where: str,
    src: Reg,
    S: TernaryRegionSource,
    layout: Layout,
    float_exec: bool,
) -> int:
    """src0 or src1 of a 3-source instruction: a register with a <v;h> region."""
    bits = S.type.put(_ternary_type(inst, where, src.type, layout, float_exec))
    if src.mme is None:
        bits |= _ternary_operand(inst, where, src, S, layout, _ternary_src_hs(inst, where, src))
        vs = _ternary_vstride(inst, where, src)
    else:  # math macro operands: iga64 always writes this region
        bits |= _ternary_operand(inst, where, src, S, layout, 1)
        vs = _MACRO_VSTRIDE_CODE
    return bits | S.vstride.put(vs) | S.modifiers.put(_source_mods(inst, info, where, src))


def _encode_ternary(inst: Instruction, info: T.OpcodeInfo, layout: Layout) -> int:
    X = layout.fields.ternary
    if inst.dst is None or len(inst.srcs) != 3:
        raise _fail(inst, "operands", "expected a destination and 3 sources")
    dst = inst.dst
    if dst.indirect:
        raise _fail(inst, "dst", "3-source instructions take no indirect operands")
    float_exec = T.TYPES.get(dst.type, T.TYPES["ud"]).is_float
    bits = 0
    if inst.cond_modifier is not None:
        if not info.cond_modifier:
            raise _fail(inst, "condition modifier", "this instruction takes no condition modifier")
        if inst.opcode == "bfn":
            cond = _BFN_CONDITIONS.get(inst.cond_modifier.cond)
            if cond is None:
                raise _fail(inst, "condition modifier", "bfn only supports (eq), (gt) and (lt)")
            bits |= X.bfn_condition.put(cond)
        else:
            cond = T.CONDITION_MODIFIERS.get(inst.cond_modifier.cond)
            if cond is None:
                raise _fail(inst, "condition modifier", f"unknown condition '{inst.cond_modifier.cond}'")
            bits |= X.condition.put(cond)
    dst_hs = _code(_TERNARY_DST_HSTRIDE_CODES, dst.hstride) if dst.mme is None else 0
    if dst_hs is None:
        raise _fail(inst, "dst", f"3-source destination stride <{dst.hstride}> is not encodable (1, 2)")
    bits |= X.dst.type.put(_ternary_type(inst, "dst", dst.type, layout, float_exec)) | X.float.put(float_exec)
    alignment = T.ternary_dst_alignment(layout.platform)
    if dst.mme is None and dst.type in T.TYPES and (dst.subreg * T.type_bytes(dst.type)) % alignment:
        raise _fail(
            inst, "dst", f"3-source destinations start on a {alignment}-byte boundary on {layout.platform.display_name}"
        )
    bits |= _ternary_operand(inst, "dst", dst, X.dst, layout, dst_hs)
    src0, src1, src2 = inst.srcs
    if type(src0) is Imm:  # src0: a register with <v;h> or a 16-bit immediate
        code, value = _ternary_imm(inst, "src0", src0, layout, float_exec)
        bits |= X.src0.type.put(code) | X.src0_is_immediate.put(1) | X.src0_immediate.put(value)
    else:
        bits |= _ternary_source(inst, info, "src0", src0, X.src0, layout, float_exec)
    if type(src1) is Imm:
        raise _fail(inst, "src1", "src1 of a 3-source instruction must be a register")
    bits |= _ternary_source(inst, info, "src1", src1, X.src1, layout, float_exec)
    if type(src2) is Imm:
        code, value = _ternary_imm(inst, "src2", src2, layout, float_exec)
        bits |= X.src2.type.put(code) | X.src2_is_immediate.put(1) | X.src2_immediate.put(value)
    else:
        if src2.vstride is not None or src2.width is not None:
            raise _fail(inst, "src2", "src2 of a 3-source instruction has a <h> region only")
        hs = _ternary_src_hs(inst, "src2", src2) if src2.mme is None else 1
        bits |= X.src2.type.put(_ternary_type(inst, "src2", src2.type, layout, float_exec))
        bits |= _ternary_operand(inst, "src2", src2, X.src2, layout, hs)
        bits |= X.src2.modifiers.put(_source_mods(inst, info, "src2", src2))
    if inst.opcode == "bfn":
        fn = inst.function
        if not isinstance(fn, int) or not 0 <= fn <= 0xFF:
            raise _fail(inst, "bfn function", "expected an 8-bit truth table")
        bits |= X.bfn_function.put(fn)
    return bits


_BFN_CONDITIONS = {"eq": 1, "gt": 2, "lt": 3}
_TERNARY_DST_HSTRIDE_CODES = {1: 0, 2: 1}

# Region bits iga64 writes for madm's src0/src1 whatever the execution size.
_MACRO_VSTRIDE_CODE = 2


def _encode_dpas(inst: Instruction, info: T.OpcodeInfo, layout: Layout) -> int:
    X, P = layout.fields.ternary, layout.fields.dpas
    registers = [src for src in inst.srcs if type(src) is Reg]
    if inst.dst is None or len(inst.srcs) != 3 or len(registers) != 3:
        raise _fail(inst, "operands", "expected a destination and 3 register sources")
    depth = T.SYSTOLIC_DEPTH_CODES.get(inst.systolic_depth)
    if depth is None:
        raise _fail(inst, "systolic depth", f"{inst.systolic_depth} is not 1, 2, 4 or 8")
    if not 1 <= inst.repeat_count <= 8:
        raise _fail(inst, "repeat count", f"{inst.repeat_count} is not 1..8")
    dst, (src0, src1, src2) = inst.dst, registers
    float_exec = T.TYPES.get(dst.type, T.TYPES["ud"]).is_float
    bits = X.float.put(float_exec) | P.repeat_count.put(inst.repeat_count - 1) | P.systolic_depth.put(depth)
    bits |= X.dst.type.put(_ternary_type(inst, "dst", dst.type, layout, float_exec))
    bits |= _direct_dpas(inst, "dst", dst, X.dst, layout)
    bits |= X.src0.type.put(_ternary_type(inst, "src0", src0.type, layout, float_exec))
    bits |= _direct_dpas(inst, "src0", src0, X.src0, layout)
    for where, src, operand, precision_field in (
        ("src1", src1, X.src1, P.src1_precision),
        ("src2", src2, X.src2, P.src2_precision),
    ):
        type_name, precision = T.DPAS_PRECISIONS.get(src.type, (src.type, 0))
        if src.neg or src.abs:
            raise _fail(inst, where, "dpas takes no source modifiers")
        bits |= operand.type.put(_ternary_type(inst, where, type_name, layout, float_exec))
        bits |= precision_field.put(precision)
        probe = src if not precision else Reg(src.file, src.number, 0, "ub")
        bits |= _direct_dpas(inst, where, probe, operand, layout)
        if precision and src.subreg:
            raise _fail(inst, where, "sub-byte dpas operands start at a register boundary")
    return bits


def _direct_dpas(inst: Instruction, where: str, reg: Reg, operand: Register, layout: Layout) -> int:
    """A dpas operand: the 3-source operand fields without a region."""
    if reg.indirect:
        raise _fail(inst, where, "3-source instructions take no indirect operands")
    return _direct(inst, where, reg, operand, layout)


# Send


def _send_register(inst: Instruction, where: str, reg: Reg, operand: BinaryDst) -> int:
    if reg.indirect or reg.file not in ("r", "null") or reg.subreg:
        raise _fail(inst, where, "send operands are whole GRF registers or null")
    if reg.file == "null":
        return 0
    if not 0 <= reg.number <= 255:
        raise _fail(inst, where, f"r{reg.number} is out of range")
    return operand.file.put(1) | operand.number.put(reg.number)


def _encode_send(inst: Instruction, info: T.OpcodeInfo, layout: Layout) -> int:
    S, B = layout.fields.send, layout.fields.binary
    msg = inst.send
    if msg is None or inst.dst is None or len(inst.srcs) != 2:
        raise _fail(inst, "operands", "a send needs dst, src0, src1 and a message descriptor")
    if inst.cond_modifier is not None:
        raise _fail(inst, "condition modifier", "send takes no condition modifier")
    sfid = layout.sfids.get(msg.sfid)
    if sfid is None:
        raise _fail(inst, "sfid", f"shared function '{msg.sfid}' does not exist on {layout.platform.display_name}")
    bits = S.sfid.put(sfid)
    options = inst.options
    if "EOT" in options:
        bits |= S.eot.put(1)
    if "Serialize" in options:
        if not S.serialize.present:
            raise _fail(inst, "options", f"Serialize is not encodable on {layout.platform.display_name}")
        bits |= S.serialize.put(1)
    bits |= _send_register(inst, "dst", inst.dst, B.dst)
    src0, src1 = inst.srcs
    if type(src0) is not Reg:
        raise _fail(inst, "src0", "send sources are registers")
    bits |= _send_register(inst, "src0", src0, B.src0)
    if type(src1) is not Reg:
        raise _fail(inst, "src1", "send sources are registers")
    bits |= _send_register(inst, "src1", src1, B.src1)

    if msg.desc_in_a0:
        bits |= S.desc_in_a0.put(1)
    else:
        if not S.desc.fits(msg.desc):
            raise _fail(inst, "desc", "the descriptor is a 32-bit value")
        bits |= S.desc.put(msg.desc)

    length_in_instruction = T.src1_length_in_instruction(layout.platform)
    exbso, cps = "ExBSO" in options, "CPS" in options
    if (exbso or cps) and not length_in_instruction:
        raise _fail(inst, "options", "ExBSO/CPS do not exist on XeLP")
    if msg.exdesc_a0 is not None:
        if not S.exdesc_a0_subreg.fits(msg.exdesc_a0):
            raise _fail(inst, "exdesc", f"a0.{msg.exdesc_a0} is out of range")
        bits |= S.exdesc_in_a0.put(1) | S.exdesc_a0_subreg.put(msg.exdesc_a0) | S.exbso.put(exbso) | S.cps.put(cps)
        if exbso:
            if msg.src1_length is None:
                raise _fail(inst, "src1", "ExBSO needs the src1 length (r10:4)")
            bits |= S.src1_length.put(_src1_length(inst, src1, msg.src1_length, S.src1_length))
        elif msg.src1_length is not None:
            raise _fail(inst, "src1", "with the extended descriptor in a0, the src1 length comes from a0 (add {ExBSO})")
        return bits
    if exbso or cps:
        raise _fail(inst, "options", "ExBSO/CPS need the extended descriptor in a0")
    exdesc = msg.exdesc
    if not 0 <= exdesc <= _MASK32:
        raise _fail(inst, "exdesc", "the extended descriptor is a 32-bit value")
    if length_in_instruction:
        if exdesc & 0x7FF:
            raise _fail(inst, "exdesc", "ExDesc[10:0] must be zero (the src1 length is written r10:4)")
        if msg.src1_length is None:
            raise _fail(inst, "src1", f"{layout.platform.display_name} needs the src1 length (r10:4 or null:0)")
        bits |= S.src1_length.put(_src1_length(inst, src1, msg.src1_length, S.src1_length))
    else:
        if exdesc & 0x3F:
            raise _fail(inst, "exdesc", "ExDesc[5:0] are not encodable (SFID and EOT have their own fields)")
        if msg.src1_length is not None:
            raise _fail(inst, "src1", "on XeLP the src1 length is ExDesc[10:6]")
        bits |= S.src1_length.put(exdesc >> 6)
    return bits | S.exdesc.put(exdesc)


def _src1_length(inst: Instruction, src1: Reg, length: int, field: Field) -> int:
    if not field.fits(length):
        raise _fail(inst, "src1", f"length {length} is out of range (0..{field.limit - 1})")
    if src1.file == "r" and src1.number + length > 256:
        raise _fail(inst, "src1", f"r{src1.number}:{length} extends past the last GRF")
    return length


# Sync, branches, nullary


def _encode_sync(inst: Instruction, info: T.OpcodeInfo, layout: Layout) -> int:
    B = layout.fields.binary
    fn = inst.function
    if not isinstance(fn, str) or fn not in T.SYNC_FUNCTIONS or not T.sync_available(fn, layout.platform):
        raise _fail(inst, "sync function", f"'{fn}' does not exist on {layout.platform.display_name}")
    if inst.exec_size != 1 or inst.channel_offset:
        raise _fail(inst, "exec size", "sync has no execution size")
    if inst.dst is not None or len(inst.srcs) != 1:
        raise _fail(inst, "operands", "sync takes one source (null or an immediate)")
    if inst.cond_modifier is not None or inst.predicate is not None:
        raise _fail(inst, "predicate", "sync is not predicated")
    bits = layout.fields.sync.function.put(T.SYNC_FUNCTIONS[fn]) | B.dst.hstride.put(1)  # dst: null <1>
    src = inst.srcs[0]
    if type(src) is Imm:
        if fn not in ("allrd", "allwr") and not (fn == "bar" and layout.xehpc):
            raise _fail(inst, "src0", f"sync.{fn} takes no immediate here")
        if src.type != "ud" or not 0 <= src.value <= _MASK32:
            raise _fail(inst, "src0", "the sync immediate is a 32-bit :ud value")
        return bits | B.src0_is_immediate.put(1) | B.src0.type.put(layout.type_codes["ud"]) | B.immediate.put(src.value)
    if not src.is_null:
        raise _fail(inst, "src0", "sync takes null or an immediate")
    return bits


def _branch_offset(inst: Instruction, name: str, value: int | None) -> int:
    if value is None:
        raise _fail(inst, name, "missing branch target")
    if not -(1 << 31) <= value < (1 << 31):
        raise _fail(inst, name, "branch offset out of range")
    return value & _MASK32


def _branch_register(inst: Instruction, where: str, reg: Reg, operand: BinaryDst, layout: Layout) -> int:
    """A branch register (src0 <0;1,0> or the call destination): a GRF dword."""
    if reg.indirect or reg.file != "r" or (where == "src0" and (reg.neg or reg.abs)):
        raise _fail(inst, where, "branch registers are plain GRFs")
    file_bit, number = _reg_number(inst, where, reg, layout)
    byte = reg.subreg * 4
    if not 0 <= byte < operand.subreg.limit:
        raise _fail(inst, where, f"subregister {reg.subreg} is out of range")
    return operand.file.put(file_bit) | operand.number.put(number) | operand.subreg.put(byte)


def _check_no_operands(inst: Instruction, dst: bool, nsrc: int) -> None:
    if (inst.dst is not None) != dst or len(inst.srcs) != nsrc:
        raise _fail(inst, "operands", f"expected {'a destination and ' if dst else ''}{nsrc} source(s)")
    if inst.cond_modifier is not None:
        raise _fail(inst, "condition modifier", "branches take no condition modifier")


def _encode_jump(inst: Instruction, info: T.OpcodeInfo, layout: Layout) -> int:
    B, R = layout.fields.binary, layout.fields.branch
    if not inst.no_mask:
        raise _fail(inst, "mask control", "jmpi must be (W)")
    if inst.exec_size != 1 or inst.channel_offset:
        raise _fail(inst, "exec size", "jmpi has no execution size")
    if inst.srcs:
        _check_no_operands(inst, False, 1)
        if type(inst.srcs[0]) is not Reg:
            raise _fail(inst, "src0", "expected a register or a label")
        return _branch_register(inst, "src0", inst.srcs[0], B.src0, layout)
    _check_no_operands(inst, False, 0)
    return B.src0_is_immediate.put(1) | R.jip.put(_branch_offset(inst, "jip", inst.jip))


def _encode_jip_uip(inst: Instruction, info: T.OpcodeInfo, layout: Layout) -> int:
    B, R = layout.fields.binary, layout.fields.branch
    _check_no_operands(inst, False, 0)
    return (
        B.src0_is_immediate.put(1)
        | B.src1_is_immediate.put(1)
        | R.jip.put(_branch_offset(inst, "jip", inst.jip))
        | R.uip.put(_branch_offset(inst, "uip", inst.uip))
    )


def _encode_jip_only(inst: Instruction, info: T.OpcodeInfo, layout: Layout) -> int:
    B, R = layout.fields.binary, layout.fields.branch
    _check_no_operands(inst, False, 0)
    if inst.uip is not None:
        raise _fail(inst, "uip", f"{inst.opcode} has only a JIP")
    return B.src0_is_immediate.put(1) | R.jip.put(_branch_offset(inst, "jip", inst.jip))


def _encode_call(inst: Instruction, info: T.OpcodeInfo, layout: Layout) -> int:
    B, R = layout.fields.binary, layout.fields.branch
    if inst.dst is None:
        raise _fail(inst, "dst", "call needs a register for the return address")
    bits = _branch_register(inst, "dst", inst.dst, B.dst, layout)
    if inst.srcs:
        _check_no_operands(inst, True, 1)
        if type(inst.srcs[0]) is not Reg:
            raise _fail(inst, "src0", "expected a register or a label")
        return bits | _branch_register(inst, "src0", inst.srcs[0], B.src0, layout)
    _check_no_operands(inst, True, 0)
    if info.format == T.CALLA:  # an absolute address
        if inst.jip is None or not 0 <= inst.jip <= _MASK32:
            raise _fail(inst, "jip", "calla needs an absolute address 0..0xFFFFFFFF")
        return bits | B.src0_is_immediate.put(1) | R.jip.put(inst.jip)
    return bits | B.src0_is_immediate.put(1) | R.jip.put(_branch_offset(inst, "jip", inst.jip))


def _encode_ret(inst: Instruction, info: T.OpcodeInfo, layout: Layout) -> int:
    _check_no_operands(inst, False, 1)
    if type(inst.srcs[0]) is not Reg:
        raise _fail(inst, "src0", "ret takes the register holding the return address")
    return _branch_register(inst, "src0", inst.srcs[0], layout.fields.binary.src0, layout)


def _encode_nullary(inst: Instruction, info: T.OpcodeInfo, layout: Layout) -> int:
    if inst.dst is not None or inst.srcs:
        raise _fail(inst, "operands", f"{inst.opcode} takes no operands")
    if inst.exec_size != 1 or inst.channel_offset:
        raise _fail(inst, "exec size", f"{inst.opcode} has no execution size")
    if inst.no_mask or inst.options or (inst.opcode == "illegal" and not inst.swsb.empty):
        raise _fail(inst, "options", f"{inst.opcode} takes no options or mask control")
    return 0


_FORMAT_ENCODERS = {
    T.UNARY: _encode_unary_binary,
    T.BINARY: _encode_unary_binary,
    T.MATH: _encode_unary_binary,
    T.TERNARY: _encode_ternary,
    T.DPAS: _encode_dpas,
    T.SEND: _encode_send,
    T.SYNC: _encode_sync,
    T.NULLARY: _encode_nullary,
    T.JUMP: _encode_jump,
    T.JIP_UIP: _encode_jip_uip,
    T.JIP_ONLY: _encode_jip_only,
    T.CALL: _encode_call,
    T.CALLA: _encode_call,
    T.RET: _encode_ret,
}
