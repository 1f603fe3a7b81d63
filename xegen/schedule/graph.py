"""The dataflow graph of a loop body (a networkx DiGraph).

Nodes are the body's statements (ids 0..n-1, in program order) and its lets (ids n.., kind
"let", labelled "header").  A statement node carries its `stmt`, `label` and `cost`.  An edge
u -> v says that v, `distance` iterations after u, must run after u: distance 0 within one
iteration, 1 (or the number of copies of a multi-buffered buffer) from one iteration to a later
one.  Between two nodes only the smallest distance is kept (it implies the others).  `kinds`
says why: RAW, WAR, WAW through a buffer, SYNC for barrier ordering, VAR for a let's use.
`latency` is how many cycles after u's issue v may issue.

Dependences through memory come from footprints (`access.py`): two accesses conflict when one
writes and their byte ranges overlap (a range not known at compile time overlaps everything).
Synchronization orders the accesses other threads may see: a barrier, signal, wait or fence
counts as a write of every SLM buffer (and of every global buffer the loop writes), so no SLM
access moves across it, and of a pseudo-buffer `@sync` that keeps them in order.  The SLM
buffering transform states those orders itself (`explicit_slm`): then SLM footprints are left out
and the transform passes the edges that make its split barriers correct.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable

import networkx as nx
import numpy as np

from ..hw import Platform
from ..ir import IntImm, Var, free_vars
from ..ir.types import PTR
from .access import Access, accesses, static_bytes, static_span, sync_kind
from .costs import statement_cost
from .labels import label
from .loop import LoopBody

SYNC_BUFFER = Var("sync", PTR)  # the pseudo-buffer that keeps synchronization in order
SYNC_LABELS = ("barrier", "signal", "wait", "fence", "compound_sync")


@dataclass(frozen=True)
class Edge:
    """A dependence the caller states: `target`, `distance` iterations after `source`, follows it."""

    source: int
    target: int
    distance: int
    kind: str = "SYNC"


def stmt_nodes(graph: nx.DiGraph) -> list[int]:
    return [n for n, data in graph.nodes(data=True) if data["kind"] == "stmt"]


def add_dependence(graph: nx.DiGraph, u: int, v: int, kind: str, distance: int, latency: int) -> None:
    """Record u -> v, keeping the smallest distance (and, at equal distance, every reason)."""
    data = graph.get_edge_data(u, v)
    if data is None or distance < data["distance"]:
        graph.add_edge(u, v, kinds=(kind,), distance=distance, latency=latency)
    elif distance == data["distance"]:
        data["kinds"] = tuple(sorted(set(data["kinds"]) | {kind}))
        data["latency"] = max(data["latency"], latency)


def edge_latency(graph: nx.DiGraph, u: int, v: int, kind: str) -> int:
    """Cycles after u's issue that v may issue."""
    source, target = graph.nodes[u], graph.nodes[v]
    what = source["label"]
    if what == "signal":
        return source["cost"].latency if target["label"] == "wait" else 1
    if what in ("wait", "fence"):
        return 1
    if what == "barrier":
        return source["cost"].latency
    return source["cost"].latency if kind in ("RAW", "WAW") else 1


def _overlap(a: Access, span_a: tuple[int, int] | None, b: Access, span_b: tuple[int, int] | None) -> bool:
    if span_a is None or span_b is None:
        return True
    if not (span_a[0] < span_b[1] and span_b[0] < span_a[1]):
        return False
    if a.elements is None and b.elements is None:
        return True
    return np.intersect1d(static_bytes(a), static_bytes(b), assume_unique=True).size > 0


def _kind(first: Access, second: Access) -> str:
    if first.write and second.write:
        return "WAW"
    return "RAW" if first.write else "WAR"


