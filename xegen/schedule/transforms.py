"""Hoisting, unrolling and list scheduling: transforms from a loop's graph to a graph.

- `hoist_graph`: lets and statements whose every run is the same leave the graph for the front
  of the loop (the graph's `outer_lets` and `preheader`);
- `unroll_graph`: the linearized loop runs `factor` iterations per trip (the graph's `unroll`),
  interleaved by list scheduling, the remainder peeled after it;
- `list_schedule_graph`: the body is to be linearized by list scheduling (loads early,
  multiplies as soon as their data arrive) instead of in program order.

`transform_loops` applies graph transforms to each innermost loop of a statement: it builds the
loop's graph (`loop_graph`), transforms it and linearizes the result (`pipeline.linearize`) in
the loop's place.  `hoist_invariants`, `unroll` and `schedule_by_latency` do that with one
transform each.  With `dump`, each transform writes the graph before and after it
(`dot.GraphDump`).
"""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx

from ..hw import Platform
from ..hw import platform as lookup_platform
from ..ir import For, IntImm, Names, Stmt, Var, free_vars
from .access import accesses
from .context import (
    BufferTable,
    addressed_buffers,
    buffers_used_outside,
    grow_allocations,
    innermost_loops,
    replace_loop,
)
from .dot import GraphDump, write_graph
from .graph import SYNC_LABELS, build_graph, let_nodes, restructure, stmt_nodes
from .loop import flatten_loop
from .pipeline import linearize

Transform = Callable[[nx.DiGraph], nx.DiGraph]


def loop_graph(stmt: Stmt, loop: For, hw: Platform | str, names: Names) -> nx.DiGraph:
    """The graph of `loop`, one of `stmt`'s loops, knowing the buffers around it: their `sizes`,
    and those used `outside` the loop (`names`: the names in use in `stmt`)."""
    table = BufferTable.of(stmt)
    graph = build_graph(flatten_loop(loop, names), lookup_platform(hw), table.kinds)
    graph.graph.update(sizes=table.sizes, outside=frozenset(buffers_used_outside(stmt, loop)))
    return graph


def transform_loops(stmt: Stmt, hw: Platform, transform: Transform) -> Stmt:
    """Replace each innermost loop of `stmt` by the linearization of `transform(its graph)`
    (kept as it is when the transform changes nothing)."""
    names = Names(stmt)
    for loop in innermost_loops(stmt):
        graph = transform(loop_graph(stmt, loop, hw, names))
        if graph.graph["changed"]:
            stmt = grow_allocations(replace_loop(stmt, loop, linearize(graph, names)), graph.graph["copies"])
    return stmt


# Hoisting -----------------------------------------------------------------------------------------


def hoist_graph(graph: nx.DiGraph, dump: GraphDump | None = None) -> nx.DiGraph:
    """The graph without its loop-invariant lets, and without the statements whose effect is the
    same in every iteration: those go in front of the loop."""
    var = graph.graph["var"].name
    write_graph(dump, "hoist-before", graph, f"loop {var} before hoisting invariants")
    variant = {graph.graph["var"]}
    for n in let_nodes(graph):
        if any(v in variant for v in free_vars(graph.nodes[n]["value"])):
            variant.add(graph.nodes[n]["var"])
    init, bound = graph.graph["init"], graph.graph["bound"]
    runs = isinstance(init, IntImm) and isinstance(bound, IntImm) and bound.value > init.value
    hoisted: list[int] = []
    if runs:  # a statement may leave the loop only if the loop runs at least once
        kinds = graph.graph["buffer_kinds"]
        written_global = {
            a.buffer.name
            for n in stmt_nodes(graph)
            for a in accesses(graph.nodes[n]["stmt"])
            if a.write and kinds.get(a.buffer.name, "global") == "global"
        }
        changed = True
        while changed:
            changed = False
            for n in stmt_nodes(graph):
                if n not in hoisted and _invariant(graph, n, hoisted, variant, written_global):
                    hoisted.append(n)
                    changed = True
    hoisted.sort()
    lets_out = [n for n in let_nodes(graph) if graph.nodes[n]["var"] not in variant]
    if not hoisted and not lets_out:
        write_graph(dump, "hoist-after", graph, f"loop {var}: nothing invariant")
        return graph
    result = restructure(
        graph, [n for n in stmt_nodes(graph) if n not in hoisted], [n for n in let_nodes(graph) if n not in lets_out]
    )
    moved = [graph.nodes[n]["stmt"] for n in hoisted]
    result.graph["outer_lets"] = graph.graph["outer_lets"] + tuple(
        (graph.nodes[n]["var"], graph.nodes[n]["value"]) for n in lets_out
    )
    result.graph["preheader"] = graph.graph["preheader"] + tuple(moved)
    result.graph["outside"] = graph.graph["outside"].union(*(addressed_buffers(s) for s in moved))
    write_graph(
        dump, "hoist-after", result, f"loop {var} after hoisting {len(hoisted)} statements and {len(lets_out)} lets"
    )
    return result


