"""Hand-written assembly for each ALU instruction family, checked against the IR interpreter
(integer semantics), numpy (floats) or plain Python (bit operations)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xegen.ir import evaluate, parse_expr
from xegen.sim import SimulationError

from .harness import execute

THREADS = 4
LANES = 16
EDGES = {
    np.int32: [0, 1, -1, 2**31 - 1, -(2**31), 7, -7],
    np.uint32: [0, 1, 2**32 - 1, 2**31, 7],
    np.int16: [0, 1, -1, 2**15 - 1, -(2**15)],
    np.uint16: [0, 1, 2**16 - 1, 2**15],
    np.int8: [0, 1, -1, 127, -128],
    np.uint8: [0, 1, 255, 128],
}
IR_TYPE = {np.int32: "s32", np.uint32: "u32", np.int16: "s16", np.uint16: "u16", np.int8: "s8", np.uint8: "u8"}


def values(seed: int, dtype, shape=(THREADS, LANES)) -> np.ndarray:
    """Random values of an integer dtype with the type's edge values mixed in."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    out = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=np.int64).astype(dtype)
    edges = np.array(EDGES[dtype], dtype=np.int64).astype(dtype)
    picks = rng.random(shape) < 0.25
    out[picks] = rng.choice(edges, size=int(picks.sum()))
    return out


def ir(expression: str, **env) -> np.ndarray:
    types = {name: parse_type_of(v) for name, v in env.items()}
    return evaluate(parse_expr(expression, types), env)


def parse_type_of(array: np.ndarray):
    from xegen.ir import parse_type

    return parse_type(IR_TYPE[array.dtype.type])


seeds = st.integers(0, 2**32 - 1)


# --- integer arithmetic against the IR interpreter -------------------------------------------------

INTEGER_CASES = [
    # (asm for dst r10 from r20, r30, r40), IR expression, numpy dtypes of (dst, a, b, c), platforms
    ("add (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d", "a + b", (np.int32, np.int32, np.int32)),
    ("add (16|M0) r10.0<1>:w r20.0<1;1,0>:d r30.0<1;1,0>:d", "(s16)(a + b)", (np.int16, np.int32, np.int32)),
    ("add (16|M0) r10.0<1>:d r20.0<1;1,0>:d -r30.0<1;1,0>:d", "a - b", (np.int32, np.int32, np.int32)),
    ("add (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:uw", "a + (s32)b", (np.int32, np.int32, np.uint16)),
    ("mul (16|M0) r10.0<1>:d r20.0<1;1,0>:w r30.0<1;1,0>:w", "(s32)a * (s32)b", (np.int32, np.int16, np.int16)),
    ("mul (16|M0) r10.0<1>:ud r20.0<1;1,0>:uw r30.0<1;1,0>:uw", "(u32)a * (u32)b", (np.uint32, np.uint16, np.uint16)),
    (
        "mad (16|M0) r10.0<1>:d r20.0<1;0>:d r30.0<1;0>:w r40.0<1>:w",
        "a + (s32)b * (s32)c",
        (np.int32, np.int32, np.int16, np.int16),
    ),
    ("shl (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d", "a << b", (np.int32, np.int32, np.int32)),
    ("shr (16|M0) r10.0<1>:ud r20.0<1;1,0>:ud r30.0<1;1,0>:ud", "a >> b", (np.uint32, np.uint32, np.uint32)),
    ("asr (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d", "a >> b", (np.int32, np.int32, np.int32)),
    ("and (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d", "a & b", (np.int32, np.int32, np.int32)),
    ("or (16|M0) r10.0<1>:d r20.0<1;1,0>:d ~r30.0<1;1,0>:d", "a | ~b", (np.int32, np.int32, np.int32)),
    ("xor (16|M0) r10.0<1>:uw r20.0<1;1,0>:uw r30.0<1;1,0>:uw", "a ^ b", (np.uint16, np.uint16, np.uint16)),
    ("not (16|M0) r10.0<1>:d r20.0<1;1,0>:d", "~a", (np.int32, np.int32)),
    ("sel (16|M0) (ge)f0.0 r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d", "max(a, b)", (np.int32, np.int32, np.int32)),
    (
        "sel (16|M0) (lt)f0.0 r10.0<1>:ud r20.0<1;1,0>:ud r30.0<1;1,0>:ud",
        "min(a, b)",
        (np.uint32, np.uint32, np.uint32),
    ),
    ("mov (16|M0) r10.0<1>:b r20.0<1;1,0>:d", "(s8)a", (np.int8, np.int32)),
    ("mov (16|M0) r10.0<1>:d r20.0<1;1,0>:b", "(s32)a", (np.int32, np.int8)),
    ("mov (16|M0) r10.0<1>:ud r20.0<1;1,0>:w", "(u32)a", (np.uint32, np.int16)),
]
INTEGER_3SRC = {"mad", "add3"}


@pytest.mark.parametrize("hw", ["tgllp", "dg2", "pvc"])
@pytest.mark.parametrize("asm, expression, dtypes", INTEGER_CASES, ids=[c[1] for c in INTEGER_CASES])
@settings(max_examples=8, deadline=None)
@given(seed=seeds)
def test_integer_op_matches_ir(hw, asm, expression, dtypes, seed):
    if hw == "tgllp" and "<1;0>" in asm:
        asm = asm.replace("<1;0>", "<8;1>")
    names = "abc"
    srcs = [values(seed + i, dt) for i, dt in enumerate(dtypes[1:])]
    if "shl" in asm or "shr" in asm or "asr" in asm:
        srcs[1] = (srcs[1] & 0x3F).astype(dtypes[2])  # keep counts readable; the hardware uses the low bits
    run = execute(asm, hw, inputs={20 + 10 * i: s for i, s in enumerate(srcs)})
    got = run.read(10, dtypes[0], LANES)
    expected = ir(expression, **{names[i]: s for i, s in enumerate(srcs)}).astype(dtypes[0])
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("hw", ["dg2", "pvc"])
@settings(max_examples=10, deadline=None)
@given(seed=seeds)
def test_add3(hw, seed):
    a, b, c = (values(seed + i, np.int32) for i in range(3))
    run = execute("add3 (16|M0) r10.0<1>:d r20.0<1;0>:d -r30.0<1;0>:d r40.0<1>:d", hw, inputs={20: a, 30: b, 40: c})
    np.testing.assert_array_equal(run.read(10, np.int32, 16), ir("add3(a, -b, c)", a=a, b=b, c=c))


