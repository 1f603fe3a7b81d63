"""The rule checker's integer encoding (xegen/egraph/check/ints.py) is exact: it agrees with the
interpreter on random expressions and values, and its primitives agree with egglog's (prims)."""

from __future__ import annotations

import numpy as np
import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen import ir
from xegen.egraph.check import prims
from xegen.egraph.check.ints import Encoder
from xegen.ir.types import INT_TYPES

from ..ir.strategies import int_expr_at_a_point


class Evaluator:
    """Values of terms over symbolic operands, with the fresh variables' definitions asserted:
    they determine the fresh variables, so a second check shows no other value is possible.
    A point ({name: value}) is substituted into the formulas before z3 sees them (z3 then folds
    the bitwise operations' bit-vector conversions, which it is slow to reason about)."""

    def __init__(self, definitions: list):
        self.definitions = definitions

    def check(self, point: dict, *facts):
        pairs = [(z3.Int(name), z3.IntVal(value)) for name, value in point.items()]
        solver = z3.Solver()
        solver.set("rlimit", 2_000_000_000)  # a hang would be a bug in the encoding: fail, do not wait
        solver.add(*(z3.simplify(z3.substitute(f, *pairs)) for f in [*self.definitions, *facts]))
        return solver.check(), solver, pairs

    def value(self, term, point: dict):
        result, solver, pairs = self.check(point)
        assert result == z3.sat
        got = solver.model().eval(z3.substitute(term, *pairs), model_completion=True)
        assert self.check(point, term != got)[0] == z3.unsat, "the definitions leave the value open"
        return z3.is_true(got) if z3.is_bool(got) else got.as_long()

    def possible(self, point: dict, *facts) -> bool:
        return self.check(point, *facts)[0] == z3.sat


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_integer_encoding_agrees_with_the_interpreter(data):
    e, types, env, expected = data.draw(int_expr_at_a_point())
    encoder = Encoder()  # symbolic variables: the fresh quotients and wrap counts get used
    term = encoder.encode(e, {name: z3.Int(name) for name in env})
    assert Evaluator([*encoder.definitions, *encoder.exact]).value(term, env) == expected, (str(e), env)


@pytest.mark.parametrize("t", INT_TYPES, ids=str)
def test_division_and_wrap_around_at_the_extremes(t):
    """Symbolic operands (so the fresh quotient and remainder are used) at every pair of edges."""
    a, b = ir.Var("a", t), ir.Var("b", t)
    edges = sorted({t.min, t.min + 1, -1 if t.is_signed else 2, 0, 1, 3, t.max - 1, t.max})
    for op in ("div", "mod", "mul", "add", "sub", "shl", "shr"):
        e = ir.Binary(op, a, b)
        encoder = Encoder()
        term = encoder.encode(e, {"a": z3.Int("a"), "b": z3.Int("b")})
        evaluator = Evaluator([*encoder.definitions, *encoder.exact])
        for x in edges:
            for y in edges:
                got = evaluator.value(term, {"a": x, "b": y})
                assert got == int(np.asarray(ir.evaluate(e, {"a": x, "b": y})).astype(object)), (op, x, y)


PRIMITIVE_VALUES = [
    prims.I64_MIN,
    prims.I64_MIN + 1,
    -(1 << 32),
    -7,
    -2,
    -1,
    0,
    1,
    2,
    3,
    7,
    63,
    64,
    1 << 32,
    prims.I64_MAX - 1,
    prims.I64_MAX,
]


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "min", "max"])
def test_primitives_agree_with_egglog(op):
    """Value and definedness of each binary i64 primitive, against prims.apply (egglog's checked
    arithmetic)."""
    x, y = z3.Int("x"), z3.Int("y")
    encoder, defined = Encoder(), []
    term = encoder.primitive(op, [x, y], defined)
    evaluator = Evaluator([*encoder.definitions, *encoder.exact])
    for a in PRIMITIVE_VALUES:
        for b in PRIMITIVE_VALUES:
            point = {"x": a, "y": b}
            try:
                expected = prims.apply(op, [a, b])
            except prims.Fail:
                assert not evaluator.possible(point, *defined), (op, a, b, "defined in z3 but not in egglog")
                continue
            assert evaluator.value(z3.And(*defined), point) is True, (op, a, b)
            assert evaluator.value(term, point) == expected, (op, a, b)


def test_log2_and_not():
    x = z3.Int("x")
    encoder, defined = Encoder(), []
    log2, inverted = encoder.primitive("log2", [x], defined), encoder.primitive("not-i64", [x], [])
    evaluator = Evaluator([*encoder.definitions, *encoder.exact])
    for a in [1, 2, 3, 4, 1000, 1 << 40, prims.I64_MAX]:
        assert evaluator.value(log2, {"x": a}) == prims.apply("log2", [a])
        assert evaluator.value(inverted, {"x": a}) == prims.apply("not-i64", [a])
    assert not evaluator.possible({}, x <= 0, *defined)  # log2 needs a positive argument
