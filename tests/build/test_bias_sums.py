"""BWD_WB's bias gradient (the column sums of diff_dst) inside the K loop: with dpas, one dpas of
repeat count 1 per K step and column block multiplies a row of ones by B as it lies in VNNI form;
with mad, a mad by 1 per K row.  The sums check against numpy in the IR interpreter."""

from __future__ import annotations

import pytest

from xegen.build import check_ir
from xegen.conv import make_problem
from xegen.ir import Call, walk
from xegen.ir.funcs import Dpas, Mad
from xegen.pipeline import build_kernel

LAYER = "mb1ic16ih8oc32oh8kh3ph1"  # K = 64 output positions


def loop_calls(kernel, func_type):
    return [node.func for node in walk(kernel.body) if isinstance(node, Call) and isinstance(node.func, func_type)]


@pytest.mark.parametrize(
    "hw, dt, overrides",
    [
        ("xehpg", "bf16", {"fma": "dpas", "slm": 0}),
        ("xehpg", "f16", {"fma": "dpasw"}),
        ("xehpc", "bf16", {}),
    ],
)
def test_systolic_bias_sums_are_one_row_dpas_calls(hw, dt, overrides):
    kernel = build_kernel(make_problem(LAYER, "BWD_WB", dt), hw, overrides)
    rows = [f for f in loop_calls(kernel, Dpas) if f.rcount == 1]
    config_simd = 16 if hw == "xehpc" else 8
    assert rows and all(f.exec_size == config_simd and not f.dpasw for f in rows)
    assert not loop_calls(kernel, Mad)  # no mad by 1 per K row
    for result in check_ir(kernel, seed=5):
        assert result.ok, result


def test_mad_bias_sums_stay_mads():
    kernel = build_kernel(make_problem(LAYER, "BWD_WB", "f32"), "xehpg")
    assert not loop_calls(kernel, Dpas)
    for result in check_ir(kernel, seed=5):
        assert result.ok, result
