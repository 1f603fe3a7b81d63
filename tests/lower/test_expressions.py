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


# a gathered message's address and in-bounds conditions: one pixel index divided into its row and
# column (by a constant), each term of the address and the mask repeating that division
PIXEL_ROW = "(s32x16_0 / broadcast(56, 16) + broadcast(s32_0, 16))"
PIXEL_COLUMN = "(s32x16_0 % broadcast(56, 16) + broadcast(s32_1, 16))"
GATHER_TEXTS = (
    f"{PIXEL_ROW} * broadcast(3584, 16) + {PIXEL_COLUMN} * broadcast(64, 16)",
    f"({PIXEL_ROW} >= broadcast(0, 16) && {PIXEL_ROW} < broadcast(56, 16) && "
    f"{PIXEL_COLUMN} >= broadcast(0, 16) && {PIXEL_COLUMN} < broadcast(56, 16)) ? "
    f"{PIXEL_ROW} * broadcast(3584, 16) : {PIXEL_COLUMN}",
    f"s32x16_1 % broadcast(-7, 16) - s32x16_1 / broadcast(-7, 16) + {PIXEL_COLUMN}",
)


@pytest.mark.parametrize("hw", ["xelp", "xehpg", "xehpc"])
def test_repeated_vector_arithmetic_matches_the_interpreter(hw):
    """A statement's vector subexpressions computed once and read again (and a remainder from
    the quotient of the same division) give the interpreter's values, integer extremes included."""
    from xegen import ir

    types = {v.name: v.type for v in X.variables()}
    run_expressions(hw, [ir.parse_expr(t, types) for t in GATHER_TEXTS], 7)


def test_a_statement_divides_a_vector_once():
    """Each statement above divides each dividend once (XeHPG: one `mach`, the magic
    multiply's high half, per 16 lanes), where each use of the row or the column (and each
    remainder) divided again."""
    from xegen import ir
    from xegen.lower import compile_kernel

    types = {v.name: v.type for v in X.variables()}
    expressions = [ir.parse_expr(t, types) for t in GATHER_TEXTS]
    compiled = compile_kernel(
        hand_spec("gather", X.expression_kernel(expressions), [("inp", "ptr"), ("out", "ptr")]), "xehpg"
    )
    high_halves = [i for i in compiled.instructions if i.opcode == "mach" and i.exec_size == 16]
    assert len(high_halves) == 1 + 1 + 2, compiled.assembly()
