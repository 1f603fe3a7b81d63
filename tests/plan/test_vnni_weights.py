"""Weights whose input-channel pairs (int8: quads) are interleaved within runs of output channels
(`cdBa2b`, oneDNN's OIhw8i16o2i) load as block lines straight into dpas's VNNI B, with SLM staging
and without; `any` resolves a dpas forward problem's weights to that layout where the model
prices its kernel lower (`plan.gemm.weights_choices`, `pipeline.compile_problem`)."""

from __future__ import annotations

from dataclasses import asdict, replace

import pytest

from xegen import hw
from xegen.conv import make_problem, parse_descriptor
from xegen.conv.layout import make_layout
from xegen.emit.analysis import inner_loop
from xegen.ir import Var
from xegen.ir.types import BF16, PTR, S8
from xegen.modeling import modeled_cycles
from xegen.pipeline import build_kernel, compile_problem
from xegen.plan import formulate, plan_kernel
from xegen.plan.config import Config
from xegen.plan.gemm import weights_choices
from xegen.plan.kernel import reorder_moves
from xegen.plan.messages import LinePlan, interleaved_lengths
from xegen.plan.tiles import interleaved_line_layout, vnni_layout
from xegen.verify import verify

from ..test_end_to_end import check_end_to_end

RES_3X3 = "mb1ic64ih14oc64oh14kh3ph1"
DPAS = Config(fma="dpas", simd=8, tg_m=4, tg_n=4, m_tile=16, n_tile=8, k_block=32, grf=256)


def test_a_layout_names_its_interleaved_runs():
    dims = (64, 32, 3, 3)  # oc, ic, kh, kw
    assert make_layout("cdBa2b", "wei", dims, False).interleaved_run(0, 1, 2) == 64  # every oc, an ic pair each
    assert make_layout("ABcd8b16a2b", "wei", dims, False).interleaved_run(0, 1, 2) == 16  # OIhw8i16o2i
    assert make_layout("cdBa4b", "wei", dims, False).interleaved_run(0, 1, 4) == 64
    assert make_layout("cdBa4b", "wei", dims, False).interleaved_run(0, 1, 2) == 0  # quads are not pairs
    assert make_layout("cdba", "wei", dims, False).interleaved_run(0, 1, 2) == 0  # plain: oc alone innermost
    assert make_layout("cdAb2a", "wei", dims, False).interleaved_run(0, 1, 2) == 0  # ic innermost, oc paired


@pytest.mark.parametrize("type_, grf", [(BF16, 32), (BF16, 64), (S8, 32)])
def test_interleaved_lines_of_an_exec_size_lie_where_dpas_reads_b(type_, grf):
    ops = 4 // type_.size
    columns = grf // 4  # the dpas exec size: a VNNI row of B is one GRF
    rows, cols = 4 * 8 * ops, 2 * columns  # two K steps of 8 dword rows, two column blocks
    buffer = Var("b", PTR)
    lines_layout, lines = interleaved_line_layout(buffer, type_, rows, cols, columns, ops, grf)
    assert lines_layout.same_placement(vnni_layout(buffer, type_, rows, cols, 8 * ops, columns))
    # each line: `columns` dwords from a GRF boundary, column c's `ops` rows in dword c
    for line in lines:
        assert line.base * type_.size % grf == 0 and line.other % ops == 0
        for c in range(columns):
            for e in range(ops):
                assert lines_layout.offset(line.other + e, line.start + c) == line.base + c * ops + e


def test_hand_placed_element():
    # bf16, 32 x 16 in lines of 8 columns (one 32-byte GRF each): element (3, 9) is in dword row 1
    # (rows 2, 3) of the first K step (8 dword rows), second in its dword, in column chunk 1; a
    # step's lines go chunk by chunk, so chunk 1 starts after chunk 0's 8 GRFs (16 elements each)
    layout, _ = interleaved_line_layout(Var("b", PTR), BF16, 32, 16, 8, 2, 32)
    assert layout.offset(3, 9) == (8 + 1) * 16 + 1 * 2 + 1


def _b_plan(dt: str, wtag: str, config: Config):
    gemm = formulate(make_problem(RES_3X3, dt=dt, wtag=wtag))
    return plan_kernel(gemm, config, hw.XEHPG).b


