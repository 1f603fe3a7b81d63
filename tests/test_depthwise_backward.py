"""Backward passes of depthwise convolutions on plan=depthwise (issue 18) through the whole
compiler, checked as the acceptance matrix checks resnet_50 (`check_end_to_end`: verified in the
simulator over the whole grid, bias gradient included, no SWSB hazard, exact static counts,
iga64 and `ocloc validate` clean, the same bytes twice), and the heuristic's choice of the plan.

The default run takes small layers on a rotation of platforms and data types; `-m slow` takes
mobilenet_v2's 144-channel layers at their real size (mb1), stride 1 and 2, on every platform in
f32 and bf16."""

from __future__ import annotations

import pytest

from xegen.conv import parse_descriptor

from .test_end_to_end import check_end_to_end

SMALL = [
    ("BWD_D", "g16mb1ic16ih7oc16oh7kh3ph1"),  # stride 1: one phase, the kernel flipped
    ("BWD_D", "g16mb1ic16ih8oc16oh4kh3sh2ph1"),  # stride 2: both w phases in one thread
    ("BWD_D", "g32mb2ic32ih9oc32oh5kh3sh2ph1"),  # stride 2, odd input: phases of 5 and 4 positions
    ("BWD_D", "g16mb1ic16ih9oc16oh3kh3sh3ph1"),  # stride 3 = kernel: one tap per phase
    ("BWD_D", "g16mb1ic16ih9oc16oh5kh1sh2"),  # 1x1 stride 2: odd inputs receive no tap (zero fill)
    ("BWD_D", "g8mb1ic16ih9oc32oh5kh3sh2ph1dh1"),  # grouped (2 in, 4 out per group), dilated, strided
    ("BWD_D", "g16mb1ic16iw24oc16ow24kw5pw2"),  # 1-D
    ("BWD_D", "g16mb1ic16id5ih6iw6oc16od3oh3ow3kd3kh3kw3sd2sh2sw2pd1ph1pw1"),  # 3-D, phases along d and h
    ("BWD_WB", "g16mb1ic16ih7oc16oh7kh3ph1"),
    ("BWD_WB", "g32mb2ic32ih9oc32oh5kh3sh2ph1"),
    ("BWD_WB", "g16mb1ic16ih10oc16oh8kh3dh0"),  # no padding
    ("BWD_W", "g16mb1ic16id4ih5iw5oc16od4oh5ow5kd3kh3kw3pd1ph1pw1"),  # 3-D, no bias
]
CASES = [(hw, dt) for hw in ("xelp", "xehpg", "xehpc") for dt in ("f32", "bf16")]
REAL = ["g144mb1ic144ih56oc144oh56kh3ph1", "g144mb1ic144ih56oc144oh28kh3sh2ph1"]


def small_cases():
    for index, (direction, desc) in enumerate(SMALL):
        hw, dt = CASES[index % len(CASES)]
        yield pytest.param(direction, desc, hw, dt, id=f"{direction}-{desc}-{hw}-{dt}")


@pytest.mark.parametrize("direction, desc, hw, dt", list(small_cases()))
def test_depthwise_backward_end_to_end(direction, desc, hw, dt, iga64, ocloc):
    compilation = check_end_to_end(parse_descriptor(desc), hw, direction, dt, seed=11)
    assert compilation.config.plan == "depthwise"


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["BWD_D", "BWD_WB"])
@pytest.mark.parametrize("desc", REAL)
@pytest.mark.parametrize("hw, dt", CASES)
def test_depthwise_backward_real_sizes(direction, desc, hw, dt, iga64, ocloc):
    compilation = check_end_to_end(parse_descriptor(desc), hw, direction, dt, seed=11)
    assert compilation.config.plan == "depthwise"
