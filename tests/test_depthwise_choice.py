"""A latency-bound depthwise layer (issue 17): a loop of three kernel rows keeps every row's loads
in flight at once (gmem_bufs=3), and the model, not the row estimate, chooses among the lead and
the estimate's best of the other block shapes (`row_model_choices`)."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from xegen import hw
from xegen.conv import make_problem, parse_descriptor
from xegen.modeling import modeled_cycles
from xegen.pipeline import build_kernel, compile_problem
from xegen.plan import formulate
from xegen.plan.depthwise import depthwise_configs
from xegen.plan.heuristic import MODEL_CHOICES, choose_config, row_model_choices

from .test_end_to_end import check_end_to_end

# mobilenet_v2's block16_dw (7x7 pixels, 960 channels, 3x3) with its channels divided by 10
SMALL_DW = "g96mb1ic96ih7oc96oh7kh3ph1"


def test_a_three_row_loop_issues_every_rows_loads_before_its_first_multiply():
    problem = make_problem(SMALL_DW, "FWD_B", "f32", mb=1)
    target = hw.platform("xehpc")
    compiled = compile_problem(problem, target, {"gmem_bufs": 3, "m_tile": 2, "n_tile": 16}).compiled
    opcodes = [inst.opcode for inst in compiled.instructions]
    mads = [i for i, op in enumerate(opcodes) if op == "mad" and compiled.instructions[i].exec_size == 16]
    loads = [
        i
        for i, inst in enumerate(compiled.instructions)
        if inst.opcode.startswith("send") and inst.send is not None and inst.send.response_length
    ]
    # 3 rows of 4 pixels (2 outputs and their 2 neighbours) and 3 taps of weights, and the bias
    assert len(loads) == 3 * 4 + 3 * 3 + 1
    assert max(loads) < min(mads)
    # two copies: the third row's loads wait for the first row's multiply-adds
    compiled = compile_problem(problem, target, {"gmem_bufs": 2, "m_tile": 2, "n_tile": 16}).compiled
    opcodes = [inst.opcode for inst in compiled.instructions]
    first_mad = next(i for i, inst in enumerate(compiled.instructions) if inst.opcode == "mad" and inst.exec_size == 16)
    assert any(op.startswith("send") for op in opcodes[first_mad:-3])


@pytest.mark.parametrize(
    "desc, target, dt",
    [
        (SMALL_DW, "xehpc", "bf16"),  # three rows: straight-line code
        ("g32mb1ic32ih9oc32oh9kh5ph2", "xehpg", "f32"),  # five rows: a pipelined loop, unrolled by 3
    ],
)
def test_three_copies_of_the_row_registers_verify(desc, target, dt, iga64, ocloc):
    check_end_to_end(parse_descriptor(desc), target, "FWD_B", dt, seed=3, overrides={"gmem_bufs": 3})


def test_the_model_picks_the_fastest_of_the_depthwise_choices():
    problem = make_problem(SMALL_DW, "FWD_B", "bf16", mb=1)
    target = hw.platform("xehpc")
    gemm = formulate(problem)
    choices = row_model_choices(gemm, target)
    assert 1 < len(choices) <= MODEL_CHOICES
    assert choices[0] == choose_config(gemm, target)  # the lead: the estimate's choice
    shapes = {(c.m_tile, c.n_tile, c.tg_m, c.tg_n) for c in choices}
    assert len(shapes) == len(choices) and all(c.plan == "depthwise" for c in choices)
    cycles = [modeled_cycles(compile_problem(problem, target, asdict(config))).device for config in choices]
    chosen = compile_problem(problem, target)
    assert chosen.config == choices[cycles.index(min(cycles))]
    assert build_kernel(problem, target).config == chosen.config  # the interpreter's input: the same kernel


def test_only_free_depthwise_layers_are_contested():
    target = hw.platform("xehpc")
    gemm = formulate(make_problem(SMALL_DW, "FWD_B", "bf16", mb=1))
    assert row_model_choices(gemm, target, asdict(choose_config(gemm, target))) == ()  # every key given
    assert row_model_choices(gemm, target, {"plan": "gemm"}) == ()
    assert all(c.m_tile == 2 for c in row_model_choices(gemm, target, {"m_tile": 2}))
    dense = formulate(make_problem("mb1ic16ih7oc16oh7kh3ph1", "FWD_B", "bf16", mb=1))
    assert row_model_choices(dense, target) == ()  # no row plan: the GEMM plan's own choices


def test_forward_blocks_that_tile_a_row_are_offered_and_backward_data_keeps_its_own():
    """resnext50's conv3_g32x8 (OW = 28): forward also gets 14 and 7 outputs a thread; backward
    data, where they displaced a faster kernel from the model's choices, does not."""
    target = hw.platform("xehpc")
    forward = formulate(make_problem("g32mb1ic256ih28oc256oh28kh3ph1", "FWD_B", "f32", mb=1))
    assert {14, 7} <= {c.m_tile for c in depthwise_configs(forward, target, {})}
    data = formulate(make_problem("g32mb1ic256ih28oc256oh28kh3ph1", "BWD_D", "f32", mb=1))
    assert not {14, 7} & {c.m_tile for c in depthwise_configs(data, target, {})}


def test_a_block_of_7_makes_resnext50s_conv3_faster_on_xehpc():
    """f32 on XeHPC: the heuristic now leads with a 7-output block, which the model prices below
    the 8-output block it led with before (2,464 against 2,676 modeled cycles at review)."""
    problem = make_problem("g32mb1ic256ih28oc256oh28kh3ph1", "FWD_B", "f32", mb=1)
    lead = compile_problem(problem, "xehpc", choose=False)
    assert lead.config.plan == "depthwise" and 28 % lead.config.m_tile == 0 and lead.config.m_tile not in (16, 8, 4)
    eight = compile_problem(problem, "xehpc", {"plan": "depthwise", "m_tile": 8}, choose=False)
    assert modeled_cycles(lead).device < modeled_cycles(eight).device
