"""mul-to-accumulator + mach/macl: the exact product, each source read in its own type.

The rule (docs/sim.md, "Instructions"): `mul acc0.s a b:uw` keeps the exact product of a
and b's low word; `mach`/`macl` add a x (b's bits 31:16) << 16, so the accumulator then holds
the full 64-bit product a x b, with a and b each read in its own type — a :ud source is
never sign-extended, whatever the other source's type (nGEN divides by 56 with
`mul acc0 x:d 0x92492493:uw` + `mach q:d x:d 0x92492493:ud`).  macl returns bits 31:0, mach
bits 63:32 (mach without AccWrEn on XeLP/XeHPG is IGC's low multiply: bits 31:0).  The
implicit accumulator has the destination's subregister: `mul acc0.3` feeds `mach r66.3`.

Every instruction text here is assembled by xegen and, once, by iga64: the bytes must agree.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.sim.harness import execute
from xegen import hw as hwlib
from xegen import oracles
from xegen.emit import assemble

THREADS = 2
TYPES = {"d": np.int32, "ud": np.uint32}
EDGES = [0, 1, -1, 2**31 - 1, -(2**31), 0x92492493, 0xFFFF, 0x10000, 0x7FFF8000, 56, -56, 123456789]


def _operands(dtype, lanes: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    edges = np.array([e % 2**32 for e in EDGES], dtype=np.uint32).view(dtype)
    random = rng.integers(0, 2**32, (THREADS, lanes), dtype=np.uint64).astype(np.uint32).view(dtype)
    random[:, : min(lanes, edges.size)] = np.roll(edges, seed)[:lanes]
    return random


def _product(a: np.ndarray, b: np.ndarray) -> list[list[int]]:
    """Exact products as Python integers (each source read in its own type)."""
    return [[int(x) * int(y) for x, y in zip(ra, rb, strict=True)] for ra, rb in zip(a, b, strict=True)]


def _bits(products, shift: int) -> np.ndarray:
    return np.array([[(p >> shift) & 0xFFFFFFFF for p in row] for row in products], dtype=np.uint32)


PLATFORM_FORMS = {
    # hw: (lanes, the instruction giving the low half, the one giving the high half)
    "tgllp": (
        8,
        "mach ({n}|M0) r10.0<1>:{t} r20.0<8;8,1>:{a} r30.0<8;8,1>:{b}",
        "mach ({n}|M0) r11.0<1>:{t} r20.0<8;8,1>:{a} r30.0<8;8,1>:{b} {{AccWrEn}}",
    ),
    "dg2": (
        8,
        "mach ({n}|M0) r10.0<1>:{t} r20.0<1;1,0>:{a} r30.0<1;1,0>:{b}",
        "mach ({n}|M0) r11.0<1>:{t} r20.0<1;1,0>:{a} r30.0<1;1,0>:{b} {{AccWrEn}}",
    ),
    "pvc": (
        16,
        "macl ({n}|M0) r10.0<1>:{t} r20.0<1;1,0>:{a} r30.0<1;1,0>:{b}",
        "mach ({n}|M0) r11.0<1>:{t} r20.0<1;1,0>:{a} r30.0<1;1,0>:{b}",
    ),
}
PAIRS = list(itertools.product(PLATFORM_FORMS, TYPES, TYPES, TYPES))


def _program(hw: str, a: str, b: str, t: str) -> str:
    lanes, low, high = PLATFORM_FORMS[hw]
    region = "<8;8,1>" if hw == "tgllp" else "<1;1,0>"
    mul = f"mul ({lanes}|M0) acc0.0<1>:{t} r20.0{region}:{a} r30.0<2;1,0>:uw"
    return "\n".join([mul, low.format(n=lanes, t=t, a=a, b=b), mul, high.format(n=lanes, t=t, a=a, b=b)])


@pytest.mark.parametrize("hw, a_type, b_type, dst_type", PAIRS, ids=["-".join(p) for p in PAIRS])
def test_every_type_pair_gives_both_halves_of_the_exact_product(hw, a_type, b_type, dst_type):
    lanes = PLATFORM_FORMS[hw][0]
    a = _operands(TYPES[a_type], lanes, 3)
    b = _operands(TYPES[b_type], lanes, 5)
    run = execute(_program(hw, a_type, b_type, dst_type), hw, inputs={20: a, 30: b}, simd=lanes, threads=THREADS)
    products = _product(a, b)
    np.testing.assert_array_equal(run.read(10, np.uint32, lanes), _bits(products, 0))
    np.testing.assert_array_equal(run.read(11, np.uint32, lanes), _bits(products, 32))


@pytest.mark.parametrize("hw", ["dg2", "pvc"])
def test_ngen_division_by_56_reads_the_multiplier_unsigned(hw):
    """x / 56 = (mulhi(x:d, 0x92492493:ud) >> 5) + (x < 0): the high half must come from the
    unsigned multiplier; sign-extending it would give 56 / 56 = -1."""
    accwr = " {AccWrEn}" if hw == "dg2" else ""
    x = np.array([[56, 112, -56, 0, 2**31 - 1, -(2**31), 55, 1000]] * THREADS, dtype=np.int32)
    run = execute(
        f"mul (8|M0) acc0.0<1>:d r20.0<1;1,0>:d 0x2493:uw\nmach (8|M0) r10.0<1>:d r20.0<1;1,0>:d 0x92492493:ud{accwr}",
        hw,
        inputs={20: x},
        simd=8,
        threads=THREADS,
    )
    expected = [[(int(v) * 0x92492493) >> 32 for v in row] for row in x]
    np.testing.assert_array_equal(run.read(10, np.int32, 8), np.array(expected, dtype=np.int64).astype(np.int32))
    quotient = (run.read(10, np.int32, 8).astype(np.int64) >> 5) + (x < 0)
    np.testing.assert_array_equal(quotient, np.trunc(x / 56).astype(np.int64))


@pytest.mark.parametrize("hw", ["dg2", "pvc"])
def test_the_implicit_accumulator_follows_the_destination_subregister(hw):
    """`mul acc0.3` + `mach r10.3`: channel 3 of the accumulator, not channel 0."""
    accwr = " {AccWrEn}" if hw == "dg2" else ""
    a = np.array([[0, 0, 0, 0x12345678, 9, 9, 9, 9]] * THREADS, dtype=np.int32)
    b = np.array([[0, 0, 0, 0x7654321, 0, 0, 0, 0]] * THREADS, dtype=np.int32)
    run = execute(
        "mul (8|M0) acc0.0<1>:d r20.0<1;1,0>:d r30.0<2;1,0>:uw\n"  # acc0.0 gets 9*0 etc.
        "mul (1|M0) acc0.3<1>:d r20.3<0;1,0>:d r30.6<0;1,0>:uw\n"
        f"mach (1|M0) r10.3<1>:d r20.3<0;1,0>:d r30.3<0;1,0>:d{accwr}",
        hw,
        inputs={20: a, 30: b},
        simd=8,
        threads=THREADS,
    )
    assert run.read(10, np.int32, 4)[0, 3] == (0x12345678 * 0x7654321) >> 32


def test_mac_reads_the_accumulator_at_the_destination_subregister():
    a = np.arange(8 * THREADS, dtype=np.int32).reshape(THREADS, 8)
    run = execute(
        "mov (8|M0) acc0.0<1>:d r20.0<1;1,0>:d\nmac (2|M0) r10.4<1>:d r20.0<1;1,0>:d 3:w",
        "dg2",
        inputs={20: a},
        simd=8,
        threads=THREADS,
    )
    np.testing.assert_array_equal(run.read(10, np.int32, 6)[:, 4:6], a[:, 4:6] + 3 * a[:, 0:2])


def test_xegen_encodes_these_instructions_as_iga64_does(iga64):
    """One iga64 call per platform over every instruction text the tests above run."""
    for hw in PLATFORM_FORMS:
        texts = sorted({_program(hw, a, b, t) for _, a, b, t in (p for p in PAIRS if p[0] == hw)})
        extra = [
            "mul (1|M0) acc0.3<1>:d r20.3<0;1,0>:d r30.6<0;1,0>:uw",
            "mach (1|M0) r10.3<1>:d r20.3<0;1,0>:d r30.3<0;1,0>:d" + (" {AccWrEn}" if hw != "pvc" else ""),
        ]
        source = "\n".join(texts + extra) + "\n"
        ours = assemble(source, hwlib.platform(hw))
        theirs = oracles.iga64_assemble(source, hw)
        assert ours == theirs, hw
