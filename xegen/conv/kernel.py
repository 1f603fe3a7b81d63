"""The kernel record later stages consume, and running it in the IR interpreter.

`build_kernel(problem, hw, overrides)` formulates the GEMM, picks the configuration and builds the
IR; with `slm_bufs` or `gmem_bufs` above 1 the scheduler (`xegen.schedule`) then turns the K loop
into a multi-buffered software pipeline.  `run_ir(kernel, tensors)` runs every thread of every group as one numpy batch through
`xegen.ir.execute` and returns the output tensors in logical (oneDNN) dimension order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from ..errors import Error
from ..hw import Platform
from ..hw import platform as lookup_platform
from ..ir import Stmt, Var, execute, format_stmt
from ..ir.semantics import numpy_dtype, round_array
from ..ir.types import BF16, PTR, Type
from ..schedule import GraphDump, ScheduleOptions, schedule
from .builder import GROUP_IDS, THREAD_IDS, KernelPlan, build_body, kernel_arguments, plan_kernel
from .config import RESERVED_GRFS, Config, choose_config, prefetches
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
    uses_dpas: bool  # dpas or dpasw
    zero_outputs: tuple[str, ...]  # outputs the launcher must zero before launch (see `outputs_to_zero`)
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
                                       (self.config.fma, self.uses_dpas)) if on]
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
                 overrides: Mapping[str, object] | None = None, dump_graph: str | Path | None = None) -> Kernel:
    """The kernel of `problem` on `hw`, configured by the heuristic and `overrides`.  With
    `dump_graph`, the K loop's dataflow graph before and after each scheduling transform is
    written there as DOT (and SVG when Graphviz is installed)."""
    platform = lookup_platform(hw)
    gemm = formulate(problem)
    config = choose_config(gemm, platform, overrides)
    return kernel_from_plan(plan_kernel(gemm, config, platform), dump_graph)


def schedule_options(plan: KernelPlan) -> ScheduleOptions:
    """How the scheduler treats this kernel's K loop: the configuration's buffer counts, a prefetch
    one iteration ahead of the global loads where the platform has LSC prefetch and the loop is
    multi-buffered, and the register budget left after the reserved GRFs."""
    config, hw = plan.config, plan.hw
    return ScheduleOptions(slm_bufs=config.slm_bufs, gmem_bufs=config.gmem_bufs,
                           prefetch=1 if prefetches(config, hw) else 0,
                           grf_budget=(config.grf - RESERVED_GRFS) * hw.grf_bytes)


def kernel_from_plan(plan: KernelPlan, dump_graph: str | Path | None = None) -> Kernel:
    return kernel_record(plan, schedule_body(plan, build_body(plan), graph_dump(plan, dump_graph)))


def graph_dump(plan: KernelPlan, directory: str | Path | None) -> GraphDump | None:
    """Where the scheduler draws the K loop's graphs (`<kernel>-NN-<transform>-before.dot`, ...)."""
    return None if directory is None else GraphDump(directory, f"{kernel_name(plan.gemm.problem, plan.hw)}-")


def schedule_body(plan: KernelPlan, body: Stmt, dump: GraphDump | None = None) -> Stmt:
    """The builder's `body` with its K loop scheduled as the plan's configuration says."""
    return schedule(body, plan.hw, schedule_options(plan), dump)


def kernel_record(plan: KernelPlan, body: Stmt) -> Kernel:
    """The kernel of `plan` with `body` as its IR."""
    problem = plan.gemm.problem
    return Kernel(
        name=kernel_name(problem, plan.hw),
        body=body,
        arguments=tuple(Var(name, PTR) for name in kernel_arguments(plan)),
        thread_group=plan.thread_group,
        simd=plan.config.simd,
        grid=plan.grid,
        slm_bytes=plan.slm_bytes,
        grf_count=plan.config.grf,
        uses_barriers=bool(plan.config.slm),
        uses_atomics=plan.config.k_split > 1,
        uses_dpas=plan.config.systolic,
        zero_outputs=outputs_to_zero(problem, atomic=plan.config.k_split > 1),
        problem=problem,
        config=plan.config,
        hw=plan.hw,
    )


def outputs_to_zero(problem: Problem, atomic: bool) -> tuple[str, ...]:
    """The outputs whose buffers the launcher must fill with zeros before the launch: every output
    when the groups add partial sums with atomics, and every output in a blocked layout with
    padding, which the kernel never writes but oneDNN expects to hold zeros."""
    return tuple(name for name in problem.outputs if atomic or problem.layout_of(name).has_padding)


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
    buffers = device_buffers(kernel, tensors)
    execute_kernel(kernel, buffers)
    return output_tensors(kernel, buffers)


def execute_kernel(kernel: Kernel, buffers: dict[str, np.ndarray]) -> None:
    """Run every thread of every group of `kernel` in the interpreter on `buffers` (in place)."""
    env, groups = dispatch_ids(kernel)
    execute(kernel.body, buffers=buffers, env=env, threads=kernel.threads, groups=groups)


def device_buffers(kernel: Kernel, tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The kernel's argument buffers in memory form, by name: the inputs in their layouts, the
    outputs zeroed where the kernel's contract says so (`zero_outputs`) and filled with garbage
    elsewhere, a small dummy for arguments the direction does not touch."""
    problem = kernel.problem
    buffers: dict[str, np.ndarray] = {}
    for name in problem.inputs:
        if name not in tensors:
            raise Error(f"{kernel.name} reads '{name}', which was not given")
        layout, t = problem.layout_of(name), problem.type_of(name)
        values = np.asarray(tensors[name])
        if tuple(values.shape) != layout.dims:
            raise Error(f"'{name}' has shape {values.shape}, expected {layout.dims}")
        buffers[name] = to_memory(layout.to_physical(values), t)
    for name in problem.outputs:
        layout, t = problem.layout_of(name), problem.type_of(name)
        buffer = np.zeros(layout.elements, dtype=_dtype(t))
        if name not in kernel.zero_outputs:
            buffer.view(np.uint8)[:] = _garbage_byte(t)
        buffers[name] = buffer
    for var in kernel.arguments:
        buffers.setdefault(var.name, np.zeros(16, dtype=np.uint8))
    return buffers


def _garbage_byte(t: Type) -> int:
    """What fills an output the kernel need not find zeroed: 0xFF bytes are NaN in every float
    type and 0x7F bytes a large integer, so an element the kernel fails to write shows up as a
    mismatch (unless the expected integer happens to be 0x7F...)."""
    return 0xFF if t.is_float else 0x7F


def output_tensors(kernel: Kernel, buffers: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The output buffers as logical tensors."""
    problem = kernel.problem
    return {name: problem.layout_of(name).from_physical(from_memory(buffers[name], problem.type_of(name)))
            for name in problem.outputs}


def output_padding(kernel: Kernel, buffers: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The padding elements of every output in a blocked layout (which must hold zeros)."""
    problem = kernel.problem
    return {name: problem.layout_of(name).padding(from_memory(buffers[name], problem.type_of(name)))
            for name in problem.outputs if problem.layout_of(name).has_padding}
