"""The parser and the builder functions against an independent C oracle (types and values).

The integer oracle test (test_semantics.py) builds IR nodes directly; here random C expressions
with untyped literals of every kind go through `parse_expr` and through the builders, so the
conversions they insert (literal types, add3/mad operand types, `?:`) are checked too.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from xegen import ir
from xegen.ir import semantics

from . import c_oracle
from .c_oracle import Literal, Operation, Oracle, Unknowable, Variable

SAMPLES = 12


@st.composite
def expression_and_samples(draw):
    e = draw(c_oracle.expression(draw(st.integers(1, 4))))
    env = {}
    for v in c_oracle.variables(e):
        edges = c_oracle.edge_values(v.kind)
        picked = draw(st.lists(st.sampled_from(edges), min_size=SAMPLES // 2, max_size=SAMPLES // 2))
        env[v.name] = picked + draw(
            st.lists(c_oracle.values(v.kind), min_size=SAMPLES - len(picked), max_size=SAMPLES - len(picked))
        )
    return e, env


def arrays(env: dict) -> dict:
    def dtype(name):
        return semantics.numpy_dtype(ir.Type.parse(name.removeprefix("v_")))

    return {
        name: np.array(values, dtype=object if dtype(name).kind == "u" else None).astype(dtype(name))
        for name, values in env.items()
    }


def same(got, expected, kind: str) -> bool:
    if c_oracle.is_float(kind):
        got = float(got)
        if math.isnan(expected):
            return math.isnan(got)
        return got == expected and math.copysign(1, got) == math.copysign(1, expected)
    if kind == "bool":
        return bool(got) == expected
    return int(got) == expected


def check(e, expr: ir.Expr, env: dict, hex_literals: bool, how: str) -> None:
    """The IR's type and its value for every sample are the oracle's."""
    kind = c_oracle.standalone_kind(e, hex_literals)
    assert expr.type.kind == kind, f"{how}: type {expr.type}, C says {kind}: {c_oracle.text(e)} -> {expr}"
    got = np.broadcast_to(ir.evaluate(expr, arrays(env)), (SAMPLES,))
    for i in range(SAMPLES):
        row = {name: values[i] for name, values in env.items()}
        try:
            expected = Oracle(row, hex_literals).typed_value(e)[1]
        except Unknowable:
            continue
        assert same(got[i], expected, kind), (
            f"{how}: {row}: got {got[i]}, C says {expected}: {c_oracle.text(e)} -> {expr}"
        )


@settings(max_examples=250, deadline=None)
@given(expression_and_samples(), st.booleans())
def test_parser_and_builders_match_the_c_oracle(case, compact):
    e, env = case
    parsed = ir.parse_expr(c_oracle.text(e, compact))
    check(e, parsed, env, hex_literals=True, how="parse_expr")
    check(e, ir.as_expr(c_oracle.build(e)), env, hex_literals=False, how="builders")
    assert ir.parse_expr(str(parsed)) == parsed


def test_the_oracle_knows_the_c_rules():
    """A few hand-worked cases, so that the oracle itself is checked."""
    x, y = Variable("s32"), Variable("u8")

    def typed(e, **env):
        return Oracle({f"v_{k}": v for k, v in env.items()}, hex_literals=True).typed_value(e)

    assert typed(Operation("mad", (x, x, Literal(1.5))), s32=3) == ("f32", 7.5)  # 3 + 3 * 1.5
    assert typed(Operation("add3", (x, Literal(0), Literal(3000000000))), s32=0) == ("s64", 3000000000)
    assert typed(
        Operation("add", (Literal(0xFFFFFFFF, hex=True), Literal(1))),
    ) == ("u32", 0)
    assert typed(Operation("add", (Literal(4294967295), Literal(1)))) == ("s64", 4294967296)
    assert typed(Operation("select", (x, y, y)), s32=1, u8=200) == ("u8", 200)
    assert typed(Operation("shl", (y, Literal(33))), u8=1) == ("s32", 2)
    assert typed(Operation("div", (Literal(-7), Literal(2)))) == ("s32", -3)
    assert typed(Operation("add", (Variable("f16"), Literal(1e10))), f16=0.0) == ("f16", math.inf)
