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
    assert parse_quantization("wei:per_dim_0:", "dst:per_dim_1:") == Quantization(wei_scale_per_oc=True,
                                                                                  dst_zero_point_per_oc=True)
    assert parse_quantization("SRC0:common:0.25:f32", "") == Quantization(src_scale=0.25)
    assert not parse_quantization("", "") and not parse_quantization("wei:common:1", "")


@pytest.mark.parametrize("scales, zero_points, message", [
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
])
def test_malformed(scales, zero_points, message):
    with pytest.raises(Error, match=message):
        parse_quantization(scales, zero_points)


@pytest.mark.parametrize("scales, zero_points, message", [
    ("src:per_oc", "", "common only"),
    ("", "src:common:1", "src zero points are not supported"),
    ("src:common:1:bf16", "", "of type 'bf16' are not supported"),
])
def test_unsupported(scales, zero_points, message):
    with pytest.raises(UnsupportedError, match=message):
        parse_quantization(scales, zero_points)


def test_int8_only():
    with pytest.raises(UnsupportedError, match="int8 problems only"):
        make_problem("mb1ic8ih4oc8oh4kh1", dt="f32", scales="src:common:2")


def test_reference_follows_onednn_formula():
    """dst = (src_scale * wei_scale[oc] * conv + bias) post-ops / dst_scale + zp[oc], RNE, saturated."""
    p = make_problem("mb1ic8ih4oc8oh4kh1", "FWD_B", "u8:s8:s8", "relu", scales="src:common:0.5+wei:per_oc+dst:common:4",
                     zero_points="dst:per_oc")
    assert p.inputs == ("src", "wei", "bias", "wei_scales", "dst_zero_points")
    t = random_inputs(p, 1)
    acc = forward(p.desc, t["src"], t["wei"]).astype(np.float64)
    channel = (1, -1, 1, 1)
    value = np.maximum(0.5 * t["wei_scales"].astype(np.float64).reshape(channel) * acc
                       + t["bias"].astype(np.float64).reshape(channel), 0) / 4 + t["dst_zero_points"].reshape(channel)
    expected = np.clip(np.rint(value), -128, 127)
    np.testing.assert_array_equal(expected_outputs(p, t)["dst"], expected)
    assert convert(np.array([2.5, -2.5, 300.0]), "s8").tolist() == [2, -2, 127]
