"""Multi-buffering of a compute loop: SLM double/triple buffering, GRF double buffering, prefetch.

The single-buffered loop the convolution builder makes is

    Z  G  S  fence barrier  L  barrier  R  M        (slm=1)     or     Z  G  R  M     (slm=0)

(Z zeroes the load registers, G global->GRF loads, S GRF->SLM stores, L SLM->GRF loads, R
reorders, M multiplies).  With `slm_bufs` B >= 2 the SLM tiles get B copies (iteration i uses copy
i mod B) and the two barriers become one split barrier, stated as dependences rather than found:

    S(i) -> fence(i) -> signal(i) -> wait(i) -> L(i)       the tile is written before it is read
    L(i) -> signal(i + B - 1)                                 ... and read before the signal that
    wait(j) -> S(j + 1)                                       lets S(i + B) overwrite its copy

Each step is a transform of the loop's graph: `split_barriers` removes the barrier nodes, adds
the fence, signal and wait nodes and the edges above, and gives the SLM buffers B copies;
`give_copies` (graph.py) multiplies the load targets; `add_prefetches` inserts prefetch nodes;
`software_pipeline` sets each statement's lookahead and the unroll factor.  Run as a software pipeline
(linearized by `pipeline.linearize`), S, fence and signal go B-1 iterations ahead of L and the
multiply, wait B-2: with two buffers the multiply of iteration i runs between the signal and the
wait, with three the SLM loads of the next iteration run there too.  With `gmem_bufs` G = 2 the
registers the global loads fill get two copies and G runs one more iteration ahead, so a whole
iteration hides its latency.  With `prefetch` P > 0 (LSC platforms), every global load also
issues as a prefetch P iterations before it.  Ramp-up (preloading the first buffers) and
ramp-down come from linearization; the body is unrolled by lcm(B, G) so every copy index is a
constant (or, with `slm_rotation="index"`, by G only, the SLM copy then chosen by
`(i mod B) * size`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import networkx as nx
import numpy as np

from ..errors import ConfigError, UnsupportedError
from ..hw import Platform
from ..hw import platform as lookup_platform
from ..ir import Call, Fence, Send, Signal, Stmt, Wait
from .access import accesses, static_bytes
from .context import allocated_bytes
from .dot import GraphDump, write_graph
from .graph import Edge, add_edges, give_copies, restructure, state_order, stmt_nodes
from .transforms import transform_loops


def multi_buffer(
    stmt: Stmt,
    hw: Platform | str = "xehpg",
    slm_bufs: int = 1,
    gmem_bufs: int = 1,
    prefetch: int = 0,
    unroll: int = 1,
    grf_budget: int | None = None,
    dump: GraphDump | None = None,
    slm_rotation: str = "unroll",
) -> Stmt:
    """Multi-buffer every innermost loop that has global loads (and, for slm_bufs > 1, the SLM
    pattern).  `grf_budget`: bytes of GRF the kernel's buffers may take (ConfigError beyond).
    `slm_rotation`: "unroll" unrolls by lcm(slm_bufs, gmem_bufs) so every SLM copy offset is a
    constant; "index" unrolls only by gmem_bufs and computes the SLM copy as (i mod slm_bufs) * size."""
    hw = lookup_platform(hw)
    check_options(hw, slm_bufs, gmem_bufs, prefetch, unroll, slm_rotation)
    if slm_bufs == 1 and gmem_bufs == 1 and prefetch == 0 and unroll == 1:
        return stmt
    result = transform_loops(
        stmt, hw, lambda graph: multi_buffer_graph(graph, slm_bufs, gmem_bufs, prefetch, unroll, slm_rotation, dump)
    )
    check_budgets(result, hw, slm_bufs, gmem_bufs, grf_budget)
    return result


def check_options(hw: Platform, slm_bufs: int, gmem_bufs: int, prefetch: int, unroll: int, slm_rotation: str) -> None:
    if slm_bufs not in (1, 2, 3):
        raise ConfigError(f"slm_bufs={slm_bufs}: expected 1, 2 or 3")
    if gmem_bufs not in (1, 2, 3):
        raise ConfigError(f"gmem_bufs={gmem_bufs}: expected 1, 2 or 3")
    if prefetch < 0 or unroll < 1:
        raise ConfigError("prefetch distance must be >= 0 and unroll >= 1")
    if slm_rotation not in ("unroll", "index"):
        raise ConfigError(f"slm_rotation must be 'unroll' or 'index', not {slm_rotation!r}")
    if prefetch and not hw.has_lsc:
        raise UnsupportedError(f"{hw} has no LSC prefetch messages")


def check_budgets(stmt: Stmt, hw: Platform, slm_bufs: int, gmem_bufs: int, grf_budget: int | None) -> None:
    slm = allocated_bytes(stmt, "slm")
    if slm > hw.max_slm_bytes:
        raise ConfigError(
            f"slm_bufs={slm_bufs} needs {slm} bytes of SLM per group, more than {hw}'s "
            f"{hw.max_slm_bytes}: use fewer SLM buffers or smaller tiles"
        )
    grf = allocated_bytes(stmt, "grf")
    if grf_budget is not None and grf > grf_budget:
        raise ConfigError(
            f"gmem_bufs={gmem_bufs} needs {grf // hw.grf_bytes} GRFs of buffers, more than the "
            f"{grf_budget // hw.grf_bytes} available: use gmem_bufs=1, smaller tiles or more GRFs"
        )


def multi_buffer_graph(
    graph: nx.DiGraph,
    slm_bufs: int,
    gmem_bufs: int,
    prefetch: int,
    unroll: int,
    slm_rotation: str,
    dump: GraphDump | None = None,
) -> nx.DiGraph:
    """The loop's graph multi-buffered and pipelined (see the module docstring)."""
    var = graph.graph["var"].name
    write_graph(dump, "multi-buffer-before", graph, f"loop {var} single-buffered")
    if "g2r_load" not in _labels(graph) and slm_bufs == 1:
        return graph  # nothing to buffer
    if slm_bufs > 1:
        graph = split_barriers(graph, slm_bufs)
    loads = [n for n in stmt_nodes(graph) if graph.nodes[n]["label"] == "g2r_load"]
    load_ahead = (slm_bufs - 1) + (gmem_bufs - 1)
    graph = _with_ahead(graph, {n: load_ahead for n in loads})
    if gmem_bufs > 1:
        for name in _load_targets(graph, loads):
            graph = give_copies(graph, name, gmem_bufs)
    if prefetch:
        graph = add_prefetches(graph, load_ahead + prefetch)
    for name in sorted(graph.graph["copies"]):
        _require_private(graph, name)
    period = math.lcm(slm_bufs, gmem_bufs) if slm_rotation == "unroll" else gmem_bufs
    graph = software_pipeline(graph, period * unroll)
    write_graph(
        dump,
        "multi-buffer-after",
        graph,
        f"loop {var}: slm_bufs={slm_bufs} gmem_bufs={gmem_bufs} prefetch={prefetch}, "
        f"statements +N iterations ahead, d = distance in the pipelined loop",
    )
    return graph


