"""benchdnn descriptors: defaults, canonical form, round trips, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xegen.conv import Descriptor, format_descriptor, parse_descriptor
from xegen.conv.descriptor import FIELDS, SPATIAL
from xegen.errors import ParseError

SHAPES = Path(__file__).resolve().parents[1] / "data" / "shapes_resnet_50"
RESNET = [line.strip() for line in SHAPES.read_text().splitlines() if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("line", RESNET, ids=[line.split('"')[1] for line in RESNET])
def test_every_resnet_line_round_trips_through_the_canonical_form(line):
    desc = parse_descriptor(line)
    text = format_descriptor(desc)
    assert parse_descriptor(text) == desc
    assert format_descriptor(parse_descriptor(text)) == text
    assert desc.name.startswith("resnet_50:")


def test_resnet_file_has_twenty_layers():
    assert len(RESNET) == 20


def test_conv1_fields_are_the_ones_written():
    d = parse_descriptor(RESNET[0])
    assert (d.g, d.mb, d.ic, d.ih, d.iw, d.oc, d.oh, d.ow) == (1, 50, 3, 224, 224, 64, 112, 112)
    assert (d.kh, d.kw, d.sh, d.sw, d.ph, d.pw, d.dh, d.dw) == (7, 7, 2, 2, 3, 3, 0, 0)
    assert d.spatial_dims == 2 and d.name == "resnet_50:conv1"
    # right padding: (112-1)*2 - 224 + 7 - 3 = 2
    assert d.right_padding("h") == 2


def test_square_descriptor_copies_h_to_w_and_keeps_the_star_in_the_name():
    d = parse_descriptor('mb50ic64ih56oc256oh56kh1ph0n"resnet_50:res2a_branch1*4"')
    assert (d.iw, d.ow, d.kw, d.sw, d.pw, d.dw) == (56, 56, 1, 1, 0, 0)
    assert d.name == "resnet_50:res2a_branch1*4"
    assert d.g == 1


def test_defaults_and_computed_output():
    d = parse_descriptor("ic3ih5oc4kh3")
    # mb 2, stride 1, no padding: oh = (5 - 3 + 0) / 1 + 1 = 3
    assert (d.mb, d.g, d.oh, d.ow, d.ph, d.sh, d.dh) == (2, 1, 3, 3, 0, 1, 0)
    assert d.spatial_dims == 2


def test_padding_is_derived_from_a_given_output():
    # p = ((o-1)*s - i + ek) / 2 = ((14-1)*1 - 14 + 3) / 2 = 1
    d = parse_descriptor("mb1ic8ih14oc8oh14kh3")
    assert d.ph == 1 and d.pw == 1


@pytest.mark.parametrize(
    "text, oh, ph, right",
    [
        # (2 - 3)/2 + 1: C truncates -1/2 to 0, so oh = 1 (floor division would give 0)
        ("ic1ih2oc1kh3sh2", 1, 0, (1 - 1) * 2 - 2 + 3 - 0),
        # (2 - 4)/3 + 1 = 0 + 1 = 1
        ("ic1ih2oc1kh4sh3", 1, 0, (1 - 1) * 3 - 2 + 4 - 0),
        # resnet's res3a_branch1 without ph0: ph = ((28-1)*2 - 56 + 1)/2 = -1/2, truncated to 0
        ("ic256ih56oc512oh28kh1sh2", 28, 0, 27 * 2 - 56 + 1 - 0),
        # ph = ((1-1)*2 - 4 + 3)/2 = -1/2 = 0; the same shape as ic1ih4oc1kh3sh2
        ("ic1ih4oc1oh1kh3sh2", 1, 0, -1),
    ],
)
def test_defaults_divide_as_c_does_truncating_toward_zero(text, oh, ph, right):
    d = parse_descriptor(text)
    assert (d.oh, d.ph, d.right_padding("h")) == (oh, ph, right)
    assert (d.ow, d.pw) == (oh, ph)


def test_a_given_output_and_the_computed_one_agree_after_truncation():
    assert parse_descriptor("ic1ih4oc1oh1kh3sh2") == parse_descriptor("ic1ih4oc1kh3sh2")


def test_dilation_widens_the_kernel():
    # ek = (3-1)*(2+1)+1 = 7, so oh = (10 - 7 + 2*1)/1 + 1 = 6
    d = parse_descriptor("ic4ih10oc4kh3dh2ph1")
    assert d.oh == 6 and d.effective_kernel("h") == 7


def test_depth_only_copies_to_height_and_width():
    d = parse_descriptor("ic4id6oc4kd3pd1")
    assert d.spatial_dims == 3
    assert (d.ih, d.iw, d.kh, d.kw, d.oh, d.ow, d.ph, d.pw) == (6, 6, 3, 3, 6, 6, 1, 1)


def test_width_only_is_one_dimensional():
    d = parse_descriptor("ic4iw9oc2kw3sw2")
    assert d.spatial_dims == 1 and d.ow == 4 and (d.ih, d.kh, d.oh) == (1, 1, 1)
    assert format_descriptor(d) == "g1mb2_ic4iw9_oc2ow4_kw3_sw2_pw0_dw0"


def test_separators_and_quotes_are_optional():
    a = parse_descriptor("g2mb1_ic8ih7_oc16oh7_kh3_ph1_nname")
    b = parse_descriptor('g2mb1ic8ih7oc16oh7kh3ph1n"name"')
    assert a == b and a.icg == 4 and a.ocg == 8


def test_grouped_weight_dims():
    d = parse_descriptor("g4mb1ic8ih5oc12kh3")
    assert d.wei_dims() == (4, 3, 2, 3, 3)
    assert parse_descriptor("mb1ic8ih5oc12kh3").wei_dims() == (12, 8, 3, 3)


@pytest.mark.parametrize(
    "text, message",
    [
        ("ic3ih5oc4kh7", "output size would be"),  # (5-7)/1+1 = -1
        ("ic3ih5oc4kh3ph3", "not smaller than the effective kernel"),
        ("ic3ih5oc4oh9kh3ph1", "too large"),  # right padding 8-5+3-1 = 5 >= 3
        ("ic3ih5oc4kh3xx2", "unknown descriptor field"),
        ("ic3ih5oc4kh3ic4", "given twice"),
        ("ih5oc4kh3", "'ic' is required"),
        ("ic3oc4", "at least one spatial dimension"),
        ("ic3ih5oc4", "'kh' is required"),
        ("g2ic3ih5oc4kh3", "not divisible by the 2 groups"),
        ("ic3id4ih5oc4kd1kh3", "all of d, h and w"),
        ("ic3ih5oc4kh3sh0", "stride 'sh' must be at least 1"),
        ("mb0ic3ih5oc4kh3", "minibatch"),
        ("ic3ih5oc4kh", "needs a non-negative integer"),
        ("ic3ih-5oc4kh3", "needs a non-negative integer"),
        ("ic3ih9oc4oh2kh1", "negative padding ph=-3"),  # ((2-1)*1 - 9 + 1)/2 = -7/2 = -3
        ("ic1ih2oc1kh4sh2", "output size would be 0"),  # (2-4)/2 + 1 = -1 + 1
        ("ic3ih4oc4oh9kh1", "not smaller than the effective kernel"),  # p = (8 - 4 + 1)/2 = 2 >= 1
    ],
)
def test_impossible_descriptors_raise_one_clear_error(text, message):
    with pytest.raises(ParseError, match=message):
        parse_descriptor(text)


def test_errors_name_the_column():
    with pytest.raises(ParseError) as error:
        parse_descriptor("ic3ih5oc4kh3qq")
    assert error.value.column == 13


# Hypothesis ----------------------------------------------------------------------------------


@st.composite
def descriptors(draw) -> Descriptor:
    """Random valid descriptors, built field by field with the output computed as benchdnn does."""
    spatial_dims = draw(st.integers(1, 3))
    g = draw(st.integers(1, 4))
    fields = {
        "g": g,
        "mb": draw(st.integers(1, 64)),
        "ic": g * draw(st.integers(1, 64)),
        "oc": g * draw(st.integers(1, 64)),
    }
    for dim in SPATIAL:
        if dim not in SPATIAL[3 - spatial_dims :]:
            fields.update({f"i{dim}": 1, f"o{dim}": 1, f"k{dim}": 1, f"s{dim}": 1, f"p{dim}": 0, f"d{dim}": 0})
            continue
        k, s, d = draw(st.integers(1, 7)), draw(st.integers(1, 4)), draw(st.integers(0, 3))
        ek = (k - 1) * (d + 1) + 1
        p = draw(st.integers(0, ek - 1))
        # the smallest input that still gives one output: C's division truncates i - ek + 2p
        # toward zero, so anything above -s works (benchdnn's rule)
        i = draw(st.integers(max(1, ek - 2 * p - s + 1), 300))
        o = _c_div(i - ek + 2 * p, s) + 1
        fields.update({f"i{dim}": i, f"o{dim}": o, f"k{dim}": k, f"s{dim}": s, f"p{dim}": p, f"d{dim}": d})
    name = draw(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12))
    return Descriptor(**fields, spatial_dims=spatial_dims, name=name.strip())


def _c_div(a: int, b: int) -> int:
    """C's integer division (toward zero), written out for the test."""
    return int(a / b)