@pytest.mark.parametrize("hw", ["dg2", "pvc"])
@pytest.mark.parametrize(
    "src0, src1, src2, elements0, elements1, elements2",
    [
        # <v;0> repeats each element v times (width v); <v;h> has width v/h; src2 <h> strides by h
        ("<4;0>", "<4;2>", "<2>", [0, 0, 0, 0, 4, 4, 4, 4], [0, 2, 4, 6, 8, 10, 12, 14], [0, 2, 4, 6, 8, 10, 12, 14]),
        ("<8;0>", "<8;2>", "<0>", [0] * 8, [0, 2, 4, 6, 8, 10, 12, 14], [0] * 8),
        ("<1;0>", "<4;4>", "<1>", [0, 1, 2, 3, 4, 5, 6, 7], [0, 4, 8, 12, 16, 20, 24, 28], [0, 1, 2, 3, 4, 5, 6, 7]),
    ],
)
def test_three_source_regions(hw, src0, src1, src2, elements0, elements1, elements2):
    """The elements each channel reads, by hand from the region rules (xegen.emit.regions)."""
    a, b, c = (np.arange(32, dtype=np.int32) * 1000 + i for i in (1, 2, 3))
    run = execute(f"add3 (8|M0) r10.0<1>:d r20.0{src0}:d r30.0{src1}:d r40.0{src2}:d", hw, inputs={20: a, 30: b, 40: c})
    expected = a[elements0] + b[elements1] + c[elements2]
    np.testing.assert_array_equal(run.read(10, np.int32, 8), np.broadcast_to(expected, (THREADS, 8)))


@settings(max_examples=10, deadline=None)
@given(seed=seeds)
def test_integer_division_math_on_xelp(seed):
    a, b = values(seed, np.int32), values(seed + 1, np.int32)
    b[0, :4] = 0  # x / 0 and x % 0 have defined results
    run = execute(
        "math.iqot (16|M0) r10.0<1>:d r20.0<8;8,1>:d r30.0<8;8,1>:d {$1}\n"
        "math.irem (16|M0) r12.0<1>:d r20.0<8;8,1>:d r30.0<8;8,1>:d {$2}\n"
        "sync.allwr null",
        "tgllp",
        inputs={20: a, 30: b},
    )
    np.testing.assert_array_equal(run.read(10, np.int32, 16), ir("a / b", a=a, b=b))
    np.testing.assert_array_equal(run.read(12, np.int32, 16), ir("a % b", a=a, b=b))


def test_avg_and_saturation():
    a = np.array([[7, -8, 2**31 - 1, -(2**31)] * 4] * THREADS, dtype=np.int32)
    b = np.array([[2, -1, 2**31 - 1, -1] * 4] * THREADS, dtype=np.int32)
    run = execute(
        "avg (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d\n"
        "add (16|M0) (sat)r12.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d\n"
        "mov (16|M0) (sat)r14.0<1>:ub r20.0<1;1,0>:d",
        "dg2",
        inputs={20: a, 30: b},
    )
    wide_a, wide_b = a.astype(np.int64), b.astype(np.int64)
    np.testing.assert_array_equal(run.read(10, np.int32, 16), (wide_a + wide_b + 1) >> 1)
    np.testing.assert_array_equal(run.read(12, np.int32, 16), np.clip(wide_a + wide_b, -(2**31), 2**31 - 1))
    np.testing.assert_array_equal(run.read(14, np.uint8, 16), np.clip(wide_a, 0, 255))


# --- multiply emulation through the accumulator ------------------------------------------------------


