"""The GEMM a convolution becomes: its K is the number of products each output sums, which the
front end's tolerances use (`Problem.reduction_size`) without formulating the GEMM (an upper
bound for strided backward data, whose phases sum fewer)."""

from __future__ import annotations

import pytest

from xegen.conv import make_problem
from xegen.conv.index import Idx
from xegen.ir import Var
from xegen.plan import formulate
from xegen.plan.gemm import linear_stride

from ..conv.shapes import RESNET

SHAPES = [
    "g2mb2ic8ih5oc4oh5kh3ph1",  # grouped: 4 input channels per group
    "mb3ic5iw9oc7ow4kw3sw2",  # 1-D, strided
    "mb2ic3id4ih5iw6oc2od4oh5ow6kd2kh3kw1pd1ph1",  # 3-D
    *(str(desc) for desc in RESNET),
]


@pytest.mark.parametrize("direction", ["FWD_B", "BWD_D", "BWD_WB"])
@pytest.mark.parametrize("desc", SHAPES)
def test_gemm_k_is_the_problems_reduction_size(desc, direction):
    problem = make_problem(desc, direction, "f32")
    k = formulate(problem).k.size
    if direction == "BWD_D" and any(problem.desc.field("s", d) > 1 for d in problem.desc.used):
        # by phases of the stride (test_phases.py): a phase sums fewer kernel positions
        assert k <= problem.reduction_size
    else:
        assert k == problem.reduction_size


@pytest.mark.parametrize(
    "direction, expected",
    [
        ("FWD_B", 3 * 3 * 4),  # taps x input channels per group
        ("BWD_D", 3 * 3 * 2),  # taps x output channels per group
        ("BWD_WB", 2 * 5 * 5),  # minibatch x output positions
    ],
)
def test_reduction_size_by_hand(direction, expected):
    assert make_problem("g2mb2ic8ih5oc4oh5kh3ph1", direction, "f32").reduction_size == expected


@pytest.mark.parametrize(
    "desc, stride",
    [
        ("mb2ic24ih7oc16oh7kh1ph0", 24),  # 1x1, stride 1, no padding: pixel p at p * IC
        ("mb1ic8ih6oc16oh3kh2sh2ph0", None),  # stride 2: an output row skips an input row
        ("mb1ic8ih5oc16oh5kh3ph1", None),  # padding: a pixel may read outside the input
        ("mb1ic8ih5oc16oh3kh3ph0", None),  # 3x3 without padding: rows of 3 outputs in rows of 5
    ],
)
def test_backward_weights_source_is_linear_in_the_pixels_only_where_nothing_is_read_outside(desc, stride):
    # K = (mb, oh, ow) of BWD_W: where every in-range pixel reads inside the input, its bounds
    # add no condition, so K needs no division into components (hand-worked strides)
    gemm = formulate(make_problem(desc, "BWD_WB", "bf16"))
    assert linear_stride(gemm.a, gemm.k) == stride


@pytest.mark.parametrize(
    "desc, bounded",
    [
        ("mb1ic8ih8oc16oh8kh1ph0", False),  # 1x1 stride 1: ow < OW = IW is M's own bound
        ("mb1ic8ih8oc16oh4kh1sh2ph0", True),  # stride 2: iw = 2*ow < IW stays
        ("mb1ic8ih8oc16oh8kh3ph1", True),  # padding: iw = ow + kw - 1 may leave the input
    ],
)
def test_the_source_bounds_a_pixel_past_its_size_only_where_strided_or_padded(desc, bounded):
    gemm = formulate(make_problem(desc, "FWD_B", "f32"))
    # an ow past OW (a tile running over the row), as the builder's linear coordinate is
    _, masks = gemm.a.access({"ow": Idx.of(Var("ow"), 0, 100)})
    assert bool(masks) == bounded