def build_graph(body: LoopBody, hw: Platform, buffer_kinds: dict[str, str], *,
                copies: dict[str, int] | None = None, explicit_slm: bool = False,
                extra_edges: Iterable[Edge] = (), labels: dict[int, str] | None = None) -> nx.DiGraph:
    """The dependence graph of `body`.

    `copies` gives multi-buffered buffers (each iteration uses copy i mod R, so an iteration
    conflicts only with the one R later); `labels` overrides node labels (e.g. a node the
    transform made)."""
    copies = copies or {}
    graph = nx.DiGraph(loop_var=body.var.name)
    for i, stmt in enumerate(body.stmts):
        sync = sync_kind(stmt)
        what = (labels or {}).get(i) or ("compound_sync" if sync == "compound" else label(stmt, buffer_kinds))
        graph.add_node(i, kind="stmt", stmt=stmt, label=what, cost=statement_cost(stmt, hw), order=i)

    footprints = [accesses(s) for s in body.stmts]
    slm = sorted({a.buffer.name for fp in footprints for a in fp if buffer_kinds.get(a.buffer.name) == "slm"})
    written_global = sorted({a.buffer.name for fp in footprints for a in fp
                             if a.write and buffer_kinds.get(a.buffer.name, "global") == "global"})
    by_buffer: dict[str, list[tuple[int, Access, tuple[int, int] | None]]] = defaultdict(list)
    for i, fp in enumerate(footprints):
        what = graph.nodes[i]["label"]
        if what in SYNC_LABELS:
            fp = fp + _sync_footprint(body.stmts[i], what, [] if explicit_slm else slm, written_global)
        for access in fp:
            name = access.buffer.name
            if explicit_slm and buffer_kinds.get(name) == "slm":
                continue
            by_buffer[name].append((i, access, static_span(access)))

    for name in sorted(by_buffer):
        entries = by_buffer[name]
        carried = copies.get(name, 1)
        for x in range(len(entries)):
            p, a, span_a = entries[x]
            for y in range(x, len(entries)):
                q, b, span_b = entries[y]
                if not (a.write or b.write) or not _overlap(a, span_a, b, span_b):
                    continue
                if p == q:
                    kind = _kind(a, b) if x == y else ("WAW" if a.write and b.write else "RAW")
                    add_dependence(graph, p, p, kind, carried, edge_latency(graph, p, p, kind))
                    continue
                forward, backward = _kind(a, b), _kind(b, a)
                add_dependence(graph, p, q, forward, 0, edge_latency(graph, p, q, forward))
                add_dependence(graph, q, p, backward, carried, edge_latency(graph, q, p, backward))

    for edge in extra_edges:
        add_dependence(graph, edge.source, edge.target, edge.kind, edge.distance,
                       edge_latency(graph, edge.source, edge.target, "RAW"))

    _add_lets(graph, body)
    return graph


def _sync_footprint(stmt, what: str, slm: list[str], written_global: list[str]) -> list[Access]:
    """What a synchronization statement orders: SLM (and global buffers the loop writes)."""
    def whole(name: str) -> Access:
        return Access(Var(name, PTR), True, Var("unknown_offset"), 0, 0)

    found = [Access(SYNC_BUFFER, True, IntImm(0), 0, 1, definite=True)]
    space = getattr(getattr(stmt, "func", None), "space", None)
    if space != "global":
        found += [whole(name) for name in slm]
    if space != "slm":
        found += [whole(name) for name in written_global]
    return found


def _add_lets(graph: nx.DiGraph, body: LoopBody) -> None:
    """Let nodes (labelled 'header') with VAR edges to the lets and statements that use them."""
    first = len(body.stmts)
    index = {var: first + j for j, (var, _) in enumerate(body.lets)}
    for j, (var, value) in enumerate(body.lets):
        graph.add_node(first + j, kind="let", var=var, value=value, label="header", order=first + j)
    for j, (var, value) in enumerate(body.lets):
        for used in free_vars(value):
            if used in index:
                graph.add_edge(index[used], first + j, kinds=("VAR",), distance=0, latency=0)
    for i, stmt in enumerate(body.stmts):
        for used in free_vars(stmt):
            if used in index:
                graph.add_edge(index[used], i, kinds=("VAR",), distance=0, latency=0)
