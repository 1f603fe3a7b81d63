"""bf16 and f16 backward weights whose reduction k_split groups share (`xegen.plan.scratch`):
the groups add f32 partial sums into a zeroed scratch buffer with float atomics and the last to
arrive converts and stores the totals.  Checked through the whole compiler as the acceptance
matrix checks resnet_50 (`check_end_to_end`: the simulator over the whole grid against numpy,
bias gradient included, no SWSB hazard, exact static counts, iga64 and `ocloc validate` clean,
the same bytes twice), on the GEMM plan and the depthwise and first-layer row plans, each
platform."""

from __future__ import annotations

import numpy as np
import pytest

from xegen.build.run import device_buffers, execute_kernel, output_tensors
from xegen.conv import parse_descriptor
from xegen.conv.check import random_inputs
from xegen.conv.problem import make_problem
from xegen.hw import platform
from xegen.pipeline import compile_problem
from xegen.plan import formulate
from xegen.plan.heuristic import config_candidates
from xegen.plan.strategies import plan_for

from .test_end_to_end import check_end_to_end

DEPTHWISE = {"plan": "depthwise", "k_split": 3, "tg_k": 2}
FIRST = {"plan": "first", "k_split": 2, "tg_k": 1}
CASES = [
    ("BWD_WB", "g16mb1ic16ih7oc16oh7kh3ph1", "xelp", "bf16", DEPTHWISE),
    ("BWD_WB", "g32mb1ic32ih8oc32oh4kh3sh2ph1", "xehpg", "bf16", DEPTHWISE),
    ("BWD_W", "g32mb1ic32ih7oc32oh7kh3ph1", "xehpc", "f16", DEPTHWISE),
    ("BWD_WB", "g32mb1ic32ih7oc32oh7kh3ph1", "xehpc", "bf16", {**DEPTHWISE, "tg_k": 1}),  # no SLM exchange
    ("BWD_WB", "mb1ic3ih20oc32oh10kh7sh2ph3", "xehpc", "bf16", FIRST),
    ("BWD_WB", "mb1ic3ih20oc16oh10kh7sh2ph3", "xehpg", "bf16", {**FIRST, "tg_k": 4}),
    ("BWD_WB", "mb1ic3ih14oc16oh7kh7sh2ph3", "xelp", "f16", FIRST),
    ("BWD_WB", "mb1ic16ih14oc32oh14kh3ph1", "xehpc", "bf16", {"k_split": 2}),  # dpas, 2D blocks
    ("BWD_WB", "mb1ic16ih14oc32oh14kh3ph1", "xehpg", "bf16", {"k_split": 3, "tg_k": 2}),  # dpasw, SLM
    ("BWD_WB", "mb1ic16ih14oc32oh14kh3ph1", "xelp", "bf16", {"k_split": 3}),  # mad
    ("BWD_WB", "mb1ic24ih9oc40oh9kh3ph1", "xehpc", "bf16", {"k_split": 4, "fma": "mad"}),  # edge tiles masked
    ("BWD_W", "mb1ic16ih14oc32oh14kh1", "xehpg", "f16", {"k_split": 2}),  # no bias
]


@pytest.mark.parametrize(
    "direction, desc, hw, dt, overrides", [pytest.param(*case, id="-".join(case[:4])) for case in CASES]
)
def test_groups_meet_in_scratch(direction, desc, hw, dt, overrides, iga64, ocloc):
    compilation = check_end_to_end(parse_descriptor(desc), hw, direction, dt, seed=17, overrides=overrides)
    kernel = compilation.kernel
    assert kernel.config.k_split == overrides["k_split"]
    assert kernel.arguments[-1].name == "scratch" and kernel.scratch_bytes > 0
    # the last group stores every output element: nothing for the launcher to zero
    assert kernel.zero_outputs == ()


def test_scratch_holds_the_sums_then_zeros():
    """The scratch's size is each output's elements as f32 and a counter per thread slot; after
    a run (the IR interpreter), the exchanges have left its sums zero and every counter at
    k_split."""
    problem = make_problem(parse_descriptor("g16mb1ic16ih7oc16oh7kh3ph1"), "BWD_WB", "bf16", mb=1)
    compilation = compile_problem(problem, "xehpg", DEPTHWISE)
    kernel = compilation.kernel
    plan = plan_for(formulate(problem), compilation.config, platform("xehpg"))
    scratch = plan.scratch
    assert scratch.regions == (("wei", 0), ("bias", 16 * 9 * 4))
    assert scratch.counters == 16 * 10 * 4 and scratch.slots == 1 * 1 * 2  # one block of channels, tg_k = 2
    assert kernel.scratch_bytes == scratch.counters + 4 * scratch.slots
    tensors = random_inputs(problem, 3)
    buffers = device_buffers(kernel, tensors)
    execute_kernel(kernel, buffers)
    after = buffers["scratch"]
    assert not after[: scratch.counters].any()
    assert list(after[scratch.counters :].view(np.uint32)) == [3, 3]
    expected = output_tensors(kernel, buffers)
    assert np.isfinite(expected["wei"].astype(np.float32)).all()


def test_f32_weights_add_into_the_outputs():
    """f32 weights take float atomics into the outputs themselves: no scratch, the outputs zeroed."""
    problem = make_problem(parse_descriptor("g16mb1ic16ih7oc16oh7kh3ph1"), "BWD_WB", "f32", mb=1)
    kernel = compile_problem(problem, "xehpg", DEPTHWISE).kernel
    assert kernel.scratch_bytes == 0 and kernel.arguments[-1].name == "bias"
    assert kernel.zero_outputs == ("wei", "bias")


def test_the_heuristic_offers_16_bit_backward_weights_both_ways():
    """With a scratch buffer's three round trips against the groups' share of K, the model
    chooses: bf16 offers each split configuration also with k_split=1.  K is the 56 x 56 = 3136
    pixels; a split gives each group (one thread along K) 32 K blocks or more, at most 16
    groups: k_block 32 -> 98 blocks, 3 groups; k_block 16 -> 196, 6."""
    problem = make_problem(parse_descriptor("mb1ic64ih56oc64oh56kh1"), "BWD_WB", "bf16", mb=1)
    shape = ("m_tile", "n_tile", "k_block", "tg_m", "tg_n", "tg_k", "slm", "fma", "grf", "gmem_bufs")
    found: dict[tuple, set[int]] = {}
    given = {"m_tile": 8, "n_tile": 16, "tg_k": 1}
    for config in config_candidates(formulate(problem), platform("xehpc"), given):
        found.setdefault(tuple(getattr(config, key) for key in shape), set()).add(config.k_split)
    by_block = {32: {1, 3}, 16: {1, 6}}
    assert {key[2] for key in found} <= by_block.keys() and found
    for key, splits in found.items():
        assert splits == by_block[key[2]], key
