"""The e2e benchmark's OpenCL peer and command line (run: python -m pytest bench/e2e -q).

The peer's kernels are compiled by ocloc and run in xegen's simulator against numpy for every
case of the benchmark, on a small layer with stride, padding, dilation and a partial sub-group,
with inputs at their types' extremes; its bf16 conversions against conv.reference's own rounding.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.e2e import peer
from bench.e2e.run import CASES
from tests.conftest import require_tool
from xegen import hw as hwlib
from xegen import oracles, sim
from xegen.conv import make_problem
from xegen.conv.check import compare, random_inputs
from xegen.conv.reference import bf16_round

RUN = Path(__file__).with_name("run.py")
# oc 17: a partial sub-group; oh 3 ow 5 from ih 7 iw 8, kh 3 (dilated to 5) kw 2, stride 2, padding 1
SMALL = "mb2ic5ih7iw8oc17oh3ow5kh3kw2sh2sw2ph1pw1dh1dw0"


def extremes(problem, seed: int) -> dict[str, np.ndarray]:
    """Random inputs with integers at their type's ends (0/255, -128/127): int8 must be exact, and
    the int8 epilogue then saturates."""
    tensors = random_inputs(problem, seed)
    rng = np.random.default_rng(seed)
    for name, values in tensors.items():
        if values.dtype in (np.int8, np.uint8):
            info = np.iinfo(values.dtype)
            tensors[name] = rng.choice(np.array([info.min, 0, 1, info.max], values.dtype), values.shape)
    return tensors


# every case of the benchmark, and the peer's other epilogues: relu, int8 without bias, saturation
PROBLEMS = [(c.hw, c.direction, c.dt, "") for c in CASES] + [
    ("xehpg", "FWD_D", "s8:s8:s32", "relu"),
    ("xelp", "FWD_B", "u8:s8:s8", ""),
    ("xehpg", "FWD_B", "f16", "relu"),
]


@pytest.mark.parametrize("hw, direction, dt, post_ops", PROBLEMS, ids=["-".join(filter(None, p)) for p in PROBLEMS])
def test_peer_matches_numpy(hw, direction, dt, post_ops):
    require_tool("ocloc")
    problem = make_problem(SMALL, direction, dt, post_ops)
    platform = hwlib.platform(hw)
    zebin = oracles.ocloc_compile(peer.opencl_source(problem), platform)
    tensors = extremes(problem, seed=7)
    got, result = peer.simulate(problem, zebin, platform, tensors)
    comparisons = compare(problem, got, tensors)
    assert [c.name for c in comparisons] == list(problem.outputs)
    assert all(c.ok for c in comparisons), comparisons
    assert result.threads == np.prod(peer.launch(problem)[0]) // peer.SUB_GROUP


CONVERSIONS = """__attribute__((intel_reqd_sub_group_size(16)))
__kernel void conversions(__global const float* x, __global ushort* narrowed, __global const ushort* bits,
                          __global float* widened) {
    const int i = get_global_id(0);
    narrowed[i] = float_to_bf16(x[i]);
    widened[i] = bf16_to_float(bits[i]);
}
"""


def special_floats() -> np.ndarray:
    """Ties (to even, up and down), the largest values (round to infinity), zeros, denormals,
    infinities and NaNs, including the NaN whose rounding would carry into the sign bit."""
    bits = [
        0x3F808000,
        0x3F818000,
        0x3F808001,
        0x3F807FFF,
        0x7F7FFFFF,
        0xFF7FFFFF,
        0x7F7F7FFF,
        0x00000000,
        0x80000000,
        0x00000001,
        0x807FFFFF,
        0x00008000,
        0x7F800000,
        0xFF800000,
        0x7FC00000,
        0x7F800001,
        0x7FFFFFFF,
        0xFFFFFFFF,
        0x3F800000,
        0xBF818000,
    ]
    rng = np.random.default_rng(3)
    return np.concatenate([np.array(bits, np.uint32), rng.integers(0, 2**32, 44, np.uint32)])


def test_bf16_conversions_round_to_nearest_even_and_keep_nans():
    require_tool("ocloc")
    values = special_floats().view(np.float32)
    platform = hwlib.platform("xehpg")
    zebin = oracles.ocloc_compile(peer.BF16_HELPERS + CONVERSIONS, platform)
    narrowed = np.zeros(values.size, np.uint16)
    all_bf16 = np.arange(values.size, dtype=np.uint16) * 1021  # spread over every exponent
    widened = np.zeros(values.size, np.float32)
    sim.run(
        zebin,
        "conversions",
        [values, narrowed, all_bf16, widened],
        (values.size, 1, 1),
        (16, 1, 1),
        hw=platform,
        check_hazards=False,
    )

    back = (narrowed.astype(np.uint32) << 16).view(np.float32)
    nan = np.isnan(values)
    assert np.isnan(back[nan]).all()
    expected = bf16_round(values[~nan])
    assert (back[~nan].view(np.uint32) == expected.view(np.uint32)).all()
    assert (widened.view(np.uint32) == all_bf16.astype(np.uint32) << 16).all()


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--layers", "nomatch"], "no layer matches 'nomatch'"),
        (["--cases", "xehpg/fwd_b/f32,xehpg/fwd_b/f64"], "no case matches 'xehpg/fwd_b/f64'"),
        (["--scaled", "--bogus"], "unrecognized arguments: --bogus"),
        (["--json", "/nonexistent-directory/e2e.json"], "--json /nonexistent-directory/e2e.json:"),
        (["--layers", "res2a,nomatch"], "no layer matches 'nomatch'"),
        (["--peer", "mkl"], "argument --peer: invalid choice: 'mkl'"),
        (["--peer", "onednn", "--cases", "xehpg/fwd_b/f16"], "--peer onednn runs f32 forward cases"),
        (
            ["--peer", "onednn", "--onednn-dir", "/nonexistent"],
            "oneDNN's OpenCL sources not found: /nonexistent has no",
        ),
    ],
)
def test_bad_arguments_give_one_line_and_status_2(arguments, message, tmp_path):
    result = subprocess.run([sys.executable, str(RUN), *arguments], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr, result.stderr
