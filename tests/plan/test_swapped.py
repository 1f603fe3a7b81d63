"""The swapped forward product (plan=swapped, `plan.gemm._swapped`): dst^T = wei^T x src^T,
output channels along M and pixels along N.  Its kernels verify in the simulator and pass Intel's
tools; the bias lies along M; the model prices it in its own GEMM's terms and chooses it only
where it is faster; what it does not apply to is refused by name."""

from __future__ import annotations

import re

import pytest

import xegen
from xegen import hw
from xegen.cli import main
from xegen.conv import make_problem, parse_descriptor
from xegen.errors import ConfigError
from xegen.ir import Call, Send, walk
from xegen.modeling import modeled_cycles, workload
from xegen.pipeline import compile_problem
from xegen.plan import formulate, plan_kernel
from xegen.plan.block2d import Surface, surface
from xegen.plan.config import KEYS
from xegen.plan.estimate import Estimator, staging
from xegen.plan.gemm import swapped_weights, weights_choices
from xegen.plan.heuristic import choose_config, swaps
from xegen.plan.space import problem_space

from ..test_end_to_end import check_end_to_end

SMALL_3X3 = "mb1ic32ih10oc48oh10kh3ph1"


@pytest.mark.parametrize(
    "desc, hw_name, dt, overrides",
    [
        (SMALL_3X3, "xehpc", "bf16", {}),
        (SMALL_3X3, "xehpg", "f16", {}),
        (SMALL_3X3, "xehpg", "u8:s8:u8", {}),
        ("mb2ic24ih9oc40oh9kh3ph1", "xehpg", "bf16", {}),  # two images, tiles past both ends
        ("mb1ic32ih7oc64oh4kh3sh2ph1", "xehpg", "bf16", {}),  # stride 2
        ("mb1ic64ih12oc64oh12kh3ph1", "xehpc", "bf16:bf16:f32", {"k_split": 2}),  # the bias of one K slice
        ("mb1ic16ih9oc24oh9kh3ph1", "xelp", "f32", {"fma": "mad"}),
        # staged through SLM (given: the heuristic does not offer it), double-buffered
        (SMALL_3X3, "xehpc", "bf16", {"slm": 1, "tg_m": 2, "tg_n": 2, "slm_bufs": 2}),
        ("mb2ic24ih9oc40oh9kh3ph1", "xehpg", "f16", {"slm": 1, "tg_m": 2, "tg_n": 2, "slm_bufs": 2}),
    ],
)
def test_swapped_kernels_verify(desc, hw_name, dt, overrides, iga64, ocloc):
    compilation = check_end_to_end(
        parse_descriptor(desc), hw_name, "FWD_B", dt, seed=5, overrides={"plan": "swapped", **overrides}, mb=None
    )
    assert compilation.config.plan == "swapped"
    assert all(getattr(compilation.config, key) == value for key, value in overrides.items())


def test_an_elementwise_post_op_applies_to_the_swapped_product(iga64, ocloc):
    problem = make_problem("mb1ic24ih9oc40oh9kh3ph1", "FWD_B", "f16", post_ops="relu")
    compilation = check_end_to_end(
        problem.desc, "xehpc", "FWD_B", "f16", seed=2, overrides={"plan": "swapped"}, tags={"post_ops": "relu"}
    )
    assert compilation.config.plan == "swapped"


def test_the_swapped_gemm_has_the_weights_as_a_and_the_bias_along_m():
    problem = make_problem(SMALL_3X3, "FWD_B", "bf16")
    gemm = formulate(problem, "swapped")
    assert gemm.swapped and (gemm.a.tensor, gemm.b.tensor, gemm.c.tensor) == ("wei", "src", "dst")
    assert (gemm.m.size, gemm.n.size, gemm.k.size) == (48, 10 * 10, 3 * 3 * 32)
    assert gemm.bias is not None and gemm.bias.dims == ("m",)
    # the model's workload in the swapped GEMM's terms: A is the weights' bytes (48*32*3*3 bf16)
    swapped, plain = workload(problem, "swapped"), workload(problem)
    assert swapped.a_bytes == 48 * 32 * 9 * 2 == plain.b_bytes
    assert swapped.b_bytes == 32 * 10 * 10 * 2 == plain.a_bytes


def test_the_model_takes_the_swapped_product_where_it_prices_it_lower():
    """A 3x3 layer on XeHPC in bf16: the plain product gathers its pixels and moves them into A's
    rows; the swapped one gathers them straight into B.  The kernel compile_problem keeps is the
    cheaper of the two under the model, and here that is the swapped one."""
    problem = make_problem("mb1ic64ih14oc64oh14kh3ph1", "FWD_B", "bf16")
    assert swaps(formulate(problem), hw.XEHPC)
    chosen = compile_problem(problem, "xehpc")
    plain = compile_problem(problem, "xehpc", {"plan": "gemm"})
    swapped = compile_problem(problem, "xehpc", {"plan": "swapped"})
    chosen_cycles, plain_cycles, swapped_cycles = (modeled_cycles(c).device for c in (chosen, plain, swapped))
    assert chosen_cycles == min(plain_cycles, swapped_cycles)
    assert chosen.config.plan == "swapped" and swapped_cycles < plain_cycles


