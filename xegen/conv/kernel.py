"""The kernel record later stages consume, and running it in the IR interpreter.

`build_kernel(problem, hw, overrides)` formulates the GEMM, picks the configuration and builds the
IR.  `run_ir(kernel, tensors)` runs every thread of every group as one numpy batch through
`xegen.ir.execute` and returns the output tensors in logical (oneDNN) dimension order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..errors import Error
from ..hw import Platform
from ..hw import platform as lookup_platform
from ..ir import Stmt, Var, execute, format_stmt
from ..ir.semantics import numpy_dtype, round_array
from ..ir.types import BF16, PTR, Type
from .builder import GROUP_IDS, THREAD_IDS, KernelPlan, build_body, kernel_arguments, plan_kernel
from .config import Config, choose_config
from .gemm import formulate
from .problem import Problem


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
    uses_dpas: bool
    zero_outputs: tuple[str, ...]  # outputs accumulated with atomic adds: zero them before launch
    problem: Problem
    config: Config
    hw: Platform

    thread_ids = THREAD_IDS  # thread index in the group per dimension (s32 external lets)
    group_ids = GROUP_IDS  # group index per dimension (s32 external lets)

    @property
    def index_variables(self) -> tuple[Var, ...]:
        return THREAD_IDS + GROUP_IDS

    @property
    def threads(self) -> int:
        return math.prod(self.thread_group) * math.prod(self.grid)

    def summary(self) -> str:
        flags = [name for name, on in (("barriers", self.uses_barriers), ("atomics", self.uses_atomics),
                                       ("dpas", self.uses_dpas)) if on]
        return (f"kernel {self.name}: grid {'x'.join(map(str, self.grid))} groups of "
                f"{'x'.join(map(str, self.thread_group))} threads, SIMD {self.simd}, {self.grf_count} GRFs, "
                f"SLM {self.slm_bytes} bytes{', uses ' + ', '.join(flags) if flags else ''}")

    def __str__(self) -> str:
        return format_stmt(self.body)


def kernel_name(problem: Problem, hw: Platform) -> str:
    direction = problem.direction.lower()
    types = str(problem.types).replace(":", "")
    return f"conv_{direction}_{types}_{hw.name}"


def build_kernel(problem: Problem, hw: str | Platform = "xehpg",
                 overrides: Mapping[str, object] | None = None) -> Kernel:
    """The kernel of `problem` on `hw`, configured by the heuristic and `overrides`."""
    platform = lookup_platform(hw)
    gemm = formulate(problem)
    config = choose_config(gemm, platform, overrides)
    return kernel_from_plan(plan_kernel(gemm, config, platform))


def kernel_from_plan(plan: KernelPlan) -> Kernel:
    problem = plan.gemm.problem
    return Kernel(
        name=kernel_name(problem, plan.hw),
        body=build_body(plan),
        arguments=tuple(Var(name, PTR) for name in kernel_arguments(plan)),
        thread_group=plan.thread_group,
        simd=plan.config.simd,
        grid=plan.grid,
        slm_bytes=plan.slm_bytes,
        grf_count=plan.config.grf,
        uses_barriers=bool(plan.config.slm),
        uses_atomics=plan.config.k_split > 1,
        uses_dpas=plan.config.fma == "dpas",
        zero_outputs=problem.outputs if plan.config.k_split > 1 else (),
        problem=problem,
        config=plan.config,
        hw=plan.hw,
    )


# Running ----------------------------------------------------------------------------------------

def to_memory(values: np.ndarray, t: Type) -> np.ndarray:
    """Values of type `t` as the array whose bytes the kernel reads (bf16 as raw 16-bit words)."""
    if t == BF16:
        rounded = round_array(np.asarray(values, np.float64), BF16)
        return (rounded.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    return np.ascontiguousarray(round_array(values, t) if t.is_float else np.asarray(values).astype(_dtype(t)))


def from_memory(raw: np.ndarray, t: Type) -> np.ndarray:
    if t == BF16:
        return (raw.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return raw


def _dtype(t: Type) -> np.dtype:
    return np.dtype(np.uint16) if t == BF16 else numpy_dtype(t)


def dispatch_ids(kernel: Kernel) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Per-thread values of the id variables and each thread's group index, for all threads.

    Groups are numbered with dimension 0 fastest, threads within a group likewise."""
    per_group = math.prod(kernel.thread_group)
    thread = np.arange(kernel.threads, dtype=np.int64)
    group, local = thread // per_group, thread % per_group
    env: dict[str, np.ndarray] = {}
    for ids, index, shape in ((THREAD_IDS, local, kernel.thread_group), (GROUP_IDS, group, kernel.grid)):
        below = 1
        for var, size in zip(ids, shape):
            env[var.name] = ((index // below) % size).astype(np.int32)
            below *= size
    return env, group


def run_ir(kernel: Kernel, tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run `kernel` on logical input tensors (oneDNN dimension order, e.g. src as N x C x H x W)
    and return its output tensors the same way."""
    problem = kernel.problem
    buffers: dict[str, np.ndarray] = {}
    for name in problem.inputs:
        if name not in tensors:
            raise Error(f"run_ir: {kernel.name} reads '{name}', which was not given")
        layout, t = problem.layout_of(name), problem.type_of(name)
        values = np.asarray(tensors[name])
        if tuple(values.shape) != layout.dims:
            raise Error(f"run_ir: '{name}' has shape {values.shape}, expected {layout.dims}")
        buffers[name] = to_memory(layout.to_physical(values), t)
    for name in problem.outputs:
        layout, t = problem.layout_of(name), problem.type_of(name)
        buffers[name] = np.zeros(layout.elements, dtype=_dtype(t))
    for var in kernel.arguments:  # arguments the direction does not touch still need a buffer
        buffers.setdefault(var.name, np.zeros(1, dtype=np.uint8))
    env, groups = dispatch_ids(kernel)
    execute(kernel.body, buffers=buffers, env=env, threads=kernel.threads, groups=groups)
    return {name: problem.layout_of(name).from_physical(from_memory(buffers[name], problem.type_of(name)))
            for name in problem.outputs}

