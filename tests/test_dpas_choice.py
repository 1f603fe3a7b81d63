"""Which dpas configuration a GEMM-plan layer gets (issues 17 and 19): the compiler compiles the
heuristic's lead and the next shapes the estimate cannot tell from the best (`model_choices`)
and keeps the kernel the model prices lowest; the expected kernel is computed here from each
choice's modeled cycles, each compiled with its whole configuration given."""

from __future__ import annotations

import sys
from dataclasses import asdict

from xegen import hw, pipeline
from xegen.conv import make_problem
from xegen.modeling import memory_floor, modeled_cycles
from xegen.pipeline import build_kernel, compile_problem
from xegen.plan import formulate
from xegen.plan.estimate import systolic_floor
from xegen.plan.heuristic import MODEL_CHOICES, choose_config, model_choices

# resnet_50's res5a_branch2c (1x1, 512 -> 2048 channels, 7x7) in f16 on XeHPG: the lead, 4x4
# groups of 16x32 tiles, is one thread per EU that hides no latency (11,790 modeled cycles at
# review); 2x2 groups with tg_k=4, 18 % behind it by the estimate, fill the device (8,820)
RES5A_BRANCH2C = "mb1ic512ih7oc2048oh7kh1ph0"


def test_the_model_picks_the_fastest_of_the_dpas_choices():
    problem = make_problem(RES5A_BRANCH2C, "FWD_B", "f16", mb=1)
    target = hw.platform("xehpg")
    choices = model_choices(formulate(problem), target)
    assert 1 < len(choices) <= MODEL_CHOICES
    assert choices[0] == choose_config(formulate(problem), target)  # the lead: the estimate's choice
    # each choice with `any`'s default weights layout (the model chooses the configuration with
    # it, then tries the chosen configuration with the weights in VNNI rows: `weights_choices`)
    default = make_problem(RES5A_BRANCH2C, "FWD_B", "f16", wtag="cdba", mb=1)
    cycles = [modeled_cycles(compile_problem(default, target, asdict(config))).device for config in choices]
    chosen = compile_problem(problem, target)
    assert chosen.config == choices[cycles.index(min(cycles))]
    assert modeled_cycles(chosen).device <= min(cycles) < 0.8 * cycles[0]  # the lead alone was 1.34x slower
    assert build_kernel(problem, target).config == chosen.config  # the interpreter's input: the same kernel


def test_the_choices_differ_in_shape_and_are_all_dpas_gemm_configurations():
    gemm = formulate(make_problem(RES5A_BRANCH2C, "FWD_B", "f16", mb=1))
    target = hw.platform("xehpg")
    choices = model_choices(gemm, target)
    shapes = {(c.m_tile, c.n_tile, c.k_block, c.tg_m, c.tg_n, c.tg_k, c.slm) for c in choices}
    assert len(shapes) == len(choices)
    assert all(c.systolic and c.plan == "gemm" for c in choices)
    assert model_choices(gemm, target, {"tg_k": 1}) != choices  # a given key holds in every choice
    assert all(c.tg_k == 1 for c in model_choices(gemm, target, {"tg_k": 1}))


def test_only_gemm_layers_with_free_keys_are_contested():
    target = hw.platform("xehpg")
    f16 = formulate(make_problem(RES5A_BRANCH2C, "FWD_B", "f16", mb=1))
    assert model_choices(f16, target, asdict(choose_config(f16, target))) == ()  # every key given
    assert model_choices(f16, target, {"plan": "first"}) == ()
    # mad (f32, or asked for): kernels of other M tiles only (tests/test_mad_choice.py)
    assert model_choices(f16, target, {"fma": "mad", "m_tile": 8}) == ()
    f32 = formulate(make_problem(RES5A_BRANCH2C, "FWD_B", "f32", mb=1))
    assert all(not c.systolic for c in model_choices(f32, target))


def test_a_choice_with_deep_lets_compiles_from_any_caller():
    """resnet_50's conv1 in u8:s8:f32 on XeHPG: two of its dpas choices (2x2 groups) hold chains
    of lets deeper than Python's default recursion limit.  compile_problem gives every choice the
    room the CLI gives (`deep.deeply`), so the kernel chosen does not depend on the caller."""
    problem = make_problem("mb1ic3ih224oc64oh112kh7sh2ph3", "FWD_B", "u8:s8:f32", mb=1)
    assert sys.getrecursionlimit() < 10_000  # this test's thread: Python's default limit
    chosen = compile_problem(problem, "xehpg")
    assert chosen.config in model_choices(formulate(problem), hw.platform("xehpg"))


def test_the_floors_are_the_models_systolic_and_memory_terms():
    """`systolic_floor` counts a configuration's dpas as the model counts those of its compiled
    kernel, and `memory_floor` is the model's memory term at the problem's compulsory bytes:
    res5a_branch2c's 2x2 groups with tg_k=4 are priced there (memory-bound at the roofline), the
    lead's 4x4 groups (tg_k=1) above it."""
    problem = make_problem(RES5A_BRANCH2C, "FWD_B", "f16", wtag="cdba", mb=1)
    target = hw.platform("xehpg")
    gemm = formulate(problem)
    lead, second = model_choices(gemm, target)[:2]
    assert (lead.tg_k, second.tg_k) == (1, 4)
    for config, at_memory_floor in ((lead, False), (second, True)):
        cycles = modeled_cycles(compile_problem(problem, target, asdict(config)))
        assert systolic_floor(config, gemm, target) == cycles.xmx / cycles.parallel_eus
        assert memory_floor(problem, target) <= cycles.terms["memory"]
        assert (cycles.device == memory_floor(problem, target)) is at_memory_floor


def test_choices_the_model_cannot_price_lower_are_not_compiled(monkeypatch):
    """Once a kernel is priced at the problem's compulsory bytes, no other choice and no other
    weights layout can be priced lower: res5a_branch2c compiles its lead and its second choice
    only (five kernels before: four choices and the VNNI weights), and keeps the second."""
    problem = make_problem(RES5A_BRANCH2C, "FWD_B", "f16", mb=1)
    target = hw.platform("xehpg")
    compiled = []
    original = pipeline._compile_config

    def counted(problem, gemm, config, *rest, **options):
        compiled.append((problem.wtag, config))
        return original(problem, gemm, config, *rest, **options)

    monkeypatch.setattr(pipeline, "_compile_config", counted)
    chosen = compile_problem(problem, target)
    choices = model_choices(formulate(problem), target)
    assert len(choices) == 4
    assert compiled == [(problem.wtag, config) for config in choices[:2]]
    assert chosen.config == choices[1]
    assert modeled_cycles(chosen).device == memory_floor(problem, target)
