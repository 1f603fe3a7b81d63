"""SIMD control flow: structured (if/else/endif, while/break/cont), unstructured (goto/join),
uniform jumps that send threads different ways (jmpi), barriers, and the errors a broken
kernel gets."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xegen.sim import SimulationError

from .harness import execute

THREADS = 4


def lane_values(seed: int, low: int, high: int, lanes: int = 16) -> np.ndarray:
    return np.random.default_rng(seed).integers(low, high, size=(THREADS, lanes)).astype(np.int32)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_nested_if_else_endif(seed):
    x = lane_values(seed, -50, 50)
    run = execute(
        """
        mov (16|M0) r10.0<1>:d 0:w
        cmp (16|M0) (gt)f0.0 null<1>:d r20.0<8;8,1>:d 0:w
        (f0.0) if (16|M0) ELSE ENDIF
        cmp (16|M0) (gt)f0.1 null<1>:d r20.0<8;8,1>:d 10:w
        (f0.1) if (16|M0) INNER INNER
        mov (16|M0) r10.0<1>:d 2:w
    INNER:
        endif (16|M0) AFTER_INNER
    AFTER_INNER:
        add (16|M0) r10.0<1>:d r10.0<8;8,1>:d 1:w
        else (16|M0) ENDIF ENDIF
    ELSE:
        mov (16|M0) r10.0<1>:d -1:w
    ENDIF:
        endif (16|M0) DONE
    DONE:
        add (16|M0) r12.0<1>:d r10.0<8;8,1>:d 100:w
    """,
        "tgllp",
        inputs={20: x},
    )
    expected = np.where(x > 0, np.where(x > 10, 3, 1), -1)
    np.testing.assert_array_equal(run.read(10, np.int32, 16), expected)
    np.testing.assert_array_equal(run.read(12, np.int32, 16), expected + 100)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_while_with_break_and_continue(seed):
    n = lane_values(seed, 0, 12)
    stop = lane_values(seed + 1, 1, 15)
    skip = lane_values(seed + 2, 1, 4)
    run = execute(
        """
        mov (16|M0) r10.0<1>:d 0:w
        mov (16|M0) r12.0<1>:d 0:w
    LOOP:
        add (16|M0) r10.0<1>:d r10.0<8;8,1>:d 1:w
        cmp (16|M0) (lt)f0.0 null<1>:d r10.0<8;8,1>:d r20.0<8;8,1>:d
        cmp (16|M0) (eq)f1.0 null<1>:d r10.0<8;8,1>:d r22.0<8;8,1>:d
        (f1.0) break (16|M0) BODY WHILE
    BODY:
        cmp (16|M0) (eq)f1.1 null<1>:d r10.0<8;8,1>:d r24.0<8;8,1>:d
        (f1.1) cont (16|M0) WHILE WHILE
        add (16|M0) r12.0<1>:d r12.0<8;8,1>:d r10.0<8;8,1>:d
    WHILE:
        (f0.0) while (16|M0) LOOP
        add (16|M0) r14.0<1>:d r10.0<8;8,1>:d 1000:w
    """,
        "tgllp",
        inputs={20: n, 22: stop, 24: skip},
    )
    counter = np.zeros_like(n)
    total = np.zeros_like(n)
    for index in np.ndindex(n.shape):
        c = s = 0
        while True:
            c += 1
            if c == stop[index]:
                break
            if c != skip[index]:
                s += c
            if not c < n[index]:
                break
        counter[index], total[index] = c, s
    np.testing.assert_array_equal(run.read(10, np.int32, 16), counter)
    np.testing.assert_array_equal(run.read(12, np.int32, 16), total)
    np.testing.assert_array_equal(run.read(14, np.int32, 16), counter + 1000)


@pytest.mark.parametrize("hw", ["dg2", "pvc"])
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_goto_join_and_backward_goto_loop(hw, seed):
    """IGC's shapes: a forward goto around a block, and a loop closed by goto.b."""
    x = lane_values(seed, -5, 6)
    run = execute(
        """
        mov (16|M0) r10.0<1>:d 7:w
        mov (16|M0) r12.0<1>:d 0:w
        cmp (16|M0) (lt)f0.0 null<1>:d r20.0<1;1,0>:d 0:w
        (f0.0) goto (16|M0) JOIN JOIN
        mov (16|M0) r10.0<1>:d 1:w
    HEAD:
        add (16|M0) r12.0<1>:d r12.0<1;1,0>:d 3:w
        add (16|M0) r20.0<1>:d r20.0<1;1,0>:d -1:w
        cmp (16|M0) (gt)f1.0 null<1>:d r20.0<1;1,0>:d 0:w
        (f1.0) goto.b (16|M0) JOIN HEAD
    JOIN:
        join (16|M0) AFTER
    AFTER:
        add (16|M0) r14.0<1>:d r10.0<1;1,0>:d r12.0<1;1,0>:d
    """,
        hw,
        inputs={20: x},
    )
    negative = x < 0
    trips = np.where(negative, 0, np.maximum(x, 1))
    np.testing.assert_array_equal(run.read(10, np.int32, 16), np.where(negative, 7, 1))
    np.testing.assert_array_equal(run.read(12, np.int32, 16), 3 * trips)
    np.testing.assert_array_equal(run.read(14, np.int32, 16), np.where(negative, 7, 1) + 3 * trips)


