"""Multi-buffering of a compute loop: SLM double/triple buffering, GRF double buffering, prefetch.

The single-buffered loop the convolution builder makes is

    Z  G  S  fence barrier  L  barrier  R  M        (slm=1)     or     Z  G  R  M     (slm=0)

(Z zeroes the load registers, G global->GRF loads, S GRF->SLM stores, L SLM->GRF loads, R
reorders, M multiplies).  With `slm_bufs` B >= 2 the SLM tiles get B copies (iteration i uses copy
i mod B) and the two barriers become one split barrier, stated as dependences rather than found:

    S(i) -> fence(i) -> signal(i) -> wait(i) -> L(i)       the tile is written before it is read
    L(i) -> signal(i + B - 1)                                 ... and read before the signal that
    wait(j) -> S(j + 1)                                       lets S(i + B) overwrite its copy

Run as a software pipeline, S, fence and signal go B-1 iterations ahead of L and the multiply,
wait B-2: with two buffers the multiply of iteration i runs between the signal and the wait, with
three the SLM loads of the next iteration run there too.  With `gmem_bufs` G = 2 the registers
the global loads fill get two copies and G runs one more iteration ahead, so a whole iteration
hides its latency.  With `prefetch` P > 0 (LSC platforms), every global load also issues as a
prefetch P iterations before it.  Ramp-up (preloading the first buffers) and ramp-down come from
`pipeline.emit_loop`; the body is unrolled by lcm(B, G) so every copy index is a constant (or,
with `slm_rotation="index"`, by G only, the SLM copy then chosen by `(i mod B) * size`).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError, UnsupportedError
from ..hw import Platform
from ..hw import platform as lookup_platform
from ..ir import Call, Fence, For, Send, Signal, Stmt, Wait
from .access import accesses, static_bytes, sync_kind
from .context import (
    BufferTable, allocated_bytes, buffers_used_outside, each_innermost_loop, grow_allocations, replace_loop,
)
from .dot import GraphDump, write_graph
from .graph import Edge, build_graph, stmt_nodes
from .labels import label
from .loop import LoopBody, Names, flatten_loop
from .pipeline import Plan, emit_loop


def multi_buffer(stmt: Stmt, hw: Platform | str = "xehpg", slm_bufs: int = 1, gmem_bufs: int = 1,
                 prefetch: int = 0, unroll: int = 1, grf_budget: int | None = None,
                 dump: GraphDump | None = None, slm_rotation: str = "unroll") -> Stmt:
    """Multi-buffer every innermost loop that has global loads (and, for slm_bufs > 1, the SLM
    pattern).  `grf_budget`: bytes of GRF the kernel's buffers may take (ConfigError beyond).
    `slm_rotation`: "unroll" unrolls by lcm(slm_bufs, gmem_bufs) so every SLM copy offset is a
    constant; "index" unrolls only by gmem_bufs and computes the SLM copy as (i mod slm_bufs) * size."""
    hw = lookup_platform(hw)
    if slm_bufs not in (1, 2, 3):
        raise ConfigError(f"slm_bufs={slm_bufs}: expected 1, 2 or 3")
    if gmem_bufs not in (1, 2):
        raise ConfigError(f"gmem_bufs={gmem_bufs}: expected 1 or 2")
    if prefetch < 0 or unroll < 1:
        raise ConfigError("prefetch distance must be >= 0 and unroll >= 1")
    if slm_rotation not in ("unroll", "index"):
        raise ConfigError(f"slm_rotation must be 'unroll' or 'index', not {slm_rotation!r}")
    if prefetch and not hw.has_lsc:
        raise UnsupportedError(f"{hw} has no LSC prefetch messages")
    if slm_bufs == 1 and gmem_bufs == 1 and prefetch == 0 and unroll == 1:
        return stmt

    def one(s: Stmt, loop: For, names: Names, table: BufferTable) -> Stmt:
        return _buffer_loop(s, loop, names, table, hw, slm_bufs, gmem_bufs, prefetch, unroll, dump, slm_rotation)

    result = each_innermost_loop(stmt, one)
    _check_budgets(result, hw, slm_bufs, gmem_bufs, grf_budget)
    return result


def _check_budgets(stmt: Stmt, hw: Platform, slm_bufs: int, gmem_bufs: int, grf_budget: int | None) -> None:
    slm = allocated_bytes(stmt, "slm")
    if slm > hw.max_slm_bytes:
        raise ConfigError(f"slm_bufs={slm_bufs} needs {slm} bytes of SLM per group, more than {hw}'s "
                          f"{hw.max_slm_bytes}: use fewer SLM buffers or smaller tiles")
    grf = allocated_bytes(stmt, "grf")
    if grf_budget is not None and grf > grf_budget:
        raise ConfigError(f"gmem_bufs={gmem_bufs} needs {grf // hw.grf_bytes} GRFs of buffers, more than the "
                          f"{grf_budget // hw.grf_bytes} available: use gmem_bufs=1, smaller tiles or more GRFs")


def _buffer_loop(stmt: Stmt, loop: For, names: Names, table: BufferTable, hw: Platform, slm_bufs: int,
                 gmem_bufs: int, prefetch: int, unroll: int, dump: GraphDump | None, slm_rotation: str) -> Stmt:
    body = flatten_loop(loop, names)
    if dump is not None:
        write_graph(dump, "multi-buffer-before", build_graph(body, hw, table.kinds),
                    f"loop {body.var.name} single-buffered")
    labels = [_label(s, table) for s in body.stmts]
    if "g2r_load" not in labels and slm_bufs == 1:
        return stmt  # nothing to buffer
    extra: list[Edge] = []
    lookahead: dict[int, int] = {}
    copies: dict[str, int] = {}
    outside = buffers_used_outside(stmt, loop)
    if slm_bufs > 1:
        body, extra, anchors, slm = _split_barriers(body, labels, table, slm_bufs)
        lookahead.update(anchors)
        copies.update({name: slm_bufs for name in slm})
        labels = [_label(s, table) for s in body.stmts]
    loads = [i for i, what in enumerate(labels) if what == "g2r_load"]
    load_ahead = (slm_bufs - 1) + (gmem_bufs - 1)
    lookahead.update({i: load_ahead for i in loads})
    if gmem_bufs > 1:
        copies.update({name: gmem_bufs for name in _load_targets(body, loads, table)})
    if prefetch:
        body, lookahead, extra = _add_prefetches(body, loads, lookahead, extra, load_ahead + prefetch)
    for name in sorted(copies):
        _require_private(body, name, table, outside)
    graph = build_graph(body, hw, table.kinds, copies=copies, explicit_slm=slm_bufs > 1, extra_edges=extra)
    lookahead = _propagate(graph, lookahead)
    period = math.lcm(slm_bufs, gmem_bufs) if slm_rotation == "unroll" else gmem_bufs
    plan = Plan(lookahead, copies, {name: table.sizes[name] for name in copies},
                frozenset(n for n in copies if table.kind(n) == "grf"), unroll=period * unroll)
    for n in stmt_nodes(graph):
        graph.nodes[n]["ahead"] = plan.ahead(n)
    for u, v, data in graph.edges(data=True):
        if graph.nodes[u]["kind"] == "stmt":
            data["shown_distance"] = data["distance"] + plan.ahead(u) - plan.ahead(v)
    write_graph(dump, "multi-buffer-after", graph,
          f"loop {body.var.name}: slm_bufs={slm_bufs} gmem_bufs={gmem_bufs} prefetch={prefetch}, "
          f"statements +N iterations ahead, d = distance in the pipelined loop")
    replacement = emit_loop(body, graph, plan, names)
    return grow_allocations(replace_loop(stmt, loop, replacement), copies)


def _label(stmt: Stmt, table: BufferTable) -> str:
    """The statement's graph label (a compound statement with synchronization inside counts as one)."""
    return "compound_sync" if sync_kind(stmt) == "compound" else label(stmt, table.kinds)


