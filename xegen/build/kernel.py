"""The built kernel as later stages consume it: its IR and the facts a launcher needs.

`kernel_record(plan, body)` pairs a plan's kernel IR (as built, or scheduled and optimized) with
its arguments, grid, thread group, SIMD width, SLM and register budget, and which outputs (and
scratch) the launcher must zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..conv.problem import Problem
from ..hw import Platform
from ..ir import Stmt, Var, format_stmt
from ..ir.types import PTR
from ..plan.config import Config
from ..plan.kernel import KernelPlan
from .builder import GROUP_IDS, THREAD_IDS, kernel_arguments, scratch_of


@dataclass(frozen=True)
class Kernel:
    name: str
    body: Stmt
    arguments: tuple[Var, ...]  # buffer arguments (type ptr), in order: src, wei, dst[, bias]
    thread_group: tuple[int, int, int]  # threads per group along dims 0, 1, 2
    simd: int
    grid: tuple[int, int, int]  # groups along dims 0, 1, 2
    slm_bytes: int
    grf_count: int
    uses_barriers: bool
    uses_atomics: bool
    uses_dpas: bool  # dpas or dpasw
    zero_outputs: tuple[str, ...]  # outputs the launcher must zero before launch (see `outputs_to_zero`)
    problem: Problem
    config: Config
    hw: Platform
    # (m_groups, n_groups, k_groups, batches): how the grid divides the GEMM, for the cost model's
    # traffic (`xegen.emit.roofline.Tiling`); None: the GEMM plan's grid (N, M, groups x K slices)
    tiling: tuple[int, int, int, int] | None = None
    # bytes of the last argument, `scratch`, which the launcher fills with zeros (0: no such
    # argument; `xegen.plan.scratch`)
    scratch_bytes: int = 0

    thread_ids = THREAD_IDS  # thread index in the group per dimension (s32 external lets)
    group_ids = GROUP_IDS  # group index per dimension (s32 external lets)

    @property
    def index_variables(self) -> tuple[Var, ...]:
        return THREAD_IDS + GROUP_IDS

    @property
    def threads(self) -> int:
        return math.prod(self.thread_group) * math.prod(self.grid)

    def summary(self) -> str:
        flags = [
            name
            for name, on in (
                ("barriers", self.uses_barriers),
                ("atomics", self.uses_atomics),
                (self.config.fma, self.uses_dpas),
            )
            if on
        ]
        return (
            f"kernel {self.name}: grid {'x'.join(map(str, self.grid))} groups of "
            f"{'x'.join(map(str, self.thread_group))} threads, SIMD {self.simd}, {self.grf_count} GRFs, "
            f"SLM {self.slm_bytes} bytes{', uses ' + ', '.join(flags) if flags else ''}"
        )

    def __str__(self) -> str:
        return format_stmt(self.body)


def kernel_name(problem: Problem, hw: Platform) -> str:
    direction = problem.direction.lower()
    types = str(problem.types).replace(":", "")
    return f"conv_{direction}_{types}_{hw.name}"


def kernel_record(plan: KernelPlan, body: Stmt) -> Kernel:
    """The kernel of `plan` (the GEMM plan's, or another strategy's with the same attributes and
    its own `tiling`) with `body` as its IR."""
    problem = plan.gemm.problem
    scratch = scratch_of(plan)
    partial = (plan.config.k_split > 1 and scratch is None) or plan.gemm.skips_outputs
    return Kernel(
        name=kernel_name(problem, plan.hw),
        body=body,
        arguments=tuple(Var(name, PTR) for name in kernel_arguments(plan)),
        thread_group=plan.thread_group,
        simd=plan.config.simd,
        grid=plan.grid,
        slm_bytes=plan.slm_bytes,
        grf_count=plan.config.grf,
        uses_barriers=bool(plan.config.slm) or plan.config.tg_k > 1,
        uses_atomics=plan.config.k_split > 1,
        uses_dpas=plan.config.systolic,
        zero_outputs=outputs_to_zero(problem, partial=partial),
        problem=problem,
        config=plan.config,
        hw=plan.hw,
        tiling=getattr(plan, "tiling", None),
        scratch_bytes=scratch.bytes if scratch else 0,
    )


def outputs_to_zero(problem: Problem, partial: bool) -> tuple[str, ...]:
    """The outputs whose buffers the launcher must fill with zeros before the launch: every output
    when the kernel writes only part of it (groups adding partial sums with atomics; strided
    backward data whose phases leave inputs no kernel position reaches), and every output in a
    blocked layout with padding, which the kernel never writes but oneDNN expects to hold zeros.
    An output the kernel also reads (dst under a sum post-op) holds its old values instead, with
    its padding zero as oneDNN keeps it."""
    return tuple(
        name
        for name in problem.outputs
        if name not in problem.inputs and (partial or problem.layout_of(name).has_padding)
    )
