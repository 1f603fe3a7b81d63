"""plan=depthwise for the backward passes of depthwise convolutions (issue 18): which plan the
heuristic takes, that the kernels multiply exactly the problem's products (no tap between
outputs, no overlapping block summed twice), and what the plan refuses."""

from __future__ import annotations

import pytest

from xegen import hw
from xegen.build.strategies import build_plan
from xegen.conv import make_problem
from xegen.errors import ConfigError
from xegen.ir import Call, For, Mad, walk
from xegen.plan import formulate
from xegen.plan.heuristic import choose_config
from xegen.plan.row_estimate import row_estimate
from xegen.plan.rows import backward_data_walks
from xegen.plan.strategies import plan_for


def plan_of(desc, direction, dt="f32", platform="xehpg", overrides=None):
    gemm = formulate(make_problem(desc, direction, dt))
    target = hw.platform(platform)
    return plan_for(gemm, choose_config(gemm, target, overrides or {}), target)


@pytest.mark.parametrize(
    "desc, direction, dt, platform, plan",
    [
        ("g32mb1ic32ih16oc32oh16kh3ph1", "BWD_D", "f32", "xehpg", "depthwise"),
        ("g32mb1ic32ih16oc32oh8kh3sh2ph1", "BWD_D", "bf16", "xehpc", "depthwise"),
        ("g8mb1ic32ih8oc32oh8kh3ph1", "BWD_D", "f32", "xelp", "depthwise"),  # 4 channels per group
        ("g32mb1ic32ih16oc32oh16kh3ph1", "BWD_WB", "f32", "xehpg", "depthwise"),
        ("g32mb1ic32ih16oc32oh8kh3sh2ph1", "BWD_WB", "bf16", "xelp", "depthwise"),
        ("g8mb1ic32ih8oc32oh8kh3ph1", "BWD_WB", "f32", "xehpg", "gemm"),  # grouped: the GEMM plan's
        ("mb1ic16ih8oc32oh8kh3ph1", "BWD_D", "f32", "xehpg", "gemm"),
    ],
)
def test_the_heuristic_takes_the_row_plan_for_depthwise_backward(desc, direction, dt, platform, plan):
    assert plan_of(desc, direction, dt, platform).config.plan == plan


@pytest.mark.parametrize(
    "desc, residues",
    [
        ("g16mb1ic16ih11oc16oh6kh3sh2ph1", [0, 1]),  # odd width: the w phases in walks of their own
        ("g16mb1ic16ih12oc16oh6kh3sh2ph1", [0, 1]),  # even width: the w phases in one walk
        ("g16mb1ic16ih11oc16oh5kh4sh2ph1dh1", [1]),  # dilation 2 = stride: even inputs receive no tap
    ],
)
def test_backward_data_phases_read_diff_dst_where_the_gemm_formulation_does(desc, residues):
    """Each phase's taps, read back through its walk, land on o = (i + P - k*E) / S exactly
    (i = q*S + r the input written, k the kernel position), and together the phases give every
    (input, kernel position) pair that divides exactly once (counted by brute force here)."""
    problem = make_problem(desc, "BWD_D", "f32")
    d = problem.desc
    seen = []
    for walk_ in backward_data_walks(problem):
        h = walk_.axis("h")
        for q in range(h.outputs):
            for t in range(h.taps):
                i = q * h.out_stride + h.out_offset
                k = h.kernel_first + h.kernel_step * t
                o = q * h.stride + t * h.step - h.pad
                assert 0 <= k < d.kh and o * d.sh == i + d.ph - k * (d.dh + 1)
                seen += [(i, k, w.out_offset) for w in walk_.w_axes]
    assert sorted({w.out_offset for walk_ in backward_data_walks(problem) for w in walk_.w_axes}) == residues
    expected = [
        (i, k, r) for i in range(d.ih) for k in range(d.kh) for r in residues if (i + d.ph - k * (d.dh + 1)) % d.sh == 0
    ]
    assert sorted(seen) == sorted(expected)


def _lanes_multiplied(body) -> int:
    """Lanes of every mad the kernel runs per thread, summed over its phases: a loop's mads times
    its trips, the mads outside loops once."""
    loops = [node for node in walk(body) if isinstance(node, For)]
    in_loops = {id(node) for loop in loops for node in walk(loop.body)}
    total = sum(_mad_lanes(loop.body) * int(str(loop.bound)) for loop in loops)
    outside = [n for n in walk(body) if isinstance(n, Call) and id(n) not in in_loops]
    return total + sum(mad.exec_size for node in outside for mad in _mads(node))


def _mads(body) -> list[Mad]:
    return [n.func for n in walk(body) if isinstance(n, Call) and isinstance(n.func, Mad)]


def _mad_lanes(body) -> int:
    return sum(mad.exec_size for mad in _mads(body))


