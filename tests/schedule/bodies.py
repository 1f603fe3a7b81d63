"""Random small kernels with one loop, for checking that transforms keep the interpreter's results.

Three families:

- `loop_kernels`: an arbitrary mix of global loads (some masked), register arithmetic, integer
  mads, reorders, loop-carried accumulations, invariant statements and global stores, over four
  register buffers;
- `private_load_kernels`: the same mix, but the registers the global loads fill are private to
  an iteration (filled before they are read, unused outside the loop), so register double
  buffering of the loads applies;
- `staged_kernels`: the shape the convolution builder makes (zero, global loads into a stage
  buffer, optionally SLM stores / fence / barrier / SLM loads of another thread's slice / barrier,
  then arithmetic into accumulators), which multi-buffering applies to.

Each kernel reads `inp` and writes `out`; `run` executes it for a few thread groups and returns
the bytes of `out`, which holds everything the kernel computed (the epilogue copies every
register buffer there).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from xegen import ir
from xegen.ir import (
    S32,
    Alloc,
    Barrier,
    Call,
    Fence,
    For,
    Let,
    Mad,
    Reorder,
    Send,
    Stmt,
    Var,
    buffer,
    const,
    load,
    ptr,
    seq,
    store,
)

INPUT_WORDS = 512
REGISTER_BYTES = 128  # each register buffer: 32 s32 words
REGISTERS = ("r0", "r1", "r2", "r3")
TID, GID = Var("tid"), Var("gid")
INP, OUT = buffer("inp"), buffer("out")
OUT_WORDS_PER_THREAD = 256


@dataclass(frozen=True)
class Kernel:
    body: Stmt
    threads: int  # per group
    groups: int


def run(kernel: Kernel, body: Stmt | None = None, seed: int = 0) -> bytes:
    """Execute (every thread of every group) and return the output buffer's bytes."""
    rng = np.random.default_rng(seed)
    inp = rng.integers(-1000, 1000, INPUT_WORDS, dtype=np.int32)
    total = kernel.threads * kernel.groups
    out = np.zeros(OUT_WORDS_PER_THREAD * 8 * kernel.groups, dtype=np.int32)  # thread gid*8 + tid
    thread = np.arange(total)
    env = {"tid": (thread % kernel.threads).astype(np.int32), "gid": (thread // kernel.threads).astype(np.int32)}
    ir.execute(
        kernel.body if body is None else body,
        buffers={"inp": inp, "out": out},
        env=env,
        threads=total,
        groups=thread // kernel.threads,
    )
    return out.tobytes()


def _wrap(body: Stmt, registers: tuple[str, ...], slm_bytes: int = 0) -> Stmt:
    for name in reversed(registers):
        body = Alloc(buffer(name), REGISTER_BYTES, "grf", body)
    if slm_bytes:
        body = Alloc(buffer("sh"), slm_bytes, "slm", body)
    for var in (GID, TID, OUT, INP):
        body = Let(var, None, body)
    return body


def _global_thread() -> ir.Expr:
    return GID * 8 + TID


def _prologue(registers: tuple[str, ...]) -> list[Stmt]:
    """Give every register a known value (thread dependent) so no read sees the 0xFF poison."""
    stmts = []
    for k, name in enumerate(registers):
        for word in range(0, REGISTER_BYTES // 4, 8):
            lanes = ir.Shuffle(tuple(ir.IntImm(3 * lane) for lane in range(8)), tuple(range(8)))
            value = ir.Broadcast(_global_thread() * 37 + (k * 1000 + word), 8) + lanes
            stmts.append(store(buffer(name), word * 4, value))
    return stmts


def _epilogue(registers: tuple[str, ...]) -> list[Stmt]:
    """Copy every register buffer into this thread's part of `out`."""
    stmts = []
    base = _global_thread() * (OUT_WORDS_PER_THREAD * 4)
    for k, name in enumerate(registers):
        for word in range(0, REGISTER_BYTES // 4, 8):
            stmts.append(store(OUT, base + (k * REGISTER_BYTES + word * 4), load(buffer(name), word * 4, "s32x8")))
    return stmts


# Statements -------------------------------------------------------------------------------------

WORD_OFFSETS = st.sampled_from([0, 8, 16, 24])  # s32 words: 8-word vectors at 32-byte boundaries
ANY_WORD = st.integers(0, 24)


@st.composite
def _global_load(draw, i: Var, lets: list[Var], target: str) -> Stmt:
    scale = draw(st.integers(1, 40))
    shift = draw(st.integers(0, 30))
    index = (i * scale + TID * 3 + GID * 5 + shift + (lets[0] if lets and draw(st.booleans()) else 0)) % 400
    if not isinstance(index, ir.Expr):
        index = ir.const(index)
    count = draw(st.sampled_from([4, 8, 16]))
    word = draw(st.sampled_from([0, 8, 16]))
    mask = None
    if draw(st.integers(0, 3)) == 0:
        mask = draw(st.sampled_from([(i % 2).eq(0), TID < 2, i < 3]))
    func = Send("load", "block", "global", S32, count)
    return Call(func, (ptr(INP, ir.cast("s32", index) * 4), ptr(buffer(target), word * 4), mask))


def _vec(name: str, word: int) -> ir.Expr:
    return load(buffer(name), word * 4, "s32x8")


@st.composite
def _arithmetic(draw, i: Var, lets: list[Var], registers: tuple[str, ...], targets: tuple[str, ...] = ()) -> Stmt:
    target = draw(st.sampled_from(targets or registers))
    a, b = draw(st.sampled_from(registers)), draw(st.sampled_from(registers))
    wa, wb, wt = draw(WORD_OFFSETS), draw(ANY_WORD), draw(WORD_OFFSETS)
    op = draw(st.sampled_from(["add", "sub", "mul", "xor", "min"]))
    value = ir.binary(op, _vec(a, wa), _vec(b, wb))
    if draw(st.booleans()):
        scalar = draw(st.sampled_from([i] + lets)) if draw(st.booleans()) else const(draw(st.integers(-9, 9)))
        value = value + ir.Broadcast(ir.cast("s32", scalar), 8)
    mask = None
    if draw(st.integers(0, 4)) == 0:
        mask = (i % 3).ne(1)
    return store(buffer(target), wt * 4, value, mask=mask)


@st.composite
def _mad(draw, registers: tuple[str, ...], targets: tuple[str, ...] = ()) -> Stmt:
    dst = draw(st.sampled_from(targets or registers))
    src0, src1, src2 = (draw(st.sampled_from(registers)) for _ in range(3))
    exec_size = draw(st.sampled_from([4, 8]))
    stride1, stride2 = draw(st.sampled_from([0, 1, 2])), draw(st.sampled_from([0, 1]))
    func = Mad(exec_size, S32, S32, S32, stride1, stride2)
    words = [draw(st.sampled_from([0, 8, 16])) for _ in range(4)]
    return Call(func, tuple(ptr(buffer(r), w * 4) for r, w in zip((dst, src0, src1, src2), words, strict=True)))


@st.composite
def _reorder(draw, registers: tuple[str, ...], targets: tuple[str, ...] = ()) -> Stmt:
    dst, src = draw(st.sampled_from(targets or registers)), draw(st.sampled_from(registers))
    rows, cols = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    func = Reorder(S32, S32, rows, cols, 4, 1, 1, rows)  # a transpose of a rows x cols block
    target, source = draw(st.sampled_from([0, 64])), draw(st.sampled_from([0, 32, 64]))
    return Call(func, (ptr(buffer(dst), target), ptr(buffer(src), source)))


@st.composite
def _global_store(draw, i: Var, registers: tuple[str, ...]) -> Stmt:
    # each thread and iteration its own slot past the epilogue's area: no two threads collide
    slot = (_global_thread() * OUT_WORDS_PER_THREAD + 128 + (i % 16) * 8) * 4
    func = Send("store", "block", "global", S32, 8)
    return Call(func, (ptr(OUT, slot), ptr(buffer(draw(st.sampled_from(registers))), 0), None))


@st.composite
def loop_kernels(draw) -> Kernel:
    """A loop of random statements over four register buffers (see the module docstring)."""
    i = Var("i")
    start = draw(st.integers(0, 2))
    trips = draw(st.integers(0, 6))
    lets: list[tuple[Var, ir.Expr]] = []
    for k in range(draw(st.integers(0, 2))):
        lets.append((Var(f"v{k}"), i * draw(st.integers(1, 5)) + TID + (lets[-1][0] if lets else 0)))
    if draw(st.booleans()):
        lets.append((Var("w"), TID * 2 + 1))  # loop invariant
    let_vars = [v for v, _ in lets]
    registers = REGISTERS
    stmts: list[Stmt] = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["load", "arith", "arith", "mad", "reorder", "store", "invariant"]))
        if kind == "load":
            stmts.append(draw(_global_load(i, let_vars, draw(st.sampled_from(registers)))))
        elif kind == "arith":
            stmts.append(draw(_arithmetic(i, let_vars, registers)))
        elif kind == "mad":
            stmts.append(draw(_mad(registers)))
        elif kind == "reorder":
            stmts.append(draw(_reorder(registers)))
        elif kind == "store":
            stmts.append(draw(_global_store(i, registers)))
        else:  # the same value every iteration
            stmts.append(
                store(
                    buffer(draw(st.sampled_from(registers))),
                    draw(WORD_OFFSETS) * 4,
                    ir.Broadcast(TID * 7 + draw(st.integers(0, 99)), 8),
                )
            )
    return _loop_kernel(draw, For(i, const(start), const(start + trips), _with_lets(lets, stmts)), registers)


@st.composite
def private_load_kernels(draw) -> Kernel:
    """Global loads fill r0 (and maybe r1) completely, after zeroing it when a load is masked,
    before any statement reads it; the rest of the body writes only the accumulators r2 and r3,
    which the prologue and epilogue use (see the module docstring)."""
    i = Var("i")
    start = draw(st.integers(-3, 2))
    trips = draw(st.integers(0, 6))
    lets = [(Var("v0"), (i + 3) * draw(st.integers(1, 5)) + TID)]
    let_vars = [v for v, _ in lets]
    carried = ("r2", "r3")
    staged = draw(st.sampled_from([("r0",), ("r0", "r1")]))
    stmts: list[Stmt] = []
    for name in staged:
        loads = [draw(_filling_load(i, let_vars[0], name, word)) for word in range(0, REGISTER_BYTES // 4, 8)]
        if any(load.args[2] is not None for load in loads):  # a masked load keeps the old bytes: zero first
            stmts += [store(buffer(name), word * 4, ir.Broadcast(const(0), 8)) for word in range(0, 32, 8)]
        stmts += loads
    readable = staged + carried
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["arith", "mad", "reorder", "store"]))
        if kind == "arith":
            stmts.append(draw(_arithmetic(i, let_vars, readable, carried)))
        elif kind == "mad":
            stmts.append(draw(_mad(readable, carried)))
        elif kind == "reorder":
            stmts.append(draw(_reorder(readable, carried)))
        else:
            stmts.append(draw(_global_store(i, readable)))
    return _loop_kernel(draw, For(i, const(start), const(start + trips), _with_lets(lets, stmts)), carried)


def _with_lets(lets: list[tuple[Var, ir.Expr]], stmts: list[Stmt]) -> Stmt:
    body: Stmt = seq(*stmts)
    for var, value in reversed(lets):
        body = Let(var, value, body)
    return body


def _loop_kernel(draw, loop: For, kept: tuple[str, ...]) -> Kernel:
    """The loop between a prologue that fills the registers `kept` and an epilogue that stores them,
    run by 1, 2 or 4 threads per group in 1 or 2 groups."""
    kernel = seq(*_prologue(kept), loop, *_epilogue(kept))
    return Kernel(_wrap(kernel, REGISTERS), draw(st.sampled_from([1, 2, 4])), draw(st.sampled_from([1, 2])))


@st.composite
def _filling_load(draw, i: Var, let: Var, target: str, word: int) -> Stmt:
    """Eight words from global memory into `target` at `word` (i >= -3, so the index is >= 0)."""
    index = (
        (i + 3) * draw(st.integers(1, 40))
        + TID * 3
        + GID * 5
        + draw(st.integers(0, 30))
        + (let if draw(st.booleans()) else 0)
    ) % 400
    mask = draw(st.sampled_from([None, None, (i % 2).eq(0), TID < 2, i < 1]))
    func = Send("load", "block", "global", S32, 8)
    return Call(func, (ptr(INP, ir.cast("s32", index) * 4), ptr(buffer(target), word * 4), mask))


# The convolution builder's loop shape --------------------------------------------------------------


@st.composite
def staged_kernels(draw, slm: bool | None = None) -> Kernel:
    """Zero (when masked) and load a stage buffer from global memory, [store it to SLM, fence,
    barrier, load another thread's slice, barrier], then accumulate (see the module docstring)."""
    i = Var("i")
    threads = draw(st.sampled_from([2, 3, 4]))
    slm = draw(st.booleans()) if slm is None else slm
    start, trips = draw(st.integers(0, 2)), draw(st.integers(0, 7))
    k_start = Var("k_start")
    lets = [(k_start, i * draw(st.integers(1, 24)))]
    stage, loaded, acc, other = "r0", "r1", "r2", "r3"
    words = draw(st.sampled_from([8, 16, 32]))
    masked = draw(st.booleans())
    stmts: list[Stmt] = []
    if masked:
        stmts += [store(buffer(stage), w * 4, ir.Broadcast(const(0), 8)) for w in range(0, words, 8)]
    for w in range(0, words, 8):
        index = (k_start + TID * 11 + GID * 3 + w * draw(st.integers(1, 3))) % 480
        mask = ((k_start + w) % 5).ne(draw(st.integers(0, 4))) if masked else None
        func = Send("load", "block", "global", S32, 8)
        stmts.append(Call(func, (ptr(INP, index * 4), ptr(buffer(stage), w * 4), mask)))
    source = stage
    slice_bytes = words * 4
    if slm:
        sh = buffer("sh")
        for w in range(0, words, 8):
            func = Send("store", "block", "slm", S32, 8)
            stmts.append(Call(func, (ptr(sh, TID * slice_bytes + w * 4), ptr(buffer(stage), w * 4), None)))
        stmts += [Call(Fence("slm")), Call(Barrier())]
        neighbour = (TID + draw(st.integers(1, threads - 1))) % threads
        for w in range(0, words, 8):
            func = Send("load", "block", "slm", S32, 8)
            stmts.append(Call(func, (ptr(sh, neighbour * slice_bytes + w * 4), ptr(buffer(loaded), w * 4), None)))
        stmts.append(Call(Barrier()))
        source = loaded
    if draw(st.booleans()):  # a reorder into the multiply's layout, as the builder makes
        stmts.append(Call(Reorder(S32, S32, 2, 4, 4, 1, 1, 2), (ptr(buffer(other), 0), ptr(buffer(source), 0))))
    for w in range(0, words, 8):
        func = Mad(8, S32, S32, S32, 1, draw(st.sampled_from([0, 1])))
        stmts.append(
            Call(
                func,
                (ptr(buffer(acc), w * 4), ptr(buffer(acc), w * 4), ptr(buffer(source), w * 4), ptr(buffer(other), 0)),
            )
        )
    body: Stmt = seq(*stmts)
    for var, value in reversed(lets):
        body = Let(var, value, body)
    loop = For(i, const(start), const(start + trips), body)
    registers = REGISTERS
    kernel = seq(*_prologue((acc, other)), loop, *_epilogue((acc, other)))
    return Kernel(_wrap(kernel, registers, threads * slice_bytes if slm else 0), threads, draw(st.sampled_from([1, 2])))
