"""What both e2e tables measure of a kernel: compile time of a whole process, static counts of the
binary, a verified simulator run of its whole grid, and the cost model's cycles over that run's
per-instruction execution counts (`xegen.emit.cost`, the same model for every binary).

`modeled` prices every binary from the same inputs: its instructions and their executions in the
run, its launch (threads per group from the local size and the zebin's SIMD width, GRF mode and
SLM from the zebin), the problem's workload (`xegen.modeling.workload`: multiply-adds and tensor
bytes, the same for every kernel of a layer) and the kernel's own `Tiling`, derived from its
launch by whoever knows how the kernel reads its group ids: `xegen.modeling.tiling` (xegen's
grid), `peer.tiling`, `onednn.tiling`.

xegen's kernel (`xegen_side`) and the naive OpenCL peer compiled by IGC (`peer_side`) are
measured here; oneDNN's production kernels in production.py, with the same `modeled`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.e2e import peer
from tests.conv.shapes import short_name
from tests.test_end_to_end import CONFIGS as ACCEPTANCE_MATRIX
from xegen import hw as hwlib
from xegen import oracles
from xegen.conv import Descriptor, make_problem
from xegen.conv.check import compare, random_inputs
from xegen.conv.problem import Problem
from xegen.emit.analysis import kernel_counts
from xegen.emit.cost import kernel_cycles
from xegen.emit.decoder import decode_with_sizes
from xegen.emit.roofline import Tiling
from xegen.emit.zebin import read_zebin
from xegen.errors import Error
from xegen.modeling import tiling, workload
from xegen.pipeline import compile_problem
from xegen.report import peak_fraction
from xegen.verify import verify

ROOT = Path(__file__).resolve().parents[2]
SEED = 0


@dataclass(frozen=True)
class Case:
    """One cell kind of the matrix: a platform, a direction and data types."""

    hw: str
    direction: str
    dt: str

    @property
    def name(self) -> str:
        return f"{self.hw}/{self.direction.lower()}/{self.dt}"

    def problem(self, desc: Descriptor) -> Problem:
        return make_problem(desc, self.direction, self.dt, mb=1)


# the acceptance matrix, as the end-to-end tests run it
CASES = tuple(Case(*fields) for fields in ACCEPTANCE_MATRIX)


def layer_name(desc: Descriptor) -> str:
    """A resnet_50 layer's name; a layer of the user's own goes by its descriptor."""
    return short_name(desc) or str(desc)


def timed_process(what: str, argv: list[str], cwd: str) -> float:
    """Wall-clock seconds of a whole process; a failure is an Error quoting its first error line."""
    return timed_process_cpu(what, argv, cwd)[0]


def timed_process_cpu(what: str, argv: list[str], cwd: str, root: Path = ROOT) -> tuple[float, float]:
    """Wall-clock seconds of a whole process and the CPU seconds (user + system) it used, with
    `root`'s xegen first on the path; a failure is an Error quoting its first error line.  (On a
    shared machine the CPU time moves less with the load than the wall clock.)"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    # Timed as an installed package runs: from cached bytecode, not recompiling xegen's sources
    # in every process (which PYTHONDONTWRITEBYTECODE=1 would make it do).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # (the waited-for child is counted now)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode != 0:
        lines = (result.stderr + result.stdout).strip().splitlines() or [f"exit status {result.returncode}"]
        raise Error(f"{what} failed: {next((line for line in lines if 'error:' in line.lower()), lines[-1])}")
    return seconds, cpu


def binary_counts(instructions: list, sizes: list) -> dict:
    """Counts of a decoded binary; `math_density` is the inner loop's, or the whole kernel's when
    the compiler unrolled every loop around the multiplies (`unrolled`)."""
    counts = kernel_counts(instructions, sizes)
    unrolled = counts.inner is None
    density = (counts.total if unrolled else counts.inner).math_density
    return {**counts.as_dict(), "math_density": density, "unrolled": unrolled}


def modeled(
    problem: Problem,
    zebin: bytes,
    kernel: str,
    hw: hwlib.Platform,
    executions,
    local_size: tuple[int, ...],
    kernel_tiling: Tiling | None,
    plan: str = "gemm",
) -> dict:
    """Counts, modeled cycles, bound, roofline fraction and fraction of peak of a binary run in the
    simulator with work-groups of `local_size` work-items (a group's threads share one subslice),
    priced with the problem's workload and the kernel's tiling (None: no reuse credited)."""
    binary = read_zebin(zebin).kernel(kernel)
    env = binary.execution_env
    instructions, sizes = decode_with_sizes(binary.code, hw)
    group_threads = -(-math.prod(local_size) // env.simd_size)
    cycles = kernel_cycles(
        instructions,
        executions,
        hw,
        group_threads=group_threads,
        grf_count=env.grf_count,
        slm_bytes=env.slm_size,
        workload=workload(problem, plan),
        tiling=kernel_tiling,
    )
    return {
        **binary_counts(instructions, sizes),
        "modeled": cycles.as_dict(),
        "device_cycles": cycles.device,
        "bound": cycles.bound,
        "roofline_fraction": cycles.roofline_fraction,
        "peak_fraction": peak_fraction(problem, hw, cycles),
        "tiling": None if kernel_tiling is None else dataclasses.asdict(kernel_tiling),
    }


def xegen_side(problem: Problem, case: Case, tmp: str) -> dict:
    argv = [
        sys.executable,
        "-m",
        "xegen",
        "conv",
        str(problem.desc),
        "--mb",
        "1",
        "--dir",
        case.direction,
        "--dt",
        case.dt,
        "--hw",
        case.hw,
        "-o",
        "xegen.zebin",
        "--no-model",
    ]
    seconds = timed_process("xegen conv", argv, tmp)
    compilation = compile_problem(problem, case.hw)
    zebin = compilation.zebin()
    if zebin != Path(tmp, "xegen.zebin").read_bytes():
        raise Error(f"{problem.desc}: the command and the library compiled different bytes")
    checked = verify(compilation, seed=SEED)
    compiled = compilation.compiled
    return {
        "compile_seconds": seconds,
        "grfs": compiled.stats.grfs_used,
        "config": str(compilation.config),
        **modeled(
            problem,
            zebin,
            compiled.name,
            compiled.hw,
            checked.run.executions,
            compiled.local_size,
            tiling(compilation),
            compilation.config.plan,
        ),
        "hazards": len(checked.run.hazards),
        "verify": [str(c) for c in checked.comparisons],
        "verified": checked.ok,
    }


def peer_side(problem: Problem, case: Case, tmp: str) -> dict:
    hw = hwlib.platform(case.hw)
    Path(tmp, "peer.cl").write_text(peer.opencl_source(problem))
    argv = [
        oracles.find_tool("ocloc"),
        "compile",
        "-file",
        "peer.cl",
        "-device",
        hw.ocloc_device,
        "-output",
        "peer",
        "-output_no_suffix",
        "--format",
        "zebin",
    ]
    seconds = timed_process("ocloc compile", argv, tmp)
    zebin = Path(tmp, "peer").read_bytes()
    tensors = random_inputs(problem, SEED)
    got, result = peer.simulate(problem, zebin, hw, tensors)
    comparisons = compare(problem, got, tensors)
    return {
        "compile_seconds": seconds,
        **modeled(
            problem,
            zebin,
            peer.kernel_name(problem),
            hw,
            result.executions,
            peer.launch(problem)[1],
            peer.tiling(problem),
        ),
        "verify": [str(c) for c in comparisons],
        "verified": all(c.ok for c in comparisons),
    }
