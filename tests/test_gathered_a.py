"""mad's A tile gathered a pixel per lane (`plan.kernel.reads_a_in_place`): one vector message
per four K elements of up to a message's worth of pixels, read by the multiply where the message
leaves it (component-major).

Checked in the plan (the layout, no reorder; not where A is widened), and end to end on small
padded convolutions whose tiles reach every edge: the simulator against numpy, iga64, ocloc."""

from __future__ import annotations

import pytest

from xegen import hw as hwlib
from xegen.conv import make_problem
from xegen.conv.descriptor import parse_descriptor
from xegen.plan import formulate
from xegen.plan.heuristic import choose_config
from xegen.plan.kernel import gathered_a, plan_kernel, reads_a_in_place
from xegen.plan.messages import LinePlan

from .test_end_to_end import check_end_to_end

# 3x3 with padding 1: 5x5 outputs, so 8-pixel tiles span rows and reach every padded edge
PADDED = "mb1ic16ih5oc16oh5kh3ph1"
UNPADDED = "mb1ic16ih5oc16oh5kh1ph0"  # 1x1: A's rows are pixels at a constant distance


def _plan(desc: str, hw: str, dt: str, overrides: dict):
    gemm = formulate(make_problem(parse_descriptor(desc), "FWD_B", dt))
    platform = hwlib.platform(hw)
    config = choose_config(gemm, platform, overrides)
    return gemm, config, plan_kernel(gemm, config, platform)


@pytest.mark.parametrize("hw", ["xehpg", "xelp"])
def test_mad_gathers_a_and_multiplies_it_in_place(hw):
    gemm, config, plan = _plan(PADDED, hw, "f32", {"fma": "mad", "m_tile": 8, "k_block": 16, "slm": 0})
    a = plan.a
    assert isinstance(a.plan, LinePlan) and a.plan.vector
    assert a.plan.lanes == 8 and a.plan.line_dim == 1  # a pixel (row of A) per lane, K along it
    assert a.fma is a.load  # no reorder: the multiply reads A where the messages leave it
    # component-major: K element k of pixel m at element k*8 + m (a message per 4 K elements)
    assert [a.load.offset(m, k) for m, k in ((0, 0), (1, 0), (0, 1), (7, 3), (0, 4))] == [0, 1, 8, 31, 32]


@pytest.mark.parametrize("hw, m_tile", [("xehpg", 7), ("xehpc", 8)])
def test_lanes_short_of_whole_registers_keep_block_messages(hw, m_tile):
    """7 lanes of dwords (XeHPG) or 8 (XeHPC's 64-byte registers) would land in a temporary and
    move component by component: A keeps a block message per row, in mad's row-major layout."""
    _, _, plan = _plan(PADDED, hw, "f32", {"fma": "mad", "m_tile": m_tile, "k_block": 16, "slm": 0})
    assert not plan.a.plan.vector
    assert plan.a.load.offset(0, 1) == 1  # K along a row


def test_seven_masked_rows_gather_as_eight_lanes_on_xelp():
    """XeLP (no add3: a block row's 64-bit address takes four instructions): a padded 7-row tile
    loads 8 pixels, the multiply reads 7; unmasked (1x1), the rows keep their block messages."""
    _, _, plan = _plan(PADDED, "xelp", "f32", {"fma": "mad", "m_tile": 7, "k_block": 8, "slm": 0})
    assert plan.a.plan.vector and plan.a.plan.lanes == 8
    assert plan.a.load.rows == 8 and plan.a.fma is plan.a.load
    assert plan.a.load.offset(6, 1) == 14  # K element 1 of the seventh pixel: 1*8 + 6
    _, _, plan = _plan(UNPADDED, "xelp", "f32", {"fma": "mad", "m_tile": 7, "k_block": 8, "slm": 0})
    assert not plan.a.plan.vector


def test_gathered_tile_priced_as_planned():
    """What the estimate charges (`gathered_a`'s messages, in block messages): one message of 8
    lanes per 4 K elements plus its vector of addresses, 4 + 1, where block messages take one a
    row (8); None where the lanes would not fill whole registers."""
    gemm = formulate(make_problem(parse_descriptor(PADDED), "FWD_B", "f32"))
    gathered = gathered_a(gemm.a, gemm, hwlib.platform("xehpg"), (8, 16), 16)
    assert gathered is not None and gathered.plan.lanes == 8 and gathered.messages == 4 + 1
    assert gathered_a(gemm.a, gemm, hwlib.platform("xehpg"), (7, 16), 16) is None
    assert gathered_a(gemm.a, gemm, hwlib.platform("xehpc"), (8, 16), 16) is None


def test_a_widened_on_the_way_is_not_read_in_place():
    """bf16 is widened to f32 for mad (a reorder), so its A keeps its own layout."""
    gemm = formulate(make_problem(parse_descriptor(PADDED), "FWD_B", "bf16"))
    config = choose_config(gemm, hwlib.platform("xelp"), {"fma": "mad"})
    assert not reads_a_in_place(config, gemm)
    assert reads_a_in_place(config, formulate(make_problem(parse_descriptor(PADDED), "FWD_B", "f32")))


GATHERED_CASES = [
    ("xehpg", PADDED, {"fma": "mad", "m_tile": 8, "n_tile": 16, "k_block": 16, "slm": 0}),  # 4 messages of 8 lanes
    ("xehpg", PADDED, {"fma": "mad", "m_tile": 16, "n_tile": 16, "k_block": 8, "slm": 0}),  # 16 lanes
    ("xelp", PADDED, {"fma": "mad", "m_tile": 8, "n_tile": 16, "k_block": 16, "slm": 0}),
    ("xelp", UNPADDED, {"fma": "mad", "m_tile": 8, "n_tile": 16, "k_block": 8, "slm": 0}),  # no masks
    ("xelp", PADDED, {"fma": "mad", "m_tile": 7, "n_tile": 16, "k_block": 8, "slm": 0}),  # 7 rows in 8 lanes
    ("xehpc", PADDED, {"fma": "mad", "m_tile": 16, "n_tile": 16, "k_block": 16, "slm": 0}),  # 64-byte registers
]


@pytest.mark.parametrize(
    "hw, desc, overrides",
    GATHERED_CASES,
    ids=[f"{hw}-{'3x3' if d == PADDED else '1x1'}-m{o['m_tile']}-k{o['k_block']}" for hw, d, o in GATHERED_CASES],
)
def test_gathered_a_end_to_end(hw, desc, overrides, iga64, ocloc):
    assert _plan(desc, hw, "f32", overrides)[2].a.plan.vector
    compilation = check_end_to_end(parse_descriptor(desc), hw, "FWD_B", "f32", seed=3, overrides=overrides)
    assert compilation.config.fma == "mad" and compilation.config.m_tile == overrides["m_tile"]


def test_gathered_f16_a_end_to_end(iga64, ocloc):
    """f16 stays f16 for mad (mixed mode): two K elements per dword of a lane."""
    overrides = {"fma": "mad", "m_tile": 8, "n_tile": 16, "k_block": 16, "slm": 0}
    plan = _plan(PADDED, "xelp", "f16", overrides)[2]
    assert plan.a.plan.vector and plan.a.fma is plan.a.load
    check_end_to_end(parse_descriptor(PADDED), "xelp", "FWD_B", "f16", seed=4, overrides=overrides)
