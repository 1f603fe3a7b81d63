"""NEO, Intel's OpenCL runtime, accepts xegen's zebins: run without a GPU (`xegen.runtime.device_less`),
it builds each program from the binary, creates the kernel, reports its arguments and work-group
limits as xegen says they are, refuses a wrong argument size, and enqueues a launch.  Nothing
executes without hardware: the kernels' results are checked in the simulator (tests/test_end_to_end.py).

The acceptance matrix is scripts/kernel_hashes.py's: every resnet_50 layer (real and scaled) in
every configuration of tests/test_end_to_end.py, compiled through the Python API; the default run
takes one scaled layer in every configuration, `-m slow` all of them.
"""

from __future__ import annotations

import math
from collections import defaultdict

import pytest

import xegen
from tests.conv.shapes import RESNET, scaled
from tests.test_end_to_end import CONFIGS
from xegen.runtime import Launch
from xegen.runtime.device_less import accept, environment

PLATFORMS = sorted({hw for hw, _, _ in CONFIGS})


def compile_cases(layers, configs=CONFIGS, lead=False) -> dict[str, list[xegen.Kernel]]:
    """The kernels of `layers` in every configuration of `configs`, by platform (`lead`: the
    heuristic's first configuration of each, not the model's choice)."""
    kernels = defaultdict(list)
    for hw, direction, dt in configs:
        for desc in layers:
            problem = xegen.conv_problem(str(desc), dir=direction, dt=dt, mb=1)
            kernels[hw].append(xegen.compile(problem, hw=hw, lead=lead))
    return kernels


def check_accepted(hw: str, kernels: list[xegen.Kernel]) -> None:
    results = accept(hw, [kernel.launch for kernel in kernels])
    assert len(results) == len(kernels)
    for kernel, result in zip(kernels, results, strict=True):
        where = f"{kernel.problem} on {hw}"
        assert result.error == "", where
        facts = result.facts
        assert facts.argument_count == len(kernel.arguments), where
        assert facts.compile_work_group_size == kernel.local_size, where
        assert facts.max_work_group_size >= math.prod(kernel.local_size), where
        assert facts.max_sub_group_size == kernel.compilation.compiled.simd, where
        assert facts.local_memory_bytes == kernel.compilation.compiled.zebin_kernel.execution_env.slm_size, where
        assert facts.private_memory_bytes == 0, where  # xegen's kernels never spill
        assert result.wrong_size_refused == (True,) * len(kernel.arguments), where
        assert result.enqueued, where


@pytest.mark.parametrize("hw", PLATFORMS)
def test_neo_accepts_a_scaled_layer_in_every_configuration(hw, neo):
    check_accepted(hw, compile_cases([scaled(RESNET[3])], lead=True)[hw])


@pytest.mark.parametrize("hw", PLATFORMS)
def test_neo_accepts_a_kernel_with_a_scratch_buffer(hw, neo):
    """bf16 backward weights whose groups meet in a scratch buffer (`xegen.plan.scratch`): one
    more argument, which NEO sees and sizes."""
    problem = xegen.conv_problem("g32mb1ic32ih7oc32oh7kh3ph1", dir="BWD_WB", dt="bf16", mb=1)
    kernel = xegen.compile(problem, hw=hw, config={"plan": "depthwise", "k_split": 3, "tg_k": 2}, tuned=False)
    assert [a.role for a in kernel.arguments][-1] == "scratch"
    check_accepted(hw, [kernel])


@pytest.mark.slow
@pytest.mark.parametrize("hw, direction, dt", CONFIGS, ids=["-".join(config) for config in CONFIGS])
def test_neo_accepts_every_layer_of_the_acceptance_matrix(hw, direction, dt, neo):
    layers = list(RESNET) + [scaled(desc) for desc in RESNET]
    [kernels] = compile_cases(layers, [(hw, direction, dt)]).values()
    assert len(kernels) == 2 * len(RESNET)
    check_accepted(hw, kernels)


@pytest.fixture(scope="module")
def dg2_kernel() -> xegen.Kernel:
    return xegen.compile(xegen.conv_problem("mb1ic16ih6oc32oh6kh1"), hw="xehpg")


def test_neo_refuses_what_it_should(dg2_kernel, neo):
    launch = dg2_kernel.launch
    half = (launch.local_size[0] // 2, *launch.local_size[1:])
    wrong_group, wrong_name = accept(
        "xehpg",
        [
            Launch(launch.zebin, launch.kernel, launch.buffer_bytes, launch.global_size, half),
            Launch(launch.zebin, "no_such_kernel", launch.buffer_bytes, launch.global_size, launch.local_size),
        ],
    )
    assert "CL_INVALID_WORK_GROUP_SIZE" in wrong_group.error and not wrong_group.enqueued
    assert wrong_group.facts is not None  # built and created: only the launch was refused
    assert "CL_INVALID_KERNEL_NAME" in wrong_name.error
    [other_platform] = accept("xelp", [launch])  # an XeHPG binary on XeLP
    assert "CL_INVALID_BINARY" in other_platform.error and other_platform.facts is None


def test_the_environment_describes_the_whole_product():
    keys = environment("xehpg")
    assert keys["ProductFamilyOverride"] == "dg2"
    assert keys["HardwareInfoOverride"] == "1x32x16"  # 32 Xe-cores of 16 EUs: 512 EUs
    assert environment("pvc")["HardwareInfoOverride"] == "1x128x8"
