"""The heuristic's choice among the row plans' configurations (plan=depthwise, plan=first): the
estimate of the model (`xegen.plan.row_estimate`) ranks them, and its best is the one the model
finds faster where the planners' own first choice is not."""

from __future__ import annotations

from dataclasses import replace

import pytest

import xegen
from xegen import hw
from xegen.conv import make_problem
from xegen.errors import ConfigError
from xegen.plan import formulate
from xegen.plan.first_layer import first_layer_configs
from xegen.plan.heuristic import MAD_ESTIMATE_MARGIN, choose_config, config_candidates
from xegen.plan.row_estimate import _block_load, row_estimate
from xegen.plan.strategies import plan_for, strategy_configs, strategy_fallbacks

RESNEXT_G32X4 = "g32mb1ic128ih56oc128oh56kh3ph1"  # resnext50's conv2: 32 groups of 4 channels, 56x56


def fitting(gemm, platform):
    """The row configurations whose plans fit, in the planners' order, with their estimates."""
    result = []
    for config in strategy_configs(gemm, platform, {}):
        try:
            plan = plan_for(gemm, config, platform)
        except ConfigError:
            continue
        result.append((config, row_estimate(plan).device))
    return result


@pytest.mark.parametrize(
    "platform, start, nbytes, buffer, messages, temporaries",
    [
        # 108 bytes (27 dwords: a first layer's 3x3x3 row) go in messages of 64, 32 and 12 bytes
        ("xehpc", 0, 108, 128, 3, 2),  # 64-byte GRFs: the 32 ends inside r1, the 12 starts inside it
        ("xehpg", 0, 108, 128, 3, 1),  # 32-byte GRFs: only the 12 (bytes 96..108) ends inside a GRF
        ("xelp", 0, 108, 128, 3, 0),  # HDC: oword reads and dword messages, no temporaries
        ("xehpc", 0, 32, 64, 1, 1),  # a pixel of 16 bf16 channels fills half a 64-byte GRF
        ("xehpc", 0, 64, 64, 1, 0),
        ("xehpc", 0, 64, 192, 1, 0),  # ends on a GRF boundary: nothing after it is touched
    ],
)
def test_block_loads_split_as_lowering_does(platform, start, nbytes, buffer, messages, temporaries):
    work, serial = _block_load(hw.platform(platform), start, nbytes, buffer)
    assert serial == temporaries
    per_message = 2 if platform != "xelp" else 4  # an address add and the send (HDC: a header too)
    assert work.issue == messages * per_message + temporaries  # a move out of each temporary


def test_the_heuristic_takes_the_estimates_best_row_configuration():
    """resnext50's 4-channel groups on XeHPC: the planner's first configuration (m_tile=8,
    n_tile=16) is estimated far slower than the best one, which the heuristic takes; the others
    follow in the estimate's order."""
    platform = hw.platform("xehpc")
    gemm = formulate(make_problem(RESNEXT_G32X4, "FWD_B", "f32"))
    scored = fitting(gemm, platform)
    best = min(scored, key=lambda item: item[1])
    planners_first = scored[0]
    assert best[1] <= (1 - MAD_ESTIMATE_MARGIN) * planners_first[1]
    candidates = list(config_candidates(gemm, platform))
    assert candidates[0] == choose_config(gemm, platform) == best[0]
    estimates = dict(scored)
    rest = [estimates[c] for c in candidates[1:] if c in estimates]
    assert len(rest) == len(scored) - 1
    # ties within 2 % keep the planners' order
    assert all(a <= b * (1 + 0.02) for a, b in zip(rest, rest[1:], strict=False))


def test_the_estimates_choice_is_faster_under_the_model():
    """The choice of the test above against the planner's first, both compiled and modeled with
    the weights in `any`'s default order given explicitly (with `any` the compiler also tries
    them as blocks, which the estimate of this layout does not rank): 2,793 against 2,980 cycles
    since the replicating moves are one 2-D region a line."""
    platform = hw.platform("xehpc")
    problem = make_problem(RESNEXT_G32X4, "FWD_B", "f32", wtag="adecb")
    gemm = formulate(problem)
    chosen = choose_config(gemm, platform)
    planners_first = fitting(gemm, platform)[0][0]
    assert chosen != planners_first

    def modeled(config) -> float:
        return xegen.compile(
            problem, hw="xehpc", config=str(config).replace(" ", ","), tuned=False
        ).summary.modeled.device_cycles

    assert modeled(chosen) < modeled(planners_first)


