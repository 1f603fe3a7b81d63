"""A source zero point in the kernel IR, run in the interpreter against numpy (`check_ir`): the
loads fill what their masks drop (the padding) with the zero point, and the K loop sums the
weights of each output channel times the zero point (`reduce_columns`: a dpas of one row, a
dp4a or a mad), which the epilogue subtracts from the accumulators in s32.  Every multiply kind,
with SLM, with the K threads' reduction and with K split across groups."""

from __future__ import annotations

import pytest

from xegen.build import check_ir
from xegen.conv import make_problem
from xegen.errors import ConfigError
from xegen.ir import Alloc, Call, walk
from xegen.ir.funcs import Dp4a, Dpas, Mad
from xegen.pipeline import build_kernel

PADDED = "mb1ic16ih5oc32oh5kh3ph1"  # every border output reads padding
STRIDED = "mb1ic8ih7oc16oh3kh3sh2ph1"  # K = 72, not a whole number of K blocks


def loop_calls(kernel, func_type):
    return [node.func for node in walk(kernel.body) if isinstance(node, Call) and isinstance(node.func, func_type)]


def check(kernel):
    for comparison in check_ir(kernel, seed=2):
        assert comparison.ok, f"{kernel.problem}: {comparison}"


@pytest.mark.parametrize(
    "hw, desc, dt, zero_point, overrides, func_type, in_store_tile",
    [
        ("xehpg", PADDED, "u8:s8:u8", 255, {"fma": "dpas", "slm": 0}, Dpas, True),
        ("xehpg", STRIDED, "s8:s8:s8", -128, {"fma": "dpasw", "slm": 1}, Dpas, True),
        ("xehpc", PADDED, "s8:s8:f32", 127, {"tg_k": 2}, Dpas, False),  # the sums join the K threads' reduction
        ("xelp", STRIDED, "u8:s8:s8", 1, {"fma": "dp4a", "tg_k": 1, "m_tile": 8}, Dp4a, True),
        (
            "xelp",
            STRIDED,
            "u8:s8:s8",
            2,
            {"fma": "dp4a", "tg_k": 1, "m_tile": 2, "n_tile": 16},
            Dp4a,
            False,
        ),  # too small
        ("xelp", PADDED, "u8:s8:f32", 200, {"fma": "mad", "tg_k": 1}, Mad, True),
        ("xelp", PADDED, "u8:s8:f32", 0x80, {"fma": "mad", "tg_k": 2}, Mad, False),
    ],
)
def test_every_multiply_kind(hw, desc, dt, zero_point, overrides, func_type, in_store_tile):
    """... and the sums in registers of their own, or in the store tile (idle in the K loop)
    when it has room and the K threads do not reduce through it."""
    problem = make_problem(
        desc,
        "FWD_B",
        dt,
        "relu",
        scales="src:common:0.5+wei:per_oc",
        zero_points=f"src:common:{zero_point}+dst:common:-3",
    )
    kernel = build_kernel(problem, hw, overrides)
    if func_type is Dpas:  # the column sums: dpas calls of repeat count 1, besides the multiply's
        assert any(f.rcount == 1 and not f.dpasw for f in loop_calls(kernel, Dpas))
    else:
        assert loop_calls(kernel, func_type)
    own = {node.buffer.name for node in walk(kernel.body) if isinstance(node, Alloc)} & {"column_sums", "sum_row"}
    assert own == (set() if in_store_tile else {"column_sums", "sum_row"})
    check(kernel)


def test_k_split_subtracts_each_slices_share():
    """The compensation is linear: each K slice subtracts the zero point times its own weights."""
    problem = make_problem(STRIDED, "FWD_D", "u8:s8:s32", zero_points="src:common:77")
    check(build_kernel(problem, "xehpg", {"k_split": 2, "k_block": 32}))


def test_k_split_refuses_scales_and_dst_zero_points():
    for scales, zero_points in [("src:common:2", "src:common:1"), ("", "src:common:1+dst:common:1")]:
        problem = make_problem(STRIDED, "FWD_D", "u8:s8:s32", scales=scales, zero_points=zero_points)
        with pytest.raises(ConfigError, match="cannot be applied to partial sums"):
            build_kernel(problem, "xehpg", {"k_split": 2, "k_block": 32})


def test_row_plans_leave_it_to_the_gemm_plan():
    """The depthwise and first-layer plans refuse zero points; the heuristic takes the GEMM plan."""
    depthwise = make_problem("mb1g32ic32ih6oc32oh6kh3ph1", "FWD_B", "u8:s8:u8", zero_points="src:common:9")
    with pytest.raises(ConfigError, match="plan=depthwise: .*zero points"):
        build_kernel(depthwise, "xehpg", {"plan": "depthwise"})
    kernel = build_kernel(depthwise, "xehpg", {})
    assert kernel.config.plan == "gemm"
    check(kernel)
    first = make_problem("mb1ic3ih12oc16oh6kh3sh2ph1", "FWD_B", "u8:s8:f32", zero_points="src:common:250")
    with pytest.raises(ConfigError, match="plan=first: .*zero points"):
        build_kernel(first, "xehpc", {"plan": "first"})
    check(build_kernel(first, "xehpc", {}))


def test_blocked_layouts_with_padded_channels():
    """24 channels in blocks of 16: the K rows of the padded channels read zeros from the
    layouts' padding (A's are not the zero point there), which B's zeros make harmless."""
    problem = make_problem(
        "mb1ic24ih5oc24oh5kh3ph1", "FWD_B", "u8:s8:f32", zero_points="src:common:250", stag="nChw16c", wtag="OIhw16i16o"
    )
    check(build_kernel(problem, "xehpc", {}))


@pytest.mark.parametrize("hw", ["xelp", "xehpg", "xehpc"])
def test_with_post_ops_that_read_tensors(hw):
    """The sums in the store tile survive the loads of the old dst and a binary's tensor."""
    problem = make_problem(
        PADDED,
        "FWD_B",
        "u8:s8:u8",
        "sum:0.5:3:s8+add:f32:per_oc+relu",
        scales="wei:per_oc",
        zero_points="src:common:200+dst:common:2",
    )
    check(build_kernel(problem, hw, {"tg_k": 1}))
