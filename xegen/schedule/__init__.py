"""Scheduling as dataflow-graph transforms (networkx): the compute loop's statements, their
dependences, and transforms that pipeline, multi-buffer, unroll and reorder it.

    from xegen.schedule import ScheduleOptions, schedule, model_cycles
    body = schedule(kernel.body, "xehpg", ScheduleOptions(slm_bufs=2, gmem_bufs=2, prefetch=1))
    print(model_cycles(body, "xehpg").cycles)

Every transform is a pure function from a statement to a statement (`hoist_invariants`, `unroll`,
`schedule_by_latency`, `multi_buffer`); `build_graph` gives the graph of a loop body, `to_dot`
its picture.  docs/schedule.md explains the graph, the transforms and the cycle model.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..hw import Platform
from ..hw import platform as lookup_platform
from ..ir import Stmt
from .buffering import multi_buffer
from .context import BufferTable, innermost_loops
from .dot import GraphDump, to_dot
from .graph import Edge, build_graph
from .labels import LABELS, label
from .loop import LoopBody, Names, flatten_loop
from .model import CycleReport, model_cycles
from .pipeline import Plan, ScheduleError, emit_loop
from .transforms import hoist_invariants, schedule_by_latency, unroll


@dataclass(frozen=True)
class ScheduleOptions:
    slm_bufs: int = 1  # SLM buffers: 1, 2 (double) or 3 (triple buffering, split barriers)
    gmem_bufs: int = 1  # register copies of the global loads in flight: 1 or 2
    prefetch: int = 0  # iterations a global prefetch runs ahead of its load (0: none; LSC only)
    unroll: int = 1  # extra unrolling of the pipelined body
    hoist: bool = True  # move loop invariants out first
    grf_budget: int | None = None  # bytes of GRF the kernel's buffers may take
    slm_rotation: str = "unroll"  # SLM copies by unrolling ("unroll") or by index arithmetic ("index")

    @property
    def changes_loop(self) -> bool:
        return (self.slm_bufs, self.gmem_bufs, self.prefetch, self.unroll) != (1, 1, 0, 1)


def schedule(stmt: Stmt, hw: Platform | str, options: ScheduleOptions = ScheduleOptions(),
             dump: GraphDump | None = None) -> Stmt:
    """The scheduling pass: hoisting, then multi-buffering as a software pipeline.  With nothing
    to do (one buffer of each, no prefetch or unrolling) the statement stays as it is, and `dump`
    still gets a picture of each innermost loop."""
    hw = lookup_platform(hw)
    if not options.changes_loop:
        if dump is not None:
            table = BufferTable.of(stmt)
            names = Names(stmt)
            for loop in innermost_loops(stmt):
                body = flatten_loop(loop, names)
                dump.write("loop", build_graph(body, hw, table.kinds), f"loop {body.var.name} (not transformed)")
        return stmt
    if options.hoist:
        stmt = hoist_invariants(stmt, hw, dump)
    return multi_buffer(stmt, hw, options.slm_bufs, options.gmem_bufs, options.prefetch, options.unroll,
                        options.grf_budget, dump, options.slm_rotation)


__all__ = [
    "BufferTable", "CycleReport", "Edge", "GraphDump", "LABELS", "LoopBody", "Names", "Plan", "ScheduleError",
    "ScheduleOptions", "build_graph", "emit_loop", "flatten_loop", "hoist_invariants", "innermost_loops", "label",
    "model_cycles", "multi_buffer", "schedule", "schedule_by_latency", "to_dot", "unroll",
]
