"""The estimate counts what a mad kernel pays to unpack K rows into components: one coordinate per
iteration where the group's K blocks divide K's innermost component, one per row where they do
not and a view reads K a row per message (backward weights' K is (oh, ow): a 56-wide image in
blocks of 16 divides each row by 56)."""

from __future__ import annotations

from dataclasses import replace

from xegen import hw
from xegen.conv import make_problem
from xegen.modeling import modeled_cycles
from xegen.pipeline import compile_problem
from xegen.plan import choose_config, formulate
from xegen.plan.estimate import _k_unpacks

RES2A_BRANCH2B = "mb1ic64ih56oc64oh56kh3ph1"  # BWD_WB: K = oh x ow = 56 x 56
RES4A_BRANCH2B = "mb1ic256ih14oc256oh14kh3ph1"  # BWD_WB: K = 14 x 14


def test_unpacks_per_row_only_where_the_k_blocks_do_not_divide_the_innermost_component():
    gemm = formulate(make_problem(RES2A_BRANCH2B, "BWD_WB", "bf16"))
    assert [c.size for c in gemm.k.components][-1] == 56
    config = choose_config(gemm, hw.platform("xelp"), {"fma": "mad"})
    # 56 = 3 x 16 + 8: a block of 16 rows crosses a row of the image, so each row is unpacked
    assert _k_unpacks(replace(config, k_block=16, tg_k=1), gemm) == 16
    # 56 = 7 x 8: the block's rows share the components of its first
    assert _k_unpacks(replace(config, k_block=8, tg_k=1), gemm) == 1
    assert _k_unpacks(replace(config, k_block=4, tg_k=2), gemm) == 1
    # in f32 mad reads A in place, gathered a K row per lane: one vector unpack per message
    gathered = formulate(make_problem(RES2A_BRANCH2B, "BWD_WB", "f32"))
    assert _k_unpacks(replace(config, k_block=16, tg_k=1), gathered) == 1
    # a 1x1 stride-1 layer's pixels are addressed linearly by both views: nothing is unpacked
    pointwise = formulate(make_problem("mb1ic128ih28oc512oh28kh1ph0", "BWD_WB", "f32"))
    assert 28 % 16 and _k_unpacks(replace(config, k_block=8, tg_k=2), pointwise) == 1
    # forward K is (kh, kw, ic) with 64 channels innermost: aligned at any block up to 64
    forward = formulate(make_problem(RES2A_BRANCH2B, "FWD_B", "f32"))
    assert _k_unpacks(replace(config, k_block=16, tg_k=4), forward) == 1


def test_xelp_bf16_backward_weights_take_blocks_that_divide_the_image_width():
    """With the rows' divisions counted, XeLP's bf16 BWD_WB of res2a_branch2b takes a K block
    that divides 56, and the model agrees it is faster than the block of 16 it took before."""
    problem = make_problem(RES2A_BRANCH2B, "BWD_WB", "bf16")
    chosen = compile_problem(problem, "xelp")
    assert chosen.config.fma == "mad" and 56 % (chosen.config.k_block * chosen.config.tg_k) == 0
    wide = compile_problem(problem, "xelp", {"k_block": 16, "tg_k": 1})
    assert modeled_cycles(chosen).device < modeled_cycles(wide).device


def test_k_blocks_of_whole_rows_where_8_would_straddle_them():
    """Backward weights of a 14-wide image: mad is offered K blocks of 7 (whole rows of pixels,
    one unpacking per block), and the model finds the heuristic's kernel faster than the block of
    4 (which straddles rows, 14 = 3 x 4 + 2) it took before."""
    from xegen.plan.heuristic import _tile_options

    gemm = formulate(make_problem(RES4A_BRANCH2B, "BWD_WB", "bf16"))
    assert [c.size for c in gemm.k.components][-1] == 14
    assert 7 in _tile_options("mad", 16, gemm, hw.platform("xelp"))[2]
    forward = formulate(make_problem(RES4A_BRANCH2B, "FWD_B", "bf16"))  # K's innermost: 256 channels
    assert 7 not in _tile_options("mad", 16, forward, hw.platform("xelp"))[2]
    # f32 gathers A in place (a K row per lane), a 1x1 stride-1 layer addresses its pixels
    # linearly: neither unpacks K row by row, and an odd block would only cost messages
    in_place = formulate(make_problem(RES4A_BRANCH2B, "BWD_WB", "f32"))
    assert 7 not in _tile_options("mad", 16, in_place, hw.platform("xelp"))[2]
    pointwise = formulate(make_problem("mb1ic256ih14oc1024oh14kh1ph0", "BWD_WB", "bf16"))
    assert 7 not in _tile_options("mad", 16, pointwise, hw.platform("xelp"))[2]
    problem = make_problem(RES4A_BRANCH2B, "BWD_WB", "bf16")
    chosen = compile_problem(problem, "xelp")
    assert chosen.config.k_block == 7
    straddling = compile_problem(problem, "xelp", {"k_block": 4})
    assert modeled_cycles(chosen).device < modeled_cycles(straddling).device
