"""The tile guard: a condition that masks every load of the thread's A tile (a padded layer's input
row, for a tile of pixels within one output row) skips the iteration instead, and the loads keep
only the masks that differ from pixel to pixel; only the registers of masked loads are zeroed.
The kernels check against numpy in the IR interpreter."""

from __future__ import annotations

import pytest

from xegen.build import check_ir
from xegen.build.messages import masked_fill
from xegen.conv import make_problem
from xegen.ir import Call, For, IfThenElse, Send, Store, Var, ptr, walk
from xegen.ir.types import BOOL, F32, PTR
from xegen.pipeline import build_lead
from xegen.plan.tiles import dense_layout

LAYER = "mb1ic16ih8oc16oh8kh3ph1"  # 8 pixels a row, a 3x3 tap reads the row above or below


def k_loop(kernel) -> For:
    loops = [node for node in walk(kernel.body) if isinstance(node, For)]
    return loops[0]


def a_loads(stmt, tensor: str) -> list[Call]:
    return [
        node
        for node in walk(stmt)
        if isinstance(node, Call) and isinstance(node.func, Send) and node.args[0].buffer.name == tensor
    ]


@pytest.mark.parametrize(
    "direction, tensor, hw",
    [("FWD_D", "src", "xehpg"), ("FWD_D", "src", "xelp"), ("BWD_D", "dst", "xehpg")],
)
def test_a_tile_within_one_row_skips_the_taps_of_rows_outside_the_input(direction, tensor, hw):
    # 4 pixels a tile, 2 tiles a row: the tap's row is inside the input for all 4 or for none;
    # its column is outside only for the first pixel (left padding) or the last (right padding)
    overrides = {"fma": "mad", "simd": 16, "m_tile": 4, "n_tile": 16, "k_block": 16, "tg_m": 1, "tg_k": 1, "slm": 0}
    kernel = build_lead(make_problem(LAYER, direction, "f32"), hw, overrides)
    loop = k_loop(kernel)
    guards = [node for node in walk(loop.body) if isinstance(node, IfThenElse)]
    assert len(guards) == 1
    loads = a_loads(loop.body, tensor)
    assert len(loads) == 4
    assert [load.args[-1] is not None for load in loads] == [True, False, False, True]
    fills = [node for node in walk(loop.body) if isinstance(node, Store)]
    assert len(fills) == 2  # the first and last pixel's registers
    for result in check_ir(kernel, seed=5):
        assert result.ok, result


def test_a_tile_across_rows_keeps_every_mask():
    # 3 pixels a tile: a tile may hold the end of one row and the start of the next
    overrides = {"fma": "mad", "simd": 16, "m_tile": 3, "n_tile": 16, "k_block": 16, "tg_m": 1, "tg_k": 1, "slm": 0}
    kernel = build_lead(make_problem(LAYER, "FWD_D", "f32"), "xehpg", overrides)
    loop = k_loop(kernel)
    assert not [node for node in walk(loop.body) if isinstance(node, IfThenElse)]
    assert all(load.args[-1] is not None for load in a_loads(loop.body, "src"))
    for result in check_ir(kernel, seed=5):
        assert result.ok, result


def test_a_multi_buffered_loop_keeps_its_masks_and_its_pipeline():
    # the scheduler pipelines a loop of plain statements: with gmem_bufs=2 no iteration is skipped,
    # and the loads of an iteration ahead go out in the ramp-up as well as in the loop
    overrides = {"fma": "mad", "simd": 16, "m_tile": 4, "n_tile": 16, "k_block": 16, "tg_m": 1, "tg_k": 1, "slm": 0}
    kernel = build_lead(make_problem(LAYER, "FWD_D", "f32"), "xehpg", {**overrides, "gmem_bufs": 2})
    assert kernel.config.gmem_bufs == 2
    assert not [node for node in walk(kernel.body) if isinstance(node, IfThenElse) and a_loads(node, "src")]
    loads = a_loads(kernel.body, "src")
    assert len(loads) > 4 and all(load.args[-1] is not None for load in loads)
    for result in check_ir(kernel, seed=5):
        assert result.ok, result


def test_masked_fill_zeroes_what_no_unmasked_load_writes_whole():
    grf = 32
    memory, buffer = Var("mem", PTR), Var("tile", PTR)
    layout = dense_layout(buffer, F32, 1, 8 * grf // 4)  # 8 GRFs
    load = Send("load", "block", "global", F32, 16)  # 64 bytes: 2 GRFs

    mask = Var("inside", BOOL)

    def send(register: int, masked: bool) -> Call:
        return Call(load, (ptr(memory, 0), ptr(buffer, register), mask if masked else None))

    sends = [send(0, False), send(64, True), send(128, False), send(192, True)]
    # GRFs 0-1 and 4-5 are written by unmasked loads; 2-3 and 6-7 need zeros, a store of 2 GRFs each
    stores = masked_fill(layout, sends, grf)
    assert [(s.offset.value, s.value.type.lanes) for s in stores] == [(64, 16), (192, 16)]
    # a load that covers part of a GRF leaves it to the fill
    partial = [Call(Send("load", "block", "global", F32, 4), (ptr(memory, 0), ptr(buffer, 0), None))]
    assert [s.offset.value for s in masked_fill(layout, partial, grf)] == [0, 64, 128, 192]
