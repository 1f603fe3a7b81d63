"""Statement execution: whole thread grids over numpy buffers, checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from xegen import EvaluationError, ir
from xegen.ir.memory import UnfencedSlmWriteError

RNG = np.random.default_rng(7)


def run(text: str, threads: int = 1, groups=None, **values):
    buffers = {k: v for k, v in values.items() if isinstance(v, np.ndarray) and v.ndim >= 1 and k.isupper()}
    env = {k: v for k, v in values.items() if k not in buffers}
    ir.execute(ir.parse_stmt(text), buffers=buffers, env=env, threads=threads, groups=groups)


def test_grid_of_threads_computes_a_matrix_vector_product():
    a = RNG.standard_normal((6, 5, 8)).astype(np.float32)
    b = RNG.standard_normal(5).astype(np.float32)
    c = np.zeros((6, 8), np.float32)
    run(
        """
        let tid;
        alloc acc[32] grf;
        alloc row[32] grf;
        acc[0] = broadcast(0.0, 8);
        for (k = 0; k < 5) {
          send<op=load, kind=block, space=global, type=f32, count=8>(&A[(tid * 5 + k) * 32], &row[0], null);
          mad<exec_size=8, dst_type=f32, src1_type=f32, src2_type=f32, src2_stride=0>(
              &acc[0], &acc[0], &row[0], &B[k * 4]);
        }
        send<op=store, kind=block, space=global, type=f32, count=8>(&C[tid * 32], &acc[0], null);
    """,
        threads=6,
        tid=np.arange(6, dtype=np.int32),
        A=a,
        B=b,
        C=c,
    )
    np.testing.assert_allclose(c, np.einsum("tkn,k->tn", a, b), rtol=1e-5)


def test_divergent_loops_and_branches_run_under_masks():
    out = np.zeros(8, np.int32)
    run(
        """
        let tid;
        alloc s[4] grf;
        s[0] = 0;
        for (i = tid; i < 6) {
          s[0] = s.s32[0] + i;
        }
        if (tid % 2 == 0) {
          s[0] = s.s32[0] * 10;
        } else {
          s[0] = -s.s32[0];
        }
        OUT[tid * 4] = s.s32[0];
    """,
        threads=8,
        tid=np.arange(8, dtype=np.int32),
        OUT=out,
    )
    expected = np.array([sum(range(t, 6)) for t in range(8)])
    expected = np.where(np.arange(8) % 2 == 0, expected * 10, -expected)
    np.testing.assert_array_equal(out, expected)


def vnni(b: np.ndarray, ops: int) -> np.ndarray:
    """B (K x N) to VNNI: dword (s, n) holds rows s*ops .. s*ops+ops-1 of column n."""
    k, n = b.shape
    return b.reshape(k // ops, ops, n).transpose(0, 2, 1).reshape(-1)


@pytest.mark.parametrize("src, dst, ops", [("f16", "f32", 2), ("bf16", "f32", 2), ("s8", "s32", 4), ("u8", "s32", 4)])
def test_dpas_matches_numpy(src, dst, ops):
    m, n, k = 8, 8, 8 * ops
    if src in ("s8", "u8"):
        a = RNG.integers(-128 if src == "s8" else 0, 128 if src == "s8" else 256, (m, k)).astype(
            src.replace("s8", "int8").replace("u8", "uint8")
        )
        b = RNG.integers(-128 if src == "s8" else 0, 128 if src == "s8" else 256, (k, n)).astype(a.dtype)
        c = RNG.integers(-1000, 1000, (m, n)).astype(np.int32)
        expected = c + a.astype(np.int64) @ b.astype(np.int64)
        memory_a, memory_b = a.reshape(-1), vnni(b, ops)
    else:
        a = RNG.integers(-8, 8, (m, k)).astype(np.float32) / 4
        b = RNG.integers(-8, 8, (k, n)).astype(np.float32) / 4
        c = RNG.standard_normal((m, n)).astype(np.float32)
        expected = c + a @ b
        if src == "f16":
            memory_a, memory_b = a.astype(np.float16).reshape(-1), vnni(b, ops).astype(np.float16)
        else:  # bf16 as raw 16-bit patterns
            memory_a = (a.reshape(-1).view(np.uint32) >> 16).astype(np.uint16)
            memory_b = (vnni(b, ops).view(np.uint32) >> 16).astype(np.uint16)
    out = np.zeros_like(c)
    run(
        f"""
        alloc ga[{memory_a.nbytes}] grf;
        alloc gb[{memory_b.nbytes}] grf;
        alloc gc[{c.nbytes}] grf;
        send<op=load, kind=block, space=global, type=u8, count={memory_a.nbytes}>(&A[0], &ga[0], null);
        send<op=load, kind=block, space=global, type=u8, count={memory_b.nbytes}>(&B[0], &gb[0], null);
        send<op=load, kind=block, space=global, type=u8, count={c.nbytes}>(&C[0], &gc[0], null);
        dpas<exec_size=8, sdepth=8, rcount=8, dst_type={dst}, src1_type={src}, src2_type={src}>(
            &gc[0], &gc[0], &gb[0], &ga[0]);
        send<op=store, kind=block, space=global, type=u8, count={c.nbytes}>(&OUT[0], &gc[0], null);
    """,
        A=memory_a,
        B=memory_b,
        C=c,
        OUT=out,
    )
    if dst == "s32":
        np.testing.assert_array_equal(out, expected)
    else:
        np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


DPASW_TEXT = """
    let tid;
    alloc ga[{a_bytes}] grf;
    alloc gb[{b_bytes}] grf;
    alloc gc[{c_bytes}] grf;
    send<op=load, kind=block, space=global, type=u8, count={a_bytes}>(&A[tid * {a_bytes}], &ga[0], null);
    send<op=load, kind=block, space=global, type=u8, count={b_bytes}>(&B[tid * {b_bytes}], &gb[0], null);
    send<op=load, kind=block, space=global, type=u8, count={c_bytes}>(&C[tid * {c_bytes}], &gc[0], null);
    dpas<exec_size=8, sdepth=8, rcount={rows}, dst_type={dst}, src1_type={src}, src2_type={src}, dpasw=true>(
        &gc[0], &gc[0], &gb[0], &ga[0]);
    send<op=store, kind=block, space=global, type=u8, count={c_bytes}>(&OUT[tid * {c_bytes}], &gc[0], null);
