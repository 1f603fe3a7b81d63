"""Each term of the modeled cycles (`xegen.emit.cost`, `.roofline`, `.latency`) pinned by hand.

Rates from `xegen/hw.py`, XeHPG (Arc A770): 512 EUs, 16 to an Xe-core (32 of them), 2.1 GHz,
8 threads per EU with 128 GRFs; an `add (16)` or `mad (16)` of f32 is 2 ALU clocks (16 lanes x
4 bytes at 32 a clock), a SIMD16 d32 load of 2 GRFs 8 load/store clocks (64 bytes at 8 a
clock); DRAM 560 GB/s = 266.67 bytes a clock, 16 MB of L2; a global load takes 130 ns = 273
clocks from L2 and 350 ns = 735 clocks from DRAM.
"""

from __future__ import annotations

import pytest

from xegen import hw as hwlib
from xegen.emit.asm_parser import parse_asm
from xegen.emit.cost import kernel_cycles
from xegen.emit.latency import exposed_latency
from xegen.emit.roofline import Tiling, Workload, roofline, traffic
from xegen.launch import occupancy, stall

XEHPG = hwlib.XEHPG
LOAD = "send.ugm (16|M0) r22 r16 null:0 0x0 0x04280580 {$1}"  # d32 SIMD16: 2 GRFs back
USE = "add (16|M0) r10.0<1>:f r22.0<1;1,0>:f r14.0<1;1,0>:f {$1.dst}"  # waits for the load
ADD = "add (16|M0) r30.0<1>:f r32.0<1;1,0>:f r34.0<1;1,0>:f"  # independent work
MAD = "mad (16|M0) r10.0<1>:f r12.0<1;0>:f r14.0<1;0>:f r16.0<1;0>:f"
L2, DRAM = 130 * 2.1, 350 * 2.1


def kernel(*lines: str):
    return parse_asm("\n".join(lines), "xehpg")


def test_the_hand_calculated_tiny_case():
    """512 threads in groups of 16, one group per Xe-core, one thread per EU; each loads 64
    bytes and adds.  The workload reads those 32768 bytes once and does 8192 multiply-adds."""
    instructions = kernel(LOAD, USE)
    work = Workload(fmas=512 * 16, kind="f32", a_bytes=512 * 64, b_bytes=0, c_bytes=0)
    cycles = kernel_cycles(instructions, [512, 512], "xehpg", group_threads=16, workload=work)
    # per thread: 2 issue, 2 ALU, 8 load/store clocks; one thread per EU
    assert cycles.parallel_eus == 512
    assert cycles.terms["compute"] == 2 and cycles.terms["issue"] == 2 and cycles.terms["load/store"] == 8
    # everything fits the L2, nothing is reused: DRAM moves the compulsory bytes, and the load
    # comes from DRAM: the add waits 735 clocks after the load's issue clock
    assert cycles.traffic.dram == 32768 and cycles.traffic.l3 == 32768
    assert cycles.terms["memory"] == pytest.approx(32768 / (560 / 2.1))
    assert cycles.exposed_latency == pytest.approx(DRAM)
    assert cycles.occupancy.wave_threads == 1 and cycles.occupancy.waves == 1
    # one thread per EU: nothing hides the wait; the thread issues its 2 instructions and waits
    # 735 clocks for the load, the load/store pipe's 8 clocks within them
    assert cycles.terms["latency"] == pytest.approx(2 + DRAM)
    assert cycles.bound == "latency" and cycles.device == pytest.approx(2 + DRAM)
    # the roofline: 8192 FMAs at 8 x 512 a clock = 2 clocks, 32768 bytes at 266.67 = 122.9 clocks
    assert cycles.roofline.compute == 2 and cycles.roofline.bound == "memory"
    assert cycles.roofline_fraction == pytest.approx((32768 / (560 / 2.1)) / (2 + DRAM))


def test_a_kernel_of_only_sends_is_load_store_or_memory_bound():
    loads = [LOAD.replace(" {$1}", "")] * 8  # nothing waits for them
    cycles = kernel_cycles(
        kernel(*loads), [4096] * 8, "xehpg", group_threads=16, workload=Workload(0, "f32", 4096 * 8 * 64, 0, 0)
    )
    assert cycles.bound in ("load/store", "memory")
    assert cycles.terms["load/store"] == 8 * 8 * 4096 / 512  # 8 loads of 8 clocks, 8 threads an EU


