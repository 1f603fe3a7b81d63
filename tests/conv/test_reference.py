"""The numpy reference convolution, checked against plain loops and adjoint identities."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xegen.conv import make_problem, parse_descriptor
from xegen.conv.reference import backward_data, backward_weights, bf16_round, convert, expected_outputs, forward

RNG = np.random.default_rng(11)


def loops_forward(d, src, wei):
    """dst by the definition, one output element at a time (Python integers/floats)."""
    dims = d.used
    wei = wei.reshape(d.g, d.ocg, d.icg, *wei.shape[-d.spatial_dims :])
    out = np.zeros(d.dst_dims())
    for n, g, oc in itertools.product(range(d.mb), range(d.g), range(d.ocg)):
        for o in itertools.product(*(range(d.field("o", x)) for x in dims)):
            total = 0.0
            for ic in range(d.icg):
                for k in itertools.product(*(range(d.field("k", x)) for x in dims)):
                    i = [
                        oo * d.field("s", x) - d.field("p", x) + kk * (d.field("d", x) + 1)
                        for oo, kk, x in zip(o, k, dims, strict=True)
                    ]
                    if all(0 <= ii < d.field("i", x) for ii, x in zip(i, dims, strict=True)):
                        total += src[(n, g * d.icg + ic, *i)] * wei[(g, oc, ic, *k)]
            out[(n, g * d.ocg + oc, *o)] = total
    return out


SMALL = [
    "mb2ic3ih5oc4kh3ph1",
    "mb1ic2ih2oc3kh3sh2",  # oh = (2-3)/2 + 1 = 1 with C's division: right padding 1
    "g2mb1ic4ih6iw5oc6kh3kw2sh2sw1ph1pw0",
    "mb1ic2ih7oc3kh3sh2dh1ph2",
    "g3mb1ic3iw8oc3kw3sw3pw2",
    "mb1ic2id4ih3iw3oc2kd2kh2kw3pd1pw1",
    "mb1ic2ih56oc2oh28kh1sh2ph0",  # negative right padding
]


@pytest.mark.parametrize("text", SMALL)
def test_forward_matches_the_definition(text):
    d = parse_descriptor(text)
    src = RNG.standard_normal(d.src_dims())
    wei = RNG.standard_normal(d.wei_dims())
    np.testing.assert_allclose(forward(d, src, wei), loops_forward(d, src, wei), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("text", SMALL)
def test_backward_passes_are_adjoints_of_forward(text):
    """<conv(x, w), y> = <x, bwd_d(y, w)> = <w, bwd_w(x, y)>: both backward passes are the
    transposes of the forward map, in its two arguments."""
    d = parse_descriptor(text)
    x = RNG.standard_normal(d.src_dims())
    w = RNG.standard_normal(d.wei_dims())
    y = RNG.standard_normal(d.dst_dims())
    value = np.vdot(forward(d, x, w), y)
    np.testing.assert_allclose(np.vdot(x, backward_data(d, y, w)), value, rtol=1e-10)
    diff_wei, diff_bias = backward_weights(d, x, y)
    np.testing.assert_allclose(np.vdot(w, diff_wei), value, rtol=1e-10)
    np.testing.assert_allclose(diff_bias, y.sum(axis=tuple(a for a in range(y.ndim) if a != 1)), rtol=1e-12)


def test_integer_forward_is_exact():
    d = parse_descriptor("mb1ic5ih4oc3kh3ph1")
    src = RNG.integers(0, 255, d.src_dims()).astype(np.uint8)
    wei = RNG.integers(-128, 127, d.wei_dims()).astype(np.int8)
    got = forward(d, src, wei)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, loops_forward(d, src.astype(np.int64), wei.astype(np.int64)))


def test_int8_epilogue_rounds_half_to_even_and_saturates():
    p = make_problem("mb1ic1ih1oc4kh1", "FWD_B", "u8:s8:s8")
    src = np.ones((1, 1, 1, 1), np.uint8)
    wei = np.array([100, 2, 3, 1], np.int8).reshape(4, 1, 1, 1)
    bias = np.array([100.0, 0.5, -0.5, -200.0], np.float32)
    out = expected_outputs(p, {"src": src, "wei": wei, "bias": bias})["dst"].reshape(-1)
    # 200 saturates to 127; 2.5 -> 2 and 2.5 -> 2 (ties to even); -199 saturates to -128
    np.testing.assert_array_equal(out, [127, 2, 2, -128])


def test_relu_and_f16_output():
    p = make_problem("mb1ic1ih1oc2kh1", "FWD_D", "f16", "relu")
    out = expected_outputs(
        p, {"src": np.ones((1, 1, 1, 1), np.float16), "wei": np.array([-1.0, 1 / 3], np.float16).reshape(2, 1, 1, 1)}
    )["dst"]
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out.reshape(-1), [0.0, np.float16(1 / 3)])


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=32).filter(lambda v: abs(v) < 1e38))
def test_bf16_rounding_is_nearest_even(value):
    got = float(bf16_round(np.float32(value)))
    # neighbours on the bf16 grid around the value: truncate, then one ulp up
    bits = int(np.float32(value).view(np.uint32)) & 0xFFFF0000
    low = float(np.uint32(bits).view(np.float32))
    high = float(np.uint32(bits + 0x10000).view(np.float32))
    candidates = sorted([low, high], key=lambda c: (abs(c - value), int(np.float32(c).view(np.uint32)) >> 16 & 1))
    assert got == candidates[0]


def test_convert_saturates_integers():
    np.testing.assert_array_equal(convert(np.array([-1e10, 1e10, 3.5, -2.5]), "s32"), [-2147483648, 2147483647, 4, -2])
    np.testing.assert_array_equal(convert(np.array([-3.0, 300.0, 0.5, 1.5]), "u8"), [0, 255, 0, 2])


def test_convert_saturates_float32_values_at_the_s32_bounds():
    # float32 rounds 2^31-1 up to 2^31, so a clip in float32 would let 3e9 through to wrap around
    values = np.array([3e9, -3e9, 2147483520.0, 2.5], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "invalid value encountered in cast"
        got = convert(values, "s32")
    np.testing.assert_array_equal(got, [2147483647, -2147483648, 2147483520, 2])


def test_int8_bias_saturates_an_s32_output():
    p = make_problem("mb1ic4ih1oc4kh1", "FWD_B", "u8:s8:s32")
    out = expected_outputs(
        p,
        {
            "src": np.ones((1, 4, 1, 1), np.uint8),
            "wei": np.zeros((4, 4, 1, 1), np.int8),
            "bias": np.array([3e9, -3e9, 2147483520.0, 2.5], np.float32),
        },
    )["dst"]
    np.testing.assert_array_equal(out.reshape(-1), [2147483647, -2147483648, 2147483520, 2])


def test_padding_of_a_billion_elements_costs_nothing():
    """Taps 2^30 apart, padding and stride 2^30-1: output 0 reads padding (-P) and input 1
    (2^30-P); output 1 reads input 0 (S-P) and beyond the input (S+2^30-P = 2^30)."""
    big = 2**30 - 1
    d = parse_descriptor(f"mb1ic1iw3oc1kw2dw{big}pw{big}sw{big}")
    assert d.ow == 2
    x = np.array([1.0, 2.0, 4.0]).reshape(1, 1, 3)
    w = np.array([10.0, 100.0]).reshape(1, 1, 2)
    dy = np.array([1.0, 3.0]).reshape(1, 1, 2)
    np.testing.assert_array_equal(forward(d, x, w).reshape(-1), [2.0 * 100, 1.0 * 10])
    np.testing.assert_array_equal(backward_data(d, dy, w).reshape(-1), [3.0 * 10, 1.0 * 100, 0.0])
    diff_wei, _ = backward_weights(d, x, dy)
    np.testing.assert_array_equal(diff_wei.reshape(-1), [1.0 * 3, 2.0 * 1])
