"""Without SLM, a dpas operand's messages are chosen with the moves that reorder them into dpas's
layout counted as the lowering emits them (`reorder_moves`: a stride no operand encodes moves
one element at a time), not the planner's price of SLM staging (`planned_moves`, which counts a
move per two GRFs written and undercounts those)."""

from __future__ import annotations

from xegen import hw
from xegen.conv import make_problem
from xegen.ir import Var
from xegen.ir.types import PTR
from xegen.plan import choose_config, formulate
from xegen.plan.kernel import global_cost, plan_direct, reorder_moves, vector_lanes
from xegen.plan.messages import line_plans
from xegen.plan.multiply import operand_layout
from xegen.plan.tiles import line_layout


def _totals(desc: str, direction: str, dt: str, platform: hw.Platform, operand: str):
    """(the exact total of the plan `plan_direct` takes, every line plan's exact total)."""
    gemm = formulate(make_problem(desc, direction, dt))
    config = choose_config(gemm, platform, {"slm": 0})
    view = gemm.a if operand == "a" else gemm.b
    extents = (config.m_tile, config.k_block) if operand == "a" else (config.k_block, config.n_tile)
    buffer = Var(f"{operand}_load", PTR)
    fma = operand_layout(config, gemm, operand, buffer, *extents, view.type)

    def total(messages: int, plan) -> int:
        load, _ = line_layout(buffer, view.type, *extents, plan.line_dim, plan.length, platform.grf_bytes, plan.lanes)
        moves = 0 if load.same_placement(fma) else reorder_moves(fma, load, platform)
        return global_cost(messages, config, platform) + moves

    options = line_plans(view, gemm, platform, extents, extents, vector_lanes=vector_lanes(config, platform))
    chosen, _, _ = plan_direct(operand, buffer, view, gemm, config, platform, extents, fma)
    taken = [total(messages, plan) for messages, plan in options if plan == chosen]
    return taken[0], [total(messages, plan) for messages, plan in options]


def test_backward_weights_diff_dst_takes_the_fewest_instructions_counted_exactly():
    # resnet_50's res2a_branch2a, bf16 on XeHPG: diff_dst (B, channels contiguous) gathered a K
    # row per lane goes into VNNI by one-element moves; the planner's former price undercounted
    # them and took 16 lanes where 8 cost fewer instructions
    taken, all_totals = _totals("mb1ic64ih56oc64oh56kh1ph0", "BWD_WB", "bf16", hw.XEHPG, "b")
    assert taken == min(all_totals)
    assert max(all_totals) > taken  # the choice matters here
