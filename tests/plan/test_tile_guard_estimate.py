"""The configuration estimate credits the builder's tile guard (tests/build/test_tile_guard.py):
where a thread's A tile lies within one output row, its row checks go once and only its first and
last pixel keep a mask and are zeroed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from xegen import hw
from xegen.conv import make_problem
from xegen.plan import formulate
from xegen.plan.config import Config
from xegen.plan.estimate import MASK_INSTRUCTIONS, _global, guards_rows
from xegen.plan.kernel import mask_kinds

PADDED = "mb1ic64ih56oc64oh56kh3ph1"


@pytest.mark.parametrize(
    "desc, direction, expected",
    [
        (PADDED, "FWD_B", (True, True)),  # the input row's check, and the input column's
        ("mb1ic64ih56oc64oh56kh1ph0", "FWD_B", (False, False)),  # 1x1: no checks
        ("mb1ic64iw56oc64ow56kw3pw1", "FWD_B", (False, True)),  # 1-D: only the column's
        (PADDED, "BWD_D", (True, True)),  # diff_dst's row and column
    ],
)
def test_mask_kinds_of_a(desc, direction, expected):
    gemm = formulate(make_problem(desc, direction, "f32"))
    assert mask_kinds(gemm.a, gemm) == expected


def test_guarded_rows_need_a_tile_within_a_row_and_a_loop_that_may_skip():
    gemm = formulate(make_problem(PADDED, "FWD_B", "f32"))
    config = Config(fma="mad", simd=16, tg_m=1, tg_n=1, m_tile=7, n_tile=32, k_block=16)
    assert guards_rows(config, gemm)  # 7 divides the 56 pixels of a row
    for other in (
        replace(config, m_tile=6),  # a tile across two rows
        replace(config, slm=1),  # a barrier in the loop
        replace(config, gmem_bufs=2),  # a pipelined loop
    ):
        assert not guards_rows(other, gemm)


def test_a_guarded_tile_pays_for_one_row_check_and_two_pixels():
    gemm, platform = formulate(make_problem(PADDED, "FWD_B", "f32")), hw.platform("xehpg")
    # 7 pixels of 16 channels: 7 block lines of 64 bytes, 448 bytes zeroed two 32-byte GRFs at a time
    plain = _global(gemm.a, gemm, platform, (7, 16), 1, True, None)
    guarded = _global(gemm.a, gemm, platform, (7, 16), 1, True, None, (True, True))
    assert plain.issue - guarded.issue == (7 * MASK_INSTRUCTIONS + 7) - (MASK_INSTRUCTIONS + 2 * MASK_INSTRUCTIONS + 2)
    assert plain.bytes == guarded.bytes