def test_a_kernel_of_only_fmas_is_compute_bound():
    cycles = kernel_cycles(kernel(*[MAD] * 16), [4096] * 16, "xehpg", group_threads=16)
    assert cycles.bound == "compute" and cycles.device == 16 * 2 * 4096 / 512


def test_dpas_is_compute_too():
    dpas = "dpas.8x8 (8|M0) r80:f null:f r30:hf r40.0:hf"  # 1024 FMAs at 64 a clock: 16 clocks
    cycles = kernel_cycles(kernel(dpas, dpas), [512, 512], "xehpg")
    assert cycles.bound == "compute" and cycles.terms["compute"] == 32


@pytest.mark.parametrize("threads_per_eu, exposed", [(1, True), (4, False)])
def test_threads_on_an_eu_hide_the_latency_their_work_covers(threads_per_eu, exposed):
    """40 independent adds between the load and its use: each thread is busy 82 clocks (41 adds of
    2 ALU clocks) and waits 273 - 40 = 233 (the load's result is there 273 clocks
    after the clock it issued in; the thread issues 40 adds meanwhile, one a clock).  One thread
    per EU shows the wait: its own time is its 42 instructions and the 233 clocks of waiting, the
    ALU's 82 clocks within them; four keep the EU busy 4 x 82 = 328 clocks, more than 275."""
    instructions = kernel(LOAD, *[ADD] * 40, USE)
    threads = 512 * threads_per_eu
    cycles = kernel_cycles(instructions, [threads] * 42, "xehpg", group_threads=16)
    assert cycles.exposed_latency == pytest.approx(L2 - 40)
    assert cycles.occupancy.wave_threads == threads_per_eu
    busy = 41 * 2 * threads_per_eu
    if exposed:
        assert cycles.bound == "latency" and cycles.device == pytest.approx(42 + L2 - 40)
    else:
        assert cycles.bound == "compute" and cycles.device == busy


@pytest.mark.parametrize("between", [0, 1, 3])
def test_independent_instructions_before_a_use_do_not_lower_the_latency(between):
    """One thread per EU, load/store bound (8 clocks a thread against 2 + `between` issued): the
    thread's adds before the use only fill clocks it would have waited, so its own time stays
    the load's 273 clocks (from L2: no workload) plus the use's issue clock, whatever `between`
    is.  (Priced as the busy time plus the wait, 8 + 273 - between, each add lowered it.)"""
    instructions = kernel(LOAD, *[ADD] * between, USE)
    cycles = kernel_cycles(instructions, [512] * (between + 2), "xehpg", group_threads=16)
    assert cycles.exposed_latency == pytest.approx(L2 - between)
    assert cycles.terms["load/store"] == 8 and cycles.terms["latency"] == pytest.approx(2 + L2)


def test_a_loop_repeats_its_second_iteration():
    """A loop of 10 trips whose load is used in the next iteration: the first iteration waits
    nothing, each later one for the load of the one before, which issued 3 instructions earlier
    (cmp, jmpi, the counter's add)."""
    instructions = parse_asm(
        """
        mov (1|M0) r2.0<1>:d 0:d
    TOP:
        (W) add (1|M0) r2.0<1>:d r2.0<0;1,0>:d 1:d
        add (16|M0) r10.0<1>:f r22.0<1;1,0>:f r14.0<1;1,0>:f {$1.dst}
        send.ugm (16|M0) r22 r16 null:0 0x0 0x04280580 {$1}
        (W) cmp (1|M0) (lt)f0.0 null<1>:d r2.0<0;1,0>:d 10:d
        (W&f0.0) jmpi (1|M0) TOP
        mov (1|M0) r3.0<1>:d 0:d
    """,
        "xehpg",
    )
    executions = [1, 10, 10, 10, 10, 10, 1]
    waited = exposed_latency(instructions, executions, 1, lambda inst: 100.0)
    assert waited == 9 * (100 - 3)


