"""Kernels emitted by oneDNN's nGEN generator with its automatic SWSB (tests/sim/kernels/ngen,
README.md there) run on pvc as numpy says, with no SWSB hazard: nGEN's XeHPC code relies on the
systolic pipe reading dpas sources in order and reads just-written registers into a null
destination (its send write-after-read workaround).  gemm4 also needs NEO's dispatch ABI (its
prologue loads the local ids from the per-thread data), 2D block messages and mul + mach
division; gemm0..3 predicate their last loads off past the end of the buffers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.emit.iga_compare import assert_same_listing
from xegen import Error, oracles, sim
from xegen import hw as hwlib
from xegen.cli import main
from xegen.emit.zebin import read_zebin
from xegen.sim.program import Program

KERNELS = Path(__file__).parent / "kernels" / "ngen"
GROUPS, KBLOCKS = 3, 4


def _zebin(name: str, platform: str = "xehpc") -> bytes:
    return (KERNELS / f"{name}_{platform}.zebin").read_bytes()


def _listing(name: str) -> list[str]:
    kernel = read_zebin(_zebin(name)).kernel(name)
    program = Program(kernel.code, hwlib.XEHPC)
    return [program.text(i) for i in range(program.end)]


def _dpas_operands(rng, simd: int = 16):
    """A (groups, 8, 16k) and B (groups, 16k, 2 simd) as small integers (exact in f16 and f32),
    and their dpas layouts per k block: A's 8 rows of 16; B's column halves packed in pairs of k."""
    A = rng.integers(-3, 4, size=(GROUPS, 8, 16 * KBLOCKS)).astype(np.float16)
    B = rng.integers(-3, 4, size=(GROUPS, 16 * KBLOCKS, 2 * simd)).astype(np.float16)
    a = A.reshape(GROUPS, 8, KBLOCKS, 16).transpose(0, 2, 1, 3)
    b = B.reshape(GROUPS, KBLOCKS, 8, 2, 2, simd).transpose(0, 1, 4, 2, 5, 3)  # g, kb, half, k/2, n, k%2
    return A, B, np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1)


@pytest.mark.parametrize("variant", [0, 1, 2, 3])
def test_ngen_dpas_gemm_runs_clean(variant):
    A, B, a, b = _dpas_operands(np.random.default_rng(variant))
    alpha = 0.5 if variant == 1 else 1.0
    expected = np.einsum("gmk,gkn->gmn", A.astype(np.float64), B.astype(np.float64)) * alpha
    if variant == 3:  # the last-but-one k block once more: its A and B are still in registers
        last = slice(16 * (KBLOCKS - 2), 16 * (KBLOCKS - 1))
        expected += np.einsum("gmk,gkn->gmn", A[:, :, last].astype(np.float64), B[:, last].astype(np.float64))
    c = np.zeros(GROUPS * 8 * 32, np.float16 if variant == 2 else np.float32)
    sim.run(
        _zebin(f"gemm{variant}"),
        f"gemm{variant}",
        [a, b, c, KBLOCKS, np.float32(alpha)],
        (16 * GROUPS,),
        (16,),
        hw="pvc",
        check_hazards=True,
    )
    if variant == 2:  # row-major f16 tiles
        got = c.reshape(GROUPS, 8, 32)
    else:  # two 8x16 f32 halves per tile
        got = c.reshape(GROUPS, 2, 8, 16).transpose(0, 2, 1, 3).reshape(GROUPS, 8, 32)
    np.testing.assert_array_equal(got.astype(np.float64), expected)


def test_ngen_xehpg_dpas_gemm_runs_clean():
    """gemm3 on XeHPG (SIMD8 dpas): the same rule for a dpas overwriting an earlier dpas's src0."""
    A, B, a, b = _dpas_operands(np.random.default_rng(1), simd=8)
    last = slice(16 * (KBLOCKS - 2), 16 * (KBLOCKS - 1))
    expected = np.einsum("gmk,gkn->gmn", A.astype(np.float64), B.astype(np.float64))
    expected += np.einsum("gmk,gkn->gmn", A[:, :, last].astype(np.float64), B[:, last].astype(np.float64))
    c = np.zeros(GROUPS * 8 * 16, np.float32)
    result = sim.run(_zebin("gemm3", "xehpg"), "gemm3", [a, b, c, KBLOCKS], (8 * GROUPS,), (8,), check_hazards=True)
    assert result.simd == 8  # the gfx core of the note names dg2
    got = c.reshape(GROUPS, 2, 8, 8).transpose(0, 2, 1, 3).reshape(GROUPS, 8, 16)
    np.testing.assert_array_equal(got.astype(np.float64), expected)