def _labels(graph: nx.DiGraph) -> list[str]:
    return [graph.nodes[n]["label"] for n in stmt_nodes(graph)]


def _with_ahead(graph: nx.DiGraph, ahead: dict[int, int]) -> nx.DiGraph:
    """The graph with these statements' lookahead fixed (iterations ahead of the kernel iteration)."""
    result = graph.copy()
    for n, iterations in ahead.items():
        result.nodes[n]["ahead"] = iterations
    return result


# SLM: split barriers ------------------------------------------------------------------------------


def split_barriers(graph: nx.DiGraph, bufs: int) -> nx.DiGraph:
    """Replace the nodes `fence barrier ... barrier` by `fence signal wait`, with the edges,
    lookaheads and SLM copies of `bufs`-deep SLM buffering."""
    labels = _labels(graph)
    barriers = [i for i, what in enumerate(labels) if what == "barrier"]
    stores = [i for i, what in enumerate(labels) if what == "g2s_store"]
    loads = [i for i, what in enumerate(labels) if what == "s2r_load"]
    if any(what in ("signal", "wait", "compound_sync") for what in labels) or len(barriers) != 2:
        raise UnsupportedError(
            f"slm_bufs={bufs}: the loop must synchronize SLM with exactly two barriers "
            f"(stores, fence, barrier, loads, barrier); it has {len(barriers)} and "
            f"{sum(w in ('signal', 'wait') for w in labels)} split barriers"
        )
    first, second = barriers
    if not stores or not loads or max(stores) > first or not all(first < i < second for i in loads):
        raise UnsupportedError(
            f"slm_bufs={bufs}: SLM stores must all come before the first barrier and SLM loads between the two barriers"
        )
    stmts = [graph.nodes[n]["stmt"] for n in stmt_nodes(graph)]
    fences = [i for i, what in enumerate(labels) if what == "fence" and i < first and stmts[i].func.space == "slm"]
    if fences and fences[-1] < max(stores):
        raise UnsupportedError(f"slm_bufs={bufs}: an SLM store follows the last SLM fence before the barrier")
    kinds = graph.graph["buffer_kinds"]
    slm = sorted(
        {a.buffer.name for i in stores + loads for a in accesses(stmts[i]) if kinds.get(a.buffer.name) == "slm"}
    )
    for i, stmt in enumerate(stmts):
        if (
            i not in stores
            and i not in loads
            and labels[i] not in ("barrier", "fence")
            and any(a.buffer.name in slm for a in accesses(stmt))
        ):
            raise UnsupportedError(
                f"slm_bufs={bufs}: statement {i} ({labels[i]}) touches SLM buffer outside the store/load pattern"
            )
    # the new program order: the second barrier goes, the first becomes [fence] signal wait
    order: list[int | Stmt] = []
    for i in stmt_nodes(graph):
        if i == first:
            if not fences:
                order.append(Call(Fence("slm")))
            signal = len(order)
            order += [Call(Signal()), Call(Wait())]
        elif i != second:
            order.append(i)
    graph = restructure(state_order(graph, set(slm)), order)
    new = {old: k for k, old in enumerate(order) if isinstance(old, int)}
    wait = signal + 1
    fence = new[fences[-1]] if fences else signal - 1
    new_stores, new_loads = [new[i] for i in stores], [new[i] for i in loads]
    edges = [Edge(s, fence, 0) for s in new_stores] + [Edge(fence, signal, 0), Edge(signal, wait, 0)]
    edges += [Edge(wait, ld, 0) for ld in new_loads] + [Edge(ld, signal, bufs - 1) for ld in new_loads]
    edges += [Edge(wait, s, 1) for s in new_stores]
    graph = add_edges(graph, edges)
    for name in slm:
        graph = give_copies(graph, name, bufs)
    ahead = {i: bufs - 1 for i in new_stores + [fence, signal]}
    ahead[wait] = bufs - 2
    ahead.update({ld: 0 for ld in new_loads})
    return _with_ahead(graph, ahead)


