"""Hoisting, unrolling and list scheduling keep the interpreter's results bit for bit, on random
small loop bodies (hypothesis) and on hand-made ones whose transformed shape is checked."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen import ir
from xegen.build import check_ir
from xegen.build.builder import build_body
from xegen.conv import make_problem
from xegen.errors import UnsupportedError
from xegen.ir import S32, Alloc, Call, For, IfThenElse, Let, Send, Var, buffer, const, load, ptr, seq, store, walk
from xegen.ir.funcs import Barrier
from xegen.ir.types import BOOL, PTR
from xegen.pipeline import build_kernel
from xegen.plan import formulate
from xegen.plan.kernel import plan_kernel
from xegen.schedule import (
    ScheduleOptions,
    hoist_invariants,
    model_cycles,
    multi_buffer,
    schedule,
    schedule_by_latency,
    unroll,
)
from xegen.schedule.context import allocated_bytes

from .bodies import (
    INP,
    REGISTER_BYTES,
    REGISTERS,
    TID,
    Kernel,
    _epilogue,
    _prologue,
    _wrap,
    loop_kernels,
    private_load_kernels,
    run,
    staged_kernels,
)

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(loop_kernels(), st.integers(1, 4))
def test_transforms_keep_results_of_random_loops(kernel, factor):
    expected = run(kernel)
    for transformed in (
        hoist_invariants(kernel.body),
        unroll(kernel.body, factor),
        schedule_by_latency(kernel.body),
        schedule_by_latency(unroll(hoist_invariants(kernel.body), factor)),
    ):
        assert run(kernel, transformed) == expected


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(staged_kernels(slm=True), st.integers(1, 4))
def test_transforms_keep_results_of_random_loops_that_share_slm_between_barriers(kernel, factor):
    # threads exchange data through SLM: no statement may cross a barrier with its SLM access,
    # or the interpreter reports a race (or reads another thread's stale slice)
    expected = run(kernel)
    for transformed in (
        hoist_invariants(kernel.body),
        unroll(kernel.body, factor),
        schedule_by_latency(kernel.body),
        schedule_by_latency(unroll(hoist_invariants(kernel.body), factor)),
    ):
        assert run(kernel, transformed) == expected


@SETTINGS
@given(private_load_kernels(), st.sampled_from([0, 1, 2]), st.sampled_from([1, 2]))
def test_register_double_buffering_keeps_results_of_random_loops_whose_loads_are_private(kernel, prefetch, factor):
    transformed = multi_buffer(kernel.body, "xehpg", gmem_bufs=2, prefetch=prefetch, unroll=factor)
    sizes = {n.buffer.name: n.size for n in walk(transformed) if isinstance(n, ir.Alloc)}
    loaded = {
        c.args[1].buffer.name
        for c in walk(kernel.body)
        if isinstance(c, Call) and isinstance(c.func, Send) and c.func.op == "load"
    }
    assert all(sizes[name] == 2 * REGISTER_BYTES for name in loaded)  # it applied: two copies of each
    assert run(kernel, transformed) == run(kernel)


# Hand-made loops ---------------------------------------------------------------------------------

IDX = Var("i")
R0, R1, R2, R3 = (buffer(name) for name in REGISTERS)


def kernel_with(loop_body, trips=5, start=0, lets=()):
    body = seq(*loop_body) if len(loop_body) > 1 else loop_body[0]
    for var, value in reversed(lets):
        body = Let(var, value, body)
    loop = For(IDX, const(start), const(start + trips), body)
    stmt = seq(*_prologue(REGISTERS), loop, *_epilogue(REGISTERS))
    return Kernel(_wrap(stmt, REGISTERS), 2, 1)


def loops(stmt):
    return [node for node in walk(stmt) if isinstance(node, For)]


def load_input(target, offset_words=0):
    return Call(
        Send("load", "block", "global", S32, 8), (ptr(INP, (IDX * 8 + TID) * 4), ptr(target, offset_words * 4), None)
    )


def test_hoisting_moves_invariant_lets_and_statements_only():
    w = Var("w")
    invariant = store(R3, 0, ir.Broadcast(TID * 7 + w, 8))  # same value every iteration
    uses = store(R1, 0, load(R3, 0, "s32x8") + ir.Broadcast(IDX, 8))  # reads it after it is written
    accumulate = store(R2, 0, load(R2, 0, "s32x8") + load(R1, 0, "s32x8"))  # carried: stays
    kernel = kernel_with([invariant, uses, accumulate], lets=[(w, TID + 1)])
    hoisted = hoist_invariants(kernel.body)
    loop = loops(hoisted)[0]
    assert invariant not in list(walk(loop)) and uses in list(walk(loop)) and accumulate in list(walk(loop))
    assert not any(isinstance(n, Let) and n.var.name == "w" for n in walk(loop))
    assert run(kernel, hoisted) == run(kernel)


def test_a_statement_read_before_it_is_written_stays_in_the_loop():
    reads_first = store(R1, 0, load(R3, 0, "s32x8") + ir.Broadcast(IDX, 8))
    rewrite = store(R3, 0, ir.Broadcast(TID * 7, 8))  # iteration 0 reads the prologue's value
    kernel = kernel_with([reads_first, rewrite])
    hoisted = hoist_invariants(kernel.body)
    assert rewrite in list(walk(loops(hoisted)[0]))
    assert run(kernel, hoisted) == run(kernel)


def test_a_loop_that_may_not_run_keeps_its_statements():
    kernel = kernel_with([store(R3, 0, ir.Broadcast(TID * 7, 8))], trips=0)
    hoisted = hoist_invariants(kernel.body)
    assert len(loops(hoisted)) == 1 and len(list(walk(loops(hoisted)[0]))) > 3
    assert run(kernel, hoisted) == run(kernel)


@pytest.mark.parametrize("trips, factor, blocks, peeled", [(7, 3, 2, 1), (6, 3, 2, 0), (2, 4, 0, 2), (0, 2, 0, 0)])
def test_unrolling_runs_blocks_and_peels_the_rest(trips, factor, blocks, peeled):
    body = [load_input(R0), store(R1, 0, load(R1, 0, "s32x8") + load(R0, 0, "s32x8"))]
    kernel = kernel_with(body, trips=trips, start=1)
    unrolled = unroll(kernel.body, factor)
    found = loops(unrolled)
    assert len(found) == (1 if blocks else 0)
    if blocks:
        assert found[0].bound == const(blocks) and found[0].init == const(0)
        inner_loads = [n for n in walk(found[0].body) if isinstance(n, Call)]
        assert len(inner_loads) == factor
    all_loads = [n for n in walk(unrolled) if isinstance(n, Call)]  # in the text: one block + the peeled
    assert len(all_loads) == (factor if blocks else 0) + peeled
    assert run(kernel, unrolled) == run(kernel)


def test_unrolling_needs_constant_bounds():
    n = Var("n")
    loop = For(IDX, const(0), n, store(R0, 0, const(1)))
    with pytest.raises(UnsupportedError, match="constant bounds"):
        unroll(Let(n, None, ir.Alloc(R0, 64, "grf", loop)), 2)


def test_list_scheduling_issues_the_long_latency_load_first():
    body = [
        store(R1, 0, load(R1, 0, "s32x8") * 3),
        store(R1, 32, load(R1, 32, "s32x8") * 5),
        load_input(R0),
        store(R2, 0, load(R2, 0, "s32x8") + load(R0, 0, "s32x8")),
    ]
    kernel = kernel_with(body)
    scheduled = schedule_by_latency(kernel.body)
    loop = loops(scheduled)[0]
    assert loop.var == IDX and loop.bound == const(5)
    statements = loop.body.stmts
    assert isinstance(statements[0], Call)  # the global load, latency 300, goes first
    assert statements[-1] == body[-1]  # its consumer last
    assert run(kernel, scheduled) == run(kernel)


def test_list_scheduling_keeps_a_loop_whose_start_is_a_variable():
    start = Var("start")
    body = [
        store(R1, 0, load(R1, 0, "s32x8") * 3),
        load_input(R0),
        store(R2, 0, load(R2, 0, "s32x8") + load(R0, 0, "s32x8")),
    ]
    loop = For(IDX, start, const(5), seq(*body))
    kernel = Kernel(
        _wrap(Let(start, const(1), seq(*_prologue(REGISTERS), loop, *_epilogue(REGISTERS))), REGISTERS), 2, 1
    )
    scheduled = schedule_by_latency(kernel.body)
    assert loops(scheduled)[0].init == start
    assert isinstance(loops(scheduled)[0].body.stmts[0], Call)  # it was reordered: the global load first
    assert run(kernel, scheduled) == run(kernel)


def test_transforms_are_deterministic():
    body = [load_input(R0), load_input(R1, 8), store(R2, 0, load(R0, 0, "s32x8") + load(R1, 32, "s32x8"))]
    kernel = kernel_with(body, trips=9)
    first = schedule_by_latency(unroll(kernel.body, 4))
    second = schedule_by_latency(unroll(kernel.body, 4))
    assert str(first) == str(second) and ir.stable_hash(first) == ir.stable_hash(second)


# The scheduling pass with one buffer of each kind -------------------------------------------------


def test_the_pass_hoists_and_list_schedules_a_single_buffered_loop_when_that_helps():
    invariant = store(R3, 0, ir.Broadcast(TID * 7, 8))
    body = [
        store(R1, 0, load(R1, 0, "s32x8") * 3),
        invariant,
        load_input(R0),
        store(R2, 0, load(R2, 0, "s32x8") + load(R0, 0, "s32x8")),
    ]
    kernel = kernel_with(body)
    scheduled = schedule(kernel.body, "xehpg", ScheduleOptions())
    loop = loops(scheduled)[0]
    assert invariant not in list(walk(loop))  # hoisted
    assert loop.body.stmts == (body[2], body[0], body[3])  # the 300-cycle load first
    assert run(kernel, scheduled) == run(kernel)


def test_the_pass_keeps_a_single_buffered_loop_that_list_scheduling_would_not_speed_up():
    kernel = kernel_with([load_input(R0), store(R2, 0, load(R2, 0, "s32x8") + load(R0, 0, "s32x8"))])
    assert schedule(kernel.body, "xehpg", ScheduleOptions()) is kernel.body


def test_single_buffered_conv_kernels_are_list_scheduled_where_the_model_says_it_helps():
    problem = make_problem("mb1ic8ih4oc8oh4kh3ph1", "FWD_B", "f32")
    # tiles of 3 of a row's 4 pixels and K blocks that divide K: no guard makes the loop's body
    # one `if` (tests/build/test_tile_guard.py), which is not list scheduled
    kernel = build_kernel(problem, "xehpg", {"m_tile": 3, "tg_k": 2})
    assert (kernel.config.slm_bufs, kernel.config.gmem_bufs) == (1, 1)
    built = build_body(plan_kernel(formulate(problem), kernel.config, kernel.hw))
    assert model_cycles(kernel.body, "xehpg").cycles < model_cycles(built, "xehpg").cycles
    assert all(result.ok for result in check_ir(kernel))


def test_allocated_bytes_add_nested_buffers_and_take_the_larger_branch_of_an_if():
    """Buffers nested inside each other all live at once (64 + 32 + the larger branch, 256, by
    hand: 352); the two branches of an if never do; other kinds are not counted."""

    def alloc(name, size, body, kind="grf"):
        return Alloc(Var(name, PTR), size, kind, body)

    work = Call(Barrier())
    branches = IfThenElse(Var("fits", BOOL), alloc("fast", 256, work), alloc("slow", 128, alloc("tmp", 64, work)))
    kernel = alloc("acc", 64, alloc("w", 32, seq(branches, alloc("slm", 4096, work, "slm"))))
    assert allocated_bytes(kernel, "grf") == 64 + 32 + 256
    assert allocated_bytes(kernel, "slm") == 4096