def test_jmpi_sends_threads_different_ways_and_loops_per_thread():
    counts = np.array([0, 3, 1, 5], dtype=np.int32)
    run = execute(
        """
        (W) mov (1|M0) r10.0<1>:d 0:w
        (W) cmp (16|M0) (gt)f0.0 null<1>:d r20.0<0;1,0>:d 2:w
        (W&f0.0) jmpi BIG
        mov (16|M0) r12.0<1>:d 1:w
        (W) jmpi LOOP_TEST
    BIG:
        mov (16|M0) r12.0<1>:d 2:w
    LOOP_TEST:
        (W) cmp (16|M0) (lt)f1.0 null<1>:d r10.0<0;1,0>:d r20.0<0;1,0>:d
        (W&~f1.0) jmpi DONE
        (W) add (1|M0) r10.0<1>:d r10.0<0;1,0>:d 1:w
        (W) jmpi LOOP_TEST
    DONE:
        mov (16|M0) r14.0<1>:d r10.0<0;1,0>:d
    """,
        "pvc",
        inputs={20: counts[:, None]},
    )
    np.testing.assert_array_equal(run.read(12, np.int32, 16), np.where(counts > 2, 2, 1)[:, None] * np.ones(16, int))
    np.testing.assert_array_equal(run.read(14, np.int32, 16), counts[:, None] * np.ones(16, int))


def test_divergent_threads_with_partial_dispatch():
    """Only live channels take part in the branch decisions and writes."""
    live = np.zeros((THREADS, 16), dtype=bool)
    live[0, :] = True
    live[1, :3] = True
    live[2, :16] = True
    live[3, :1] = True
    x = lane_values(5, -3, 3)
    run = execute(
        """
        cmp (16|M0) (ge)f0.0 null<1>:d r20.0<1;1,0>:d 0:w
        (~f0.0) goto (16|M0) END END
        mov (16|M0) r10.0<1>:d 1:w
    END:
        join (16|M0) NEXT
    NEXT:
        mov (16|M0) r12.0<1>:d 5:w
    """,
        "dg2",
        inputs={20: x, 10: np.full(16, -9, np.int32), 12: np.full(16, -9, np.int32)},
        live=live,
    )
    np.testing.assert_array_equal(run.read(10, np.int32, 16), np.where(live & (x >= 0), 1, -9))
    np.testing.assert_array_equal(run.read(12, np.int32, 16), np.where(live, 5, -9))


