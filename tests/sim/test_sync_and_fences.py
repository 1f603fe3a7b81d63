"""Instructions that order or stop execution rather than compute: memory fences (LSC, HDC),
`sync.fence` and `sync.host`, `sendc`, `halt`, and work-group barriers on XeLP and XeHPC (the
XeHPG barrier is in test_control.py).  Expected values are worked out with numpy from the
inputs; each kernel runs with the hazard checker, and dropping a needed wait is reported."""

from __future__ import annotations

import numpy as np
import pytest

from xegen.sim import SimulationError
from xegen.sim.memory import DeviceMemory

from .harness import execute
from .test_messages import hdc_desc, lsc_desc, mapped

THREADS = 4
EXTREMES = np.array([-(2**31), -1, 0, 1, 2**31 - 1, -7, 123456, -123456] * 2, np.int32)


def thread_values(seed: int) -> np.ndarray:
    """(THREADS, 16) int32: the extremes in thread 0, random values elsewhere."""
    values = np.random.default_rng(seed).integers(-(2**31), 2**31, size=(THREADS, 16)).astype(np.int32)
    values[0] = EXTREMES
    return values


# --- fences ------------------------------------------------------------------------------------------

A64_STORE = lsc_desc(4, mlen=4, rlen=0)  # SIMD16 d32 a64 flat store (XeHPG: 4 address GRFs)
A64_LOAD = lsc_desc(0, mlen=4, rlen=2)
FENCES = [
    # (platform, shared function, descriptor): IGC's fences and one with a flush operation
    ("tgllp", "dc0", 0x0219E000),  # HDC global fence with commit
    ("tgllp", "dc0", 0x0219E0FE),  # HDC SLM fence
    ("dg2", "ugm", 0x0214031F),  # fence.ugm.none.local (IGC before EOT)
    ("dg2", "slm", 0x0210011F),  # fence.slm.none.group (IGC before a barrier)
    ("pvc", "ugm", 0x0210161F),  # fence.ugm.evict.gpu
    ("pvc", "slm", 0x0210011F),
]


def _store_fence_load(hw: str, sfid: str, desc: int, *, wait: bool) -> str:
    """Store each lane's value, fence, wait for the fence's response (IGC's `mov null`), load back."""
    region = "<8;8,1>" if hw == "tgllp" else "<1;1,0>"
    null = "null" if hw == "tgllp" else "null:0"
    if hw == "tgllp":  # HDC A64 dword scatter/gather, SIMD16: 4 address GRFs
        store = f"send.dc1 (16|M0) null r10 r30 0x80 0x{hdc_desc(0x1A, 0x11, 0xFF, mlen=4, rlen=0):08X} {{$1}}"
        load = f"send.dc1 (16|M0) r40 r10 null 0x0 0x{hdc_desc(0x10, 0x11, 0xFF, mlen=4, rlen=2):08X} {{$3}}"
    elif hw == "dg2":
        store = f"send.ugm (16|M0) null r10 r30:2 0x0 0x{A64_STORE:08X} {{$1}}"
        load = f"send.ugm (16|M0) r40 r10 null:0 0x0 0x{A64_LOAD:08X} {{$3}}"
    else:  # XeHPC: 64-byte GRFs, SIMD16 a64 addresses in 2 GRFs, data in 1
        store = f"send.ugm (16|M0) null r10 r30:1 0x0 0x{lsc_desc(4, mlen=2, rlen=0):08X} {{$1}}"
        load = f"send.ugm (16|M0) r40 r10 null:0 0x0 0x{lsc_desc(0, mlen=2, rlen=1):08X} {{$3}}"
    fence = f"(W) send.{sfid} (1|M0) r60 r0 {null} 0x0 0x{desc:08X} {{$2}}"
    return "\n".join(
        [
            store,
            fence,
            f"(W) mov (8|M0) null<1>:ud r60.0{region}:ud" + (" {$2.dst}" if wait else ""),
            load,
            f"mov (16|M0) r50.0<1>:d r40.0{region}:d {{$3.dst}}",
        ]
    )


