"""Acceptance: on the scaled resnet_50 layers, every scheduling transform leaves the interpreter's
outputs bit-identical to those of the builder's unscheduled single-buffered loop (and free of SLM
races: the interpreter runs each thread group in lock step with shared SLM and raises on a race).

The default run takes each layer once, rotating through directions, data types and platforms;
`-m slow` runs every layer in every combination."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.conv.shapes import RESNET, scaled, short_name
from xegen.build import run_ir
from xegen.build.builder import build_body
from xegen.conv import make_problem, random_inputs
from xegen.errors import ConfigError
from xegen.pipeline import build_config, build_lead
from xegen.plan import formulate
from xegen.plan.strategies import plan_for
from xegen.schedule import hoist_invariants, multi_buffer, schedule_by_latency, unroll

COMBINATIONS = [  # (direction, data types, platform)
    ("FWD_B", "f16", "xehpg"),
    ("BWD_D", "bf16", "xehpg"),
    ("BWD_WB", "f16", "xehpg"),
    ("FWD_D", "u8:s8:s32", "xehpg"),
    ("FWD_B", "bf16", "xehpc"),
    ("BWD_W", "f32", "xelp"),
    ("FWD_I", "s8:s8:f32", "xelp"),
    ("BWD_D", "f16", "xehpc"),
]
# multi-buffered SLM first: the heuristic leaves it out where the model says it does not pay (short
# K loops of scaled layers), but these tests are about the transforms that build it
STAGED = (
    {"slm": 1, "tg_m": 2, "tg_n": 2, "slm_bufs": 2},
    {"slm": 1, "tg_m": 2, "tg_n": 2},
    {"slm": 1, "tg_m": 2, "tg_n": 1},
    {"slm": 1},
    {},
)


def single_buffered(problem, platform, staged_first=STAGED):
    """The heuristic's lead kernel (staged through SLM where it can be), and the same
    configuration with one buffer of each kind (as the scheduling pass leaves it)."""
    for staged in staged_first:
        try:
            scheduled = build_lead(problem, platform, staged)
            break
        except ConfigError:
            continue
    config = replace(scheduled.config, slm_bufs=1, gmem_bufs=1)
    return scheduled, build_config(scheduled.problem, config, platform)


def unscheduled(kernel):
    """The builder's body for the kernel's configuration, before any scheduling transform."""
    return build_body(plan_for(formulate(kernel.problem, kernel.config.plan), kernel.config, kernel.hw))


def variants(kernel, platform):
    body = unscheduled(kernel)
    yield "single-buffered", kernel.body
    yield "hoist", hoist_invariants(body, platform)
    yield "unroll3", unroll(body, 3, platform)
    yield "list-schedule", schedule_by_latency(body, platform)
    lsc = kernel.hw.has_lsc
    for slm_bufs, gmem_bufs, prefetch in ((1, 2, 0), (2, 1, 0), (3, 2, 1), (2, 2, 2)):
        if slm_bufs > 1 and not kernel.config.slm:
            continue
        yield (
            f"slm{slm_bufs}-gmem{gmem_bufs}-prefetch{prefetch * lsc}",
            multi_buffer(body, platform, slm_bufs, gmem_bufs, prefetch * lsc),
        )


def check_layer(layer: int, direction: str, dt: str, platform: str, staged_first=STAGED) -> list[str]:
    problem = make_problem(scaled(RESNET[layer]), direction, dt)
    scheduled, reference = single_buffered(problem, platform, staged_first)
    tensors = random_inputs(problem, seed=layer)
    expected = run_ir(replace(reference, body=unscheduled(reference)), tensors)
    checked = []
    for name, body in [("heuristic", scheduled.body), *variants(reference, platform)]:
        got = run_ir(replace(reference, body=body), tensors)
        for output in problem.outputs:
            assert np.asarray(got[output]).tobytes() == np.asarray(expected[output]).tobytes(), (
                f"{name} changed {output} of {problem} on {platform} ({reference.config})"
            )
        checked.append(name)
    return checked


def default_cases():
    for layer, desc in enumerate(RESNET):
        direction, dt, platform = COMBINATIONS[layer % len(COMBINATIONS)]
        yield pytest.param(layer, direction, dt, platform, id=f"{short_name(desc)}-{direction}-{dt}-{platform}")


@pytest.mark.parametrize("layer, direction, dt, platform", list(default_cases()))
def test_transforms_keep_scaled_resnet_layers_bit_identical(layer, direction, dt, platform):
    checked = check_layer(layer, direction, dt, platform)
    assert {"heuristic", "single-buffered", "hoist", "unroll3", "list-schedule"} <= set(checked)


@pytest.mark.parametrize("layer", ["res2a_branch2b", "res4a_branch2b"])
def test_the_swapped_product_staged_through_slm_stays_bit_identical(layer):
    """plan=swapped with slm=1, double-buffered."""
    index = next(i for i, desc in enumerate(RESNET) if short_name(desc).startswith(layer))
    swapped = tuple({**staged, "plan": "swapped"} for staged in STAGED)
    scheduled, _ = single_buffered(make_problem(scaled(RESNET[index]), "FWD_B", "bf16"), "xehpc", swapped)
    assert scheduled.config.plan == "swapped" and scheduled.config.slm_bufs == 2
    checked = check_layer(index, "FWD_B", "bf16", "xehpc", swapped)
    assert {"heuristic", "single-buffered", "slm2-gmem1-prefetch0", "slm3-gmem2-prefetch1"} <= set(checked)


def test_the_staged_run_multi_buffers_slm_on_most_layers():
    staged = 0
    for layer, desc in enumerate(RESNET):
        direction, dt, platform = COMBINATIONS[layer % len(COMBINATIONS)]
        scheduled, _ = single_buffered(make_problem(scaled(desc), direction, dt), platform)
        staged += scheduled.config.slm_bufs > 1
    assert staged >= len(RESNET) // 2


def slow_cases():
    for layer, desc in enumerate(RESNET):
        for direction, dt, platform in COMBINATIONS:
            yield pytest.param(layer, direction, dt, platform, id=f"{short_name(desc)}-{direction}-{dt}-{platform}")


@pytest.mark.slow
@pytest.mark.parametrize("layer, direction, dt, platform", list(slow_cases()))
def test_transforms_keep_every_scaled_resnet_combination_bit_identical(layer, direction, dt, platform):
    check_layer(layer, direction, dt, platform)
