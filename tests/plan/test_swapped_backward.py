"""The swapped product of stride-1 backward data (plan=swapped, `plan.gemm._swapped`):
diff_src^T = wei^T x diff_dst^T, input channels along M and pixels along N.  Its kernels verify in
the simulator and pass Intel's tools; the model prices it in its own GEMM's terms and chooses it
only where it is faster; strided backward data, backward weights and groups are refused by name."""

from __future__ import annotations

import pytest

from xegen import hw
from xegen.cli import main
from xegen.conv import make_problem, parse_descriptor
from xegen.errors import ConfigError
from xegen.modeling import modeled_cycles, workload
from xegen.pipeline import compile_problem
from xegen.plan import formulate
from xegen.plan.heuristic import swaps

from ..test_end_to_end import check_end_to_end

SMALL_3X3 = "mb1ic32ih10oc48oh10kh3ph1"


@pytest.mark.parametrize(
    "desc, hw_name, dt, mb",
    [
        (SMALL_3X3, "xehpc", "bf16", 1),
        (SMALL_3X3, "xehpg", "f16", 1),
        ("mb2ic24ih9oc40oh9kh3ph1", "xehpg", "bf16", None),  # two images, tiles past both ends
        ("mb1ic32ih8oc32oh8kh3ph2dh1", "xehpc", "bf16", 1),  # dilated
    ],
)
def test_swapped_backward_data_kernels_verify(desc, hw_name, dt, mb, iga64, ocloc):
    compilation = check_end_to_end(
        parse_descriptor(desc), hw_name, "BWD_D", dt, seed=7, overrides={"plan": "swapped"}, mb=mb
    )
    assert compilation.config.plan == "swapped"
    assert compilation.problem.desc.mb == (mb or parse_descriptor(desc).mb)


def test_the_swapped_backward_data_gemm_has_the_weights_as_a():
    problem = make_problem(SMALL_3X3, "BWD_D", "bf16")
    gemm = formulate(problem, "swapped")
    assert gemm.swapped and (gemm.a.tensor, gemm.b.tensor, gemm.c.tensor) == ("wei", "dst", "src")
    # M: the input channels, N: the input pixels, K: the taps times the output channels
    assert (gemm.m.size, gemm.n.size, gemm.k.size) == (32, 10 * 10, 3 * 3 * 48)
    assert gemm.bias is None and (gemm.a.dims, gemm.b.dims, gemm.c.dims) == (("m", "k"), ("k", "n"), ("m", "n"))
    # the model's workload in the swapped GEMM's terms: A is the weights' bytes (48*32*3*3 bf16)
    swapped, plain = workload(problem, "swapped"), workload(problem)
    assert swapped.a_bytes == 48 * 32 * 9 * 2 == plain.b_bytes
    assert swapped.b_bytes == 48 * 10 * 10 * 2 == plain.a_bytes
    assert swapped.c_bytes == 32 * 10 * 10 * 2 == plain.c_bytes


def test_the_model_takes_the_swapped_backward_data_product_where_it_prices_it_lower():
    """A 3x3 stride-1 layer on XeHPC in bf16 (measured: 1,279 modeled cycles swapped against 2,072
    plain).  The kernel compile_problem keeps is the cheaper of the two under the model."""
    problem = make_problem("mb1ic64ih14oc64oh14kh3ph1", "BWD_D", "bf16")
    assert swaps(formulate(problem), hw.XEHPC)
    cycles = {
        plan: modeled_cycles(compile_problem(problem, "xehpc", {"plan": plan})).device for plan in ("gemm", "swapped")
    }
    assert cycles["swapped"] < cycles["gemm"]
    chosen = compile_problem(problem, "xehpc")
    assert chosen.config.plan == "swapped" and modeled_cycles(chosen).device == cycles["swapped"]


def test_the_model_does_not_weigh_the_swap_for_backward_data_where_it_cannot_help():
    one_by_one = make_problem("mb1ic64ih14oc64oh14kh1ph0", "BWD_D", "bf16")  # 2D blocks, nothing moved
    f32 = make_problem("mb1ic64ih14oc64oh14kh3ph1", "BWD_D", "f32")  # mad: no dpas layout to gather into
    strided = make_problem("mb1ic64ih14oc64oh7kh3sh2ph1", "BWD_D", "bf16")  # stride phases
    for problem in (one_by_one, strided):
        assert not swaps(formulate(problem), hw.XEHPC), problem.desc
    assert not swaps(formulate(f32), hw.XEHPG)


@pytest.mark.parametrize(
    "desc, direction, reason",
    [
        ("mb1ic32ih10oc48oh5kh3sh2ph1", "BWD_D", "strided backward data keeps the plain product"),
        (SMALL_3X3, "BWD_W", "backward weights keep the plain product"),
        (SMALL_3X3, "BWD_WB", "backward weights keep the plain product"),
        ("g2mb1ic32ih10oc48oh10kh3ph1", "BWD_D", "grouped convolutions keep the plain product"),
    ],
)
def test_what_the_swapped_product_does_not_apply_to_in_backward_is_refused(desc, direction, reason):
    problem = make_problem(desc, direction, "bf16")
    with pytest.raises(ConfigError, match=f"plan=swapped: {reason}"):
        compile_problem(problem, "xehpc", {"plan": "swapped"})


def test_the_cli_says_why_strided_backward_data_keeps_the_plain_product(capsys):
    desc = "mb1ic32ih10oc48oh5kh3sh2ph1"
    status = main(["conv", desc, "--dir", "BWD_D", "--hw", "xehpc", "--config", "plan=swapped", "--no-cache"])
    err = capsys.readouterr().err.strip()
    expected = "xegen: error: plan=swapped: strided backward data keeps the plain product (its stride phases)"
    assert status == 2 and err == expected
