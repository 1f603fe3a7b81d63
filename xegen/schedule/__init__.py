"""Scheduling as dataflow-graph transforms (networkx): the compute loop's statements, their
dependences, and transforms that pipeline, multi-buffer, unroll and reorder it.

    from xegen.schedule import ScheduleOptions, schedule, model_cycles
    body = schedule(kernel.body, "xehpg", ScheduleOptions(slm_bufs=2, gmem_bufs=2, prefetch=1))
    print(model_cycles(body, "xehpg").cycles)

The transforms work on a loop's dataflow graph and return a graph (`hoist_graph`, `unroll_graph`,
`list_schedule_graph`, `multi_buffer_graph`); `build_graph` makes the graph of a loop body,
`linearize` turns a transformed graph back into IR, `to_dot` draws it.  `transform_loops` runs
graph transforms on every innermost loop of a statement, and `hoist_invariants`, `unroll`,
`schedule_by_latency`, `multi_buffer` and `schedule` are such statement-to-statement passes.
docs/schedule.md explains the graph, the transforms and the cycle model.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..hw import Platform
from ..hw import platform as lookup_platform
from ..ir import Stmt
from .buffering import check_budgets, check_options, multi_buffer, multi_buffer_graph
from .context import BufferTable, innermost_loops
from .dot import GraphDump, to_dot
from .graph import Edge, build_graph
from .labels import LABELS, label
from .loop import LoopBody, flatten_loop
from .model import CycleReport, model_cycles
from .pipeline import ScheduleError, linearize, list_scheduling_helps
from .transforms import (
    hoist_graph,
    hoist_invariants,
    list_schedule_graph,
    loop_graph,
    schedule_by_latency,
    transform_loops,
    unroll,
    unroll_graph,
)


@dataclass(frozen=True)
class ScheduleOptions:
    slm_bufs: int = 1  # SLM buffers: 1, 2 (double) or 3 (triple buffering, split barriers)
    gmem_bufs: int = 1  # register copies of the global loads in flight: 1, 2 or 3
    prefetch: int = 0  # iterations a global prefetch runs ahead of its load (0: none; LSC only)
    unroll: int = 1  # extra unrolling of the pipelined body
    hoist: bool = True  # move loop invariants out first
    grf_budget: int | None = None  # bytes of GRF the kernel's buffers may take
    slm_rotation: str = "unroll"  # SLM copies by unrolling ("unroll") or by index arithmetic ("index")

    @property
    def pipelines(self) -> bool:
        """Whether the loop is multi-buffered, prefetched or unrolled as a software pipeline."""
        return (self.slm_bufs, self.gmem_bufs, self.prefetch, self.unroll) != (1, 1, 0, 1)


def schedule(
    stmt: Stmt, hw: Platform | str, options: ScheduleOptions = ScheduleOptions(), dump: GraphDump | None = None
) -> Stmt:
    """The scheduling pass, as transforms of each innermost loop's graph: hoisting, then
    multi-buffering as a software pipeline; with one buffer of each kind (and no prefetch or
    unrolling), list scheduling of the body when the cost model says it issues faster."""
    hw = lookup_platform(hw)
    slm_bufs, gmem_bufs, prefetch, unroll_by = options.slm_bufs, options.gmem_bufs, options.prefetch, options.unroll
    check_options(hw, slm_bufs, gmem_bufs, prefetch, unroll_by, options.slm_rotation)

    def transform(graph):
        if options.hoist:
            graph = hoist_graph(graph, dump)
        if options.pipelines:
            return multi_buffer_graph(graph, slm_bufs, gmem_bufs, prefetch, unroll_by, options.slm_rotation, dump)
        return list_schedule_graph(graph, dump) if list_scheduling_helps(graph) else graph

    result = transform_loops(stmt, hw, transform)
    if options.pipelines:
        check_budgets(result, hw, slm_bufs, gmem_bufs, options.grf_budget)
    return result


__all__ = [
    "BufferTable",
    "CycleReport",
    "Edge",
    "GraphDump",
    "LABELS",
    "LoopBody",
    "ScheduleError",
    "ScheduleOptions",
    "build_graph",
    "flatten_loop",
    "hoist_graph",
    "hoist_invariants",
    "innermost_loops",
    "label",
    "linearize",
    "list_schedule_graph",
    "list_scheduling_helps",
    "loop_graph",
    "model_cycles",
    "multi_buffer",
    "multi_buffer_graph",
    "schedule",
    "schedule_by_latency",
    "to_dot",
    "transform_loops",
    "unroll",
    "unroll_graph",
]
