"""The dataflow graph of a loop body: labels, dependences through byte ranges, loop-carried
distances, synchronization order, let (header) nodes.  Expected edges are worked out by hand
from the layouts in xegen/ir/funcs.py."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen import hw, ir
from xegen.errors import UnsupportedError
from xegen.ir import (
    S32,
    Barrier,
    Call,
    Fence,
    For,
    Let,
    Mad,
    Names,
    Reorder,
    Send,
    Var,
    buffer,
    const,
    load,
    ptr,
    seq,
    store,
)
from xegen.schedule import BufferTable, LoopBody, build_graph, flatten_loop, innermost_loops
from xegen.schedule.access import accesses, static_bytes
from xegen.schedule.graph import _connect, _connect_lets, _let_index, give_copies, restructure, stmt_nodes
from xegen.schedule.pipeline import Instance, _Emitter

from .bodies import loop_kernels, staged_kernels

IDX = Var("i")
R0, R1, R2, R3, SH, SRC = (buffer(n) for n in ("r0", "r1", "r2", "r3", "sh", "src"))
KINDS = {"r0": "grf", "r1": "grf", "r2": "grf", "r3": "grf", "sh": "slm", "src": "global"}


def graph_of(*stmts, lets=(), kinds=KINDS, copies=None):
    body = seq(*stmts)
    for var, value in reversed(lets):
        body = Let(var, value, body)
    loop = For(IDX, const(0), const(4), body)
    flat = flatten_loop(loop, Names(loop))
    graph = build_graph(flat, hw.XEHPG, kinds)
    for name, count in (copies or {}).items():
        graph = give_copies(graph, name, count)
    return flat, graph


def edges(graph):
    """{(u, v): (kinds, distance)} between statements."""
    return {
        (u, v): (d["kinds"], d["distance"])
        for u, v, d in graph.edges(data=True)
        if graph.nodes[u]["kind"] == "stmt" and graph.nodes[v]["kind"] == "stmt"
    }


def load_global(target, offset, count=8):
    return Call(Send("load", "block", "global", S32, count), (ptr(SRC, IDX * 32), ptr(target, offset), None))


def test_byte_ranges_decide_dependences():
    # s0 writes r0 bytes [0, 32); s1 reads r0 [0, 32); s2 reads r0 [32, 64) (disjoint from s0)
    s0 = load_global(R0, 0)
    s1 = store(R1, 0, load(R0, 0, "s32x8") + 1)
    s2 = store(R1, 32, load(R0, 32, "s32x8"))
    _, graph = graph_of(s0, s1, s2)
    assert edges(graph) == {
        (0, 1): (("RAW",), 0),  # s1 reads what s0 wrote
        (1, 0): (("WAR",), 1),  # the next iteration's s0 overwrites what s1 read
        (0, 0): (("WAW",), 1),  # s0 rewrites its own bytes every iteration
        (1, 1): (("WAW",), 1),
        (2, 2): (("WAW",), 1),
    }
    assert [graph.nodes[n]["label"] for n in range(3)] == ["g2r_load", "grf_store", "grf_store"]


def test_accumulation_is_a_loop_carried_dependence_of_distance_one():
    # mad r2[0:32) += r1[0:32) * r1[32] (broadcast): reads and writes its own accumulator
    mad = Call(Mad(8, S32, S32, S32, 1, 0), (ptr(R2, 0), ptr(R2, 0), ptr(R1, 0), ptr(R1, 32)))
    fill = store(R1, 0, ir.Broadcast(IDX, 8))
    _, graph = graph_of(fill, mad)
    found = edges(graph)
    assert found[(1, 1)] == (("RAW", "WAW"), 1)  # acc: iteration i+1 reads and rewrites what i wrote
    assert found[(0, 1)] == (("RAW",), 0)
    assert found[(1, 0)] == (("WAR",), 1)
    # r1 bytes [32, 36) are read by the mad but written by nobody in the loop: no edge from them
    assert graph.nodes[1]["label"] == "multiply"


def test_strided_operands_leave_their_gaps_free():
    # reorder reads r0 elements 0, 2, 4, 6 (stride 2): a store to element 1 does not conflict
    reorder = Call(Reorder(S32, S32, 1, 4, 0, 2, 0, 1), (ptr(R1, 0), ptr(R0, 0)))
    odd = store(R0, 4, const(5))  # element 1 (bytes 4..8)
    even = store(R0, 8, const(6))  # element 2 (bytes 8..12)
    _, graph = graph_of(reorder, odd, even)
    found = edges(graph)
    assert (0, 1) not in found and (1, 0) not in found
    assert found[(0, 2)] == (("WAR",), 0) and found[(2, 0)] == (("RAW",), 1)
    source = [a for a in accesses(reorder) if not a.write][0]
    assert static_bytes(source).tolist() == [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27]


@pytest.mark.parametrize("dpasw, a_bytes", [(False, 8 * 32), (True, 4 * 32)])
def test_dpas_reads_rcount_rows_of_a_and_dpasw_its_half(dpasw, a_bytes):
    """A dpas.8x8 reads 8 rows of 8 dwords of A from src2; a dpasw only its own 4 (the fused
    partner's src2 gives the others), so a write just past them does not conflict."""
    f = ir.Dpas(8, 8, 8, ir.F32, ir.F16, ir.F16, dpasw=dpasw)
    dpas = Call(f, (ptr(R2, 0), ptr(R2, 0), ptr(R1, 0), ptr(R0, 0)))
    a = [x for x in accesses(dpas) if not x.write and x.buffer.name == "r0"][0]
    assert static_bytes(a).tolist() == list(range(a_bytes))
    _, graph = graph_of(dpas, store(R0, 4 * 32, ir.Broadcast(IDX, 8)))
    assert ((1, 0) in edges(graph)) == (not dpasw)


@pytest.mark.parametrize("returns", [False, True])
def test_a_returning_atomic_writes_its_register_operand(returns):
    """A returning atomic reads its operands, then writes the old values over component 0 of
    reg, as a load writes its data: a later read of those bytes depends on it."""
    f = Send("atomic", "scattered", "global", S32, 8, atomic="add", returns=returns)
    atomic = Call(f, (ptr(SRC, IDX * 32), ir.Broadcast(const(0), 8), ptr(R0, 0), None))
    use = store(R1, 0, load(R0, 0, "s32x8"))
    _, graph = graph_of(atomic, use)
    found = edges(graph)
    assert ((0, 1) in found) == returns
    if returns:
        assert found[(0, 1)] == (("RAW",), 0)
        assert found[(1, 0)] == (("WAR",), 1)  # the next iteration's atomic overwrites what was read
    written = [a for a in accesses(atomic) if a.write and a.buffer.name == "r0"]
    assert [(static_bytes(a).tolist(), a.definite) for a in written] == ([(list(range(32)), True)] if returns else [])


def test_a_masked_returning_inc_writes_its_register_without_reading_it():
    f = Send("atomic", "scattered", "global", S32, 4, atomic="inc", returns=True)
    mask = ir.Broadcast(IDX < 2, 4)
    found = [
        a for a in accesses(Call(f, (ptr(SRC, 0), ir.Broadcast(const(0), 4), ptr(R0, 16), mask))) if a.buffer == R0
    ]
    assert [(a.write, static_bytes(a).tolist(), a.definite) for a in found] == [(True, list(range(16, 32)), False)]


def test_barriers_keep_slm_accesses_on_their_side_but_let_registers_move():
    slm_store = Call(Send("store", "block", "slm", S32, 8), (ptr(SH, IDX * 0), ptr(R0, 0), None))
    slm_load = Call(Send("load", "block", "slm", S32, 8), (ptr(SH, 32), ptr(R1, 0), None))
    compute = store(R2, 0, load(R3, 0, "s32x8"))
    _, graph = graph_of(slm_store, Call(Fence("slm")), Call(Barrier()), slm_load, Call(Barrier()), compute)
    found = edges(graph)
    labels = [graph.nodes[n]["label"] for n in range(6)]
    assert labels == ["g2s_store", "fence", "barrier", "s2r_load", "barrier", "grf_store"]
    assert found[(0, 1)][1] == 0 and found[(1, 2)][1] == 0 and found[(2, 3)][1] == 0 and found[(3, 4)][1] == 0
    assert found[(4, 0)][1] == 1  # the next iteration's SLM store waits for this iteration's last barrier
    assert not any(5 in pair for pair in found if pair != (5, 5))  # register work is free of barriers


def test_multi_buffered_buffers_conflict_only_every_r_iterations():
    s0 = load_global(R0, 0)
    s1 = store(R1, 0, load(R0, 0, "s32x8"))
    _, graph = graph_of(s0, s1, copies={"r0": 2})
    found = edges(graph)
    assert found[(1, 0)] == (("WAR",), 2) and found[(0, 0)] == (("WAW",), 2) and found[(0, 1)] == (("RAW",), 0)


def test_lets_are_header_nodes_feeding_their_users():
    k_start, row = Var("k_start"), Var("row")
    s0 = Call(Send("load", "block", "global", S32, 8), (ptr(SRC, row * 4), ptr(R0, 0), None))
    flat, graph = graph_of(s0, lets=[(k_start, IDX * 16), (row, k_start + 3)])
    header = [n for n, d in graph.nodes(data=True) if d["kind"] == "let"]
    assert [graph.nodes[n]["var"].name for n in header] == ["k_start", "row"]
    assert all(graph.nodes[n]["label"] == "header" for n in header)
    assert graph.has_edge(header[0], header[1]) and graph.has_edge(header[1], 0)
    assert [v.name for v, _ in flat.lets] == ["k_start", "row"]


def test_flattening_renames_a_let_that_would_capture_an_outer_variable():
    n = Var("n")
    inner = Let(n, IDX * 2, store(R0, 0, n))  # shadows the outer n used by the loop bound
    loop = For(IDX, const(0), n, seq(store(R1, 0, n), inner))
    flat = flatten_loop(loop, Names(loop))
    assert flat.lets[0][0].name != "n"
    assert flat.stmts[0] == store(R1, 0, n)  # still the outer n


def test_compound_statements_are_opaque_but_sound():
    inner = ir.IfThenElse(IDX < 2, store(R0, 0, const(1)))
    _, graph = graph_of(inner, store(R1, 0, load(R0, 0, "s32")))
    assert graph.nodes[0]["label"] == "compound"
    assert edges(graph)[(0, 1)] == (("RAW",), 0)


def test_end_of_thread_in_a_loop_is_unsupported():
    with pytest.raises(UnsupportedError, match="end-of-thread"):
        graph_of(Call(ir.EndOfThread()))


def test_buffer_table_reads_allocations_and_arguments():
    stmt = Let(SRC, None, ir.Alloc(R0, 64, "grf", ir.Alloc(SH, 128, "slm", store(R0, 0, const(1)))))
    table = BufferTable.of(stmt)
    assert table.kinds == {"src": "global", "r0": "grf", "sh": "slm"} and table.sizes == {"r0": 64, "sh": 128}


def test_graph_is_deterministic():
    body = [load_global(R0, 0), store(R1, 0, load(R0, 0, "s32x8")), Call(Barrier())]
    first, second = graph_of(*body)[1], graph_of(*body)[1]
    assert list(first.edges(data=True)) == list(second.edges(data=True))


# Edits ------------------------------------------------------------------------------------------


def _comparable(graph):
    """Nodes and edges with every attribute that matters (the footprints follow from the statements)."""
    nodes = {n: (d["kind"], d["label"], d.get("stmt"), d.get("var")) for n, d in graph.nodes(data=True)}
    return nodes, {(u, v): d["reasons"] for u, v, d in graph.edges(data=True)}


def _removable(stmt, kinds):
    """Whether removing `stmt` keeps what synchronization orders: it writes no global buffer and
    touches no SLM (a transform removes statements of neither kind)."""
    return not any(
        kinds.get(a.buffer.name, "global") == "slm" or (a.write and kinds.get(a.buffer.name, "global") == "global")
        for a in accesses(stmt)
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(loop_kernels(), staged_kernels()), st.data())
def test_inserting_and_removing_statements_gives_the_graph_built_from_scratch(kernel, data):
    loop = innermost_loops(kernel.body)[0]
    flat = flatten_loop(loop, Names(kernel.body))
    kinds = BufferTable.of(kernel.body).kinds
    graph = build_graph(flat, hw.XEHPG, kinds)
    ids = list(range(len(flat.stmts)))
    removable = [i for i in ids if _removable(flat.stmts[i], kinds)]
    removed = set(data.draw(st.lists(st.sampled_from(removable), unique=True))) if removable else set()
    order: list = [i for i in ids if i not in removed]
    for copy in data.draw(st.lists(st.sampled_from(ids), max_size=3)):  # a statement again, anywhere
        order.insert(data.draw(st.integers(0, len(order))), flat.stmts[copy])
    edited = restructure(graph, order)
    statements = tuple(flat.stmts[entry] if isinstance(entry, int) else entry for entry in order)
    rebuilt = build_graph(LoopBody(flat.var, flat.init, flat.bound, flat.lets, statements), hw.XEHPG, kinds)
    assert _comparable(edited) == _comparable(rebuilt)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(loop_kernels(), staged_kernels()))
