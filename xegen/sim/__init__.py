"""xegen.sim: a functional simulator of the Xe execution model that runs zebin kernels.

    from xegen.sim import run, local
    result = run(zebin_bytes, "saxpy", [y, x, 1.75, 1000], global_size=1024, local_size=64, hw="dg2")

`run` dispatches the kernel as Intel's runtime does (r0, cross-thread and per-thread data,
inline data, binding table, A64 addresses, partial SIMD masks), executes every thread of a
batch of work-groups as numpy arrays, performs the messages on the arrays in place, and
checks the kernel's software scoreboard (`HazardError` lists what is missing).  What is
modeled and what is not: docs/sim.md.
"""

from .dispatch import LocalBuffer, local
from .errors import HazardError, MemoryFault, SimulationError, UnsupportedInstruction
from .hazards import Hazard
from .run import RunResult, run

__all__ = [
    "Hazard",
    "HazardError",
    "LocalBuffer",
    "MemoryFault",
    "RunResult",
    "SimulationError",
    "UnsupportedInstruction",
    "local",
    "run",
]
