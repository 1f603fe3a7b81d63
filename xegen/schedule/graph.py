"""The dataflow graph of a loop body (a networkx DiGraph), and the edits transforms make to it.

Statement nodes have ids 0..n-1 in program order, then come the body's lets (kind "let",
labelled "header", in dependency order).  A statement node carries its `stmt`, `label`, `cost`
and `footprint` (the byte ranges it touches, by buffer); a let node its `var` and `value`.  The
graph's attributes describe the loop (`var`, `init`, `bound`), what surrounds it, and what the
transforms decided (see `build_graph`).

An edge u -> v says that v, `distance` iterations after u, must run after u: distance 0 within
one iteration, 1 (or the number of copies of a multi-buffered buffer) from one iteration to a
later one.  An edge keeps every `Reason` it has (a conflict through a buffer, an order a
transform states, a let's use); `distance` is the smallest of their distances (it implies the
others), `kinds` their kinds at that distance (RAW, WAR, WAW, SYNC, VAR) and `latency` how many
cycles after u's issue v may issue.

Dependences through memory come from footprints (`access.py`): two accesses conflict when one
writes and their byte ranges overlap (a range not known at compile time overlaps everything).
Synchronization orders the accesses other threads may see: a barrier, signal, wait or fence
counts as a write of every SLM buffer (and of every global buffer the loop writes), so no SLM
access moves across it, and of a pseudo-buffer `@sync` that keeps them in order.  The SLM
buffering transform states those orders itself (`state_order`): then the footprints leave the
SLM buffers out and the transform adds the edges that make its split barriers correct.

Transforms edit a graph with `restructure` (remove statements, insert new ones: a new node gets
its edges from its footprint), `state_order`, `give_copies` and `add_edges`; linearization
(`linearize.py`, `pipeline.py`) is the way back to IR.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from ..hw import Platform
from ..ir import IntImm, Stmt, Var, free_vars
from ..ir.types import PTR
from .access import Access, accesses, static_bytes, static_span, sync_kind
from .context import addressed_buffers
from .costs import statement_cost
from .labels import label
from .loop import LoopBody

SYNC_BUFFER = Var("sync", PTR)  # the pseudo-buffer that keeps synchronization in order
SYNC_LABELS = ("barrier", "signal", "wait", "fence", "compound_sync")
_INT64 = np.iinfo(np.int64)


@dataclass(frozen=True)
class Edge:
    """A dependence the caller states: `target`, `distance` iterations after `source`, follows it."""

    source: int
    target: int
    distance: int
    kind: str = "SYNC"


@dataclass(frozen=True)
class Reason:
    """Why an edge exists: a conflict through `buffer`, or (buffer None) a stated order or a let's use."""

    kind: str
    buffer: str | None
    distance: int
    latency: int


def stmt_nodes(graph: nx.DiGraph) -> list[int]:
    return sorted(n for n, data in graph.nodes(data=True) if data["kind"] == "stmt")


def let_nodes(graph: nx.DiGraph) -> list[int]:
    return sorted(n for n, data in graph.nodes(data=True) if data["kind"] == "let")


def loop_body(graph: nx.DiGraph) -> LoopBody:
    """The loop the graph describes, its statements in program order."""
    lets = tuple((graph.nodes[n]["var"], graph.nodes[n]["value"]) for n in let_nodes(graph))
    stmts = tuple(graph.nodes[n]["stmt"] for n in stmt_nodes(graph))
    return LoopBody(graph.graph["var"], graph.graph["init"], graph.graph["bound"], lets, stmts)


# Building ---------------------------------------------------------------------------------------


