"""Blocked layouts: IR offsets against numpy reshape/transpose of the same tensor."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xegen import ir
from xegen.conv import make_layout, make_problem, parse_descriptor
from xegen.conv.index import Idx
from xegen.errors import Error

RNG = np.random.default_rng(3)


def pad_to(x: np.ndarray, shape) -> np.ndarray:
    out = np.zeros(shape, x.dtype)
    out[tuple(slice(0, n) for n in x.shape)] = x
    return out


def up(n: int, b: int) -> int:
    return -(-n // b) * b


# (tag, tensor, logical dims, grouped, physical tensor by hand: reshape/transpose of the logical one)
CASES = [
    ("nchw", "src", (2, 5, 3, 4), False, lambda x: x),
    ("abcd", "src", (2, 5, 3, 4), False, lambda x: x),
    ("nhwc", "src", (2, 5, 3, 4), False, lambda x: x.transpose(0, 2, 3, 1)),
    ("any", "dst", (2, 5, 3, 4), False, lambda x: x.transpose(0, 2, 3, 1)),
    (
        "nChw16c",
        "src",
        (2, 20, 3, 4),
        False,
        lambda x: pad_to(x, (2, 32, 3, 4)).reshape(2, 2, 16, 3, 4).transpose(0, 1, 3, 4, 2),
    ),
    (
        "aBx8b",
        "src",
        (1, 12, 2, 3, 2),
        False,
        lambda x: pad_to(x, (1, 16, 2, 3, 2)).reshape(1, 2, 8, 2, 3, 2).transpose(0, 1, 3, 4, 5, 2),
    ),
    (
        "NChw16n16c",
        "src",
        (3, 17, 2, 2),
        False,
        lambda x: pad_to(x, (16, 32, 2, 2)).reshape(1, 16, 2, 16, 2, 2).transpose(0, 2, 4, 5, 1, 3),
    ),
    (
        "ABcd32a32b",
        "dst",
        (33, 5, 2, 1),
        False,
        lambda x: pad_to(x, (64, 32, 2, 1)).reshape(2, 32, 1, 32, 2, 1).transpose(0, 2, 4, 5, 1, 3),
    ),
    ("oihw", "wei", (6, 5, 3, 3), False, lambda x: x),
    ("hwio", "wei", (6, 5, 3, 3), False, lambda x: x.transpose(2, 3, 1, 0)),
    ("any", "wei", (6, 5, 3, 3), False, lambda x: x.transpose(2, 3, 1, 0)),
    (
        "OIhw16i16o",
        "wei",
        (20, 18, 3, 2),
        False,
        lambda x: pad_to(x, (32, 32, 3, 2)).reshape(2, 16, 2, 16, 3, 2).transpose(0, 2, 4, 5, 3, 1),
    ),
    (
        "OIhw8i16o2i",
        "wei",
        (16, 16, 1, 3),
        False,
        lambda x: x.reshape(1, 16, 1, 8, 2, 1, 3).transpose(0, 2, 5, 6, 3, 1, 4),
    ),
    (
        "gOIhw16i16o",
        "wei",
        (2, 16, 16, 3, 3),
        True,
        lambda x: x.reshape(2, 1, 16, 1, 16, 3, 3).transpose(0, 1, 3, 5, 6, 4, 2),
    ),
    ("any", "wei", (2, 4, 3, 3, 3), True, lambda x: x.transpose(0, 3, 4, 2, 1)),
    ("ncw", "src", (2, 3, 7), False, lambda x: x),
    ("nwc", "src", (2, 3, 7), False, lambda x: x.transpose(0, 2, 1)),
    ("ndhwc", "dst", (1, 4, 2, 3, 2), False, lambda x: x.transpose(0, 2, 3, 4, 1)),
    ("xba", "wei", (4, 3, 2, 5), False, lambda x: x.transpose(2, 3, 1, 0)),
]


@pytest.mark.parametrize("tag, tensor, dims, grouped, by_hand", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_ir_offsets_match_numpy_reshape_and_transpose(tag, tensor, dims, grouped, by_hand):
    layout = make_layout(tag, tensor, dims, grouped)
    x = RNG.standard_normal(dims).astype(np.float32)
    physical = np.ascontiguousarray(by_hand(x)).reshape(-1)
    assert layout.elements == physical.size
    # the IR offset of every logical index points at that element of the numpy-built buffer
    index = [ir.var(f"i{d}") for d in range(len(dims))]
    offset = layout.offset([Idx(v, 0, n - 1) for v, n in zip(index, dims, strict=True)]).expr
    grid = np.indices(dims).reshape(len(dims), -1).astype(np.int32)
    offsets = ir.evaluate(offset, {v.name: g for v, g in zip(index, grid, strict=True)})
    np.testing.assert_array_equal(physical[offsets], x.reshape(-1))
    # and the numpy conversion agrees, padding (zeros) included
    np.testing.assert_array_equal(layout.to_physical(x), physical)
    np.testing.assert_array_equal(layout.from_physical(physical), x)


def test_unit_stride_runs():
    assert make_layout("nhwc", "src", (2, 32, 4, 4), False).unit_stride_run(1) == 32
    assert make_layout("nChw16c", "src", (2, 32, 4, 4), False).unit_stride_run(1) == 16
    assert make_layout("nchw", "src", (2, 32, 4, 4), False).unit_stride_run(1) == 0
    assert make_layout("nchw", "src", (2, 32, 4, 4), False).unit_stride_run(3) == 4


@pytest.mark.parametrize(
    "tag, message",
    [
        ("abc", "exactly once"),
        ("abcq", "not a dimension of src"),
        ("aBcd", "has no inner block"),
        ("abcd16b", "needs 'B'"),
        ("aabc", "exactly once"),
        ("axxb", "'x' may appear once"),
        ("16b", "is not letters followed by blocks"),
        ("aBcd16B", "lower-case"),
        ("oihw", "not a dimension of src"),
    ],
)
def test_bad_tags_raise_clear_errors(tag, message):
    with pytest.raises(Error, match=message):
        make_layout(tag, "src", (2, 3, 4, 5), False)


def test_named_tag_must_fit_grouped_weights():
    with pytest.raises(Error, match="not a dimension of wei"):
        make_layout("gOIhw16i16o", "wei", (8, 4, 3, 3), False)


@st.composite
def blocked_layouts(draw):
    ndims = draw(st.integers(1, 5))
    dims = tuple(draw(st.integers(1, 9)) for _ in range(ndims))
    order = draw(st.permutations(range(ndims)))
    blocked = draw(st.lists(st.sampled_from(range(ndims)), max_size=3))
    letters = "abcdef"
    tag = "".join(letters[d].upper() if d in blocked else letters[d] for d in order)
    tag += "".join(f"{draw(st.sampled_from([2, 3, 4, 8]))}{letters[d]}" for d in blocked)
    return tag, dims


@settings(max_examples=200, deadline=None)
@given(blocked_layouts())
def test_random_blocked_layouts_round_trip_and_offsets_agree(case):
    tag, dims = case
    layout = make_layout(tag, "src", dims, False)
    x = np.arange(int(np.prod(dims)), dtype=np.int64).reshape(dims) + 1
    flat = layout.to_physical(x)
    np.testing.assert_array_equal(layout.from_physical(flat), x)
    assert np.count_nonzero(flat) == x.size  # every element once, the rest is zero padding
    for index in [tuple(0 for _ in dims), tuple(n - 1 for n in dims), tuple(n // 2 for n in dims)]:
        assert flat[layout.offset_of(index)] == x[index]


@pytest.mark.parametrize(
    "direction, dt, descriptor, inner",
    [
        ("FWD_B", "f32", "mb1ic16ih8oc32oh8kh3ph1", "o"),
        ("BWD_WB", "f32", "mb1ic16ih8oc32oh8kh3ph1", "o"),
        ("BWD_D", "f32", "mb1ic16ih8oc32oh8kh3ph1", "i"),  # the channels its lanes run along
        ("BWD_D", "f32", "g2mb1ic16ih8oc32oh8kh3ph1", "i"),
        ("BWD_D", "bf16", "mb1ic16ih8oc32oh8kh3ph1", "o"),  # dpas reads B's K (oc) in pairs
        ("BWD_D", "f32", "mb1ic3ih8oc32oh8kh3ph1", "o"),  # few channels: the transposed GEMM
    ],
)
def test_any_weights_keep_the_lanes_channels_innermost(direction, dt, descriptor, inner):
    layout = make_problem(parse_descriptor(descriptor), direction, dt).wei_layout()
    grouped = descriptor.startswith("g")
    o, i = (1, 2) if grouped else (0, 1)
    ocg, icg = layout.dims[o], layout.dims[i]
    assert layout.unit_stride_run(o if inner == "o" else i) == (ocg if inner == "o" else icg)
    assert layout.unit_stride_run(i if inner == "o" else o) == 0
