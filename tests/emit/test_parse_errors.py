"""Invalid assembly raises ParseError with the line and column of the problem."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen import hw as hwlib
from xegen.emit import assemble, format_instruction, parse_asm
from xegen.errors import Error, ParseError

from .xe_strategies import instructions

GOOD = "mov (8|M0) r1.0<1>:d r2.0<8;8,1>:d\n"

CASES = [
    # (text, hw, line, column, message fragment)
    ("mov (8|M0) r1.0<1>:d r2.0<8;8,1:d", "xehpg", 1, 32, "expected '>'"),
    ("\n\nfoo (8|M0) r1.0<1>:d r2.0<8;8,1>:d", "xehpg", 3, 1, "unknown mnemonic 'foo'"),
    (GOOD + "add (8|M0) r1.0<1>:d r2.0<8;8,1>:d", "xehpg", 2, 35, "needs 2 source operand"),
    ("mov (3|M0) r1.0<1>:d r2.0<8;8,1>:d", "xehpg", 1, 6, "execution size 3"),
    (GOOD + GOOD + "jmpi L_nowhere", "xehpg", 3, 1, "undefined label 'L_nowhere'"),
    ("L1:\n" + GOOD + "L1:", "xehpg", 3, 1, "label 'L1' is defined twice"),
    ("mov (8|M0) r1.0<1>:d 5", "xehpg", 1, 23, "needs a type"),
    ("mov (8|M0) r1.0<1>:q 1.5:q", "xehpg", 1, 22, "not an integer"),
    ("mov (8|M0) r1.0<1>:w 70000:w", "xehpg", 1, 22, "does not fit"),
    ("add (8|M0) r1.0<1>:d r2.0<8;8,1>:d r3.0<8;8,1>:d {Foo}", "xehpg", 1, 51, "unknown instruction option 'Foo'"),
    ("math.foo (8|M0) r1.0<1>:f r2.0<8;8,1>:f", "xehpg", 1, 1, "unknown math function 'foo'"),
    ("send.xyz (8|M0) r1 r2 null:0 0x0 0x0", "xehpg", 1, 1, "unknown shared function 'xyz'"),
    ("(f5.0) mov (8|M0) r1.0<1>:d r2.0<8;8,1>:d", "xehpg", 1, 2, "f5.0 does not exist on XeHPG"),
    ("(f0.0.any) mov (8|M0) r1.0<1>:d r2.0<8;8,1>:d", "xehpg", 1, 7, "'.any' does not exist on XeHPG"),
    (GOOD + "mov (8|M0) r1.0<1>:d r2.0<8;8,1>:d junk", "xehpg", 2, 36, "unexpected 'junk'"),
    (GOOD + "/* never closed\n" + GOOD, "xehpg", 2, 1, "unterminated /* comment"),
    ("add3 (8|M0) r1.0<1>:d r2.0<1;0>:d r3.0<1;0>:d r4.0<1>:d", "xelp", 1, 1, "'add3' does not exist on XeLP"),
    ("mov (8|M0) r1.0<1>:d r2.0<8;8,1>:zz", "xehpg", 1, 34, "unknown type ':zz'"),
    ("mov (8|M0) q1.0<1>:d r2.0<8;8,1>:d", "xehpg", 1, 12, "unknown register 'q1'"),
    ("mov (8|M0) r1.0<1>:d r2.0<8;8,1>:d {$3.foo}", "xehpg", 1, 37, "bad SWSB token '$3.foo'"),
    ("bfn.(s0&&s1) (8|M0) r1.0<1>:ud r2.0<1;0>:ud r3.0<1;0>:ud r4.0<1>:ud", "xehpg", 1, 1, "bad bfn function"),
    ("dpas.8by8 (8|M0) r1:f r2:f r3:hf r4.0:hf", "xehpg", 1, 1, "expected dpas.<depth>x<repeat>"),
    ("(f0.0) csel (8|M0) r1.0<1>:f r2.0<1;0>:f r3.0<1;0>:f r4.0<1>:f", "xehpg", 1, 1, "'csel' cannot be predicated"),
    ("math.invm (8|M0) r1.3.mme0:f r2.mme1:f r3.nomme:f", "xehpg", 1, 22, "takes no subregister"),
]


@pytest.mark.parametrize("text, hw, line, column, fragment", CASES, ids=[c[4] for c in CASES])
def test_parse_errors_have_line_and_column(text, hw, line, column, fragment):
    with pytest.raises(ParseError) as info:
        parse_asm(text, hw)
    assert (info.value.line, info.value.column) == (line, column), str(info.value)
    assert fragment in str(info.value)
    assert isinstance(info.value, Error)


ENCODE_CASES = [
    # valid syntax that cannot be encoded: assemble() reports the line
    (GOOD + "add (8|M0) r300.0<1>:d r2.0<8;8,1>:d 1:d", "xehpg", 2, "r300 is out of range"),
    (GOOD + "add (8|M0) r1.0<1>:d r2.0<8;8,1>:d 1:d {I@1}", "xelp", 2, "SWSB '{I@1}' cannot be encoded on XeLP"),
    ("add (8|M0) r1.0<1>:d r2.0<8;8,1>:d 1:d {$20}", "xehpg", 1, "tokens are $0..$15"),
    ("mad (8|M0) r1.0<1>:f 1.0:f r2.0<1;0>:f r3.0<1>:f", "xehpg", 1, "3-source immediates are 16-bit"),
    ("mov (8|M4) r1.0<1>:d r2.0<8;8,1>:d", "xehpc", 1, "M4 is not encodable on XeHPC"),
]


@pytest.mark.parametrize("text, hw, line, fragment", ENCODE_CASES, ids=[c[3] for c in ENCODE_CASES])
def test_unencodable_assembly_reports_the_line(text, hw, line, fragment):
    with pytest.raises(ParseError) as info:
        assemble(text, hw)
    assert info.value.line == line
    assert fragment in str(info.value)


_NOISE = st.sampled_from(list(" \t()[]<>;,.:|&~-+{}$@0123456789abcdefxXlrWMnulmqs_/*\n"))


@pytest.mark.parametrize("platform", [hwlib.XELP, hwlib.XEHPG, hwlib.XEHPC], ids=lambda p: p.name)
def test_mangled_assembly_raises_parse_errors_only(platform):
    """Valid lines with characters deleted, inserted or replaced either still assemble or
    raise ParseError with a position; nothing else escapes."""

    @settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        instructions(platform),
        st.lists(st.tuples(st.integers(0, 200), st.integers(0, 2), _NOISE), min_size=1, max_size=4),
    )
    def check(inst, edits):
        if inst.jip is not None:
            return  # branch targets are kernel indices in this strategy
        chars = list(format_instruction(inst, platform))
        for position, action, char in edits:
            position = min(position, len(chars))
            if action == 0 and chars:
                del chars[min(position, len(chars) - 1)]
            elif action == 1:
                chars.insert(position, char)
            elif chars:
                chars[min(position, len(chars) - 1)] = char
        try:
            assemble("".join(chars), platform)
        except ParseError as error:
            assert error.line >= 1 and error.column >= 1

    check()
