"""Bytes that are not instructions: DecodeError naming the byte offset, never a crash."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen import hw as hwlib
from xegen.emit import decode, decode_one, encode_kernel, format_kernel, parse_asm
from xegen.errors import DecodeError

from .xe_strategies import kernels

PLATFORMS = [hwlib.XELP, hwlib.XEHPG, hwlib.XEHPC]


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_random_bytes_decode_or_raise_decode_error(platform):
    @settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.binary(max_size=96), st.booleans())
    def check(data, clear_compact_bits):
        if clear_compact_bits:  # mostly 16-byte forms, so decoding goes deeper than the first word
            data = bytes(b & ~0x20 if i % 16 == 3 else b for i, b in enumerate(data))
        try:
            instructions = decode(data, platform)
        except DecodeError as error:
            assert 0 <= error.offset <= len(data) and error.offset % 8 == 0
            assert f"byte offset {error.offset}" in str(error)
            return
        # whatever decodes, prints, reads back and re-encodes to the same instructions (as
        # 16-byte forms: a random compacted word need not be the canonical compaction)
        listing = format_kernel(instructions, platform)
        assert parse_asm(listing, platform) == instructions
        native = [replace(i, options=tuple(o for o in i.options if o != "Compacted")) for i in instructions]
        assert decode(encode_kernel(native, platform), platform) == native

    check()


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_mutated_instructions_decode_consistently_or_raise(platform):
    """Valid encodings with random bits flipped: the decoder either rejects them or gives
    instructions that print, read back and re-encode consistently."""

    @settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
    @given(kernels(platform, 1, 8), st.lists(st.integers(0, 127), min_size=1, max_size=6), st.data())
    def check(instructions, flips, data):
        code = bytearray(encode_kernel(instructions, platform))
        index = data.draw(st.integers(0, len(instructions) - 1))
        word = int.from_bytes(code[16 * index : 16 * index + 16], "little")
        for bit in flips:
            if bit != 29:  # keep the 16-byte form
                word ^= 1 << bit
        code[16 * index : 16 * index + 16] = word.to_bytes(16, "little")
        try:
            decoded = decode(bytes(code), platform)
        except DecodeError as error:
            assert error.offset == 16 * index
            return
        assert parse_asm(format_kernel(decoded, platform), platform) == decoded
        assert decode(encode_kernel(decoded, platform), platform) == decoded

    check()


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_truncated_kernels_name_the_cut_instruction(platform):
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(kernels(platform, 2, 20), st.data())
    def check(instructions, data):
        code = encode_kernel(instructions, platform)
        cut = data.draw(st.integers(1, len(code) - 1).filter(lambda n: n % 16))
        if not any(code[cut // 16 * 16 : cut]):
            return  # a zero tail reads as padding
        with pytest.raises(DecodeError) as info:
            decode(code[:cut], platform)
        assert info.value.offset == cut // 16 * 16
        assert "truncated" in str(info.value)

    check()


def test_invalid_opcode_names_its_offset():
    code = encode_kernel(parse_asm("mov (8|M0) r1.0<1>:d r2.0<8;8,1>:d\n" * 3, "xehpg"), "xehpg")
    bad = code[:32] + bytes([0x7F]) + code[33:]  # opcode 0x7f does not exist
    with pytest.raises(DecodeError) as info:
        decode(bad, "xehpg")
    assert info.value.offset == 32
    assert "byte offset 32 (0x20)" in str(info.value) and "opcode" in str(info.value)


def test_platform_specific_opcodes_are_rejected_elsewhere():
    add3 = encode_kernel(parse_asm("add3 (8|M0) r1.0<1>:d r2.0<1;0>:d r3.0<1;0>:d r4.0<1>:d", "xehpg"), "xehpg")
    with pytest.raises(DecodeError, match="add3.*does not exist on XeLP"):
        decode(add3, "xelp")


def test_zero_padding_after_the_last_instruction_is_skipped():
    code = encode_kernel(parse_asm("nop", "xehpg"), "xehpg")
    assert len(decode(code + bytes(8), "xehpg")) == 1
    with pytest.raises(DecodeError) as info:
        decode(code + bytes([0x61]) + bytes(7), "xehpg")
    assert info.value.offset == 16


def test_decode_one_offsets():
    code = encode_kernel(parse_asm("nop\nillegal", "xehpc"), "xehpc")
    assert decode_one(code, 16, "xehpc")[0].opcode == "illegal"
    with pytest.raises(DecodeError) as info:
        decode_one(code, 32, "xehpc")
    assert info.value.offset == 32


def test_large_random_input_terminates():
    import random

    rng = random.Random(7)
    data = bytes(rng.getrandbits(8) for _ in range(1 << 16))
    for platform in PLATFORMS:
        try:
            decode(data, platform)
        except DecodeError as error:
            assert 0 <= error.offset < len(data)


def test_compacted_words_go_through_expand_compacted(monkeypatch, iga64):
    """The decoder hands 8-byte words to xegen.emit.compaction.expand_compacted (a stub
    here, built from iga64's own compacted and expanded forms) and marks the result."""
    from xegen import oracles
    from xegen.emit import decoder, disassemble

    text = "add (16|M0) r12.0<1>:d r12.0<1;1,0>:d r9.1<0;1,0>:d {Compacted}\nnop\n"
    compact = oracles.iga64_assemble(text, "xehpg", compact=True)
    full = oracles.iga64_assemble(text, "xehpg")
    assert len(compact) == 24 and len(full) == 32  # 8-byte add, 16-byte nop
    calls = []

    def expand_compacted(word: bytes, hw) -> bytes:
        calls.append(bytes(word))
        assert word == compact[:8]
        return full[:16]

    monkeypatch.setattr(decoder, "expand_compacted", expand_compacted)
    instructions = decode(compact, "xehpg")
    assert calls and [i.opcode for i in instructions] == ["add", "nop"]
    assert instructions[0].options == ("Compacted",)
    assert decode_one(compact, 0, "xehpg")[1] == 8
    assert disassemble(compact, "xehpg").split() == oracles.iga64_disassemble(compact, "xehpg").split()
    assert encode_kernel([replace(i, options=()) for i in instructions], "xehpg") == full
