"""Issue 20's acceptance: post-op chains compiled to native kernels and run in the simulator over
the whole grid against numpy (`verify`), on XeLP, XeHPG and XeHPC.

At scaled sizes (the default run): every eltwise algorithm, in chains of three, with f32, bf16
and f16 destinations; every binary algorithm and broadcast policy; sum with scale, zero point and
data type; prelu; int8 chains.  The platform rotates over the cases, so each platform sees each
kind of post-op; int8 with scales and zero points (source ones at the extremes of the type, on a
padded and a strided layer) on every platform.  At real sizes (`-m slow`,
but for one representative layer): mobilenet_v2 layers with relu6 (clip:0:6), a resnet_50
block's last conv with its residual sum + relu, yolov2's conv1 with leaky relu (relu:0.1), and a
resnet_50 3x3 layer in u8 with a source zero point.
"""

from __future__ import annotations

import pytest

from xegen.conv import make_problem
from xegen.pipeline import compile_problem
from xegen.verify import verify

from .conv.shapes import RESNET, scaled

PLATFORMS = ("xelp", "xehpg", "xehpc")
SMALL = "mb1ic16ih4oc32oh4kh3ph1"

# the 21 eltwise algorithms, three per chain, each chain keeping the next one's domain
ELTWISE_CHAINS = [
    "linear:0.5:0.25+hardswish:0.3:0.5+clip:-0.5:1.5",
    "abs+sqrt+log",
    "square+round+relu:0.1",
    "tanh+exp+logistic",
    "elu:0.5+gelu_erf+gelu_tanh",
    "swish:1.5+mish+soft_relu:2",
    "clip_v2:-2:2+hardsigmoid:0.2:0.5+pow:2:1.5",
]
# the 12 binary algorithms and the broadcast policies, with second tensors of several types
BINARY_CHAINS = [
    "add:f32:per_oc+sub:f16:per_tensor+mul:bf16:common",
    "div:f32:per_oc+min:f32:per_dim_0+max:s8:per_dim_01",
    "ge:f32:per_tensor+add:f32:per_dim_2+gt:f32:per_dim_3",
    "lt:f32:per_dim_1+eq:f32:common+ne:u8:per_oc",
]


def check(problem, hw: str, seed: int = 0, overrides=None, choose=True):
    """Compile and verify; `choose=False` where the post-ops, not the configuration, are tested:
    the heuristic's lead only, not the kernels the model would choose among."""
    compilation = compile_problem(problem, hw, overrides, choose=choose)
    result = verify(compilation, seed)
    assert not result.run.hazards, f"{len(result.run.hazards)} SWSB hazards, the first: {result.run.hazards[0]}"
    for comparison in result.comparisons:
        assert comparison.ok, f"{problem} with {compilation.config} on {hw}: {comparison}"
    return compilation


@pytest.mark.parametrize("dt", ["f32", "bf16", "f16"])
@pytest.mark.parametrize("index", range(len(ELTWISE_CHAINS)))
def test_eltwise_chains(index, dt):
    hw = PLATFORMS[(index + len(dt)) % 3]
    check(make_problem(SMALL, "FWD_B", dt, ELTWISE_CHAINS[index]), hw, choose=False)


@pytest.mark.parametrize("index", range(len(BINARY_CHAINS)))
def test_binary_chains(index):
    dt = ("f32", "bf16", "f16", "f32")[index]
    check(make_problem(SMALL, "FWD_D", dt, BINARY_CHAINS[index]), PLATFORMS[index % 3], choose=False)


@pytest.mark.parametrize(
    "hw, dt, chain",
    [
        ("xelp", "f32", "sum:0.5+relu"),
        ("xehpg", "bf16", "prelu:per_oc+sum:2"),
        ("xehpc", "f16", "sum+prelu+linear:0.5:1"),
        ("xehpg", "u8:s8:u8", "sum:0.5:3:s8+relu"),
        ("xehpc", "s8:s8:s8", "relu:0.25+sum:1:-2"),
        ("xelp", "u8:s8:f32", "prelu:per_tensor+sum:0.5+clip:0:6"),
        ("xelp", "s8:s8:u8", "sum:1:1:s8+tanh+linear:100"),
    ],
)
def test_sum_prelu_and_int8(hw, dt, chain):
    check(make_problem(SMALL, "FWD_B", dt, chain), hw, choose=False)


@pytest.mark.parametrize("hw", PLATFORMS)
@pytest.mark.parametrize(
    "dt, chain, scales, zero_points",
    [
        ("u8:s8:u8", "relu", "src:common:0.5+wei:per_oc+dst:common:2", "dst:common:7"),
        ("s8:s8:s8", "sum:0.5:1", "wei:common:0.25", "dst:per_oc"),
        ("u8:s8:f32", "", "src:common:0.25+wei:per_oc", ""),
    ],
)
def test_int8_scales_and_zero_points(hw, dt, chain, scales, zero_points):
    check(make_problem(SMALL, "FWD_B", dt, chain, scales=scales, zero_points=zero_points), hw, choose=False)


