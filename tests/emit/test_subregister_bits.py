"""Every value of a register operand's subregister field decodes as iga64 decodes it.

Other code generators set bits our encoder never sets: nGEN writes a 4-byte subregister into an
XeLP three-source destination (whose field iga64 reads at 8-byte granularity), and a byte offset
below an element's size is simply not read. Random valid kernels get random bits in every GRF
operand's subregister field; xegen's listing of the bytes must equal iga64's, token for token.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen import hw as hwlib
from xegen import oracles
from xegen.emit import decode, encode_kernel, format_kernel, parse_asm
from xegen.emit import tables as T
from xegen.emit.layout import layout_for

from .iga_compare import assert_same_listing
from .xe_strategies import kernels

PLATFORMS = [hwlib.XELP, hwlib.XEHPG, hwlib.XEHPC]
LAYOUT_OF_FORMAT = {T.UNARY: "binary", T.BINARY: "binary", T.MATH: "binary", T.TERNARY: "ternary"}


def _operands(inst):
    if inst.dst is not None:
        yield "dst", inst.dst
    for index, src in enumerate(inst.srcs):
        yield f"src{index}", src


def _scrambled(instructions, platform, draw) -> bytes:
    fields = layout_for(platform).fields
    code = bytearray(encode_kernel(instructions, platform))
    for index, inst in enumerate(instructions):
        layout = LAYOUT_OF_FORMAT.get(T.OPCODES[inst.opcode].format)
        if layout is None:
            continue
        word = int.from_bytes(code[16 * index : 16 * index + 16], "little")
        for name, operand in _operands(inst):
            direct_grf = getattr(operand, "file", None) == T.GRF and not operand.indirect and operand.mme is None
            if direct_grf:
                positions = getattr(getattr(fields, layout), name).subreg.positions
                word = word & ~positions | draw(st.integers(0, (1 << 128) - 1)) & positions
        code[16 * index : 16 * index + 16] = word.to_bytes(16, "little")
    return bytes(code)


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_any_subregister_bits_decode_as_iga64_decodes_them(platform, iga64):
    @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
    @given(kernels(platform, 40, 80), st.data())
    def check(instructions, data):
        code = _scrambled(instructions, platform, data.draw)
        assert_same_listing(format_kernel(decode(code, platform), platform), oracles.iga64_disassemble(code, platform))

    check()


def test_an_xelp_three_source_destination_reads_its_subregister_in_8_byte_units():
    # the case nGEN emits: mad (1|M0) r12.3<1>:d … — the field holds byte 12, the hardware reads r12.2:d
    # (iga64 -d -p=12p1 prints r12.2 for it; the field is bits 55..51 of the 3-source layout)
    platform = hwlib.XELP
    subreg = layout_for(platform).fields.ternary.dst.subreg
    mad = parse_asm("mad (1|M0) r12.0<1>:d r13.0<0;0>:d r14.0<1;0>:d r15.0<0>:d", platform)
    word = int.from_bytes(encode_kernel(mad, platform), "little") | 12 << 51
    assert subreg.get(word) == 12
    (decoded,) = decode(word.to_bytes(16, "little"), platform)
    assert (decoded.dst.number, decoded.dst.subreg, decoded.dst.type) == (12, 2, "d")