def build_graph(body: LoopBody, hw: Platform, buffer_kinds: dict[str, str]) -> nx.DiGraph:
    """The dependence graph of `body`.

    Graph attributes: the loop (`var`, `init`, `bound`), `hw`, `buffer_kinds`, the buffers
    synchronization orders (`sync_slm`, `sync_global`) and those whose order a transform states
    (`stated`), and what transforms decided: `copies` (buffer -> copies), `unroll`, `order`
    ("program", or "latency": list scheduling), `outer_lets` and `preheader` (hoisted in front of
    the loop), and whether any of it `changed` the loop."""
    graph = nx.DiGraph(
        var=body.var,
        init=body.init,
        bound=body.bound,
        hw=hw,
        buffer_kinds=buffer_kinds,
        stated=frozenset(),
        copies={},
        unroll=1,
        order="program",
        outer_lets=(),
        preheader=(),
        changed=False,
    )
    own = [accesses(s) for s in body.stmts]  # (each statement's walked once: its loads are anywhere in it)
    found = [a for found_here in own for a in found_here]
    graph.graph["sync_slm"] = tuple(sorted({a.buffer.name for a in found if buffer_kinds.get(a.buffer.name) == "slm"}))
    graph.graph["sync_global"] = tuple(
        sorted({a.buffer.name for a in found if a.write and buffer_kinds.get(a.buffer.name, "global") == "global"})
    )
    for i, stmt in enumerate(body.stmts):
        graph.add_node(i, **_statement_node(graph, stmt, own[i]))
    for j, (var, value) in enumerate(body.lets):
        graph.add_node(len(body.stmts) + j, kind="let", var=var, value=value, label="header")
    reasons: dict[tuple[int, int], set[Reason]] = {}  # (edges in the order they first appear)
    for p, q, name, x, y in _conflicts(graph, len(body.stmts)):
        for u, v, reason in _conflict_reasons(graph, p, q, name, x, y):
            reasons.setdefault((u, v), set()).add(reason)
    for (u, v), edge_reasons in reasons.items():
        _set_reasons(graph, u, v, frozenset(edge_reasons))
    lets = _let_index(graph)
    for n in graph.nodes:
        _connect_lets(graph, n, lets)
    return graph


def _statement_node(graph: nx.DiGraph, stmt: Stmt, found: list[Access] | None = None) -> dict:
    """A statement node's attributes; `found`: the statement's accesses, if known."""
    kinds = graph.graph["buffer_kinds"]
    what = "compound_sync" if sync_kind(stmt) == "compound" else label(stmt, kinds)
    node = {
        "kind": "stmt",
        "stmt": stmt,
        "label": what,
        "cost": statement_cost(stmt, graph.graph["hw"]),
        "footprint": _footprint(graph, stmt, what, accesses(stmt) if found is None else found),
    }
    rotates = tuple(sorted(name for name in graph.graph["copies"] if name in addressed_buffers(stmt)))
    if rotates:
        node["rotates"] = rotates
    return node


def _footprint(
    graph: nx.DiGraph, stmt: Stmt, what: str, found: list[Access]
) -> dict[str, tuple[tuple[Access, tuple | None], ...]]:
    """The statement's accesses (`found`) by buffer, with their constant byte spans (None: unknown)."""
    if what in SYNC_LABELS:
        found = found + _sync_footprint(stmt, graph.graph["sync_slm"], graph.graph["sync_global"])
    by_buffer: dict[str, list] = {}
    for access in found:
        name = access.buffer.name
        if name not in graph.graph["stated"]:
            by_buffer.setdefault(name, []).append((access, static_span(access)))
    return {name: tuple(entries) for name, entries in by_buffer.items()}


def _sync_footprint(stmt: Stmt, slm: tuple[str, ...], written_global: tuple[str, ...]) -> list[Access]:
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


# Edges ------------------------------------------------------------------------------------------


def add_reason(graph: nx.DiGraph, u: int, v: int, reason: Reason) -> None:
    """Record one more reason for u -> v."""
    data = graph.get_edge_data(u, v)
    _set_reasons(graph, u, v, (data["reasons"] if data else frozenset()) | {reason})


def _set_reasons(graph: nx.DiGraph, u: int, v: int, reasons: frozenset[Reason]) -> None:
    """Give u -> v these reasons (none: no edge) and the summary attributes they imply."""
    if not reasons:
        if graph.has_edge(u, v):
            graph.remove_edge(u, v)
        return
    distance = min(r.distance for r in reasons)
    nearest = [r for r in reasons if r.distance == distance]
    graph.add_edge(
        u,
        v,
        reasons=reasons,
        distance=distance,
        kinds=tuple(sorted({r.kind for r in nearest})),
        latency=max(r.latency for r in nearest),
    )


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
    bytes_a, bytes_b = static_bytes(a), static_bytes(b)
    assert bytes_a is not None and bytes_b is not None  # (both spans are static)
    return np.intersect1d(bytes_a, bytes_b, assume_unique=True).size > 0