@pytest.mark.parametrize(
    "dt, wtag, ops", [("bf16", "cdBa2b", 2), ("f16", "ABcd8b16a2b", 2), ("u8:s8:f32", "cdBa4b", 4)]
)
def test_without_slm_b_loads_in_block_lines_into_dpas_layout(dt, wtag, ops):
    b = _b_plan(dt, wtag, DPAS)
    assert b.plan == LinePlan(1, True, 8, interleave=ops)  # a GRF of VNNI rows per message
    assert not b.needs_reorder  # the lines are where dpas reads them: no moves
    assert len(b.lines) == DPAS.k_block // ops


def test_without_slm_wider_lines_reorder_whole_registers():
    """With two column blocks a line of 16 columns (two GRFs) halves the messages; its registers
    go into dpas's layout a GRF at a time (one move each), where the plain layout's interleave
    moves elements."""
    config = replace(DPAS, n_tile=16)
    b = _b_plan("bf16", "cdBa2b", config)
    assert b.plan.interleave == 2
    grfs = config.k_block * config.n_tile * 2 // hw.XEHPG.grf_bytes
    moves = 0 if not b.needs_reorder else reorder_moves(b.fma, b.load, hw.XEHPG)
    assert moves <= grfs
    plain = _b_plan("bf16", "cdba", config)
    assert reorder_moves(plain.fma, plain.load, hw.XEHPG) >= 2 * max(moves, grfs)


@pytest.mark.parametrize("dt, wtag", [("bf16", "cdBa2b"), ("u8:s8:f32", "cdBa4b")])
def test_with_slm_slices_load_in_block_lines_and_store_unpacked(dt, wtag):
    b = _b_plan(dt, wtag, replace(DPAS, slm=1))
    assert b.slm is not None
    assert (
        isinstance(b.slm.slice_plan, LinePlan)
        and b.slm.slice_plan.interleave == 4 // make_problem(RES_3X3, dt=dt).type_of("wei").size
    )
    assert not b.slm.needs_packing  # stored as loaded: the SLM tile is dpas's layout too


@pytest.mark.parametrize("slm", [0, 1])
def test_the_loop_has_no_interleave_moves(slm):
    """The compiled K loop moves no 16-bit element with the interleaved layout; the plain one
    interleaves B's K pairs with word moves."""

    def loop_word_moves(wtag: str) -> int:
        problem = make_problem(RES_3X3, dt="bf16", wtag=wtag)
        compilation = compile_problem(problem, "xehpg", {**_overrides(DPAS), "n_tile": 16, "slm": slm})
        instructions = compilation.compiled.instructions
        loop = inner_loop(instructions)
        assert loop is not None
        body = instructions[loop.start : loop.end + 1]
        return sum(i.opcode == "mov" and str(i.dst.type) in ("uw", "w", "hf", "bf") for i in body)

    assert loop_word_moves("cdBa2b") == 0
    assert loop_word_moves("cdba") >= 32


def _overrides(config: Config) -> dict:
    keys = ("fma", "simd", "tg_m", "tg_n", "m_tile", "n_tile", "k_block")
    return {key: getattr(config, key) for key in keys}


@pytest.mark.parametrize(
    "desc, hw_name, direction, dt, wtag, overrides",
    [
        # the GEMM plan, whose B the interleaved weights are (unstaged, the model may take the
        # swapped product)
        (RES_3X3, "xehpg", "FWD_B", "bf16", "cdBa2b", {"slm": 0, "plan": "gemm"}),
        (RES_3X3, "xehpg", "FWD_B", "bf16", "cdBa2b", {"slm": 1}),
        ("g2mb1ic32ih6oc32oh6kh3ph1", "xehpg", "FWD_B", "f16", "adeCb2c", {}),  # grouped
        ("mb1ic64ih6oc32oh6kh3ph1", "xehpg", "FWD_B", "u8:s8:f32", "cdBa4b", {}),
        # OIhw16i16o2i; the GEMM plan (the model may take the swapped product, whose weights are A)
        ("mb1ic32ih6oc64oh6kh3ph1", "xehpc", "FWD_B", "bf16", "ABcd16b16a2b", {"plan": "gemm"}),
        ("mb1ic32ih8oc32oh8kh3ph1", "xehpg", "BWD_D", "bf16", "cdAb2a", {}),
        ("mb1ic32ih8oc32oh4kh3sh2ph1", "xehpg", "BWD_D", "f16", "cdAb2a", {}),  # stride phases
    ],
)
def test_interleaved_kernels_verify(desc, hw_name, direction, dt, wtag, overrides, iga64, ocloc):
    compilation = check_end_to_end(
        parse_descriptor(desc), hw_name, direction, dt, seed=3, overrides=overrides, tags={"wtag": wtag}
    )
    assert compilation.problem.wei_layout().tag == wtag
    b = plan_kernel(formulate(compilation.problem), compilation.config, hw.platform(hw_name)).b
    plan = b.plan if b.slm is None else b.slm.slice_plan
    assert isinstance(plan, LinePlan) and plan.interleave == 4 // compilation.problem.type_of("wei").size


