"""Which mad configuration a GEMM-plan layer gets: the compiler compiles the heuristic's lead and
the estimate's best of each other M tile (`model_choices`, MAD_MODEL_CHOICES) and keeps the
kernel the model prices lowest.  A thread's rows set how many threads there are, and so how
evenly they fill the EUs, which the estimate prices too coarsely to choose by; the expected
kernel is computed here from each choice's modeled cycles, each compiled with its whole
configuration given."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from xegen import hw
from xegen.conv import make_problem
from xegen.modeling import modeled_cycles
from xegen.pipeline import compile_problem
from xegen.plan import formulate
from xegen.plan.heuristic import MAD_MODEL_CHOICES, choose_config, model_choices

# resnet_50's res2a_branch2b (3x3, 64 channels, 56x56), f32
RES2A_BRANCH2B = "mb1ic64ih56oc64oh56kh3ph1"


@pytest.mark.parametrize("target", ["xelp", "xehpg"])
def test_the_model_picks_the_fastest_of_the_mad_choices(target):
    problem = make_problem(RES2A_BRANCH2B, "FWD_B", "f32", mb=1)
    platform = hw.platform(target)
    choices = model_choices(formulate(problem), platform)
    assert 1 < len(choices) <= MAD_MODEL_CHOICES
    assert choices[0] == choose_config(formulate(problem), platform)  # the lead: the estimate's choice
    assert len({c.m_tile for c in choices}) == len(choices)
    assert all(c.fma == "mad" and c.plan == "gemm" for c in choices)
    cycles = [modeled_cycles(compile_problem(problem, platform, asdict(config))).device for config in choices]
    chosen = compile_problem(problem, platform)
    assert chosen.config == choices[cycles.index(min(cycles))]
    if target == "xelp":  # the lead's 8 rows leave the busiest EU a thread more (XeHPG's lead has 7)
        assert min(cycles) < cycles[0]
    assert model_choices(formulate(problem), platform, {"m_tile": chosen.config.m_tile}) == ()