"""


@pytest.mark.parametrize(
    "src, dst, ops, rows", [("f16", "f32", 2, 8), ("s8", "s32", 4, 8), ("s8", "s32", 4, 5), ("f16", "f32", 2, 2)]
)
def test_dpasw_multiplies_the_fused_pairs_shared_a(src, dst, ops, rows):
    """Two groups of two threads (fused pairs): each thread's src2 holds ceil(rows/2) rows of its
    own; thread t computes its own C and B with A = [rows of the even thread; rows of the odd]."""
    threads, n, k = 4, 8, 8 * ops
    own = -(-rows // 2)
    if src == "s8":  # type extremes, zero and negatives
        a = RNG.choice(np.array([-128, -1, 0, 1, 127], np.int8), (threads, own, k))
        b = RNG.choice(np.array([-128, -1, 0, 3, 127], np.int8), (threads, k, n))
        c = RNG.integers(-(2**31), 2**31, (threads, rows, n)).astype(np.int32)
        memory_a, memory_b = a, np.stack([vnni(b[t], ops) for t in range(threads)])
    else:
        a = RNG.integers(-8, 8, (threads, own, k)).astype(np.float16) / 4
        b = RNG.integers(-8, 8, (threads, k, n)).astype(np.float16) / 4
        c = RNG.standard_normal((threads, rows, n)).astype(np.float32)
        memory_a, memory_b = a, np.stack([vnni(b[t], ops) for t in range(threads)])
    out = np.zeros_like(c)
    text = DPASW_TEXT.format(
        a_bytes=memory_a[0].nbytes, b_bytes=memory_b[0].nbytes, c_bytes=c[0].nbytes, rows=rows, src=src, dst=dst
    )
    run(
        text,
        threads=threads,
        groups=np.array([0, 0, 1, 1]),
        tid=np.arange(threads, dtype=np.int32),
        A=memory_a.reshape(-1),
        B=memory_b.reshape(-1),
        C=c.reshape(-1),
        OUT=out.reshape(-1),
    )
    wide = np.int64 if src == "s8" else np.float64
    for t in range(threads):
        even = t - t % 2
        shared = np.concatenate([a[even], a[even + 1][: rows - own]]).astype(wide)
        expected = c[t].astype(wide) + shared @ b[t].astype(wide)
        if src == "s8":  # wraps at 32 bits, as the hardware's s32 accumulator does
            np.testing.assert_array_equal(out[t], expected.astype(np.int64).astype(np.int32))
        else:
            np.testing.assert_allclose(out[t], expected, rtol=1e-6, atol=1e-6)
    # the halves differ, so a plain dpas (each thread's own rows) gives another result
    assert not np.array_equal(a[0], a[1])


@pytest.mark.parametrize(
    "threads, groups, active, message",
    [
        (3, [0, 0, 0], None, "even number of threads in every group.*group 0 has 3"),
        (4, [0, 1, 1, 0], None, "consecutive"),
        (4, [0, 0, 0, 0], "tid != 1", "only one thread of the fused pair 0, 1"),
    ],
)
def test_dpasw_refuses_odd_groups_and_lone_threads(threads, groups, active, message):
    body = (
        "dpas<exec_size=8, sdepth=8, rcount=8, dst_type=f32, src1_type=f16, src2_type=f16, dpasw=true>"
        "(&gc[0], null, &gb[0], &ga[0]);"
    )
    if active:
        body = f"if ({active}) {{ {body} }}"
    text = f"let tid; alloc ga[128] grf; alloc gb[256] grf; alloc gc[256] grf; {body}"
    with pytest.raises(EvaluationError, match=message):
        run(text, threads=threads, groups=np.array(groups), tid=np.arange(threads, dtype=np.int32))


def test_dp4a_and_reorder_match_numpy():
    a = RNG.integers(-128, 128, (8, 4)).astype(np.int8)
    b = RNG.integers(0, 256, (8, 4)).astype(np.uint8)
    out = np.zeros(8, np.int32)
    transposed = np.zeros((4, 8), np.int32)
    run(
        """
        alloc ra[32] grf;
        alloc rb[32] grf;
        alloc rc[32] grf;
        alloc rt[128] grf;
        send<op=load, kind=block, space=global, type=s8, count=32>(&A[0], &ra[0], null);
        send<op=load, kind=block, space=global, type=u8, count=32>(&B[0], &rb[0], null);
        rc[0] = broadcast(5, 8);
        dp4a<exec_size=8, dst_type=s32, src1_type=s8, src2_type=u8>(&rc[0], &rc[0], &ra[0], &rb[0]);
        send<op=store, kind=block, space=global, type=s32, count=8>(&OUT[0], &rc[0], null);
        reorder<src_type=s8, dst_type=s32, rows=8, cols=4, src_row_stride=4, src_col_stride=1, dst_row_stride=1,
            dst_col_stride=8>(&rt[0], &ra[0]);
        send<op=store, kind=block, space=global, type=s32, count=32>(&T[0], &rt[0], null);
    """,
        A=a,
        B=b,
        OUT=out,
        T=transposed,
    )
    np.testing.assert_array_equal(out, 5 + (a.astype(np.int64) * b.astype(np.int64)).sum(axis=1))
    np.testing.assert_array_equal(transposed, a.T)


def test_scattered_messages_masks_and_atomics():
    source = np.arange(32, dtype=np.float32)
    gathered = np.full(8, -1, np.float32)
    counter = np.zeros(2, np.int32)
    run(
        """
        let tid;
        alloc r[32] grf;
        alloc one[32] grf;
        send<op=load, kind=scattered, space=global, type=f32, count=8>(
            &S[0], shuffle<7,6,5,4,3,2,1,0>(broadcast(0, 4), broadcast(0, 4)) + broadcast(tid, 8) * 16, &r[0],
            broadcast(tid == 1, 8));
        send<op=store, kind=scattered, space=global, type=f32, count=8>(
            &G[0],
            shuffle<0,1,2,3,4,5,6,7>(broadcast(0, 4), broadcast(0, 4))
              + shuffle<0,1,2,3,4,5,6,7>(broadcast(0, 4), broadcast(0, 4)),
            &r[0], broadcast(tid == 1, 8));
        one[0] = broadcast(1, 8);
        send<op=atomic, kind=scattered, space=global, type=s32, count=8, atomic=add>(
            &CNT[0], broadcast(0, 8), &one[0], null);
        send<op=atomic, kind=scattered, space=global, type=s32, count=1, atomic=inc>(
            &CNT[4], broadcast(0, 1) + 0, null, null);
    """.replace("broadcast(0, 1) + 0", "0"),
        threads=4,
        tid=np.arange(4, dtype=np.int32),
        S=source,
        G=gathered,
        CNT=counter,
    )
    assert gathered[0] == 4.0 and np.all(gathered[1:] == -1)  # only thread 1 stored, all 8 lanes to one address
    assert counter.tolist() == [4 * 8, 4]


def test_returning_inc_gives_each_thread_the_count_before_it():
    counter = np.zeros(2, np.int32)
    out = np.zeros((5, 2), np.int32)
    run(
        """
        let tid;
        alloc r[8] grf;
        send<op=atomic, kind=scattered, space=global, type=s32, count=2, atomic=inc, returns=true>(
            &CNT[0], shuffle<0,1>(0, 4), &r[0], null);
        send<op=store, kind=block, space=global, type=s32, count=2>(&OUT[tid * 8], &r[0], null);
    """,
        threads=5,
        tid=np.arange(5, dtype=np.int32),
        CNT=counter,
        OUT=out,
    )
    assert out.tolist() == [[k, k] for k in range(5)]  # thread order
    assert counter.tolist() == [5, 5]


def test_returning_xchg_and_fadd_return_the_old_values_and_store_the_new():
    words = np.array([10, 20, 30, 40], np.int32)
    sums = np.array([0.5, 1.0], np.float32)
    out = np.zeros((2, 4), np.int32)
    summed = np.zeros((2, 2), np.float32)
    run(
        """
        let tid;
        alloc r[16] grf;
        alloc f[8] grf;
        r[0] = broadcast(tid + 100, 4);
        send<op=atomic, kind=scattered, space=global, type=s32, count=2, atomic=xchg, returns=true>(
            &W[tid * 8], shuffle<0,1>(0, 4), &r[0], null);
        f[0] = broadcast(2.0, 2);
        send<op=atomic, kind=scattered, space=global, type=f32, count=2, atomic=fadd, returns=true>(
            &SUM[0], shuffle<0,1>(0, 4), &f[0], null);
        send<op=store, kind=block, space=global, type=s32, count=4>(&OUT[tid * 16], &r[0], null);
        send<op=store, kind=block, space=global, type=f32, count=2>(&SUMMED[tid * 8], &f[0], null);
    """,
        threads=2,
        tid=np.arange(2, dtype=np.int32),
        W=words,
        SUM=sums,
        OUT=out,
        SUMMED=summed,
    )
    assert words.tolist() == [100, 100, 101, 101]
    assert out.tolist() == [[10, 20, 100, 100], [30, 40, 101, 101]]  # the old values over the operands
    assert sums.tolist() == [4.5, 5.0]
    assert summed.tolist() == [[0.5, 1.0], [2.5, 3.0]]


def test_returning_atomic_leaves_masked_off_slots_and_inactive_threads_alone():
    counter = np.zeros(1, np.int32)
    out = np.zeros((3, 4), np.int32)
    run(
        """
        let tid;
        alloc r[16] grf;
        r[0] = broadcast(-7, 4);
        if (tid != 1) {
          send<op=atomic, kind=scattered, space=global, type=s32, count=4, atomic=add, returns=true>(
              &CNT[0], broadcast(0, 4), &r[0], shuffle<0,1,2,3>(true, false, true, false));
        }
        send<op=store, kind=block, space=global, type=s32, count=4>(&OUT[tid * 16], &r[0], null);
    """,
        threads=3,
        tid=np.arange(3, dtype=np.int32),
        CNT=counter,
        OUT=out,
    )
    assert out.tolist() == [[0, -7, -7, -7], [-7, -7, -7, -7], [-14, -7, -21, -7]]
    assert counter.tolist() == [-28]


def test_returning_cmpxchg_returns_over_the_compare_values():
    words = np.array([3, 4], np.int32)
    out = np.zeros(4, np.int32)
    run(
        """
        alloc r[16] grf;
        r[0] = shuffle<0,1,2,3>(3, 3, 9, 9);
        send<op=atomic, kind=scattered, space=global, type=s32, count=2, atomic=cmpxchg, returns=true>(
            &W[0], shuffle<0,1>(0, 4), &r[0], null);
        send<op=store, kind=block, space=global, type=s32, count=4>(&OUT[0], &r[0], null);
    """,
        W=words,
        OUT=out,
    )
    assert words.tolist() == [9, 4]
    assert out.tolist() == [3, 4, 9, 9]


def test_only_atomics_return_and_returning_inc_needs_a_register():
    with pytest.raises(ir.IRTypeError, match="only atomic sends return"):
        ir.Send("load", "scattered", "global", ir.S32, 4, returns=True)
    f = ir.Send("atomic", "scattered", "global", ir.S32, 4, atomic="inc", returns=True)
    assert f.expected_args() == ("mem", "offsets", "reg", "mask?") and f.register_bytes == 16
    assert ir.Send("atomic", "scattered", "global", ir.S32, 4, atomic="inc").register_bytes == 0
    text = "send<op=atomic, kind=scattered, space=global, type=s32, count=4, atomic=inc, returns=true>"
    stmt = ir.parse_stmt(f"alloc r[16] grf;\n{text}(&W[0], broadcast(0, 4), &r[0], null);")
    assert text in str(stmt) and ir.parse_stmt(str(stmt)) == stmt
    assert stmt != ir.parse_stmt(str(stmt).replace(", returns=true", ""))


def test_masked_store_and_masked_off_lanes_are_not_bounds_checked():
    out = np.zeros(4, np.int32)
    run(
        """
        let tid;
        OUT[(tid - 1) * 4] = tid * 100 if tid > 0;
    """,
        threads=5,
        tid=np.arange(5, dtype=np.int32),
        OUT=out,
    )
    assert out.tolist() == [100, 200, 300, 400]


def test_out_of_bounds_access_names_buffer_offset_and_thread():
    with pytest.raises(EvaluationError, match=r"offset 16 of 'OUT' \(size 16\) in thread 4"):
        run("let tid;\nOUT[tid * 4] = tid;", threads=5, tid=np.arange(5, dtype=np.int32), OUT=np.zeros(4, np.int32))


def test_fresh_registers_are_poisoned():
    out = np.zeros(1, np.float32)
    run("alloc r[4] grf;\nOUT[0] = r.f32[0];", OUT=out)
    assert np.isnan(out[0])


SLM_EXCHANGE = """
    let tid;
    alloc buf[64] slm;
    alloc r[4] grf;
    buf[tid % 4 * 4] = tid;
    {sync}
    r[0] = buf.s32[(tid + 1) % 4 * 4];
    OUT[tid * 4] = r.s32[0];
