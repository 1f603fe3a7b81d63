"""Strided backward data of first layers on the GEMM plan (issue 18): a thread's K block whose tap
its phase lacks is skipped, not multiplied as masked zeros; and where the heuristic's lead stages
A and B through SLM while B's columns are gathered, the model also prices the kernels without
SLM staging (`unstaged_alternative`) and keeps the faster."""

from __future__ import annotations

import pytest

from xegen import hw
from xegen.conv import make_problem, parse_descriptor
from xegen.ir import Call, For, IfThenElse, Send, walk
from xegen.modeling import modeled_cycles
from xegen.pipeline import build_kernel, compile_problem
from xegen.plan import formulate
from xegen.plan.heuristic import unstaged_alternative

from .test_end_to_end import check_end_to_end

# 7x7 stride 2: phases of 4x4, 4x3, 3x4 and 3x3 taps, every one over 8x8 positions
SMALL = "mb1ic3ih15oc16kh7sh2ph3"
UNSTAGED = {"plan": "gemm", "slm": 0}
# resnet_50's conv1 at 56x56: its GEMM plan's lead stages through SLM
MEDIUM = "mb1ic3ih56oc64oh28kh7sh2ph3"


def test_taps_a_phase_lacks_are_not_multiplied():
    compilation = compile_problem(make_problem(SMALL, "BWD_D", "bf16", mb=1), "xehpg", UNSTAGED)
    counts = list(
        zip(
            [i.opcode for i in compilation.compiled.instructions],
            compilation.compiled.executions(compilation.kernel.grid),
            strict=True,
        )
    )
    blocks = max(n for opcode, n in counts if opcode == "jmpi")  # the K loop's back edge: every thread's blocks
    multiplies = {n for opcode, n in counts if opcode == "dpas"}
    # by hand: the phases have (4 + 3) * (4 + 3) = 49 of their 4 * 4 * 4 = 64 tap slots
    assert multiplies == {blocks * 49 // 64}


def test_inside_the_guard_the_weights_are_loaded_unmasked():
    kernel = build_kernel(make_problem(SMALL, "BWD_D", "bf16", mb=1), "xehpg", UNSTAGED)
    (loop,) = [s for s in walk(kernel.body) if isinstance(s, For)]
    guards = [s for s in walk(loop.body) if isinstance(s, IfThenElse)]
    assert len(guards) == 1
    sends = [s for s in walk(guards[0].then_case) if isinstance(s, Call) and isinstance(s.func, Send)]
    weights = [s for s in sends if s.func.kind == "block"]
    assert weights and all(s.args[-1] is None for s in weights)  # the tap's conditions: the guard's
    assert all(s.args[-1] is not None for s in sends if s.func.kind == "scattered")  # diff_dst's edges stay


@pytest.mark.parametrize("platform, dt", [("xehpg", "bf16"), ("xehpc", "bf16"), ("xelp", "f32"), ("xehpg", "f32")])
def test_skipping_taps_end_to_end(platform, dt, iga64, ocloc):
    compilation = check_end_to_end(parse_descriptor(SMALL), platform, "BWD_D", dt, seed=7, overrides=UNSTAGED)
    (loop,) = [s for s in walk(compilation.kernel.body) if isinstance(s, For)]
    assert any(isinstance(s, IfThenElse) for s in walk(loop.body))


def test_the_model_prices_the_unstaged_kernels_too():
    problem = make_problem(MEDIUM, "BWD_D", "bf16", mb=1)
    target = hw.platform("xehpg")
    staged = compile_problem(problem, target, {"plan": "gemm", "slm": 1})
    unstaged = compile_problem(problem, target, UNSTAGED)
    chosen = compile_problem(problem, target, {"plan": "gemm"})
    cycles = [modeled_cycles(c).device for c in (staged, unstaged)]
    assert chosen.config == unstaged.config and chosen.zebin() == unstaged.zebin()
    assert modeled_cycles(chosen).device == min(cycles) < 0.5 * cycles[0]  # 2,375 against 6,844 at review
    assert build_kernel(problem, target, {"plan": "gemm"}).config == chosen.config


def test_only_gathered_columns_behind_a_staged_lead_get_the_alternative():
    target = hw.platform("xehpg")
    data = formulate(make_problem(MEDIUM, "BWD_D", "bf16", mb=1))
    assert unstaged_alternative(data, target, {"plan": "gemm"}) == {"plan": "gemm", "slm": 0}
    assert unstaged_alternative(data, target, {"plan": "gemm", "slm": 1}) is None  # staging given
    assert unstaged_alternative(data, target, {"plan": "first"}) is None
    assert unstaged_alternative(data, target) is None  # plan=first fits and leads
    forward = formulate(make_problem(MEDIUM, "FWD_B", "bf16", mb=1))  # B, the weights, loaded by rows
    assert unstaged_alternative(forward, target, {"plan": "gemm"}) is None
    f32 = formulate(make_problem(MEDIUM, "BWD_D", "f32", mb=1))  # mad: the lead loads directly already
    assert unstaged_alternative(f32, target, {"plan": "gemm"}) is None
