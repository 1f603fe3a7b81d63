"""`xegen.compile(..., backend="visa")`: the Python API reaches the vISA back end as `xegen conv
--backend visa` does."""

from __future__ import annotations

import pytest

import xegen
from xegen.pipeline import compile_problem

DESC = "mb1ic8ih4oc8oh4kh3ph1"


def test_the_api_compiles_through_visa(genx_ir):
    problem = xegen.conv_problem(DESC)
    kernel = xegen.compile(problem, hw="xehpg", backend="visa")
    # the same bytes as the pipeline's own vISA compile, and other bytes than the native back end's
    assert kernel.zebin == compile_problem(problem, "xehpg", backend="visa").zebin()
    assert kernel.zebin != xegen.compile(problem, hw="xehpg").zebin
    assert kernel.summary.backend == "visa"
    assert kernel.verify(seed=1).ok
    assert ".kernel" in kernel.ir_after("visa")
    with pytest.raises(xegen.Error, match="did not run for this kernel"):
        kernel.ir_after("regalloc")


def test_an_unknown_backend_is_refused():
    with pytest.raises(xegen.Error, match="unknown back end 'llvm'"):
        xegen.compile(DESC, backend="llvm")
