"""A built kernel's buffers, and running its IR in the interpreter.

`device_buffers(kernel, tensors)` lays logical tensors (oneDNN dimension order, e.g. src as
N x C x H x W) out as the kernel's argument buffers; `output_tensors` reads the outputs back.
`run_ir(kernel, tensors)` runs every thread of every group as one numpy batch through
`xegen.ir.execute`; `check_ir(kernel)` does that on random inputs and compares with the numpy
reference (`xegen.conv.check`).  The simulator's check of the compiled kernel (`xegen.verify`)
uses the same buffers and comparisons.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ..conv.check import Comparison, compare, compare_padding, random_inputs
from ..errors import Error, UnsupportedError
from ..ir import execute
from ..ir.semantics import numpy_dtype, round_array
from ..ir.types import BF16, Type
from .builder import GROUP_IDS, THREAD_IDS
from .kernel import Kernel


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
        for var, size in zip(ids, shape, strict=True):
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
    elsewhere, the scratch buffer zeroed, a small dummy for arguments the direction does not touch."""
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
        if name in problem.inputs:  # read and written (a sum post-op's dst)
            continue
        layout, t = problem.layout_of(name), problem.type_of(name)
        buffer = np.zeros(layout.elements, dtype=_dtype(t))
        if name not in kernel.zero_outputs:
            buffer.view(np.uint8)[:] = _garbage_byte(t)
        buffers[name] = buffer
    if kernel.scratch_bytes:
        buffers["scratch"] = np.zeros(kernel.scratch_bytes, dtype=np.uint8)
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
    return {
        name: problem.layout_of(name).from_physical(from_memory(buffers[name], problem.type_of(name)))
        for name in problem.outputs
    }


def output_padding(kernel: Kernel, buffers: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The padding elements of every output in a blocked layout (which must hold zeros)."""
    problem = kernel.problem
    return {
        name: problem.layout_of(name).padding(from_memory(buffers[name], problem.type_of(name)))
        for name in problem.outputs
        if problem.layout_of(name).has_padding
    }


def compare_buffers(kernel: Kernel, buffers: dict[str, np.ndarray], tensors: dict[str, np.ndarray]) -> list[Comparison]:
    """The kernel's buffers after a run on `tensors`: every output against the reference, then the
    padding of every blocked output against zero."""
    return compare(kernel.problem, output_tensors(kernel, buffers), tensors) + compare_padding(
        output_padding(kernel, buffers)
    )


#: the interpreter runs every thread of the grid at once, holding each thread's values side by
#: side: it peaks at about 13 times the register files of all threads (measured: 81 MB for a
#: 784-thread xehpg layer with 6 MiB of registers), so this bound keeps a check near 3 GB
MAX_CHECK_IR_REGISTER_BYTES = 256 << 20


def check_ir(kernel: Kernel, seed: int = 0) -> list[Comparison]:
    """Run the kernel IR on random inputs (outputs pre-filled as `device_buffers` says) and check
    its buffers (`compare_buffers`); a grid too large for the interpreter is refused first."""
    registers = kernel.threads * kernel.grf_count * kernel.hw.grf_bytes
    if registers > MAX_CHECK_IR_REGISTER_BYTES:
        raise UnsupportedError(
            f"--check-ir runs all {kernel.threads:,} threads at once: their {registers >> 20:,} MiB "
            f"of registers are over the interpreter's {MAX_CHECK_IR_REGISTER_BYTES >> 20} MiB "
            "(about 13 times that in memory); use a smaller --mb, or --verify"
        )
    tensors = random_inputs(kernel.problem, seed)
    buffers = device_buffers(kernel, tensors)
    execute_kernel(kernel, buffers)
    return compare_buffers(kernel, buffers, tensors)