def test_strided_backward_data_multiplies_no_tap_between_outputs():
    """3x3 stride 2 on an 8x8 diff_src: four phases of 4x4 inputs with 2x2, 2x1, 1x2 and 1x1
    taps, the two along w in one thread (as many positions each); lanes x threads = IC x OH x
    OW x KH x KW (= 16 x 4 x 4 x 9, what the forward pass multiplies), where every tap at every
    input (zeros between outputs) would be 16 x 8 x 8 x 9."""
    plan = plan_of("g16mb1ic16ih8oc16oh4kh3sh2ph1", "BWD_D", overrides={"plan": "depthwise", "m_tile": 4, "tg_m": 1})
    assert len(plan.phases) == 2 and plan.grid[2] == 2
    assert [len(rows.path.w_axes) for rows in plan.phases] == [2, 2]
    threads_per_phase = plan.grid[0] * plan.grid[1] * plan.config.tg_m * plan.config.tg_n
    assert all(rows.spatial_blocks == threads_per_phase for rows in plan.phases)
    assert threads_per_phase * _lanes_multiplied(build_plan(plan)) == 16 * 4 * 4 * 9


def test_backward_weights_sums_each_product_once():
    """Every thread's loop over its items: lanes x trips x threads = OC x OH x OW x KH x KW."""
    overrides = {"plan": "depthwise", "m_tile": 8, "tg_k": 2, "k_split": 2}
    plan = plan_of("g16mb1ic16ih8oc16oh8kh3ph1", "BWD_WB", overrides=overrides)
    assert plan.per_thread == 2 and plan.per_thread * plan.reducers == plan.items
    threads = plan.grid[0] * plan.grid[1] * plan.config.tg_k
    loop = next(node for node in walk(build_plan(plan)) if isinstance(node, For))
    assert threads * plan.per_thread * _mad_lanes(loop.body) == 16 * 8 * 8 * 9


@pytest.mark.parametrize(
    "desc, direction, dt, overrides, message",
    [
        ("g32mb1ic32ih8oc32oh8kh3ph1", "BWD_WB", "f32", {"m_tile": 3}, "must divide ow=8"),
        ("g40mb1ic40ih8oc40oh8kh3ph1", "BWD_WB", "f32", {"n_tile": 16, "k_split": 2}, "n_tile=16 must divide oc=40"),
        # 16-bit weights split across groups through the scratch buffer, with the same rule
        ("g40mb1ic40ih8oc40oh8kh3ph1", "BWD_WB", "bf16", {"n_tile": 16, "k_split": 2}, "n_tile=16 must divide oc=40"),
        ("g32mb1ic32ih8oc32oh8kh3ph1", "BWD_WB", "f32", {"tg_m": 2}, "tg_m=2 does not apply"),
        ("g48mb1ic48ih8oc48oh8kh3ph1", "BWD_WB", "f32", {"n_tile": 32}, "at most 16 on XeHPG"),
        ("g8mb1ic32ih8oc32oh8kh3ph1", "BWD_WB", "f32", {}, "for depthwise convolutions"),
        ("g32mb1ic32ih8oc32oh4kh3sh2ph1", "BWD_D", "f32", {"m_tile": 8}, "exceeds the 4 outputs of a row"),
        # 64 items of 1 output in shares of 3 over 22 threads: the loop's bound is min(3, 64 - first item)
        (
            "g32mb1ic32ih8oc32oh8kh3ph1",
            "BWD_WB",
            "bf16",
            {"m_tile": 1, "tg_k": 2, "k_split": 11, "gmem_bufs": 2},
            "trip count varies and cannot be pipelined",
        ),
    ],
)
def test_what_the_backward_row_plans_refuse_they_say(desc, direction, dt, overrides, message):
    with pytest.raises(ConfigError, match=message):
        plan_of(desc, direction, dt, overrides={"plan": "depthwise", **overrides})


def test_the_estimate_ranks_backward_weights_by_the_threads_that_fill_the_device():
    """block3_dw's backward weights in f32 on XeHPC: 2016 threads (8 per group x 28 groups per
    block of 16 channels) model 1767 cycles, 252 (4 x 7 with blocks of 28 outputs) 4712
    (`xegen conv g144mb1ic144ih56oc144oh56kh3ph1 --dir BWD_WB --hw xehpc --config ...`, 29
    November 2026); the estimate orders them so, and the heuristic takes a configuration of the
    first kind."""
    desc = "g144mb1ic144ih56oc144oh56kh3ph1"
    gemm = formulate(make_problem(desc, "BWD_WB", "f32"))
    target = hw.platform("xehpc")
    many = {"plan": "depthwise", "tg_k": 8, "k_split": 28, "m_tile": 14, "gmem_bufs": 1}
    few = {"plan": "depthwise", "tg_k": 4, "k_split": 7, "m_tile": 28, "gmem_bufs": 1}
    estimates = [row_estimate(plan_for(gemm, choose_config(gemm, target, c), target)).device for c in (many, few)]
    assert estimates[0] < estimates[1]
    chosen = choose_config(gemm, target, {})
    assert chosen.plan == "depthwise" and chosen.tg_k * chosen.k_split * 9 >= target.eu_count
