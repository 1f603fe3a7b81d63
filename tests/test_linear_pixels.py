"""A convolution whose every in-range pixel reads inside its input (1x1, stride 1, no padding)
addresses the source linearly in the pixels: BWD_W's K = (mb, oh, ow) is not divided into
components (`plan.gemm.linear_stride`, `build.messages.view_components`), only bounded by K.

Checked in the built IR (no division or remainder in the K loop), and end to end where K ends
inside a tile (98 pixels): the simulator against numpy, iga64, ocloc."""

from __future__ import annotations

import pytest

from xegen.conv import make_problem
from xegen.ir import Binary, For, walk
from xegen.pipeline import build_kernel

from .test_end_to_end import check_end_to_end

ONE_BY_ONE = "mb2ic16ih7oc16oh7kh1ph0"  # K = 2 x 7 x 7 = 98 pixels


def _k_loop_divisions(desc: str, dt: str) -> list[str]:
    kernel = build_kernel(make_problem(desc, "BWD_WB", dt), "xehpg")
    loops = [node for node in walk(kernel.body) if isinstance(node, For)]
    assert loops, "a K loop"
    return [
        str(node)
        for loop in loops
        for node in walk(loop.body)
        if isinstance(node, Binary) and node.op in ("div", "mod")
    ]


@pytest.mark.parametrize("dt", ["bf16", "f16", "f32"])
def test_one_by_one_backward_weights_loop_divides_nothing(dt):
    assert _k_loop_divisions(ONE_BY_ONE, dt) == []


def test_padded_backward_weights_still_unpacks_the_pixel():
    # the bounds of a padded layer look at oh and ow: the pixel is divided into them
    assert _k_loop_divisions("mb2ic16ih7oc16oh7kh3ph1", "bf16") != []


@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_one_by_one_backward_weights_match_numpy(dt, iga64, ocloc):
    check_end_to_end(ONE_BY_ONE, "xehpg", "BWD_WB", dt, seed=5)
