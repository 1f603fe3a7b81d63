"""Passes on lets: binders named apart, uses seeing through pure lets, unused lets dropped; each
checked against the text it must give and, run in the interpreter, against the same buffers."""

from __future__ import annotations

import numpy as np

from xegen import ir
from xegen.passes import drop_unused_lets, is_pure, see_through_lets, unique_binders

THREADS = 4


def buffers_after(stmt: ir.Stmt) -> dict[str, np.ndarray]:
    buffers = {"out": np.full(64, -7, np.int32), "out2": np.full(64, -7, np.int32)}
    ir.execute(stmt, buffers=buffers, env={"tid": np.arange(THREADS, dtype=np.int32), "n": 5}, threads=THREADS)
    return buffers


def assert_same_buffers(before: ir.Stmt, after: ir.Stmt) -> None:
    a, b = buffers_after(before), buffers_after(after)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_is_pure_means_scalar_integer_or_bool_arithmetic_on_variables_and_constants():
    assert is_pure(ir.parse_expr("(a + 3) * b < c"))
    assert is_pure(ir.parse_expr("x:u8 + 1"))  # promoted, cast: still scalar integers
    assert not is_pure(ir.parse_expr("buf.s32[a]"))  # reads memory
    assert not is_pure(ir.parse_expr("broadcast(a, 8)"))  # a vector
    assert not is_pure(ir.parse_expr("f:f32 + 1.0"))  # a float


SHADOWED = """
let tid;
for (i = 0; i < 2) {
  out[(tid * 2 + i) * 4] = i * 3 + tid;
}
for (i = 1; i < 3) {
  let i_1 = i + 1;
  out2[(tid * 2 + i - 1) * 4] = i_1 * 3 + tid;
}
"""


def test_unique_binders_renames_the_second_binder_of_a_name_and_its_uses_only():
    renamed = unique_binders(ir.parse_stmt(SHADOWED))
    assert renamed == ir.parse_stmt(
        SHADOWED.replace("for (i = 1; i < 3) {", "for (i_2 = 1; i_2 < 3) {")
        .replace("let i_1 = i + 1", "let i_1 = i_2 + 1")
        .replace("(tid * 2 + i - 1)", "(tid * 2 + i_2 - 1)")
    )
    assert_same_buffers(ir.parse_stmt(SHADOWED), renamed)


def test_see_through_lets_substitutes_pure_values_and_keeps_the_lets():
    stmt = ir.parse_stmt("let tid;\nlet k = tid + 1;\nlet v = out.s32[k];\nout2[k * 4] = v + k;")
    seen = see_through_lets(stmt)
    assert seen == ir.parse_stmt(
        "let tid;\nlet k = tid + 1;\nlet v = out.s32[tid + 1];\nout2[(tid + 1) * 4] = v + (tid + 1);"
    )  # v reads memory: not seen through
    assert_same_buffers(stmt, seen)


def test_drop_unused_lets_also_drops_lets_read_only_by_dropped_ones():
    stmt = ir.parse_stmt(
        "let tid;\nlet a = tid * 2;\nlet b = a + 1;\nlet c = tid + 3;\nlet m = out.s32[0];\nout2[c * 4] = c;"
    )
    assert drop_unused_lets(stmt) == ir.parse_stmt(
        "let tid;\nlet c = tid + 3;\nlet m = out.s32[0];\nout2[c * 4] = c;"
    )  # m loads: kept
    kept = ir.parse_stmt("let tid;\nout2[tid * 4] = tid;")
    assert drop_unused_lets(kept) is kept
