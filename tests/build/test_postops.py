"""Post-op chains in the kernel IR, run in the interpreter against numpy (`check_ir`): every
algorithm the kernels compute, every binary algorithm under every broadcast policy, at tiny sizes."""

from __future__ import annotations

import pytest

from xegen.build import check_ir
from xegen.conv import make_problem
from xegen.conv.postops import BINARY_ALGORITHMS, POLICIES
from xegen.pipeline import build_lead

DESC = "mb2ic8ih4oc16oh4kh3ph1"
# every algorithm, with parameters that exercise each branch
ELTWISE = [
    "relu",
    "relu:0.1",
    "clip:-0.5:0.5",
    "clip_v2:-0.5:0.5",
    "hardsigmoid:0.2:0.5",
    "hardswish:0.3:0.5",
    "linear:0.5:-0.25",
    "abs",
    "square",
    "round",
    "relu:0:0:2.5",
    "exp",
    "log",
    "sqrt",
    "logistic",
    "tanh",
    "elu:0.5",
    "swish:1.5",
    "soft_relu:2",
    "soft_relu:-1",
    "mish",
    "gelu_tanh",
    "gelu_erf",
    "pow:2:3",
    "pow:1.5:0.5",
    "pow:1:-2",
    "pow:0.5:2.5",
    "pow:1:7",
    "pow:3:0",
]


def check(problem, hw="xehpg"):
    results = check_ir(build_lead(problem, hw, {}))
    for comparison in results:
        assert comparison.ok, f"{problem}: {comparison}"


@pytest.mark.parametrize("op", ELTWISE)
def test_eltwise(op):
    check(make_problem(DESC, "FWD_B", "f32", op))


@pytest.mark.parametrize("alg", BINARY_ALGORITHMS)
@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_binary(alg, policy):
    check(make_problem(DESC, "FWD_D", "f16", f"{alg}:f32:{policy}"))


@pytest.mark.parametrize("policy", ["common", "per_oc", "per_tensor", "per_dim_01", "per_dim_3"])
def test_prelu_and_binary_types(policy):
    check(make_problem(DESC, "FWD_B", "bf16", f"prelu:{policy}+add:s8:{policy}+mul:bf16:{policy}"))


def test_binary_mask_as_digits():
    check(make_problem(DESC, "FWD_D", "f32", "add:f32:5+max:f32:12"))


@pytest.mark.parametrize(
    "dt, chain",
    [
        ("f32", "sum"),
        ("f32", "sum:0.5+relu"),
        ("u8:s8:u8", "sum:1:2:u8"),
        ("s8:s8:s8", "sum:0.5:-1:u8+relu"),
        ("u8:s8:f32", "relu:0.5+sum:2"),
    ],
)
def test_sum(dt, chain):
    check(make_problem(DESC, "FWD_B", dt, chain))


def test_sum_into_a_padded_blocked_dst():
    """dst (24 channels in blocks of 16) holds its old values, padding zero: the launcher does not
    zero it, and the kernel keeps the padding zero."""
    problem = make_problem("mb1ic8ih4oc24oh4kh3ph1", "FWD_B", "f32", "sum:0.5+relu", dtag="aBcd16b")
    kernel = build_lead(problem, "xehpg", {})
    assert kernel.zero_outputs == ()
    results = check_ir(kernel)
    assert [c.name for c in results] == ["dst", "dst padding"] and all(c.ok for c in results), results


def test_blocked_layout_of_a_second_tensor():
    check(make_problem(DESC, "FWD_D", "f32", "add:f32:per_tensor:nchw+sub:f32:per_tensor:aBcd8b"), "xelp")


@pytest.mark.parametrize("dt, rounds", [("u8:s8:u8", True), ("s8:s8:s32", True), ("f32", False)])
def test_rounding_epilogue_reads_its_value_once(dt, rounds):
    """Rounding to an integer reads the biased value three times: it is bound to a let once, not
    rebuilt (and lowered) at each read; the plain float epilogue keeps its expression tree."""
    kernel = build_lead(make_problem(DESC, "FWD_B", dt), "xehpg", {})
    assert ("let c_store_0_v0" in str(kernel.body)) == rounds
    assert all(c.ok for c in check_ir(kernel))