def _kind(first: Access, second: Access) -> str:
    if first.write and second.write:
        return "WAW"
    return "RAW" if first.write else "WAR"


def _connect(graph: nx.DiGraph, p: int, q: int) -> None:
    """The dependences between statements p and q through memory: p before q in program order,
    or p == q (a statement and its own next run)."""
    first, second = graph.nodes[p]["footprint"], graph.nodes[q]["footprint"]
    shared = first.keys() & second.keys()
    for name in sorted(shared) if shared else ():
        for x, (a, span_a) in enumerate(first[name]):
            for y, (b, span_b) in enumerate(second[name]):
                if (p == q and y < x) or not (a.write or b.write) or not _overlap(a, span_a, b, span_b):
                    continue
                for u, v, reason in _conflict_reasons(graph, p, q, name, x, y):
                    add_reason(graph, u, v, reason)


def _conflicts(graph: nx.DiGraph, count: int) -> list[tuple[int, int, str, int, int]]:
    """Every (p, q, buffer, x, y) where access x of statement p and access y of statement q
    conflict (p <= q, and x <= y when p == q), in the order `_connect` on each pair p <= q of the
    first `count` statements would find them.  The same as those n^2/2 calls, but a buffer's
    accesses whose constant byte spans cannot overlap (most register tiles) are ruled out in
    bulk by comparing the spans as arrays."""
    found: list[tuple[int, int, str, int, int]] = []
    by_buffer: dict[str, list[tuple[int, int, Access, tuple[int, int] | None]]] = {}
    for n in range(count):
        for name, entries in graph.nodes[n]["footprint"].items():
            by_buffer.setdefault(name, []).extend((n, x, a, span) for x, (a, span) in enumerate(entries))
    for name, entries in by_buffer.items():
        for i, j in _candidate_pairs(entries):
            p, x, a, span_a = entries[i]
            q, y, b, span_b = entries[j]
            if _overlap(a, span_a, b, span_b):
                found.append((p, q, name, x, y))
    found.sort()
    return found


def _candidate_pairs(entries: list[tuple[int, int, Access, tuple[int, int] | None]]) -> list[tuple[int, int]]:
    """The pairs i <= j of `entries` (ordered by statement, then access) where one access
    writes and their spans may overlap (an unknown span overlaps everything)."""
    spans = [span for _, _, _, span in entries]
    if not all(_INT64.min < bound < _INT64.max for span in spans if span for bound in span):
        spans = [None] * len(entries)  # (offsets beyond int64: every pair is a candidate)
    low = np.array([span[0] if span else _INT64.min for span in spans], dtype=np.int64)
    high = np.array([span[1] if span else _INT64.max for span in spans], dtype=np.int64)
    write = np.array([a.write for _, _, a, _ in entries], dtype=bool)
    pairs: list[tuple[int, int]] = []
    rows = 256  # a block of rows at a time: memory stays O(rows * len(entries))
    for start in range(0, len(entries), rows):
        i = np.arange(start, min(start + rows, len(entries)))[:, None]
        hit = (low[i] < high[None, :]) & (low[None, :] < high[i]) & (write[i] | write[None, :])
        hit &= np.arange(len(entries))[None, :] >= i
        first, second = np.nonzero(hit)
        pairs.extend(zip((first + start).tolist(), second.tolist(), strict=True))
    return pairs


def _conflict_reasons(graph: nx.DiGraph, p: int, q: int, name: str, x: int, y: int) -> list[tuple[int, int, Reason]]:
    """The edges (u, v, reason) a conflict between access x of statement p and access y of
    statement q through buffer `name` implies.  Within an iteration it orders p before q; from
    one iteration to the next (or to the one R later, when the buffer has R copies) it orders q
    before the later p."""
    carried = graph.graph["copies"].get(name, 1)
    a, b = graph.nodes[p]["footprint"][name][x][0], graph.nodes[q]["footprint"][name][y][0]
    if p == q:
        kind = _kind(a, b) if x == y else ("WAW" if a.write and b.write else "RAW")
        return [(p, p, Reason(kind, name, carried, edge_latency(graph, p, p, kind)))]
    forward, backward = _kind(a, b), _kind(b, a)
    return [
        (p, q, Reason(forward, name, 0, edge_latency(graph, p, q, forward))),
        (q, p, Reason(backward, name, carried, edge_latency(graph, q, p, backward))),
    ]


