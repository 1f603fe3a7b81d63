"""plan=depthwise on fewer lanes where its preferred width does not fit the registers: a row of
31 taps (a conformer block's 1-D depthwise convolution) takes (m_tile + 30) pixels and 31 weight
vectors of 16 channels, more than XeLP's 128 GRFs at any m_tile; with 8 channels per thread
(SIMD8) it fits, and the heuristic picks it over the GEMM plan's one channel per group."""

from __future__ import annotations

import pytest

from xegen import hw, pipeline
from xegen.conv import make_problem, parse_descriptor
from xegen.errors import ConfigError
from xegen.modeling import modeled_cycles
from xegen.plan import formulate
from xegen.plan.heuristic import choose_config
from xegen.plan.strategies import plan_for

from ..test_end_to_end import check_end_to_end

LONG_ROW = "g16mb1ic16iw40oc16ow40kw31pw15"


def config_of(desc: str, dt: str, platform: str, overrides: dict | None = None):
    return choose_config(formulate(make_problem(desc, "FWD_B", dt)), hw.platform(platform), overrides or {})


def test_sixteen_lanes_do_not_fit_a_row_of_31_taps_on_xelp():
    with pytest.raises(ConfigError, match="GRFs"):
        config_of(LONG_ROW, "f32", "xelp", {"plan": "depthwise", "simd": 16, "m_tile": 2})


@pytest.mark.parametrize("dt", ["f32", "bf16"])
def test_the_heuristic_takes_the_narrower_depthwise_plan(dt):
    config = config_of(LONG_ROW, dt, "xelp")
    assert (config.plan, config.simd, config.n_tile) == ("depthwise", 8, 8)
    # where sixteen lanes fit (XeHPG's 256 GRFs) they stay
    assert config_of(LONG_ROW, dt, "xehpg").simd == 16


@pytest.mark.parametrize("dt", ["f32", "bf16"])
def test_narrow_depthwise_kernel_verifies(dt, iga64, ocloc):
    compilation = check_end_to_end(parse_descriptor(LONG_ROW), "xelp", "FWD_B", dt, seed=31)
    assert (compilation.config.plan, compilation.config.simd) == ("depthwise", 8)


@pytest.mark.parametrize("hw_name", ["xelp", "xehpg", "xehpc"])
def test_depthwise_weights_default_to_groups_innermost_and_load_as_blocks(hw_name):
    """Depthwise weights' `any` keeps the groups innermost (`k… i o g`, as oneDNN's Goihw16g), so
    a tap's lanes (one group each) are one block load; a layout given with the groups outermost
    keeps a gather a tap, and a grouped layer (4 channels per group) keeps `any`'s usual order."""
    platform = hw.platform(hw_name)
    problem = make_problem("g32mb1ic32ih14oc32oh14kh3ph1", "FWD_B", "f32")
    assert problem.layout_of("wei").tag == "decab"
    plan = plan_for(formulate(problem), choose_config(formulate(problem), platform), platform)
    assert plan.weights_block
    given = make_problem("g32mb1ic32ih14oc32oh14kh3ph1", "FWD_B", "f32", wtag="goihw")
    assert not plan_for(formulate(given), plan.config, platform).weights_block
    grouped = make_problem("g8mb1ic32ih6oc32oh6kh3ph1", "FWD_B", "f32")
    assert grouped.layout_of("wei").tag == "adecb"


@pytest.mark.parametrize("hw_name", ["xehpg", "xelp"])
def test_a_grouped_row_kernel_takes_its_weights_in_blocks_where_the_model_prices_them_lower(hw_name):
    """Four channels per group in bf16: plan=depthwise's lanes run over (group, channel) pairs, so
    the compiler also compiles the weights' `any` as `k… i g o` (a tap's weights one block
    message) and keeps it, priced below `any`'s default taken as given (XeHPG 1,127 against
    1,585 modeled cycles, XeLP 4,485 against 5,385)."""
    desc = "g32mb1ic128ih14oc128oh14kh3ph1"
    chosen = pipeline.compile_problem(make_problem(desc, "FWD_B", "bf16"), hw_name)
    default = pipeline.compile_problem(make_problem(desc, "FWD_B", "bf16", wtag="adecb"), hw_name)
    assert chosen.config.plan == default.config.plan == "depthwise"
    assert chosen.problem.layout_of("wei").tag == "decab"
    assert modeled_cycles(chosen).device < modeled_cycles(default).device
