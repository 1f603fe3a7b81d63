"""The field table (xegen.emit.fields) and the two directions that share it.

For every instruction format on every platform, random valid instructions (the iga64-checked
strategies of xe_strategies.py): the decoder gives back what the encoder was given, and the
encoder gives back the bytes the decoder read, in the 16-byte form and, where the
instruction has one, the compacted form.  IGC's kernels are the decoder's input in
test_igc_kernels.py (the same two directions over real code); test_against_iga64.py checks
both directions against iga64.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen import hw as hwlib
from xegen.emit import decode_one, encode
from xegen.emit import tables as T
from xegen.emit.compaction import compact
from xegen.emit.fields import Field, Group
from xegen.emit.layout import layout_for

from .xe_strategies import (
    BRANCH_OPS,
    basic_instructions,
    branch_instructions,
    dpas_instructions,
    madm_instructions,
    math_instructions,
    nullary_instructions,
    send_instructions,
    sync_instructions,
    ternary_instructions,
)

PLATFORMS = [hwlib.XELP, hwlib.XEHPG, hwlib.XEHPC]
_SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck), max_examples=60)


def _strategy(platform: hwlib.Platform, fmt: str):
    """Random valid instructions of one format (branch targets: any 16-byte multiple)."""
    if fmt in (T.UNARY, T.BINARY):
        classes = basic_instructions(platform)
    elif fmt == T.TERNARY:
        classes = st.one_of(
            ternary_instructions(platform), *([madm_instructions(platform)] if platform.has_madm else [])
        )
    elif fmt in T.BRANCH_FORMATS:
        classes = branch_instructions(platform, [op for op in BRANCH_OPS if T.OPCODES[op].format == fmt])
    else:
        classes = {
            T.MATH: math_instructions,
            T.DPAS: dpas_instructions,
            T.SEND: send_instructions,
            T.SYNC: sync_instructions,
            T.NULLARY: nullary_instructions,
        }[fmt](platform)
    return classes.filter(lambda inst: T.OPCODES[inst.opcode].format == fmt).map(_with_byte_targets)


def _with_byte_targets(inst):
    if inst.jip is None:
        return inst
    if inst.opcode == "calla":
        return replace(inst, jip=16 * inst.jip)
    return replace(inst, jip=16 * inst.jip - 8_000_000, uip=None if inst.uip is None else -16 * inst.uip)


def _formats(platform: hwlib.Platform) -> list[str]:
    return sorted({info.format for info in T.OPCODES.values() if T.opcode_available(info, platform)})


CASES = [(platform, fmt) for platform in PLATFORMS for fmt in _formats(platform)]


def test_every_format_is_covered():
    assert {fmt for _, fmt in CASES} == {info.format for info in T.OPCODES.values()}


@pytest.mark.parametrize("platform, fmt", CASES, ids=[f"{p.name}-{f}" for p, f in CASES])
def test_decode_of_encode_and_encode_of_decode(platform, fmt):
    @settings(**_SETTINGS)
    @given(_strategy(platform, fmt))
    def check(inst):
        native = encode(inst, platform)
        decoded, size = decode_one(native, 0, platform)
        assert size == 16 and decoded == inst
        assert encode(decoded, platform) == native
        word = compact(native, platform)
        if word is not None:
            decoded, size = decode_one(word, 0, platform)
            assert size == 8 and "Compacted" in decoded.options
            assert encode(decoded, platform) == word

    check()


# --- the table itself ------------------------------------------------------------------------------


def _fields(group: Group):
    for member in group.members.values():
        if isinstance(member, Group):
            yield from _fields(member)
        else:
            yield member


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_formats_leave_the_shared_header_alone(platform):
    """Bits up to Atomic mean the same in every format: no format field may use them."""
    fields = layout_for(platform).fields
    header = fields.header
    shared = (1 << (header.atomic.shift + 1)) - 1
    assert header.swsb.width == platform.swsb_bits
    seen = 0
    for field in _fields(header):
        if field.positions & shared:
            assert not field.positions & seen, f"{field.name} overlaps another header field"
            seen |= field.positions
    for name in ("binary", "ternary", "dpas", "send", "sync", "branch"):
        for field in _fields(getattr(fields, name)):
            assert not field.positions & shared, f"{field.name} uses header bits"


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_every_field_reads_back_what_it_writes(platform):
    fields = [f for f in _fields(layout_for(platform).fields) if f.present]

    @settings(max_examples=300, deadline=None)
    @given(st.sampled_from(fields), st.data())
    def check(field: Field, data):
        raw = data.draw(
            st.integers(-(1 << (field.width - 1)), (1 << (field.width - 1)) - 1)
            if field.signed
            else st.integers(0, (1 << field.width) - 1)
        )
        value = raw * field.unit
        assert field.fits(value)
        bits = field.put(value)
        assert bits & ~field.positions == 0
        assert field.get(bits) == value
        assert field.get(bits | ~field.positions & ((1 << 128) - 1)) == value  # the other bits do not leak in
        if field.unit > 1:
            assert not field.fits(value + 1)

    check()


def test_a_table_must_name_the_fields_its_group_class_declares():
    """The group classes give mypy the tables' names; resolving a table checks they agree."""
    from xegen.emit.fields import BRANCH, Branch, _resolve_group

    branch = _resolve_group("branch", BRANCH, Branch, hwlib.XEHPG)
    assert (branch.jip.pieces, branch.uip.pieces) == (((127, 96),), ((95, 64),))
    with pytest.raises(ValueError, match="are not Branch's"):
        _resolve_group("branch", {**BRANCH, "spare": 40}, Branch, hwlib.XEHPG)
    with pytest.raises(ValueError, match="branch.jip: a group of fields where Branch declares a Field"):
        _resolve_group("branch", {**BRANCH, "jip": {"low": 96}}, Branch, hwlib.XEHPG)
