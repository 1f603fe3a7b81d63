"""Post-op chains: benchdnn's grammar, the problems they make, and the numpy formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xegen.conv import make_problem
from xegen.conv.check import random_inputs, tolerances
from xegen.conv.postops import (
    ELTWISE_ALGORITHMS,
    Binary,
    Eltwise,
    Prelu,
    Sum,
    apply,
    eltwise,
    format_post_ops,
    parse_post_ops,
)
from xegen.conv.reference import expected_outputs, forward
from xegen.errors import Error, UnsupportedError

# the spellings issue 20 lists as refused (all but dw, which stays refused)
ISSUE_SPELLINGS = {
    "relu:0.1": (Eltwise("relu", float(np.float32(0.1))),),
    "clip:0:6": (Eltwise("clip", 0, 6),),
    "sum": (Sum(),),
    "sum:0.5": (Sum(0.5),),
    "sum:1:0:s8": (Sum(1, 0, "s8"),),
    "gelu_erf": (Eltwise("gelu_erf"),),
    "gelu_tanh": (Eltwise("gelu_tanh"),),
    "swish": (Eltwise("swish"),),
    "hardswish": (Eltwise("hardswish"),),
    "mish": (Eltwise("mish"),),
    "logistic": (Eltwise("logistic"),),
    "tanh": (Eltwise("tanh"),),
    "elu": (Eltwise("elu"),),
    "linear:2:1": (Eltwise("linear", 2, 1),),
    "abs": (Eltwise("abs"),),
    "sqrt": (Eltwise("sqrt"),),
    "square": (Eltwise("square"),),
    "exp": (Eltwise("exp"),),
    "log": (Eltwise("log"),),
    "round": (Eltwise("round"),),
    "binary_add:f32": (Binary("add", "f32"),),
    "add:f32:per_oc": (Binary("add", "f32", "per_oc"),),
    "mul:f32:per_tensor": (Binary("mul", "f32", "per_tensor"),),
    "max:f32": (Binary("max", "f32"),),
    "prelu": (Prelu(),),
    "prelu:per_oc": (Prelu("per_oc"),),
    "relu+sum": (Eltwise("relu"), Sum()),
    "sum+relu": (Sum(), Eltwise("relu")),
}


@pytest.mark.parametrize("text", sorted(ISSUE_SPELLINGS))
def test_issue_spellings_parse(text):
    assert parse_post_ops(text) == ISSUE_SPELLINGS[text]


@pytest.mark.parametrize("text", sorted(ISSUE_SPELLINGS))
def test_format_reads_back(text):
    ops = parse_post_ops(text)
    assert parse_post_ops(format_post_ops(ops)) == ops


@pytest.mark.parametrize("alg", sorted(ELTWISE_ALGORITHMS))
def test_every_eltwise_algorithm_and_its_long_spelling(alg):
    assert parse_post_ops(alg) == (Eltwise(alg),)
    assert parse_post_ops(f"eltwise_{alg.upper()}:1.5:-2:0.25") == (Eltwise(alg, 1.5, -2, 0.25),)


def test_aliases_and_dst_variants():
    assert parse_post_ops("srelu:2") == (Eltwise("soft_relu", 2),)
    assert parse_post_ops("relu_dst") == (Eltwise("relu"),)
    assert parse_post_ops("eltwise_tanh_use_dst_for_bwd") == (Eltwise("tanh"),)
    assert parse_post_ops("binary_ge:s8:3:nchw") == (Binary("ge", "s8", "3", "nchw"),)
    assert parse_post_ops("  'sum:2e-1+prelu:per_dim_01'  ") == (Sum(float(np.float32(0.2))), Prelu("per_dim_01"))


@pytest.mark.parametrize(
    "text, message",
    [
        ("foo", "unknown post-op 'foo'"),
        ("relu:x", "relu alpha 'x' is not a number"),
        ("relu:1:2:3:4", "unexpected '4'"),
        ("relu:", "empty relu alpha"),
        ("relu:1e39", "beyond f32"),
        ("sum:1:0.5", "sum zero point '0.5' is not an integer"),
        ("sum:1:0:f64", "unknown sum data type 'f64'"),
        ("sum:1:0:s8:x", "unexpected 'x'"),
        ("add", "needs the second tensor's data type"),
        ("add:f64", "unknown add data type 'f64'"),
        ("mul:f32:per_foo", "unknown mul policy 'per_foo'"),
        ("prelu:per_bar", "unknown prelu policy 'per_bar'"),
        ("relu+", "empty post-op"),
        ("relu,sum", "lists of post-op chains"),
    ],
)
def test_malformed_chains_name_the_token(text, message):
    with pytest.raises(Error, match="--attr-post-ops") as raised:
        parse_post_ops(text)
    assert message in str(raised.value)


@pytest.mark.parametrize("text", ["dw:k3s1p1", "select:f32"])
def test_unsupported_kinds(text):
    with pytest.raises(UnsupportedError, match=text.split(":")[0]):
        parse_post_ops(text)


def test_backward_refuses_post_ops():
    for direction in ("BWD_D", "BWD_W", "BWD_WB"):
        with pytest.raises(UnsupportedError, match=f"forward problems only .*{direction}"):
            make_problem("mb1ic8ih4oc8oh4kh3ph1", direction, post_ops="relu")


def test_problem_tensors_of_a_chain():
    p = make_problem("mb2ic8ih4oc16oh4kh3ph1", post_ops="sum+add:f16:per_oc+prelu:per_tensor+mul:s8:per_dim_0")
    assert p.inputs == ("src", "wei", "bias", "dst", "binary1", "prelu2", "binary3")
    assert p.dims_of("binary1") == (1, 16, 1, 1)
    assert p.dims_of("prelu2") == (2, 16, 4, 4)
    assert p.dims_of("binary3") == (2, 1, 1, 1)
    assert str(p.type_of("binary1")) == "f16" and str(p.type_of("prelu2")) == "f32"
    assert "--attr-post-ops=sum+add:f16:per_oc+prelu:per_tensor+mul:s8:per_dim_0" in str(p)


def test_sum_type_must_match_dst():
    make_problem("mb1ic8ih4oc8oh4kh3ph1", dt="u8:s8:u8", post_ops="sum:1:0:s8")
    with pytest.raises(UnsupportedError, match="reads dst"):
        make_problem("mb1ic8ih4oc8oh4kh3ph1", post_ops="sum:1:0:f16")
    with pytest.raises(UnsupportedError, match="zero point"):
        make_problem("mb1ic8ih4oc8oh4kh3ph1", post_ops="sum:1:3")


# -- formulas, checked against hand calculations from oneDNN's documented definitions ----------

X = np.array([-3.0, -0.5, 0.0, 0.5, 2.5, 7.0])


@pytest.mark.parametrize(
    "op, expected",
    [
        (Eltwise("relu"), [0, 0, 0, 0.5, 2.5, 7]),
        (Eltwise("relu", 0.1), [-0.3, -0.05, 0, 0.5, 2.5, 7]),
        (Eltwise("clip", 0, 6), [0, 0, 0, 0.5, 2.5, 6]),
        (Eltwise("clip", 1, -1), [1, -1, -1, -1, -1, -1]),  # beta < alpha: s > beta gives beta
        (Eltwise("clip_v2", -0.5, 2.5), [-0.5, -0.5, 0, 0.5, 2.5, 2.5]),
        (Eltwise("linear", 2, 1), [-5, 0, 1, 2, 6, 15]),
        (Eltwise("hardsigmoid", 0.25, 0.5), [0, 0.375, 0.5, 0.625, 1, 1]),
        (Eltwise("hardswish", 0.25, 0.5), [0, -0.1875, 0, 0.3125, 2.5, 7]),
        (Eltwise("abs"), [3, 0.5, 0, 0.5, 2.5, 7]),
        (Eltwise("square"), [9, 0.25, 0, 0.25, 6.25, 49]),
        (Eltwise("round"), [-3, -0, 0, 0, 2, 7]),  # ties to even
        (Eltwise("relu", 0, 0, 2), [0, 0, 0, 1, 5, 14]),
        (Eltwise("elu", 2), [2 * (math.exp(-3) - 1), 2 * (math.exp(-0.5) - 1), 0, 0.5, 2.5, 7]),
        (
            Eltwise("logistic"),
            [
                1 / (1 + math.exp(3)),
                1 / (1 + math.exp(0.5)),
                0.5,
                1 / (1 + math.exp(-0.5)),
                1 / (1 + math.exp(-2.5)),
                1 / (1 + math.exp(-7)),
            ],
        ),
        (Eltwise("gelu_erf"), [0.5 * x * (1 + math.erf(x / math.sqrt(2))) for x in X]),
        (Eltwise("soft_relu", 2), [math.log1p(math.exp(2 * x)) / 2 for x in X]),
        (Eltwise("swish", 1), [x / (1 + math.exp(-x)) for x in X]),
        (Eltwise("mish"), [x * math.tanh(math.log1p(math.exp(x))) for x in X]),
        (Eltwise("pow", 2, 2), [18, 0.5, 0, 0.5, 12.5, 98]),
    ],
)
def test_eltwise_formulas(op, expected):
    np.testing.assert_allclose(eltwise(op, X), expected, rtol=1e-12, atol=1e-15)


def test_sum_binary_prelu_formulas():
    old = np.array([10, 20, 30, 40, 50, 60], dtype=np.int8)
    np.testing.assert_allclose(apply(Sum(0.5, 4), X, old), 0.5 * (old - 4.0) + X)
    y = np.array([-3.0, 1.0, 0.0, 0.5, -1.0, 8.0])
    np.testing.assert_array_equal(apply(Binary("ge", "f32"), X, y), [1, 0, 1, 1, 1, 0])
    np.testing.assert_array_equal(apply(Binary("ne", "f32"), X, y), [0, 1, 0, 0, 1, 1])
    np.testing.assert_array_equal(apply(Binary("sub", "f32"), X, y), X - y)
    np.testing.assert_array_equal(apply(Prelu(), X, np.array(0.25)), [-0.75, -0.125, 0, 0.5, 2.5, 7])


def test_reference_applies_the_chain_in_order():
    """sum then relu differs from relu then sum where the old dst is negative."""
    desc = "mb1ic8ih3oc8oh3kh1"
    a = make_problem(desc, "FWD_D", post_ops="sum+relu")
    b = make_problem(desc, "FWD_D", post_ops="relu+sum")
    tensors = random_inputs(a, 3)
    conv = forward(a.desc, tensors["src"], tensors["wei"])
    np.testing.assert_allclose(expected_outputs(a, tensors)["dst"], np.maximum(conv + tensors["dst"], 0), rtol=1e-6)
    np.testing.assert_allclose(expected_outputs(b, tensors)["dst"], np.maximum(conv, 0) + tensors["dst"], rtol=1e-6)


def test_tolerance_of_round_allows_a_flip_only_near_ties():
    p = make_problem("mb1ic8ih3oc8oh3kh1", "FWD_D", post_ops="round")
    tensors = random_inputs(p, 0)
    tolerance = tolerances(p, tensors)["dst"]
    conv = forward(p.desc, tensors["src"], tensors["wei"])
    distance = np.abs(np.abs(conv - np.floor(conv)) - 0.5)
    assert np.all(tolerance[distance > 1e-3] < 1e-3)  # far from a tie: only rounding noise