def test_the_planners_first_stays_when_the_estimate_gains_little():
    """Where no configuration is estimated clearly faster (a depthwise layer on XeHPG, memory
    bound), the planner's first configuration stays the choice."""
    platform = hw.platform("xehpg")
    gemm = formulate(make_problem("g144mb1ic144ih56oc144oh56kh3ph1", "FWD_B", "f32"))
    scored = fitting(gemm, platform)
    assert min(e for _, e in scored) > (1 - MAD_ESTIMATE_MARGIN) * scored[0][1]
    assert choose_config(gemm, platform) == scored[0][0]


def test_first_layers_try_one_copy_of_a_rows_loads_first():
    gemm = formulate(make_problem("mb1ic3ih224oc32oh112kh3sh2ph1", "FWD_B", "f32"))
    configs = first_layer_configs(gemm, hw.platform("xehpc"), {})
    assert [c.gmem_bufs for c in configs[:2]] == [1, 2]
    assert first_layer_configs(gemm, hw.platform("xehpc"), {"gmem_bufs": 2})[0].gmem_bufs == 2


def test_first_layers_with_mads_also_try_every_block_that_tiles_a_row():
    """OW = 112 = 2^4 * 7: beside 16, 8, 4 (and the smaller 2), the mad kernels get 14 and 7;
    dpas keeps its 16 and 8 (its M tile)."""
    gemm = formulate(make_problem("mb1ic3ih224oc64oh112kh7sh2ph3", "FWD_B", "f32"))
    blocks = {c.m_tile for c in first_layer_configs(gemm, hw.platform("xehpg"), {})}
    assert blocks == {16, 8, 4, 2, 14, 7}
    assert {c.m_tile for c in first_layer_configs(gemm, hw.platform("xehpg"), {"m_tile": 16})} == {16}
    bf16 = formulate(make_problem("mb1ic3ih224oc64oh112kh7sh2ph3", "FWD_B", "bf16"))
    assert {c.m_tile for c in first_layer_configs(bf16, hw.platform("xehpg"), {})} <= {16, 8, 4, 2}


def test_grouped_layers_smaller_blocks_follow_every_offered_configuration():
    """resnext50's 4-channel groups in bf16 on XeHPC: m_tile=2 blocks (whose moves replicating
    each pixel the estimate undercounts; the model finds 4 faster) are fallbacks, compiled only
    after every offered configuration ran out of registers and before the GEMM plan; fixing
    m_tile leaves none."""
    platform = hw.platform("xehpc")
    gemm = formulate(make_problem(RESNEXT_G32X4, "FWD_B", "bf16"))
    offered = fitting(gemm, platform)
    fallbacks = strategy_fallbacks(gemm, platform, {})
    assert fallbacks and {c.m_tile for c in fallbacks} == {2}
    assert all(c.m_tile > 2 for c, _ in offered)
    candidates = list(config_candidates(gemm, platform))
    rows = [c for c in candidates if c.plan == "depthwise"]
    assert rows == candidates[: len(rows)]  # the row plan's, then the GEMM plan's
    assert rows[len(offered) :] == fallbacks and sorted(map(str, rows[: len(offered)])) == sorted(
        str(c) for c, _ in offered
    )
    assert strategy_fallbacks(gemm, platform, {"m_tile": 4}) == []


def test_a_depthwise_rows_loads_through_temporaries_wait_together():
    """mobilenet_v2's first depthwise layer in bf16 on XeHPC: each pixel (16 bf16 channels) fills
    half a GRF, so its load goes through a temporary, whose move sinks below the row's other
    loads.  Estimated as one wait per row, the heuristic's choice (a block of 4 outputs) comes
    within 5 % of a block of 2 outputs under the model (the fastest offered once the weights are
    block loads: 1,176 against 1,191; a block of 16 outputs: 1,807)."""
    platform = hw.platform("xehpc")
    problem = make_problem("g32mb1ic32ih112oc32oh112kh3ph1", "FWD_B", "bf16")
    chosen = choose_config(formulate(problem), platform)

    def modeled(config) -> float:
        return xegen.compile(
            problem, hw="xehpc", config=str(config).replace(" ", ","), tuned=False
        ).summary.modeled.device_cycles

    assert chosen.plan == "depthwise" and chosen.m_tile > 2
    assert modeled(chosen) <= 1.05 * modeled(replace(chosen, m_tile=2))