@pytest.mark.parametrize("hw, sfid, desc", FENCES, ids=[f"{h}-{s}-{d:08x}" for h, s, d in FENCES])
def test_fence_orders_nothing_the_simulator_has_not_already_done(hw, sfid, desc):
    """A fence completes at once: stores before it are in memory, loads after it see them; it
    changes no memory and leaves its header (r0) and the other payloads alone; waiting for its
    response (IGC's `mov null` with `$n.dst`) is all the ordering the kernel needs."""
    memory = DeviceMemory()
    buffer = np.full(THREADS * 16 + 8, 0x5A5A5A5A, np.int32)
    base = mapped(memory, buffer)
    values = thread_values(1)
    addresses = (base + 4 * np.arange(THREADS * 16, dtype=np.uint64)).reshape(THREADS, 16)
    r0 = np.arange(8, dtype=np.uint32) * 0x01010101  # a header the fence must leave alone
    asm = _store_fence_load(hw, sfid, desc, wait=True)
    run = execute(asm, hw, inputs={0: r0, 10: addresses, 30: values}, memory=memory, check_hazards=True)
    assert run.hazards == []
    np.testing.assert_array_equal(buffer[: THREADS * 16].reshape(THREADS, 16), values)
    np.testing.assert_array_equal(buffer[THREADS * 16 :], 0x5A5A5A5A)  # nothing past the stores
    np.testing.assert_array_equal(run.read(50, np.int32, 16), values)
    np.testing.assert_array_equal(run.read(0, np.uint32, 8), np.broadcast_to(r0, (THREADS, 8)))
    np.testing.assert_array_equal(run.read(10, np.uint64, 16), addresses)


@pytest.mark.parametrize("hw, sfid, desc", FENCES[::2], ids=[f"{h}-{s}" for h, s, d in FENCES[::2]])
def test_reading_a_fence_response_without_waiting_is_a_hazard(hw, sfid, desc):
    memory = DeviceMemory()
    buffer = np.zeros(THREADS * 16, np.int32)
    base = mapped(memory, buffer)
    addresses = (base + 4 * np.arange(THREADS * 16, dtype=np.uint64)).reshape(THREADS, 16)
    asm = _store_fence_load(hw, sfid, desc, wait=False)
    run = execute(asm, hw, inputs={10: addresses, 30: thread_values(2)}, memory=memory, check_hazards="report")
    assert any("RAW on r60" in str(h) and "$2.dst" in str(h) for h in run.hazards), run.hazards


# --- sync.fence and sync.host ---------------------------------------------------------------------------


@pytest.mark.parametrize("hw, functions", [("tgllp", ["host"]), ("dg2", ["host"]), ("pvc", ["fence", "host"])])
def test_sync_fence_and_host_change_nothing(hw, functions):
    """sync.fence (XeHPC) and sync.host order or stall execution on the hardware; in the
    simulator, which completes every message at issue, they change no register, flag or memory."""
    values = thread_values(3)
    region = "<8;8,1>" if hw == "tgllp" else "<1;1,0>"
    body = "\n".join(f"sync.{f} null" for f in functions)
    run = execute(
        f"""
        add (16|M0) r10.0<1>:d r20.0{region}:d -1:w
        cmp (16|M0) (lt)f1.0 null<1>:d r20.0{region}:d 0:w
        {body}
        add (16|M0) r12.0<1>:d r10.0{region}:d r20.0{region}:d {{{"@1" if hw == "tgllp" else "A@1"}}}
    """,
        hw,
        inputs={20: values},
        flags={0: 0xABCD1234},
        check_hazards=True,
    )
    assert run.hazards == []
    wide = values.astype(np.int64)
    np.testing.assert_array_equal(run.read(10, np.int32, 16), (wide - 1).astype(np.uint32).view(np.int32))
    np.testing.assert_array_equal(run.read(12, np.int32, 16), (2 * wide - 1).astype(np.uint32).view(np.int32))
    np.testing.assert_array_equal(run.flag(1) & 0xFFFF, ((values < 0) << np.arange(16)).sum(axis=1))
    assert (run.flag(0) == 0xABCD1234).all()


# --- sendc -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("hw", ["tgllp", "dg2", "pvc"])
def test_sendc_is_a_send(hw):
    """sendc differs from send only in waiting for earlier threads of the same pixels, which a
    compute dispatch does not have: it moves data as send does, sets its token, and a read of
    its result needs the token's wait."""
    memory = DeviceMemory()
    table = (np.arange(256, dtype=np.int64) * -16777259).astype(np.int32)  # wraps: negative and positive
    table[:4] = [-(2**31), 2**31 - 1, 0, -1]
    base = mapped(memory, table)
    index = np.random.default_rng(4).integers(0, 256, size=(THREADS, 16))
    index[0, :4] = [0, 1, 2, 3]
    region = "<8;8,1>" if hw == "tgllp" else "<1;1,0>"
    if hw == "tgllp":
        gather = f"sendc.dc1 (16|M0) r40 r10 null 0x0 0x{hdc_desc(0x10, 0x11, 0xFF, mlen=4, rlen=2):08X} {{$1}}"
    else:
        grfs = (4, 2) if hw == "dg2" else (2, 1)
        gather = f"sendc.ugm (16|M0) r40 r10 null:0 0x0 0x{lsc_desc(0, mlen=grfs[0], rlen=grfs[1]):08X} {{$1}}"
    addresses = (base + 4 * index).astype(np.uint64)
    waited = execute(
        f"{gather}\nmov (16|M0) r50.0<1>:d r40.0{region}:d {{$1.dst}}",
        hw,
        inputs={10: addresses},
        memory=memory,
        check_hazards=True,
    )
    assert waited.hazards == []
    np.testing.assert_array_equal(waited.read(50, np.int32, 16), table[index])
    hasty = execute(
        f"{gather}\nmov (16|M0) r50.0<1>:d r40.0{region}:d",
        hw,
        inputs={10: addresses},
        memory=memory,
        check_hazards="report",
    )
    assert any("RAW on r40" in str(h) and "$1.dst" in str(h) for h in hasty.hazards), hasty.hazards