# SLM: split barriers ------------------------------------------------------------------------------

def _split_barriers(body: LoopBody, labels: list[str], table: BufferTable, bufs: int
                    ) -> tuple[LoopBody, list[Edge], dict[int, int], list[str]]:
    """Replace `fence barrier ... barrier` by `fence signal wait`, with the edges and lookaheads
    of `bufs`-deep SLM buffering."""
    barriers = [i for i, what in enumerate(labels) if what == "barrier"]
    stores = [i for i, what in enumerate(labels) if what == "g2s_store"]
    loads = [i for i, what in enumerate(labels) if what == "s2r_load"]
    if any(what in ("signal", "wait", "compound_sync") for what in labels) or len(barriers) != 2:
        raise UnsupportedError(f"slm_bufs={bufs}: the loop must synchronize SLM with exactly two barriers "
                               f"(stores, fence, barrier, loads, barrier); it has {len(barriers)} and "
                               f"{sum(w in ('signal', 'wait') for w in labels)} split barriers")
    first, second = barriers
    if not stores or not loads or max(stores) > first or not all(first < i < second for i in loads):
        raise UnsupportedError(f"slm_bufs={bufs}: SLM stores must all come before the first barrier and SLM "
                               "loads between the two barriers")
    fences = [i for i, what in enumerate(labels) if what == "fence" and i < first
              and body.stmts[i].func.space == "slm"]
    if fences and fences[-1] < max(stores):
        raise UnsupportedError(f"slm_bufs={bufs}: an SLM store follows the last SLM fence before the barrier")
    slm = sorted({a.buffer.name for i in stores + loads for a in accesses(body.stmts[i])
                  if table.kind(a.buffer.name) == "slm"})
    for i, stmt in enumerate(body.stmts):
        if i not in stores and i not in loads and labels[i] not in ("barrier", "fence") and \
                any(a.buffer.name in slm for a in accesses(stmt)):
            raise UnsupportedError(f"slm_bufs={bufs}: statement {i} ({labels[i]}) touches SLM buffer outside the "
                                   "store/load pattern")
    stmts = []
    index: dict[int, int] = {}
    fence = signal = wait = -1
    for i, stmt in enumerate(body.stmts):
        if i == second:
            continue
        if i == first:
            if not fences:
                fence = len(stmts)
                stmts.append(Call(Fence("slm")))
            signal = len(stmts)
            stmts.append(Call(Signal()))
            wait = len(stmts)
            stmts.append(Call(Wait()))
            continue
        index[i] = len(stmts)
        stmts.append(stmt)
    if fences:
        fence = index[fences[-1]]
    new_stores = [index[i] for i in stores]
    new_loads = [index[i] for i in loads]
    edges = [Edge(s, fence, 0) for s in new_stores] + [Edge(fence, signal, 0), Edge(signal, wait, 0)]
    edges += [Edge(wait, ld, 0) for ld in new_loads] + [Edge(ld, signal, bufs - 1) for ld in new_loads]
    edges += [Edge(wait, s, 1) for s in new_stores]
    anchors = {i: bufs - 1 for i in new_stores + [fence, signal]}
    anchors[wait] = bufs - 2
    anchors.update({ld: 0 for ld in new_loads})
    return LoopBody(body.var, body.init, body.bound, body.lets, tuple(stmts)), edges, anchors, slm


