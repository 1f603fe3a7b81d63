"""Register layouts of tiles: vector-message lines, packed SLM slices, and copies between layouts."""

from __future__ import annotations

import numpy as np
import pytest

from xegen.build.builder import copy_tile
from xegen.ir import Var
from xegen.ir.types import BF16, F16, PTR, S8, U32
from xegen.plan.tiles import (
    dense_layout,
    dpas_a_layout,
    dword_groups,
    line_layout,
    packed_layout,
    vector_line_layout,
    vnni_layout,
)

GRF = 32


def _run_copies(dst, src) -> np.ndarray:
    """Execute copy_tile(dst, src) on element indices: the destination buffer holds, at each
    element offset, the tile position (r * cols + c) that landed there (-1 where nothing did)."""
    size = src.type.size
    source = np.full(src.elements * size, -1, dtype=np.int64)  # bytes: the tile position of their element
    for r in range(src.rows):
        for c in range(src.cols):
            at = src.offset(r, c) * size
            source[at : at + size] = r * src.cols + c
    target = np.full(dst.elements * size, -1, dtype=np.int64)
    for call in copy_tile(dst, src):
        f = call.func
        width = f.dst_type.size
        assert f.src_type.size == width
        d0, s0 = call.args[0].offset.value, call.args[1].offset.value
        for i in range(f.rows):
            for j in range(f.cols):
                d = d0 + (i * f.dst_row_stride + j * f.dst_col_stride) * width
                s = s0 + (i * f.src_row_stride + j * f.src_col_stride) * width
                target[d : d + width] = source[s : s + width]
    return target[::size]


def _positions(layout) -> np.ndarray:
    expected = np.full(layout.elements, -1, dtype=np.int64)
    for r in range(layout.rows):
        for c in range(layout.cols):
            expected[layout.offset(r, c)] = r * layout.cols + c
    return expected


def test_vector_lines_are_component_major():
    # 5 rows of 8 halves (4 dwords) in messages of up to 4 lanes: rows 0-3, then row 4 alone
    layout, lines = vector_line_layout(Var("t", PTR), F16, 5, 8, 1, 8, 4, GRF)
    assert [(line.other, line.lanes, line.base) for line in lines] == [(0, 4, 0), (4, 1, 32)]
    for r in range(4):
        for c in range(8):  # dword c // 2 of lane r, half c % 2
            assert layout.offset(r, c) == ((c // 2) * 4 + r) * 2 + c % 2
    assert [layout.offset(4, c) for c in range(8)] == [32 + c for c in range(8)]


def test_vector_columns_of_k_contiguous_b_are_vnni():
    """simd columns of K-contiguous B, a column per lane, K step by K step: dpas's layout."""
    k, n, simd = 32, 16, 8
    layout, _ = line_layout(Var("b", PTR), BF16, k, n, 0, 16, GRF, lanes=simd)
    assert layout.same_placement(vnni_layout(Var("b", PTR), BF16, k, n, 16, simd))


@pytest.mark.parametrize("type", [F16, S8])
def test_copies_move_whole_dwords_when_elements_stay_together(type):
    per = 4 // type.size
    rows, cols = 8, 8 * per
    src, _ = vector_line_layout(Var("s", PTR), type, rows, cols, 1, cols, rows, GRF)
    dst = dpas_a_layout(Var("d", PTR), type, rows, cols, cols)
    calls = copy_tile(dst, src)
    assert all(call.func.src_type == U32 for call in calls)
    assert sum(call.func.rows * call.func.cols for call in calls) == rows * cols // per
    assert np.array_equal(_run_copies(dst, src), _positions(dst))


def test_interleaving_moves_elements_one_by_one_and_lands_them_right():
    """Rows of B (N contiguous) into VNNI: the two halves of a dword come from different rows."""
    src, _ = line_layout(Var("s", PTR), F16, 16, 32, 1, 32, GRF)
    dst = vnni_layout(Var("d", PTR), F16, 16, 32, 16, 8)
    assert dword_groups(src, 1) is not None and dword_groups(dst, 1) is None
    assert all(call.func.src_type == F16 for call in copy_tile(dst, src))
    assert np.array_equal(_run_copies(dst, src), _positions(dst))


def test_packed_slice_follows_the_source_order_each_run_on_a_grf():
    """Rows 2-5 of a 16 x 32 VNNI tile: per block of 8 columns, 2 dword rows (64 bytes) are
    contiguous in the source; packed, each such run starts a GRF and keeps the source order."""
    source = vnni_layout(Var("slm", PTR), F16, 16, 32, 16, 8)
    packed = packed_layout(Var("p", PTR), source, 2, 0, 4, 32, GRF)
    offsets = source.offset_map[2:6, :]
    order = np.argsort(offsets, axis=None)
    assert np.array_equal(np.sort(packed.offset_map, axis=None), packed.offset_map.ravel()[order])
    starts = sorted(
        {int(packed.offset_map[r, c]) for r in range(4) for c in range(32) if packed.offset_map[r, c] % (GRF // 2) == 0}
    )
    assert starts == [0, 16, 32, 48, 64, 80, 96, 112]
    assert packed.elements == 4 * 32


def test_dense_rows_make_no_dword_groups_across_rows():
    layout = dense_layout(Var("t", PTR), F16, 3, 5)  # odd rows: pairs straddle rows
    assert dword_groups(layout, 1) is None and dword_groups(layout, 0) is None


def test_a_row_interleaved_into_vnni_is_one_reorder():
    """Two K rows of 128 halves into a one-K-step VNNI slice: element n of row r lands at
    2n + r across all the column blocks, so each row is one reorder (stride 1 to stride 2),
    not one per block of 8 columns; the lowering cuts it into the widest moves."""
    src, _ = line_layout(Var("s", PTR), F16, 2, 128, 1, 128, GRF)
    dst = vnni_layout(Var("d", PTR), F16, 2, 128, 2, 8)
    calls = copy_tile(dst, src)
    assert [(c.func.rows, c.func.cols, c.func.src_col_stride, c.func.dst_col_stride) for c in calls] == [
        (1, 128, 1, 2),
        (1, 128, 1, 2),
    ]
    assert np.array_equal(_run_copies(dst, src), _positions(dst))


def test_a_byte_transpose_runs_its_lines_across_the_moves():
    """Gathered int8 B (16 lanes of 16 K-contiguous bytes, XeHPC's 64-byte GRFs) packed into SLM's
    VNNI order is a transpose of bytes: each overlap of pieces is a 4 x 4 move with destination
    strides 16 and 64, which no move instruction encodes (every byte its own move, 256 of them).
    The sixteen such moves are translates of one another, so the lines run across them instead:
    destination stride 4, and 16 reorders of 4 x 4 that take 4 moves each."""
    stage, _ = line_layout(Var("s", PTR), S8, 16, 16, 1, 16, 64, 16)
    packed = packed_layout(Var("p", PTR), vnni_layout(Var("v", PTR), S8, 64, 32, 16, 16), 0, 0, 16, 16, 64)
    calls = copy_tile(packed, stage)
    encodable = (1, 2, 4)
    assert all(
        (c.func.rows == 1 or c.func.dst_row_stride in encodable) or c.func.dst_col_stride in encodable for c in calls
    )
    assert len(calls) == 16 and all(c.func.rows * c.func.cols == 16 for c in calls)
    assert np.array_equal(_run_copies(packed, stage), _positions(packed))
