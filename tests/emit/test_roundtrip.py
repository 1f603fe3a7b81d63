"""Round trips inside xegen (no Intel tools): decode(encode(i)) == i, parse(format(i)) == i,
for random valid instructions, including branch targets outside the kernel."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen import hw as hwlib
from xegen.emit import (
    decode,
    decode_one,
    disassemble,
    encode,
    encode_kernel,
    format_instruction,
    format_kernel,
    parse_asm,
    parse_instruction,
)
from xegen.emit import tables as T

from .xe_strategies import branch_instructions, instructions, kernels

PLATFORMS = [hwlib.XELP, hwlib.XEHPG, hwlib.XEHPC]
_SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck))


def _resolve_targets(inst, platform):
    """Branch targets of single instructions: any byte offset (negative, far away)."""
    if inst.jip is None:
        return inst
    fmt = T.OPCODES[inst.opcode].format
    if fmt == T.CALLA:
        return replace(inst, jip=(inst.jip * 16) & 0xFFFFFFF0)
    return replace(inst, jip=16 * inst.jip - 8_000_000, uip=None if inst.uip is None else 16 * inst.uip - 8_000_000)


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_decode_encode_and_parse_format_round_trip(platform):
    @settings(max_examples=300, **_SETTINGS)
    @given(instructions(platform))
    def check(inst):
        inst = _resolve_targets(inst, platform)
        data = encode(inst, platform)
        assert len(data) == 16
        decoded, size = decode_one(data, 0, platform)
        assert size == 16 and decoded == inst
        text = format_instruction(inst, platform, pc=64)
        assert parse_instruction(text, platform, pc=64) == inst

    check()


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_kernel_listing_round_trip(platform):
    @settings(max_examples=15, **_SETTINGS)
    @given(kernels(platform, 1, 60))
    def check(insts):
        data = encode_kernel(insts, platform)
        assert decode(data, platform) == insts
        listing = disassemble(data, platform)
        assert listing == format_kernel(insts, platform)
        assert parse_asm(listing, platform) == insts
        # the --pcs form reads back too: /* [pc] */ prefixes are comments
        assert parse_asm(disassemble(data, platform, pcs=True), platform) == insts

    check()


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_branch_labels_outside_the_kernel_round_trip(platform):
    @settings(max_examples=100, **_SETTINGS)
    @given(branch_instructions(platform), st.integers(-(1 << 20), 1 << 20))
    def check(inst, target):
        if inst.jip is None:
            return
        fmt = T.OPCODES[inst.opcode].format
        inst = replace(
            inst,
            jip=abs(target) * 16 if fmt == T.CALLA else target * 16,
            uip=None if inst.uip is None else -target * 16,
        )
        listing = format_kernel([inst], platform)
        assert parse_asm(listing, platform) == [inst]
        assert decode(encode(inst, platform), platform) == [inst]

    check()


def test_encoding_is_deterministic():
    text = "add (8|M0) r10.0<1>:d r11.0<8;8,1>:d 16:d {@1}\nmad (8|M0) r1.0<1>:f r2.0<1;0>:f r3.0<1;0>:f r4.0<1>:f"
    first = [encode_kernel(parse_asm(text, p), p) for p in PLATFORMS]
    second = [encode_kernel(parse_asm(text, p), p) for p in PLATFORMS]
    assert first == second
    assert first[0] == first[1] != first[2]  # XeHPC moves the exec size field
