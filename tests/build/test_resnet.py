"""Every resnet_50 layer, scaled for CI, through the kernel IR in the interpreter vs numpy:
forward, backward-data and backward-weights in f32, f16 and bf16, and int8 forward, on XeHPG
(dpas) and XeLP (mad/dp4a) configurations chosen by the heuristic: its lead (`build_lead`), not
compiling the kernels the model would choose among (they are checked in the simulator by
tests/test_mad_choice.py, tests/test_dpas_choice.py and others).  The real sizes at minibatch 1
run under `-m slow`."""

from __future__ import annotations

import pytest

from xegen.build import check_ir
from xegen.conv import make_problem
from xegen.pipeline import build_kernel, build_lead

from ..conv.shapes import RESNET, scaled, short_name

FLOAT_DIRECTIONS = ("fwd", "bwd_d", "bwd_w")
INT8 = ("u8:s8:f32", "s8:s8:s32", "u8:s8:s8", "s8:s8:f32")


def direction(kind: str, layer: int) -> str:
    """Alternate the direction variants between layers: with and without bias."""
    return {"fwd": ("FWD_B", "FWD_D")[layer % 2], "bwd_d": "BWD_D", "bwd_w": ("BWD_WB", "BWD_W")[layer % 2]}[kind]


def cases():
    for layer, desc in enumerate(RESNET):
        for platform in ("xehpg", "xelp"):
            for kind in FLOAT_DIRECTIONS:
                for dt in ("f32", "f16", "bf16"):
                    yield pytest.param(
                        layer,
                        direction(kind, layer),
                        dt,
                        "",
                        platform,
                        id=f"{short_name(desc)}-{direction(kind, layer)}-{dt}-{platform}",
                    )
            dt = INT8[layer % len(INT8)]
            post = "relu" if layer % 3 == 0 else ""
            yield pytest.param(
                layer,
                ("FWD_B", "FWD_I")[layer % 2],
                dt,
                post,
                platform,
                id=f"{short_name(desc)}-int8-{dt}{'-relu' if post else ''}-{platform}",
            )


@pytest.mark.parametrize("layer, direction, dt, post, platform", list(cases()))
def test_scaled_resnet_layer_matches_numpy(layer, direction, dt, post, platform):
    problem = make_problem(scaled(RESNET[layer]), direction, dt, post)
    kernel = build_lead(problem, platform)
    # on XeHPG the estimate chooses between dpas and the fused pairs of dpasw; a first layer's
    # backward passes (plan=first) multiply with mixed-mode mads in every type
    mads = dt == "f32" or (kernel.config.plan == "first" and direction.startswith("BWD"))
    expected_fma = {
        "xelp": ("dp4a",) if problem.types.is_int8 else ("mad",),
        "xehpg": ("mad",) if mads else ("dpas", "dpasw"),
    }[platform]
    assert kernel.config.fma in expected_fma
    results = check_ir(kernel, seed=layer)
    assert [r.name for r in results] == list(problem.outputs)
    for result in results:
        assert result.ok, f"{problem} on {platform} with {kernel.config}: {result}"


def real_cases():
    for layer, desc in enumerate(RESNET):
        # the dpas and dp4a paths; the mad paths (f32) take several times longer in the interpreter
        for direction, dt, platform in (
            ("FWD_B", "f16", "xehpg"),
            ("BWD_D", "bf16", "xehpg"),
            ("BWD_WB", "bf16", "xehpg"),
            ("FWD_B", "u8:s8:s8", "xelp"),
        ):
            yield pytest.param(layer, direction, dt, platform, id=f"{short_name(desc)}-{direction}-{dt}-{platform}")


@pytest.mark.slow
@pytest.mark.parametrize("layer, direction, dt, platform", list(real_cases()))
def test_real_resnet_layer_at_minibatch_1(layer, direction, dt, platform):
    problem = make_problem(RESNET[layer], direction, dt, mb=1)
    kernel = build_kernel(problem, platform)
    for result in check_ir(kernel, seed=layer):
        assert result.ok, f"{problem} on {platform} with {kernel.config}: {result}"
