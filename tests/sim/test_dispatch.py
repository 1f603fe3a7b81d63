"""Dispatch as NEO does it: every work-item finds its ids, sizes and arguments where IGC's
code looks for them (r0, pushed or loaded cross-thread and per-thread data, inline data,
edge groups of non-uniform ranges), on each platform and SIMD width; user mistakes are
errors that name the problem."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.conftest import require_tool
from xegen import Error, oracles, sim

IDS_SOURCE = """
{attribute}
kernel void ids(global int* out, local int* scratch, int bias)
{{
    const size_t i = (get_global_id(2) * get_global_size(1) + get_global_id(1)) * get_global_size(0)
                     + get_global_id(0);
    const int lid = get_local_id(0) + 100 * get_local_id(1) + 10000 * get_local_id(2);
    const int flat = get_local_linear_id();
    scratch[flat] = lid;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[8 * i + 0] = scratch[flat];
    out[8 * i + 1] = get_group_id(0) + 100 * get_group_id(1) + 10000 * get_group_id(2);
    out[8 * i + 2] = get_local_size(0) + 100 * get_local_size(1) + 10000 * get_local_size(2);
    out[8 * i + 3] = get_enqueued_local_size(0) + 100 * get_enqueued_local_size(1)
                     + 10000 * get_enqueued_local_size(2);
    out[8 * i + 4] = get_num_groups(0) + 100 * get_num_groups(1) + 10000 * get_num_groups(2);
    out[8 * i + 5] = get_work_dim() + bias;
    out[8 * i + 6] = get_global_id(0) + 100 * get_global_id(1) + 10000 * get_global_id(2);
    out[8 * i + 7] = get_sub_group_size();
}}
"""

VARIANTS = [("tgllp", None), ("tgllp", 8), ("dg2", None), ("dg2", 16), ("pvc", None), ("pvc", 16)]


@functools.cache
def ids_zebin(device: str, sub_group: int | None) -> bytes:
    attribute = f"__attribute__((intel_reqd_sub_group_size({sub_group})))" if sub_group else ""
    return oracles.ocloc_compile(IDS_SOURCE.format(attribute=attribute), device, options="-cl-std=CL2.0")


def hardware_walk_order(device: str, size) -> tuple[int, int, int]:
    """The order lanes take the work-items of a group in (sub-groups are runs of it).  NEO
    generates the ids itself (XeLP always, else when no hardware walk order fits) in x, y, z
    order; the hardware walks in the first of xyz, xzy, yxz, zxy, yzx, zyx whose two first
    dimensions are powers of two (see xegen.sim.dispatch.hardware_walk_order).  Worked out by
    hand for the groups below: (8, 3, 2) and its edge (4, 3, 2) -> xzy (8 and 2, 4 and 2);
    (4, 4, 1) and its edges -> xyz; (9, 7, 1) -> none fits -> the runtime's xyz."""
    if device == "tgllp":
        return (0, 1, 2)
    return (0, 2, 1) if tuple(size) in ((8, 3, 2), (4, 3, 2)) else (0, 1, 2)