# --- halt --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("hw", ["tgllp", "dg2", "pvc"])
def test_halt_disables_channels_until_its_uip(hw):
    """Channels that pass halt's predicate stop until the instruction at UIP (Mesa's discard
    shape: every halt's UIP is a final halt whose JIP and UIP are the next instruction); a
    thread whose channels all halted skips the code in between, NoMask instructions too."""
    x = np.random.default_rng(5).integers(-50, 50, size=(THREADS, 16)).astype(np.int32)
    x[0] = EXTREMES  # some halt, some do not
    x[1] = -np.abs(x[1]) - 1  # every channel halts
    x[2] = np.abs(x[2])  # none does
    region = "<8;8,1>" if hw == "tgllp" else "<1;1,0>"
    run = execute(
        f"""
        mov (16|M0) r10.0<1>:d 1:w
        (W) mov (1|M0) r14.0<1>:d 0:w
        cmp (16|M0) (lt)f0.0 null<1>:d r20.0{region}:d 0:w
        (f0.0) halt (16|M0) TARGET TARGET
        mov (16|M0) r10.0<1>:d 2:w
        (W) mov (1|M0) r14.0<1>:d 7:w
        cmp (16|M0) (eq)f0.1 null<1>:d r20.0{region}:d 0:w
        (f0.1) halt (16|M0) TARGET TARGET
        mov (16|M0) r10.0<1>:d 3:w
    TARGET:
        halt (16|M0) DONE DONE
    DONE:
        add (16|M0) r12.0<1>:d r10.0{region}:d 100:w {{{"@1" if hw == "tgllp" else "A@1"}}}
    """,
        hw,
        inputs={20: x},
        check_hazards=True,
    )
    assert run.hazards == []
    stage = np.where(x < 0, 1, np.where(x == 0, 2, 3))
    np.testing.assert_array_equal(run.read(10, np.int32, 16), stage)
    np.testing.assert_array_equal(run.read(12, np.int32, 16), stage + 100)  # every channel back at UIP
    np.testing.assert_array_equal(run.read(14, np.int32, 1)[:, 0], np.where((x >= 0).any(axis=1), 7, 0))


def test_halt_respects_the_dispatch_mask():
    live = np.ones((THREADS, 16), dtype=bool)
    live[:, 12:] = False
    x = np.tile(np.array([-1, 1] * 8, np.int32), (THREADS, 1))
    run = execute(
        """
        cmp (16|M0) (lt)f0.0 null<1>:d r20.0<1;1,0>:d 0:w
        (f0.0) halt (16|M0) TARGET TARGET
        mov (16|M0) r10.0<1>:d 5:w
    TARGET:
        halt (16|M0) DONE DONE
    DONE:
        add (16|M0) r12.0<1>:d r10.0<1;1,0>:d 1:w
    """,
        "dg2",
        inputs={20: x, 10: np.full(16, -9, np.int32), 12: np.full(16, -9, np.int32)},
        live=live,
    )
    np.testing.assert_array_equal(run.read(10, np.int32, 16), np.where(live & (x > 0), 5, -9))
    np.testing.assert_array_equal(run.read(12, np.int32, 16), np.where(live, np.where(x > 0, 6, -8), -9))


# --- barriers on XeLP and XeHPC --------------------------------------------------------------------------


