"""Backward weights on the GEMM plan, where both operands are strided along K (the pixels, the
slow dimension of src and diff_dst in channels-last layouts): the estimate prices their
rearrangement into dpas's layouts only roughly without SLM staging, so the model also prices
the kernels without it (`unstaged_alternative`, `k_strided`) and keeps the faster (issue 18)."""

from __future__ import annotations

from xegen import hw
from xegen.conv import make_problem, parse_descriptor
from xegen.modeling import modeled_cycles
from xegen.pipeline import build_kernel, compile_problem
from xegen.plan import formulate
from xegen.plan.heuristic import k_strided, unstaged_alternative

from .test_end_to_end import check_end_to_end

# a 3x3 layer whose heuristic lead stages A and B through SLM on XeHPG
MEDIUM = "mb1ic64ih28oc64oh28kh3ph1"


def test_only_operands_strided_along_k_get_the_alternative():
    target = hw.platform("xehpg")
    weights = formulate(make_problem(MEDIUM, "BWD_WB", "bf16", mb=1))
    assert k_strided(weights)
    assert unstaged_alternative(weights, target) == {"slm": 0}
    assert unstaged_alternative(weights, target, {"slm": 1}) is None  # staging given
    for direction in ("FWD_B", "BWD_D"):  # A (src, diff_dst) contiguous along K, the channels
        other = formulate(make_problem(MEDIUM, direction, "bf16", mb=1))
        assert not k_strided(other) and unstaged_alternative(other, target) is None
    # plain layouts: diff_dst's rows (ow, K's innermost) are contiguous
    plain = formulate(make_problem(MEDIUM, "BWD_WB", "bf16", stag="abcd", dtag="abcd", mb=1))
    assert not k_strided(plain) and unstaged_alternative(plain, target) is None


def test_the_model_keeps_the_unstaged_backward_weights():
    problem = make_problem(MEDIUM, "BWD_WB", "bf16", mb=1)
    target = hw.platform("xehpg")
    staged = compile_problem(problem, target, {"slm": 1})
    unstaged = compile_problem(problem, target, {"slm": 0})
    chosen = compile_problem(problem, target)
    cycles = [modeled_cycles(c).device for c in (staged, unstaged)]
    assert chosen.config == unstaged.config and chosen.zebin() == unstaged.zebin()
    assert modeled_cycles(chosen).device == min(cycles) < 0.8 * cycles[0]  # 4,403 against 6,144 at review
    assert build_kernel(problem, target).config == chosen.config


def test_unstaged_backward_weights_end_to_end(iga64, ocloc):
    """The kernel the model keeps, with its bias gradient, against numpy in the simulator."""
    compilation = check_end_to_end(parse_descriptor(MEDIUM), "xehpg", "BWD_WB", "bf16", seed=18)
    assert not compilation.config.slm
