"""The cycle model: small programs whose timing is worked out by hand from xegen/hw.py's numbers,
bounds that must hold for any program, and the effect of buffering on a convolution's K loop."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from xegen import hw, ir
from xegen.conv import make_problem
from xegen.ir import S32, Alloc, Call, For, Let, Send, Signal, Var, Wait, buffer, const, load, ptr, seq, store
from xegen.pipeline import build_kernel
from xegen.schedule import model_cycles

from .bodies import loop_kernels

HW = hw.XEHPG
ALU = HW.latency["alu"]
GLOBAL = HW.latency["send_global"]
R0, R1, SRC = buffer("r0"), buffer("r1"), buffer("src")


def program(*stmts):
    body = Alloc(R0, 64, "grf", Alloc(R1, 64, "grf", seq(*stmts)))
    return Let(SRC, None, body)


def fill(target, offset=0, value=1):
    return store(target, offset, ir.Broadcast(const(value), 8))  # 32 bytes: one cycle of the FPU


def global_load(target):
    return Call(Send("load", "block", "global", S32, 8), (ptr(SRC, 0), ptr(target, 0), None))


def prefetch():
    return Call(Send("prefetch", "block", "global", S32, 8), (ptr(SRC, 0), None, None))


def test_a_dependent_pair_waits_for_the_first_result():
    stmt = program(fill(R0), store(R1, 0, load(R0, 0, "s32x8") + 1))
    report = model_cycles(stmt, HW, whole=True)
    one = ALU + 1  # alu latency plus one busy cycle
    assert report.cycles == 2 * one and report.critical_path == 2 * one
    assert report.resource_bound == 2 and report.busy == {"fpu": 2}


def test_independent_statements_issue_back_to_back():
    stmt = program(fill(R0), fill(R1))
    report = model_cycles(stmt, HW, whole=True)
    assert report.cycles == 1 + ALU + 1  # the second issues one cycle after the first
    assert report.critical_path == ALU + 1  # with unlimited issue both start at once


def test_a_global_load_takes_its_latency():
    stmt = program(global_load(R0), store(R1, 0, load(R0, 0, "s32x8")))
    assert model_cycles(stmt, HW, whole=True).cycles == GLOBAL + ALU + 1


def test_a_prefetched_load_hits_the_cache():
    chain = [fill(R1, 0)] + [store(R1, 0, load(R1, 0, "s32x8") + 1) for _ in range(59)]  # 60 x 5 cycles
    use = store(R1, 32, load(R0, 0, "s32x8"))
    with_prefetch = model_cycles(program(prefetch(), *chain, global_load(R0), use), HW, whole=True)
    without = model_cycles(program(*chain, global_load(R0), use), HW, whole=True)
    step = ALU + 1
    # without: the chain's last statement issues at 59 * 5, the load one cycle later, the use after 300
    assert without.cycles == 59 * step + 1 + GLOBAL + step
    # with: everything one cycle later; the lines arrived at 300, so the load takes the cached latency
    assert with_prefetch.cycles == 1 + 59 * step + 1 + HW.latency["send_global_cached"] + step


def test_a_wait_completes_a_barrier_latency_after_its_signal():
    stmt = program(Call(Signal()), Call(Wait()), fill(R0))
    # signal at 0, wait completes at 30, the fill issues one cycle later
    assert model_cycles(stmt, HW, whole=True).cycles == HW.latency["barrier"] + 1 + ALU + 1


def test_loops_run_every_iteration():
    i = Var("i")
    loop = For(i, const(0), const(10), store(R0, 0, load(R0, 0, "s32x8") + ir.Broadcast(i, 8)))
    assert model_cycles(program(fill(R0), loop), HW, whole=True).cycles == 11 * (ALU + 1)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loop_kernels())
def test_cycles_are_at_least_both_bounds(kernel):
    report = model_cycles(kernel.body, HW, whole=True)
    assert report.critical_path <= report.cycles
    assert report.resource_bound <= report.cycles  # a unit is never busy twice at once
    assert report.resource_bound == max(report.busy.values(), default=0)


def test_buffering_shortens_a_convolution_loop_in_the_model():
    problem = make_problem("mb1ic64ih8oc64oh8kh3ph1", "FWD_D", "f16")
    base = {"slm": 1, "tg_m": 2, "tg_n": 2, "tg_k": 1, "m_tile": 16, "n_tile": 32}
    reports = {}
    for slm_bufs, gmem_bufs in ((1, 1), (2, 1), (2, 2), (3, 2)):
        kernel = build_kernel(problem, "xehpg", {**base, "slm_bufs": slm_bufs, "gmem_bufs": gmem_bufs})
        reports[slm_bufs, gmem_bufs] = model_cycles(kernel.body, "xehpg")
    single = reports[1, 1]
    assert single.busy["systolic"] == 36 * 8 * 16  # 36 K steps x 8 dpas x 16 cycles (8x8x8x2 FMAs / 64 per clock)
    assert reports[2, 1].cycles < single.cycles
    assert reports[2, 2].cycles < reports[2, 1].cycles
    assert reports[3, 2].cycles <= reports[2, 2].cycles
    assert all(r.busy["systolic"] == single.busy["systolic"] for r in reports.values())  # same multiplies
