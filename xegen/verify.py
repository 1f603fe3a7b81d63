"""Running a compiled convolution in the simulator: checked against numpy, and measured.

`verify(compilation, seed)` dispatches the whole grid in `xegen.sim` (SWSB hazard checks on) on
random inputs and compares every output with the numpy reference within `conv.check`'s
tolerances.  `first_group_executions` gets per-instruction execution counts cheaply by running
one thread group and scaling by the group count (exact when the control flow is the same in
every group; not where a guard skips what a group at an edge reads only as padding, which group
0 then does more often than most: the summary counts every group without a run,
`xegen.modeling`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .build.run import compare_buffers, device_buffers
from .conv.check import Comparison, random_inputs
from .errors import Error, UnsupportedError
from .pipeline import Compilation

if TYPE_CHECKING:
    from . import sim

#: the simulator's speed in thread-instructions a second: it runs the threads of a dispatch
#: together, about 1.1 million a second on one core of the development machine (a 3x3 layer on
#: xehpg, 220k thread-instructions), so an estimate from it errs on the short side rarely
SIMULATED_PER_SECOND = 1_000_000
#: `check_verify_time` refuses a run estimated longer than this unless told to go on
LONG_VERIFY_SECONDS = 600


@dataclass(frozen=True)
class Verification:
    comparisons: tuple[Comparison, ...]
    run: sim.RunResult

    @property
    def ok(self) -> bool:
        return not self.run.hazards and all(c.ok for c in self.comparisons)


def run_in_simulator(compilation: Compilation, tensors, grid=None, check_hazards: bool = True):
    """Run the kernel on logical `tensors` over `grid` groups (default: the whole problem), the
    outputs pre-filled as `device_buffers` says; returns (the argument buffers after the run, the
    simulator's RunResult)."""
    from . import sim  # (26 modules, 20-40 ms to import: a compile without a run needs none of them)

    kernel, compiled = compilation.kernel, compilation.compiled
    buffers = device_buffers(kernel, tensors)
    args = [buffers[v.name] for v in kernel.arguments]
    global_size = compiled.global_size(grid or kernel.grid)
    result = sim.run(
        compiled.zebin(),
        compiled.name,
        args,
        global_size,
        compiled.local_size,
        hw=compiled.hw,
        check_hazards=check_hazards,
    )
    return buffers, result


def verify(compilation: Compilation, seed: int = 0) -> Verification:
    """Every output against numpy, and the padding of blocked outputs against zero."""
    kernel = compilation.kernel
    tensors = random_inputs(kernel.problem, seed)
    buffers, result = run_in_simulator(compilation, tensors)
    return Verification(tuple(compare_buffers(kernel, buffers, tensors)), result)


def verify_seconds(compilation: Compilation) -> float:
    """The estimated time of `verify(compilation)`: the kernel's thread-instructions (counted
    statically, or from a run of one group when a branch depends on data) at the simulator's
    speed."""
    try:
        executions = compilation.compiled.executions(compilation.kernel.grid)
    except UnsupportedError:
        executions = first_group_executions(compilation)
    return sum(executions) / SIMULATED_PER_SECOND


def check_verify_time(compilation: Compilation, force: bool) -> float:
    """The estimated seconds of a verify run; an Error when that is over LONG_VERIFY_SECONDS
    and not `force`d, so a run of hours does not start without a word."""
    seconds = verify_seconds(compilation)
    if seconds > LONG_VERIFY_SECONDS and not force:
        raise Error(
            f"--verify would simulate about {seconds / 60:,.0f} minutes ({seconds * SIMULATED_PER_SECOND:,.0f} "
            f"thread-instructions): use a smaller --mb, or add --verify-long to run it anyway"
        )
    return seconds


def first_group_executions(compilation: Compilation) -> tuple[int, ...]:
    """Per-instruction thread-executions of the whole grid, from a run of group 0 alone."""
    tensors = random_inputs(compilation.problem, 0)
    _, result = run_in_simulator(compilation, tensors, grid=(1, 1, 1), check_hazards=False)
    groups = math.prod(compilation.kernel.grid)
    return tuple(n * groups for n in result.executions)