@settings(max_examples=300, deadline=None)
@given(descriptors())
def test_random_descriptors_round_trip(desc):
    text = format_descriptor(desc)
    assert parse_descriptor(text) == desc


@settings(max_examples=200, deadline=None)
@given(descriptors(), st.data())
def test_leaving_out_defaults_gives_the_same_descriptor(desc, data):
    """Drop fields the default rules restore (outputs, unit strides, zero dilations, mb 2, g 1)."""
    parts = [f"g{desc.g}"] if desc.g > 1 or data.draw(st.booleans()) else []
    if desc.mb != 2 or data.draw(st.booleans()):
        parts.append(f"mb{desc.mb}")
    parts.append(f"ic{desc.ic}oc{desc.oc}")
    for dim in desc.used:
        parts.append(f"i{dim}{desc.field('i', dim)}k{dim}{desc.field('k', dim)}")
        if desc.field("s", dim) != 1 or data.draw(st.booleans()):
            parts.append(f"s{dim}{desc.field('s', dim)}")
        if desc.field("d", dim) != 0 or data.draw(st.booleans()):
            parts.append(f"d{dim}{desc.field('d', dim)}")
        parts.append(f"p{dim}{desc.field('p', dim)}")
        if data.draw(st.booleans()):
            parts.append(f"o{dim}{desc.field('o', dim)}")
    text = "_".join(parts) + (f'n"{desc.name}"' if desc.name else "")
    assert parse_descriptor(text) == desc


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="gmbicodhwkspn_0123456789\"x-", max_size=40))
def test_any_text_parses_or_raises_a_parse_error(text):
    try:
        desc = parse_descriptor(text)
    except ParseError:
        return
    assert parse_descriptor(format_descriptor(desc)) == desc
    for dim in desc.used:
        assert desc.field("o", dim) >= 1
        assert desc.field("p", dim) < desc.effective_kernel(dim)
        assert desc.right_padding(dim) < desc.effective_kernel(dim)


def test_field_list_is_benchdnns():
    assert FIELDS[:4] == ("g", "mb", "ic", "id") and len(FIELDS) == 22


def test_flops_count_only_taps_inside_the_input():
    # no padding: every one of the 3 outputs x 3 taps per dimension reads the input
    assert parse_descriptor("ic3ih5oc4kh3").flops() == 2 * 2 * 4 * 3 * (3 * 3) ** 2
    # padding 1 on 3 outputs of a 3-tap kernel: 2 of the 9 (output, tap) pairs read padding
    assert parse_descriptor("mb1ic2ih3oc5kh3ph1").flops() == 2 * 1 * 5 * 2 * 7 * 7
