"""More threads along K than K_THREADS (tg_k 16, 32, 64) where a layer's C tiles, even with 8
threads each, leave most of the device's thread slots empty: the heuristic tries them there and
only there, and the kernels verify."""

from __future__ import annotations

import pytest

import xegen
from xegen import hw
from xegen.conv import make_problem, parse_descriptor
from xegen.plan import choose_config, formulate
from xegen.plan.heuristic import K_THREADS, config_space

from ..test_end_to_end import check_end_to_end

RES2A_BRANCH2A = "mb1ic64ih56oc64oh56kh1ph0"  # resnet_50: 64 x 64 weights, K = 56 x 56 = 3136
SMALL = "mb1ic16ih32oc16oh32kh1"  # 16 x 16 weights, K = 1024: 64 K blocks of 16


@pytest.mark.parametrize("platform", ["xehpg", "xehpc"])
def test_backward_weights_of_few_tiles_split_k_over_more_than_8_threads(platform):
    """res2a_branch2a's BWD_WB in bf16 has 8 x 4 C tiles of 8 x 16 on XeHPC: even at 8 threads
    each, 256 threads for 8192 slots (1024 EUs x 8); and bf16 weights cannot take k_split's atomics."""
    gemm = formulate(make_problem(RES2A_BRANCH2A, "BWD_WB", "bf16"))
    target = hw.platform(platform)
    config = choose_config(gemm, target)
    assert config.tg_k > K_THREADS[-1] and config.k_split == 1
    assert config.threads_per_group * config.simd <= target.max_work_group_size
    offered = {c.tg_k for c in config_space(gemm, target, {})}
    # the doublings of 8 up to a group of max_work_group_size work items (64 threads of SIMD 16 on
    # XeHPC; on XeHPG 128 of SIMD 8, but 196 K blocks of 16 give 128 threads fewer than two each)
    assert offered == {1, 2, 4, 8, 16, 32, 64}


def test_the_wider_choice_is_faster_under_the_model():
    """The heuristic's kernel for res2a_branch2a BWD_WB bf16 on XeHPC, against the best it could
    choose before (tg_k up to 8), both compiled and priced by the model."""
    problem = make_problem(RES2A_BRANCH2A, "BWD_WB", "bf16")
    gemm, platform = formulate(problem), hw.XEHPC
    chosen = choose_config(gemm, platform)
    narrow = choose_config(gemm, platform, {"tg_k": K_THREADS[-1]})

    def modeled(config) -> float:
        compiled = xegen.compile(problem, hw="xehpc", config=str(config).replace(" ", ","), tuned=False)
        return compiled.summary.modeled.device_cycles

    assert modeled(chosen) < 0.8 * modeled(narrow)


@pytest.mark.parametrize(
    "desc, direction, dt, platform",
    [
        # 56 x 56 positions x 256 channels: hundreds of tiles, thousands of threads at 8 each
        ("mb1ic64ih56oc256oh56kh1ph0", "FWD_B", "f32", "xehpg"),
        ("mb1ic64ih56oc256oh56kh1ph0", "FWD_B", "bf16", "xehpc"),
    ],
)
def test_layers_that_fill_the_device_keep_k_threads(desc, direction, dt, platform):
    gemm = formulate(make_problem(desc, direction, dt))
    assert {c.tg_k for c in config_space(gemm, hw.platform(platform), {})} <= set(K_THREADS)


@pytest.mark.parametrize("platform", ["xehpg", "xehpc"])
def test_the_heuristics_wide_group_verifies(platform, iga64, ocloc):
    """A reduced layer the heuristic gives tg_k > 8: run in the simulator against numpy (weights
    and bias gradient), decoded by iga64, validated by ocloc."""
    compilation = check_end_to_end(parse_descriptor(SMALL), platform, "BWD_WB", "bf16", seed=5)
    assert compilation.config.tg_k > K_THREADS[-1] and compilation.kernel.uses_barriers
