"""The scratch buffer of a kernel whose thread groups share outputs of a 16-bit type.

Groups that split a reduction (k_split) add their partial sums into f32 outputs with float
atomics; bf16 and f16 outputs take no float atomics, and rounding each group's share to 16 bits
before adding would lose what f32 accumulation keeps.  Such a kernel takes one more argument,
`scratch`, which the launcher fills with zeros (`Kernel.scratch_bytes`):

    f32 sums of each output, in the output's element order      (regions, one per output)
    one arrival counter per thread slot sharing outputs           (counters: u32)

Every thread adds its partial sums into the regions with float atomics, fences them at the
device's scope, and takes a ticket: an atomic increment of its slot's counter that returns the
old count.  The thread that draws the last ticket (k_split - 1) knows every other group's sums
are in: it reads the totals back with atomic exchanges (atomics are performed where every group's
are, so no cache holds stale sums; the exchange leaves zeros behind), converts them and stores
them in the outputs.  The other threads' read-back and stores are masked off.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..conv.problem import Problem
from ..ir import Var
from ..ir.types import F32, PTR
from .config import Config

TICKET = Var("ticket", PTR)  # the register a thread's ticket (its counter's old count) comes back in


@dataclass(frozen=True)
class Scratch:
    regions: tuple[tuple[str, int], ...]  # (output, byte offset of its f32 sums)
    counters: int  # byte offset of the counters, one u32 per thread slot
    slots: int
    bytes: int

    def offset(self, tensor: str) -> int:
        return dict(self.regions)[tensor]


def needs_scratch(problem: Problem, config: Config) -> bool:
    """Whether groups that split the reduction must meet in a scratch buffer: k_split > 1 with a
    16-bit float output."""
    return config.k_split > 1 and any(
        problem.type_of(name).is_float and problem.type_of(name) != F32 for name in problem.outputs
    )


def partial_sums_scratch(problem: Problem, slots: int) -> Scratch:
    """The scratch of `problem`'s outputs (each as f32, padding included) and `slots` counters."""
    regions, at = [], 0
    for name in problem.outputs:
        regions.append((name, at))
        at += problem.layout_of(name).elements * F32.size
    return Scratch(tuple(regions), at, slots, at + slots * 4)
