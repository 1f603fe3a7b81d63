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
from .fields import TernaryRegionSource
from .instruction import (
    NO_SWSB,
    CondModifier,
    Flag,
    Imm,
    Instruction,
    Operand,
    Predicate,
    Reg,
    SendDescriptor,
    complete_instruction,
)
from .layout import Layout, layout_for
from .swsb import decode_swsb

_FLAGS = {(r, s): Flag(r, s) for r in range(4) for s in range(2)}
_CACHE_LIMIT = 1 << 16
#: the most kernel code the decoder takes (262,144 uncompacted instructions, ten times the largest
#: kernels IGC or xegen emit): a bound on the time a decode takes
MAX_CODE_BYTES = 4 << 20


def decode(data: bytes, hw: str | hwlib.Platform) -> list[Instruction]:
    """Every instruction of a kernel, in order."""
    return decode_with_sizes(data, hw)[0]


def decode_with_sizes(data: bytes, hw: str | hwlib.Platform) -> tuple[list[Instruction], list[int]]:
    """The instructions and their byte sizes (8 for compacted, 16 otherwise)."""
    layout = layout_for(hwlib.platform(hw))
    decoder = _decoder_for(layout)
    view = _as_bytes(data)
    if len(view) > MAX_CODE_BYTES:
        raise DecodeError(
            f"{len(view)} bytes of code; the decoder takes at most {MAX_CODE_BYTES} "
            f"({MAX_CODE_BYTES // 16} instructions)",
            MAX_CODE_BYTES,
        )
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


_DECODERS: dict[str, _Decoder] = {}


def _decoder_for(layout: Layout) -> _Decoder:
    decoder = _DECODERS.get(layout.platform.name)
    if decoder is None:
        decoder = _DECODERS[layout.platform.name] = _Decoder(layout)
    return decoder


def _expand_compacted(word: bytes | bytearray, platform: hwlib.Platform, offset: int) -> bytes:
    try:
        expanded = expand_compacted(bytes(word), platform)
    except (Error, ValueError, KeyError, IndexError) as error:
        message = str(error).split("): ", 1)[-1] if isinstance(error, DecodeError) else str(error)
        raise DecodeError(f"compacted instruction: {message}", offset) from None
    if len(expanded) != 16:
        raise DecodeError(f"compacted instruction expanded to {len(expanded)} bytes, not 16", offset)
    return expanded


