"""fma=dpasw: XeHPG's fused thread pairs share the A operand (`xegen/plan/dpasw.py`).

The IR interpreter executes dpasw as the hardware does (the pair's A), so `check_ir` proves the
halved A loads, the pair's A origins and the paired C layout together; the native kernels are
checked in the simulator by tests/test_end_to_end.py."""

from __future__ import annotations

import numpy as np
import pytest

from xegen import hw
from xegen.build import check_ir
from xegen.build.builder import build_body
from xegen.cli import main
from xegen.conv import make_problem
from xegen.errors import ConfigError
from xegen.ir import Call, Send, Var, walk
from xegen.ir.types import F32, PTR
from xegen.pipeline import build_kernel
from xegen.plan import choose_config, formulate
from xegen.plan.dpasw import paired_c_layout
from xegen.plan.heuristic import config_space
from xegen.plan.kernel import plan_kernel
from xegen.plan.tiles import blocked_c_layout

from ..conv.shapes import RESNET, scaled

PROBLEM = "mb1ic32ih8oc64oh8kh3ph1"  # M = 64, N = 64: two threads along N


def config_for(dt="f16", direction="FWD_B", platform="xehpg", desc=PROBLEM, **overrides):
    return choose_config(formulate(make_problem(desc, direction, dt)), hw.platform(platform), overrides)