def _invariant(graph: nx.DiGraph, n: int, hoisted: list[int], variant: set[Var], written_global: set[str]) -> bool:
    data = graph.nodes[n]
    if data["label"] in SYNC_LABELS or data["label"] in ("compound", "prefetch"):
        return False
    if any(v in variant for v in free_vars(data["stmt"])):
        return False
    for access in accesses(data["stmt"]):
        kind = graph.graph["buffer_kinds"].get(access.buffer.name, "global")
        if kind == "slm" or (kind == "global" and (access.write or access.buffer.name in written_global)):
            return False
    for u, _, edge in graph.in_edges(n, data=True):
        if graph.nodes[u]["kind"] != "stmt" or u in hoisted:
            continue
        # only a later iteration overwriting what an earlier one read, or n rewriting its own bytes
        harmless = set(edge["kinds"]) <= ({"WAR", "WAW"} if u == n else {"WAR"}) and edge["distance"] > 0
        if not harmless:
            return False
    return True


# Unrolling and list scheduling --------------------------------------------------------------------


def unroll_graph(graph: nx.DiGraph, factor: int, dump: GraphDump | None = None) -> nx.DiGraph:
    """`factor` times as many iterations per trip of the linearized loop (constant bounds;
    leftover iterations are peeled after it), the copies interleaved by list scheduling."""
    if factor < 1:
        raise ValueError(f"unroll factor must be at least 1, not {factor}")
    var = graph.graph["var"].name
    write_graph(dump, "unroll-before", graph, f"loop {var} before unrolling by {factor}")
    result = graph.copy()
    result.graph.update(unroll=graph.graph["unroll"] * factor, order="latency", changed=True)
    write_graph(
        dump,
        "unroll-after",
        result,
        f"loop {var} unrolled by {factor}: {result.graph['unroll']} iterations per trip, list scheduled",
    )
    return result


def list_schedule_graph(graph: nx.DiGraph, dump: GraphDump | None = None) -> nx.DiGraph:
    """The body to be linearized by list scheduling with the platform's latencies."""
    var = graph.graph["var"].name
    write_graph(dump, "list-schedule-before", graph, f"loop {var} in program order")
    result = graph.copy()
    result.graph.update(order="latency", changed=True)
    write_graph(dump, "list-schedule-after", result, f"loop {var} to be list scheduled")
    return result


# The transforms on statements ---------------------------------------------------------------------


def hoist_invariants(stmt: Stmt, hw: Platform | str = "xehpg", dump: GraphDump | None = None) -> Stmt:
    """Move loop-invariant lets, and statements whose effect is the same in every iteration, in
    front of their loop."""
    return transform_loops(stmt, lookup_platform(hw), lambda graph: hoist_graph(graph, dump))


def unroll(stmt: Stmt, factor: int, hw: Platform | str = "xehpg", dump: GraphDump | None = None) -> Stmt:
    """Unroll each innermost loop by `factor` (constant bounds; leftover iterations are peeled
    after the loop), interleaving the copies by list scheduling."""
    if factor < 1:
        raise ValueError(f"unroll factor must be at least 1, not {factor}")
    return transform_loops(stmt, lookup_platform(hw), lambda graph: unroll_graph(graph, factor, dump))


def schedule_by_latency(stmt: Stmt, hw: Platform | str = "xehpg", dump: GraphDump | None = None) -> Stmt:
    """Reorder each innermost loop's body by list scheduling with `hw`'s latencies."""
    return transform_loops(stmt, lookup_platform(hw), lambda graph: list_schedule_graph(graph, dump))
