"""Backward weights and backward data of first layers on plan=first (issue 18) through the whole compiler, checked
as the acceptance matrix checks resnet_50 (`check_end_to_end`: verified in the simulator over the
whole grid, bias gradient included, no SWSB hazard, exact static counts, iga64 and `ocloc
validate` clean, the same bytes twice).  The small layers ask for plan=first (at their sizes the
model may price the GEMM plan's kernel lower, and the compiler then takes that:
tests/test_first_layer_choice.py); the real sizes get it from the compiler's own choice, but
for backward data in bf16 on XeHPG and XeHPC, where the compiler's choice is the GEMM plan's.

The default run takes small layers on a rotation of platforms and data types; `-m slow` takes
resnet_50's and ssd300's 7x7 stride-2 first layers at their real size (mb1) on every platform in
f32 and bf16."""

from __future__ import annotations

import pytest

from xegen.conv import parse_descriptor
from xegen.hw import platform
from xegen.plan import formulate
from xegen.plan.first_layer_weights import FirstLayerWeightsPlan
from xegen.plan.strategies import plan_for

from .test_end_to_end import check_end_to_end

SMALL = [
    ("BWD_WB", "mb1ic3ih20oc32oh10kh7sh2ph3"),  # 7x7 stride 2: segments into the padding on both sides
    ("BWD_WB", "mb2ic3ih14oc32oh7kh7sh2ph3"),  # minibatch 2, odd width
    ("BWD_WB", "mb1ic4ih9oc24oh9kh3ph1"),  # 4 channels; channel blocks overlap (24 = 16 + 8)
    ("BWD_WB", "mb1ic1iw40oc16ow40kw3pw1"),  # 1-D, one channel
    ("BWD_W", "mb1ic3id3ih6iw6oc16od3oh6ow6kd3kh3kw3pd1ph1pw1"),  # 3-D: kernel rows (kd, kh), no bias
    ("BWD_WB", "mb1ic3ih10oc16oh8kh3"),  # no padding
]
SMALL_DATA = [
    "mb1ic3ih20oc32oh10kh7sh2ph3",  # 7x7 stride 2: two h phases, the w phases in one walk, two channel blocks
    "mb2ic3ih15oc16oh8kh7sh2ph3",  # odd width: the w phases walk apart (four phases), minibatch 2
    "mb1ic4ih9oc16oh9kh3ph1",  # stride 1: one phase, the kernel flipped
    "mb1ic1iw40oc32ow20kw3sw2pw1",  # 1-D, one channel
    "mb1ic3id4ih6iw6oc16od2oh3ow3kd3kh3kw3sd2sh2sw2pd1ph1pw1",  # 3-D phases
    "mb1ic3ih8oc32oh3kh2sh3",  # fewer taps than the stride: inputs no tap reaches stay zero
]
CASES = [(hw, dt) for hw in ("xelp", "xehpg", "xehpc") for dt in ("f32", "bf16")]
FIRST = {"plan": "first"}
REAL = ["mb1ic3ih224oc64oh112kh7sh2ph3", "mb1ic3ih300oc64oh150kh7sh2ph3"]


def small_cases():
    for index, (direction, desc) in enumerate(SMALL):
        hw, dt = CASES[index % len(CASES)]
        yield pytest.param(direction, desc, hw, dt, id=f"{direction}-{desc}-{hw}-{dt}")


@pytest.mark.parametrize("direction, desc, hw, dt", list(small_cases()))
def test_first_layer_backward_weights_end_to_end(direction, desc, hw, dt, iga64, ocloc):
    compilation = check_end_to_end(parse_descriptor(desc), hw, direction, dt, seed=13, overrides=FIRST)
    assert compilation.config.plan == "first"


@pytest.mark.parametrize(
    "desc, hw, dt",
    [
        pytest.param(desc, *CASES[i % len(CASES)], id=f"{desc}-{'-'.join(CASES[i % len(CASES)])}")
        for i, desc in enumerate(SMALL_DATA)
    ],
)
def test_first_layer_backward_data_end_to_end(desc, hw, dt, iga64, ocloc):
    compilation = check_end_to_end(parse_descriptor(desc), hw, "BWD_D", dt, seed=13, overrides=FIRST)
    assert compilation.config.plan == "first"


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["BWD_D", "BWD_WB"])
@pytest.mark.parametrize("desc", REAL)
@pytest.mark.parametrize("hw, dt", CASES)
def test_first_layer_backward_real_sizes(desc, hw, dt, direction, iga64, ocloc):
    compilation = check_end_to_end(parse_descriptor(desc), hw, direction, dt, seed=13)
    # backward data in bf16 where dpas multiplies: the GEMM plan's kernel without SLM staging,
    # its phases' missing taps skipped, is the faster (tests/test_strided_backward_data.py)
    gemm = direction == "BWD_D" and dt == "bf16" and platform(hw).has_dpas
    assert compilation.config.plan == ("gemm" if gemm else "first")