@pytest.mark.parametrize(
    "hw, low_op, high_op",
    [
        (
            "tgllp",
            "mach (8|M0) r10.0<1>:d r20.0<8;8,1>:d r30.0<8;8,1>:d",
            "mach (8|M0) r11.0<1>:d r20.0<8;8,1>:d r30.0<8;8,1>:d {AccWrEn}",
        ),
        (
            "dg2",
            "mach (8|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d",
            "mach (8|M0) r11.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d {AccWrEn}",
        ),
        (
            "pvc",
            "macl (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d",
            "mach (16|M0) r11.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d",
        ),
    ],
)
@settings(max_examples=10, deadline=None)
@given(seed=seeds)
def test_mul_mach_gives_both_halves_of_the_product(hw, low_op, high_op, seed):
    """IGC's 32x32 multiply: mul acc0 (src1 low word), then mach/macl with the full src1."""
    lanes = 16 if hw == "pvc" else 8
    region = "<1;1,0>" if hw != "tgllp" else "<8;8,1>"
    a, b = values(seed, np.int32, (THREADS, lanes)), values(seed + 1, np.int32, (THREADS, lanes))
    asm = (
        f"mul ({lanes}|M0) acc0.0<1>:d r20.0{region}:d r30.0<2;1,0>:uw\n{low_op}\n"
        f"mul ({lanes}|M0) acc0.0<1>:d r20.0{region}:d r30.0<2;1,0>:uw\n{high_op}"
    )
    run = execute(asm, hw, inputs={20: a, 30: b}, simd=lanes)
    product = a.astype(np.int64) * b.astype(np.int64)
    np.testing.assert_array_equal(
        run.read(10, np.int32, lanes), (product & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    )
    np.testing.assert_array_equal(run.read(11, np.int32, lanes), (product >> 32).astype(np.int32))


def test_addc_and_subb_put_carry_and_borrow_in_acc0():
    a = np.array([[0xFFFFFFFF, 5, 0x80000000, 0] * 2] * THREADS, dtype=np.uint32)
    b = np.array([[1, 7, 0x80000000, 0] * 2] * THREADS, dtype=np.uint32)
    run = execute(
        "addc (8|M0) r10.0<1>:ud r20.0<1;1,0>:ud r30.0<1;1,0>:ud {AccWrEn}\n"
        "mov (8|M0) r11.0<1>:ud acc0.0<1;1,0>:ud\n"
        "subb (8|M0) r12.0<1>:ud r20.0<1;1,0>:ud r30.0<1;1,0>:ud {AccWrEn}\n"
        "mov (8|M0) r13.0<1>:ud acc0.0<1;1,0>:ud",
        "dg2",
        inputs={20: a, 30: b},
        simd=8,
    )
    wa, wb = a.astype(np.int64), b.astype(np.int64)
    np.testing.assert_array_equal(run.read(10, np.uint32, 8), (wa + wb) & 0xFFFFFFFF)
    np.testing.assert_array_equal(run.read(11, np.uint32, 8), (wa + wb) >> 32)
    np.testing.assert_array_equal(run.read(12, np.uint32, 8), (wa - wb) & 0xFFFFFFFF)
    np.testing.assert_array_equal(run.read(13, np.uint32, 8), (wa < wb).astype(np.uint32))


# --- bit operations against plain Python -----------------------------------------------------------


def _py_fbh(v: int, signed: bool) -> int:
    if signed and v & 0x80000000:
        v = ~v & 0xFFFFFFFF
    return 0xFFFFFFFF if v == 0 else 31 - (v.bit_length() - 1)


def _py_bfe(width: int, offset: int, value: int, signed: bool) -> int:
    width, offset = width & 31, offset & 31
    if width == 0:
        return 0
    field = (value >> offset) & ((1 << width) - 1) if width + offset < 32 else value >> offset
    bits = min(width, 32 - offset)
    if signed and field >> (bits - 1) & 1:
        field -= 1 << bits
    return field & 0xFFFFFFFF


@settings(max_examples=15, deadline=None)
@given(seed=seeds, table=st.integers(0, 255))
def test_bit_operations(seed, table):
    a = values(seed, np.uint32)
    b = values(seed + 1, np.uint32)
    c = values(seed + 2, np.uint32)
    asm = f"""
        cbit (16|M0) r10.0<1>:ud r20.0<1;1,0>:ud
        fbh (16|M0) r12.0<1>:ud r20.0<1;1,0>:ud
        fbh (16|M0) r14.0<1>:ud r20.0<1;1,0>:d
        fbl (16|M0) r16.0<1>:ud r20.0<1;1,0>:ud
        lzd (16|M0) r18.0<1>:ud r20.0<1;1,0>:ud
        bfrev (16|M0) r50.0<1>:ud r20.0<1;1,0>:ud
        bfe (16|M0) r52.0<1>:ud r30.0<1;0>:ud r40.0<1;0>:ud r20.0<1>:ud
        bfe (16|M0) r54.0<1>:d r30.0<1;0>:d r40.0<1;0>:d r20.0<1>:d
        bfi1 (16|M0) r56.0<1>:ud r30.0<1;1,0>:ud r40.0<1;1,0>:ud
        bfi2 (16|M0) r58.0<1>:ud r56.0<1;0>:ud r20.0<1;0>:ud r40.0<1>:ud
        bfn.0x{table:02X} (16|M0) r60.0<1>:ud r20.0<1;0>:ud r30.0<1;0>:ud r40.0<1>:ud
        ror (16|M0) r62.0<1>:ud r20.0<1;1,0>:ud r30.0<1;1,0>:ud
        rol (16|M0) r64.0<1>:ud r20.0<1;1,0>:ud r30.0<1;1,0>:ud
    """
    run = execute(asm, "dg2", inputs={20: a, 30: b, 40: c})
    for t in range(THREADS):
        for i in range(LANES):
            x, y, z = int(a[t, i]), int(b[t, i]), int(c[t, i])
            assert run.read(10, np.uint32, 16)[t, i] == bin(x).count("1")
            assert run.read(12, np.uint32, 16)[t, i] == _py_fbh(x, False)
            assert run.read(14, np.uint32, 16)[t, i] == _py_fbh(x, True)
            assert run.read(16, np.uint32, 16)[t, i] == (0xFFFFFFFF if x == 0 else (x & -x).bit_length() - 1)
            assert run.read(18, np.uint32, 16)[t, i] == 32 - x.bit_length()
            assert run.read(50, np.uint32, 16)[t, i] == int(f"{x:032b}"[::-1], 2)
            assert run.read(52, np.uint32, 16)[t, i] == _py_bfe(y, z, x, False)
            assert run.read(54, np.uint32, 16)[t, i] == _py_bfe(y, z, x, True)
            mask = (((1 << (y & 31)) - 1) << (z & 31)) & 0xFFFFFFFF
            assert run.read(56, np.uint32, 16)[t, i] == mask
            assert run.read(58, np.uint32, 16)[t, i] == (mask & x) | (~mask & z & 0xFFFFFFFF)
            bfn = sum(((table >> ((x >> k & 1) | (y >> k & 1) << 1 | (z >> k & 1) << 2)) & 1) << k for k in range(32))
            assert run.read(60, np.uint32, 16)[t, i] == bfn
            n = y & 31
            assert run.read(62, np.uint32, 16)[t, i] == ((x >> n) | (x << (32 - n))) & 0xFFFFFFFF
            assert run.read(64, np.uint32, 16)[t, i] == ((x << n) | (x >> (32 - n))) & 0xFFFFFFFF


@pytest.mark.parametrize("hw", ["tgllp", "dg2", "pvc"])
@settings(max_examples=10, deadline=None)
@given(seed=seeds)
def test_dp4a(hw, seed):
    acc, a, b = values(seed, np.int32), values(seed + 1, np.int32), values(seed + 2, np.uint32)
    region = "<8;1>" if hw == "tgllp" else "<1;0>"
    run = execute(
        f"dp4a (16|M0) r10.0<1>:d r20.0{region}:d r30.0{region}:d r40.0<1>:ud", hw, inputs={20: acc, 30: a, 40: b}
    )
    sa = a.view(np.int8).reshape(THREADS, LANES, 4).astype(np.int64)
    ub = b.view(np.uint8).reshape(THREADS, LANES, 4).astype(np.int64)
    expected = (acc.astype(np.int64) + (sa * ub).sum(axis=2)).astype(np.uint64).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(run.read(10, np.int32, 16), expected)


# --- floats ----------------------------------------------------------------------------------------


def floats(seed: int, shape=(THREADS, LANES), dtype=np.float32) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(dtype)
    x.flat[:4] = np.array([0.0, -0.0, 1.5, -2.25], dtype=dtype)
    return x


@pytest.mark.parametrize("hw", ["tgllp", "dg2", "pvc"])
@settings(max_examples=8, deadline=None)
@given(seed=seeds)
def test_float_arithmetic_rounds_like_ieee_single(hw, seed):
    a, b, c = floats(seed), floats(seed + 1), floats(seed + 2)
    three = "<8;1>" if hw == "tgllp" else "<1;0>"
    asm = f"""
        (W) or (1|M0) cr0.0<1>:ud cr0.0<0;1,0>:ud 0x4C0:uw
        sync.nop null {{{'@1' if hw == 'tgllp' else 'A@1'}}}
        add (16|M0) r10.0<1>:f r20.0<1;1,0>:f r30.0<1;1,0>:f
        mul (16|M0) r12.0<1>:f r20.0<1;1,0>:f -r30.0<1;1,0>:f
        mad (16|M0) r14.0<1>:f r40.0{three}:f r20.0{three}:f r30.0<1>:f
        sel (16|M0) (lt)f0.0 r16.0<1>:f r20.0<1;1,0>:f (abs)r30.0<1;1,0>:f
        frc (16|M0) r18.0<1>:f r20.0<1;1,0>:f
        rndd (16|M0) r50.0<1>:f r20.0<1;1,0>:f
        rnde (16|M0) r52.0<1>:f r20.0<1;1,0>:f
        mov (16|M0) r54.0<1>:d r20.0<1;1,0>:f
        mov (16|M0) r56.0<1>:hf r20.0<1;1,0>:f
        mov (16|M0) (sat)r58.0<1>:f r20.0<1;1,0>:f
    """
    run = execute(asm, hw, inputs={20: a, 30: b, 40: c})
    np.testing.assert_array_equal(run.read(10, np.float32, 16), a + b)
    np.testing.assert_array_equal(run.read(12, np.float32, 16), a * -b)
    fused = (c.astype(np.float64) + a.astype(np.float64) * b.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(run.read(14, np.float32, 16), fused)
    np.testing.assert_array_equal(run.read(16, np.float32, 16), np.minimum(a, np.abs(b)))
    np.testing.assert_array_equal(run.read(18, np.float32, 16), a - np.floor(a))
    np.testing.assert_array_equal(run.read(50, np.float32, 16), np.floor(a))
    np.testing.assert_array_equal(run.read(52, np.float32, 16), np.rint(a))
    np.testing.assert_array_equal(
        run.read(54, np.int32, 16), np.clip(np.trunc(a), -(2**31), 2**31 - 1).astype(np.int32)
    )
    np.testing.assert_array_equal(run.read(56, np.float16, 16), a.astype(np.float16))
    np.testing.assert_array_equal(run.read(58, np.float32, 16), np.clip(a, 0, 1))


@pytest.mark.parametrize("mode, bits", [("toward zero", 0x30), ("toward +inf", 0x10), ("toward -inf", 0x20)])
def test_rounding_modes_from_cr0(mode, bits):
    """IGC switches cr0 to round toward zero around integer division: every result must use it."""
    a, b = floats(3), floats(4)
    ints = np.array([[16777217, -16777219, 2**31 - 1, 3] * 4] * THREADS, dtype=np.int32)
    asm = f"""
        (W) or (1|M0) cr0.0<1>:ud cr0.0<0;1,0>:ud 0x{bits | 0x4C0:X}:uw
        sync.nop null {{A@1}}
        add (16|M0) r10.0<1>:f r20.0<1;1,0>:f r30.0<1;1,0>:f
        mul (16|M0) r12.0<1>:f r20.0<1;1,0>:f r30.0<1;1,0>:f
        mad (16|M0) r14.0<1>:f r30.0<1;0>:f r20.0<1;0>:f r30.0<1>:f
        mov (16|M0) r16.0<1>:f r40.0<1;1,0>:d
    """
    run = execute(asm, "dg2", inputs={20: a, 30: b, 40: ints})

    def rounded(exact: Fraction) -> np.float32:
        near = np.float32(float(exact))
        candidates = [np.nextafter(near, np.float32(-np.inf)), near, np.nextafter(near, np.float32(np.inf))]
        below = max((v for v in candidates if Fraction(float(v)) <= exact), key=lambda v: Fraction(float(v)))
        above = min((v for v in candidates if Fraction(float(v)) >= exact), key=lambda v: Fraction(float(v)))
        if mode == "toward +inf":
            return above
        if mode == "toward -inf":
            return below
        return below if exact >= 0 else above

    for t in range(THREADS):
        for i in range(LANES):
            x, y = Fraction(float(a[t, i])), Fraction(float(b[t, i]))
            assert run.read(10, np.float32, 16)[t, i] == rounded(x + y)
            assert run.read(12, np.float32, 16)[t, i] == rounded(x * y)
            assert run.read(14, np.float32, 16)[t, i] == rounded(y + x * y)
            assert run.read(16, np.float32, 16)[t, i] == rounded(Fraction(int(ints[t, i])))


def test_denormals_flush_until_cr0_keeps_them():
    tiny = np.full((THREADS, LANES), 1e-40, dtype=np.float32)
    run = execute(
        """
        add (16|M0) r10.0<1>:f r20.0<1;1,0>:f r20.0<1;1,0>:f
        (W) or (1|M0) cr0.0<1>:ud cr0.0<0;1,0>:ud 0x4C0:uw
        sync.nop null {A@1}
        add (16|M0) r12.0<1>:f r20.0<1;1,0>:f r20.0<1;1,0>:f
    """,
        "dg2",
        inputs={20: tiny},
    )
    np.testing.assert_array_equal(run.read(10, np.float32, 16), 0)
    np.testing.assert_array_equal(run.read(12, np.float32, 16), tiny + tiny)


def test_half_and_bfloat_conversions():
    a = floats(7)
    halves = a.astype(np.float16)
    run = execute(
        """
        mov (16|M0) r10.0<1>:bf r20.0<1;1,0>:f
        mov (16|M0) r12.0<1>:f r10.0<1;1,0>:bf
        mov (16|M0) r14.0<1>:f r30.0<1;1,0>:hf
        add (16|M0) r16.0<1>:hf r30.0<1;1,0>:hf r30.0<1;1,0>:hf
    """,
        "dg2",
        inputs={20: a, 30: halves},
    )
    bits = a.view(np.uint32)
    bf = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    np.testing.assert_array_equal(run.read(10, np.uint16, 16), bf)
    np.testing.assert_array_equal(run.read(12, np.float32, 16), (bf.astype(np.uint32) << 16).view(np.float32))
    np.testing.assert_array_equal(run.read(14, np.float32, 16), halves.astype(np.float32))
    np.testing.assert_array_equal(run.read(16, np.float16, 16), halves + halves)


@pytest.mark.parametrize("hw", ["dg2", "pvc"])
def test_math_functions(hw):
    a = np.abs(floats(9)) + np.float32(0.5)
    token = "{$1}" if hw == "dg2" else ""
    asm = "\n".join(
        f"math.{f} (16|M0) r{r}.0<1>:f r20.0<1;1,0>:f {token}"
        for f, r in (("inv", 10), ("sqt", 12), ("rsqt", 14), ("exp", 16), ("log", 18), ("sin", 50), ("cos", 52))
    )
    run = execute(asm + "\nsync.allwr null", hw, inputs={20: a})
    x = a.astype(np.float64)
    with np.errstate(over="ignore"):  # exp2 of the large inputs is inf in f32, as the hardware gives
        for register, expected in (
            (10, 1 / x),
            (12, np.sqrt(x)),
            (14, 1 / np.sqrt(x)),
            (16, np.exp2(x)),
            (18, np.log2(x)),
            (50, np.sin(x)),
            (52, np.cos(x)),
        ):
            np.testing.assert_allclose(
                run.read(register, np.float32, 16), expected.astype(np.float32), rtol=2e-7, atol=0
            )


# --- comparisons, flags, predication, masks ------------------------------------------------------------


@pytest.mark.parametrize(
    "cond, op",
    [
        ("lt", np.less),
        ("le", np.less_equal),
        ("gt", np.greater),
        ("ge", np.greater_equal),
        ("eq", np.equal),
        ("ne", np.not_equal),
    ],
)
def test_cmp_writes_flags_and_destination(cond, op):
    a = values(11, np.int32)
    b = a.copy()
    b[:, ::3] = values(12, np.int32)[:, ::3]
    run = execute(
        f"""
        cmp (16|M0) ({cond})f1.0 r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        (f1.0) mov (16|M0) r12.0<1>:d 7:w
        (~f1.0) mov (16|M0) r12.0<1>:d -7:w
    """,
        "dg2",
        inputs={20: a, 30: b},
    )
    truth = op(a, b)
    np.testing.assert_array_equal(run.read(10, np.int32, 16), np.where(truth, -1, 0))
    np.testing.assert_array_equal(run.read(12, np.int32, 16), np.where(truth, 7, -7))
    bits = (truth.astype(np.uint32) << np.arange(16, dtype=np.uint32)).sum(axis=1)
    np.testing.assert_array_equal(run.flag(1) & 0xFFFF, bits)


def test_float_compare_with_nan():
    a = np.array([[np.nan, 1.0, 2.0, np.nan] * 4] * THREADS, dtype=np.float32)
    b = np.array([[1.0, np.nan, 2.0, np.nan] * 4] * THREADS, dtype=np.float32)
    run = execute(
        """
        cmp (16|M0) (lt)f0.0 r10.0<1>:f r20.0<1;1,0>:f r30.0<1;1,0>:f
        cmp (16|M0) (ne)f0.1 r12.0<1>:f r20.0<1;1,0>:f r30.0<1;1,0>:f
        sel (16|M0) (ge)f0.0 r14.0<1>:f r20.0<1;1,0>:f r30.0<1;1,0>:f
    """,
        "dg2",
        inputs={20: a, 30: b},
    )
    np.testing.assert_array_equal(run.read(10, np.int32, 16), np.where(a < b, -1, 0))
    np.testing.assert_array_equal(run.read(12, np.int32, 16), np.where(a != b, -1, 0))
    np.testing.assert_array_equal(run.read(14, np.float32, 16), np.fmax(a, b))


def test_condition_modifier_and_predicated_cmp_and_together():
    """IGC ANDs conditions with a predicated cmp writing the same flag (disabled channels keep it)."""
    a = values(21, np.int32)
    run = execute(
        """
        cmp (16|M0) (gt)f0.0 null<1>:d r20.0<1;1,0>:d 0:w
        (f0.0) cmp (16|M0) (lt)f0.0 null<1>:d r20.0<1;1,0>:d 1000:w
        add (16|M0) (eq)f1.0 r10.0<1>:d r20.0<1;1,0>:d -5:w
    """,
        "dg2",
        inputs={20: a},
    )
    both = (a > 0) & (a < 1000)
    np.testing.assert_array_equal(
        run.flag(0) & 0xFFFF, (both.astype(np.uint32) << np.arange(16, dtype=np.uint32)).sum(1)
    )
    eq = (a.astype(np.int64) - 5) == 0
    np.testing.assert_array_equal(run.flag(1) & 0xFFFF, (eq.astype(np.uint32) << np.arange(16, dtype=np.uint32)).sum(1))


def test_predicate_any_all_and_channel_groups():
    flags = np.array([0x0000_0001, 0x0000_FFFF, 0xFFFF_0000, 0x00FF_00FF], dtype=np.uint32)
    run = execute(
        """
        mov (32|M0) r10.0<1>:d 0:w
        (f0.0.anyv) mov (16|M0) r10.0<1>:d 1:w
        (f0.0.allv) mov (16|M16) r12.0<1>:d 2:w
        mov (32|M0) r14.0<1>:d 0:w
        (f0.0.any8h) mov (32|M0) r14.0<1>:d 3:w
    """,
        "tgllp",
        flags={0: flags},
        simd=32,
    )
    got = run.read(10, np.int32, 32)
    for t, word in enumerate(flags):
        assert (got[t, :16] == (1 if word & 0xFFFF else 0)).all()
        assert (got[t, 16:] == (2 if word >> 16 == 0xFFFF else 0)).all()  # r12 is r10.16 on a 32-byte GRF
        groups = run.read(14, np.int32, 32)[t]
        for g in range(4):
            expect = 3 if (int(word) >> (8 * g)) & 0xFF else 0
            assert (groups[8 * g : 8 * g + 8] == expect).all()


def test_partial_dispatch_mask_and_nomask():
    """Channels outside the dispatch mask keep their old values unless the instruction is NoMask."""
    live = np.zeros((THREADS, 16), dtype=bool)
    live[:, :5] = True
    run = execute(
        """
        mov (16|M0) r10.0<1>:d 1:w
        (W) mov (16|M0) r12.0<1>:d 2:w
        cmp (16|M0) (eq)f0.0 null<1>:d r10.0<1;1,0>:d 1:w
    """,
        "dg2",
        live=live,
        inputs={10: np.full(16, 9, np.int32), 12: np.full(16, 9, np.int32)},
    )
    assert (run.read(10, np.int32, 16)[:, :5] == 1).all() and (run.read(10, np.int32, 16)[:, 5:] == 9).all()
    assert (run.read(12, np.int32, 16) == 2).all()
    assert (run.flag(0) & 0xFFFF == 0x1F).all()


# --- regions and addressing ----------------------------------------------------------------------------


def test_regions_strides_and_scalars():
    data = np.arange(64, dtype=np.int32).reshape(1, 64) * np.ones((THREADS, 1), np.int32)
    data += np.arange(THREADS, dtype=np.int32)[:, None] * 1000
    run = execute(
        """
        mov (16|M0) r30.0<1>:d r20.1<8;4,2>:d
        mov (8|M0) r32.0<1>:d r20.3<0;1,0>:d
        mov (8|M0) r33.0<2>:w r20.0<1;1,0>:w
        mov (8|M0) r34.0<1>:d r20.4<2;2,1>:d
        add (8|M0) r35.0<1>:d r20.0<4;1,0>:d r21.0<16;8,2>:d
    """,
        "dg2",
        inputs={20: data},
    )
    i = np.arange(16)
    np.testing.assert_array_equal(run.read(30, np.int32, 16), data[:, 1 + (i // 4) * 8 + (i % 4) * 2])
    np.testing.assert_array_equal(run.read(32, np.int32, 8), np.repeat(data[:, 3:4], 8, axis=1))
    words = data.view(np.int16)
    got = run.read(33, np.int16, 16)
    np.testing.assert_array_equal(got[:, ::2], words[:, :8])
    np.testing.assert_array_equal(run.read(34, np.int32, 8), data[:, 4 + (np.arange(8) // 2) * 2 + np.arange(8) % 2])
    j = np.arange(8)
    np.testing.assert_array_equal(run.read(35, np.int32, 8), data[:, (j // 1) * 4] + data[:, 8 + j * 2])


def test_indirect_addressing_through_a0():
    data = (np.arange(64, dtype=np.int32) * 3)[None, :] * np.ones((THREADS, 1), np.int32)
    base = np.array([20 * 32 + 4 * t for t in range(THREADS)], dtype=np.uint16)  # per-thread byte address
    run = execute(
        """
        (W) mov (1|M0) a0.0<1>:uw r40.0<0;1,0>:uw
        sync.nop null {A@1}
        mov (8|M0) r10.0<1>:d r[a0.0, 8]<1;1,0>:d
        mov (8|M0) r[a0.0, 256]<1>:d r10.0<1;1,0>:d
    """,
        "dg2",
        inputs={20: data, 40: base[:, None]},
    )
    for t in range(THREADS):
        start = t + 2
        np.testing.assert_array_equal(run.read(10, np.int32, 8)[t], data[t, start : start + 8])
        np.testing.assert_array_equal(run.read(28, np.int32, 8, byte_offset=4 * t)[t], data[t, start : start + 8])


def test_vector_immediates():
    run = execute(
        """
        mov (8|M0) r10.0<1>:w 0x76543210:v
        mov (8|M0) r11.0<1>:uw 0xFEDCBA98:uv
        mov (4|M0) r12.0<1>:f 0x38302010:vf
    """,
        "tgllp",
    )
    np.testing.assert_array_equal(run.read(10, np.int16, 8)[0], [0, 1, 2, 3, 4, 5, 6, 7])
    np.testing.assert_array_equal(run.read(11, np.uint16, 8)[0], [8, 9, 10, 11, 12, 13, 14, 15])
    # :vf bytes are sign, 3-bit exponent (bias 3), 4-bit mantissa: 0x10 = 2^-2, 0x38 = 1.5
    np.testing.assert_array_equal(run.read(12, np.float32, 4)[0], [0.25, 0.5, 1.0, 1.5])


# --- dpas ---------------------------------------------------------------------------------------------


def _vnni(b: np.ndarray, ops: int) -> np.ndarray:
    """B (K x N) -> dwords (K/ops x N): dword (s, n) packs B[s*ops .. s*ops+ops-1, n], lowest first."""
    k, n = b.shape
    return np.ascontiguousarray(b.reshape(k // ops, ops, n).transpose(0, 2, 1)).view(np.uint32).reshape(k // ops, n)


@pytest.mark.parametrize(
    "hw, a_type, dtype",
    [("dg2", "hf", np.float16), ("dg2", "b", np.int8), ("pvc", "bf", None), ("pvc", "ub", np.uint8)],
)
@pytest.mark.parametrize("repeat", [8, 3])
def test_dpas_matches_numpy(hw, a_type, dtype, repeat):
    n = 8 if hw == "dg2" else 16
    rng = np.random.default_rng(repeat)
    ops = 2 if a_type in ("hf", "bf") else 4
    k = 8 * ops
    if a_type == "bf":
        a32 = rng.standard_normal((repeat, k)).astype(np.float32)
        b32 = rng.standard_normal((k, n)).astype(np.float32)
        a_bits = (a32.view(np.uint32) >> 16).astype(np.uint16)  # truncated to bf16 exactly
        b_bits = (b32.view(np.uint32) >> 16).astype(np.uint16)
        a_vals = (a_bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        b_vals = (b_bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        a_raw, b_raw = a_bits, b_bits
    elif a_type == "hf":
        a_raw = rng.standard_normal((repeat, k)).astype(np.float16)
        b_raw = rng.standard_normal((k, n)).astype(np.float16)
        a_vals, b_vals = a_raw.astype(np.float64), b_raw.astype(np.float64)
    else:
        info = np.iinfo(dtype)
        a_raw = rng.integers(info.min, info.max, size=(repeat, k), endpoint=True).astype(dtype)
        b_raw = rng.integers(info.min, info.max, size=(k, n), endpoint=True).astype(dtype)
        a_vals, b_vals = a_raw.astype(np.int64), b_raw.astype(np.int64)
    acc_type, acc_dtype = ("f", np.float32) if a_type in ("hf", "bf") else ("d", np.int32)
    acc = (rng.standard_normal((repeat, n)) * 10).astype(acc_dtype)
    b_words = _vnni(b_raw, ops)  # (8, n) dwords
    a_rows = np.zeros((repeat, 8), dtype=np.uint32)
    a_rows[:] = np.ascontiguousarray(a_raw).view(np.uint32).reshape(repeat, 8)
    a_bytes = np.zeros(repeat * 32, dtype=np.uint8)  # A rows are 32 bytes apart
    a_bytes.reshape(repeat, 32)[:] = a_rows.view(np.uint8)
    run = execute(
        f"dpas.8x{repeat} ({n}|M0) r10:{acc_type} r20:{acc_type} r40:{a_type} r60.0:{a_type} {{$1}}\nsync.allwr null",
        hw,
        inputs={20: acc.reshape(-1), 40: b_words.reshape(-1), 60: a_bytes},
        simd=n,
    )
    expected = acc.astype(np.float64 if acc_type == "f" else np.int64) + a_vals @ b_vals
    got = run.read(10, acc_dtype, repeat * n).reshape(THREADS, repeat, n)
    for t in range(THREADS):
        if acc_type == "f":
            np.testing.assert_allclose(got[t], expected, rtol=1e-6, atol=1e-5)
        else:
            np.testing.assert_array_equal(got[t], expected.astype(np.int64).astype(np.int32))


def test_csel_and_cmpn():
    a = np.array([[1.0, np.nan, 3.0, -4.0] * 4] * THREADS, dtype=np.float32)
    b = np.array([[2.0, 5.0, np.nan, -4.0] * 4] * THREADS, dtype=np.float32)
    c = np.array([[0.0, -1.0, 2.0, np.nan] * 4] * THREADS, dtype=np.float32)
    run = execute(
        """
        csel (16|M0) (lt)f0.0 r10.0<1>:f r20.0<1;0>:f r30.0<1;0>:f r40.0<1>:f
        cmpn (16|M0) (lt)f1.0 null<1>:f r20.0<1;1,0>:f r30.0<1;1,0>:f
        (f1.0) sel (16|M0) r12.0<1>:f r20.0<1;1,0>:f r30.0<1;1,0>:f
    """,
        "dg2",
        inputs={20: a, 30: b, 40: c},
        flags={0: 0xABCD, 1: 0},
    )
    # csel picks src0 where src2 < 0 and leaves the flag alone
    np.testing.assert_array_equal(run.read(10, np.float32, 16), np.where(c < 0, a, b))
    assert (run.flag(0) == 0xABCD).all()
    # cmpn.l then sel is a minimum that returns the other operand when src1 is NaN
    expected = np.where(np.isnan(b) & ~np.isnan(a), a, np.where(a < b, a, b))
    np.testing.assert_array_equal(run.read(12, np.float32, 16), expected)


@pytest.mark.parametrize("a_type", ["hf", "b"])
@pytest.mark.parametrize("repeat", [8, 7, 2])
def test_dpasw_shares_a_between_the_threads_of_a_fused_pair(a_type, repeat):
    """XeHPG's dpasw: threads 2i and 2i+1 each hold half of A (EU0 the first ceil(RC/2) rows,
    EU1 the rest, both from their own src2); each multiplies the pair's A by its own B."""
    n, ops = 8, (2 if a_type == "hf" else 4)
    k = 8 * ops
    rng = np.random.default_rng(repeat)
    if a_type == "hf":
        a_raw = rng.standard_normal((THREADS, repeat, k)).astype(np.float16)
        b_raw = rng.standard_normal((THREADS, k, n)).astype(np.float16)
        acc = (rng.standard_normal((THREADS, repeat, n)) * 10).astype(np.float32)
    else:
        a_raw = rng.integers(-128, 128, (THREADS, repeat, k)).astype(np.int8)
        b_raw = rng.integers(-128, 128, (THREADS, k, n)).astype(np.int8)
        acc = rng.integers(-1000, 1000, (THREADS, repeat, n)).astype(np.int32)
    acc_type = "f" if a_type == "hf" else "d"
    own = -(-repeat // 2)  # rows EU0 provides; EU1 provides the rest from its own r60
    a_regs = np.zeros((THREADS, own * 32), np.uint8)
    for t in range(THREADS):
        rows = a_raw[t, :own] if t % 2 == 0 else a_raw[t, : repeat - own]
        a_regs[t, : rows.size * rows.itemsize] = np.ascontiguousarray(rows).view(np.uint8).reshape(-1)
    b_words = np.stack([_vnni(b_raw[t], ops).reshape(-1) for t in range(THREADS)])
    run = execute(
        f"dpasw.8x{repeat} (8|M0) r10:{acc_type} r20:{acc_type} r40:{a_type} r60.0:{a_type} {{$1}}\nsync.allwr null",
        "dg2",
        inputs={20: acc.reshape(THREADS, -1), 40: b_words, 60: a_regs},
        simd=n,
    )
    got = run.read(10, acc.dtype, repeat * n).reshape(THREADS, repeat, n)
    wide = np.float64 if a_type == "hf" else np.int64
    for t in range(THREADS):
        eu0, eu1 = t - t % 2, t - t % 2 + 1
        shared_a = np.concatenate([a_raw[eu0, :own], a_raw[eu1, : repeat - own]]).astype(wide)
        expected = acc[t].astype(wide) + shared_a @ b_raw[t].astype(wide)
        if a_type == "hf":
            np.testing.assert_allclose(got[t], expected, rtol=1e-6, atol=1e-5)
        else:
            np.testing.assert_array_equal(got[t], expected.astype(np.int32))


def test_dpasw_needs_both_threads_of_the_pair():
    with pytest.raises(SimulationError, match="even number of threads"):
        execute("dpasw.8x8 (8|M0) r10:f null:f r40:hf r60.0:hf {$1}\nsync.allwr null", "dg2", threads=3, simd=8)


def _bits(values, dtype) -> np.ndarray:
    return np.array(values, dtype=np.uint64).astype(dtype)


def test_srnd_adds_the_random_bits_then_truncates():
    """XeHPC srnd (IGC's vISA SRND): src1's low 13 bits (f -> hf) or 8 bits (hf -> bf8) are added
    to the magnitude's low mantissa bits, then the result is truncated.  Expected bits by hand."""
    f32 = [
        0x3F800000,
        0x3F801000,
        0x3F801000,
        0x3FFFF000,
        0xBFC00000,
        0x477FE000,
        0x501502F9,
        0x35800000,
        0x7F800000,
        0xFF800000,
        0x7FC00000,
        0x00000000,
        0x80000000,
        0x3F800000,
        0xBF801000,
        0x3F801000,
    ]
    noise = [
        0x1FFF,
        0x1000,
        0x0FFF,
        0x1000,
        0x0000,
        0x1FFF,
        0x1FFF,
        0x0000,
        0x1FFF,
        0x1FFF,
        0x0000,
        0x1FFF,
        0x0000,
        0xE000,
        0x1000,
        0xFFFFE000,
    ]
    # 1.0 + (2^13 - 1) * 2^-23 truncates to 1.0; 1 + 2^-11 with 0x1000 reaches 1 + 2^-10; with 0xFFF it
    # does not; 2 - 2^-11 carries into the exponent (2.0); -1.5 exact; 65504 + noise stays 65504 and so
    # does 1e10 (truncation never reaches inf); 2^-20 is an hf denormal (16 * 2^-24); inf, -inf, NaN;
    # +-0; only bits 12:0 of the noise count (0xE000 and 0xFFFFE000 add nothing); the sign is kept
    hf = [
        0x3C00,
        0x3C01,
        0x3C00,
        0x4000,
        0xBE00,
        0x7BFF,
        0x7BFF,
        0x0010,
        0x7C00,
        0xFC00,
        0x7E00,
        0x0000,
        0x8000,
        0x3C00,
        0xBC01,
        0x3C00,
    ]
    run = execute(
        "srnd (16|M0) r10.0<1>:hf r20.0<1;1,0>:f r30.0<1;1,0>:f",
        "pvc",
        inputs={20: _bits(f32, np.uint32), 30: _bits(noise, np.uint32)},
        simd=16,
    )
    np.testing.assert_array_equal(run.read(10, np.uint16, 16), np.broadcast_to(_bits(hf, np.uint16), (THREADS, 16)))

    f16 = [0x3C00, 0x3C80, 0x3C80, 0xBC80, 0x7BFF, 0x7C00, 0x7E00, 0x0001, 0x03FF, 0x3C00]
    small = [0x00FF, 0x0080, 0x007F, 0x0080, 0x00FF, 0x00FF, 0x0000, 0x00FF, 0x0001, 0xFF00]
    # bf8 is the top byte of an hf: 1.0 + 0xFF stays 1.0 (0x3C); 1.125 + 0x80 = 1.25 (0x3D); + 0x7F does
    # not; the sign is kept; the largest finite hf stays the largest finite bf8; inf; NaN; denormals
    # truncate alike (0x0001 + 0xFF = 0x0100 -> 0x01; 0x03FF + 1 = 0x0400 -> 0x04); bits 15:8 do nothing
    bf8 = [0x3C, 0x3D, 0x3C, 0xBD, 0x7B, 0x7C, 0x7E, 0x01, 0x04, 0x3C]
    run = execute(
        "srnd (16|M0) r10.0<1>:bf8 r20.0<1;1,0>:hf r30.0<1;1,0>:hf",
        "pvc",
        inputs={20: _bits(f16 + [0] * 6, np.uint16), 30: _bits(small + [0] * 6, np.uint16)},
        simd=16,
    )
    np.testing.assert_array_equal(run.read(10, np.uint8, 10), np.broadcast_to(_bits(bf8, np.uint8), (THREADS, 10)))