def _barrier_kernel(hw: str, rounds: int) -> str:
    """IGC's shapes: store a row to SLM, fence, signal, wait; then read the next thread's row.
    Round k stores what round k-1 read, plus one, into SLM region k (so no thread overwrites a
    row another may still be reading); its addresses are in r(70+4k) and r(72+4k)."""
    if hw == "tgllp":  # HDC untyped SIMD16 X-channel SLM write/read (BTI 0xFE), header from r0.2
        store = "send.dc1 (16|M0) null r{own} r30 0x80 0x04025EFE {{{wait}$1}}"
        load = "send.dc1 (16|M0) r40 r{neighbour} null 0x0 0x04205EFE {{$4}}"
        fence = "(W) send.dc0 (8|M0) r60 r0 null 0x0 0x0219E0FE {$2}"
        header = "(W) and (8|M0) r61.0<1>:ud r0.2<0;1,0>:ud 0x7F000000:ud"
        signal = "(W) send.gtwy (1|M0) null r61 null 0x0 0x02000004 {@2,$3}"
        wait, region, after_add = "(W) sync.bar null", "<8;8,1>", "@1,"
    else:  # XeHPC: LSC SLM, SIMD16 = one GRF of addresses and one of data
        # templates for str.format below: % fills in the descriptor and leaves their braces readable
        store = (
            "send.slm (16|M0) null r{own} r30:1 0x0 0x%08X {{{wait}$1}}"  # noqa: UP031
            % lsc_desc(4, address=2, mlen=1, rlen=0)
        )
        load = (
            "send.slm (16|M0) r40 r{neighbour} null:0 0x0 0x%08X {{$4}}"  # noqa: UP031
            % lsc_desc(0, address=2, mlen=1, rlen=1)
        )
        fence = "(W) send.slm (1|M0) r60 r0 null:0 0x0 0x0210011F {$2}"
        header = "(W) mov (2|M0) r61.10<1>:ub r0.11<0;1,0>:ub"
        signal = "(W) send.gtwy (1|M0) null r61 null:0 0x0 0x02000004 {I@2,$3}"
        wait, region, after_add = "(W) sync.bar 0x0", "<1;1,0>", "I@1,"
    lines = []
    for k in range(rounds):
        if k:  # the previous store must have read r30 before it is overwritten
            lines += ["sync.allrd null", f"add (16|M0) r30.0<1>:d r40.0{region}:d 1:w {{$4.dst}}"]
        lines += [
            store.format(own=70 + 4 * k, wait=after_add if k else ""),
            fence,
            header,
            f"(W) mov (8|M0) null<1>:ud r60.0{region}:ud {{$2.dst}}",
            signal,
            wait,
            load.format(neighbour=72 + 4 * k),
        ]
    lines.append(f"mov (16|M0) r50.0<1>:d r40.0{region}:d {{$4.dst}}")
    return "\n".join(lines)


@pytest.mark.parametrize("hw", ["tgllp", "pvc"])
@pytest.mark.parametrize("rounds", [1, 2])
def test_barrier_and_shared_local_memory(hw, rounds):
    """Work-groups of 3, 2 and 1 threads: each thread sees only its own group's rows, and a
    barrier completes again in the next round."""
    group_of_thread = np.array([0, 0, 0, 1, 1, 2])
    thread_in_group = np.array([0, 1, 2, 0, 1, 0])
    group_size = np.bincount(group_of_thread)[group_of_thread]
    threads = group_of_thread.size
    data = np.random.default_rng(6).integers(-(2**31), 2**31, size=(threads, 16)).astype(np.int32)
    data[0] = EXTREMES
    lane = np.arange(16)[None, :] * 4
    addresses = {30: data}
    for k in range(rounds):
        region = 64 * 3 * k
        addresses[70 + 4 * k] = (region + thread_in_group[:, None] * 64 + lane).astype(np.uint32)
        addresses[72 + 4 * k] = (region + ((thread_in_group + 1) % group_size)[:, None] * 64 + lane).astype(np.uint32)
    run = execute(
        _barrier_kernel(hw, rounds),
        hw,
        threads=threads,
        inputs=addresses,
        slm_bytes=64 * 3 * rounds,
        group_of_thread=group_of_thread,
        check_hazards=True,
    )
    assert run.hazards == []
    first = np.arange(threads) - thread_in_group  # the index of each thread's group's thread 0
    expected = data.astype(np.int64)
    for _ in range(rounds):
        expected = expected[first + (thread_in_group + 1) % group_size] + 1
    np.testing.assert_array_equal(run.read(50, np.int32, 16), (expected - 1).astype(np.uint32).view(np.int32))


@pytest.mark.parametrize("hw", ["tgllp", "pvc"])
def test_barrier_a_thread_skips_is_a_deadlock(hw):
    signal = (
        "(W) send.gtwy (1|M0) null r0 null 0x0 0x02000004"
        if hw == "tgllp"
        else "(W) send.gtwy (1|M0) null r0 null:0 0x0 0x02000004"
    )
    wait = "sync.bar null" if hw == "tgllp" else "sync.bar 0x0"
    with pytest.raises(SimulationError, match="deadlock"):
        execute(
            f"""
            (W) cmp (16|M0) (eq)f0.0 null<1>:d r20.0<0;1,0>:d 0:w
            (W&f0.0) jmpi SKIP
            {signal}
            {wait}
        SKIP:
            nop
        """,
            hw,
            threads=2,
            inputs={20: np.array([[0], [1]], dtype=np.int32)},
        )
