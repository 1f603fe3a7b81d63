"""SLM messages: runs of elements contiguous in registers and in SLM each go as one block, and dpas
operands are stored in SLM in the layout dpas reads."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xegen.conv import make_problem
from xegen.hw import platform
from xegen.ir import Call, For, Reorder, Send, walk
from xegen.pipeline import build_kernel
from xegen.plan.gemm import formulate
from xegen.plan.heuristic import choose_config
from xegen.plan.kernel import plan_kernel
from xegen.plan.messages import Run, contiguous_runs, run_arrays, slm_message_cost


def test_rows_that_follow_each_other_in_both_make_one_run():
    # four rows of 16 elements, back to back in registers and in SLM (pitch 16)
    registers = np.arange(64).reshape(4, 16)
    assert contiguous_runs(registers, registers + 100) == [Run(0, 100, 64)]


def test_rows_with_gaps_stay_apart():
    registers = np.arange(96).reshape(3, 32)
    # pitch 64 in SLM: a thread's 32 columns of each row are not contiguous there
    slm = np.arange(32)[None, :] + 64 * np.arange(3)[:, None]
    assert contiguous_runs(registers, slm) == [Run(0, 0, 32), Run(32, 64, 32), Run(64, 128, 32)]
    # contiguous in SLM but not in the registers (each row starts a new GRF of 64 elements)
    padded = np.arange(16)[None, :] + 64 * np.arange(2)[:, None]
    assert contiguous_runs(padded, np.arange(32).reshape(2, 16)) == [Run(0, 0, 16), Run(64, 16, 16)]


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.sampled_from([1, 2, 4]), alignment=st.sampled_from([0, 2, 4, 6, 64]))
def test_runs_are_priced_as_the_sum_of_their_messages(seed, size, alignment):
    """The planner prices runs as arrays; each run's messages, counted one by one here: a block
    message per 256 bytes (XeHPG's largest) where the run starts dword aligned for every placement
    and is whole dwords, else scattered messages of up to 16 elements, each worth 2 blocks; an
    address and a send per message."""
    rng = np.random.default_rng(seed)
    count = int(rng.integers(1, 257))
    registers = rng.permutation(count)
    # in register order, SLM offsets mostly one after the other: runs of all lengths
    steps = np.where(rng.random(count) < 0.9, 1, rng.integers(2, 6, count))
    slm = np.empty(count, dtype=np.int64)
    slm[np.argsort(registers)] = np.cumsum(steps) + int(rng.integers(0, 4))
    expected = 0
    for run in contiguous_runs(registers, slm):
        aligned = np.gcd(alignment, run.slm * size) % 4 == 0 and run.length * size % 4 == 0
        expected += 2 * (-(-run.length * size // 256) if aligned else 2 * -(-run.length // 16))
    assert slm_message_cost(run_arrays(registers, slm), size, alignment, platform("xehpg")) == expected


def test_a_dpas_kernel_stores_each_threads_a_slice_with_one_message():
    kernel = build_kernel(
        make_problem("mb1ic64ih56oc64oh56kh3ph1", dt="f16"),
        "xehpg",
        {"plan": "gemm", "slm_bufs": 1, "gmem_bufs": 1, "tg_k": 1},  # the plain product stages A
    )
    config = kernel.config
    slice_bytes = config.tg_m * config.m_tile * config.k_block * 2 // config.threads_per_group
    a_stores = [
        s
        for s in _loop_calls(kernel, Send)
        if s.func.space == "slm" and s.func.op == "store" and s.args[-2].buffer.name.startswith("a_")
    ]
    # the rows of A once went as a message each (32 bytes with one K step)
    assert len(a_stores) == 1 and a_stores[0].func.register_bytes == slice_bytes


def _loop_calls(kernel, kind):
    loop = next(n for n in walk(kernel.body) if isinstance(n, For))
    return [n for n in walk(loop.body) if isinstance(n, Call) and isinstance(n.func, kind)]


@pytest.mark.parametrize(
    "hw, dt, direction",
    [
        ("xehpg", "f16", "FWD_B"),
        ("xehpg", "s8:s8:s32", "FWD_B"),
        ("xehpg", "bf16", "BWD_D"),
        ("xehpc", "bf16", "FWD_B"),
    ],
)
def test_dpas_reads_its_operands_from_slm_without_reordering(hw, dt, direction):
    """Each thread's A and B come out of SLM in the layout dpas reads: the only reorders left
    pack the slice a thread stores, so each element of a group tile is moved once per group
    instead of once per thread that reads it."""
    problem = make_problem("mb1ic64ih14oc128oh14kh3ph1", direction=direction, dt=dt)
    gemm = formulate(problem)
    pinned = {"slm": 1, "tg_m": 4, "tg_n": 4, "tg_k": 1, "slm_bufs": 1, "gmem_bufs": 1}
    config = choose_config(gemm, platform(hw), pinned)
    kernel = build_kernel(problem, hw, pinned)
    reorders = _loop_calls(kernel, Reorder)
    assert all(str(r.args[1].buffer.name).endswith("_stage") for r in reorders)
    moved = sum(r.func.rows * r.func.cols for r in reorders)
    group_elements = config.k_block * (config.tg_m * config.m_tile + config.tg_n * config.n_tile)
    assert moved <= group_elements // config.threads_per_group
    # the thread's B tile comes out of SLM in whole block messages of the platform's largest size
    plan = plan_kernel(gemm, config, platform(hw))
    b_loads = [
        s
        for s in _loop_calls(kernel, Send)
        if s.func.space == "slm" and s.func.op == "load" and s.args[1].buffer.name == plan.b.load.buffer.name
    ]
    largest = platform(hw).max_block_message_bytes
    b_bytes = config.k_block * config.n_tile * gemm.b.type.size
    assert len(b_loads) == -(-b_bytes // largest)
