"""Decode native Xe instructions into `Instruction`s.

`decode(data, hw)` reads a whole kernel (fewer than 16 zero bytes at its end are padding,
as in IGC's binaries), `decode_one(data, offset, hw)` one instruction.
Compacted (8-byte) instructions are expanded by `xegen.emit.compaction.expand_compacted`.
Bytes that are not a valid instruction raise `DecodeError` with the byte offset; decoding
never loops forever (every step consumes 8 or 16 bytes).

Operands repeat a lot in real kernels, so decoded operands are memoised by their raw bits.
"""

from __future__ import annotations

from .. import hw as hwlib
from ..errors import DecodeError, Error
from . import tables as T
from .compaction import expand_compacted
from .instruction import (CondModifier, Flag, Imm, Instruction, NO_SWSB, Predicate, Reg, SendDescriptor,
                          complete_instruction)
from .layout import BIT_ACCWREN, BIT_ATOMIC, BIT_DEBUG, BIT_NOMASK, BIT_PRED_INV, BIT_SATURATE, Layout, layout_for
from .swsb import decode_swsb

_FLAGS = {(r, s): Flag(r, s) for r in range(4) for s in range(2)}
_CACHE_LIMIT = 1 << 16
_HEADER_MASK = (1 << 33) - 1  # opcode .. Atomic (bit 32); bits 33, 34 depend on the format


def decode(data: bytes, hw: str | hwlib.Platform) -> list[Instruction]:
    """Every instruction of a kernel, in order."""
    return decode_with_sizes(data, hw)[0]


def decode_with_sizes(data: bytes, hw: str | hwlib.Platform) -> tuple[list[Instruction], list[int]]:
    """The instructions and their byte sizes (8 for compacted, 16 otherwise)."""
    layout = layout_for(hwlib.platform(hw))
    decoder = _decoder_for(layout)
    view = _as_bytes(data)
    out, sizes = [], []
    offset, end = 0, len(view)
    while offset < end:
        if end - offset < 16 and not any(view[offset:]) and offset:
            break  # zero padding after the last instruction (IGC pads kernels; iga64 skips it too)
        inst, size = decoder.decode_at(view, offset)
        out.append(inst)
        sizes.append(size)
        offset += size
    return out, sizes


def decode_one(data: bytes, offset: int, hw: str | hwlib.Platform) -> tuple[Instruction, int]:
    """The instruction at `offset` and its size in bytes."""
    return _decoder_for(layout_for(hwlib.platform(hw))).decode_at(_as_bytes(data), offset)


def _as_bytes(data) -> bytes | bytearray:
    return data if isinstance(data, (bytes, bytearray)) else bytes(data)


_DECODERS: dict[str, "_Decoder"] = {}


def _decoder_for(layout: Layout) -> "_Decoder":
    decoder = _DECODERS.get(layout.platform.name)
    if decoder is None:
        decoder = _DECODERS[layout.platform.name] = _Decoder(layout)
    return decoder


def _expand_compacted(word: bytes, platform: hwlib.Platform, offset: int) -> bytes:
    try:
        expanded = expand_compacted(bytes(word), platform)
    except (Error, ValueError, KeyError, IndexError) as error:
        message = str(error).split("): ", 1)[-1] if isinstance(error, DecodeError) else str(error)
        raise DecodeError(f"compacted instruction: {message}", offset) from None
    if len(expanded) != 16:
        raise DecodeError(f"compacted instruction expanded to {len(expanded)} bytes, not 16", offset)
    return expanded


