"""The IEEE math macros (math.invm, math.rsqtm, madm with mme operands) run the way IGC uses
them: its fp64 division and square-root sequences (copied from its pvc output) give the
correctly rounded result in every cr0 rounding mode, checked against exact rational
arithmetic; early-out operands (zeros, infinities, NaN, negative roots) set the (eo) flag
and give the IEEE result at once; denormals follow cr0.  The texts are also assembled by
iga64, which must give the same bytes as xegen's assembler."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from tests.sim.harness import execute
from xegen import hw as hwlib
from xegen import oracles
from xegen.emit import assemble

THREADS = 2
LANES = 16
MODES = {"rne": 0, "ru": 1, "rd": 2, "rtz": 3}  # cr0.0[5:4]

SETUP = """(W) or (1|M0) cr0.0<1>:ud cr0.0<0;1,0>:ud {cr0}:uw
(W) mov (16|M0) r26.0<1>:{t} 1.0:{t}
(W) mov (16|M0) r28.0<1>:{t} 0.0:{t}
(W) mov (16|M0) r34.0<1>:{t} 1.5:{t}
(W) mov (16|M0) r36.0<1>:{t} 0.5:{t}
"""
# a = r9, b = r5 (IGC's XeHPC sequence: reciprocal, then Newton steps with exact residuals)
DIVIDE = """math.invm (16|M0) (eo)f3.0 r116.mme0:{t} r9.nomme:{t} r5.nomme:{t}
madm (16|M0) r112.mme1:{t} r28.nomme:{t} r9.nomme:{t} r116.mme0:{t}
madm (16|M0) acc0.mme2:{t} r26.nomme:{t} -r5.nomme:{t} r116.mme0:{t}
madm (16|M0) acc2.mme3:{t} r9.nomme:{t} -r5.nomme:{t} r112.mme1:{t}
madm (16|M0) r100.mme4:{t} r116.mme0:{t} acc0.mme2:{t} r116.mme0:{t}
madm (16|M0) r96.mme5:{t} r26.nomme:{t} -r5.nomme:{t} r100.mme4:{t}
madm (16|M0) r116.mme6:{t} r116.mme0:{t} acc0.mme2:{t} r100.mme4:{t}
madm (16|M0) r112.mme7:{t} r112.mme1:{t} acc2.mme3:{t} r100.mme4:{t}
madm (16|M0) r100.mme0:{t} r100.mme4:{t} r116.mme6:{t} r96.mme5:{t}
madm (16|M0) acc0.mme1:{t} r9.nomme:{t} -r5.nomme:{t} r112.mme7:{t}
madm (16|M0) r116.nomme:{t} r112.mme7:{t} acc0.mme1:{t} r100.mme0:{t}
"""
# a = r13 (IGC's XeHPC square root: reciprocal square root, one coupled Newton step, exact residual)
SQRT = """math.rsqtm (16|M0) (eo)f2.0 r88.mme0:{t} r13.nomme:{t}
madm (16|M0) r80.mme1:{t} r28.nomme:{t} r36.nomme:{t} r88.mme0:{t}
madm (16|M0) r72.mme2:{t} r28.nomme:{t} r13.nomme:{t} r88.mme0:{t}
madm (16|M0) r76.mme3:{t} r36.nomme:{t} -r72.mme2:{t} r80.mme1:{t}
madm (16|M0) acc0.mme5:{t} r26.nomme:{t} r34.nomme:{t} r76.mme3:{t}
madm (16|M0) r88.mme6:{t} r28.nomme:{t} r76.mme3:{t} r72.mme2:{t}
madm (16|M0) r76.mme7:{t} r28.nomme:{t} r76.mme3:{t} r80.mme1:{t}
madm (16|M0) r88.mme6:{t} r72.mme2:{t} acc0.mme5:{t} r88.mme6:{t}
madm (16|M0) r84.mme5:{t} r80.mme1:{t} acc0.mme5:{t} r76.mme7:{t}
madm (16|M0) acc0.mme1:{t} r13.nomme:{t} -r88.mme6:{t} r88.mme6:{t}
madm (16|M0) r88.nomme:{t} r88.mme6:{t} acc0.mme1:{t} r84.mme5:{t}
"""
KEEP_DENORMALS = 0x4C0


def _program(body: str, t: str, mode: str = "rne", cr0: int = KEEP_DENORMALS) -> str:
    return SETUP.format(cr0=cr0 | MODES[mode] << 4, t=t) + body.format(t=t)


def _rounded(exact: Fraction, dtype, mode: str) -> float:
    """IEEE rounding of an exact value, by stepping from the nearest value numpy gives."""
    nearest = dtype(float(exact)) if dtype == np.float64 else dtype(np.float64(float(exact)))
    if dtype == np.float32:  # float(exact) rounded twice could be off: fix up by comparison
        candidates = [np.nextafter(nearest, -np.inf), nearest, np.nextafter(nearest, np.inf)]
        nearest = min(
            candidates, key=lambda c: (abs(Fraction(float(c)) - exact), int(np.float32(c).view(np.int32)) & 1)
        )
    if mode == "rne" or Fraction(float(nearest)) == exact:
        return nearest
    below = nearest if Fraction(float(nearest)) < exact else np.nextafter(nearest, dtype(-np.inf))
    above = nearest if Fraction(float(nearest)) > exact else np.nextafter(nearest, dtype(np.inf))
    if mode == "ru":
        return above
    if mode == "rd":
        return below
    return below if exact > 0 else above  # toward zero


def _operands(rng, dtype, count: int, positive: bool = False) -> np.ndarray:
    info = np.finfo(dtype)
    exponents = rng.integers(info.minexp // 2, info.maxexp // 2, count)
    values = (rng.uniform(1, 2, count) * np.exp2(exponents.astype(np.float64))).astype(dtype)
    if not positive:
        values *= np.where(rng.integers(0, 2, count) == 1, 1, -1).astype(dtype)
    return values


CASES = [(t, mode) for t in ("df", "f") for mode in MODES]


@pytest.mark.parametrize("t, mode", CASES, ids=[f"{t}-{m}" for t, m in CASES])
def test_igc_division_sequence_is_correctly_rounded(t, mode):
    dtype = np.float64 if t == "df" else np.float32
    rng = np.random.default_rng(11)
    a = _operands(rng, dtype, THREADS * LANES).reshape(THREADS, LANES)
    b = _operands(rng, dtype, THREADS * LANES).reshape(THREADS, LANES)
    a[0, :4] = [6, 1, 3, 9]  # exact quotients (6/3, 1/4, ...) stay exact in every mode
    b[0, :4] = [3, 4, -0.5, 3]
    run = execute(_program(DIVIDE, t, mode), "pvc", inputs={9: a, 5: b}, simd=LANES, threads=THREADS)
    got = run.read(116, dtype, LANES)
    expected = np.array(
        [
            [_rounded(Fraction(float(x)) / Fraction(float(y)), dtype, mode) for x, y in zip(ra, rb, strict=True)]
            for ra, rb in zip(a, b, strict=True)
        ],
        dtype=dtype,
    )
    np.testing.assert_array_equal(got, expected)
    assert (run.flag(3) & 0xFFFF == 0).all()  # no early out


@pytest.mark.parametrize("t, mode", CASES, ids=[f"{t}-{m}" for t, m in CASES])
def test_igc_square_root_sequence_is_correctly_rounded(t, mode):
    dtype = np.float64 if t == "df" else np.float32
    a = _operands(np.random.default_rng(12), dtype, THREADS * LANES, positive=True).reshape(THREADS, LANES)
    a[0, :4] = [4, 2.25, 1, 1 << 20]  # perfect squares stay exact
    run = execute(_program(SQRT, t, mode), "pvc", inputs={13: a}, simd=LANES, threads=THREADS)
    got = run.read(88, dtype, LANES)

    def exact_root(x) -> Fraction:
        """sqrt(x) rounded in `mode`: bracket it between neighbours by squaring exactly."""
        guess = dtype(np.sqrt(np.float64(x)))
        target = Fraction(float(x))
        for candidate in (np.nextafter(guess, dtype(-np.inf)), guess, np.nextafter(guess, dtype(np.inf))):
            if Fraction(float(candidate)) ** 2 == target:
                return Fraction(float(candidate))
        # not exact: any value strictly between the neighbours around sqrt rounds like it
        low = max(c for c in (np.nextafter(guess, dtype(-np.inf)), guess) if Fraction(float(c)) ** 2 < target)
        high = np.nextafter(low, dtype(np.inf))
        middle = (Fraction(float(low)) + Fraction(float(high))) / 2
        above_middle = middle**2 < target
        # a point on the same side of the midpoint as sqrt(x), strictly inside (low, high)
        return (middle + Fraction(float(high))) / 2 if above_middle else (Fraction(float(low)) + middle) / 2

    expected = np.array([[_rounded(exact_root(x), dtype, mode) for x in row] for row in a], dtype=dtype)
    np.testing.assert_array_equal(got, expected)


def test_early_out_operands_set_the_flag_and_give_the_ieee_result():
    a = np.array(
        [[1.0, 0.0, -0.0, np.inf, np.nan, 5.0, -3.0, 0.0, 2.0, 1.0, np.inf, 7.0, 1.0, 1.0, 4.0, 9.0]] * THREADS
    )
    b = np.array([[0.0, 5.0, 2.0, 2.0, 1.0, np.inf, -0.0, 0.0, 4.0, 3.0, np.inf, np.nan, 1.0, 2.0, 2.0, 3.0]] * THREADS)
    run = execute(
        "(W) mov (1|M0) f3.0<1>:ud 0x0:ud\n(W) mov (1|M0) f2.0<1>:ud 0x0:ud\n"
        "math.invm (16|M0) (eo)f3.0 r116.mme0:df r9.nomme:df r5.nomme:df\n"
        "math.rsqtm (16|M0) (eo)f2.0 r88.mme0:df r9.nomme:df",
        "pvc",
        inputs={9: a, 5: b},
        simd=LANES,
        threads=THREADS,
    )
    with np.errstate(all="ignore"):
        quotient, root = a / b, np.sqrt(a)
    divide_early = ~(np.isfinite(a) & np.isfinite(b) & (a != 0) & (b != 0))
    root_early = ~(np.isfinite(a) & (a > 0))
    assert [bool(run.flag(3)[0] >> i & 1) for i in range(LANES)] == divide_early[0].tolist()
    assert [bool(run.flag(2)[0] >> i & 1) for i in range(LANES)] == root_early[0].tolist()
    got_quotient, got_root = run.read(116, np.float64, LANES), run.read(88, np.float64, LANES)
    np.testing.assert_array_equal(got_quotient.view(np.int64)[divide_early], quotient.view(np.int64)[divide_early])
    np.testing.assert_array_equal(got_root.view(np.int64)[root_early], root.view(np.int64)[root_early])
    # the others start the iteration: 1/b
    np.testing.assert_array_equal(got_quotient[~divide_early], 1.0 / b[~divide_early])


def test_denormal_operands_and_results_follow_cr0():
    """With cr0 keeping df denormals a tiny quotient is a denormal; without, it flushes to zero,
    and a denormal operand reads as zero: x / denormal is an early out giving infinity."""
    a = np.array([[1e-310, 1e-300, 3.0, 5e-324] * 4] * THREADS)
    b = np.array([[3.0, 1e10, 1e-310, 1.0] * 4] * THREADS)
    tiny = np.finfo(np.float64).tiny
    with np.errstate(over="ignore"):
        quotient = a / b
    kept = execute(_program(DIVIDE, "df"), "pvc", inputs={9: a, 5: b}, simd=LANES, threads=THREADS)
    np.testing.assert_array_equal(kept.read(116, np.float64, LANES), quotient)
    flushed = execute(_program(DIVIDE, "df", cr0=0), "pvc", inputs={9: a, 5: b}, simd=LANES, threads=THREADS)
    regular = (np.abs(a) >= tiny) & (np.abs(b) >= tiny)  # lanes the refinement is meant for
    np.testing.assert_array_equal(
        flushed.read(116, np.float64, LANES)[regular], np.where(np.abs(quotient) < tiny, 0.0, quotient)[regular]
    )
    early = execute(
        "(W) mov (1|M0) f3.0<1>:ud 0x0:ud\nmath.invm (16|M0) (eo)f3.0 r116.mme0:df r9.nomme:df r5.nomme:df",
        "pvc",
        inputs={9: a, 5: b},
        simd=LANES,
        threads=THREADS,
    )
    assert [bool(early.flag(3)[0] >> i & 1) for i in range(LANES)] == (~regular[0]).tolist()
    got = early.read(116, np.float64, LANES)
    assert np.all(got[np.abs(b) < tiny] == np.inf) and np.all(got[np.abs(a) < tiny] == 0.0)


def test_xegen_encodes_the_macros_as_iga64_does(iga64):
    for t in ("df", "f"):
        source = DIVIDE.format(t=t) + SQRT.format(t=t)
        assert assemble(source, hwlib.XEHPC) == oracles.iga64_assemble(source, "pvc"), t
