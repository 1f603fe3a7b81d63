"""Multi-buffering: SLM double/triple buffering with split barriers, GRF double buffering, prefetch.

The interpreter runs a thread group's threads in lock step with shared SLM and reports SLM races,
so equal outputs with no race mean the barriers the transform placed are enough; removing any
one of them must make it report a race."""

from __future__ import annotations

import math
from dataclasses import replace
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen import hw, ir
from xegen.build import check_ir, run_ir
from xegen.conv import make_problem, random_inputs
from xegen.errors import ConfigError, UnsupportedError
from xegen.ir import (
    S32,
    Alloc,
    Barrier,
    Call,
    Fence,
    For,
    Mad,
    Names,
    Send,
    Signal,
    Var,
    Wait,
    buffer,
    const,
    ptr,
    seq,
    walk,
)
from xegen.ir.memory import UnfencedSlmWriteError
from xegen.pipeline import build_kernel
from xegen.schedule import innermost_loops, loop_graph, multi_buffer, multi_buffer_graph
from xegen.schedule import pipeline as linearization

from .bodies import INP, TID, Kernel, _epilogue, _prologue, _wrap, run, staged_kernels

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def calls(stmt, kind):
    return [n for n in walk(stmt) if isinstance(n, Call) and isinstance(n.func, kind)]


@SETTINGS
@given(
    staged_kernels(slm=True),
    st.sampled_from([2, 3]),
    st.sampled_from([1, 2]),
    st.sampled_from([0, 1, 2]),
    st.sampled_from([1, 2]),
    st.sampled_from(["unroll", "index"]),
)
def test_slm_buffering_keeps_results_and_is_race_free(kernel, slm_bufs, gmem_bufs, prefetch, unroll, rotation):
    transformed = multi_buffer(kernel.body, "xehpg", slm_bufs, gmem_bufs, prefetch, unroll, slm_rotation=rotation)
    assert not calls(transformed, Barrier)  # the two barriers became one split barrier per iteration
    assert run(kernel, transformed) == run(kernel)  # the interpreter raises SlmRaceError on a race


def any_topological_order(rng):
    """A stand-in for list scheduling: a random order that keeps only the graph's edges."""

    def order(successors, costs, priority, position, ready_at=None):
        waiting = {node: 0 for node in successors}
        for node in successors:
            for succ, _ in successors[node]:
                waiting[succ] += 1
        ready = sorted((n for n, d in waiting.items() if d == 0), key=lambda n: position[n])
        result = []
        while ready:
            node = ready.pop(rng.randrange(len(ready)))
            result.append(node)
            for succ, _ in successors[node]:
                waiting[succ] -= 1
                if waiting[succ] == 0:
                    ready.append(succ)
        return result

    return order


@SETTINGS
@given(
    staged_kernels(slm=True),
    st.sampled_from([2, 3]),
    st.sampled_from([1, 2]),
    st.sampled_from([0, 1]),
    st.randoms(use_true_random=False),
)
def test_slm_buffering_is_race_free_in_any_order_its_graph_allows(kernel, slm_bufs, gmem_bufs, prefetch, rng):
    # the edges the transform states, not the list scheduler's preferences, must keep the threads apart
    with mock.patch.object(linearization, "list_schedule", any_topological_order(rng)):
        transformed = multi_buffer(kernel.body, "xehpg", slm_bufs, gmem_bufs, prefetch)
    assert run(kernel, transformed) == run(kernel)  # SlmRaceError or UnfencedSlmWriteError on a missing edge


@SETTINGS
@given(staged_kernels(slm=False), st.sampled_from([1, 2]), st.sampled_from([0, 1]))
def test_register_buffering_of_global_loads_keeps_results(kernel, gmem_bufs, prefetch):
    transformed = multi_buffer(kernel.body, "xehpg", 1, gmem_bufs, prefetch)
    assert run(kernel, transformed) == run(kernel)


def _staged(slm_bufs: int, gmem_bufs: int, trips: int = 6) -> tuple[Kernel, ir.Stmt]:
    i, sh = Var("i"), buffer("sh")
    stage, loaded, acc, other = (buffer(n) for n in ("r0", "r1", "r2", "r3"))
    body = [
        Call(Send("load", "block", "global", S32, 8), (ptr(INP, (i * 8 + TID) * 4), ptr(stage, 0), None)),
        Call(Send("store", "block", "slm", S32, 8), (ptr(sh, TID * 32), ptr(stage, 0), None)),
        Call(Fence("slm")),
        Call(Barrier()),
        Call(Send("load", "block", "slm", S32, 8), (ptr(sh, (TID + 1) % 2 * 32), ptr(loaded, 0), None)),
        Call(Barrier()),
        Call(Mad(8, S32, S32, S32, 1, 1), (ptr(acc, 0), ptr(acc, 0), ptr(loaded, 0), ptr(other, 0))),
    ]
    loop = For(i, const(0), const(trips), seq(*body))
    kernel = Kernel(
        _wrap(seq(*_prologue(("r2", "r3")), loop, *_epilogue(("r2", "r3"))), ("r0", "r1", "r2", "r3"), 64), 2, 1
    )
    return kernel, multi_buffer(kernel.body, "xehpg", slm_bufs, gmem_bufs)


