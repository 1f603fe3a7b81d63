"""plan=first for the backward weights of first layers (issue 18): which problems the heuristic
gives it, that its kernels multiply exactly the problem's products, what it refuses and why."""

from __future__ import annotations

import pytest

from xegen import hw
from xegen.build.strategies import build_plan
from xegen.conv import make_problem
from xegen.errors import ConfigError
from xegen.ir import Call, Mad, walk
from xegen.plan import formulate
from xegen.plan.first_layer_weights import FirstLayerWeightsPlan
from xegen.plan.heuristic import choose_config
from xegen.plan.strategies import plan_for


def plan_of(desc, direction="BWD_WB", dt="f32", platform="xehpg", overrides=None, **tags):
    gemm = formulate(make_problem(desc, direction, dt, **tags))
    target = hw.platform(platform)
    return plan_for(gemm, choose_config(gemm, target, overrides or {}), target)


@pytest.mark.parametrize(
    "desc, direction, dt, platform, tags, plan",
    [
        ("mb1ic3ih32oc32oh16kh7sh2ph3", "BWD_WB", "f32", "xehpg", {}, "first"),
        ("mb1ic3ih32oc32oh16kh7sh2ph3", "BWD_W", "bf16", "xehpc", {}, "first"),
        ("mb1ic1iw64oc16ow64kw5pw2", "BWD_WB", "bf16", "xelp", {}, "first"),  # 1-D
        ("mb1ic3id4ih8iw8oc16od4oh8ow8kd3kh3kw3pd1ph1pw1", "BWD_WB", "f32", "xehpg", {}, "first"),  # 3-D
        ("mb1ic3ih32oc32oh16kh7sh2ph3", "BWD_WB", "f32", "xehpg", {"stag": "nchw"}, "gemm"),  # w innermost
        ("mb1ic16ih8oc32oh8kh3ph1", "BWD_WB", "f32", "xehpg", {}, "gemm"),
    ],
)
def test_the_heuristic_gives_first_layer_backward_weights_the_row_plan(desc, direction, dt, platform, tags, plan):
    chosen = plan_of(desc, direction, dt, platform, **tags)
    assert chosen.config.plan == plan
    assert isinstance(chosen, FirstLayerWeightsPlan) == (plan == "first")


def test_first_layer_backward_weights_multiply_each_product_once():
    """3x3 on 8x8, 3 input channels: 8 items (a row of 8 outputs each) shared by tg_k=4 threads
    times k_split=2 groups, one item each, per block of 16 channels and per kernel row (3):
    lanes of the loop's mads x trips x threads = OC x OH x OW x KH x KW x IC = 16 x 8 x 8 x 3 x 3
    x 3 (counted by hand), no tap of padding or overlap summed twice."""
    overrides = {"plan": "first", "m_tile": 8, "tg_k": 4, "k_split": 2}
    plan = plan_of("mb1ic3ih8oc16oh8kh3ph1", overrides=overrides)
    assert plan.per_thread == 1 and plan.per_thread * plan.reducers == plan.items == 8
    assert plan.grid == (1, 2, 3)
    threads = plan.grid[0] * plan.grid[1] * plan.grid[2] * plan.config.tg_k
    body = build_plan(plan)
    mads = [node.func for node in walk(body) if isinstance(node, Call) and isinstance(node.func, Mad)]
    assert threads * plan.per_thread * sum(mad.exec_size for mad in mads) == 16 * 8 * 8 * 3 * 3 * 3


@pytest.mark.parametrize(
    "desc, dt, overrides, tags, message",
    [
        ("mb1ic3ih8oc32oh8kh3ph1", "f32", {"m_tile": 3}, {}, "must divide ow=8"),
        ("mb1ic3ih8oc40oh8kh3ph1", "f32", {"n_tile": 16, "k_split": 2}, {}, "n_tile=16 must divide oc=40"),
        # 16-bit weights split across groups through the scratch buffer, with the same rule
        ("mb1ic3ih8oc40oh8kh3ph1", "bf16", {"n_tile": 16, "k_split": 2}, {}, "n_tile=16 must divide oc=40"),
        ("mb1ic3ih8oc32oh8kh3ph1", "f32", {"fma": "dpas"}, {}, "multiply with mad"),
        ("mb1ic3ih8oc32oh8kh3ph1", "f32", {"tg_m": 2}, {}, "tg_m=2 does not apply"),
        ("mb1ic8ih8oc32oh8kh3ph1", "f32", {}, {}, "at most 4 input channels"),
        ("mb1ic3ih8oc32oh8kh3ph1", "f32", {}, {"stag": "nchw"}, "channels innermost, not"),
        ("g2mb1ic6ih8oc32oh8kh3ph1", "f32", {}, {}, "ungrouped"),
    ],
)
def test_what_first_layer_backward_weights_refuse_they_say(desc, dt, overrides, tags, message):
    with pytest.raises(ConfigError, match=message):
        plan_of(desc, "BWD_WB", dt, overrides={"plan": "first", **overrides}, **tags)
