"""The loop transforms, each a pure function from a statement to a statement.

Each finds the innermost loops of the statement, builds a loop's dependence graph, changes it
and linearizes it back to IR (`pipeline.emit_loop`):

- `hoist_invariants`: lets and statements whose every run is the same move before the loop;
- `unroll`: `factor` iterations per trip, the remainder peeled after the loop;
- `schedule_by_latency`: the body reordered by list scheduling (loads early, multiplies as soon as
  their data arrive);
- `multi_buffer`: SLM double/triple buffering with split barriers, GRF double buffering of the
  global loads, prefetch, as a software pipeline (`buffering.py` makes the plan).

With `dump`, each writes the graph before and after it (`dot.GraphDump`).
"""

from __future__ import annotations

import networkx as nx

from ..hw import Platform
from ..hw import platform as lookup_platform
from ..ir import For, IntImm, Let, Stmt, Var, free_vars, seq
from .access import accesses
from .context import BufferTable, each_innermost_loop, innermost_loops, replace_loop
from .dot import GraphDump, write_graph
from .graph import SYNC_LABELS, build_graph, stmt_nodes
from .loop import LoopBody, Names, flatten_loop
from .pipeline import Plan, emit_loop


# Hoisting -----------------------------------------------------------------------------------------

def hoist_invariants(stmt: Stmt, hw: Platform | str = "xehpg", dump: GraphDump | None = None) -> Stmt:
    """Move loop-invariant lets, and statements whose effect is the same in every iteration, in
    front of their loop."""
    hw = lookup_platform(hw)
    return each_innermost_loop(stmt, lambda s, loop, names, table: _hoist_one(s, loop, names, table, hw, dump))


def _hoist_one(stmt: Stmt, loop: For, names: Names, table: BufferTable, hw: Platform,
               dump: GraphDump | None) -> Stmt:
    body = flatten_loop(loop, names)
    graph = build_graph(body, hw, table.kinds)
    write_graph(dump, "hoist-before", graph, f"loop {body.var.name} before hoisting invariants")
    variant = {body.var}
    for var, value in body.lets:
        if any(v in variant for v in free_vars(value)):
            variant.add(var)
    runs = isinstance(body.init, IntImm) and isinstance(body.bound, IntImm) and body.bound.value > body.init.value
    hoisted: list[int] = []
    if runs:  # a statement may leave the loop only if the loop runs at least once
        written_global = {a.buffer.name for s in body.stmts for a in accesses(s)
                          if a.write and table.kind(a.buffer.name) == "global"}
        changed = True
        while changed:
            changed = False
            for n in stmt_nodes(graph):
                if n not in hoisted and _invariant(graph, n, hoisted, variant, table, written_global):
                    hoisted.append(n)
                    changed = True
    hoisted.sort()
    lets_out = [(v, e) for v, e in body.lets if v not in variant]
    if not hoisted and not lets_out:
        write_graph(dump, "hoist-after", graph, f"loop {body.var.name}: nothing invariant")
        return stmt
    kept = LoopBody(body.var, body.init, body.bound, tuple((v, e) for v, e in body.lets if v in variant),
                    tuple(s for i, s in enumerate(body.stmts) if i not in hoisted))
    after = build_graph(kept, hw, table.kinds)
    write_graph(dump, "hoist-after", after, f"loop {body.var.name} after hoisting {len(hoisted)} statements and "
                                      f"{len(lets_out)} lets")
    result: Stmt = seq(*[body.stmts[i] for i in hoisted], kept.rebuild())
    for var, value in reversed(lets_out):
        result = Let(var, value, result)
    return replace_loop(stmt, loop, result)


def _invariant(graph: nx.DiGraph, n: int, hoisted: list[int], variant: set[Var], table: BufferTable,
               written_global: set[str]) -> bool:
    data = graph.nodes[n]
    if data["label"] in SYNC_LABELS or data["label"] in ("compound", "prefetch"):
        return False
    if any(v in variant for v in free_vars(data["stmt"])):
        return False
    for access in accesses(data["stmt"]):
        kind = table.kind(access.buffer.name)
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

def unroll(stmt: Stmt, factor: int, hw: Platform | str = "xehpg", dump: GraphDump | None = None) -> Stmt:
    """Unroll each innermost loop by `factor` (constant bounds; leftover iterations are peeled
    after the loop), interleaving the copies by list scheduling."""
    if factor < 1:
        raise ValueError(f"unroll factor must be at least 1, not {factor}")
    hw = lookup_platform(hw)

    def one(s: Stmt, loop: For, names: Names, table: BufferTable) -> Stmt:
        body = flatten_loop(loop, names)
        graph = build_graph(body, hw, table.kinds)
        write_graph(dump, "unroll-before", graph, f"loop {body.var.name} before unrolling by {factor}")
        replacement = emit_loop(body, graph, Plan(unroll=factor), names)
        _dump_result(dump, "unroll-after", replacement, hw, table, names, f"unrolled by {factor}")
        return replace_loop(s, loop, replacement)

    return each_innermost_loop(stmt, one)


def schedule_by_latency(stmt: Stmt, hw: Platform | str = "xehpg", dump: GraphDump | None = None) -> Stmt:
    """Reorder each innermost loop's body by list scheduling with `hw`'s latencies."""
    hw = lookup_platform(hw)

    def one(s: Stmt, loop: For, names: Names, table: BufferTable) -> Stmt:
        body = flatten_loop(loop, names)
        graph = build_graph(body, hw, table.kinds)
        write_graph(dump, "list-schedule-before", graph, f"loop {body.var.name} in program order")
        replacement = emit_loop(body, graph, Plan(), names)
        _dump_result(dump, "list-schedule-after", replacement, hw, table, names, "list scheduled")
        return replace_loop(s, loop, replacement)

    return each_innermost_loop(stmt, one)


def _dump_result(dump: GraphDump | None, name: str, replacement: Stmt, hw: Platform, table: BufferTable,
                 names: Names, what: str) -> None:
    """The graph of the loop a transform produced (its steady-state loop, if it kept one)."""
    if dump is None:
        return
    loops = innermost_loops(replacement)
    if not loops:
        graph = nx.DiGraph()
        dump.write(name, graph, f"{what}: no loop left (every iteration peeled)")
        return
    body = flatten_loop(loops[0], Names(replacement))
    dump.write(name, build_graph(body, hw, table.kinds), f"loop {body.var.name} {what}")
