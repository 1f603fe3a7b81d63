"""The row plans (plan=depthwise, plan=first): which problems the heuristic gives them, what they
refuse and why, and that their loops multiply exactly the problem's products (no zero lanes)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from xegen import hw
from xegen.build.strategies import build_plan
from xegen.conv import make_problem
from xegen.errors import ConfigError
from xegen.ir import Call, For, Mad, walk
from xegen.plan import formulate
from xegen.plan.depthwise import int8_sums_are_exact
from xegen.plan.heuristic import choose_config
from xegen.plan.strategies import plan_for


def config_of(desc, dt="f32", platform="xehpg", overrides=None, **tags):
    gemm = formulate(make_problem(desc, "FWD_B", dt, **tags))
    return choose_config(gemm, hw.platform(platform), overrides or {})


@pytest.mark.parametrize(
    "desc, tags, plan",
    [
        ("g32mb1ic32ih16oc32oh16kh3ph1", {}, "depthwise"),  # depthwise
        ("g32mb1ic128ih8oc128oh8kh3ph1", {}, "depthwise"),  # resnext: 4 channels per group
        ("g8mb1ic32ih8oc32oh8kh3ph1", {"stag": "nChw16c", "dtag": "nChw16c"}, "depthwise"),
        ("g4mb1ic64ih8oc64oh8kh3ph1", {}, "gemm"),  # 16 channels per group fill the GEMM plan's lanes
        ("mb1ic3ih32oc32oh16kh3sh2ph1", {}, "first"),
        ("mb1ic3ih32oc32oh16kh3sh2ph1", {"stag": "nchw"}, "first"),
        ("mb1ic1iw64oc16ow64kw5pw2", {}, "first"),  # 1-D
        ("mb1ic3id4ih8iw8oc16od4oh8ow8kd3kh3kw3pd1ph1pw1", {}, "first"),  # 3-D
        ("mb1ic16ih8oc32oh8kh3ph1", {}, "gemm"),
    ],
)
def test_the_heuristic_gives_each_class_its_plan(desc, tags, plan):
    assert config_of(desc, **tags).plan == plan


@pytest.mark.parametrize(
    "dt, platform, plan",
    [
        ("f32", "xehpg", "depthwise"),
        ("bf16", "xehpg", "gemm"),
        ("u8:s8:f32", "xehpg", "gemm"),
        ("bf16", "xehpc", "gemm"),
    ],
)
def test_groups_of_eight_channels_go_to_the_gemm_plan_where_it_has_a_faster_multiply(dt, platform, plan):
    assert config_of("g32mb1ic256ih8oc256oh8kh3ph1", dt, platform).plan == plan
    assert config_of("g32mb1ic256ih8oc256oh8kh3ph1", dt, platform, {"plan": "depthwise"}).plan == "depthwise"


@pytest.mark.parametrize(
    "desc, dt, overrides, message",
    [
        ("g32mb1ic32ih8oc32oh8kh3ph1", "f16", {"plan": "depthwise", "fma": "dpas"}, "multiplies with mad"),
        ("mb1ic16ih8oc32oh8kh3ph1", "f32", {"plan": "depthwise"}, "grouped convolutions"),
        ("g2mb1ic64ih8oc64oh8kh3ph1", "f32", {"plan": "depthwise"}, "at most 8 channels"),
        ("mb1ic64ih8oc32oh8kh3ph1", "f32", {"plan": "first"}, "at most 4 input channels"),
        ("mb1ic3ih8oc32oh8kh3ph1", "f32", {"plan": "first", "k_block": 4}, "leave k_block to the plan"),
        ("g32mb1ic32ih8oc32oh8kh3ph1", "f32", {"plan": "depthwise", "m_tile": 16}, "exceeds the 8 outputs of a row"),
        ("g32mb1ic96ih8oc96oh8kh3ph1", "f32", {"plan": "depthwise", "n_tile": 20}, "whole groups"),
    ],
)
def test_what_a_row_plan_refuses_it_says(desc, dt, overrides, message):
    with pytest.raises(ConfigError, match=message):
        config_of(desc, dt, overrides=overrides)


def test_int8_sums_stay_exact_in_f32():
    """s8 x s8 products reach 128 * 128 = 2^14 in magnitude: 1023 of them sum below 2^24 (exact
    in f32), 1024 may not (hand calculation: 2^24 / 2^14 = 1024)."""
    exact = make_problem("g16mb1ic16ih40iw40oc16oh10ow8kh31kw33", "FWD_B", "s8:s8:f32")
    assert exact.reduction_size == 31 * 33 == 1023 and int8_sums_are_exact(exact)
    rounding = make_problem("g16mb1ic16ih40iw40oc16oh9ow9kh32kw32", "FWD_B", "s8:s8:f32")
    assert rounding.reduction_size == 1024 and not int8_sums_are_exact(rounding)
    assert config_of("g16mb1ic16ih40iw40oc16oh9ow9kh32kw32", "s8:s8:f32").plan == "gemm"


@pytest.mark.parametrize(
    "desc, overrides",
    [
        # 2 blocks of 16 channels x 8 rows x 1 block of 8 outputs: every thread distinct
        ("g32mb1ic32ih8oc32oh8kh3ph1", {"plan": "depthwise", "m_tile": 8, "n_tile": 16}),
        # 4 channels per group, 16 lanes = 4 groups: the mads read replicated channels
        ("g8mb1ic32ih8oc32oh8kh3ph1", {"plan": "depthwise", "m_tile": 8, "n_tile": 16}),
        ("mb1ic3ih8oc16oh8kh3ph1", {"plan": "first", "fma": "mad", "m_tile": 8, "n_tile": 16}),
    ],
)
def test_row_plans_multiply_exactly_the_problems_products(desc, overrides):
    """Sum over the loop's mads of lanes x trip count x threads = the problem's multiply-adds
    (oc x oh x ow x kh x kw x ICg, counted by hand here), so no lane multiplies padding or zeros."""
    problem = make_problem(desc, "FWD_B", "f32")
    gemm = formulate(problem)
    platform = hw.platform("xehpg")
    plan = plan_for(gemm, choose_config(gemm, platform, overrides), platform)
    body = build_plan(plan)
    loop = next(node for node in walk(body) if isinstance(node, For))
    mads = [node.func for node in walk(loop.body) if isinstance(node, Call) and isinstance(node.func, Mad)]
    lanes = sum(mad.exec_size for mad in mads)
    threads = plan.grid[0] * plan.grid[1] * plan.grid[2] * plan.config.tg_m * plan.config.tg_n
    d = problem.desc
    assert threads * plan.iterations * lanes == d.oc * d.oh * d.ow * d.kh * d.kw * d.icg


@pytest.mark.parametrize(
    "args, message",
    [
        (["--config", "plan=rows"], "plan=rows: expected one of gemm, depthwise, first, swapped"),
        (["--config", "plan=depthwise"], "plan=depthwise: it is for grouped convolutions"),
    ],
)
def test_cli_says_why_a_plan_does_not_apply(args, message):
    result = subprocess.run(
        [sys.executable, "-m", "xegen", "conv", "mb1ic16ih8oc32oh8kh3ph1", "--print-config", *args],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("xegen: error: ") and message in result.stderr
    assert "Traceback" not in result.stderr