def test_a_wait_in_a_branch_counts_for_the_threads_that_take_it():
    """Three threads of four take the branch whose load has latency 100, one the other, whose
    load has 40; each load's use follows it, so a thread that runs it waits the whole latency.
    An average thread waits 3/4 * 100 + 1/4 * 40 (both counted in full, it waited 140)."""
    instructions = parse_asm(
        """
        (W) cmp (1|M0) (lt)f0.0 null<1>:d r2.0<0;1,0>:d 3:d
        (W&~f0.0) jmpi (1|M0) OTHER
        send.ugm (16|M0) r22 r16 null:0 0x0 0x04280580 {$1}
        add (16|M0) r10.0<1>:f r22.0<1;1,0>:f r14.0<1;1,0>:f {$1.dst}
        (W) jmpi (1|M0) END
    OTHER:
        send.ugm (16|M0) r24 r18 null:0 0x0 0x04280580 {$2}
        add (16|M0) r10.0<1>:f r24.0<1;1,0>:f r14.0<1;1,0>:f {$2.dst}
    END:
        mov (1|M0) r3.0<1>:d 0:d
    """,
        "xehpg",
    )

    def latency(inst) -> float:
        return {22: 100.0, 24: 40.0}[inst.dst.number]

    executions = [4, 4, 3, 3, 3, 1, 1, 4]
    assert exposed_latency(instructions, executions, 4, latency) == pytest.approx(0.75 * 100 + 0.25 * 40)


def test_the_dispatch_payload_comes_from_the_last_level_cache():
    """A prologue's load of the arguments through bti[255] (xegen's XeHPC prologue, as iga64
    prints it; IGC's loads its payload the same way) has at most the last-level cache's latency
    when the kernel's data comes from DRAM; a flat (A64) load of the same size the global mix's."""
    payload = "send.ugm (1|M0) r21 r1 null:0 0xFF000000 0x6210C500 {$0}"
    flat = "send.ugm (1|M0) r21 r1 null:0 0x0 0x0210D580 {$0}"  # a block load of the data
    use = "add (1|M0) r22.0<1>:q r21.1<0;1,0>:q 1:d {$0.dst}"
    work = Workload(fmas=1, kind="f32", a_bytes=1 << 30, b_bytes=0, c_bytes=0)  # all from DRAM
    waits = {}
    for name, load in (("payload", payload), ("flat", flat)):
        instructions = parse_asm(f"{load}\n{use}", "xehpc")
        waits[name] = kernel_cycles(instructions, [1, 1], "xehpc", workload=work).exposed_latency
    assert waits["payload"] == pytest.approx(hwlib.XEHPC.send_latency("l3"))
    assert waits["flat"] > waits["payload"]


@pytest.mark.parametrize("mask, waited", [("($1)", 101 - 2), ("($1,$2)", 402 - 2), ("null", 402 - 2)])
def test_sync_allwr_waits_for_the_tokens_of_its_mask(mask, waited):
    """Loads on $1 (latency 100, issued at clock 1: there at 101) and $2 (400, at 2: 402), then a
    `sync.allwr` at clock 2 before a use of $1's load: with ($1) it waits for $1 only; with $2 in
    its mask, or without a mask, for both."""
    instructions = kernel(
        "send.ugm (16|M0) r22 r16 null:0 0x0 0x04280580 {$1}",
        "send.ugm (16|M0) r24 r18 null:0 0x0 0x04280580 {$2}",
        f"sync.allwr {mask}",
        "add (16|M0) r10.0<1>:f r22.0<1;1,0>:f r14.0<1;1,0>:f",
    )

    def latency(inst) -> float:
        return {22: 100.0, 24: 400.0}.get(inst.dst.number, 0.0) if inst.dst is not None else 0.0

    assert exposed_latency(instructions, [1] * 4, 1, latency) == waited


@pytest.mark.parametrize(
    "grf, slm, group_threads, per_eu, groups, limit",
    [
        (128, 0, 16, 8, 8, "threads"),  # 8 threads x 16 EUs / 16
        (256, 0, 16, 4, 4, "threads"),  # large GRF mode: half the threads
        (128, 48 * 1024, 4, 8, 2, "slm"),  # 128 KB of SLM / 48 KB per group
        (128, 0, 2, 8, 32, "barriers"),  # groups that synchronize: 32 barriers an Xe-core
    ],
)
def test_occupancy_limits(grf, slm, group_threads, per_eu, groups, limit):
    resident = occupancy(512 * 8 * group_threads, group_threads, XEHPG, grf, slm, barriers=limit == "barriers")
    assert (resident.threads_per_eu, resident.groups_per_subslice, resident.limit) == (per_eu, groups, limit)


def test_wave_quantization_leaves_a_last_wave_of_few_threads():
    """33 groups of 16 threads on 32 Xe-cores of 8 groups each: one Xe-core runs 2 groups, in one
    wave; 32 x 8 + 1 = 257 groups: the busiest runs 9 groups, a wave of 8 and a wave of 1."""
    assert occupancy(33 * 16, 16, XEHPG, 128).waves == 1
    tail = occupancy(257 * 16, 16, XEHPG, 128)
    assert (tail.waves, tail.wave_threads, tail.last_wave_threads) == (2, 8, 1)
    # each thread busy 10 clocks and waiting 100: the full wave hides 80 of the 110, the last none
    assert stall(tail, 10.0, 100.0, 10.0) == (110 - 80) + (110 - 10)


