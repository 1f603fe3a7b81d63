"""The 2D block plans of dpas operands (XeHPC): which views are surfaces, that the blocks put
every element where dpas reads it, and kernels that use them verified in the simulator against
numpy and the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from xegen import hw as hwlib
from xegen.conv import make_problem, parse_descriptor
from xegen.conv.check import compare, random_inputs
from xegen.ir import Call, Send, Var, walk
from xegen.ir.types import PTR
from xegen.oracles import ocloc_validate
from xegen.pipeline import build_kernel
from xegen.plan.block2d import block2d_plan, direct_blocks, surface
from xegen.plan.config import Config
from xegen.plan.gemm import formulate
from xegen.plan.kernel import plan_kernel
from xegen.plan.tiles import dense_layout

from ..lower.harness import compile_conv, iga_report, run_conv, run_conv_ir

XEHPC = hwlib.platform("xehpc")
ONE_BY_ONE = "mb1ic256ih56oc64oh56kh1ph0"  # res2b_branch2a: A is the pixels x channels matrix


def gemm_of(desc: str, direction: str = "FWD_B", dt: str = "bf16"):
    return formulate(make_problem(parse_descriptor(desc), direction, dt, mb=1))


def dpas(m: int = 16, n: int = 32, k: int = 32, slm: int = 0) -> Config:
    return Config("dpas", 16, 2, 2, m, n, k, slm=slm)


def test_surfaces_of_a_one_by_one_forward_convolution():
    gemm = gemm_of(ONE_BY_ONE)
    a, b = surface(gemm.a, gemm), surface(gemm.b, gemm)
    # A: rows are the 56 x 56 pixels, 256 bf16 channels (512 bytes) each; B: 256 rows of 64 channels
    assert (a.row_dim, a.base, a.width, a.height, a.pitch) == (0, 0, 512, 56 * 56, 512)
    assert (b.row_dim, b.base, b.width, b.height, b.pitch) == (0, 0, 128, 256, 128)


@pytest.mark.parametrize(
    "desc",
    [
        "mb1ic64ih56oc64oh56kh3ph1",  # padding: rows of A have holes
        "g1mb1ic256ih56iw56oc128oh28ow28kh1kw1sh2sw2ph0pw0",  # stride 2
        "mb1ic128ih28oc128oh28kh3ph0",
    ],
)  # 3x3 windows overlap
def test_a_of_padded_strided_or_windowed_convolutions_is_no_surface(desc):
    gemm = gemm_of(desc)
    assert surface(gemm.a, gemm) is None
    assert surface(gemm.b, gemm) is not None  # the weights still are


def test_backward_data_weights_are_a_transposed_surface():
    """BWD_D's B (K = oc x N = ic) has K contiguous: N indexes the rows, and the blocks are
    transposed dwords of two K values each."""
    gemm = gemm_of(ONE_BY_ONE, "BWD_D")
    found = surface(gemm.b, gemm)
    assert found is not None and found.row_dim == 1
    plan = direct_blocks(dpas(), gemm, XEHPC, "b")
    assert plan is not None and plan.message.transform == "transpose" and plan.ops == 2
    assert (plan.message.count, plan.message.elems) == (8, 16)  # 8 dwords of K by 16 columns of N


def test_blocks_per_tile():
    gemm = gemm_of(ONE_BY_ONE)
    a, b = direct_blocks(dpas(), gemm, XEHPC, "a"), direct_blocks(dpas(), gemm, XEHPC, "b")
    # A: one block of 16 rows per K step of 16 bf16; B: one VNNI block per K step and 16 columns
    assert [(x.row, x.col) for x in a.blocks] == [(0, 0), (0, 16)]
    assert (a.message.count, a.message.elems, a.message.transform) == (16, 16, "none")
    assert [(x.row, x.col) for x in b.blocks] == [(0, 0), (0, 16), (16, 0), (16, 16)]
    assert (b.message.count, b.message.elems, b.message.transform) == (16, 16, "vnni")
    assert [x.register for x in b.blocks] == [0, 512, 1024, 1536]


def test_only_where_the_layout_matches_and_the_platform_has_them():
    gemm = gemm_of(ONE_BY_ONE)
    row_major = dense_layout(Var("b_load", PTR), gemm.b.type, 32, 32)  # not dpas's VNNI form
    assert block2d_plan(gemm.b, gemm, dpas(), XEHPC, "b", row_major) is None
    for name in ("xehpg", "xelp"):
        assert direct_blocks(dpas(), gemm, hwlib.platform(name), "a") is None
    assert direct_blocks(dpas(slm=1), gemm, XEHPC, "a") is None
    assert direct_blocks(Config("mad", 16, 2, 2, 8, 32, 16), gemm_of(ONE_BY_ONE, dt="f32"), XEHPC, "a") is None


def test_plan_loads_without_reorder():
    gemm = gemm_of(ONE_BY_ONE)
    plan = plan_kernel(gemm, dpas(), XEHPC)
    for op in (plan.a, plan.b):
        assert op.plan is not None and type(op.plan).__name__ == "Block2dPlan"
        assert not op.needs_reorder and op.lines == []


SCALED = [  # (descriptor, direction, types, config): A and B as surfaces, tiles past the edges
    ("mb1ic32ih6oc48oh6kh1ph0", "FWD_B", "bf16", {"slm": 0, "m_tile": 16, "n_tile": 32, "k_block": 32}),
    ("mb1ic64ih5oc32oh5kh1ph0", "FWD_B", "bf16", {"slm": 0, "m_tile": 32, "n_tile": 16, "k_block": 16, "tg_k": 2}),
    ("mb1ic48ih4oc32oh4kh1ph0", "BWD_D", "bf16", {"slm": 0, "m_tile": 8, "n_tile": 16, "k_block": 32}),
    ("mb1ic32ih5oc64oh5kh1ph0", "FWD_D", "f16", {"slm": 0, "m_tile": 8, "n_tile": 32, "k_block": 16}),
    ("mb1ic64ih5oc80oh5kh1ph0", "FWD_B", "u8:s8:f32", {"slm": 0, "m_tile": 16, "n_tile": 32, "k_block": 64}),
]


@pytest.mark.parametrize("desc, direction, dt, overrides", SCALED, ids=[f"{d}-{dr}-{t}" for d, dr, t, _ in SCALED])
def test_block2d_kernels_verify_in_the_simulator(desc, direction, dt, overrides, iga64, ocloc):
    # the plain weights, a surface (`any` may take dpas's interleaved rows: `weights_choices`)
    problem = make_problem(parse_descriptor(desc), direction, dt, mb=1, wtag="cdba")
    kernel = build_kernel(problem, "xehpc", overrides)
    compiled = compile_conv(kernel, "xehpc", optimize=True)
    sends = [node.func for node in walk(kernel.body) if isinstance(node, Call) and isinstance(node.func, Send)]
    assert {f.transform for f in sends if f.kind == "block2d"} == (
        {"none", "transpose"} if direction == "BWD_D" else {"none", "vnni"}
    )
    tensors = random_inputs(problem, 3)
    got, _ = run_conv(kernel, compiled, tensors)
    for result in compare(problem, got, tensors):
        assert result.ok, result
    expected = run_conv_ir(kernel, kernel.body, tensors)
    for name in got:
        assert np.array_equal(got[name], expected[name], equal_nan=True), name
    assert iga_report(compiled.code, "xehpc") == ""
    valid, report = ocloc_validate(compiled.zebin())
    assert valid, report