class _Decoder:
    """Decodes one platform's instructions; holds that platform's operand caches.  Every field
    is read through the platform's field table (`layout.fields`, see fields.py)."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.platform = layout.platform
        self.xehpc = layout.xehpc
        self.fields = F = layout.fields
        self.compacted_bit = F.header.compacted.positions
        # the header fields up to Atomic, which every format shares (the bits above depend on it)
        self.header_key = (1 << (F.header.atomic.shift + 1)) - 1
        # Operand caches, keyed by the operand's bits.  A math-macro operand reads the same bits
        # differently (its implicit region depends on SIMD1): caches [plain, macro, macro SIMD1].
        self.dst_caches: tuple[dict[int, Reg], ...] = ({}, {})
        self.src_caches: tuple[tuple[dict[int, Reg], ...], ...] = tuple(({}, {}, {}) for _ in range(2))
        self.ternary_caches: tuple[dict[int, Reg], ...] = ({}, {}, {})
        X = F.ternary
        # a 3-source operand's type reads the execution type; bfn's modifier bits are its function
        self.ternary_keys = tuple(S.positions | X.float.positions for S in (X.src0, X.src1, X.src2))
        self.bfn_ternary_keys = tuple(
            key & ~S.modifiers.positions for key, S in zip(self.ternary_keys, (X.src0, X.src1, X.src2), strict=True)
        )
        self.header_cache: dict[int, tuple] = {}
        self.instruction_cache: dict[int, Instruction] = {}
        self.ternary_dst_alignment = T.ternary_dst_alignment(self.platform)
        self.available = {
            code: info for code, info in T.OPCODES_BY_CODE.items() if T.opcode_available(info, self.platform)
        }
        self.format_decoders = {
            T.UNARY: self._unary_binary,
            T.BINARY: self._unary_binary,
            T.MATH: self._unary_binary,
            T.TERNARY: self._ternary,
            T.DPAS: self._dpas,
            T.SEND: self._send,
            T.SYNC: self._sync,
            T.NULLARY: self._nullary,
            T.JUMP: self._jump,
            T.JIP_UIP: self._jip_uip,
            T.JIP_ONLY: self._jip_only,
            T.CALL: self._call,
            T.CALLA: self._call,
            T.RET: self._ret,
        }

    def decode_at(self, data: bytes | bytearray, offset: int) -> tuple[Instruction, int]:
        end = offset + 16
        compacted_bit = self.compacted_bit
        if offset >= 0 and end <= len(data):
            bits = int.from_bytes(data[offset:end], "little")
            if not bits & compacted_bit:  # the common case: a 16-byte instruction
                inst = self.instruction_cache.get(bits)
                if inst is None:
                    inst = self._cache(bits, self.decode_bits(bits, offset))
                return inst, 16
        if offset < 0 or offset + 8 > len(data):
            raise DecodeError(f"truncated instruction: {len(data) - offset} byte(s) left, need at least 8", offset)
        low = int.from_bytes(data[offset : offset + 8], "little")
        if low & compacted_bit:
            expanded = _expand_compacted(data[offset : offset + 8], self.platform, offset)
            bits = int.from_bytes(expanded, "little") & ~compacted_bit
            key = ~bits  # compacted and 16-byte forms of the same bits differ by the option
            inst = self.instruction_cache.get(key)
            if inst is None:
                inst = self._cache(key, self.decode_bits(bits, offset, compacted=True))
            return inst, 8
        if offset + 16 > len(data):
            raise DecodeError(f"truncated instruction: {len(data) - offset} byte(s) left, need 16", offset)
        bits = low | int.from_bytes(data[offset + 8 : offset + 16], "little") << 64
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
        # The common header repeats a lot: decode it once per distinct value.
        key = bits & self.header_key
        header = self.header_cache.get(key)
        if header is None:
            header = self._decode_header(bits, offset)
            if len(self.header_cache) > _CACHE_LIMIT:
                self.header_cache.clear()
            self.header_cache[key] = header
        info, swsb, exec_size, channel_offset, predicate, flag, no_mask, options = header
        if compacted:
            options = options + ("Compacted",)
        state = _State(info, offset, bits, exec_size, channel_offset, predicate, flag, no_mask, swsb, list(options))
        return self.format_decoders[info.format](state)

    def _decode_header(self, bits: int, offset: int) -> tuple:
        H = self.fields.header
        code = H.opcode.get(bits)
        info = self.available.get(code)
        if info is None or H.opcode_reserved.get(bits):
            known = T.OPCODES_BY_CODE.get(code)
            if known is not None and not H.opcode_reserved.get(bits):
                raise self.fail(f"opcode '{known.name}' does not exist on {self.platform.display_name}", offset)
            raise self.fail(f"invalid opcode 0x{bits & (H.opcode.positions | H.opcode_reserved.positions):02x}", offset)
        swsb_bits = H.swsb.get(bits)
        swsb = decode_swsb(swsb_bits, info, self.layout, offset) if swsb_bits else NO_SWSB
        exec_code = H.exec_size.get(bits)
        if exec_code >= len(T.EXEC_SIZES):
            raise self.fail(f"invalid execution size code {exec_code}", offset, info)
        exec_size = T.EXEC_SIZES[exec_code]
        channel_offset = H.channel_offset.get(bits)
        flag = _FLAGS[(H.flag_reg.get(bits), H.flag_subreg.get(bits))]
        flag_valid = flag.reg < self.layout.flag_registers
        pred_code = H.predicate.get(bits)
        predicate = None
        if pred_code:
            mode = self.layout.pred_by_code.get(pred_code)
            if mode is None:
                raise self.fail(f"invalid predicate control {pred_code}", offset, info)
            if not flag_valid:
                raise self.fail("predicate names a flag register that does not exist", offset, info)
            predicate = Predicate(flag, bool(H.predicate_invert.get(bits)), mode)
        options = []
        if H.atomic.get(bits):
            options.append("Atomic")
        if H.breakpoint.get(bits):
            options.append("Breakpoint")
        return (
            info,
            swsb,
            exec_size,
            channel_offset,
            predicate,
            flag if flag_valid else None,
            bool(H.no_mask.get(bits)),
            tuple(options),
        )

    # -- operands -----------------------------------------------------------------------

    def _register(self, file_bit: int, number: int, st: _State, where: str) -> tuple[str, int]:
        if file_bit:
            return "r", number
        decoded = T.arf_decode(number, self.platform)
        if decoded is None:
            raise self.fail(f"{where}: invalid architecture register 0x{number:02x}", st.offset, st.info)
        return decoded

    @staticmethod
    def _element(byte: int, type_name: str) -> int:
        # A register's subregister field counts bytes, but an operand addresses whole elements: the
        # bits below the type's size are not read (iga64 decodes r12 byte 13 as r12.3:d).
        return byte // T.type_bytes(type_name)

    def _type(self, code: int, st: _State, where: str) -> str:
        name = self.layout.type_by_code.get(code)
        if name is None:
            raise self.fail(f"{where}: invalid type code {code}", st.offset, st.info)
        return name

    def _binary_dst(self, st: _State) -> Reg:
        bits, D = st.bits, self.fields.binary.dst
        cache, key = self.dst_caches[st.macro], bits & D.positions
        reg = cache.get(key)
        if reg is not None:
            return reg
        type_name = self._type(D.type.get(bits), st, "dst")
        hs = T.HSTRIDE_BY_CODE[D.hstride.get(bits)]
        if hs == 0 and not st.macro:
            raise self.fail("dst: invalid destination stride <0>", st.offset, st.info)
        if D.indirect.get(bits):
            if st.macro:
                raise self.fail("dst: math macro operands are direct registers", st.offset, st.info)
            reg = Reg(
                "r",
                0,
                0,
                type_name,
                None,
                None,
                hs,
                indirect=True,
                addr_subreg=D.address_subreg.get(bits),
                addr_offset=D.address_offset.get(bits),
            )
        else:
            file, number = self._register(D.file.get(bits), D.number.get(bits), st, "dst")
            if st.macro:
                reg = Reg(file, number, 0, type_name, None, None, 1, mme=self._mme(D.mme.get(bits), st, "dst"))
            else:
                reg = Reg(file, number, self._element(D.subreg.get(bits), type_name), type_name, None, None, hs)
        if len(cache) > _CACHE_LIMIT:
            cache.clear()
        cache[key] = reg
        return reg

    def _mme(self, value: int, st: _State, where: str) -> int:
        if value > T.MME_NONE:
            raise self.fail(f"{where}: invalid math macro register {value}", st.offset, st.info)
        return value

    def _binary_src(self, index: int, st: _State) -> Reg:
        """src0 or src1 (`index`) of the 1/2-source layout, a register."""
        bits, where = st.bits, _SOURCE_NAMES[index]
        S = self.fields.binary.src0 if index == 0 else self.fields.binary.src1
        if not st.info.source_modifiers and S.modifiers.get(bits):
            raise self.fail(f"{where}: source modifiers are not supported", st.offset, st.info)
        cache = self.src_caches[index][st.macro and 1 + (st.exec_size == 1)]
        key = bits & S.positions
        reg = cache.get(key)
        if reg is not None:
            return reg
        mods = S.modifiers.get(bits)
        type_name = self._type(S.type.get(bits), st, where)
        hs = T.HSTRIDE_BY_CODE[S.hstride.get(bits)]
        width = T.WIDTH_BY_CODE.get(S.width.get(bits))
        vs_code = S.vstride.get(bits)
        vxh = vs_code == S.vstride.limit - 1  # the all-ones vertical stride
        if width is None:
            raise self.fail(f"{where}: invalid region width", st.offset, st.info)
        vs = None if vxh else T.STRIDE_BY_CODE.get(vs_code)
        if vs is None and not vxh:
            raise self.fail(f"{where}: invalid vertical stride", st.offset, st.info)
        neg, abs_ = bool(mods & 2), bool(mods & 1)
        if S.indirect.get(bits):
            if st.macro:
                raise self.fail(f"{where}: math macro operands are direct registers", st.offset, st.info)
            reg = Reg(
                "r",
                0,
                0,
                type_name,
                vs,
                width,
                hs,
                neg,
                abs_,
                indirect=True,
                addr_subreg=S.address_subreg.get(bits),
                addr_offset=S.address_offset.get(bits),
            )
        else:
            if vxh:
                raise self.fail(f"{where}: VxH region on a direct operand", st.offset, st.info)
            file, number = self._register(S.file.get(bits), S.number.get(bits), st, where)
            if st.macro:
                scalar = st.exec_size == 1
                reg = Reg(
                    file,
                    number,
                    0,
                    type_name,
                    0 if scalar else 1,
                    1,
                    0,
                    neg,
                    abs_,
                    mme=self._mme(S.mme.get(bits), st, where),
                )
            else:
                reg = Reg(
                    file, number, self._element(S.subreg.get(bits), type_name), type_name, vs, width, hs, neg, abs_
                )
        if len(cache) > _CACHE_LIMIT:
            cache.clear()
        cache[key] = reg
        return reg

    def _immediate(self, type_code: int, payload: int, st: _State, where: str) -> Imm:
        type_name = self.layout.imm_type_by_code.get(type_code)
        if type_name is None:
            raise self.fail(f"{where}: invalid immediate type code {type_code}", st.offset, st.info)
        width = 32 if type_name in ("uv", "v", "vf") else T.TYPES[type_name].bits
        return Imm(payload & ((1 << width) - 1), type_name)

    # -- formats ------------------------------------------------------------------------

    def _cond_modifier(self, st: _State, code: int) -> CondModifier | None:
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

    def _unary_binary(self, st: _State) -> Instruction:
        bits, info, B = st.bits, st.info, self.fields.binary
        function = None
        cond = None
        nsrc = 1 if info.format == T.UNARY else 2
        if info.format == T.MATH:
            function = T.MATH_BY_CODE.get(B.condition.get(bits))
            if function is None or not T.math_available(function, self.platform):
                raise self.fail(f"invalid math function {B.condition.get(bits)}", st.offset, info)
            nsrc = 2 if function in T.MATH_TWO_SOURCES else 1
            if function in T.MATH_MACROS:
                st.macro = 1
                if st.flag is None:
                    raise self.fail("math macro names a flag register that does not exist", st.offset, info)
                cond = CondModifier("eo", st.flag)
        dst = self._binary_dst(st)
        if B.src0_is_immediate.get(bits):
            if nsrc != 1 or st.macro:
                raise self.fail("src0 immediate on an instruction with two sources", st.offset, info)
            type_code = B.src0.type.get(bits)
            type_name = self.layout.imm_type_by_code.get(type_code)
            payload = B.immediate.get(bits)
            if type_name is not None and type_name not in ("uv", "v", "vf") and T.TYPES[type_name].bits == 64:
                payload |= B.immediate_high.get(bits) << 32
            elif info.format != T.MATH:
                cond = self._cond_modifier(st, B.condition.get(bits))
            srcs: tuple[Operand, ...] = (self._immediate(type_code, payload, st, "src0"),)
        else:
            if info.format != T.MATH:
                cond = self._cond_modifier(st, B.condition.get(bits))
            src0 = self._binary_src(0, st)
            if nsrc == 1:
                srcs = (src0,)
            elif B.src1_is_immediate.get(bits):
                srcs = (src0, self._immediate(B.src1.type.get(bits), B.immediate.get(bits), st, "src1"))
            else:
                srcs = (src0, self._binary_src(1, st))
        return st.build(
            dst=dst, srcs=srcs, cond=cond, function=function, saturate=self._saturate(st), options=self._accwren(st)
        )

    def _saturate(self, st: _State) -> bool:
        if self.fields.header.saturate.get(st.bits):
            if not st.info.saturate:
                raise self.fail("this instruction does not saturate", st.offset, st.info)
            return True
        return False

    def _accwren(self, st: _State) -> list[str]:
        """AccWrEn (XeLP, XeHPG; on XeHPC its bit belongs to the destination)."""
        if self.fields.header.acc_write_enable.get(st.bits):
            st.options.insert(0, "AccWrEn")
        return st.options

    def _ternary_type(self, code: int, float_exec: int, st: _State, where: str) -> str:
        table = self.layout.ternary_float_by_code if float_exec else self.layout.ternary_int_by_code
        name = table.get(code)
        if name is None:
            raise self.fail(f"{where}: invalid type code {code}", st.offset, st.info)
        return name

    def _ternary_reg(
        self, index: int, float_exec: int, mods: int, st: _State, bfn: bool, macro_region: tuple | None = None
    ) -> Reg:
        """src0, src1 or src2 (`index`) of a 3-source instruction, a register."""
        bits, where = st.bits, _SOURCE_NAMES[index]
        X = self.fields.ternary
        S = (X.src0, X.src1, X.src2)[index]
        cache = self.ternary_caches[index]
        key = bits & (self.bfn_ternary_keys if bfn else self.ternary_keys)[index]
        reg = cache.get(key)
        if reg is not None and macro_region is None:
            return reg
        type_name = self._ternary_type(S.type.get(bits), float_exec, st, where)
        file, number = self._register(S.file.get(bits), S.number.get(bits), st, where)
        neg, abs_ = bool(mods & 2), bool(mods & 1)
        if macro_region is not None:
            v, h = macro_region
            return Reg(file, number, 0, type_name, v, None, h, neg, abs_, mme=self._mme(S.mme.get(bits), st, where))
        hs = T.HSTRIDE_BY_CODE[S.hstride.get(bits)]
        vs = T.TERNARY_VSTRIDE_BY_CODE[S.vstride.get(bits)] if isinstance(S, TernaryRegionSource) else None  # src2: <h>
        reg = Reg(file, number, self._element(S.subreg.get(bits), type_name), type_name, vs, None, hs, neg, abs_)
        if len(cache) > _CACHE_LIMIT:
            cache.clear()
        cache[key] = reg
        return reg

    def _ternary(self, st: _State) -> Instruction:
        bits, info, X = st.bits, st.info, self.fields.ternary
        float_exec = X.float.get(bits)
        macro = info.name == "madm"
        st.macro = int(macro)
        scalar = st.exec_size == 1
        function = None
        cond = None
        bfn = info.name == "bfn"
        if bfn:
            function = X.bfn_function.get(bits)
            code = X.bfn_condition.get(bits)
            if code:
                if st.flag is None:
                    raise self.fail("condition modifier names a flag register that does not exist", st.offset, info)
                cond = CondModifier(("eq", "gt", "lt")[code - 1], st.flag)
        else:
            cond = self._cond_modifier(st, X.condition.get(bits))
        # dst
        D = X.dst
        dst_type = self._ternary_type(D.type.get(bits), float_exec, st, "dst")
        file, number = self._register(D.file.get(bits), D.number.get(bits), st, "dst")
        if macro:
            dst = Reg(file, number, 0, dst_type, None, None, 1, mme=self._mme(D.mme.get(bits), st, "dst"))
        else:
            hs_code = D.hstride.get(bits)
            if hs_code > 1:
                raise self.fail("dst: invalid 3-source destination stride", st.offset, info)
            # a 3-source destination is addressed at the platform's alignment (8 bytes on XeLP): the
            # field's lower bits are not read, as iga64 decodes them
            byte = D.subreg.get(bits) // self.ternary_dst_alignment * self.ternary_dst_alignment
            dst = Reg(file, number, self._element(byte, dst_type), dst_type, None, None, 1 << hs_code)
        macro_src = ((0 if scalar else 1), 0) if macro else None
        # src0: a register or a 16-bit immediate
        mods0 = 0 if bfn else X.src0.modifiers.get(bits)
        src0: Operand
        if X.src0_is_immediate.get(bits):
            src0 = self._ternary_imm(X.src0.type.get(bits), float_exec, X.src0_immediate.get(bits), st, "src0")
        else:
            src0 = self._ternary_reg(0, float_exec, mods0, st, bfn, macro_src)
        if mods0 and not info.source_modifiers:
            raise self.fail("src0: source modifiers are not supported", st.offset, info)
        # src1
        mods1 = 0 if bfn else X.src1.modifiers.get(bits)
        src1 = self._ternary_reg(1, float_exec, mods1, st, bfn, macro_src)
        # src2
        mods2 = 0 if bfn else X.src2.modifiers.get(bits)
        src2: Operand
        if X.src2_is_immediate.get(bits):
            src2 = self._ternary_imm(X.src2.type.get(bits), float_exec, X.src2_immediate.get(bits), st, "src2")
        else:
            src2 = self._ternary_reg(2, float_exec, mods2, st, bfn, (None, 1) if macro else None)
        if (mods1 or mods2) and not info.source_modifiers:
            raise self.fail("source modifiers are not supported", st.offset, info)
        return st.build(
            dst=dst,
            srcs=(src0, src1, src2),
            cond=cond,
            function=function,
            saturate=self._saturate(st),
            options=self._accwren(st),
        )

    def _ternary_imm(self, code: int, float_exec: int, value: int, st: _State, where: str) -> Imm:
        type_name = self._ternary_type(code, float_exec, st, where)
        if T.TYPES[type_name].bits != 16 or type_name == "bf":
            raise self.fail(f"{where}: 3-source immediates are 16-bit, not :{type_name}", st.offset, st.info)
        return Imm(value, type_name)

    def _dpas(self, st: _State) -> Instruction:
        bits, info = st.bits, st.info
        X, P = self.fields.ternary, self.fields.dpas
        if P.reserved.get(bits):
            raise self.fail("bit 33 is set but has no meaning here", st.offset, info)
        float_exec = X.float.get(bits)
        depth = T.SYSTOLIC_DEPTH_BY_CODE[P.systolic_depth.get(bits)]
        repeat = P.repeat_count.get(bits) + 1

        def reg(operand, type_name: str, where: str, keep_subreg: bool | None) -> Reg:
            file, number = self._register(operand.file.get(bits), operand.number.get(bits), st, where)
            byte = operand.subreg.get(bits)
            precision = T.TYPES[type_name].bits < 8
            sub = 0 if precision else self._element(byte, type_name)
            if precision and byte:
                raise self.fail(f"{where}: sub-byte operand with a subregister", st.offset, info)
            if keep_subreg is None:  # destination
                return Reg(file, number, sub, type_name, None, None, 1)
            if keep_subreg:  # src2
                return Reg(file, number, sub, type_name, None, None, 1)
            return Reg(file, number, sub, type_name, 1, None, 0)

        dst_type = self._ternary_type(X.dst.type.get(bits), float_exec, st, "dst")
        src0_type = self._ternary_type(X.src0.type.get(bits), float_exec, st, "src0")
        types = []
        for operand, precision_field, where in ((X.src1, P.src1_precision, "src1"), (X.src2, P.src2_precision, "src2")):
            t = self._ternary_type(operand.type.get(bits), float_exec, st, where)
            precision = precision_field.get(bits)
            if precision:
                if precision == 3 or t not in ("ub", "b"):
                    raise self.fail(f"{where}: invalid sub-byte precision", st.offset, info)
                t = {("ub", 1): "u4", ("b", 1): "s4", ("ub", 2): "u2", ("b", 2): "s2"}[(t, precision)]
            types.append(t)
        dst = reg(X.dst, dst_type, "dst", None)
        srcs = (
            reg(X.src0, src0_type, "src0", False),
            reg(X.src1, types[0], "src1", False),
            reg(X.src2, types[1], "src2", True),
        )
        return st.build(dst=dst, srcs=srcs, systolic_depth=depth, repeat_count=repeat, options=self._accwren(st))

    def _send(self, st: _State) -> Instruction:
        bits, info = st.bits, st.info
        S, B = self.fields.send, self.fields.binary
        sfid = self.layout.sfid_by_code.get(S.sfid.get(bits))
        if sfid is None:
            raise self.fail(f"invalid shared function id {S.sfid.get(bits)}", st.offset, info)
        options = st.options
        if S.eot.get(bits):
            options.append("EOT")
        if S.reserved.get(bits):
            raise self.fail(f"Serialize is not encodable on {self.platform.display_name}", st.offset, info)
        if S.serialize.get(bits):
            options.append("Serialize")

        def reg(operand) -> Reg:
            return Reg("r", operand.number.get(bits), 0, "ud") if operand.file.get(bits) else Reg("null", 0, 0, "ud")

        dst, src0, src1 = reg(B.dst), reg(B.src0), reg(B.src1)
        desc_in_a0 = bool(S.desc_in_a0.get(bits))
        desc = 0 if desc_in_a0 else S.desc.get(bits)
        length_field = S.src1_length.get(bits)
        length_in_instruction = T.src1_length_in_instruction(self.platform)
        exdesc = 0
        exdesc_a0 = None
        src1_length = None
        if S.exdesc_in_a0.get(bits):
            exdesc_a0 = S.exdesc_a0_subreg.get(bits)
            if length_in_instruction and S.exbso.get(bits):
                options.append("ExBSO")
                src1_length = length_field if src1.file == "r" else 0
            if length_in_instruction and S.cps.get(bits):
                options.append("CPS")
        else:
            exdesc = S.exdesc.get(bits)
            if length_in_instruction:
                src1_length = length_field if src1.file == "r" else 0  # iga64 prints null:0
            else:
                exdesc |= length_field << 6  # XeLP: the field is ExDesc[10:6]
        if src1_length and src1.number + src1_length > 256:
            raise self.fail(f"src1: r{src1.number}:{src1_length} extends past the last GRF", st.offset, info)
        msg = SendDescriptor(sfid, desc, exdesc, desc_in_a0, exdesc_a0, src1_length)
        return st.build(dst=dst, srcs=(src0, src1), send=msg, options=options)

    def _sync(self, st: _State) -> Instruction:
        bits, info, B, Y = st.bits, st.info, self.fields.binary, self.fields.sync
        code = Y.function.get(bits)
        function = T.SYNC_BY_CODE.get(code)
        if function is None or not T.sync_available(function, self.platform):
            raise self.fail(f"invalid sync function {code}", st.offset, info)
        if B.src0_is_immediate.get(bits):
            if function not in ("allrd", "allwr") and not (function == "bar" and self.xehpc):
                raise self.fail(f"sync.{function} takes no immediate", st.offset, info)
            src: Operand = Imm(B.immediate.get(bits), "ud")
        else:
            if Y.src0_register.get(bits):
                raise self.fail("src0: only null or an immediate is supported", st.offset, info)
            src = Reg("null", 0, 0, "ud", 0, 1, 0)
        if Y.reserved.get(bits):
            raise self.fail("bit 33 is set but has no meaning here", st.offset, info)
        if self.fields.header.saturate.get(bits):
            raise self.fail("saturate bit set on sync", st.offset, info)
        return st.build(srcs=(src,), function=function, exec_size=1, channel_offset=0, options=self._accwren(st))

    def _nullary(self, st: _State) -> Instruction:
        # iga64 prints no fields for these: the other bits are ignored
        if st.info.name == "illegal":
            return Instruction("illegal")
        return Instruction("nop", swsb=st.swsb)

    def _branch_reg(self, operand, st: _State, where: str) -> Reg:
        """A branch register: `operand` is binary.src0 or, for call, binary.dst."""
        bits = st.bits
        if not operand.file.get(bits):
            raise self.fail(f"{where}: branch registers are GRFs", st.offset, st.info)
        byte = operand.subreg.get(bits)
        if byte % 4:
            raise self.fail(f"{where}: misaligned branch register", st.offset, st.info)
        return Reg("r", operand.number.get(bits), byte // 4, "d", 0, 1, 0)

    def _signed(self, value: int) -> int:
        return value - (1 << 32) if value >> 31 else value

    def _jump(self, st: _State) -> Instruction:
        bits, B, R = st.bits, self.fields.binary, self.fields.branch
        self._branch_ctrl(st)
        if not st.no_mask:
            raise self.fail("jmpi must be (W)", st.offset, st.info)
        if B.src0_is_immediate.get(bits):
            return st.build(
                jip=self._signed(R.jip.get(bits)),
                exec_size=1,
                channel_offset=0,
                options=st.options,
                branch_control=False,
            )
        return st.build(srcs=(self._branch_reg(B.src0, st, "src0"),), exec_size=1, channel_offset=0, options=st.options)

    def _branch_ctrl(self, st: _State) -> bool:
        H, R = self.fields.header, self.fields.branch
        if H.saturate.get(st.bits):
            raise self.fail("saturate bit set on a branch", st.offset, st.info)
        if R.branch_control.get(st.bits):
            if st.info.branch_control:
                return True
            call = st.info.format in (T.CALL, T.CALLA)
            if not (call and R.branch_control.positions & self.fields.binary.dst.subreg.positions):
                raise self.fail("bit 33 is set but has no meaning here", st.offset, st.info)  # (XeHPC: call dst)
        return False

    def _jip_uip(self, st: _State) -> Instruction:
        bits, R = st.bits, self.fields.branch
        return st.build(
            jip=self._signed(R.jip.get(bits)),
            uip=self._signed(R.uip.get(bits)),
            branch_control=self._branch_ctrl(st),
            options=st.options,
        )

    def _jip_only(self, st: _State) -> Instruction:
        self._branch_ctrl(st)
        return st.build(jip=self._signed(self.fields.branch.jip.get(st.bits)), options=st.options)

    def _call(self, st: _State) -> Instruction:
        bits, B, R = st.bits, self.fields.binary, self.fields.branch
        self._branch_ctrl(st)
        dst = self._branch_reg(B.dst, st, "dst")
        if B.src0_is_immediate.get(bits):
            target = R.jip.get(bits)
            jip = target if st.info.format == T.CALLA else self._signed(target)
            return st.build(dst=dst, jip=jip, options=st.options)
        return st.build(dst=dst, srcs=(self._branch_reg(B.src0, st, "src0"),), options=st.options)

    def _ret(self, st: _State) -> Instruction:
        self._branch_ctrl(st)
        return st.build(srcs=(self._branch_reg(self.fields.binary.src0, st, "src0"),), options=st.options)


_SOURCE_NAMES = ("src0", "src1", "src2")


class _State:
    """The fields every format shares, gathered once per instruction."""

    __slots__ = (
        "info",
        "offset",
        "bits",
        "exec_size",
        "channel_offset",
        "predicate",
        "flag",
        "no_mask",
        "swsb",
        "options",
        "macro",
    )

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

    def build(
        self,
        dst=None,
        srcs=(),
        cond=None,
        function=None,
        saturate=False,
        options=(),
        jip=None,
        uip=None,
        send=None,
        systolic_depth=0,
        repeat_count=0,
        branch_control=False,
        exec_size=None,
        channel_offset=None,
        predicate=...,
        no_mask=None,
    ) -> Instruction:
        if self.predicate is not None and not self.info.predication:
            raise DecodeError(f"{self.info.name}: this instruction cannot be predicated", self.offset)
        return complete_instruction(
            self.info.name,
            self.exec_size if exec_size is None else exec_size,
            self.channel_offset if channel_offset is None else channel_offset,
            dst,
            srcs,
            self.predicate if predicate is ... else predicate,
            self.no_mask if no_mask is None else no_mask,
            cond,
            saturate,
            function,
            self.swsb,
            tuple(options),
            jip,
            uip,
            send,
            systolic_depth,
            repeat_count,
            branch_control,
        )
