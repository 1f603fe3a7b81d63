"""mad kernels on XeHPC run SIMD32 where N fills it: a register region spans at most two GRFs,
which on XeHPC's 64-byte GRFs is 32 dwords (16 on XeLP's and XeHPG's 32-byte GRFs).  A SIMD32
f32 mad takes the ALU two clocks and the issue one, so the loop's other instructions no longer
halve its rate."""

from __future__ import annotations

import pytest

from tests.lower.harness import iga_report
from xegen import hw
from xegen.conv import make_problem
from xegen.emit.decoder import decode
from xegen.pipeline import compile_problem
from xegen.plan import formulate
from xegen.plan.heuristic import _tile_options, choose_config
from xegen.verify import verify

LAYER = "mb1ic16ih8oc64oh8kh3ph1"


@pytest.mark.parametrize(
    "target, direction, simd",
    [
        ("xelp", "FWD_B", 16),
        ("xehpg", "FWD_B", 16),
        ("xehpc", "FWD_B", 32),  # N: 64 output channels
        ("xehpc", "BWD_D", 16),  # N: 16 input channels, which SIMD32 would pad to 32
        ("xehpc", "BWD_WB", 16),  # backward weights keep SIMD16
    ],
)
def test_mad_lanes_fill_two_grfs_where_n_fills_them(target, direction, simd):
    config = choose_config(formulate(make_problem(LAYER, direction, "f32")), hw.platform(target))
    assert config.fma == "mad" and config.simd == simd


@pytest.mark.parametrize("direction", ["FWD_B", "BWD_D", "BWD_WB"])
def test_simd32_mad_kernels_verify_and_iga_takes_them(direction):
    compilation = compile_problem(make_problem(LAYER, direction, "f32"), "xehpc", {"simd": 32})
    mads = [i for i in decode(compilation.compiled.code, "xehpc") if i.opcode == "mad"]
    assert any(i.exec_size == 32 for i in mads)
    assert iga_report(compilation.compiled.code, "xehpc") == ""
    assert verify(compilation).ok


@pytest.mark.parametrize(
    "channels, simd, n_tiles",
    [(64, 32, [64, 32]), (32, 32, [32]), (64, 16, [32, 16]), (32, 16, [16])],
)
def test_two_registers_of_columns_where_n_has_them(channels, simd, n_tiles):
    # SIMD32 offers 64 columns where N has 64; SIMD16 offers 32 only where N has two such tiles
    gemm = formulate(make_problem(f"mb1ic16ih8oc{channels}oh8kh3ph1", "FWD_B", "f32"))
    assert sorted(set(_tile_options("mad", simd, gemm, hw.platform("xehpc"))[1]), reverse=True) == n_tiles
