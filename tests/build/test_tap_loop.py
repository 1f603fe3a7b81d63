"""The K loop nested per kernel tap (`plan.config.tap_loop`): taps outer, a tap's channel blocks
inner, so that a tap's (kd, kh, kw), their bounds and the zero fill of masked tiles are computed
once per tap rather than once per K block."""

from __future__ import annotations

from dataclasses import replace

import pytest

from xegen.conv import make_problem, parse_descriptor
from xegen.emit.analysis import inner_loop
from xegen.emit.instruction import Imm
from xegen.ir import For, walk
from xegen.pipeline import build_kernel, compile_problem
from xegen.plan import formulate
from xegen.plan.config import Config, TapLoop, tap_loop

from ..test_end_to_end import check_end_to_end

RES2A_3X3 = "mb1ic64ih56oc64oh56kh3ph1"  # resnet_50's res2a_branch2b: K = 3 * 3 * 64
MAD = Config(fma="mad", simd=16, tg_m=4, tg_n=2, m_tile=8, n_tile=32, k_block=8)


@pytest.mark.parametrize(
    "desc, changes, expected",
    [
        (RES2A_3X3, {}, TapLoop(9, 8)),  # 64 channels in blocks of 8, 9 taps
        (RES2A_3X3, {"tg_k": 2}, TapLoop(9, 4)),  # two threads along K: 16 channels an iteration
        ("mb1ic16id4ih5iw5oc16od4oh5ow5kd3kh3kw3pd1ph1pw1", {}, TapLoop(27, 2)),
        (RES2A_3X3, {"k_block": 64}, None),  # one iteration a tap: nothing to share
        ("mb1ic64ih56oc64oh56kh1ph0", {}, None),  # 1x1: K is the channels alone
        ("mb1ic20ih8oc16oh8kh3ph1", {}, None),  # 20 channels are no whole number of blocks of 8
        (RES2A_3X3, {"gmem_bufs": 2}, None),  # multi-buffered: the scheduler's pipeline stays one loop
        (RES2A_3X3, {"slm": 1}, None),
        (RES2A_3X3, {"k_split": 3}, None),
    ],
)
def test_tap_loop_shape(desc, changes, expected):
    assert tap_loop(replace(MAD, **changes), formulate(make_problem(desc))) == expected


def test_the_kernel_nests_its_k_loop_per_tap():
    kernel = build_kernel(make_problem(RES2A_3X3), "xelp", {"fma": "mad", "tg_k": 1, "k_block": 8})
    loops = [node for node in walk(kernel.body) if isinstance(node, For)]
    assert [(loop.var.name, loop.bound.value) for loop in loops] == [("k_tap", 9), ("k_iter", 8)]


def test_the_inner_loop_neither_divides_nor_zeroes():
    """res2a_branch2b on XeLP f32 (a mad kernel of 8 rows, 8 channels an iteration): the loop
    around the multiplies divides by KW (a multiply by 0xAAAB, the reciprocal of 3) and zeroes
    the masked source tile (four two-register moves of 0) once per tap, outside it."""
    compilation = compile_problem(make_problem(RES2A_3X3), "xelp", {"tg_k": 1, "k_block": 8, "m_tile": 8})
    assert compilation.config.fma == "mad"
    instructions = compilation.compiled.instructions
    loop = inner_loop(instructions)
    assert loop is not None
    body = instructions[loop.start : loop.end + 1]
    assert sum(i.opcode == "mad" for i in body) == 128  # 8 rows x 32 columns x 8 K / SIMD16

    def immediates(inst):
        return [s.value for s in inst.srcs if isinstance(s, Imm)]

    assert not [i for i in body if i.opcode == "mul" and 0xAAAB in immediates(i)]
    assert not [i for i in body if i.opcode == "mov" and i.exec_size == 16 and immediates(i) == [0]]
    # ... and they are still in the kernel, around the inner loop
    outside = instructions[: loop.start] + instructions[loop.end + 1 :]
    assert [i for i in outside if i.opcode == "mul" and 0xAAAB in immediates(i)]
    assert len([i for i in outside if i.opcode == "mov" and i.exec_size == 16 and immediates(i) == [0]]) >= 4


@pytest.mark.parametrize(
    "desc, hw, direction, dt, overrides",
    [
        ("mb1ic32ih8oc32oh8kh3ph1", "xelp", "FWD_B", "f32", {}),  # padded: masks and a zero fill
        ("mb2ic32ih7oc16oh4kh3sh2ph1", "xehpg", "FWD_B", "f16", {}),  # strided, two images
        ("mb1ic16id4ih5iw5oc16od4oh5ow5kd3kh3kw3pd1ph1pw1", "xelp", "FWD_B", "f32", {}),  # 3-D
        ("mb1ic32ih8oc32oh8kh3ph1", "xelp", "BWD_D", "f32", {}),
        ("mb1ic64ih8oc32oh8kh3ph1", "xelp", "FWD_B", "u8:s8:f32", {"fma": "dp4a", "k_block": 16}),
    ],
)
def test_nested_kernels_verify(desc, hw, direction, dt, overrides):
    """Simulated against numpy, same bytes twice, accepted by iga64 and `ocloc validate`."""
    forced = {"fma": "mad", "tg_k": 1, "k_block": 8, **overrides}
    compilation = check_end_to_end(parse_descriptor(desc), hw, direction, dt, seed=4, overrides=forced)
    assert tap_loop(compilation.config, formulate(compilation.problem)) is not None