def test_graph_has_the_edges_of_comparing_every_pair_of_statements(kernel):
    # build_graph rules out pairs of accesses in bulk; the plain definition compares every pair
    # p <= q: the same edges, with the same reasons, made in the same order
    flat = flatten_loop(innermost_loops(kernel.body)[0], Names(kernel.body))
    graph = build_graph(flat, hw.XEHPG, BufferTable.of(kernel.body).kinds)
    pairwise = graph.copy()
    pairwise.remove_edges_from(list(graph.edges))
    for p in range(len(flat.stmts)):
        for q in range(p, len(flat.stmts)):
            _connect(pairwise, p, q)
    for n in pairwise.nodes:
        _connect_lets(pairwise, n, _let_index(pairwise))
    assert list(graph.edges(data=True)) == list(pairwise.edges(data=True))
    assert [list(graph.pred[n]) for n in graph] == [list(pairwise.pred[n]) for n in pairwise]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(loop_kernels(), staged_kernels()), st.data())
def test_instance_edges_join_every_pair_of_instances_an_edge_orders(kernel, data):
    # the plain definition: instance b follows instance a when the graph has an edge from a's
    # statement to b's that b's iteration is at least `distance` after a's (never a to itself)
    flat = flatten_loop(innermost_loops(kernel.body)[0], Names(kernel.body))
    graph = build_graph(flat, hw.XEHPG, BufferTable.of(kernel.body).kinds)
    for n in stmt_nodes(graph):  # some statements run iterations ahead, as pipelining makes them
        graph.nodes[n]["ahead"] = data.draw(st.integers(0, 2))
    emitter = _Emitter(graph, Names(kernel.body))
    instances = [Instance(n, k) for k in range(3) for n in stmt_nodes(graph)]
    instances += data.draw(st.lists(st.sampled_from(instances), max_size=2))  # listed twice: one

    def iteration(inst):
        return inst.kernel + graph.nodes[inst.node]["ahead"]

    found = emitter.instance_edges(instances)
    assert list(found) == list(dict.fromkeys(instances))
    for a in found:
        expected = [
            (b, graph.edges[a.node, b.node]["latency"])
            for b in dict.fromkeys(instances)
            if b != a
            and graph.has_edge(a.node, b.node)
            and iteration(b) - iteration(a) >= graph.edges[a.node, b.node]["distance"]
        ]
        assert sorted(found[a]) == sorted(expected)