def _rows(trips: int) -> tuple[Kernel, ir.Stmt]:
    """A loop over `trips` rows, each loading three 32-word vectors (each keeps the send unit
    busy longer than a multiply takes to issue) and multiplying them into an accumulator: a
    depthwise kernel's row loop, double-buffered."""
    i, stage, acc = Var("i"), buffer("r0"), buffer("r2")
    send = Send("load", "block", "global", S32, 32)
    loads = [Call(send, (ptr(INP, (i * 96 + v * 32 + TID) * 4), ptr(stage, v * 128), None)) for v in range(3)]
    mad = Mad(8, S32, S32, S32, 1, 1)
    mads = [Call(mad, (ptr(acc, 0), ptr(acc, 0), ptr(stage, v * 128), ptr(acc, 32))) for v in range(3)]
    loop = For(i, const(0), const(trips), seq(*loads, *mads))
    body = Alloc(stage, 3 * 128, "grf", seq(*_prologue(("r2",)), loop, *_epilogue(("r2",))))
    kernel = Kernel(_wrap(body, ("r2",)), 2, 1)
    return kernel, multi_buffer(kernel.body, "xehpg", 1, 2)


@pytest.mark.parametrize("trips", [2, 3])
def test_a_short_double_buffered_loop_loads_two_rows_before_it_multiplies(trips):
    """The first multiply waits for the first row's loads; the second row's are issued before
    it, not after (scheduled block by block, the ramp-up's loads unknown to the next block, it
    waited two latencies): a loop whose steady part would run at most once is one block."""
    kernel, transformed = _rows(trips)
    order = [n.func for n in walk(transformed) if isinstance(n, Call) and isinstance(n.func, (Send, Mad))]
    first_multiply = next(k for k, f in enumerate(order) if isinstance(f, Mad))
    assert sum(isinstance(f, Send) for f in order[:first_multiply]) == 6
    assert run(kernel, transformed) == run(kernel)


