"""Scaled resnet_50 convolutions from the conv front end, lowered and run in the simulator (SWSB
hazard checks on), against numpy (xegen.conv.reference, within the conv tests' tolerance) and
bit for bit against the IR interpreter on the same inputs; both the builder's IR and the
e-graph optimizer's output.  Every zebin passes `ocloc validate` and iga64's round trip.

The default run takes two layers per configuration (one raw, one optimized); `-m slow` runs
every layer both ways."""

from __future__ import annotations

import numpy as np
import pytest

from xegen.conv import make_problem
from xegen.conv.check import compare, random_inputs
from xegen.oracles import ocloc_validate
from xegen.pipeline import build_lead

from ..conv.shapes import RESNET, scaled, short_name
from .harness import compile_conv, iga_report, run_conv, run_conv_ir

CONFIGS = [
    ("FWD_B", "f32", "xehpg"),
    ("FWD_D", "f16", "xehpg"),
    ("FWD_B", "bf16", "xehpg"),
    ("FWD_B", "u8:s8:s8", "xehpg"),
    ("FWD_I", "s8:s8:s32", "xehpg"),
    ("BWD_D", "f32", "xehpg"),
    ("BWD_D", "bf16", "xehpg"),
    ("BWD_WB", "f32", "xehpg"),
    ("BWD_W", "bf16", "xehpg"),
    ("FWD_B", "f32", "xelp"),
    ("FWD_B", "u8:s8:f32", "xelp"),
    ("FWD_B", "bf16", "xehpc"),
]
DEFAULT_LAYERS = (3, 5)  # res2a_branch2b (3x3, padding) and res3a_branch1 (strided 1x1)


def post_op(direction: str, layer: int) -> str:
    return "relu" if direction.startswith("FWD") and layer % 3 == 0 else ""


def check_layer(layer: int, direction: str, dt: str, hw: str, optimize: bool, tools: bool) -> None:
    problem = make_problem(scaled(RESNET[layer]), direction, dt, post_op(direction, layer))
    kernel = build_lead(problem, hw)
    compiled = compile_conv(kernel, hw, optimize=optimize)
    tensors = random_inputs(problem, layer)
    got, _ = run_conv(kernel, compiled, tensors)
    for result in compare(problem, got, tensors):
        assert result.ok, f"{problem} on {hw}: {result}"
    expected = run_conv_ir(kernel, kernel.body, tensors)
    for name in got:
        assert np.array_equal(got[name], expected[name], equal_nan=True), f"{name} differs from the interpreter"
    assert compiled.stats.fma_instructions >= 1
    assert (
        compiled.stats.inner_loop_instructions == 0 or compiled.stats.inner_loop_fma >= 1
    )  # ramps may unroll short loops
    if tools:
        assert iga_report(compiled.code, hw) == ""
        valid, report = ocloc_validate(compiled.zebin())
        assert valid, report


def cases(layers, both: bool):
    for layer in layers:
        for direction, dt, hw in CONFIGS:
            for optimize in (False, True) if both else ((layer + len(dt)) % 2 == 1,):
                name = f"{short_name(RESNET[layer])}-{direction}-{dt}-{hw}-{'opt' if optimize else 'raw'}"
                yield pytest.param(layer, direction, dt, hw, optimize, id=name)


@pytest.mark.parametrize("layer, direction, dt, hw, optimize", list(cases(DEFAULT_LAYERS, both=False)))
def test_scaled_resnet_layer_in_the_simulator(layer, direction, dt, hw, optimize, iga64, ocloc):
    check_layer(layer, direction, dt, hw, optimize, tools=True)


@pytest.mark.slow
@pytest.mark.parametrize("layer, direction, dt, hw, optimize", list(cases(range(len(RESNET)), both=True)))
def test_every_scaled_resnet_layer_in_the_simulator(layer, direction, dt, hw, optimize, iga64, ocloc):
    check_layer(layer, direction, dt, hw, optimize, tools=True)
