"""Layer classes beyond resnet_50 through the whole compiler (issue 17): depthwise and grouped
convolutions (plan=depthwise), first layers (plan=first), 1-D and 3-D layers through the same
plans, each checked as the acceptance matrix checks resnet_50 (`check_end_to_end`: verified in the
simulator over the whole grid, no SWSB hazard, exact static counts, iga64 and `ocloc validate`
clean, the same bytes twice).

The default run takes each class at a small size on a rotation of platforms and data types; `-m
slow` takes every class on the three platforms in f32 and a low-precision type.  The real sizes
run in `python bench/e2e/classes.py` (about an hour)."""

from __future__ import annotations

import pytest

from xegen.conv import parse_descriptor

from .test_end_to_end import check_end_to_end

# (class, descriptor, plan, layout tags)
LAYERS = [
    ("depthwise", "g32mb1ic32ih10oc32oh5kh3sh2ph1", "depthwise", {}),
    ("depthwise-blocked", "g32mb1ic32ih6oc32oh6kh3ph1", "depthwise", {"stag": "nChw16c", "dtag": "nChw16c"}),
    ("depthwise-gathered", "g32mb1ic32ih6oc32oh6kh3ph1", "depthwise", {"wtag": "goihw"}),  # weights a gather a tap
    ("grouped", "g8mb1ic32ih6oc32oh6kh3ph1", "depthwise", {}),
    ("first", "mb1ic3ih14oc32oh7kh7sh2ph3", "first", {}),
    ("first-nchw", "mb1ic3ih9oc16oh9kh3ph1", "first", {"stag": "nchw"}),
    ("1d-depthwise", "g16mb1ic16iw24oc16ow24kw7pw3", "depthwise", {}),
    ("1d-first", "mb1ic1iw40oc16ow40kw3pw1", "first", {}),
    ("3d-depthwise", "g16mb1ic16id4ih5iw5oc16od4oh5ow5kd3kh3kw3pd1ph1pw1", "depthwise", {}),
    ("3d-first", "mb1ic3id3ih6iw6oc16od3oh6ow6kd3kh3kw3pd1ph1pw1", "first", {}),
]
CASES = [
    (hw, dt)
    for hw in ("xelp", "xehpg", "xehpc")
    for dt in ("f32", "bf16", "f16", "u8:s8:f32")
    if not (hw == "xelp" and dt == "f16")
]


def cases():
    for index, (name, desc, plan, tags) in enumerate(LAYERS):
        for number, (hw, dt) in enumerate(CASES):
            fast = number == index % len(CASES) or number == (index + 5) % len(CASES)
            yield pytest.param(
                desc, plan, tags, hw, dt, id=f"{name}-{hw}-{dt}", marks=[] if fast else [pytest.mark.slow]
            )


@pytest.mark.parametrize("desc, plan, tags, hw, dt", list(cases()))
def test_layer_class_end_to_end(desc, plan, tags, hw, dt, iga64, ocloc):
    int8 = dt.startswith("u8")
    # plan=first asked for: at these sizes the model may price the GEMM plan's kernel lower, and
    # then the compiler takes that (tests/test_first_layer_choice.py); int8 keeps the GEMM plan
    overrides = {"plan": "first"} if plan == "first" and not int8 else None
    compilation = check_end_to_end(parse_descriptor(desc), hw, "FWD_B", dt, seed=7, overrides=overrides, tags=tags)
    assert compilation.config.plan == ("gemm" if plan == "first" and int8 else plan)