def test_any_offers_the_interleaved_layout_to_dpas_forward_and_backward_data():
    problem = make_problem(RES_3X3, dt="bf16")
    default, interleaved = weights_choices(problem, hw.XEHPG)
    assert (default.wei_layout().tag, interleaved.wei_layout().tag) == ("cdba", "cdBa2b")
    assert weights_choices(make_problem(RES_3X3, dt="u8:s8:f32"), hw.XEHPC)[1].wei_layout().tag == "cdBa4b"
    grouped = make_problem("g2mb1ic32ih6oc32oh6kh3ph1", dt="f16")
    assert weights_choices(grouped, hw.XEHPG)[1].wei_layout().tag == "adeCb2c"
    backward = make_problem(RES_3X3, "BWD_D", dt="bf16")  # N = ic, K = oc: output-channel pairs
    assert weights_choices(backward, hw.XEHPG)[1].wei_layout().tag == "cdAb2a"
    for alone in (
        weights_choices(problem, hw.XELP),  # no dpas
        weights_choices(make_problem(RES_3X3, dt="f32"), hw.XEHPG),  # no dpas for f32
        weights_choices(make_problem(RES_3X3, dt="bf16", wtag="cdba"), hw.XEHPG),  # given explicitly
        weights_choices(make_problem(RES_3X3, "BWD_W", dt="bf16"), hw.XEHPG),
        weights_choices(make_problem("mb1ic3ih32oc16oh16kh3sh2ph1", dt="bf16"), hw.XEHPG),  # a first layer
        weights_choices(make_problem("g16mb1ic16ih8oc16oh8kh3ph1", dt="bf16"), hw.XEHPG),  # depthwise
    ):
        assert len(alone) == 1


SMALL = "mb1ic32ih8oc32oh8kh1ph0"  # its interleaved kernel models faster on XeHPG (bf16)


def test_any_keeps_the_faster_kernel_and_verifies_in_its_layout():
    problem = make_problem(SMALL, dt="bf16")
    compilation = compile_problem(problem, "xehpg")
    assert compilation.problem.wei_layout().tag == "cdBa2b"
    default = compile_problem(replace(problem, wtag="cdba"), "xehpg")
    assert modeled_cycles(compilation).device < modeled_cycles(default).device
    # the simulator lays the weights out as the kernel reads them
    result = verify(compilation, 5)
    assert result.ok and not result.run.hazards
    # the IR the interpreter checks is the same choice
    assert build_kernel(problem, "xehpg").problem.wei_layout().tag == "cdBa2b"


def test_any_keeps_the_faster_layout_in_the_configuration_the_model_chose():
    """resnet_50's res3a_branch2b, bf16 on XeHPG: `any` gives the kernel the model chose with the
    default layout, or that configuration with the weights interleaved where the model prices it
    lower (the default on a tie); both computed here with the configuration and layout given."""
    problem = make_problem("mb1ic128ih28oc128oh28kh3ph1", dt="bf16")
    chosen = compile_problem(problem, "xehpg")
    config = asdict(chosen.config)
    default = modeled_cycles(compile_problem(replace(problem, wtag="cdba"), "xehpg", config)).device
    interleaved = modeled_cycles(compile_problem(replace(problem, wtag="cdBa2b"), "xehpg", config)).device
    assert chosen.problem.wei_layout().tag == ("cdBa2b" if interleaved < default else "cdba")
    assert modeled_cycles(chosen).device == min(default, interleaved)


def test_rows_with_in_bounds_conditions_of_their_own_are_not_interleaved():
    """A line's mask is its first element's: the rows it interleaves must share their conditions."""
    gemm = formulate(make_problem(RES_3X3, dt="bf16", wtag="cdBa2b"))
    assert interleaved_lengths(gemm.b, gemm, hw.XEHPG, (32, 8), (32, 8)) == (2, [8, 4, 2, 1])
    plain = gemm.b.mapping

    def bounded(v):
        indices, masks = plain(v)
        return indices, [*masks, (v("ic") + 1).below(64)]

    view = replace(gemm.b, mapping=bounded)
    assert interleaved_lengths(view, gemm, hw.XEHPG, (32, 8), (32, 8)) == (0, [])
