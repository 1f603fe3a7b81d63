"""Which plan a first layer gets (issue 18): where plan=first and the GEMM plan both apply, the
compiler compiles each plan's first fitting configuration and keeps the kernel the model prices
lower (`model_decides`, `pipeline._model_choice`); the expected plan is computed here from the two
plans' modeled cycles, each compiled with `plan=` given."""

from __future__ import annotations

import pytest

from xegen import hw
from xegen.conv import make_problem
from xegen.modeling import modeled_cycles
from xegen.pipeline import build_kernel, compile_problem
from xegen.plan import formulate
from xegen.plan.heuristic import model_decides

# ic=4, 3x3, 56x56, 128 channels: plan=first's mixed-mode mads against the GEMM plan's dpas (at
# review, plan=first was chosen at 15,308 modeled cycles against the GEMM plan's 5,295)
REGRESSION = ("mb1ic4ih56oc128oh56kh3ph1", "BWD_WB", "bf16", "xehpc")
SMALL = ("mb1ic3ih12oc16oh6kh3sh2ph1", "FWD_B", "f32", "xehpg")
DATA = ("mb1ic4ih56oc128oh56kh3ph1", "BWD_D", "f32", "xehpc")  # (surveyed: plan=first 3,305, the GEMM plan 7,382)


def cycles_of(problem, platform, plan: str) -> float:
    return modeled_cycles(compile_problem(problem, platform, {"plan": plan})).device


@pytest.mark.parametrize("desc, direction, dt, platform", [REGRESSION, SMALL, DATA])
def test_the_model_picks_the_faster_plan_of_a_first_layer(desc, direction, dt, platform):
    problem = make_problem(desc, direction, dt, mb=1)
    cycles = {plan: cycles_of(problem, platform, plan) for plan in ("first", "gemm")}
    faster = min(cycles, key=lambda plan: (cycles[plan], plan != "first"))  # a tie keeps the row plan
    chosen = compile_problem(problem, platform)
    assert chosen.config.plan == faster
    assert modeled_cycles(chosen).device == cycles[faster] <= min(cycles.values())
    assert chosen.zebin() == compile_problem(problem, platform, {"plan": faster}).zebin()


def test_only_first_layers_without_a_given_plan_are_contested():
    target = hw.platform("xehpg")
    first = formulate(make_problem(SMALL[0], "FWD_B", "f32"))
    assert model_decides(first, target) == ("first", "gemm")
    assert model_decides(first, target, {"grf": 128}) == ("first", "gemm")  # other keys given: still both
    assert model_decides(first, target, {"plan": "first"}) == ()
    assert model_decides(first, target, {"plan": "gemm"}) == ()
    resnet = formulate(make_problem("mb1ic64ih56oc64oh56kh3ph1", "FWD_B", "f32"))  # res2a_branch2b
    assert model_decides(resnet, target) == ()
    depthwise = formulate(make_problem("g32mb1ic32ih16oc32oh16kh3ph1", "FWD_B", "f32"))
    assert model_decides(depthwise, target) == ()
    int8 = formulate(make_problem(SMALL[0], "FWD_B", "u8:s8:f32"))  # plan=first not offered to int8
    assert model_decides(int8, target) == ()


def test_passes_shown_and_the_built_ir_are_the_chosen_kernels():
    """--print-after sees the chosen kernel's passes once, and build_kernel (--print-ir, the
    interpreter's input) builds the configuration compile_problem compiles."""
    problem = make_problem(*SMALL[:3], mb=1)
    shown: list[str] = []
    chosen = compile_problem(problem, SMALL[3], show=lambda name, text: shown.append(name))
    assert shown.count("build") == 1 and shown.count("regalloc") == 1
    assert chosen.zebin() == compile_problem(problem, SMALL[3]).zebin()
    assert build_kernel(problem, SMALL[3]).config == chosen.config


def test_resnet_50s_conv1_takes_a_block_whose_threads_fill_the_eus_evenly():
    """f32 on XeHPG (512 EUs): 16 outputs a thread made 112 * 112 / 16 * 4 = 3,136 threads, 6.125
    an EU, so the busiest EU ran 7 and the model priced the kernel at 37,506 cycles; a block that
    divides the thread count by the EUs is chosen now, and the model prices it lower."""
    problem = make_problem("mb1ic3ih224oc64oh112kh7sh2ph3", "FWD_B", "f32", mb=1)
    target = hw.platform("xehpg")
    chosen = compile_problem(problem, target, {"plan": "first"}, choose=False)
    config = chosen.config
    threads = (112 * 112 // config.m_tile) * (64 // config.n_tile)
    assert 112 % config.m_tile == 0 and threads % target.eu_count == 0
    before = compile_problem(problem, target, {"plan": "first", "m_tile": 16, "n_tile": 16}, choose=False)
    assert modeled_cycles(chosen).device < 0.9 * modeled_cycles(before).device