# Layout -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("m_tile, rows", [(32, 8), (16, 8), (8, 8), (4, 4), (2, 2)])
def test_paired_c_layout_holds_what_each_dpasw_computes(m_tile, rows):
    """The j-th dpasw of a column block reads A-register rows j*rows/2.. of both threads of the pair:
    result row r < rows/2 is tile row j*rows/2 + r (even thread's half), the others tile row
    m_tile/2 + j*rows/2 + r - rows/2 (odd thread's half); blocks are rows x 8, row-major."""
    cols, block_cols = 16, 8
    layout = paired_c_layout(Var("acc", PTR), F32, m_tile, cols, rows, block_cols)
    expected = np.full((m_tile, cols), -1)
    half = rows // 2
    for j in range(m_tile // rows):
        for nb in range(cols // block_cols):
            for r in range(rows):
                tile_row = j * half + r if r < half else m_tile // 2 + j * half + r - half
                for c in range(block_cols):
                    expected[tile_row, nb * block_cols + c] = ((j * 2 + nb) * rows + r) * block_cols + c
    np.testing.assert_array_equal(layout.offset_map, expected)
    identity = blocked_c_layout(Var("acc", PTR), F32, m_tile, cols, rows, block_cols)
    assert layout.same_placement(identity) == (m_tile == rows)  # one block: nothing to pair


# Heuristic and overrides ------------------------------------------------------------------------


@pytest.mark.parametrize("dt", ["f16", "bf16", "u8:s8:f32", "s8:s8:s32"])
def test_heuristic_offers_dpasw_on_xehpg_when_pairs_share_a(dt):
    """With N = 64 the plain group has tg_n = 2, so the fused thread pairs may share A: the space
    holds dpasw candidates (the estimate ranks them against dpas), each in pairs along N."""
    space = config_space(formulate(make_problem(PROBLEM, "FWD_B", dt)), hw.XEHPG, {})
    fused = [c for c in space if c.fma == "dpasw"]
    assert fused and all(c.tg_n % 2 == 0 and c.m_tile % 2 == 0 and c.a_rows == c.m_tile // 2 for c in fused)


@pytest.mark.parametrize(
    "platform, desc, overrides",
    [
        ("xehpc", PROBLEM, {}),  # no dpasw
        ("xehpg", "mb1ic32ih8oc8oh8kh3ph1", {}),  # N = 8: one thread along N, no partner
        ("xehpg", PROBLEM, {"tg_n": 3}),  # an odd row of threads pairs threads of two M tiles
    ],
)
def test_heuristic_keeps_dpas_where_pairs_cannot_share_a(platform, desc, overrides):
    assert config_for("bf16", platform=platform, desc=desc, **overrides).fma == "dpas"


def test_forced_dpasw_rounds_the_thread_group_and_tile_up_to_pairs():
    config = config_for(desc="mb1ic32ih3oc8oh3kh3ph1", fma="dpasw")  # M = 9, N = 8
    assert (config.fma, config.tg_n % 2, config.m_tile % 2) == ("dpasw", 0, 0)


@pytest.mark.parametrize(
    "dt, platform, overrides, message",
    [
        ("f16", "xehpc", {"fma": "dpasw"}, "fma=dpasw: XeHPC has no dpasw"),
        ("f16", "xelp", {"fma": "dpasw"}, "fma=dpasw: XeLP has no dpas"),
        ("f16", "xehpg", {"fma": "dpasw", "tg_n": 3}, "tg_n=3 is odd"),
        ("bf16", "xehpg", {"fma": "dpasw", "m_tile": 5}, "m_tile=5 is odd"),
        ("f32", "xehpg", {"fma": "dpasw"}, "fma=dpasw needs 16-bit float or int8"),
    ],
)
def test_forced_dpasw_where_it_cannot_work_is_a_config_error(dt, platform, overrides, message):
    with pytest.raises(ConfigError, match=message):
        config_for(dt, platform=platform, **overrides)


def test_forced_dpasw_on_xehpc_is_one_line_on_the_command_line(capsys):
    status = main(["conv", PROBLEM, "--dt=bf16", "--hw=xehpc", "--config", "fma=dpasw"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("xegen: error: fma=dpasw: XeHPC has no dpasw") and err.count("\n") == 1


# The kernel IR --------------------------------------------------------------------------------


def _a_register_bytes(overrides: dict, dt: str = "f16") -> int:
    """Bytes of A that one thread's loads bring into registers per K iteration (from global memory
    with slm=0, from SLM with slm=1), in the builder's body."""
    problem = make_problem(PROBLEM, "FWD_B", dt)
    gemm = formulate(problem)
    plan = plan_kernel(gemm, choose_config(gemm, hw.XEHPG, overrides), hw.XEHPG)
    space = "slm" if plan.config.slm else "global"
    return sum(
        node.func.register_bytes
        for node in walk(build_body(plan))
        if isinstance(node, Call)
        and isinstance(node.func, Send)
        and node.func.op == "load"
        and node.func.space == space
        and node.args[-2].buffer.name == "a_load"
    )


@pytest.mark.parametrize("slm", [0, 1])
def test_each_thread_of_a_pair_loads_half_of_a(slm):
    same = {"tg_m": 2, "tg_n": 2, "m_tile": 16, "n_tile": 16, "k_block": 32, "slm": slm, "slm_bufs": 1, "gmem_bufs": 1}
    dpas, dpasw = _a_register_bytes({**same, "fma": "dpas"}), _a_register_bytes({**same, "fma": "dpasw"})
    assert dpas == 16 * 32 * 2 and dpasw == dpas // 2


CASES = [  # (layer, direction, data types, overrides): direct and SLM loads, paired and identity C
    (3, "FWD_B", "f16", {"m_tile": 16, "slm": 0}),  # N = 8: the odd threads' N tiles are masked off
    (5, "FWD_B", "f16", {"m_tile": 16, "n_tile": 16, "slm": 0}),  # both threads of a pair store C
    (5, "FWD_B", "f16", {"m_tile": 16, "n_tile": 16, "tg_m": 1, "slm": 1}),
    (5, "FWD_B", "bf16", {"n_tile": 16}),
    (3, "FWD_B", "u8:s8:f32", {"m_tile": 16}),
    (5, "FWD_B", "s8:s8:s32", {"m_tile": 16, "n_tile": 16, "slm": 1}),
    (5, "BWD_D", "bf16", {"m_tile": 16, "n_tile": 16}),
    (5, "BWD_D", "bf16", {"m_tile": 16, "n_tile": 16, "slm": 0}),  # stride 2: masked A rows
    (5, "BWD_D", "f16", {"slm": 1, "tg_m": 2, "n_tile": 16}),
    (5, "BWD_WB", "bf16", {"m_tile": 16, "n_tile": 16}),
]


@pytest.mark.parametrize(
    "layer, direction, dt, overrides",
    CASES,
    ids=[f"{layer}-{direction}-{dt}-{len(o)}" for layer, direction, dt, o in CASES],
)
def test_scaled_resnet_layers_with_dpasw_match_numpy_in_the_interpreter(layer, direction, dt, overrides):
    problem = make_problem(scaled(RESNET[layer]), direction, dt, mb=1)
    kernel = build_kernel(problem, "xehpg", {"fma": "dpasw", **overrides})
    # (BWD_WB's bias sums are plain dpas of one row: each thread's own B, nothing shared)
    dpasw = [n for n in walk(kernel.body) if isinstance(n, Call) and n.func.name == "dpas" and n.func.rcount > 1]
    assert dpasw and all(n.func.dpasw for n in dpasw)
    for result in check_ir(kernel, seed=layer):
        assert result.ok, f"{kernel.config}: {result}"