class _Decoder:
    """Decodes one platform's instructions; holds that platform's operand caches."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.platform = layout.platform
        self.xehpc = layout.xehpc
        self.src_cache: dict[int, Reg] = {}
        self.dst_cache: dict[int, Reg] = {}
        self.ternary_cache: dict[int, Reg] = {}
        self.header_cache: dict[int, tuple] = {}
        self.instruction_cache: dict[int, Instruction] = {}
        self.ternary_dst_alignment = T.ternary_dst_alignment(self.platform)
        self.available = {code: info for code, info in T.OPCODES_BY_CODE.items()
                          if T.opcode_available(info, self.platform)}
        self.format_decoders = {
            T.UNARY: self._unary_binary, T.BINARY: self._unary_binary, T.MATH: self._unary_binary,
            T.TERNARY: self._ternary, T.DPAS: self._dpas, T.SEND: self._send, T.SYNC: self._sync,
            T.NULLARY: self._nullary, T.JUMP: self._jump, T.JIP_UIP: self._jip_uip,
            T.JIP_ONLY: self._jip_only, T.CALL: self._call, T.CALLA: self._call, T.RET: self._ret,
        }

    def decode_at(self, data: bytes, offset: int) -> tuple[Instruction, int]:
        end = offset + 16
        if offset >= 0 and end <= len(data):
            bits = int.from_bytes(data[offset:end], "little")
            if not bits >> 29 & 1:  # the common case: a 16-byte instruction
                inst = self.instruction_cache.get(bits)
                if inst is None:
                    inst = self._cache(bits, self.decode_bits(bits, offset))
                return inst, 16
        if offset < 0 or offset + 8 > len(data):
            raise DecodeError(f"truncated instruction: {len(data) - offset} byte(s) left, need at least 8", offset)
        low = int.from_bytes(data[offset:offset + 8], "little")
        if low >> 29 & 1:
            expanded = _expand_compacted(data[offset:offset + 8], self.platform, offset)
            bits = int.from_bytes(expanded, "little") & ~(1 << 29)
            key = ~bits  # compacted and 16-byte forms of the same bits differ by the option
            inst = self.instruction_cache.get(key)
            if inst is None:
                inst = self._cache(key, self.decode_bits(bits, offset, compacted=True))
            return inst, 8
        if offset + 16 > len(data):
            raise DecodeError(f"truncated instruction: {len(data) - offset} byte(s) left, need 16", offset)
        bits = low | int.from_bytes(data[offset + 8:offset + 16], "little") << 64
        inst = self.instruction_cache.get(bits)
        if inst is None:
            inst = self._cache(bits, self.decode_bits(bits, offset))
        return inst, 16

    def _cache(self, key: int, inst: Instruction) -> Instruction:
        # Instructions are immutable, so identical words can share one object.
        if len(self.instruction_cache) > _CACHE_LIMIT:
            self.instruction_cache.clear()
        self.instruction_cache[key] = inst
        return inst

    def fail(self, message: str, offset: int, info: T.OpcodeInfo | None = None):
        return DecodeError(f"{info.name}: {message}" if info else message, offset)

    # -- common fields ------------------------------------------------------------------

    def decode_bits(self, bits: int, offset: int, compacted: bool = False) -> Instruction:
        # The common header (bits 32:0) repeats a lot: decode it once per distinct value.
        header = self.header_cache.get(bits & _HEADER_MASK)
        if header is None:
            header = self._decode_header(bits, offset)
            if len(self.header_cache) > _CACHE_LIMIT:
                self.header_cache.clear()
            self.header_cache[bits & _HEADER_MASK] = header
        info, swsb, exec_size, channel_offset, predicate, flag, no_mask, options = header
        if compacted:
            options = options + ("Compacted",)
        state = _State(info, offset, bits, exec_size, channel_offset, predicate, flag, no_mask, swsb, list(options))
        return self.format_decoders[info.format](state)

    def _decode_header(self, bits: int, offset: int) -> tuple:
        layout = self.layout
        code = bits & 0x7F
        info = self.available.get(code)
        if info is None or bits & 0x80:
            known = T.OPCODES_BY_CODE.get(code)
            if known is not None and not bits & 0x80:
                raise self.fail(f"opcode '{known.name}' does not exist on {self.platform.display_name}", offset)
            raise self.fail(f"invalid opcode 0x{bits & 0xFF:02x}", offset)
        swsb_bits = (bits >> layout.swsb_shift) & layout.swsb_mask
        swsb = decode_swsb(swsb_bits, info, layout, offset) if swsb_bits else NO_SWSB
        exec_code = (bits >> layout.exec_size_shift) & 7
        if exec_code >= len(T.EXEC_SIZES):
            raise self.fail(f"invalid execution size code {exec_code}", offset, info)
        exec_size = T.EXEC_SIZES[exec_code]
        channel_offset = ((bits >> layout.chan_off_shift) & layout.chan_off_mask) * layout.chan_off_unit
        flag = _FLAGS[((bits >> layout.flag_reg_shift) & layout.flag_reg_mask, (bits >> layout.flag_subreg_shift) & 1)]
        flag_valid = flag.reg < layout.flag_registers
        pred_code = (bits >> layout.pred_shift) & layout.pred_mask
        predicate = None
        if pred_code:
            mode = layout.pred_by_code.get(pred_code)
            if mode is None:
                raise self.fail(f"invalid predicate control {pred_code}", offset, info)
            if not flag_valid:
                raise self.fail("predicate names a flag register that does not exist", offset, info)
            predicate = Predicate(flag, bool(bits >> BIT_PRED_INV & 1), mode)
        options = []
        if bits >> BIT_ATOMIC & 1:
            options.append("Atomic")
        if bits >> BIT_DEBUG & 1:
            options.append("Breakpoint")
        return (info, swsb, exec_size, channel_offset, predicate, flag if flag_valid else None,
                bool(bits >> BIT_NOMASK & 1), tuple(options))

    # -- operands -----------------------------------------------------------------------

    def _register(self, file_bit: int, number: int, st: "_State", where: str) -> tuple[str, int]:
        if file_bit:
            return "r", number
        decoded = T.arf_decode(number, self.platform)
        if decoded is None:
            raise self.fail(f"{where}: invalid architecture register 0x{number:02x}", st.offset, st.info)
        return decoded

    def _element(self, byte: int, type_name: str, st: "_State", where: str) -> int:
        size = T.type_bytes(type_name)
        if byte % size:
            raise self.fail(f"{where}: byte offset {byte} is not aligned to :{type_name}", st.offset, st.info)
        return byte // size

    def _type(self, code: int, st: "_State", where: str) -> str:
        name = self.layout.type_by_code.get(code)
        if name is None:
            raise self.fail(f"{where}: invalid type code {code}", st.offset, st.info)
        return name

    def _binary_dst(self, st: "_State") -> Reg:
        bits = st.bits
        key = (bits >> 48 & 0xFFFF) | (bits >> 35 & 0x1F) << 16 | (bits >> 33 & 1) << 21 | (st.macro << 22)
        reg = self.dst_cache.get(key)
        if reg is not None:
            return reg
        type_name = self._type(bits >> 36 & 0xF, st, "dst")
        hs = T.HSTRIDE_BY_CODE[bits >> 48 & 3]
        if hs == 0 and not st.macro:
            raise self.fail("dst: invalid destination stride <0>", st.offset, st.info)
        if bits >> 35 & 1:
            if st.macro:
                raise self.fail("dst: math macro operands are direct registers", st.offset, st.info)
            offset = bits >> 50 & 0x3FF
            if self.xehpc:
                offset = offset << 1 | (bits >> 33 & 1)
                offset = offset - 0x800 if offset & 0x400 else offset
            else:
                offset = offset - 0x400 if offset & 0x200 else offset
            reg = Reg("r", 0, 0, type_name, None, None, hs, indirect=True, addr_subreg=bits >> 60 & 0xF,
                      addr_offset=offset)
        else:
            file, number = self._register(bits >> 50 & 1, bits >> 56 & 0xFF, st, "dst")
            sub = bits >> 51 & 0x1F
            if st.macro:
                reg = Reg(file, number, 0, type_name, None, None, 1, mme=self._mme(sub, st, "dst"))
            else:
                byte = sub << 1 | (bits >> 33 & 1) if self.xehpc else sub
                reg = Reg(file, number, self._element(byte, type_name, st, "dst"), type_name, None, None, hs)
        if len(self.dst_cache) > _CACHE_LIMIT:
            self.dst_cache.clear()
        self.dst_cache[key] = reg
        return reg

    def _mme(self, value: int, st: "_State", where: str) -> int:
        if value > T.MME_NONE:
            raise self.fail(f"{where}: invalid math macro register {value}", st.offset, st.info)
        return value

    def _binary_src(self, operand: int, type_code: int, mods: int, st: "_State", where: str) -> Reg:
        key = operand | type_code << 24 | mods << 28 | st.macro << 30 | (st.exec_size == 1) << 31
        reg = self.src_cache.get(key)
        if reg is not None:
            return reg
        type_name = self._type(type_code, st, where)
        hs = T.HSTRIDE_BY_CODE[operand & 3]
        width = T.WIDTH_BY_CODE.get(operand >> 17 & 7)
        if self.xehpc:
            # bit 23 holds the low byte-offset bit; src1 has no such bit on XeHPC
            vs_code, low = operand >> 20 & 7, (operand >> 23 & 1) if where == "src0" else 0
            vxh = vs_code == 7
        else:
            vs_code, low = operand >> 20 & 0xF, 0
            vxh = vs_code == 0xF
        if width is None:
            raise self.fail(f"{where}: invalid region width", st.offset, st.info)
        vs = None if vxh else T.STRIDE_BY_CODE.get(vs_code)
        if vs is None and not vxh:
            raise self.fail(f"{where}: invalid vertical stride", st.offset, st.info)
        neg, abs_ = bool(mods & 2), bool(mods & 1)
        if operand >> 16 & 1:
            if st.macro:
                raise self.fail(f"{where}: math macro operands are direct registers", st.offset, st.info)
            offset = operand >> 2 & 0x3FF
            if self.xehpc:
                offset = offset << 1 | low
                offset = offset - 0x800 if offset & 0x400 else offset
            else:
                offset = offset - 0x400 if offset & 0x200 else offset
            reg = Reg("r", 0, 0, type_name, vs, width, hs, neg, abs_, indirect=True,
                      addr_subreg=operand >> 12 & 0xF, addr_offset=offset)
        else:
            if vxh:
                raise self.fail(f"{where}: VxH region on a direct operand", st.offset, st.info)
            file, number = self._register(operand >> 2 & 1, operand >> 8 & 0xFF, st, where)
            sub = operand >> 3 & 0x1F
            if st.macro:
                scalar = st.exec_size == 1
                reg = Reg(file, number, 0, type_name, 0 if scalar else 1, 1, 0, neg, abs_,
                          mme=self._mme(sub, st, where))
            else:
                byte = sub << 1 | low if self.xehpc else sub
                reg = Reg(file, number, self._element(byte, type_name, st, where), type_name, vs, width, hs,
                          neg, abs_)
        if len(self.src_cache) > _CACHE_LIMIT:
            self.src_cache.clear()
        self.src_cache[key] = reg
        return reg

    def _immediate(self, type_code: int, payload: int, st: "_State", where: str) -> Imm:
        type_name = self.layout.imm_type_by_code.get(type_code)
        if type_name is None:
            raise self.fail(f"{where}: invalid immediate type code {type_code}", st.offset, st.info)
        width = 32 if type_name in ("uv", "v", "vf") else T.TYPES[type_name].bits
        return Imm(payload & ((1 << width) - 1), type_name)

    # -- formats ------------------------------------------------------------------------

    def _cond_modifier(self, st: "_State") -> CondModifier | None:
        code = st.bits >> 92 & 0xF
        if not code:
            return None
        cond = T.CONDITION_BY_CODE.get(code)
        if cond is None:
            raise self.fail(f"invalid condition modifier {code}", st.offset, st.info)
        if not st.info.cond_modifier:
            raise self.fail("this instruction takes no condition modifier", st.offset, st.info)
        if st.flag is None:
            raise self.fail("condition modifier names a flag register that does not exist", st.offset, st.info)
        return CondModifier(cond, st.flag)

    def _unary_binary(self, st: "_State") -> Instruction:
        bits, info = st.bits, st.info
        function = None
        cond = None
        nsrc = 1 if info.format == T.UNARY else 2
        if info.format == T.MATH:
            function = T.MATH_BY_CODE.get(bits >> 92 & 0xF)
            if function is None or not T.math_available(function, self.platform):
                raise self.fail(f"invalid math function {bits >> 92 & 0xF}", st.offset, info)
            nsrc = 2 if function in T.MATH_TWO_SOURCES else 1
            if function in T.MATH_MACROS:
                st.macro = 1
                if st.flag is None:
                    raise self.fail("math macro names a flag register that does not exist", st.offset, info)
                cond = CondModifier("eo", st.flag)
        dst = self._binary_dst(st)
        src0_imm = bits >> 46 & 1
        if src0_imm:
            if nsrc != 1 or st.macro:
                raise self.fail("src0 immediate on an instruction with two sources", st.offset, info)
            type_code = bits >> 40 & 0xF
            type_name = self.layout.imm_type_by_code.get(type_code)
            payload = bits >> 96 & 0xFFFFFFFF
            if type_name is not None and type_name not in ("uv", "v", "vf") and T.TYPES[type_name].bits == 64:
                payload |= (bits >> 64 & 0xFFFFFFFF) << 32
            elif info.format != T.MATH:
                cond = self._cond_modifier(st)
            srcs = (self._immediate(type_code, payload, st, "src0"),)
        else:
            if info.format != T.MATH:
                cond = self._cond_modifier(st)
            mods = bits >> 44 & 3
            if mods and not info.source_modifiers:
                raise self.fail("src0: source modifiers are not supported", st.offset, info)
            src0 = self._binary_src(bits >> 64 & 0xFFFFFF, bits >> 40 & 0xF, mods, st, "src0")
            if nsrc == 1:
                srcs = (src0,)
            elif bits >> 47 & 1:
                srcs = (src0, self._immediate(bits >> 88 & 0xF, bits >> 96, st, "src1"))
            else:
                mods = bits >> 120 & 3
                if mods and not info.source_modifiers:
                    raise self.fail("src1: source modifiers are not supported", st.offset, info)
                srcs = (src0, self._binary_src(bits >> 96 & 0xFFFFFF, bits >> 88 & 0xF, mods, st, "src1"))
        return st.build(dst=dst, srcs=srcs, cond=cond, function=function,
                        saturate=self._saturate(st), options=self._accwren(st))

    def _saturate(self, st: "_State") -> bool:
        if st.bits >> BIT_SATURATE & 1:
            if not st.info.saturate:
                raise self.fail("this instruction does not saturate", st.offset, st.info)
            return True
        return False

    def _accwren(self, st: "_State") -> list[str]:
        """Bit 33 as AccWrEn (XeLP, XeHPG); on XeHPC it belongs to the destination."""
        if st.bits >> BIT_ACCWREN & 1 and not self.xehpc:
            st.options.insert(0, "AccWrEn")
        return st.options

    def _no_bit33(self, st: "_State") -> None:
        """Formats where bit 33 has no meaning that the assembly syntax can express."""
        if st.bits >> BIT_ACCWREN & 1:
            raise self.fail("bit 33 is set but has no meaning here", st.offset, st.info)

    def _ternary_type(self, code: int, float_exec: int, st: "_State", where: str) -> str:
        table = self.layout.ternary_float_by_code if float_exec else self.layout.ternary_int_by_code
        name = table.get(code)
        if name is None:
            raise self.fail(f"{where}: invalid type code {code}", st.offset, st.info)
        return name

    def _ternary_reg(self, operand: int, type_name: str, hs: int, vs: int | None, mods: int, st: "_State",
                     where: str, macro_region: tuple | None = None) -> Reg:
        key = operand | T_KEYS[type_name] << 16 | (hs & 7) << 21 | ((vs if vs is not None else 15) & 15) << 24 \
            | mods << 28 | st.macro << 30
        reg = self.ternary_cache.get(key)
        if reg is not None and macro_region is None:
            return reg
        file, number = self._register(operand >> 2 & 1, operand >> 8 & 0xFF, st, where)
        sub = operand >> 3 & 0x1F
        neg, abs_ = bool(mods & 2), bool(mods & 1)
        if macro_region is not None:
            v, h = macro_region
            return Reg(file, number, 0, type_name, v, None, h, neg, abs_, mme=self._mme(sub, st, where))
        byte = sub << 1 if self.xehpc else sub
        reg = Reg(file, number, self._element(byte, type_name, st, where), type_name, vs, None, hs, neg, abs_)
        if len(self.ternary_cache) > _CACHE_LIMIT:
            self.ternary_cache.clear()
        self.ternary_cache[key] = reg
        return reg

    def _ternary(self, st: "_State") -> Instruction:
        bits, info = st.bits, st.info
        float_exec = bits >> 39 & 1
        macro = info.name == "madm"
        st.macro = int(macro)
        scalar = st.exec_size == 1
        function = None
        cond = None
        if info.name == "bfn":
            function = (bits >> 84 & 0xF) | (bits >> 92 & 0xF) << 4
            code = bits >> 44 & 3
            if code:
                if st.flag is None:
                    raise self.fail("condition modifier names a flag register that does not exist", st.offset, info)
                cond = CondModifier(("eq", "gt", "lt")[code - 1], st.flag)
        else:
            cond = self._cond_modifier(st)
        # dst
        dst_type = self._ternary_type(bits >> 36 & 7, float_exec, st, "dst")
        dst_operand = bits >> 48 & 0xFFFF
        file, number = self._register(dst_operand >> 2 & 1, dst_operand >> 8 & 0xFF, st, "dst")
        if macro:
            dst = Reg(file, number, 0, dst_type, None, None, 1, mme=self._mme(dst_operand >> 3 & 0x1F, st, "dst"))
        else:
            hs_code = dst_operand & 3
            if hs_code > 1:
                raise self.fail("dst: invalid 3-source destination stride", st.offset, info)
            byte = dst_operand >> 3 & 0x1F
            if self.xehpc:
                byte = byte << 1 | (bits >> 33 & 1)
            if byte % self.ternary_dst_alignment:
                raise self.fail(f"dst: 3-source destination at byte {byte} is not "
                                f"{self.ternary_dst_alignment}-byte aligned", st.offset, info)
            dst = Reg(file, number, self._element(byte, dst_type, st, "dst"), dst_type, None, None, 1 << hs_code)
        macro_src = ((0 if scalar else 1), 0) if macro else None
        # src0
        mods0 = bits >> 44 & 3 if info.name != "bfn" else 0
        if bits >> 46 & 1:
            src0 = self._ternary_imm(bits >> 40 & 7, float_exec, bits >> 64 & 0xFFFF, st, "src0")
        else:
            t = self._ternary_type(bits >> 40 & 7, float_exec, st, "src0")
            vs = T.TERNARY_VSTRIDE_BY_CODE[(bits >> 35 & 1) | (bits >> 43 & 1) << 1]
            operand = bits >> 64 & 0xFFFF
            src0 = self._ternary_reg(operand, t, T.HSTRIDE_BY_CODE[operand & 3], vs, mods0, st, "src0", macro_src)
        if mods0 and not info.source_modifiers:
            raise self.fail("src0: source modifiers are not supported", st.offset, info)
        # src1
        mods1 = bits >> 86 & 3 if info.name != "bfn" else 0
        t = self._ternary_type(bits >> 88 & 7, float_exec, st, "src1")
        vs = T.TERNARY_VSTRIDE_BY_CODE[(bits >> 83 & 1) | (bits >> 91 & 1) << 1]
        operand = bits >> 96 & 0xFFFF
        src1 = self._ternary_reg(operand, t, T.HSTRIDE_BY_CODE[operand & 3], vs, mods1, st, "src1", macro_src)
        # src2
        mods2 = bits >> 84 & 3 if info.name != "bfn" else 0
        if bits >> 47 & 1:
            src2 = self._ternary_imm(bits >> 80 & 7, float_exec, bits >> 112 & 0xFFFF, st, "src2")
        else:
            t = self._ternary_type(bits >> 80 & 7, float_exec, st, "src2")
            operand = bits >> 112 & 0xFFFF
            src2 = self._ternary_reg(operand, t, T.HSTRIDE_BY_CODE[operand & 3], None, mods2, st, "src2",
                                     (None, 1) if macro else None)
        if (mods1 or mods2) and not info.source_modifiers:
            raise self.fail("source modifiers are not supported", st.offset, info)
        return st.build(dst=dst, srcs=(src0, src1, src2), cond=cond, function=function,
                        saturate=self._saturate(st), options=self._accwren(st))

    def _ternary_imm(self, code: int, float_exec: int, value: int, st: "_State", where: str) -> Imm:
        type_name = self._ternary_type(code, float_exec, st, where)
        if T.TYPES[type_name].bits != 16 or type_name == "bf":
            raise self.fail(f"{where}: 3-source immediates are 16-bit, not :{type_name}", st.offset, st.info)
        return Imm(value, type_name)

    def _dpas(self, st: "_State") -> Instruction:
        bits, info = st.bits, st.info
        float_exec = bits >> 39 & 1
        depth = T.SYSTOLIC_DEPTH_BY_CODE[bits >> 48 & 3]
        repeat = (bits >> 43 & 7) + 1

        def reg(operand: int, type_name: str, where: str, keep_subreg: bool | None) -> Reg:
            file, number = self._register(operand >> 2 & 1, operand >> 8 & 0xFF, st, where)
            byte = operand >> 3 & 0x1F
            if self.xehpc:
                byte <<= 1
            precision = T.TYPES[type_name].bits < 8
            sub = 0 if precision else self._element(byte, type_name, st, where)
            if precision and byte:
                raise self.fail(f"{where}: sub-byte operand with a subregister", st.offset, info)
            if keep_subreg is None:  # destination
                return Reg(file, number, sub, type_name, None, None, 1)
            if keep_subreg:  # src2
                return Reg(file, number, sub, type_name, None, None, 1)
            return Reg(file, number, sub, type_name, 1, None, 0)

        dst_type = self._ternary_type(bits >> 36 & 7, float_exec, st, "dst")
        src0_type = self._ternary_type(bits >> 40 & 7, float_exec, st, "src0")
        types = []
        for type_shift, precision_shift, where in ((88, 86, "src1"), (80, 84, "src2")):
            t = self._ternary_type(bits >> type_shift & 7, float_exec, st, where)
            precision = bits >> precision_shift & 3
            if precision:
                if precision == 3 or t not in ("ub", "b"):
                    raise self.fail(f"{where}: invalid sub-byte precision", st.offset, info)
                t = {("ub", 1): "u4", ("b", 1): "s4", ("ub", 2): "u2", ("b", 2): "s2"}[(t, precision)]
            types.append(t)
        dst = reg(bits >> 48 & 0xFFFF, dst_type, "dst", None)
        srcs = (reg(bits >> 64 & 0xFFFF, src0_type, "src0", False),
                reg(bits >> 96 & 0xFFFF, types[0], "src1", False),
                reg(bits >> 112 & 0xFFFF, types[1], "src2", True))
        if self.xehpc:
            self._no_bit33(st)
        return st.build(dst=dst, srcs=srcs, systolic_depth=depth, repeat_count=repeat, options=self._accwren(st))

    def _send(self, st: "_State") -> Instruction:
        bits, info = st.bits, st.info
        sfid = self.layout.sfid_by_code.get(bits >> 92 & 0xF)
        if sfid is None:
            raise self.fail(f"invalid shared function id {bits >> 92 & 0xF}", st.offset, info)
        options = st.options
        if bits >> 34 & 1:
            options.append("EOT")
        if bits >> 33 & 1:
            if self.xehpc:
                raise self.fail("Serialize is not encodable on XeHPC", st.offset, info)
            options.append("Serialize")

        def reg(file_bit: int, number: int) -> Reg:
            return Reg("r", number, 0, "ud") if file_bit else Reg("null", 0, 0, "ud")

        dst = reg(bits >> 50 & 1, bits >> 56 & 0xFF)
        src0 = reg(bits >> 66 & 1, bits >> 72 & 0xFF)
        src1 = reg(bits >> 98 & 1, bits >> 104 & 0xFF)
        desc_in_a0 = bool(bits >> 48 & 1)
        desc = 0
        if not desc_in_a0:
            desc = (bits >> 81 & 0x7FF) | (bits >> 113 & 0x1FF) << 11 | (bits >> 51 & 0x1F) << 20 \
                | (bits >> 67 & 0x1F) << 25 | (bits >> 122 & 3) << 30
        length_field = bits >> 99 & 0x1F
        length_in_instruction = T.src1_length_in_instruction(self.platform)
        exdesc = 0
        exdesc_a0 = None
        src1_length = None
        if bits >> 49 & 1:
            exdesc_a0 = bits >> 40 & 7
            if length_in_instruction and bits >> 39 & 1:
                options.append("ExBSO")
                src1_length = length_field if src1.file == "r" else 0
            if length_in_instruction and bits >> 35 & 1:
                options.append("CPS")
        else:
            exdesc = (bits >> 35 & 0x1FFF) << 11 | (bits >> 64 & 3) << 24 | (bits >> 96 & 3) << 26 \
                | (bits >> 124 & 0xF) << 28
            if length_in_instruction:
                src1_length = length_field if src1.file == "r" else 0  # iga64 prints null:0
            else:
                exdesc |= length_field << 6
        if src1_length and src1.number + src1_length > 256:
            raise self.fail(f"src1: r{src1.number}:{src1_length} extends past the last GRF", st.offset, info)
        msg = SendDescriptor(sfid, desc, exdesc, desc_in_a0, exdesc_a0, src1_length)
        return st.build(dst=dst, srcs=(src0, src1), send=msg, options=options)

    def _sync(self, st: "_State") -> Instruction:
        bits, info = st.bits, st.info
        function = T.SYNC_BY_CODE.get(bits >> 92 & 0xF)
        if function is None or not T.sync_available(function, self.platform):
            raise self.fail(f"invalid sync function {bits >> 92 & 0xF}", st.offset, info)
        if bits >> 46 & 1:
            if function not in ("allrd", "allwr") and not (function == "bar" and self.xehpc):
                raise self.fail(f"sync.{function} takes no immediate", st.offset, info)
            src = Imm(bits >> 96 & 0xFFFFFFFF, "ud")
        else:
            if bits >> 64 & 0x7FFFFF & ~0x3:  # anything but the null register
                raise self.fail("src0: only null or an immediate is supported", st.offset, info)
            src = Reg("null", 0, 0, "ud", 0, 1, 0)
        if self.xehpc:
            self._no_bit33(st)
        if bits >> BIT_SATURATE & 1:
            raise self.fail("saturate bit set on sync", st.offset, info)
        return st.build(srcs=(src,), function=function, exec_size=1, channel_offset=0, options=self._accwren(st))

    def _nullary(self, st: "_State") -> Instruction:
        # iga64 prints no fields for these: the other bits are ignored
        if st.info.name == "illegal":
            return Instruction("illegal")
        return Instruction("nop", swsb=st.swsb)

    def _branch_reg(self, operand: int, st: "_State", where: str) -> Reg:
        if not operand >> 2 & 1:
            raise self.fail(f"{where}: branch registers are GRFs", st.offset, st.info)
        file, number = "r", operand >> 8 & 0xFF
        byte = operand >> 3 & 0x1F
        if self.xehpc:
            byte = byte << 1 | (operand >> 23 & 1)
        if byte % 4:
            raise self.fail(f"{where}: misaligned branch register", st.offset, st.info)
        return Reg(file, number, byte // 4, "d", 0, 1, 0)

    def _signed(self, value: int) -> int:
        return value - (1 << 32) if value >> 31 else value

    def _jump(self, st: "_State") -> Instruction:
        bits = st.bits
        self._branch_ctrl(st)
        if not st.no_mask:
            raise self.fail("jmpi must be (W)", st.offset, st.info)
        if bits >> 46 & 1:
            return st.build(jip=self._signed(bits >> 96 & 0xFFFFFFFF), exec_size=1, channel_offset=0,
                            options=st.options, branch_control=False)
        return st.build(srcs=(self._branch_reg(bits >> 64 & 0xFFFFFF, st, "src0"),), exec_size=1, channel_offset=0,
                        options=st.options)

    def _branch_ctrl(self, st: "_State") -> bool:
        if st.bits >> BIT_SATURATE & 1:
            raise self.fail("saturate bit set on a branch", st.offset, st.info)
        if st.bits >> BIT_ACCWREN & 1:
            if st.info.branch_control:
                return True
            if not (self.xehpc and st.info.format in (T.CALL, T.CALLA)):  # XeHPC: call dst subreg bit
                raise self.fail("bit 33 is set but has no meaning here", st.offset, st.info)
        return False

    def _jip_uip(self, st: "_State") -> Instruction:
        bits = st.bits
        return st.build(jip=self._signed(bits >> 96 & 0xFFFFFFFF), uip=self._signed(bits >> 64 & 0xFFFFFFFF),
                        branch_control=self._branch_ctrl(st), options=st.options)

    def _jip_only(self, st: "_State") -> Instruction:
        self._branch_ctrl(st)
        return st.build(jip=self._signed(st.bits >> 96 & 0xFFFFFFFF), options=st.options)

    def _call(self, st: "_State") -> Instruction:
        bits = st.bits
        self._branch_ctrl(st)
        dst_operand = bits >> 48 & 0xFFFF
        if self.xehpc:
            dst_operand |= (bits >> 33 & 1) << 23
        dst = self._branch_reg(dst_operand, st, "dst")
        if bits >> 46 & 1:
            target = bits >> 96 & 0xFFFFFFFF
            jip = target if st.info.format == T.CALLA else self._signed(target)
            return st.build(dst=dst, jip=jip, options=st.options)
        return st.build(dst=dst, srcs=(self._branch_reg(bits >> 64 & 0xFFFFFF, st, "src0"),), options=st.options)

    def _ret(self, st: "_State") -> Instruction:
        self._branch_ctrl(st)
        return st.build(srcs=(self._branch_reg(st.bits >> 64 & 0xFFFFFF, st, "src0"),), options=st.options)


# Small dense keys for types in the ternary operand cache.
T_KEYS = {name: i for i, name in enumerate(T.TYPES)}


class _State:
    """The fields every format shares, gathered once per instruction."""

    __slots__ = ("info", "offset", "bits", "exec_size", "channel_offset", "predicate", "flag", "no_mask",
                 "swsb", "options", "macro")

    def __init__(self, info, offset, bits, exec_size, channel_offset, predicate, flag, no_mask, swsb, options):
        self.info = info
        self.offset = offset
        self.bits = bits
        self.exec_size = exec_size
        self.channel_offset = channel_offset
        self.predicate = predicate
        self.flag = flag
        self.no_mask = no_mask
        self.swsb = swsb
        self.options = options
        self.macro = 0

    def build(self, dst=None, srcs=(), cond=None, function=None, saturate=False, options=(), jip=None, uip=None,
              send=None, systolic_depth=0, repeat_count=0, branch_control=False, exec_size=None,
              channel_offset=None, predicate=..., no_mask=None) -> Instruction:
        if self.predicate is not None and not self.info.predication:
            raise DecodeError(f"{self.info.name}: this instruction cannot be predicated", self.offset)
        return complete_instruction(
            self.info.name,
            self.exec_size if exec_size is None else exec_size,
            self.channel_offset if channel_offset is None else channel_offset,
            dst, srcs,
            self.predicate if predicate is ... else predicate,
            self.no_mask if no_mask is None else no_mask,
            cond, saturate, function, self.swsb, tuple(options), jip, uip, send, systolic_depth, repeat_count,
            branch_control,
        )