def test_the_model_does_not_weigh_the_swap_where_it_cannot_help():
    one_by_one = make_problem("mb1ic64ih14oc64oh14kh1ph0", "FWD_B", "bf16")  # 2D blocks, nothing moved
    f32 = make_problem("mb1ic64ih14oc64oh14kh3ph1", "FWD_B", "f32")  # mad: no dpas layout to gather into
    first = make_problem("mb1ic3ih32oc64oh16kh7sh2ph3", "FWD_B", "bf16")  # plan=first's
    for problem in (one_by_one, f32, first):
        assert not swaps(formulate(problem), hw.XEHPC), problem.desc


@pytest.mark.parametrize(
    "desc, direction, options, reason",
    [
        (SMALL_3X3, "BWD_W", {}, "backward weights keep the plain product"),
        ("g2mb1ic32ih10oc48oh10kh3ph1", "FWD_B", {}, "grouped convolutions keep the plain product"),
        (SMALL_3X3, "FWD_B", {"post_ops": "sum"}, "post-ops or quantization that read tensors"),
    ],
)
def test_what_the_swapped_product_does_not_apply_to_is_refused(desc, direction, options, reason):
    problem = make_problem(desc, direction, "bf16", **options)
    with pytest.raises(ConfigError, match=f"plan=swapped: {reason}"):
        compile_problem(problem, "xehpc", {"plan": "swapped"})


def test_a_swapped_configuration_is_planned_from_the_swapped_gemm_only():
    problem = make_problem(SMALL_3X3, "FWD_B", "bf16")
    with pytest.raises(ConfigError, match="is planned from the GEMM formulate"):
        plan_kernel(formulate(problem), compile_problem(problem, "xehpc", {"plan": "swapped"}).config, hw.XEHPC)


def test_the_cli_says_why_plan_swapped_does_not_apply(capsys):
    status = main(["conv", SMALL_3X3, "--dir", "BWD_W", "--hw", "xehpc", "--config", "plan=swapped", "--no-cache"])
    err = capsys.readouterr().err.strip()
    assert status == 2 and err == "xegen: error: plan=swapped: backward weights keep the plain product"


def test_the_estimate_counts_the_swapped_product_s_moves_as_its_kernel_makes_them():
    """The swapped product gathers its pixels straight into dpas's VNNI B, and its weights rows
    take one move per row and K step pair (8 rows x 2 of a 32-channel K block): the kernel's loop
    holds those 16 moves of registers and no other.  The estimate used to price a move per element
    of both tiles (768 here), ranked the swapped configurations at up to five times the model and
    chose m_tile=8 k_block=16 tg_k=16 (1663 modeled cycles); counting the plan's moves, it is
    within a third of the model and chooses a kernel at least a tenth faster (k_block=32 tg_k=8,
    1420; since the partial sums of 16 threads along K are folded, k_block=16 tg_k=16 again, 1283,
    with 8 x 1 moves)."""
    # output channels innermost, as `any` was before it took `swapped_weights` on XeHPC
    problem = make_problem("mb1ic64ih14oc64oh14kh3ph1", "FWD_B", "bf16", wtag="cdba")
    gemm = formulate(problem, "swapped")
    config = choose_config(gemm, hw.XEHPC)
    moves = 8 * config.k_block // 16  # a move per row and K step pair of 16 bf16
    assert config.m_tile == 8
    assert staging(config, gemm, hw.XEHPC, "a").moves == moves and staging(config, gemm, hw.XEHPC, "b").moves == 0
    kernel = xegen.compile(problem, hw="xehpc", config=str(config).replace(" ", ","), tuned=False)
    assert len(re.findall(r"\bmov \(\d+\|M0\)\s+r[\d.]+<1>:uw\s+r", kernel.asm)) == moves
    cycles = kernel.summary.modeled.device_cycles
    assert Estimator(gemm, hw.XEHPC).cycles(config) == pytest.approx(cycles, rel=1 / 3)
    assert cycles < 0.9 * 1663


