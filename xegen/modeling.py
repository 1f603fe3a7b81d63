"""The modeled cycles of a compiled convolution: `xegen.emit.cost` fed from the compilation.

- execution counts: counted from the kernel's loops and branches (`CompiledKernel.executions`,
  `xegen.lower.counts`), no simulator run;
- launch: threads, threads per group, GRF mode and SLM of the kernel record;
- workload: the problem's multiply-adds (as benchdnn counts them) and tensor bytes;
- tiling: read off the grid, which the conv builder lays out as N groups along dimension 0,
  M groups along 1, GEMM batches (convolution groups, times the phases of strided backward
  data) times K slices along 2 (`xegen.build.builder`).  The
  same `Tiling` for a foreign kernel comes from its own launch (docs/model.md).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Protocol

from .conv.problem import Problem
from .emit.cost import Cycles, kernel_cycles
from .emit.roofline import Tiling, Workload, roofline
from .hw import Platform
from .plan import formulate

if TYPE_CHECKING:
    from .build.kernel import Kernel
    from .lower import CompiledKernel
    from .plan.config import Config


class Compilation(Protocol):
    """What the model reads of a compilation (`pipeline.Compilation`, which prices its candidates
    with this module): the problem, the kernel record and the compiled code."""

    @property
    def problem(self) -> Problem: ...
    @property
    def kernel(self) -> Kernel: ...
    @property
    def config(self) -> Config: ...
    @property
    def compiled(self) -> CompiledKernel: ...


_FMA_KIND = {"f32": "f32", "f16": "f16", "bf16": "bf16", "s8": "int8", "u8": "int8"}


def multiply_adds(problem: Problem) -> int:
    """The problem's multiply-adds as benchdnn counts them, the same in every direction: each
    output point times each tap of its channel group, padding taps included.  (A backward-data
    GEMM over every input point would count the taps a stride skips.)"""
    d = problem.desc
    return d.mb * d.oc * (d.ic // d.g) * d.od * d.oh * d.ow * d.kd * d.kh * d.kw


def fma_kind(problem: Problem) -> str:
    """The data type of the problem's multiplies, as `hw.fma_per_clock_per_eu` names it."""
    return _FMA_KIND[formulate(problem).a.type.kind]


def tensor_bytes(problem: Problem, tensor: str) -> int:
    return math.prod(problem.dims_of(tensor)) * problem.type_of(tensor).size


def workload(problem: Problem, plan: str = "gemm") -> Workload:
    """The problem in the terms of the GEMM a kernel of `plan` computes (plan=swapped: the
    weights are A, the gathered pixels' tensor B: forward the source, backward data diff_dst)."""
    gemm = formulate(problem, plan)
    bias = tensor_bytes(problem, "bias") if problem.has_bias else 0
    # forward: the bias and what the post-ops and scales read (a sum reads dst too)
    extra = sum(tensor_bytes(problem, name) for name in problem.inputs if name not in ("src", "wei"))
    a_bytes, b_bytes, c_bytes = (tensor_bytes(problem, view.tensor) for view in (gemm.a, gemm.b, gemm.c))
    return Workload(
        multiply_adds(problem),
        fma_kind(problem),
        a_bytes,
        b_bytes,
        c_bytes,
        other_read_bytes=extra if problem.is_forward else 0,
        other_written_bytes=0 if problem.is_forward else bias,
    )


def memory_floor(problem: Problem, hw: Platform) -> float:
    """The least the model prices any kernel of `problem` on `hw`: its compulsory bytes at DRAM
    bandwidth (the roofline's memory term; the model's memory term moves at least those bytes)."""
    return roofline(workload(problem), hw).memory


def tiling(compilation: Compilation) -> Tiling:
    if compilation.kernel.tiling is not None:  # a strategy that says how its grid divides the GEMM
        return Tiling(*compilation.kernel.tiling)
    n_groups, m_groups, rest = compilation.kernel.grid
    batches = formulate(compilation.problem).groups  # convolution groups (times stride phases)
    return Tiling(m_groups, n_groups, rest // batches, batches)


def modeled_cycles(compilation: Compilation, executions=None) -> Cycles:
    """The model of `compilation`'s kernel over its whole grid, from `executions` (default: the
    static counts)."""
    kernel, compiled = compilation.kernel, compilation.compiled
    if executions is None:
        executions = compiled.executions(kernel.grid)
    return kernel_cycles(
        compiled.instructions,
        executions,
        compiled.hw,
        kernel.threads,
        math.prod(kernel.thread_group),
        grf_count=kernel.grf_count,
        slm_bytes=compiled.stats.slm_bytes,
        workload=workload(compilation.problem, compilation.config.plan),
        tiling=tiling(compilation),
    )