def expected_ids(global_size, local_size, bias: int, simd: int, device: str = "tgllp") -> np.ndarray:
    g, local = np.array(global_size), np.array(local_size)
    out = np.zeros((*global_size[::-1], 8), dtype=np.int32)
    groups = -(-g // local)
    for z in range(g[2]):
        for y in range(g[1]):
            for x in range(g[0]):
                gid = np.array([x, y, z])
                group = gid // local
                lid = gid % local
                size = np.minimum(local, g - group * local)

                def pack(v):
                    return int(v[0] + 100 * v[1] + 10000 * v[2])

                # sub-groups are consecutive SIMD-wide runs of the walk order; the last may be short
                o = hardware_walk_order(device, size)
                linear = lid[o[0]] + size[o[0]] * (lid[o[1]] + size[o[1]] * lid[o[2]])
                items = int(np.prod(size))
                sub_group = min(simd, items - (linear // simd) * simd)
                out[z, y, x] = [
                    pack(lid),
                    pack(group),
                    pack(size),
                    pack(local),
                    pack(groups),
                    3 + bias,
                    pack(gid),
                    sub_group,
                ]
    return out


@pytest.mark.parametrize("device, sub_group", VARIANTS)
@pytest.mark.parametrize(
    "global_size, local_size", [((20, 6, 2), (8, 3, 2)), ((13, 5, 3), (4, 4, 1)), ((9, 7, 2), (9, 7, 1))]
)
def test_every_work_item_sees_its_ids_and_sizes(device, sub_group, global_size, local_size):
    require_tool("ocloc")
    zebin = ids_zebin(device, sub_group)
    out = np.full((*global_size[::-1], 8), -1, dtype=np.int32)
    items = int(np.prod(local_size))
    result = sim.run(zebin, "ids", [out, sim.local(4 * items), 5], global_size, local_size)
    simd = result.simd
    assert sub_group is None or simd == sub_group
    np.testing.assert_array_equal(out, expected_ids(global_size, local_size, 5, simd, device))


@pytest.fixture(scope="module")
def saxpy() -> bytes:
    require_tool("ocloc")
    return oracles.ocloc_compile(
        """
        kernel void saxpy(global float* y, global const float* x, float a) {
            y[get_global_id(0)] += a * x[get_global_id(0)];
        }""",
        "dg2",
    )


def test_argument_mistakes_are_errors(saxpy):
    y, x = np.zeros(64, np.float32), np.ones(64, np.float32)
    with pytest.raises(Error, match="takes 3 argument"):
        sim.run(saxpy, "saxpy", [y, x], 64, 16)
    with pytest.raises(Error, match="C-contiguous"):
        sim.run(saxpy, "saxpy", [np.zeros((64, 2), np.float32)[:, 0], x, 1.0], 64, 16)
    with pytest.raises(Error, match="numpy array"):
        sim.run(saxpy, "saxpy", [[0.0] * 64, x, 1.0], 64, 16)
    with pytest.raises(Error, match="no kernel 'nope'"):
        sim.run(saxpy, "nope", [y, x, 1.0], 64, 16)
    with pytest.raises(Error, match="built for XeHPG"):
        sim.run(saxpy, "saxpy", [y, x, 1.0], 64, 16, hw="pvc")
    with pytest.raises(Error, match="1024"):
        sim.run(saxpy, "saxpy", [y, x, 1.0], 2048, 2048)
    with pytest.raises(Error, match="positive"):
        sim.run(saxpy, "saxpy", [y, x, 1.0], 0, 16)
    sim.run(saxpy, "saxpy", [y, x, 2.0], 64, 16, hw="dg2")
    np.testing.assert_array_equal(y, 2.0)


def test_out_of_bounds_stateful_access_reads_zero(saxpy):
    """dg2 builds reach buffers through surfaces: past the end reads 0 and writes are dropped."""
    y, x = np.zeros(40, np.float32), np.ones(40, np.float32)
    sim.run(saxpy, "saxpy", [y, x, 3.0], 64, 16)
    np.testing.assert_array_equal(y, 3.0)


@pytest.fixture(scope="module")
def typed() -> bytes:
    """A kernel with by-value arguments of several types and a __local buffer."""
    require_tool("ocloc")
    return oracles.ocloc_compile(
        """
        kernel void typed(global int* out, local int* scratch, char c, uint u, short s, float f) {
            scratch[get_local_id(0)] = c + (int)u + s + (int)f;
            barrier(CLK_LOCAL_MEM_FENCE);
            out[get_global_id(0)] = scratch[get_local_id(0)];
        }""",
        "dg2",
    )


def test_sizes_offsets_and_limits_are_checked(saxpy, typed):
    y, x = np.zeros(64, np.float32), np.ones(64, np.float32)
    with pytest.raises(Error, match=r"local size has 2 dimension\(s\) but the global size has 1"):
        sim.run(saxpy, "saxpy", [y, x, 1.0], 64, (16, 2))
    with pytest.raises(Error, match=r"global offset \(-1, 0, 0\) must be zero or more in every dimension"):
        sim.run(saxpy, "saxpy", [y, x, 1.0], 64, 16, global_offset=(-1, 0, 0))
    with pytest.raises(Error, match="below 2\\^32"):
        sim.run(saxpy, "saxpy", [y, x, 1.0], 1 << 32, 16)
    with pytest.raises(Error, match="needs 4 SIMD32 threads; the simulator runs at most 3"):
        sim.run(saxpy, "saxpy", [y, x, 1.0], 64, 16, max_threads=3)
    with pytest.raises(Error, match="positive number of bytes"):
        sim.local(0)
    out = np.zeros(64, np.int32)
    with pytest.raises(Error, match="65540 bytes of shared local memory.*XeHPG has 65536"):
        sim.run(typed, "typed", [out, sim.local(65540), 1, 2, 3, 4.0], 64, 64)
    with pytest.raises(Error, match="pass a int32 array, not float32"):
        sim.run(typed, "typed", [y, sim.local(256), 1, 2, 3, 4.0], 64, 64)


@pytest.mark.parametrize(
    "c, u, s, f, words",
    [
        (128, 0, 0, 0.0, r"128 is outside the range of char \(-128 to 127\)"),
        (0, -1, 0, 0.0, r"-1 is outside the range of uint \(0 to 4294967295\)"),
        (0, 0, 40000, 0.0, "outside the range of short"),
        (0, 0, 0, 1e39, "1e\\+39 is too large for float"),
        (0, 1.5, 0, 0.0, "is an integer"),
    ],
)
def test_by_value_arguments_must_fit_their_declared_type(typed, c, u, s, f, words):
    with pytest.raises(Error, match=words):
        sim.run(typed, "typed", [np.zeros(64, np.int32), sim.local(256), c, u, s, f], 64, 64)


def test_by_value_arguments_at_the_extremes_of_their_type(typed):
    out = np.zeros(64, np.int32)
    sim.run(typed, "typed", [out, sim.local(256), -128, 4294967295, 32767, -2.5], 64, 64)
    np.testing.assert_array_equal(out, np.int32(-128 + -1 + 32767 + int(-2.5)))  # (int)u wraps to -1
