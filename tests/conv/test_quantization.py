"""int8 scales and zero points: benchdnn's spelling, the problems they make, the reference."""

from __future__ import annotations

import numpy as np
import pytest

from xegen.conv import make_problem
from xegen.conv.check import random_inputs
from xegen.conv.quantization import Quantization, parse_quantization
from xegen.conv.reference import convert, expected_outputs, forward
from xegen.errors import Error, UnsupportedError


def test_parse_and_format():
    q = parse_quantization("src:common:0.5+wei:per_oc+dst:common:2", "dst:common:-3")
    assert q == Quantization(src_scale=0.5, wei_scale_per_oc=True, dst_scale=2.0, dst_zero_point=-3)
    assert str(q) == "--attr-scales=src:common:0.5+wei:per_oc+dst:common:2 --attr-zero-points=dst:common:-3"
    assert parse_quantization("wei:per_dim_0:", "dst:per_dim_1:") == Quantization(
        wei_scale_per_oc=True, dst_zero_point_per_oc=True
    )
    assert parse_quantization("SRC0:common:0.25:f32", "") == Quantization(src_scale=0.25)
    assert not parse_quantization("", "") and not parse_quantization("wei:common:1", "")
    q = parse_quantization("", "src:common:-128+dst:per_oc")
    assert q == Quantization(src_zero_point=-128, dst_zero_point_per_oc=True)
    assert str(q) == "--attr-zero-points=src:common:-128+dst:per_oc"
    assert parse_quantization("", "src0:common:255:s32").src_zero_point == 255
    assert not parse_quantization("", "src:common:0")  # a zero point of 0 is none


@pytest.mark.parametrize(
    "scales, zero_points, message",
    [
        ("foo:common:1", "", "unknown argument 'foo'"),
        ("src", "", "a policy must follow"),
        ("src:common", "", "needs a scale value"),
        ("src:common:x", "", "scale 'x' is not a number"),
        ("src:common:0", "", "not a non-zero f32"),
        ("wei:per_oc:2", "", "takes its values at run time"),
        ("src:per_foo:1", "", "unknown or unsupported policy"),
        ("src:common:1+src:common:2", "", "given twice"),
        ("src:common:1+", "", "empty entry"),
        ("", "dst:common:1.5", "zero point '1.5' is not an integer"),
        ("", "dst:common:9999999999", "beyond s32"),
        ("", "qq:common:1", "unknown argument 'qq'"),
        ("", "src:common:1+src:common:2", "given twice"),
        ("", "src:common", "needs a zero point value"),
    ],
)
def test_malformed(scales, zero_points, message):
    with pytest.raises(Error, match=message):
        parse_quantization(scales, zero_points)


@pytest.mark.parametrize(
    "scales, zero_points, message",
    [
        ("src:per_oc", "", "common only"),
        ("", "wei:common:1", "weight zero points are not supported"),
        ("", "src:per_dim_1", "src zero points are common only"),
        ("", "src:per_oc", "src zero points are common only"),
        ("src:common:1:bf16", "", "of type 'bf16' are not supported"),
    ],
)
def test_unsupported(scales, zero_points, message):
    with pytest.raises(UnsupportedError, match=message):
        parse_quantization(scales, zero_points)


def test_int8_only():
    with pytest.raises(UnsupportedError, match="int8 problems only"):
        make_problem("mb1ic8ih4oc8oh4kh1", dt="f32", scales="src:common:2")


def test_reference_follows_onednn_formula():
    """dst = (src_scale * wei_scale[oc] * conv + bias) post-ops / dst_scale + zp[oc], RNE, saturated."""
    p = make_problem(
        "mb1ic8ih4oc8oh4kh1",
        "FWD_B",
        "u8:s8:s8",
        "relu",
        scales="src:common:0.5+wei:per_oc+dst:common:4",
        zero_points="dst:per_oc",
    )
    assert p.inputs == ("src", "wei", "bias", "wei_scales", "dst_zero_points")
    t = random_inputs(p, 1)
    acc = forward(p.desc, t["src"], t["wei"]).astype(np.float64)
    channel = (1, -1, 1, 1)
    value = np.maximum(
        0.5 * t["wei_scales"].astype(np.float64).reshape(channel) * acc + t["bias"].astype(np.float64).reshape(channel),
        0,
    ) / 4 + t["dst_zero_points"].reshape(channel)
    expected = np.clip(np.rint(value), -128, 127)
    np.testing.assert_array_equal(expected_outputs(p, t)["dst"], expected)
    assert convert(np.array([2.5, -2.5, 300.0]), "s8").tolist() == [2, -2, 127]


@pytest.mark.parametrize(
    "dt, zero_point", [("u8:s8:u8", 256), ("u8:s8:f32", -1), ("s8:s8:s8", 128), ("s8:s8:s8", -129)]
)
def test_src_zero_point_outside_the_src_type(dt, zero_point):
    with pytest.raises(UnsupportedError, match=f"'src:common:{zero_point}': a source zero point must be"):
        make_problem("mb1ic8ih4oc8oh4kh3ph1", dt=dt, zero_points=f"src:common:{zero_point}")


def _direct_forward(src, wei, stride, pad, zero_point):
    """oneDNN's formula written out tap by tap for a 2-D ungrouped problem: the sum over the
    taps inside the input of (src - zero point) * wei; taps in the padding are skipped."""
    mb, ic, ih, iw = src.shape
    oc, _, kh, kw = wei.shape
    oh, ow = (ih + 2 * pad - kh) // stride + 1, (iw + 2 * pad - kw) // stride + 1
    out = np.zeros((mb, oc, oh, ow), dtype=np.int64)
    for n, o, y, x in np.ndindex(mb, oc, oh, ow):
        for c, i, j in np.ndindex(ic, kh, kw):
            sy, sx = y * stride + i - pad, x * stride + j - pad
            if 0 <= sy < ih and 0 <= sx < iw:
                out[n, o, y, x] += (int(src[n, c, sy, sx]) - zero_point) * int(wei[o, c, i, j])
    return out


@pytest.mark.parametrize(
    "dt, zero_point", [("u8:s8:s32", 255), ("u8:s8:s32", 1), ("s8:s8:s32", -128), ("s8:s8:s32", 127)]
)
def test_reference_subtracts_the_src_zero_point_inside_the_input_only(dt, zero_point):
    """The reference against the formula tap by tap, and against what the kernel computes
    instead: padding read as the zero point, then the zero point times the weights' sums
    subtracted."""
    p = make_problem("mb2ic3ih5oc4oh3kh3sh2ph1", "FWD_D", dt, zero_points=f"src:common:{zero_point}")
    t = random_inputs(p, 3)
    assert np.all(np.abs(t["src"].astype(np.int64) - zero_point) <= 3)  # drawn around the zero point
    expected = _direct_forward(t["src"], t["wei"], 2, 1, zero_point)
    np.testing.assert_array_equal(expected_outputs(p, t)["dst"], expected)
    padded = np.pad(t["src"].astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=zero_point)
    unpadded = make_problem("mb2ic3ih7oc4oh3kh3sh2", "FWD_D", dt)
    weights = t["wei"].astype(np.int64)
    weight_sums = weights.sum(axis=(1, 2, 3)).reshape(1, -1, 1, 1)
    kernel_trick = forward(unpadded.desc, padded, weights) - zero_point * weight_sums
    np.testing.assert_array_equal(kernel_trick, expected)