@pytest.mark.parametrize("slm_bufs, gmem_bufs", [(2, 1), (3, 1), (2, 2), (3, 2)])
def test_buffers_are_multiplied_and_the_pipeline_ramps_up_and_down(slm_bufs, gmem_bufs):
    kernel, transformed = _staged(slm_bufs, gmem_bufs, trips=20)  # two or more passes of the steady loop
    sizes = {n.buffer.name: n.size for n in walk(transformed) if isinstance(n, Alloc)}
    assert sizes["sh"] == 64 * slm_bufs and sizes["r0"] == 128 * gmem_bufs and sizes["r1"] == 128
    loop = [n for n in walk(transformed) if isinstance(n, For)][0]
    period = math.lcm(slm_bufs, gmem_bufs)  # the body is unrolled so every copy offset is a constant
    assert len(calls(loop, Signal)) == period == len(calls(loop, Wait))
    depth = (slm_bufs - 1) + (gmem_bufs - 1)  # the global loads run this many iterations ahead
    assert loop.bound == ir.const((20 - depth) // period)
    for call in calls(loop, Send):  # register operands stay constant offsets
        assert isinstance(call.args[-2].offset, ir.IntImm)
    assert run(kernel, transformed) == run(kernel)


def test_triple_buffering_edits_the_graph_into_a_split_barrier_pipeline():
    kernel, _ = _staged(1, 1)
    loop = innermost_loops(kernel.body)[0]
    graph = loop_graph(kernel.body, loop, hw.XEHPG, Names(kernel.body))
    labels = ["g2r_load", "g2s_store", "fence", "barrier", "s2r_load", "barrier", "multiply"]
    assert [graph.nodes[n]["label"] for n in range(7)] == labels
    buffered = multi_buffer_graph(graph, 3, 1, 0, 1, "unroll")
    nodes = [n for n, data in buffered.nodes(data=True) if data["kind"] == "stmt"]
    labels = ["g2r_load", "g2s_store", "fence", "signal", "wait", "s2r_load", "multiply"]
    assert [buffered.nodes[n]["label"] for n in nodes] == labels  # the barriers became a split barrier
    assert [buffered.nodes[n].get("ahead", 0) for n in nodes] == [2, 2, 2, 2, 1, 0, 0]  # iterations ahead
    assert [buffered.nodes[n].get("rotates", ()) for n in nodes] == [(), ("sh",), (), (), (), ("sh",), ()]
    assert buffered.graph["copies"] == {"sh": 3} and buffered.graph["unroll"] == 3
    stated = {(u, v): d["distance"] for u, v, d in buffered.edges(data=True) if "SYNC" in d["kinds"]}
    assert stated[5, 3] == 2 and stated[4, 1] == 1 and stated[4, 5] == 0  # L(i) -> signal(i+2), wait(j) -> S(j+1)
    assert not any(r.buffer == "sh" for _, _, d in buffered.edges(data=True) for r in d["reasons"])
    assert graph.nodes[3]["label"] == "barrier"  # the graph it started from is unchanged


def test_slm_copies_can_rotate_by_index_arithmetic_instead_of_unrolling():
    kernel, _ = _staged(1, 1, trips=10)
    transformed = multi_buffer(kernel.body, "xehpg", slm_bufs=3, slm_rotation="index")
    loop = [n for n in walk(transformed) if isinstance(n, For)][0]
    assert len(calls(loop, Signal)) == 1 and loop.bound == ir.const(10 - 2)  # not unrolled; 2 ahead
    slm_sends = [c for c in calls(loop, Send) if c.func.space == "slm"]
    assert all("% 3" in str(c.args[0].offset) for c in slm_sends)  # copy (i mod 3) * 64 bytes
    assert run(kernel, transformed) == run(kernel)


@pytest.mark.parametrize("slm_bufs", [2, 3])
def test_removing_any_one_barrier_wait_makes_the_interpreter_report_a_race(slm_bufs):
    problem = make_problem("mb1ic16ih6oc32oh6kh3ph1", "FWD_D", "f16")
    kernel = build_kernel(
        problem, "xehpg", {"slm": 1, "tg_m": 2, "tg_n": 2, "tg_k": 1, "n_tile": 16, "slm_bufs": slm_bufs}
    )
    assert kernel.config.slm_bufs == slm_bufs and not calls(kernel.body, Barrier)
    tensors = random_inputs(problem)
    run_ir(kernel, tensors)  # as scheduled: no race
    waits = len(calls(kernel.body, Wait))  # in the text: ramp-up, loop body (once per copy), ramp-down
    assert waits >= slm_bufs

    for victim in range(waits):
        broken = replace(kernel, body=_without(kernel.body, Wait, victim))
        with pytest.raises(ir.SlmRaceError, match="SLM race"):
            run_ir(broken, tensors)


@pytest.mark.parametrize("slm_bufs", [2, 3])
def test_removing_a_needed_fence_makes_the_interpreter_report_an_unfenced_write(slm_bufs):
    problem = make_problem("mb1ic16ih6oc32oh6kh3ph1", "FWD_D", "f16")
    kernel = build_kernel(problem, "xehpg", {"slm": 1, "tg_m": 2, "tg_n": 2, "n_tile": 16, "slm_bufs": slm_bufs})
    tensors = random_inputs(problem)
    expected = run_ir(kernel, tensors)  # as scheduled: every SLM store is fenced before the signal that publishes it
    fences = len(calls(kernel.body, Fence))
    assert fences >= slm_bufs
    caught = 0
    for victim in range(fences):
        # A fence is redundant when the same thread fences again before the barrier its readers
        # wait for (a fence orders all of the thread's earlier SLM writes): then the results hold.
        try:
            outputs = run_ir(replace(kernel, body=_without(kernel.body, Fence, victim)), tensors)
        except UnfencedSlmWriteError as error:
            assert "without an SLM fence" in str(error)
            caught += 1
        else:
            assert all(np.array_equal(outputs[name], expected[name]) for name in expected)
    assert caught >= 1
    no_fences = replace(kernel, body=_DropAll(Fence).mutate(kernel.body))
    with pytest.raises(UnfencedSlmWriteError, match="unfenced SLM write: thread .* without an SLM fence"):
        run_ir(no_fences, tensors)


class _DropAll(ir.Mutator):
    def __init__(self, kind):
        self.kind = kind

    def mutate_Call(self, node):
        return ir.Seq(()) if isinstance(node.func, self.kind) else node


def _without(stmt, kind, victim: int):
    """`stmt` without the `victim`-th call of `kind` (in the text)."""

    class Drop(ir.Mutator):
        seen = 0

        def mutate_Call(self, node):
            if isinstance(node.func, kind):
                Drop.seen += 1
                if Drop.seen - 1 == victim:
                    return ir.Seq(())
            return node

    return Drop().mutate(stmt)


def test_slm_buffering_needs_the_barrier_pattern():
    kernel, _ = _staged(1, 1)

    with pytest.raises(UnsupportedError, match="exactly two barriers"):
        multi_buffer(_DropAll(Barrier).mutate(kernel.body), "xehpg", slm_bufs=2)


def test_a_loaded_register_carried_between_iterations_is_not_multi_buffered():
    kernel, _ = _staged(1, 1)

    class MaskLoads(ir.Mutator):  # a masked load without zeroing: the old value survives in lanes
        def mutate_Call(self, node):
            if isinstance(node.func, Send) and node.func.space == "global":
                return Call(node.func, (node.args[0], node.args[1], ir.Var("i") < 3))
            return node

    with pytest.raises(UnsupportedError, match="cannot multi-buffer 'r0'"):
        multi_buffer(MaskLoads().mutate(kernel.body), "xehpg", gmem_bufs=2)


def test_budgets_are_checked():
    kernel, _ = _staged(1, 1)
    # four 128-byte register buffers (16 GRFs of 32 bytes), the loads' target doubled: 20
    with pytest.raises(ConfigError, match="gmem_bufs=2 needs 20 GRFs .* more than the 16 available"):
        multi_buffer(kernel.body, "xehpg", gmem_bufs=2, grf_budget=16 * 32)

    class BigSlm(ir.Mutator):
        def mutate_Alloc(self, node):
            body = self.mutate(node.body)
            return Alloc(node.buffer, 30000 if node.kind == "slm" else node.size, node.kind, body)

    with pytest.raises(ConfigError, match="slm_bufs=3 needs 90000 bytes of SLM"):
        multi_buffer(BigSlm().mutate(kernel.body), "xehpg", slm_bufs=3)


def test_prefetch_needs_lsc_and_runs_ahead_of_the_loads():
    kernel, _ = _staged(1, 1, trips=8)
    with pytest.raises(UnsupportedError, match="no LSC prefetch"):
        multi_buffer(kernel.body, "xelp", slm_bufs=2, prefetch=1)
    transformed = multi_buffer(kernel.body, "xehpg", slm_bufs=2, prefetch=2)
    prefetches = [c for c in calls(transformed, Send) if c.func.op == "prefetch"]
    loads = [c for c in calls(transformed, Send) if c.func.op == "load" and c.func.space == "global"]
    # in the text: prefetches cover iterations 0..7, like the loads (ramp-up, loop body, ramp-down)
    assert prefetches and len(prefetches) == len(loads)
    assert all(p.args[1] is None for p in prefetches)
    assert run(kernel, transformed) == run(kernel)


@pytest.mark.parametrize(
    "platform, dt, overrides, slm_bufs, gmem_bufs",
    [
        # (one thread along K, so each thread's K loop is long enough to buffer)
        ("xehpg", "f16", {"slm": 1, "tg_m": 2, "tg_n": 2, "tg_k": 1}, 2, 2),  # 4 threads: double buffering
        ("xehpg", "f16", {"slm": 1, "tg_m": 4, "tg_n": 4, "tg_k": 1, "m_tile": 8, "n_tile": 8, "gmem_bufs": 2}, 3, 2),
        # (16 threads: triple)
        ("xehpg", "f32", {"tg_k": 1}, 1, 1),  # mad without SLM
        ("xelp", "f16", {"slm": 1, "tg_m": 2, "tg_n": 2, "tg_k": 1}, 2, 1),  # mad through SLM
    ],
)
def test_the_heuristic_picks_buffer_counts(platform, dt, overrides, slm_bufs, gmem_bufs):
    kernel = build_kernel(make_problem("mb1ic32ih8oc32oh8kh3ph1", "FWD_D", dt), platform, overrides)
    assert (kernel.config.slm_bufs, kernel.config.gmem_bufs) == (slm_bufs, gmem_bufs)
    for result in check_ir(kernel):
        assert result.ok


def test_the_heuristic_drops_register_copies_when_the_grf_is_full():
    # 16 x 16 dpas tiles in 128 GRFs: a second copy of the loaded A and B does not fit, one does
    problem = make_problem("mb1ic64ih16oc64oh16kh3ph1", "FWD_D", "f16")
    forced = {"m_tile": 16, "n_tile": 16, "grf": 128, "slm": 0, "tg_m": 1, "tg_n": 1}
    with pytest.raises(ConfigError, match="gmem_bufs=2"):
        build_kernel(problem, "xehpg", {**forced, "gmem_bufs": 2})
    kernel = build_kernel(problem, "xehpg", forced)
    assert kernel.config.gmem_bufs == 1
