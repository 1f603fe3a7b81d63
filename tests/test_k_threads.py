"""Threads of a group splitting K (`tg_k`): every kernel verifies in the simulator against numpy,
decodes under iga64 and passes `ocloc validate`; the heuristic uses them (and smaller groups)
where the plain group would leave the device idle, and refuses what cannot work."""

from __future__ import annotations

import pytest

from xegen import hw
from xegen.conv import make_problem, parse_descriptor
from xegen.errors import ConfigError
from xegen.launch import busiest_eu_threads
from xegen.plan import choose_config, formulate
from xegen.plan.kernel import CodeSizeError, check_code_size

from .test_end_to_end import check_end_to_end

SMALL = "mb1ic32ih6oc32oh6kh3ph1"  # K = 288: 36 blocks of 8, 18 of 16, 9 of 32


@pytest.mark.parametrize(
    "platform, direction, dt, overrides",
    [
        ("xelp", "FWD_B", "f32", {"tg_k": 4, "tg_m": 1, "tg_n": 1}),  # mad, bias added after the sums
        ("xehpg", "BWD_D", "f32", {"tg_k": 2, "tg_m": 2, "tg_n": 1}),
        ("xehpg", "FWD_B", "bf16", {"tg_k": 2, "tg_m": 2, "tg_n": 2, "slm": 1}),  # dpas from SLM, bf16 output
        ("xehpg", "FWD_B", "s8:s8:s32", {"tg_k": 2, "fma": "dpas"}),  # 9 K blocks: shares of 5 and 4
        ("xehpc", "FWD_B", "bf16", {"tg_k": 4, "tg_m": 1, "tg_n": 1}),
    ],
)
def test_threads_along_k_add_their_partial_sums(platform, direction, dt, overrides, iga64, ocloc):
    compilation = check_end_to_end(parse_descriptor(SMALL), platform, direction, dt, seed=7, overrides=overrides)
    config = compilation.config
    assert config.tg_k == overrides["tg_k"]
    assert compilation.kernel.threads % config.tg_k == 0 and compilation.kernel.uses_barriers


@pytest.mark.parametrize(
    "platform, dt, overrides",
    [
        ("xehpg", "f32", {"tg_k": 2, "tg_m": 2, "tg_n": 1}),  # mad sums; 2 tiles along M share the bias columns
        ("xehpg", "bf16", {"tg_k": 2, "tg_m": 1, "tg_n": 2, "fma": "dpasw", "k_block": 16}),  # dpas sums, from SLM
        ("xehpc", "bf16", {"tg_k": 2, "tg_m": 1, "tg_n": 1, "slm": 0}),
    ],
)
def test_threads_along_k_add_their_bias_gradient_sums_too(platform, dt, overrides, iga64, ocloc):
    """BWD_WB with tg_k: each K thread sums the bias gradient over its own K blocks, and the
    first adds the others' sums (stored in SLM after their accumulators) before writing diff_bias;
    the simulator checks diff_bias against numpy."""
    compilation = check_end_to_end(parse_descriptor(SMALL), platform, "BWD_WB", dt, seed=3, overrides=overrides)
    assert compilation.config.tg_k == overrides["tg_k"] and compilation.kernel.uses_barriers


def test_k_cannot_be_split_into_more_slices_than_it_has_blocks():
    gemm = formulate(make_problem(SMALL, "FWD_B", "f32"))
    # 288 / 8 = 36 K blocks: 8 threads x 8 groups would be 64 slices
    with pytest.raises(ConfigError, match="k_split=8 x tg_k=8 slices of K exceed the 36 K blocks"):
        choose_config(gemm, hw.XEHPG, {"tg_k": 8, "k_split": 8, "k_block": 8})


def test_a_layer_that_would_leave_the_device_idle_gets_threads_for_every_eu():
    """res5a_branch2b (3x3, 7x7, 512 -> 512) in f32 on XeHPG: 4 x 4 threads of 8 x 32 outputs
    each make 128 threads for 512 EUs; the heuristic's configuration gives every EU one."""
    gemm = formulate(make_problem("mb1ic512ih7oc512oh7kh3ph1", "FWD_B", "f32"))
    config = choose_config(gemm, hw.XEHPG)
    m_groups = -(-gemm.m.size // (config.tg_m * config.m_tile))
    n_groups = -(-gemm.n.size // (config.tg_n * config.n_tile))
    threads = m_groups * n_groups * config.threads_per_group * config.k_split
    assert threads >= hw.XEHPG.eu_count
    assert threads / busiest_eu_threads(threads, config.threads_per_group, hw.XEHPG) >= hw.XEHPG.eu_count / 2


@pytest.mark.parametrize(
    "platform, limit", [("xelp", 48 * 1024 // 16), ("xehpg", 96 * 1024 // 16), ("xehpc", 80 * 1024 // 16)]
)
def test_code_larger_than_the_instruction_cache_is_refused(platform, limit):
    # 16-byte instructions in oneDNN's cache sizes (hw.icache_bytes)
    check_code_size(limit, hw.platform(platform))
    with pytest.raises(CodeSizeError, match="instruction cache"):
        check_code_size(limit + 1, hw.platform(platform))
