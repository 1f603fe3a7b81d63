"""xegen.emit: the Xe instruction model, native encoder/decoder and IGA assembly text.

Instruction model (`xegen.emit.instruction`), immutable and hashable:

    Instruction(opcode, exec_size, channel_offset, dst, srcs, predicate, no_mask,
                cond_modifier, saturate, function, swsb, options, jip, uip, send,
                systolic_depth, repeat_count, branch_control)
    Reg(file, number, subreg, type, vstride, width, hstride, neg, abs, mme,
        indirect, addr_subreg, addr_offset)          Imm(value_bits, type)
    Flag(reg, subreg)  Predicate(flag, invert, mode)  CondModifier(cond, flag)
    Swsb(distance, pipe, token, token_mode)  SendDescriptor(sfid, desc, exdesc, ...)
    builders: grf(10, 0, "d"), arf("sr", 0, 1), acc(0), null(), a0(2), indirect(1, 16, "f"),
              send_reg(22), imm(16, "d"), imm(1.5, "f"); Reg.region(v, w, h), .stride(h), .scalar()

Bytes:
    encode(inst, hw) -> bytes (16)          encode_kernel(insts, hw) -> bytes
    decode(data, hw) -> list[Instruction]   decode_one(data, offset, hw) -> (Instruction, size)

Text (iga64's syntax):
    format_instruction(inst, hw, pc=0) -> str
    disassemble(data, hw, pcs=False) -> str
    parse_asm(text, hw) -> list[Instruction]    assemble(text, hw) -> bytes

`hw` is a `xegen.hw.Platform` or a name ("xelp", "xehpg", "xehpc", "dg2", ...).  Errors:
EncodeError (names the field), DecodeError (names the byte offset), ParseError (line and
column).
"""

from .asm_parser import assemble, parse_asm, parse_instruction
from .asm_printer import format_instruction, format_kernel
from .decoder import decode, decode_one, decode_with_sizes
from .encoder import encode, encode_kernel
from .instruction import (CondModifier, Flag, Imm, Instruction, Operand, Predicate, Reg, SendDescriptor, Swsb, a0,
                          acc, arf, grf, imm, indirect, null, send_reg)


def disassemble(data: bytes, hw, pcs: bool = False) -> str:
    """The listing `iga64 -d` prints for kernel bytes (with `/* [pc] */` prefixes if pcs)."""
    instructions, sizes = decode_with_sizes(data, hw)
    return format_kernel(instructions, hw, pcs=pcs, sizes=sizes)


__all__ = [
    "CondModifier", "Flag", "Imm", "Instruction", "Operand", "Predicate", "Reg", "SendDescriptor", "Swsb",
    "a0", "acc", "arf", "assemble", "decode", "decode_one", "decode_with_sizes", "disassemble", "encode",
    "encode_kernel", "format_instruction", "format_kernel", "grf", "imm", "indirect", "null", "parse_asm",
    "parse_instruction", "send_reg",
]
