"""Sequences that meet in the accumulator, split over lane counts that are not one instruction:
`mul acc0` + `mach`/`macl` (32x32 multiplies, multiply-high for division and remainder by
constants) and `addc`/`subb` + the add that reads the carry (64-bit adds where the platform has
no 64-bit ALU, 64-bit addresses).  mach/macl read acc0 at their destination's subregister and an
addc writes its carries from acc0.0, so each piece of a split sequence must be one `mul`/`addc`
followed by its reader before the next piece writes the accumulator (a 12-lane s32 `v % 3` on
XeLP/XeHPG wrote lanes 8-11 to acc1 while their `mach` read acc0).

Lowered kernels run in the simulator and are compared bit for bit with the IR interpreter (and
divisions with Python's truncating reference), on 1 to 32 lanes, with sources at a GRF's start
and inside one (there the builder itself splits an instruction), on every platform; every
compiled kernel also passes a static check of the accumulator's writes and reads."""

from __future__ import annotations

import numpy as np
import pytest

from xegen import hw as hwlib
from xegen.emit.instruction import Instruction, Reg
from xegen.lower import compile_kernel

from .harness import hand_spec, iga_report, run_both

PLATFORMS = ("xelp", "xehpg", "xehpc")
LANES = (1, 3, 8, 12, 16, 20, 24, 32)
UINT_MAX = (1 << 32) - 1
BIG = 123456789  # a factor too wide for `mul` by a word: mul acc0 + mach/macl where not native
DTYPES = {"s32": np.int32, "u32": np.uint32, "s64": np.int64, "u64": np.uint64}


# --- the accumulator, statically -----------------------------------------------------------------