# shares that overrun the items: 20 items (10 rows of 2 blocks of 5 outputs) over 8 threads of 3
# (the last thread has 2), and over 32 threads of 1 (12 threads have none)
RAGGED = [
    ("xehpg", "f32", {"m_tile": 5, "n_tile": 16, "tg_k": 8, "k_split": 1}),
    ("xehpc", "bf16", {"m_tile": 5, "n_tile": 16, "tg_k": 32, "k_split": 1}),
]


@pytest.mark.parametrize("hw, dt, config", RAGGED, ids=[f"{hw}-{dt}-tg_k{c['tg_k']}" for hw, dt, c in RAGGED])
def test_first_layer_backward_weights_ragged_shares(hw, dt, config, iga64, ocloc):
    """Threads whose share ends past the last item stop there: the vector mads the kernel runs
    (static counts, equal to the simulator's) are exactly the problem's multiply-adds, none on
    a masked item's zeros, and the kernel still verifies."""
    desc = parse_descriptor("mb1ic3ih20oc32oh10kh7sh2ph3")
    compilation = check_end_to_end(desc, hw, "BWD_WB", dt, seed=13, overrides={**FIRST, **config})
    compiled = compilation.compiled
    executions = compiled.executions(compilation.kernel.grid)
    lanes = sum(
        n * inst.exec_size
        for inst, n in zip(compiled.instructions, executions, strict=True)
        if inst.opcode == "mad" and inst.dst.type == "f"
    )
    assert lanes == 20 * 5 * 7 * 7 * 3 * 32  # items x outputs x kh x kw x ic x oc


@pytest.mark.parametrize("dt", ["bf16", "f32"])
def test_first_layer_backward_weights_folded_slm(dt, iga64, ocloc):
    """64 threads' 22 lines (7x3 taps and the bias) of 16 channels are 88 KB of partial sums,
    more than a group's 64 KB of SLM on XeHPG: the upper 32 threads' sums fold into the lower
    32's first, so SLM holds 32 threads' lines (44 KB), and the kernel still verifies (100
    items of one output, two per thread: threads 32 to 49 of the upper half have some)."""
    desc = parse_descriptor("mb1ic3ih20oc32oh10kh7sh2ph3")
    config = {**FIRST, "m_tile": 1, "n_tile": 16, "tg_k": 64, "k_split": 1}
    compilation = check_end_to_end(desc, "xehpg", "BWD_WB", dt, seed=13, overrides=config)
    assert compilation.config.tg_k == 64
    assert compilation.compiled.stats.slm_bytes == 22 * 32 * 16 * 4


# 3 to 16 channels, 7x7 stride 2 on 64x64, m_tile=8: items start at iw0 = 16b - 3 (-3, 13, 29, 45)
# and read span = 8*2 + 5 = 21 pixels (63 values)
BLOCKS = [
    # bf16 segments start 2 bytes into a dword ((16b - 3)*3*2 = 4*(24b - 5) + 2) and end, 128
    # bytes on, with a GRF: inside when 1 <= iw0 (its dword inside the row) and iw0 + 21 <= 64
    ("xehpg", "bf16", (1, 64)),
    # f32 on XeLP (widened after the load) and XeHPC: 252 bytes, up to the end of a 64-byte GRF
    # on XeHPC (4 bytes more: one pixel's first value), of a 32-byte GRF on XeLP (the same)
    ("xehpc", "f32", (0, 63)),
    ("xelp", "bf16", (1, 64)),
]


@pytest.mark.parametrize("hw, dt, inside", BLOCKS, ids=[f"{hw}-{dt}" for hw, dt, _ in BLOCKS])
def test_first_layer_backward_weights_segments_in_blocks(hw, dt, inside, iga64, ocloc):
    """Items whose segment is inside the row along w (the middle two of each row's four) load it
    in dword blocks from its first dword to the end of a GRF; the others gather it value by
    value; both verify against numpy."""
    desc = parse_descriptor("mb1ic3ih64oc16oh32kh7sh2ph3")
    config = {**FIRST, "m_tile": 8, "n_tile": 16, "tg_k": 4, "k_split": 1}
    compilation = check_end_to_end(desc, hw, "BWD_WB", dt, seed=13, overrides=config)
    plan = plan_for(formulate(compilation.problem), compilation.config, platform(hw))
    assert isinstance(plan, FirstLayerWeightsPlan)
    assert plan.inside() == inside