def test_on_xehpc_the_swapped_product_reads_each_output_channel_s_weights_as_one_row():
    """`any` becomes `[g] o k… i` for the swapped product where 2D blocks load (XeHPC): A = wei^T
    is then a row-major surface of 48 output channels, each a row of 3 * 3 * 32 bf16 = 576 bytes."""
    problem = make_problem(SMALL_3X3, "FWD_B", "bf16")
    rows = swapped_weights(problem, hw.XEHPC)
    assert rows.wei_layout().tag == "acdb"  # o, kh, kw, i
    gemm = formulate(rows, "swapped")
    assert surface(gemm.a, gemm) == Surface(row_dim=0, base=0, width=576, height=48, pitch=576)
    default = formulate(problem, "swapped")  # output channels innermost: K indexes the rows, A's blocks do not apply
    assert surface(default.a, default) == Surface(row_dim=1, base=0, width=96, height=288, pitch=96)
    assert weights_choices(problem, hw.XEHPC, "swapped") == (*weights_choices(problem, hw.XEHPC), rows)
    for other, platform in (
        (problem, hw.XEHPG),  # no 2D block loads
        (make_problem(SMALL_3X3, "FWD_B", "bf16", wtag="cdba"), hw.XEHPC),  # given explicitly
        (make_problem(SMALL_3X3, "BWD_D", "bf16"), hw.XEHPC),  # its swapped A is wei, not wei^T
    ):
        assert swapped_weights(other, platform) is other
    assert weights_choices(problem, hw.XEHPG, "swapped") == weights_choices(problem, hw.XEHPG)


@pytest.mark.parametrize(
    "dt, overrides",
    [("bf16", {}), ("f16", {"m_tile": 32, "tg_k": 2}), ("bf16:bf16:f32", {"k_split": 2})],  # 32 rows past oc48
)
def test_swapped_kernels_with_the_weights_as_rows_verify(dt, overrides, iga64, ocloc):
    compilation = check_end_to_end(
        parse_descriptor(SMALL_3X3), "xehpc", "FWD_B", dt, 3, {"plan": "swapped", **overrides}, {"wtag": "acdb"}
    )
    assert compilation.problem.wei_layout().tag == "acdb"
    assert all(getattr(compilation.config, key) == value for key, value in overrides.items())


def test_the_swapped_product_loads_its_weights_in_2d_blocks_on_xehpc():
    """With the weights as rows, A comes in one 2D block a K step and tile rows, already in dpas's
    layout: no gather, no moves into A's rows -- a shorter loop than the same configuration's with
    `any`'s default weights (output channels innermost), whose A is gathered and moved.  Asked
    for the swapped product, the compiler tries both layouts and keeps the rows here.  (Left to
    choose, it takes the plain product for this small layer: 895 modeled cycles against 916.)"""
    chosen = compile_problem(make_problem(SMALL_3X3, "FWD_B", "bf16"), "xehpc", {"plan": "swapped"})
    assert chosen.config.plan == "swapped" and chosen.problem.wei_layout().tag == "acdb"
    config = {key: getattr(chosen.config, key) for key in KEYS}
    default = compile_problem(make_problem(SMALL_3X3, "FWD_B", "bf16", wtag="cdba"), "xehpc", config)
    assert chosen.config == default.config
    blocks = [
        node.func
        for node in walk(chosen.kernel.body)
        if isinstance(node, Call) and isinstance(node.func, Send) and node.func.kind == "block2d"
    ]
    # A: 32 bytes (16 bf16 K values) by the tile's rows, no transform
    assert any(f.transform == "none" and f.count == 16 and f.elems == config["m_tile"] for f in blocks)
    assert chosen.compiled.stats.inner_loop_instructions < default.compiled.stats.inner_loop_instructions
    assert modeled_cycles(chosen).device <= modeled_cycles(default).device


def test_the_tuner_s_space_holds_the_swapped_product_of_both_weights_layouts():
    """On XeHPC the compiler compiles the swapped product with `any`'s default weights and the
    row weights (`pipeline.compile_problem`, `weights_choices`), so the tuner's space is checked
    against both swapped GEMMs besides the plain one; on XeHPG, without 2D blocks, one each."""
    problem = make_problem("mb1ic128ih28oc128oh28kh3ph1", "FWD_B", "bf16")
    given = {"k_block": 32, "n_tile": 16, "tg_k": 4, "slm": 0, "fma": "dpas"}
    for platform, tags in ((hw.XEHPC, ["cdba", "cdba", "acdb"]), (hw.XEHPG, ["cdba", "cdba"])):
        space, _ = problem_space(problem, platform, {**given, "simd": platform.dpas_exec_size})
        assert [s.gemm.swapped for s in space.spaces] == [False] + [True] * (len(tags) - 1)
        assert [s.gemm.problem.wei_layout().tag for s in space.spaces] == tags
        assert all(space.legal(c) for c in space.spaces[-1].legal_configs())
        # with plan=swapped given: the swapped product's spaces alone
        alone, _ = problem_space(problem, platform, {**given, "simd": platform.dpas_exec_size, "plan": "swapped"})
        assert [s.gemm.problem.wei_layout().tag for s in alone.spaces] == tags[1:]