# GRF: the registers the global loads fill ---------------------------------------------------------

def _load_targets(body: LoopBody, loads: list[int], table: BufferTable) -> list[str]:
    names = {a.buffer.name for i in loads for a in accesses(body.stmts[i]) if a.write}
    return sorted(n for n in names if table.kind(n) == "grf")


def _require_private(body: LoopBody, name: str, table: BufferTable, outside: set[str]) -> None:
    """A multi-buffered buffer must not carry values between iterations or out of the loop: every
    byte an iteration reads it has written first."""
    if name in outside:
        raise UnsupportedError(f"cannot multi-buffer '{name}': it is used outside the loop")
    size = table.sizes.get(name)
    if size is None:
        raise UnsupportedError(f"cannot multi-buffer '{name}': it is not allocated around the loop")
    if table.kind(name) == "slm":
        return  # SLM reads are ordered by the barriers, which the transform places itself
    written = np.zeros(size, dtype=bool)
    for i, stmt in enumerate(body.stmts):
        for access in accesses(stmt):
            if access.buffer.name != name:
                continue
            touched = static_bytes(access)
            inside = touched is not None and (touched.size == 0 or (touched[0] >= 0 and touched[-1] < size))
            if not access.write:
                if not inside or not written[touched].all():
                    raise UnsupportedError(f"cannot multi-buffer '{name}': statement {i} reads bytes of it that "
                                           "the same iteration has not written (a value carried between "
                                           "iterations)")
            elif access.definite and inside:
                written[touched] = True


# Prefetch ---------------------------------------------------------------------------------------

def _add_prefetches(body: LoopBody, loads: list[int], lookahead: dict[int, int], extra: list[Edge],
                    ahead: int) -> tuple[LoopBody, dict[int, int], list[Edge]]:
    """A prefetch before every global load, `ahead` iterations early (statement ids shift)."""
    stmts = []
    index: dict[int, int] = {}
    new_lookahead: dict[int, int] = {}
    for i, stmt in enumerate(body.stmts):
        if i in loads:
            new_lookahead[len(stmts)] = ahead
            stmts.append(_prefetch_of(stmt))
        index[i] = len(stmts)
        stmts.append(stmt)
    new_lookahead.update({index[i]: a for i, a in lookahead.items()})
    edges = [Edge(index[e.source], index[e.target], e.distance, e.kind) for e in extra]
    return LoopBody(body.var, body.init, body.bound, body.lets, tuple(stmts)), new_lookahead, edges


def _prefetch_of(load: Stmt) -> Stmt:
    f: Send = load.func
    func = Send("prefetch", f.kind, f.space, f.type, f.count, f.elems)
    if f.kind == "block":
        mem, _, mask = load.args
        return Call(func, (mem, None, mask))
    mem, offsets, _, mask = load.args
    return Call(func, (mem, offsets, None, mask))


# Lookahead of the other statements -----------------------------------------------------------------

def _propagate(graph, anchors: dict[int, int]) -> dict[int, int]:
    """Statements without a fixed lookahead run as far ahead as the earliest-needed statement
    they feed within the iteration (zeroing before a load goes with the load)."""
    result = dict(anchors)
    for n in sorted(stmt_nodes(graph), reverse=True):
        if n in anchors:
            continue
        ahead = 0
        for _, v, data in graph.out_edges(n, data=True):
            if data["distance"] == 0 and graph.nodes[v]["kind"] == "stmt" and v != n:
                ahead = max(ahead, result.get(v, 0))
        if ahead:
            result[n] = ahead
    return result
