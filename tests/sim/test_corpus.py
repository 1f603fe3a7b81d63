"""IGC's own kernels (the corpus: ocloc builds for tgllp, dg2 and pvc) run in the simulator,
match numpy, and run clean under the SWSB hazard checks.

Integer outputs must match exactly; float outputs within the tolerance each corpus kernel
states (summation order and fused multiply-adds differ from numpy's).  Besides each
kernel's own launch, the kernels without a required work-group size run with other local
sizes: ones that leave the last thread of a group partial (not a multiple of the SIMD
width) and global sizes that leave partial groups at the edges of the range.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.emit.corpus import BUILDS
from xegen import hw as hwlib
from xegen import sim
from xegen.emit.zebin import read_zebin
from xegen.sim.program import Program

# (global, local) launches per corpus kernel, beyond its own; each covers the kernel's data.
EXTRA_LAUNCHES = {
    "elementwise": [
        ((1000, 1, 1), (20, 1, 1)),
        ((1003, 1, 1), (7, 1, 1)),
        ((1000, 1, 1), (1, 1, 1)),
        ((1024, 1, 1), (100, 1, 1)),
    ],
    "convolution": [((20, 4, 2), (7, 3, 1)), ((20, 4, 2), (5, 2, 1)), ((22, 5, 2), (3, 4, 2))],
    "transpose": [((50, 37, 1), (16, 4, 1)), ((64, 40, 1), (5, 3, 1)), ((55, 41, 1), (8, 8, 1))],
    "dot_int8": [((100, 1, 1), (17, 1, 1)), ((128, 1, 1), (100, 1, 1))],
}


def _run(zebin: bytes, build, case, global_size, local_size):
    values = {k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else v) for k, v in case.values.items()}
    args = [values[a.name] for a in build.kernel.arguments]
    result = sim.run(zebin, build.kernel.kernel_name, args, global_size, local_size)
    return values, result


def _check(build, values, expected) -> None:
    kernel = build.kernel
    for name, want in expected.items():
        got = values[name]
        if got.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=kernel.rtol, atol=kernel.atol, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("build", BUILDS, ids=str)
def test_corpus_kernel_matches_numpy(corpus, build):
    case = build.kernel.make_case(np.random.default_rng(0))
    values, result = _run(corpus.zebin(build), build, case, case.launch.global_size, case.launch.local_size)
    _check(build, values, build.kernel.expected(case))
    assert result.hazards == []  # the run would have raised HazardError otherwise
    assert result.threads > 0 and result.lane_instructions >= result.instructions > 0


LAUNCH_CASES = [(b, launch) for b in BUILDS for launch in EXTRA_LAUNCHES.get(b.kernel.name, [])]


@pytest.mark.parametrize("build, launch", LAUNCH_CASES, ids=[f"{b}-g{gs}-l{ls}" for b, (gs, ls) in LAUNCH_CASES])
def test_corpus_kernel_with_other_local_sizes(corpus, build, launch):
    global_size, local_size = launch
    case = build.kernel.make_case(np.random.default_rng(1))
    values, result = _run(corpus.zebin(build), build, case, global_size, local_size)
    _check(build, values, build.kernel.expected(case))
    # every group, edge groups included, ran ceil(items / SIMD) threads
    edges = [
        [min(local, g - start) for start in range(0, g, local)]
        for g, local in zip(global_size, local_size, strict=True)
    ]
    threads = sum(-(-(x * y * z) // result.simd) for x in edges[0] for y in edges[1] for z in edges[2])
    assert result.threads == threads


def test_small_batches_give_the_same_result(corpus):
    """Work-groups run in batches; splitting them differently must not change anything."""
    build = next(b for b in BUILDS if str(b) == "reduction-dg2")
    case = build.kernel.make_case(np.random.default_rng(2))
    z = corpus.zebin(build)
    values = {k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else v) for k, v in case.values.items()}
    sim.run(
        z,
        build.kernel.kernel_name,
        [values[a.name] for a in build.kernel.arguments],
        case.launch.global_size,
        case.launch.local_size,
        batch_threads=2,
    )
    _check(build, values, build.kernel.expected(case))


@pytest.mark.parametrize("name", ["reduction", "convolution"])
def test_execution_profile_adds_up_to_the_instruction_counts(corpus, name):
    build = next(b for b in BUILDS if b.kernel.name == name and b.variant.device == "dg2")
    case = build.kernel.make_case(np.random.default_rng(1))
    _, result = _run(corpus.zebin(build), build, case, case.launch.global_size, case.launch.local_size)
    program = Program(zebin_code(corpus.zebin(build), build), hwlib.XEHPG)
    assert len(result.executions) == len(program.instructions)
    assert sum(result.executions) == result.instructions
    sizes = [getattr(i, "exec_size", 0) for i in program.instructions]
    assert sum(n * s for n, s in zip(result.executions, sizes, strict=True)) == result.lane_instructions
    # the entry point runs once per thread: with hardware-generated local ids (NEO's choice for
    # these power-of-two groups) threads start past the kernel's loading of the ids
    entry = (
        read_zebin(corpus.zebin(build))
        .kernel(build.kernel.kernel_name)
        .execution_env.offset_to_skip_per_thread_data_load
    )
    assert result.executions[program.index_of[entry]] == result.threads
    assert not any(result.executions[: program.index_of[entry]])


def zebin_code(zebin: bytes, build) -> bytes:
    return read_zebin(zebin).kernel(build.kernel.kernel_name).code
