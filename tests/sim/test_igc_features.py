"""IGC's code for features the rest of the corpus does not reach, run on tgllp, dg2 and pvc
and checked against numpy (or Python integers): `__local` atomics (SLM addresses with bit 28
set), 64-bit integer math and 32-bit division by constants (mul + mach/macl with unsigned
multipliers), fp64 division and square root (math.invm/rsqtm + madm on XeHPC, IGC's
emulation with scratch space on XeLP/XeHPG), a private array that spills (scratch on
XeLP/XeHPC, private memory on XeHPG), local ids of 3-D work-groups (hardware- and
runtime-generated), and XeHPC 2D block loads (plain, VNNI, transposed, out of bounds).

The kernels are tests/sim/kernels/<name>.cl; SWSB hazard checks are on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.emit.corpus import Variant
from tests.sim.test_igc_kernels import Build, Source
from xegen import sim
from xegen.emit import disassemble
from xegen.emit.zebin import read_zebin

KERNELS = Path(__file__).resolve().parent / "kernels"
DEVICES = ("tgllp", "dg2", "pvc")
# IGC emulates fp64 on tgllp and dg2 when the front end is told the extension exists
FP64_EMULATION = "-cl-ext=+cl_khr_fp64"


@dataclass(frozen=True)
class Case:
    """launch(rng) -> (arguments, global size, local size); check(arguments) asserts."""

    launch: Callable[[np.random.Generator], tuple[list, tuple, tuple]]
    check: Callable[[list], None]


def _wrap64(value: int) -> int:
    return (value + 2**63) % 2**64 - 2**63


def _truncating_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def _c_rem(a: int, b: int) -> int:
    return a - _truncating_div(a, b) * b


# --- local atomics ----------------------------------------------------------------------------------

N_ATOMICS, LOCAL_ATOMICS = 1000, 64


def local_atomics_launch(rng):
    x = rng.integers(-5000, 5000, N_ATOMICS).astype(np.int32)
    out = np.zeros(9 + N_ATOMICS, np.int32)
    return [out, x, sim.local(4 * LOCAL_ATOMICS), N_ATOMICS], (1024,), (LOCAL_ATOMICS,)


def local_atomics_check(args):
    out, x, _, n = args
    np.testing.assert_array_equal(out[:8], np.bincount(x & 7, minlength=8))
    assert out[8] == int(x.astype(np.int64).sum())
    expected = np.zeros(n, np.int64)
    for start in range(0, n, LOCAL_ATOMICS):  # slot s of a group: max of the items k with k*7 % size == s
        size = min(LOCAL_ATOMICS, 1024 - start)
        partial = np.zeros(size, np.int64)
        for k in range(min(size, n - start)):
            partial[k * 7 % size] = max(partial[k * 7 % size], x[start + k])
        expected[start : start + size] = partial[: max(0, min(size, n - start))]
    np.testing.assert_array_equal(out[9:], expected)


# --- 64-bit integer math ----------------------------------------------------------------------------

N_INT64 = 300


def int64_launch(rng):
    a = rng.integers(-(2**63), 2**63, N_INT64, dtype=np.int64)
    b = rng.integers(-(2**31), 2**31, N_INT64, dtype=np.int64)
    b[::7] = rng.integers(-(2**63), 2**63, b[::7].size, dtype=np.int64)
    c = rng.integers(-(2**31), 2**31, N_INT64, dtype=np.int64).astype(np.int32)
    a[:6] = [2**63 - 1, -(2**63), 0, -1, 56, 1000003]
    b[:6] = [-1, 7, 0, 3, -(2**63), 1]
    c[:6] = [56, -56, 2**31 - 1, -(2**31), 0, 55]
    return [np.zeros(10 * N_INT64, np.int64), a, b, c, N_INT64], (N_INT64,), (32,)


def int64_check(args):
    out, a, b, c, n = args
    expected = []
    for x, y, v in zip(a.tolist(), b.tolist(), c.tolist(), strict=True):
        u = v % 2**32
        div = _wrap64(_truncating_div(x, y)) if y else 0
        expected += [
            _wrap64(x * y),
            div,
            _wrap64(_c_rem(x, y)) if y else 0,
            _truncating_div(x, 7),
            _wrap64((x % 2**64) // 1000003),
            (x * y) >> 64,
            _truncating_div(v, 56) + _c_rem(v, 13) * 1000,
            u // 56 + (u % 10) * 100000000000,
            _wrap64((x >> (y & 63)) ^ _wrap64(x << (v & 63))),
            _wrap64(((x % 2**64) * (y % 2**64)) >> 64),
        ]
    np.testing.assert_array_equal(out.reshape(n, 10), np.array(expected, dtype=np.int64).reshape(n, 10))


# --- fp64 division and square root --------------------------------------------------------------------


def fp64_launch(rng):
    special_a = [
        1.0,
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        5e-324,
        1e308,
        3.0,
        2.0,
        9.0,
        1e-310,
        -4.0,
        0.1,
        7.0,
        1.0,
        2.0**-1074,
        1.5e-300,
        1e300,
        6.0,
    ]
    special_b = [
        3.0,
        5.0,
        0.0,
        2.0,
        np.inf,
        1.0,
        2.0,
        1e-10,
        0.0,
        4.0,
        3.0,
        1e10,
        2.0,
        3.0,
        7.0,
        -0.0,
        0.5,
        1e300,
        1e-300,
        3.0,
    ]
    count = 300
    scale = 10.0 ** rng.integers(-300, 300, (2, count))
    a = np.concatenate([special_a, rng.standard_normal(count) * scale[0]])
    b = np.concatenate([special_b, rng.standard_normal(count) * scale[1]])
    a[-40:] = np.abs(a[-40:])  # square roots of positive numbers too
    return [np.zeros(3 * a.size), a, b, a.size], (a.size,), (16,)


def fp64_check(args):
    out, a, b, _ = args
    with np.errstate(all="ignore"):
        expected = np.stack([a / b, np.sqrt(a), 1.0 / b], axis=-1).reshape(-1)
    same = (out.view(np.int64) == expected.view(np.int64)) | (np.isnan(out) & np.isnan(expected))
    assert same.all(), [(int(i), out[i], expected[i]) for i in np.nonzero(~same)[0][:5]]


# --- spills -----------------------------------------------------------------------------------------

N_SPILL = 96


def spill_launch(rng):
    x = rng.standard_normal(N_SPILL).astype(np.float32)
    index = rng.integers(0, 1 << 20, 16 * N_SPILL).astype(np.int32)
    return [np.zeros(N_SPILL, np.float32), x, index, N_SPILL], (N_SPILL,), (32,)


def spill_check(args):
    out, x, index, n = args
    expected = np.zeros(n, np.float32)
    for i in range(n):
        p = x[(i + np.arange(512)) % n] * np.arange(512, dtype=np.float32)
        s = np.float32(0)
        for k in range(16):
            s = np.float32(s + p[index[i * 16 + k] & 511])
        expected[i] = s
    np.testing.assert_array_equal(out, expected)


# --- 3-D local ids ----------------------------------------------------------------------------------

IDS_LAUNCHES = {  # global size, local size: the hardware's ids (xzy walk), the runtime's, edge groups
    "hardware": ((8, 6, 4), (4, 3, 2)),
    "runtime": ((7, 10, 4), (3, 5, 2)),
}


def ids3d_case(which: str) -> Case:
    global_size, local_size = IDS_LAUNCHES[which]

    def launch(rng):
        return [np.full(4 * int(np.prod(global_size)), -1, np.int32)], global_size, local_size

    def check(args):
        g = np.stack(np.meshgrid(*[np.arange(n) for n in global_size], indexing="ij"), axis=-1)
        lid, group = g % local_size, g // local_size
        size = np.minimum(local_size, np.array(global_size) - group * local_size)  # edge groups are smaller
        linear = lid[..., 0] + size[..., 0] * (lid[..., 1] + size[..., 1] * lid[..., 2])
        expected = np.concatenate([lid + 1000 * group, linear[..., None]], axis=-1).transpose(2, 1, 0, 3)
        np.testing.assert_array_equal(args[0].reshape(expected.shape), expected)

    return Case(launch, check)


# --- XeHPC 2D block loads ---------------------------------------------------------------------------

BLOCK_W, BLOCK_H = 64, 40
BLOCK_COORDS = np.array([[0, 0], [16, 8], [-4, -3], [56, 36], [48, 30], [-16, 0], [2, -15], [60, 0]], np.int32)


def block2d_launch(rng):
    in16 = rng.integers(0, 1 << 16, BLOCK_W * BLOCK_H).astype(np.uint16)
    in32 = rng.integers(0, 1 << 32, BLOCK_W * BLOCK_H, dtype=np.uint64).astype(np.uint32)
    g = len(BLOCK_COORDS)
    return (
        [
            np.zeros(256 * g, np.uint16),
            np.zeros(128 * g, np.uint32),
            np.zeros(128 * g, np.uint32),
            in16,
            in32,
            BLOCK_COORDS.reshape(-1),
            BLOCK_W,
            BLOCK_H,
        ],
        (16 * g,),
        (16,),
    )


def block2d_check(args):
    plain, packed, transposed, in16, in32 = args[:5]
    m16, m32 = in16.reshape(BLOCK_H, BLOCK_W), in32.reshape(BLOCK_H, BLOCK_W)

    def at(m, y, x):
        return int(m[y, x]) if 0 <= y < BLOCK_H and 0 <= x < BLOCK_W else 0  # outside: zero

    g = len(BLOCK_COORDS)
    want_plain, want_packed, want_transposed = (np.zeros((g, k, 16), np.int64) for k in (16, 8, 8))
    for b, (x, y) in enumerate(BLOCK_COORDS.tolist()):
        for lane in range(16):
            for k in range(16):  # two 16-wide blocks of 8 rows; lane = column
                want_plain[b, k, lane] = at(m16, y + k % 8, x + 16 * (k // 8) + lane)
            for k in range(8):
                want_packed[b, k, lane] = at(m16, y + 2 * k, x + lane) | at(m16, y + 2 * k + 1, x + lane) << 16
                want_transposed[b, k, lane] = at(m32, y + lane, x + k)  # lane = row of memory
    np.testing.assert_array_equal(plain.reshape(g, 16, 16), want_plain)
    np.testing.assert_array_equal(packed.reshape(g, 8, 16), want_packed)
    np.testing.assert_array_equal(transposed.reshape(g, 8, 16), want_transposed)


# ---------------------------------------------------------------------------------------------------

CASES = {
    "local_atomics": Case(local_atomics_launch, local_atomics_check),
    "int64_math": Case(int64_launch, int64_check),
    "fp64_div_sqrt": Case(fp64_launch, fp64_check),
    "spill": Case(spill_launch, spill_check),
    "ids3d-hardware": ids3d_case("hardware"),
    "ids3d-runtime": ids3d_case("runtime"),
    "block2d": Case(block2d_launch, block2d_check),
}


def _variant(name: str, device: str) -> Variant:
    if name == "fp64_div_sqrt" and device != "pvc":
        return Variant(device, "-cl-std=CL2.0 -igc_opts 'EnableDPEmulation=1'", "fp64emu", FP64_EMULATION)
    return Variant(device, "-cl-std=CL2.0")


BUILDS = [(name, device) for name in CASES for device in DEVICES if name != "block2d" or device == "pvc"]


@pytest.mark.parametrize("name, device", BUILDS, ids=[f"{n}-{d}" for n, d in BUILDS])
def test_igc_feature_kernel_matches_numpy_with_hazard_checks(corpus, name, device):
    source = name.split("-")[0]
    binary = corpus.zebin(Build(Source((KERNELS / f"{source}.cl").read_text()), _variant(source, device)))
    case = CASES[name]
    arguments, global_size, local_size = case.launch(np.random.default_rng(7))
    sim.run(binary, source, arguments, global_size, local_size)
    case.check(arguments)


def test_the_features_use_the_instructions_and_memory_they_are_meant_to(corpus):
    """The corpus reaches what it claims: macros on XeHPC, scratch or private memory for spills,
    2D block messages, bit 28 in SLM addresses."""

    def build(name, device):
        kernel = read_zebin(
            corpus.zebin(Build(Source((KERNELS / f"{name}.cl").read_text()), _variant(name, device)))
        ).kernel(name)
        return kernel, disassemble(kernel.code, device)

    _, text = build("fp64_div_sqrt", "pvc")
    assert "math.invm" in text and "math.rsqtm" in text and "madm" in text
    for device in DEVICES:
        kernel, _ = build("spill", device)
        assert any(b.size for b in kernel.per_thread_memory_buffers)
    assert any(b.type == "scratch" for b in build("spill", "pvc")[0].per_thread_memory_buffers)
    assert any(b.type == "scratch" for b in build("fp64_div_sqrt", "dg2")[0].per_thread_memory_buffers)
    _, text = build("block2d", "pvc")
    assert (
        sum(" 0x02800203 " in line or " 0x02800283 " in line or " 0x02808403 " in line for line in text.splitlines())
        == 3
    )
    _, text = build("local_atomics", "pvc")
    assert "268435456" in text or "0x10000000" in text