def _elements(reg: Reg, exec_size: int, per: int) -> set[int]:
    """The accumulator dwords (acc0.0 = 0, acc1.0 = `per`, ...) a dword operand's lanes name:
    a destination `<h>`, a source `<v;w,h>`, or a three-source `<v;h>` (width v / h, or 1)."""
    base = reg.number * per + reg.subreg
    if reg.vstride is None:
        h = reg.hstride if reg.hstride is not None else 1
        return {base + i * h for i in range(exec_size)}
    h = reg.hstride or 0
    width = reg.width if reg.width is not None else (reg.vstride // h if h and reg.vstride else 1)
    return {base + (i // width) * reg.vstride + (i % width) * h for i in range(exec_size)}


def check_accumulator(instructions: tuple[Instruction, ...], hw: str) -> None:
    """Every write of the accumulator (`mul` into it, addc/subb's carry) is read, at the elements
    it wrote, before the next write: a mach/macl reads acc0 at its destination's subregister, an
    acc source the elements its region names."""
    per = hwlib.platform(hw).grf_bytes // 4
    written: set[int] = set()
    unread: set[int] = set()
    for i, inst in enumerate(instructions):
        reads: set[int] = set()
        if inst.opcode in ("mach", "macl"):
            assert inst.dst is not None
            implicit = Reg("acc", 0, inst.dst.subreg, "d", hstride=inst.dst.hstride or 1)
            reads = _elements(implicit, inst.exec_size, per)
        for src in inst.srcs:
            if isinstance(src, Reg) and src.file == "acc":
                reads |= _elements(src, inst.exec_size, per)
        if reads:
            assert reads <= written, (
                f"instruction {i} ({inst.opcode}) reads acc dwords {sorted(reads - written)} no write left"
            )
            unread -= reads
        writes: set[int] = set()
        if inst.opcode == "mul" and inst.dst is not None and inst.dst.file == "acc":
            writes = _elements(inst.dst, inst.exec_size, per)
        elif inst.opcode in ("addc", "subb"):
            writes = set(range(inst.exec_size))  # the carries, from acc0.0 whatever the destination
        if writes:
            assert not unread, f"instruction {i} ({inst.opcode}) overwrites acc dwords {sorted(unread)} before a read"
            written, unread = writes, set(writes)
    assert not unread, f"acc dwords {sorted(unread)} written and never read"


# --- inputs ------------------------------------------------------------------------------------


def inputs(t: str, count: int, seed: int) -> np.ndarray:
    """`count` (at least 18) values of `t`: 0, +-1, the extremes and their neighbours, values
    around 2^31 and 2^32, then random ones, shuffled so that the edges land in any lane."""
    rng = np.random.default_rng(seed)
    bits = 64 if t.endswith("64") else 32
    wrap = 1 << bits
    edges = [0, 1, 2, 3, 7, 12345, -1, -7, -(1 << (bits - 1)), 1 - (1 << (bits - 1)), (1 << (bits - 1)) - 1]
    edges += [(1 << 31) - 1, 1 << 31, (1 << 32) - 1, (1 << 32) - 2, 1 << 32, 3 << 31, -(1 << 31)]
    assert count >= len(edges)
    words = [v % wrap for v in edges] + [int(v) for v in rng.integers(0, wrap, count - len(edges), dtype=np.uint64)]
    out = np.array(words, dtype=np.uint64)
    rng.shuffle(out)
    return out.astype(np.dtype(f"u{bits // 8}")).view(DTYPES[t])


def threads_for(lanes: int) -> int:
    return max(2, -(-48 // lanes))  # at least 48 values


def truncating(n: int, d: int, bits: int, signed: bool, want: str) -> int:
    """The IR's / and % (truncation toward zero; MIN / -1 = MIN)."""
    mask = (1 << bits) - 1
    q = abs(n) // abs(d) * (1 if (n >= 0) == (d > 0) else -1)
    r = n - q * d
    value = q if want == "/" else r
    value &= mask
    return value - (1 << bits) if signed and value >> (bits - 1) else value


# --- kernels -----------------------------------------------------------------------------------


def vector(t: str, lanes: int, at: int) -> str:
    return f"r.{t}x{lanes}[{at}]" if lanes > 1 else f"r.{t}[{at}]"


def constant(t: str, value: int, lanes: int) -> str:
    return f"broadcast(({t}){value}, {lanes})" if lanes > 1 else f"({t}){value}"


def kernel(t: str, lanes: int, at: int, results: list[str]) -> tuple[str, int]:
    """Loads x and y (lanes values each per thread, x at byte `at` of r), computes `results`
    (expressions of `X` and `Y`), and stores each in its own block of `out`."""
    size = np.dtype(DTYPES[t]).itemsize
    nbytes = lanes * size
    stride = -(-(at + nbytes) // 64) * 64
    y_at = stride
    first = 2 * stride
    me = "group_id0"
    x_reg, y_reg = vector(t, lanes, at), vector(t, lanes, y_at)
    text = f"alloc r[{first + stride * len(results)}] grf;\n"
    text += f"send<op=load, kind=block, space=global, type={t}, count={lanes}>(&x[{me} * {nbytes}], &r[{at}], null);\n"
    text += (
        f"send<op=load, kind=block, space=global, type={t}, count={lanes}>(&y[{me} * {nbytes}], &r[{y_at}], null);\n"
    )
    for k, expr in enumerate(results):
        text += f"r[{first + k * stride}] = {expr.replace('X', x_reg).replace('Y', y_reg)};\n"
    for k in range(len(results)):
        where = f"({me} * {len(results)} + {k}) * {nbytes}"
        store = f"send<op=store, kind=block, space=global, type={t}, count={lanes}>"
        text += f"{store}(&out[{where}], &r[{first + k * stride}], null);\n"
    return text, len(results)


def run(t: str, lanes: int, at: int, results: list[str], hw: str, seed: int):
    text, count = kernel(t, lanes, at, results)
    spec = hand_spec(f"acc_{t}_{lanes}", text, [("x", "ptr"), ("y", "ptr"), ("out", "ptr")])
    threads = threads_for(lanes)
    dtype = DTYPES[t]
    buffers = {
        "x": inputs(t, threads * lanes, seed),
        "y": inputs(t, threads * lanes, seed + 1),
        "out": np.zeros(threads * lanes * count, dtype),
    }
    simulated, interpreted, compiled = run_both(spec, hw, buffers, grid=(threads, 1, 1))
    out_sim = simulated["out"].reshape(threads, count, lanes)
    out_ir = interpreted["out"].reshape(threads, count, lanes)
    for k, expr in enumerate(results):
        bad = np.nonzero(out_sim[:, k] != out_ir[:, k])
        assert not bad[0].size, (
            f"{expr} on {hw}, {lanes} lanes: (thread, lane) {list(zip(*bad, strict=True))[:6]}: "
            f"simulator {out_sim[:, k][bad][:6]} vs interpreter {out_ir[:, k][bad][:6]}"
        )
    check_accumulator(compiled.instructions, hw)
    return buffers, out_ir


# Each path of `arith.divide`: the identity and negation (1, -1), shifts (8), multiply-high
# with and without the add of x (3, 12345; 7, -7), and for u32 the 33-bit fix-up (7) and the
# compare of a divisor >= 2^31 (-7): all of them, both ways, on FULL lane counts; on the others
# (the tests run in seconds) one multiply-high of each kind.
DIVISORS = {"s32": (1, -1, 8, 3, 7, -7, 12345), "u32": (1, 8, 3, 7, 12345, -7)}
SOME = {"s32": ((3, "%"), (-7, "/"), (12345, "/")), "u32": ((3, "%"), (7, "/"), (12345, "%"))}
FULL = (3, 12)
MISALIGNED = [(16, 16), (32, 16), (12, 8)]  # (lanes, byte of x in its GRF): the builder splits


def divisions(t: str, lanes: int, full: bool) -> list[tuple[int, str]]:
    if not full:
        return list(SOME[t])
    return [(d, op) for d in DIVISORS[t] for op in ("/", "%")]


def check_divisions(t: str, lanes: int, at: int, hw: str, full: bool) -> None:
    pairs = divisions(t, lanes, full)
    results = [f"X {op} {constant(t, d, lanes)}" for d, op in pairs]
    results += [f"X * {constant(t, BIG, lanes)}", "X * Y"]
    buffers, out = run(t, lanes, at, results, hw, seed=lanes * 7 + at)
    # the interpreter, too, divides as the IR says
    signed = t[0] == "s"
    x = [int(v) for v in buffers["x"]]
    for k, (d, op) in enumerate(pairs):
        want = [truncating(v, d if signed else d & UINT_MAX, 32, signed, op) for v in x]
        assert [int(v) for v in out[:, k].reshape(-1)] == want, f"interpreter: x {op} {d}"


@pytest.mark.parametrize("hw", PLATFORMS)
@pytest.mark.parametrize("t", ["s32", "u32"])
@pytest.mark.parametrize("lanes", LANES)
def test_division_and_multiply_by_constants_on_any_lane_count(hw, t, lanes):
    check_divisions(t, lanes, 0, hw, lanes in FULL)


@pytest.mark.parametrize("hw", PLATFORMS)
@pytest.mark.parametrize("lanes, at", MISALIGNED, ids=str)
def test_division_and_multiply_of_a_source_inside_a_grf(hw, lanes, at):
    check_divisions("s32", lanes, at, hw, False)


@pytest.mark.parametrize(
    "hw, lanes, at",
    [(hw, n, 0) for hw in ("xelp", "xehpg") for n in LANES]
    + [(hw, n, at) for hw in ("xelp", "xehpg") for n, at in [(8, 8), (12, 16), (3, 8)]]
    + [("xehpc", n, 0) for n in FULL],  # (native 64-bit adds)
    ids=str,
)
def test_64_bit_adds_carry_through_the_accumulator(hw, lanes, at):
    results = ["X + Y", "X - Y", "-X", f"X + {constant('s64', UINT_MAX, lanes)}"]
    run("s64", lanes, at, results, hw, seed=lanes * 11 + at)


@pytest.mark.parametrize("hw", PLATFORMS)
@pytest.mark.parametrize("lanes", [1, 3, 5])
def test_a_u32_division_by_a_divisor_above_2_31_on_odd_lane_counts(hw, lanes, iga64):
    """Its quotient (0 or 1) was a predicated sel, which a piece of a vector starting at a lane
    off a multiple of 4 cannot run: the compile failed.  Every value of x at the edges of d."""
    d = 0xFFFFFFF9
    results = [f"X / {constant('u32', d, lanes)}", f"X % {constant('u32', d, lanes)}"]
    text, _ = kernel("u32", lanes, 0, results)
    compiled = compile_kernel(hand_spec(f"udiv_{lanes}", text, [("x", "ptr"), ("y", "ptr"), ("out", "ptr")]), hw)
    assert iga_report(compiled.code, hw) == ""
    buffers, out = run("u32", lanes, 0, results, hw, seed=lanes)
    x = [int(v) for v in buffers["x"]]
    assert {1 << 31, d, 0xFFFFFFFF} <= set(x)  # below, at and above d (inputs()' edges)
    for k, op in enumerate(("/", "%")):
        assert [int(v) for v in out[:, k].reshape(-1)] == [truncating(v, d, 32, False, op) for v in x]


def test_a_12_lane_remainder_by_3_uses_acc0_for_lanes_8_to_11():
    """The case reported: `v % 3` on an s32x12 vector on XeLP and XeHPG."""
    for hw in ("xelp", "xehpg"):
        buffers, out = run("s32", 12, 0, [f"X % {constant('s32', 3, 12)}"], hw, seed=3)
        x = buffers["x"].reshape(-1, 12).astype(np.int64)
        assert out[:, 0].tolist() == [[truncating(int(v), 3, 32, True, "%") for v in row] for row in x]


@pytest.mark.parametrize("hw", ["xelp", "xehpg"])
@pytest.mark.parametrize("count", [3, 5, 12])
def test_64_bit_addresses_add_each_carry_before_the_next(hw, count):
    """A64 scattered messages whose lane count is not a power of two: their address adds
    (`messages.address64`) run in pieces; each piece's carries are read before the next addc.
    (The simulator's buffers sit where no offset carries, so this is checked statically.)"""
    iota = f"shuffle<{','.join(map(str, range(count)))}>({', '.join(map(str, range(count)))})"
    text = f"""
alloc r[512] grf;
r[0] = broadcast(-1, 128);
let offsets = {iota} * broadcast(8, {count}) + broadcast(group_id0 * 8, {count});
send<op=load, kind=scattered, space=global, type=u64, count={count}, elems=1>(&x[4], offsets, &r[0], null);
send<op=store, kind=scattered, space=global, type=u64, count={count}, elems=1>(
    &out[group_id0 * 256], offsets, &r[0], null);
"""
    spec = hand_spec("address64", text, [("x", "ptr"), ("out", "ptr")])
    compiled = compile_kernel(spec, hw)
    assert any(inst.opcode == "addc" for inst in compiled.instructions)
    check_accumulator(compiled.instructions, hw)
    x = np.arange(1024, dtype=np.uint8) * 7
    simulated, interpreted, _ = run_both(spec, hw, {"x": x, "out": np.zeros(1024, np.uint8)}, grid=(2, 1, 1))
    assert simulated["out"].tobytes() == interpreted["out"].tobytes()