STRIDED = "mb1ic16ih8oc32oh4kh3sh2ph1"
# source zero points at the extremes of src's type, with scales and dst zero points: the default
# run takes one case per platform, `-m slow` every data type on every platform
SRC_ZERO_POINTS = {
    "u8:s8:u8": (SMALL, "src:common:0.5+wei:per_oc+dst:common:2", "src:common:255+dst:common:7"),
    "s8:s8:s8": (STRIDED, "wei:common:0.25", "src:common:-128+dst:per_oc"),
    "u8:s8:f32": (STRIDED, "src:common:0.25+wei:per_oc", "src:common:0"),
    "s8:s8:u8": (SMALL, "dst:common:4", "src:common:127+dst:common:100"),
}


@pytest.mark.parametrize("hw, dt", [("xelp", "u8:s8:u8"), ("xehpg", "s8:s8:s8"), ("xehpc", "s8:s8:u8")])
def test_src_zero_points(hw, dt):
    desc, scales, zero_points = SRC_ZERO_POINTS[dt]
    check(
        make_problem(desc, "FWD_B", dt, "relu" if dt.endswith("u8") else "", scales=scales, zero_points=zero_points),
        hw,
        choose=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize("hw", PLATFORMS)
@pytest.mark.parametrize("dt", sorted(SRC_ZERO_POINTS))
@pytest.mark.parametrize("layer", [SMALL, STRIDED])
def test_src_zero_points_everywhere(layer, dt, hw):
    _, scales, zero_points = SRC_ZERO_POINTS[dt]
    check(make_problem(layer, "FWD_B", dt, scales=scales, zero_points=zero_points), hw)


# -- real sizes ------------------------------------------------------------------------------

RESNET_RESIDUAL = 8  # res3a_branch2c: 1x1, 128 -> 512 at 28x28, whose output the block adds to its shortcut
MOBILENET_V2 = {  # the model's 1x1 expansion and projection convolutions of its second block
    "expand": 'mb1ic16ih112oc96oh112kh1n"mobilenet_v2:block2_expand"',
    "project": 'mb1ic96ih56oc24oh56kh1n"mobilenet_v2:block2_project"',
}
YOLOV2_CONV1 = 'mb1ic3ih610oc32oh608kh3n"yolov2:conv1"'  # benchdnn's shapes_yolov2, minibatch 1


def test_resnet_residual_scaled():
    """The residual block's last conv, scaled, on every platform."""
    for hw in PLATFORMS:
        check(make_problem(scaled(RESNET[RESNET_RESIDUAL]), "FWD_B", "f32", "sum+relu"), hw)


def test_mobilenet_v2_relu6_real_size():
    """The representative real-size run: mobilenet_v2's projection conv with relu6."""
    check(make_problem(MOBILENET_V2["project"], "FWD_B", "f16", "clip:0:6"), "xehpg")


@pytest.mark.slow
@pytest.mark.parametrize("hw", PLATFORMS)
def test_resnet_residual_real_size(hw):
    check(make_problem(RESNET[RESNET_RESIDUAL], "FWD_B", "f32", "sum+relu", mb=1), hw)


@pytest.mark.slow
@pytest.mark.parametrize("hw", PLATFORMS)
@pytest.mark.parametrize("layer", sorted(MOBILENET_V2))
def test_mobilenet_v2_real_size(layer, hw):
    check(make_problem(MOBILENET_V2[layer], "FWD_B", "f16" if hw != "xelp" else "f32", "clip:0:6"), hw)


@pytest.mark.slow
@pytest.mark.parametrize("hw", PLATFORMS)
def test_resnet_3x3_with_src_zero_point_real_size(hw):
    """res2a_branch2b (3x3, padding 1) in u8 with a source zero point, scales and a dst zero point."""
    check(
        make_problem(
            RESNET[3],
            "FWD_B",
            "u8:s8:u8",
            "relu",
            scales="src:common:0.5+wei:per_oc",
            zero_points="src:common:128+dst:common:5",
            mb=1,
        ),
        hw,
    )


@pytest.mark.slow
@pytest.mark.parametrize("hw", PLATFORMS)
def test_yolov2_conv1_leaky_relu_real_size(hw):
    check(make_problem(YOLOV2_CONV1, "FWD_B", "f32", "relu:0.1"), hw)


@pytest.mark.parametrize(
    "desc, chain, overrides, plan",
    [
        ("mb1g32ic32ih6oc32oh6kh3ph1", "clip:0:6+swish", None, "depthwise"),  # eltwise chains: the row plan's epilogue
        ("mb1g32ic32ih6oc32oh6kh3ph1", "sum:0.5+relu", None, "gemm"),  # a post-op reading dst: the GEMM plan's
        # (plan=first asked for: the model decides between it and the GEMM plan, and at this size takes the GEMM's)
        ("mb1ic3ih12oc16oh6kh3sh2ph1", "relu:0.1", {"plan": "first"}, "first"),
        ("mb1ic3ih12oc16oh6kh3sh2ph1", "add:f32:per_oc", None, "gemm"),
    ],
)
def test_row_plans_take_eltwise_chains_and_leave_tensors_to_the_gemm_plan(desc, chain, overrides, plan):
    compilation = check(make_problem(desc, post_ops=chain), "xehpg", overrides=overrides)
    assert compilation.config.plan == plan
