"""Random expressions (scalar and vector, integer and floating point, with the IR's edge
cases) lowered, run in the simulator and compared with the interpreter, lane by lane.

One kernel evaluates six expressions for 16 threads with random and extreme inputs (NaN,
infinities, the integer extremes), so every example checks several hundred values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import exprs as X
from .harness import hand_spec, run_both

THREADS = 16


def run_expressions(hw: str, expressions, seed: int) -> None:
    spec = hand_spec("expressions", X.expression_kernel(expressions), [("inp", "ptr"), ("out", "ptr")])
    inputs = X.random_inputs(np.random.default_rng(seed), THREADS)
    out = np.zeros(THREADS * len(expressions) * X.OUT_SLOT, np.uint8)
    with np.errstate(all="ignore"):
        simulated, interpreted, _ = run_both(spec, hw, {"inp": inputs, "out": out}, grid=(THREADS, 1, 1))
    for e, got, want in zip(
        expressions,
        X.results(simulated["out"], expressions, THREADS),
        X.results(interpreted["out"], expressions, THREADS),
        strict=True,
    ):
        assert X.same(got, want), f"{e}: simulator {got[:4].ravel()} vs interpreter {want[:4].ravel()}"


SETTINGS = dict(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@pytest.mark.parametrize("hw", ["xelp", "xehpg", "xehpc"])
@settings(**SETTINGS)
@given(expressions=st.lists(X.any_scalar_expr(3), min_size=6, max_size=6), seed=st.integers(0, 1000))
def test_scalar_expressions_match_the_interpreter(hw, expressions, seed):
    run_expressions(hw, expressions, seed)


@pytest.mark.parametrize("hw", ["xelp", "xehpg", "xehpc"])
@settings(**SETTINGS)
@given(expressions=st.lists(X.any_vector_expr(2), min_size=6, max_size=6), seed=st.integers(0, 1000))
def test_vector_expressions_match_the_interpreter(hw, expressions, seed):
    run_expressions(hw, expressions, seed)


@pytest.mark.slow
@pytest.mark.parametrize("hw", ["xelp", "xehpg", "xehpc"])
@settings(**{**SETTINGS, "max_examples": 300})
@given(
    expressions=st.lists(st.one_of(X.any_scalar_expr(4), X.any_vector_expr(3)), min_size=6, max_size=6),
    seed=st.integers(0, 1000),
)
def test_many_expressions_match_the_interpreter(hw, expressions, seed):
    run_expressions(hw, expressions, seed)


@pytest.mark.parametrize("hw", ["xelp", "xehpg", "xehpc"])
def test_division_by_every_kind_of_constant(hw):
    """Magic-number division and remainder against the IR on the integer extremes."""
    from xegen import ir

    types = {v.name: v.type for v in X.variables()}
    texts = []
    for d in (3, -3, 7, 10, -9, 641, 65536, -65536, 1000000007, 2147483647, -2147483648, 0, 1, -1):
        texts += [f"s32_0 / {d}", f"s32_1 % {d}"]
    for d in (3, 10, 641, 65536, 1000000007, 2147483648, 4294967295):
        texts += [f"(s32)(u32_0 / (u32){d})", f"(s32)(u32_1 % (u32){d})"]
    expressions = [ir.parse_expr(t, types) for t in texts]
    for start in range(0, len(expressions), 6):
        run_expressions(hw, expressions[start : start + 6], start)


@pytest.mark.parametrize("hw", ["xelp", "xehpg", "xehpc"])
def test_sixteen_bit_immediates_of_mad_and_add3(hw):
    """mad multipliers and last add3 operands at the edges of :w and :uw (the cost model counts
    both as immediates), on s32 and u32, against the IR on the integer extremes."""
    from xegen import ir

    types = {v.name: v.type for v in X.variables()}
    texts = []
    for c in (32767, 32768, 40000, 65535, 65536, -32768, -32769):
        texts += [f"mad(s32_0, s32_1, {c})", f"add3(s32_0, s32_1, {c})"]
    for c in (32768, 65535):
        texts += [f"mad(u32_0, u32_1, (u32){c})", f"add3(u32_0, u32_1, (u32){c})"]
    expressions = [ir.parse_expr(t, types) for t in texts]
    for start in range(0, len(expressions), 6):
        run_expressions(hw, expressions[start : start + 6], start)


def test_a_sixteen_bit_unsigned_multiplier_is_one_mad():
    """The optimizer's `mad(s32_0, s32_1, 40000)` on XeHPG: one mad with a :uw immediate (not
    mul + add), as the cost model charges it."""
    from xegen import ir
    from xegen.lower import compile_kernel

    types = {v.name: v.type for v in X.variables()}
    expression = ir.parse_expr("mad(s32_0, s32_1, 40000)", types)
    compiled = compile_kernel(
        hand_spec("mad16", X.expression_kernel([expression]), [("inp", "ptr"), ("out", "ptr")]), "xehpg"
    )
    arithmetic = [i for i in compiled.instructions if i.opcode in ("mad", "mul")]
    assert [i.opcode for i in arithmetic if any(getattr(s, "value", None) == 40000 for s in i.srcs)] == ["mad"], (
        compiled.assembly()
    )
