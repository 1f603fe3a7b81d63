"""plan=first for the backward data of first layers (issue 18): which problems the heuristic
gives it, that its kernels multiply exactly the problem's products (none on a tap between
outputs), what it refuses and why."""

from __future__ import annotations

import pytest

from xegen import hw
from xegen.build.strategies import build_plan
from xegen.conv import make_problem
from xegen.errors import ConfigError
from xegen.ir import Call, Mad, walk
from xegen.plan import formulate
from xegen.plan.first_layer_data import FirstLayerDataPlan
from xegen.plan.heuristic import choose_config
from xegen.plan.strategies import plan_for


def plan_of(desc, dt="f32", platform="xehpg", overrides=None, **tags):
    gemm = formulate(make_problem(desc, "BWD_D", dt, **tags))
    target = hw.platform(platform)
    return plan_for(gemm, choose_config(gemm, target, overrides or {}), target)


@pytest.mark.parametrize(
    "desc, dt, platform, tags, plan",
    [
        ("mb1ic3ih32oc32oh16kh7sh2ph3", "f32", "xehpg", {}, "first"),
        ("mb1ic3ih32oc32oh16kh7sh2ph3", "bf16", "xehpc", {}, "first"),
        ("mb1ic1iw64oc16ow32kw5sw2pw2", "bf16", "xelp", {}, "first"),  # 1-D
        ("mb1ic3ih32oc32oh16kh7sh2ph3", "f32", "xehpg", {"dtag": "nchw"}, "gemm"),  # diff_dst not channels-last
        ("mb1ic16ih8oc32oh8kh3ph1", "f32", "xehpg", {}, "gemm"),
        ("mb1ic3ih56oc64oh56kh1", "f32", "xehpg", {}, "gemm"),  # 1x1: the GEMM plan is faster
        ("mb1ic3ih56oc16oh56kh3ph1", "bf16", "xehpc", {}, "gemm"),  # 16 bf16 channels fill no GRF
        ("mb1ic3ih56oc16oh56kh3ph1", "bf16", "xehpg", {}, "first"),  # they fill XeHPG's
    ],
)
def test_the_heuristic_gives_first_layer_backward_data_the_row_plan(desc, dt, platform, tags, plan):
    chosen = plan_of(desc, dt, platform, **tags)
    assert chosen.config.plan == plan
    assert isinstance(chosen, FirstLayerDataPlan) == (plan == "first")


def test_first_layer_backward_data_multiplies_each_product_once():
    """7x7 stride 2 on 16x16 (pad 3) into 8x8 outputs, 3 input channels, 32 output channels: the
    phases (2 along h, the w phases in one walk) give each input row and column the 4 or 3 taps
    k with ih + 3 - k even, and no other (no multiply by a tap between outputs; taps reaching
    past diff_dst's edges multiply the zeros of a masked load, as forward's padding does).
    Counted by hand below, against the loop's mads: lanes x trips x threads (the blocks along w
    do not overlap: m_tile=4 divides the 8 positions of a phase)."""
    plan = plan_of("mb1ic3ih16oc32oh8kh7sh2ph3", overrides={"plan": "first", "m_tile": 4, "n_tile": 16})
    assert plan.grid == (1, 16 // plan.config.tg_m, 2)

    def taps(i):
        return sum(1 for k in range(7) if (i + 3 - k) % 2 == 0)

    products = sum(taps(ih) * taps(iw) for ih in range(16) for iw in range(16)) * 3 * 32
    body = build_plan(plan)
    mads = [node.func for node in walk(body) if isinstance(node, Call) and isinstance(node.func, Mad)]
    # the kernel holds one loop per phase (the same w taps: bodies of equal size), each run
    # OC/n_tile x the phase's kernel rows times by each of its 8 rows x 2 blocks of positions
    half = len(mads) // 2
    lanes = [sum(m.exec_size for m in mads[:half]), sum(m.exec_size for m in mads[half:])]
    assert [rows.iterations for rows in plan.phases] == [2 * 4, 2 * 3]
    assert [rows.spatial_blocks for rows in plan.phases] == [16, 16]
    assert sum(n * rows.iterations * 16 for n, rows in zip(lanes, plan.phases, strict=True)) == products


@pytest.mark.parametrize(
    "desc, dt, overrides, tags, message",
    [
        ("mb1ic3ih8oc48oh8kh3ph1", "f32", {"n_tile": 32, "simd": 16}, {}, "n_tile=32 must be a power of two"),
        ("mb1ic3ih8oc32oh8kh3ph1", "f32", {"fma": "dpas"}, {}, "sums the output channels with mad"),
        ("mb1ic3ih8oc32oh8kh3ph1", "f32", {"tg_n": 2}, {}, "tg_n=2 does not apply"),
        ("mb1ic3ih8oc32oh8kh3ph1", "f32", {"m_tile": 16}, {}, "exceeds the 8 outputs"),
        ("mb1ic8ih8oc32oh8kh3ph1", "f32", {}, {}, "at most 4 input channels"),
        ("mb1ic3ih8oc32oh8kh3ph1", "f32", {}, {"stag": "nChw16c"}, "neither channels nor w innermost"),
        ("mb1ic3ih8oc32oh8kh3ph1", "f32", {}, {"dtag": "nchw"}, "use a channels-last layout"),
        ("g2mb1ic6ih8oc32oh8kh3ph1", "f32", {}, {}, "ungrouped"),
    ],
)
def test_what_first_layer_backward_data_refuses_it_says(desc, dt, overrides, tags, message):
    with pytest.raises(ConfigError, match=message):
        plan_of(desc, dt, overrides={"plan": "first", **overrides}, **tags)
