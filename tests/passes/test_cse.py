"""CSE and loop-invariant hoisting: shared and invariant pure subexpressions bound once, at the
outermost scope their variables allow; loads never; the buffers the same."""

from __future__ import annotations

import numpy as np

from xegen import ir
from xegen.passes import bind_common_subexpressions


def nodes_cost(e: ir.Expr) -> int:
    """A stand-in price: one per operation."""
    return sum(1 for n in ir.walk(e) if not isinstance(n, (ir.Var, ir.IntImm)))


def run(stmt: ir.Stmt) -> np.ndarray:
    buffers = {"out": np.full(64, -7, np.int32), "inp": np.arange(64, dtype=np.int32) * 3}
    ir.execute(stmt, buffers=buffers, env={"n": 5}, threads=1)
    return buffers["out"]


def test_a_shared_subexpression_is_bound_once_before_its_uses():
    stmt = ir.parse_stmt("let n;\nout[0] = (n * 3 + 1) * 2;\nout[4] = (n * 3 + 1) + 5;")
    result, lets = bind_common_subexpressions(stmt, nodes_cost)
    assert lets == 1
    assert result == ir.parse_stmt("let n;\nlet t0 = n * 3 + 1;\nout[0] = t0 * 2;\nout[4] = t0 + 5;")
    np.testing.assert_array_equal(run(stmt), run(result))


def test_a_loop_invariant_is_hoisted_to_where_its_variables_are_defined():
    stmt = ir.parse_stmt(
        "let n;\nfor (i = 0; i < 4) {\n  for (j = 0; j < 2) {\n    out[(i * 2 + j) * 4] = n * 7 + i * 3 + j;\n  }\n}"
    )
    result, lets = bind_common_subexpressions(stmt, nodes_cost)
    # n * 7 + i * 3 and i * 2 do not change in the j loop, n * 7 not in the i loop either; the
    # largest is chosen first (t0), then the others by their text
    assert lets == 3
    assert result == ir.parse_stmt(
        "let n;\nlet t2 = n * 7;\nfor (i = 0; i < 4) {\n  let t1 = i * 2;\n"
        "  let t0 = t2 + i * 3;\n  for (j = 0; j < 2) {\n    out[(t1 + j) * 4] = t0 + j;\n"
        "  }\n}"
    )
    np.testing.assert_array_equal(run(stmt), run(result))


def test_loads_and_free_expressions_are_never_bound():
    stmt = ir.parse_stmt("let n;\nfor (i = 0; i < 4) {\n  out[i * 4] = inp.s32[n * 4] + inp.s32[n * 4];\n}")
    result, lets = bind_common_subexpressions(stmt, nodes_cost)
    assert [str(s.value) for s in ir.statements(result) if isinstance(s, ir.Let) and s.value is not None] == ["n * 4"]
    assert lets == 1
    free, lets = bind_common_subexpressions(stmt, lambda e: 0)  # nothing costs anything: nothing to share
    assert lets == 0 and free == stmt
    np.testing.assert_array_equal(run(stmt), run(result))
