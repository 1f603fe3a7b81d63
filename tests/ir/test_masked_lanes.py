"""Masked-off lanes of a send load are not memory accesses: they are not bounds-checked.

The convolution builder relies on this: a scattered load over padded input positions computes
addresses before the tensor's start for the lanes its mask turns off (as hardware allows).
"""

from __future__ import annotations

import numpy as np
import pytest

from xegen import EvaluationError, ir


def test_scattered_load_skips_bounds_checks_of_masked_lanes():
    a = np.arange(8, dtype=np.float32)
    out = np.zeros(4, np.float32)
    ir.execute(
        ir.parse_stmt("""
        alloc r[16] grf;
        r[0] = broadcast(-1.0, 4);
        send<op=load, kind=scattered, space=global, type=f32, count=4>(
            &A[0], shuffle<0,1,2,3>(-8, 4, 400, 28), &r[0], shuffle<0,1,2,3>(false, true, false, true));
        OUT[0] = r.f32x4[0];
    """),
        buffers={"A": a, "OUT": out},
    )
    np.testing.assert_array_equal(out, [-1.0, 1.0, -1.0, 7.0])


def test_block_load_with_element_mask_skips_masked_elements():
    a = np.arange(4, dtype=np.int32)
    out = np.zeros(4, np.int32)
    ir.execute(
        ir.parse_stmt("""
        alloc r[16] grf;
        r[0] = broadcast(9, 4);
        send<op=load, kind=block, space=global, type=s32, count=4>(
            &A[8], &r[0], shuffle<0,1,2,3>(true, true, false, false));
        OUT[0] = r.s32x4[0];
    """),
        buffers={"A": a, "OUT": out},
    )
    np.testing.assert_array_equal(out, [2, 3, 9, 9])


def test_enabled_lane_out_of_bounds_still_raises():
    a = np.arange(4, dtype=np.int32)
    with pytest.raises(EvaluationError, match="out of bounds"):
        ir.execute(
            ir.parse_stmt("""
            alloc r[16] grf;
            send<op=load, kind=scattered, space=global, type=s32, count=2>(&A[0], shuffle<0,1>(0, 16), &r[0], null);
        """),
            buffers={"A": a},
        )
