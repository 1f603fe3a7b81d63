"""Details of the text form checked against iga64 in one batch each: float immediates,
bfn functions, and the registers and options of every platform."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen import hw as hwlib
from xegen import oracles
from xegen.emit import Imm, Instruction, assemble, decode, disassemble, format_instruction, grf, parse_asm
from xegen.emit.asm_parser import _evaluate_bfn
from xegen.emit.bfn_table import BFN_EXPRESSIONS
from xegen.emit.floats import format_float

from .iga_compare import assert_same_listing

SPECIAL_F32 = [
    0x00000000,
    0x80000000,
    0x3F800000,
    0xBF800000,
    0x7F800000,
    0xFF800000,
    0x7FC00000,
    0xFFC00001,
    0x7F800001,
    0x00000001,
    0x007FFFFF,
    0x7F7FFFFF,
    0x4F800000,
    0x3DCCCCCD,
    0x2F800000,
    0x33D6BF95,
]


def _float_listing(values_by_type: dict[str, list[int]]) -> str:
    lines = []
    for type_name, values in values_by_type.items():
        for bits in values:
            lines.append(f"mov (1|M0) r1.0<1>:{type_name} 0x{bits:X}:{type_name}")
    return "\n".join(lines) + "\n"


def test_float_immediates_print_like_iga64(iga64):
    @settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        st.lists(st.integers(0, 0xFFFFFFFF), min_size=300, max_size=300),
        st.lists(st.integers(0, 0xFFFF), min_size=300, max_size=300),
        st.lists(st.integers(0, (1 << 64) - 1), min_size=300, max_size=300),
    )
    def check(f32, f16, f64):
        text = _float_listing(
            {
                "f": SPECIAL_F32 + f32,
                "hf": [0x3C00, 0x7C00, 0xFC00, 0x7E00, 0x0001, 0x1234] + f16,
                "df": [0x3FF0000000004000, 0x7FF0000000000001, 1 << 63] + f64,
            }
        )
        data = oracles.iga64_assemble(text, "xehpg")
        reference = oracles.iga64_disassemble(data, "xehpg")
        assert_same_listing(disassemble(data, "xehpg"), reference)
        # and the printed values read back to the same bits
        assert assemble(reference, "xehpg") == data

    check()


def test_float_formatting_examples():
    assert format_float(0x3F800000, "f") == "1.0"
    assert format_float(0x4F800000, "f") == "0x4F800000"  # 2**32: "%g" and "%e" lose digits
    assert format_float(0x80000000, "f") == "-0.0"
    assert format_float(0x7F800000, "f") == "inf"
    assert format_float(0x7FC00000, "f") == "qnan(0x0)"
    assert format_float(0x1234, "hf") == "7.572174e-04"
    assert format_float(struct.unpack("<Q", struct.pack("<d", 0.1))[0], "df") == "0.1"


def test_bfn_table_is_consistent():
    assert len(BFN_EXPRESSIONS) == 256
    for value, expression in enumerate(BFN_EXPRESSIONS):
        assert _evaluate_bfn(expression) == value, expression


def test_bfn_functions_print_like_iga64(iga64):
    text = "".join(
        f"bfn.0x{value:02X} (8|M0) r10.0<1>:ud r11.0<1;0>:ud r12.0<1;0>:ud r13.0<1>:ud\n" for value in range(256)
    )
    data = oracles.iga64_assemble(text, "xehpg")
    assert assemble(text, "xehpg") == data
    listing = oracles.iga64_disassemble(data, "xehpg")
    assert_same_listing(disassemble(data, "xehpg"), listing)
    assert [i.function for i in parse_asm(listing, "xehpg")] == list(range(256))


# Every ARF class iga64 knows on each platform, read as a source and (where writable) written.
ARF_SOURCES = {
    "xelp": [
        "acc0.0",
        "acc7.1",
        "a0.3",
        "f1.1",
        "ce",
        "msg3.0",
        "sp.1",
        "sr0.3",
        "sr1.0",
        "cr0.2",
        "n0.2",
        "ip",
        "tdr0.1",
        "tm0.4",
        "fc1.0",
        "dbg0.1",
        "null",
        "mme7.0",
    ],
    "xehpg": [
        "acc0.0",
        "acc7.1",
        "a0.3",
        "f1.1",
        "ce",
        "msg3.0",
        "sr0.3",
        "cr0.2",
        "n0.2",
        "ip",
        "tdr0.1",
        "tm0.4",
        "fc3.0",
        "dbg0.1",
        "null",
        "mme0.0",
    ],
    "xehpc": [
        "acc0.0",
        "acc15.1",
        "a0.3",
        "f3.1",
        "ce",
        "msg7.0",
        "sr1.3",
        "cr0.2",
        "n0.2",
        "ip",
        "tdr0.1",
        "tm0.4",
        "fc2.0",
        "dbg0.1",
        "null",
        "mme4.0",
    ],
}


@pytest.mark.parametrize("name", sorted(ARF_SOURCES))
def test_architecture_registers_match_iga64(name, iga64):
    platform = hwlib.platform(name)
    lines = [f"mov (1|M0) r1.0<1>:ud {reg}<0;1,0>:ud" for reg in ARF_SOURCES[name]]
    lines += [f"mov (1|M0) {reg}<1>:ud r1.0<0;1,0>:ud" for reg in ARF_SOURCES[name] if reg not in ("ce", "ip")]
    text = "\n".join(lines) + "\n"
    data = oracles.iga64_assemble(text, platform)
    assert assemble(text, platform) == data
    assert_same_listing(disassemble(data, platform), oracles.iga64_disassemble(data, platform))


def test_str_of_an_instruction_is_its_iga_text():
    inst = Instruction("add", 8, dst=grf(10, 0, "d"), srcs=(grf(11, 0, "d"), Imm(16, "d")))
    assert str(inst).split() == "add (8|M0) r10.0<1>:d r11.0<1;1,0>:d 16:d".split()
    assert format_instruction(inst, "xelp").split() == str(inst).split()


@pytest.mark.parametrize("name, text, register", [("xehpc", "mme4.0", "acc12"), ("xehpg", "acc12.0", "mme4")])
def test_mme_and_high_accumulators_read_as_iga64_prints_them(name, text, register):
    """mme0..7 are acc8..15: XeHPC has 16 accumulators and prints acc8..15; earlier platforms
    have 8 and print mme0..7.  Either spelling reads back as the instruction the bytes decode to."""
    inst = parse_asm(f"mov (8|M0) r1.0<1>:f {text}<8;8,1>:f", name)
    assert inst == decode(assemble(f"mov (8|M0) r1.0<1>:f {text}<8;8,1>:f", name), name)
    source = inst[0].srcs[0]
    assert f"{source.file}{source.number}" == register
