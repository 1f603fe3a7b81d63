"""xegen.emit: the Xe instruction model, the native encoder/decoder, and IGA assembly text.

Platforms: XeLP, XeHPG, XeHPC (`hw` is a `xegen.hw.Platform` or a name/alias such as
"xehpg", "dg2", "12p71").  The oracle is Intel's iga64: our bytes equal
`iga64 -a -Xforce-no-compact` on our text, and our text is what `iga64 -d` prints.

Model (`instruction.py`; frozen, hashable, compared structurally)
    Instruction(opcode, exec_size=1, channel_offset=0, dst=None, srcs=(), predicate=None,
                no_mask=False, cond_modifier=None, saturate=False, function=None,
                swsb=Swsb(), options=(), jip=None, uip=None, send=None,
                systolic_depth=0, repeat_count=0, branch_control=False)
    Reg(file, number, subreg, type, vstride, width, hstride, neg, abs, mme,
        indirect, addr_subreg, addr_offset)      a register ("r" or an ARF class name)
    Imm(value_bits, type)                         an immediate (raw bits; uv/v/vf vectors)
    Flag(reg, subreg)  Predicate(flag, invert, mode)  CondModifier(cond, flag)
    Swsb(distance, pipe, token, token_mode)       Swsb.parse("A@1,$2.dst"), str(swsb)
    SendDescriptor(sfid, desc, exdesc, desc_in_a0, exdesc_a0, src1_length)

    Builders: grf(10, 0, "d"), arf("sr", 0, 1), acc(0), null(), a0(2), indirect(1, 16, "f"),
    send_reg(22), imm(16, "d"), imm(-1.5, "f"); Reg.region(v, w, h), .stride(h), .scalar(),
    .retype(t), -reg, abs(reg), ~reg.  Regions left None get their position's default.

    Conventions: `function` is the math function ("inv"), the sync function ("nop",
    "allwr") or the bfn truth table (0..255 over s0=0xAA, s1=0xCC, s2=0xF0); dpas is
    `dpas.<systolic_depth>x<repeat_count>` with sub-byte precisions as the src1/src2 types
    u4/s4/u2/s2; jip/uip are byte offsets from the branch (calla: absolute); send operands
    are whole registers (`send_reg`), branch registers have type "d" (4-byte subregisters);
    math-macro operands (math.invm/rsqtm, madm) carry `mme` (8 = nomme).

Bytes (`encoder.py`, `decoder.py`)
    encode(inst, hw) -> bytes (16)              encode_kernel(insts, hw) -> bytes
    decode(data, hw) -> list[Instruction]      decode_one(data, offset, hw) -> (inst, size)
    decode_with_sizes(data, hw) -> (insts, sizes)
    Compacted 8-byte words are expanded by `xegen.emit.compaction.expand_compacted` when it
    exists; decoded compacted instructions carry the option "Compacted".

Text (`asm_printer.py`, `asm_parser.py`)
    format_instruction(inst, hw, pc=0) -> str  format_kernel(insts, hw, pcs=False) -> str
    disassemble(data, hw, pcs=False) -> str
    parse_asm(text, hw) -> list[Instruction]   parse_instruction(text, hw, pc=0)
    assemble(text, hw) -> bytes

Errors: EncodeError names the field ("add3: opcode does not exist on XeLP"), DecodeError
names the byte offset, ParseError gives the line and column.
"""

import importlib

from .asm_printer import disassemble, format_instruction, format_kernel
from .decoder import decode, decode_one, decode_with_sizes
from .instruction import (
    CondModifier,
    Flag,
    Imm,
    Instruction,
    Operand,
    Predicate,
    Reg,
    SendDescriptor,
    Swsb,
    a0,
    acc,
    arf,
    grf,
    imm,
    indirect,
    null,
    send_reg,
)

__all__ = [
    "CondModifier",
    "Flag",
    "Imm",
    "Instruction",
    "Operand",
    "Predicate",
    "Reg",
    "SendDescriptor",
    "Swsb",
    "a0",
    "acc",
    "arf",
    "assemble",
    "decode",
    "decode_one",
    "decode_with_sizes",
    "disassemble",
    "encode",
    "encode_kernel",
    "format_instruction",
    "format_kernel",
    "grf",
    "imm",
    "indirect",
    "null",
    "parse_asm",
    "parse_instruction",
    "send_reg",
]

# The encoder and the assembler load on first use, so that readers of bytes (the simulator,
# the disassembler) do not import them.
_LAZY = {
    "assemble": "asm_parser",
    "parse_asm": "asm_parser",
    "parse_instruction": "asm_parser",
    "encode": "encoder",
    "encode_kernel": "encoder",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