def test_ngen_2d_block_gemm_with_local_ids_and_mach_division_runs_clean():
    rng = np.random.default_rng(4)
    groups = 5
    A = rng.integers(-3, 4, size=(8 * groups, 16 * KBLOCKS)).astype(np.float16)
    B = rng.integers(-3, 4, size=(16 * KBLOCKS, 32)).astype(np.float16)
    c = np.zeros((8 * groups, 32), np.float32)
    d = np.zeros(16 * groups, np.int32)
    sim.run(
        _zebin("gemm4"),
        "gemm4",
        [A.reshape(-1), B.reshape(-1), c.reshape(-1), d, KBLOCKS, 8 * groups],
        (16 * groups,),
        (16,),
        hw="pvc",
        check_hazards=True,
    )
    np.testing.assert_array_equal(c.astype(np.float64), A.astype(np.float64) @ B.astype(np.float64))
    np.testing.assert_array_equal(d, np.tile(2 * np.arange(16), groups))  # 2 * local id


def test_the_ngen_kernels_contain_what_the_rules_are_for():
    """The sequences the checker must accept are in the kernels (else the tests above prove less)."""
    gemm0 = _listing("gemm0")
    assert any(t.startswith("(W) mov (1|M0) null<1>:ud r") for t in gemm0)  # a discarded read of a GRF
    dpas = [t for t in _listing("gemm3") if "dpas" in t]
    assert "r104:f r64:f" in dpas[-2] and dpas[-1].split()[3] == "r64:f"  # overwrites the src0 before it
    listing4 = "\n".join(_listing("gemm4"))
    assert "mach (1|M0)" in listing4 and "acc0" in listing4


def test_an_ngen_zebin_names_its_platform_by_gfx_core(capsys, iga64):
    """nGEN's compatibility note carries the gfx core (XeHPC: 0xC08) and no product family; as NEO,
    that names pvc: `xegen disasm` without --hw prints what iga64 prints, `sim.run` needs no hw."""
    zebin = read_zebin(_zebin("gemm0"))
    assert zebin.product_family is None and zebin.gfx_core == hwlib.XEHPC.gfx_core == 0xC08
    assert zebin.platform is hwlib.XEHPC
    assert main(["disasm", str(KERNELS / "gemm0_xehpc.zebin")]) == 0
    listing = capsys.readouterr().out.split("\n", 1)[1]  # after "// kernel gemm0"
    assert_same_listing(listing, oracles.iga64_disassemble(zebin.kernel("gemm0").code, hwlib.XEHPC))
    A, B, a, b = _dpas_operands(np.random.default_rng(0))
    c = np.zeros(GROUPS * 8 * 32, np.float32)
    result = sim.run(_zebin("gemm0"), "gemm0", [a, b, c, KBLOCKS, np.float32(1)], (16 * GROUPS,), (16,))
    assert result.simd == 16 and result.groups == GROUPS
    with pytest.raises(Error, match="built for"):
        sim.run(_zebin("gemm0"), "gemm0", [a, b, c, KBLOCKS, np.float32(1)], (16 * GROUPS,), (16,), hw="dg2")