"""


@pytest.mark.parametrize("sync", ["fence<space=slm>();\nbarrier();", "fence<space=slm>();\nsignal();\nwait();"])
def test_slm_is_shared_within_a_group_after_a_barrier(sync):
    out = np.zeros(8, np.int32)
    run(
        SLM_EXCHANGE.replace("{sync}", sync),
        threads=8,
        groups=np.arange(8) // 4,
        tid=np.arange(8, dtype=np.int32),
        OUT=out,
    )
    assert out.tolist() == [1, 2, 3, 0, 5, 6, 7, 4]


@pytest.mark.parametrize(
    "sync", ["barrier();", "fence<space=global>();\nbarrier();", "signal();\nfence<space=slm>();\nwait();"]
)
def test_an_slm_write_not_fenced_before_the_signal_that_publishes_it_is_reported(sync):
    message = "thread 0 reads byte 4 of 'buf'.*thread 1 wrote without an SLM fence"
    with pytest.raises(UnfencedSlmWriteError, match=message):
        run(
            SLM_EXCHANGE.replace("{sync}", sync),
            threads=8,
            groups=np.arange(8) // 4,
            tid=np.arange(8, dtype=np.int32),
            OUT=np.zeros(8, np.int32),
        )


def test_missing_barrier_is_reported_as_an_slm_race():
    with pytest.raises(ir.SlmRaceError, match="thread 0 reads byte 4 of 'buf'.*written by thread 1"):
        run(
            SLM_EXCHANGE.replace("{sync}", ""),
            threads=8,
            groups=np.arange(8) // 4,
            tid=np.arange(8, dtype=np.int32),
            OUT=np.zeros(8, np.int32),
        )


def test_write_after_read_without_barrier_is_a_race():
    text = SLM_EXCHANGE.replace("{sync}", "fence<space=slm>();\nbarrier();") + "buf[tid % 4 * 4] = 0;"
    with pytest.raises(ir.SlmRaceError, match="writes byte"):
        run(text, threads=4, tid=np.arange(4, dtype=np.int32), OUT=np.zeros(4, np.int32))
    run(
        text.replace("buf[tid % 4 * 4] = 0;", "barrier();\nbuf[tid % 4 * 4] = 0;"),
        threads=4,
        tid=np.arange(4, dtype=np.int32),
        OUT=np.zeros(4, np.int32),
    )


def test_barrier_in_divergent_code_and_unmatched_wait_are_errors():
    with pytest.raises(EvaluationError, match="divergent"):
        run("let tid;\nif (tid < 2) {\n  barrier();\n}", threads=4, tid=np.arange(4, dtype=np.int32))
    with pytest.raises(EvaluationError, match="wait forever"):
        run("wait();", threads=2)


def test_end_of_thread_stops_only_the_threads_that_reach_it():
    out = np.zeros(4, np.int32)
    run(
        """
        let tid;
        if (tid >= 2) {
          eot();
        }
        OUT[tid * 4] = 7;
    """,
        threads=4,
        tid=np.arange(4, dtype=np.int32),
        OUT=out,
    )
    assert out.tolist() == [7, 7, 0, 0]
