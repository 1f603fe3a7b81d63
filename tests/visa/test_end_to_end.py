"""Issue 24's acceptance: resnet_50 layers at scaled sizes through the vISA back end.

Each kernel is xegen's instruction selection written as vISA, finalized by IGC's GenX_IR and
wrapped in xegen's zebin; it must verify in the simulator against numpy (no SWSB hazard in
the finalizer's code), pass `ocloc validate`, keep the native kernel's `.ze_info` (the
dispatch ABI does not depend on the back end), and come out byte-identical when compiled again.

The default run takes one layer per platform and a dpas case for each 16-bit type (as issue 24
asks: f32 on XeHPG, XeLP and XeHPC, then f16/bf16 dpas); `-m slow` runs every scaled resnet_50
layer in every configuration of the native acceptance matrix (tests/test_end_to_end.py).
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, replace

import pytest

from xegen.conv import make_problem, parse_descriptor
from xegen.oracles import ocloc_validate
from xegen.pipeline import Compilation, compile_problem
from xegen.verify import random_inputs, run_in_simulator, verify

from ..conv.shapes import RESNET, scaled
from ..test_end_to_end import CONFIGS, case_id

# (layer, platform, direction, data types): 3 = res2a_branch2b (3x3, padding), 5 = res3a_branch1
DEFAULT_CASES = [
    (3, "xehpg", "FWD_B", "f32"),
    (5, "xelp", "FWD_B", "f32"),
    (3, "xehpc", "FWD_B", "f32"),
    (5, "xehpg", "FWD_B", "f16"),
    (3, "xehpc", "FWD_B", "bf16"),
    (3, "xehpg", "BWD_WB", "bf16"),
]


def check_visa(layer: int, hw: str, direction: str, dt: str) -> Compilation:
    """Compiled twice (same bytes), the native kernel's .ze_info, right values, no hazard,
    accepted by ocloc."""
    problem = make_problem(scaled(RESNET[layer]), direction, dt, mb=1)
    compilation = compile_problem(problem, hw, backend="visa")
    assert compile_problem(problem, hw, backend="visa").zebin() == compilation.zebin(), (
        "a second compilation gave other bytes"
    )
    # the native kernel of the same configuration and layouts (the native back end lets the model
    # choose among several kernels; the vISA one, whose kernels it cannot price, takes the lead)
    given = replace(problem, wtag=compilation.problem.wei_layout().tag)
    native = compile_problem(given, hw, asdict(compilation.config))
    ours, theirs = compilation.compiled.zebin_kernel, native.compiled.zebin_kernel
    # but the inline data: a vISA kernel loads all its arguments (the finalizer owns r1)
    assert ours.execution_env.inline_data_payload_size == 0
    assert (ours.execution_env, ours.payload_arguments, ours.per_thread_payload_arguments) == (
        replace(theirs.execution_env, inline_data_payload_size=0),
        theirs.payload_arguments,
        theirs.per_thread_payload_arguments,
    )

    comparisons = verify(compilation, layer).comparisons
    assert sorted(c.name for c in comparisons) == sorted(problem.outputs)
    for comparison in comparisons:
        assert comparison.ok, f"{problem} through vISA on {hw}: {comparison}"
    valid, report = ocloc_validate(compilation.zebin())
    assert valid, report
    return compilation


@pytest.mark.parametrize("layer, hw, direction, dt", [pytest.param(*case, id=case_id(*case)) for case in DEFAULT_CASES])
def test_scaled_layer_through_visa(layer, hw, direction, dt, genx_ir, ocloc):
    compilation = check_visa(layer, hw, direction, dt)
    assert compilation.compiled.stats.fma_instructions >= 1
    assert compilation.compiled.visa.startswith(".version")


def matrix():
    for hw, direction, dt in CONFIGS:
        for layer in range(len(RESNET)):
            yield pytest.param(layer, hw, direction, dt, id=case_id(layer, hw, direction, dt))


@pytest.mark.slow
@pytest.mark.parametrize("layer, hw, direction, dt", list(matrix()))
def test_every_scaled_layer_through_visa(layer, hw, direction, dt, genx_ir, ocloc):
    check_visa(layer, hw, direction, dt)


@pytest.mark.parametrize("hw", ["xelp", "xehpg", "xehpc"])
def test_unoptimized_kernel_through_visa(hw, genx_ir):
    """Without the e-graph the kernel divides by constants with multiply-high (`mul acc0` then
    `mach`), which the vISA back end writes as vISA's `mulh`."""
    problem = make_problem(parse_descriptor("g1mb1ic8ih4oc8oh4kh3ph1"), "FWD_B", "f32", mb=1)
    shown: dict[str, str] = {}
    compilation = compile_problem(
        problem, hw, optimize=False, backend="visa", show=lambda name, text: shown.__setitem__(name, text)
    )
    assert "mach" in shown["isel"] and "mulh (M1_NM" in shown["visa"]
    result = verify(compilation, 1)
    assert result.ok and not result.run.hazards


def test_xehpc_64bit_integer_adds_wait_on_the_integer_pipe(genx_ir):
    """res2a_branch2a's backward data in bf16 on XeHPC: the finalizer fuses 64-bit address
    arithmetic into `add :q`, and a message reads the sum right after it (res3a_branch1's forward
    kernel, this test's first subject, has no such pair since its SLM slices load in 2D blocks).
    Finalized for PVC-XT (hw.genx_ir_platform), the message that reads such a sum waits for it
    on the integer pipe (`I@n`), as xegen's scoreboard model has it for XeHPC (only float64
    results take the long pipe), and the kernel runs with the hazard checks on.  (GenX_IR's
    `-platform PVC`, the A step, waits with `L@1`, which the simulator reports as a hazard.)"""
    problem = make_problem(scaled(RESNET[2]), "BWD_D", "bf16", mb=1)
    compilation = compile_problem(problem, "xehpc", backend="visa")
    lines = compilation.compiled.assembly().splitlines()
    assert not any("L@" in line for line in lines)
    # (W) send.ugm (16|M0)  r11  r9  null:0 ... right after (W) add (16|M0)  r9.0<1>:q ...
    waits = [
        send
        for add, send in itertools.pairwise(lines)
        if add.split()[1:2] == ["add"]
        and ">:q" in add
        and " send" in send
        and send.split()[4] == add.split()[3].split(".")[0]
    ]
    assert waits, "expected a message reading the finalizer's fused 64-bit add"
    assert all("I@1" in send for send in waits), waits
    result = run_in_simulator(compilation, random_inputs(problem, 5))
    assert not result[1].hazards