def test_traffic_when_everything_fits_is_compulsory():
    work = Workload(0, "f32", a_bytes=1 << 20, b_bytes=1 << 20, c_bytes=1 << 20, other_read_bytes=256)
    moved = traffic(work, requested=50 << 20, hw=XEHPG, tiling=Tiling(m_groups=8, n_groups=4))
    assert moved.dram == moved.compulsory == 3 * (1 << 20) + 256
    # the L3 sees A once per column of groups, B once per row, C once: 4 + 8 + 1 MB
    assert moved.l3 == (4 + 8 + 1) * (1 << 20) + 256


def test_weights_that_do_not_stay_in_the_cache_come_again_for_each_pass():
    """XeLP's 3840 KB L3; 8 MB of weights: each pass of the resident groups (8 of them, 2 rows of
    4 columns) over the 10 rows of groups reads them again: 5 passes."""
    mb = 1 << 20
    work = Workload(0, "f32", a_bytes=mb, b_bytes=8 * mb, c_bytes=mb)
    moved = traffic(work, requested=200 * mb, hw=hwlib.XELP, tiling=Tiling(m_groups=10, n_groups=4), resident_groups=8)
    assert moved.dram == mb + 5 * 8 * mb + mb
    assert moved.l3 == 4 * mb + 10 * 8 * mb + mb


def test_n_slices_dispatched_after_m_keep_their_weights_in_the_cache():
    """XeLP's 3840 KB L3; 8 MB of weights over 8 groups along N, in 4 slices dispatched after M
    (oneDNN's OCB slices): a slice's 2 MB of weights stay while its 10 rows of groups run, so they
    come once, where N fastest as a whole would read them once per pass (10 passes of 8 resident
    groups).  A (1 MB) stays over a slice too; 3 MB of A do not (3 + 2 + 0.25 MB > 3.75 MB) and
    come again for each of the 4 slices."""
    mb = 1 << 20
    work = Workload(0, "f32", a_bytes=mb, b_bytes=8 * mb, c_bytes=mb)
    sliced = traffic(work, requested=200 * mb, hw=hwlib.XELP, tiling=Tiling(10, 8, n_outer=4), resident_groups=8)
    assert sliced.dram == sliced.compulsory == 10 * mb
    whole = traffic(work, requested=200 * mb, hw=hwlib.XELP, tiling=Tiling(10, 8), resident_groups=8)
    assert whole.dram == mb + 10 * 8 * mb + mb
    assert sliced.l3 == whole.l3 == 8 * mb + 10 * 8 * mb + mb  # the L3's share does not depend on the order
    wide_a = Workload(0, "f32", a_bytes=3 * mb, b_bytes=8 * mb, c_bytes=mb)
    moved = traffic(wide_a, requested=200 * mb, hw=hwlib.XELP, tiling=Tiling(10, 8, n_outer=4), resident_groups=8)
    assert moved.dram == 4 * 3 * mb + 4 * (2 * mb + mb // 4)
    with pytest.raises(ValueError):
        Tiling(10, 6, n_outer=4)


def test_a_kernel_without_a_tiling_is_credited_no_reuse():
    mb = 1 << 20
    work = Workload(0, "f32", a_bytes=mb, b_bytes=8 * mb, c_bytes=mb)
    moved = traffic(work, requested=30 * mb, hw=hwlib.XELP)
    assert moved.l3 == moved.dram == 30 * mb  # does not fit: every request goes to DRAM
    assert traffic(work, requested=30 * mb, hw=XEHPG).dram == 10 * mb  # fits the 16 MB L2


def test_the_roofline_is_the_slower_of_peak_compute_and_compulsory_bytes():
    work = Workload(fmas=64 * 512 * 2000, kind="f16", a_bytes=266_667, b_bytes=0, c_bytes=0)
    line = roofline(work, XEHPG)
    assert line.compute == 2000  # XMX: 64 f16 FMAs an EU a clock
    assert line.memory == pytest.approx(1000, rel=1e-5) and line.bound == "compute" and line.cycles == 2000
    assert roofline(Workload(64 * 512 * 500, "f16", 266_667, 0, 0), XEHPG).bound == "memory"