def test_barrier_and_shared_local_memory():
    """Each thread stores its lanes to SLM, waits at the barrier, then loads the next thread's."""
    threads, groups = 6, 2
    group_of_thread = np.repeat(np.arange(groups), threads // groups)
    thread_in_group = np.tile(np.arange(threads // groups), groups)
    data = (np.arange(threads)[:, None] * 100 + np.arange(16)[None, :]).astype(np.int32)
    per_group = threads // groups
    offsets = (thread_in_group[:, None] * 64 + np.arange(16)[None, :] * 4).astype(np.uint32)
    neighbour = (((thread_in_group + 1) % per_group)[:, None] * 64 + np.arange(16)[None, :] * 4).astype(np.uint32)
    run = execute(
        """
        send.slm (16|M0) null r20 r30:2 0x0 0x04000504 {$1}
        (W) send.slm (1|M0) r60 r0 null:0 0x0 0x0210011F {$2}
        (W) mov (8|M0) null<1>:ud r60.0<1;1,0>:ud {$2.dst}
        (W) send.gtwy (1|M0) null r0 null:0 0x0 0x02000004 {$3}
        sync.bar null
        send.slm (16|M0) r40 r22 null:0 0x0 0x04200500 {$4}
        mov (16|M0) r50.0<1>:d r40.0<1;1,0>:d {$4.dst}
    """,
        "dg2",
        threads=threads,
        inputs={20: offsets, 22: neighbour, 30: data},
        slm_bytes=64 * per_group,
        group_of_thread=group_of_thread,
        check_hazards=True,
    )
    expected = data[(group_of_thread * per_group + (thread_in_group + 1) % per_group)]
    np.testing.assert_array_equal(run.read(50, np.int32, 16), expected)
    assert run.hazards == []


def test_barrier_that_never_completes_is_a_deadlock():
    with pytest.raises(SimulationError, match="deadlock"):
        execute(
            """
            (W) cmp (16|M0) (eq)f0.0 null<1>:d r20.0<0;1,0>:d 0:w
            (W&f0.0) jmpi SKIP
            (W) send.gtwy (1|M0) null r0 null:0 0x0 0x02000004
            sync.bar null
        SKIP:
            nop
        """,
            "dg2",
            threads=2,
            inputs={20: np.array([[0], [1]], dtype=np.int32)},
        )


def test_running_off_the_end_and_illegal_instructions_are_errors():
    with pytest.raises(SimulationError, match="ran past the end"):
        execute("add (16|M0) r10.0<1>:d r20.0<1;1,0>:d 1:w", "dg2", add_eot=False)
    with pytest.raises(SimulationError, match="illegal"):
        execute("illegal", "dg2")


@pytest.mark.parametrize("hw", ["tgllp", "dg2", "pvc"])
def test_scalar_call_and_ret(hw):
    """IGC's subroutine form: call stores the return IP (byte offset of the next instruction: the
    call is the second 16-byte instruction, so 0x20) and jumps; ret jumps to the stored IP.  The
    predicated call runs the subroutine only in the threads whose flag bit 0 is set."""
    run = execute(
        """
        (W) mov (1|M0) r20.0<1>:d 5:w
        (W) call (1|M0) r126.0:d SUB
        (W) mov (1|M0) r21.0<1>:d r20.0<0;1,0>:d
        (W&f0.0) call (1|M0) r127.0:d SUB2
        (W) jmpi END
    SUB:
        (W) add (1|M0) r20.0<1>:d r20.0<0;1,0>:d 10:w
        (W) ret (1|M0) r126.0<0;1,0>:d
    SUB2:
        (W) mul (1|M0) r21.0<1>:d r21.0<0;1,0>:d 3:w
        (W) ret (1|M0) r127.0<0;1,0>:d
    END:
        nop
    """,
        hw,
        threads=4,
        flags={0: np.array([1, 0, 0, 1], np.uint32)},
    )
    assert (run.read(126, np.int32, 1) == 0x20).all()
    assert (run.read(20, np.int32, 1) == 15).all()
    np.testing.assert_array_equal(run.read(21, np.int32, 1).reshape(-1), [45, 15, 15, 45])
    np.testing.assert_array_equal(run.read(127, np.int32, 1).reshape(-1), [0x40, 0, 0, 0x40])


def test_calla_jumps_to_an_absolute_ip():
    run = execute(
        """
        (W) calla (1|M0) r125.0:d 0x30
        (W) mov (1|M0) r21.0<1>:d 1:w
        (W) jmpi END
        (W) mov (1|M0) r22.0<1>:d 7:w
        (W) ret (1|M0) r125.0<0;1,0>:d
    END:
        nop
    """,
        "dg2",
    )
    assert (run.read(22, np.int32, 1) == 7).all() and (run.read(21, np.int32, 1) == 1).all()
    assert (run.read(125, np.int32, 1) == 0x10).all()


@pytest.mark.parametrize(
    "hw, asm, words",
    [
        ("dg2", "brd (16|M0) END", "brd is not simulated"),
        ("dg2", "brc (16|M0) END END", "brc is not simulated"),
        ("dg2", "call (16|M0) r4.0:d END", "only the scalar form"),
        ("dg2", "movi (8|M0) r10.0<1>:ud r[a0.0]<1,0>:ud null<0;1,0>:ud", "movi is not simulated"),
    ],
)
def test_instructions_the_public_documentation_does_not_specify(hw, asm, words):
    from xegen import UnsupportedError

    with pytest.raises(UnsupportedError, match=words):
        execute(f"{asm}\nEND:\nnop", hw)
