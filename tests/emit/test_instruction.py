"""The instruction model: builders, defaults, immutability, and encoder errors that name
the field."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen.emit import (
    CondModifier,
    Flag,
    Imm,
    Instruction,
    Predicate,
    Reg,
    SendDescriptor,
    Swsb,
    a0,
    acc,
    arf,
    decode,
    encode,
    format_instruction,
    grf,
    imm,
    indirect,
    null,
    send_reg,
)
from xegen.emit import tables as T
from xegen.errors import EncodeError, Error


def test_builders_fill_default_regions():
    add = Instruction("add", 8, dst=grf(10, 0, "d"), srcs=(grf(11, 2, "d"), imm(16, "d")))
    assert add.dst == Reg("r", 10, 0, "d", None, None, 1)
    assert (add.srcs[0].vstride, add.srcs[0].width, add.srcs[0].hstride) == (1, 1, 0)
    scalar = Instruction("mov", 1, dst=grf(1, 0, "f"), srcs=(grf(2, 3, "f"),))
    assert (scalar.srcs[0].vstride, scalar.srcs[0].width, scalar.srcs[0].hstride) == (0, 1, 0)
    mad = Instruction("mad", 16, dst=grf(1, 0, "f"), srcs=(grf(2, 0, "f"), grf(3, 0, "f"), grf(4, 0, "f")))
    assert [(s.vstride, s.width, s.hstride) for s in mad.srcs] == [(1, None, 0), (1, None, 0), (None, None, 1)]
    explicit = grf(5, 0, "f").region(8, 8, 1)
    assert Instruction("mov", 8, dst=grf(1, 0, "f"), srcs=(explicit,)).srcs[0] is explicit


def test_immediates():
    assert imm(-1, "w") == Imm(0xFFFF, "w") and imm(-1, "w").signed_value == -1
    assert imm(1.5, "f") == Imm(0x3FC00000, "f") and imm(1, "f").float_value == 1.0
    assert imm(1.5, "hf") == Imm(0x3E00, "hf")
    assert imm(-2.0, "df").float_value == -2.0
    with pytest.raises(ValueError):
        imm(1.5, "d")


def test_instructions_are_immutable_and_hashable():
    inst = Instruction("mov", 8, dst=grf(1, 0, "d"), srcs=(grf(2, 0, "d"),))
    with pytest.raises(dataclasses.FrozenInstanceError):
        inst.opcode = "add"  # type: ignore[misc]
    same = Instruction("mov", 8, dst=grf(1, 0, "d"), srcs=(grf(2, 0, "d"),))
    assert inst == same and hash(inst) == hash(same) and len({inst, same}) == 1


def test_region_builders_copy_every_other_field():
    # (they build the copy field by field, faster than dataclasses.replace: a field added to Reg
    # and not to the copy would be lost)
    r = Reg("r", 7, 3, "w", 8, 4, 2, neg=True, abs=True, mme=5, indirect=True, addr_subreg=2, addr_offset=-32)
    assert r.region(16, 8, 2) == dataclasses.replace(r, vstride=16, width=8, hstride=2)
    assert r.stride(4) == dataclasses.replace(r, vstride=None, width=None, hstride=4)
    assert r.scalar() == dataclasses.replace(r, vstride=0, width=1, hstride=0)
    assert r.at("a", 1, 6) == dataclasses.replace(r, file="a", number=1, subreg=6)


def test_swsb_text():
    for text in ("@3", "A@1,$2", "$5.dst", "$0.src", "F@2", "I@1,$3.dst", "NoAccSBSet"):
        assert str(Swsb.parse(text)) == text
    assert Swsb.parse("@0").empty  # iga64 reads a lone @0 as no distance
    with pytest.raises(ValueError):
        Swsb.parse("$3.foo")


def test_operator_sugar():
    r = grf(3, 0, "f")
    assert (-r).neg and abs(r).abs and (~r).neg and (-abs(r)).neg


def test_a_hand_built_kernel_round_trips():
    insts = [
        Instruction(
            "mov",
            8,
            dst=acc(0, 0, "f"),
            srcs=(grf(2, 0, "f"),),
            predicate=Predicate(Flag(1, 0), True, "anyv"),
            swsb=Swsb(1, "F"),
        ),
        Instruction(
            "cmp", 16, dst=null("d"), srcs=(grf(4, 0, "d"), imm(7, "d")), cond_modifier=CondModifier("lt", Flag(0, 1))
        ),
        Instruction("mov", 8, dst=indirect(2, 16, "ud"), srcs=(arf("sr", 0, 1, "ud").scalar(),), no_mask=True),
        Instruction("mov", 1, dst=a0(1), srcs=(imm(0x40, "uw"),)),
        Instruction(
            "send",
            16,
            dst=send_reg(22),
            srcs=(send_reg(16), send_reg(None)),
            send=SendDescriptor("ugm", 0x64280900, 0, src1_length=0),
            swsb=Swsb(2, "A", 4),
        ),
        Instruction("sync", function="allwr", srcs=(Imm(0b1010, "ud"),)),
        Instruction("math", 8, dst=grf(10, 0, "f"), srcs=(grf(11, 0, "f"),), function="inv", swsb=Swsb(token=3)),
        Instruction(
            "bfn", 8, dst=grf(1, 0, "ud"), srcs=(grf(2, 0, "ud"), grf(3, 0, "ud"), grf(4, 0, "ud")), function=0xCA
        ),
        Instruction(
            "dpas",
            8,
            dst=grf(80, 0, "f"),
            srcs=(null("f"), grf(80, 0, "bf"), grf(30, 0, "bf")),
            systolic_depth=8,
            repeat_count=8,
            options=("Atomic",),
        ),
    ]
    for inst in insts:
        assert decode(encode(inst, "xehpg"), "xehpg") == [inst]


ERRORS = [
    (
        "xelp",
        Instruction("add3", 8, dst=grf(1, 0, "d"), srcs=(grf(2, 0, "d"), grf(3, 0, "d"), grf(4, 0, "d"))),
        "add3: opcode does not exist on XeLP",
    ),
    (
        "xelp",
        Instruction(
            "dpas",
            8,
            dst=grf(1, 0, "f"),
            srcs=(null("f"), grf(2, 0, "hf"), grf(3, 0, "hf")),
            systolic_depth=8,
            repeat_count=8,
        ),
        "dpas: opcode does not exist on XeLP",
    ),
    (
        "xehpg",
        Instruction("mov", 8, dst=grf(1, 0, "d"), srcs=(grf(2, 0, "d"),), swsb=Swsb(token=17)),
        "tokens are $0..$15",
    ),
    ("xehpg", Instruction("mov", 8, dst=grf(1, 0, "d"), srcs=(arf("f", 3, 0, "uw"),)), "src0: f3 does not exist"),
    (
        "xehpg",
        Instruction("mov", 8, dst=grf(1, 0, "tf32"), srcs=(grf(2, 0, "f"),)),
        "dst: type ':tf32' is not encodable on XeHPG",
    ),
    ("xehpg", Instruction("mov", 12, dst=grf(1, 0, "d"), srcs=(grf(2, 0, "d"),)), "exec size: 12"),
    ("xehpc", Instruction("mov", 8, 4, dst=grf(1, 0, "d"), srcs=(grf(2, 0, "d"),)), "channel offset: M4"),
    (
        "xehpg",
        Instruction(
            "add",
            8,
            dst=grf(1, 0, "d"),
            srcs=(grf(2, 0, "d"), grf(3, 0, "d")),
            predicate=Predicate(Flag(0, 0)),
            cond_modifier=CondModifier("eq", Flag(1, 0)),
        ),
        "flag: predicate f0.0 and condition modifier f1.0 must use the same flag",
    ),
    (
        "xehpg",
        Instruction("and", 8, dst=grf(1, 0, "d"), srcs=(grf(2, 0, "d"), grf(3, 0, "d")), saturate=True),
        "saturate: this instruction does not saturate",
    ),
    (
        "xehpg",
        Instruction("math", 8, dst=grf(1, 0, "ud"), srcs=(grf(2, 0, "ud"), grf(3, 0, "ud")), function="idiv"),
        "math function: 'idiv' does not exist on XeHPG",
    ),
    (
        "xehpg",
        Instruction("bfrev", 8, dst=grf(1, 0, "ud"), srcs=(-grf(2, 0, "ud"),)),
        "src0: source modifiers are not supported",
    ),
    (
        "xehpc",
        Instruction("add", 8, dst=grf(1, 0, "d"), srcs=(grf(2, 0, "d"), grf(3, 0, "d")), options=("AccWrEn",)),
        "options: AccWrEn is not available",
    ),
    (
        "xehpg",
        Instruction(
            "send",
            8,
            dst=send_reg(1),
            srcs=(send_reg(2), send_reg(3)),
            send=SendDescriptor("ugm", 0, 0x80, src1_length=None),
        ),
        "exdesc: ExDesc[10:0] must be zero",
    ),
    (
        "xelp",
        Instruction("send", 8, dst=send_reg(1), srcs=(send_reg(2), send_reg(3)), send=SendDescriptor("ugm")),
        "sfid: shared function 'ugm' does not exist on XeLP",
    ),
    # an immediate src0 was read as a register (AttributeError) before it was checked
    (
        "xehpg",
        Instruction(
            "send", 8, dst=send_reg(1), srcs=(imm(2, "ud"), send_reg(3)), send=SendDescriptor("ugm", src1_length=0)
        ),
        "src0: send sources are registers",
    ),
    ("xehpg", Instruction("sync", function="fence", srcs=(null(),)), "sync function: 'fence' does not exist"),
    ("xehpg", Instruction("mov", 8, dst=grf(1, 9, "d"), srcs=(grf(2, 0, "d"),)), "dst: subregister 9"),
]


@pytest.mark.parametrize("hw, inst, message", ERRORS, ids=[e[2] for e in ERRORS])
def test_unencodable_instructions_raise_encode_error_naming_the_field(hw, inst, message):
    with pytest.raises(EncodeError) as info:
        encode(inst, hw)
    assert message in str(info.value)


# Hand-built instructions can hold anything: encoding and printing either work or raise
# a xegen.Error, never another exception.
_ANY_TYPE = st.sampled_from(sorted(T.TYPES) + ["zz"])
_ANY_REG = st.builds(
    Reg,
    st.sampled_from(["r", "null", "acc", "a", "f", "sr", "cr", "ce", "n", "ip", "tm", "mme", "msg", "sp", "q"]),
    st.integers(-2, 300),
    st.integers(-1, 70),
    _ANY_TYPE,
    st.sampled_from([None, 0, 1, 3, 4, 8, 64]),
    st.sampled_from([None, 0, 1, 3, 8, 32]),
    st.sampled_from([None, 0, 1, 3, 4, 8]),
    st.booleans(),
    st.booleans(),
    st.sampled_from([None, 0, 8, 9]),
    st.booleans(),
    st.integers(-1, 20),
    st.integers(-2000, 2000),
)
_ANY_OPERAND = st.one_of(_ANY_REG, st.builds(Imm, st.integers(-5, 1 << 65), _ANY_TYPE))
_ANY_INSTRUCTION = st.builds(
    Instruction,
    st.sampled_from(sorted(T.OPCODES) + ["bogus"]),
    st.sampled_from([1, 3, 8, 16, 64]),
    st.sampled_from([0, 4, 8, 30]),
    st.one_of(st.none(), _ANY_REG),
    st.lists(_ANY_OPERAND, max_size=3).map(tuple),
    st.one_of(
        st.none(),
        st.builds(
            Predicate,
            st.builds(Flag, st.integers(0, 4), st.integers(0, 2)),
            st.booleans(),
            st.sampled_from(["", "anyv", "any", "xx"]),
        ),
    ),
    st.booleans(),
    st.one_of(st.none(), st.builds(CondModifier, st.sampled_from(["lt", "eo", "zz"]))),
    st.booleans(),
    st.sampled_from([None, "inv", "nop", "allrd", 5, 300, 0xCA]),
    st.builds(Swsb, st.sampled_from([None, 0, 1, 9]), st.sampled_from(["", "A", "Q"]), st.sampled_from([None, 1, 40])),
    st.lists(st.sampled_from(["Atomic", "EOT", "Compacted", "AccWrEn", "Serialize", "ExBSO", "Foo"]), max_size=2).map(
        tuple
    ),
    st.sampled_from([None, 16, -16, 1 << 40]),
    st.sampled_from([None, 32]),
    st.one_of(
        st.none(),
        st.builds(
            SendDescriptor,
            st.sampled_from(["ugm", "dc1", "zz"]),
            st.integers(0, 1 << 33),
            st.integers(0, 1 << 33),
            st.booleans(),
            st.sampled_from([None, 2, 9]),
            st.sampled_from([None, 0, 4, 40]),
        ),
    ),
    st.sampled_from([0, 1, 8]),
    st.sampled_from([0, 1, 9]),
    st.booleans(),
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(_ANY_INSTRUCTION, st.sampled_from(["xelp", "xehpg", "xehpc"]))
def test_malformed_instructions_raise_xegen_errors(inst, hw):
    try:
        data = encode(inst, hw)
    except Error:
        pass
    else:
        decode(data, hw)
    try:
        format_instruction(inst, hw)
    except Error:
        pass