def _let_index(graph: nx.DiGraph) -> dict[Var, int]:
    return {graph.nodes[m]["var"]: m for m in let_nodes(graph)}


def _connect_lets(graph: nx.DiGraph, n: int, lets: dict[Var, int]) -> None:
    """VAR edges from the lets (`lets`: variable -> node) that node n, a statement or a let, uses."""
    data = graph.nodes[n]
    used = free_vars(data["stmt"] if data["kind"] == "stmt" else data["value"])
    for m in sorted(lets[var] for var in used if var in lets):
        add_reason(graph, m, n, Reason("VAR", None, 0, 0))


# Edits ------------------------------------------------------------------------------------------


def restructure(graph: nx.DiGraph, statements: list[int | Stmt], lets: list[int] | None = None) -> nx.DiGraph:
    """A graph whose statements are `statements` in program order (node k is entry k): an id
    keeps that node with its edges, an IR statement becomes a new node connected by its footprint,
    and nodes not listed are removed.  `lets`: the let nodes to keep (default all)."""
    kept_lets = let_nodes(graph) if lets is None else sorted(lets)
    result = nx.DiGraph(**graph.graph)
    new: list[int] = []
    old_to_new: dict[int, int] = {}
    for k, entry in enumerate(statements):
        if isinstance(entry, int):
            old_to_new[entry] = k
            result.add_node(k, **graph.nodes[entry])
        else:
            result.add_node(k, **_statement_node(result, entry))
            new.append(k)
    for j, n in enumerate(kept_lets):
        old_to_new[n] = len(statements) + j
        result.add_node(len(statements) + j, **graph.nodes[n])
    for u, v, data in graph.edges(data=True):
        if u in old_to_new and v in old_to_new:
            result.add_edge(old_to_new[u], old_to_new[v], **data)
    let_index = _let_index(result)
    for k in new:
        for other in range(len(statements)):
            if other not in new or other >= k:
                _connect(result, min(k, other), max(k, other))
        _connect_lets(result, k, let_index)
    result.graph["changed"] = True
    return result


def state_order(graph: nx.DiGraph, buffers: set[str]) -> nx.DiGraph:
    """The graph without the dependences through `buffers`: a transform states their order
    itself with `add_edges` (footprints leave them out from now on)."""
    result = graph.copy()
    result.graph["stated"] = graph.graph["stated"] | buffers
    for n in stmt_nodes(result):
        footprint = result.nodes[n]["footprint"]
        result.nodes[n]["footprint"] = {name: entries for name, entries in footprint.items() if name not in buffers}
    for u, v, data in list(result.edges(data=True)):
        _set_reasons(result, u, v, frozenset(r for r in data["reasons"] if r.buffer not in buffers))
    return result


def add_edges(graph: nx.DiGraph, edges: list[Edge]) -> nx.DiGraph:
    """The graph with these orders stated (SYNC edges, unless an edge says otherwise)."""
    result = graph.copy()
    for edge in edges:
        latency = edge_latency(result, edge.source, edge.target, "RAW")
        add_reason(result, edge.source, edge.target, Reason(edge.kind, None, edge.distance, latency))
    return result


def give_copies(graph: nx.DiGraph, name: str, count: int) -> nx.DiGraph:
    """Buffer `name` gets `count` copies, iteration i using copy i mod count: its loop-carried
    dependences now reach `count` iterations, and the statements that address it rotate (their
    `rotates` attribute; linearization offsets each address by the copy's place)."""
    result = graph.copy()
    result.graph["copies"] = {**graph.graph["copies"], name: count}
    for u, v, data in list(result.edges(data=True)):
        if any(r.buffer == name and r.distance > 0 for r in data["reasons"]):
            _set_reasons(
                result,
                u,
                v,
                frozenset(
                    Reason(r.kind, r.buffer, count, r.latency) if r.buffer == name and r.distance > 0 else r
                    for r in data["reasons"]
                ),
            )
    for n in stmt_nodes(result):
        if name in addressed_buffers(result.nodes[n]["stmt"]):
            result.nodes[n]["rotates"] = tuple(sorted({*result.nodes[n].get("rotates", ()), name}))
    result.graph["changed"] = True
    return result