# GRF: the registers the global loads fill ---------------------------------------------------------


def _load_targets(graph: nx.DiGraph, loads: list[int]) -> list[str]:
    kinds = graph.graph["buffer_kinds"]
    names = {a.buffer.name for n in loads for a in accesses(graph.nodes[n]["stmt"]) if a.write}
    return sorted(name for name in names if kinds.get(name) == "grf")


def _require_private(graph: nx.DiGraph, name: str) -> None:
    """A multi-buffered buffer must not carry values between iterations or out of the loop: every
    byte an iteration reads it has written first."""
    if name in graph.graph["outside"]:
        raise UnsupportedError(f"cannot multi-buffer '{name}': it is used outside the loop")
    size = graph.graph["sizes"].get(name)
    if size is None:
        raise UnsupportedError(f"cannot multi-buffer '{name}': it is not allocated around the loop")
    if graph.graph["buffer_kinds"].get(name) == "slm":
        return  # SLM reads are ordered by the barriers, which the transform places itself
    written = np.zeros(size, dtype=bool)
    for i in stmt_nodes(graph):
        for access in accesses(graph.nodes[i]["stmt"]):
            if access.buffer.name != name:
                continue
            touched = static_bytes(access)
            inside = touched is not None and (touched.size == 0 or (touched[0] >= 0 and touched[-1] < size))
            if not access.write:
                if not inside or not written[touched].all():
                    raise UnsupportedError(
                        f"cannot multi-buffer '{name}': statement {i} reads bytes of it that "
                        "the same iteration has not written (a value carried between "
                        "iterations)"
                    )
            elif access.definite and inside:
                written[touched] = True


# Prefetch ---------------------------------------------------------------------------------------


def add_prefetches(graph: nx.DiGraph, ahead: int) -> nx.DiGraph:
    """A prefetch node before every global load node, running `ahead` iterations ahead."""
    order: list[int | Stmt] = []
    for n in stmt_nodes(graph):
        if graph.nodes[n]["label"] == "g2r_load":
            order.append(_prefetch_of(graph.nodes[n]["stmt"]))
        order.append(n)
    result = restructure(graph, order)
    return _with_ahead(result, {k: ahead for k, entry in enumerate(order) if not isinstance(entry, int)})


def _prefetch_of(load: Stmt) -> Stmt:
    assert isinstance(load, Call) and isinstance(load.func, Send)  # (a g2r_load)
    f = load.func
    func = replace(f, op="prefetch")
    if f.kind == "block2d":
        mem, x, y, _, mask = load.args
        return Call(func, (mem, x, y, None, mask))
    if f.kind == "block":
        mem, _, mask = load.args
        return Call(func, (mem, None, mask))
    mem, offsets, _, mask = load.args
    return Call(func, (mem, offsets, None, mask))


# The software pipeline ----------------------------------------------------------------------------


def software_pipeline(graph: nx.DiGraph, unroll: int) -> nx.DiGraph:
    """The graph to be linearized as a software pipeline unrolled `unroll` times.  Statements
    without a fixed lookahead run as far ahead as the earliest-needed statement they feed within
    the iteration (zeroing before a load goes with the load)."""
    result = graph.copy()
    for n in reversed(stmt_nodes(result)):
        if "ahead" in result.nodes[n]:
            continue
        ahead = 0
        for _, v, data in result.out_edges(n, data=True):
            if data["distance"] == 0 and result.nodes[v]["kind"] == "stmt" and v != n:
                ahead = max(ahead, result.nodes[v].get("ahead", 0))
        if ahead:
            result.nodes[n]["ahead"] = ahead
    result.graph.update(unroll=unroll, order="latency", changed=True)
    return result
