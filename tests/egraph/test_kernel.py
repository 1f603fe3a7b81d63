"""optimize_stmt: every expression of a statement in one e-graph, CSE and loop-invariant lets;
the statement computes the same buffers before and after (xegen.ir.execute, bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen import ir
from xegen.egraph.kernel import optimize_stmt, optimize_stmt_report
from xegen.ir.types import S32

THREADS = 8


def run(stmt: ir.Stmt, outputs: dict[str, int], inputs: dict[str, np.ndarray], env: dict) -> dict[str, np.ndarray]:
    buffers = {name: np.full(size, -7, np.int32) for name, size in outputs.items()}
    buffers.update({name: a.copy() for name, a in inputs.items()})
    ir.execute(stmt, buffers=buffers, env=env, threads=THREADS)
    return buffers


def assert_same_buffers(before: ir.Stmt, after: ir.Stmt, outputs, inputs=None, env=None):
    inputs = inputs or {}
    env = env or {"tid": np.arange(THREADS, dtype=np.int32)}
    a, b = run(before, outputs, inputs, env), run(after, outputs, inputs, env)
    for name in a:
        np.testing.assert_array_equal(a[name].view(np.uint8), b[name].view(np.uint8), err_msg=name)


KERNEL = """
let tid;
let n;
for (k = 0; k < 4) {
  for (j = 0; j < 3) {
    OUT[((tid * 4 + k) * 3 + j) * 4] = IN.s32[((tid * 4 + k) * 3 + j) * 4] * 2 + (n * 7 + 3) * k;
  }
}
for (k = 0; k < 2) {
  OUT2[(tid * 2 + k) * 4] = (tid * 2 + k) % 3 + n / 4 * 4 + n % 4;
}
"""


def kernel_inputs():
    return (
        {"OUT": 8 * 4 * 3 * 4, "OUT2": 16 * 4},
        {"IN": np.arange(8 * 4 * 3, dtype=np.int32) * 5 - 17},
        {"tid": np.arange(THREADS, dtype=np.int32), "n": 37},
    )


@pytest.mark.parametrize("hw", ["xelp", "xehpg", "xehpc"])
def test_optimized_kernel_computes_the_same_buffers(hw):
    stmt = ir.parse_stmt(KERNEL)
    report = optimize_stmt_report(stmt, hw, ranges={"tid": range(0, THREADS), "n": range(0, 100)})
    assert report.cost_after < report.cost_before
    outputs, inputs, env = kernel_inputs()
    assert_same_buffers(stmt, report.stmt, outputs, inputs, env)


def test_loop_invariants_are_hoisted_and_shared_offsets_bound_once():
    stmt = ir.parse_stmt(KERNEL)
    out = optimize_stmt(stmt, "xehpg", ranges={"tid": range(0, THREADS), "n": range(0, 100)})
    text = ir.format_stmt(out)
    # n * 7 + 3 depends on no loop variable: bound before the first loop
    first_loop = text.index("for (k")
    assert "n * 7 + 3" in text[:first_loop]
    # the load and the store share one offset expression: a let inside the inner loop
    inner = text[text.index("for (j") :]
    assert inner.count("let ") >= 1
    # the load stays where it was (never hoisted or shared)
    loads = [n for n in ir.walk(out) if isinstance(n, ir.Load)]
    assert len(loads) == 1


def test_loads_are_not_moved_across_stores():
    stmt = ir.parse_stmt("""
    let tid;
    for (k = 0; k < 3) {
      BUF[tid * 4] = BUF.s32[tid * 4] + k;
      BUF[tid * 4] = BUF.s32[tid * 4] * 2 + k;
    }
    """)
    out = optimize_stmt(stmt, "xehpg", ranges={"tid": range(0, THREADS)})
    assert sum(isinstance(n, ir.Load) for n in ir.walk(out)) == 2
    assert_same_buffers(stmt, out, {}, {"BUF": np.arange(THREADS, dtype=np.int32)})


def test_more_shared_subexpressions_than_the_recursion_limit():
    """CSE nests one let per shared subexpression: 1100 of them must not exhaust Python's
    recursion limit (the cost of the result used to be measured by a recursive walk).  The lets
    are evaluated one after another here, the stores against a hand computation."""
    count = 1100
    n, out = ir.Var("n", S32), ir.Var("OUT", ir.parse_type("ptr"))
    stores = []
    for k in range(count):
        shared = n * (k + 2) + (k + 1)
        stores.append(ir.Store(out, ir.const(k * 4, S32), shared * shared))
    stmt = ir.Let(out, None, ir.Let(n, None, ir.Seq(tuple(stores))))
    report = optimize_stmt_report(stmt, "xehpg", ranges={"n": range(0, 100)})
    assert report.lets == count

    env: dict[str, object] = {"n": np.int32(5)}
    body = report.stmt
    while isinstance(body, ir.Let):
        if body.value is not None:
            env[body.var.name] = ir.evaluate(body.value, env)
        body = body.body
    assert isinstance(body, ir.Seq) and len(body.stmts) == count
    written = {int(ir.evaluate(s.offset, env)) // 4: int(ir.evaluate(s.value, env)) for s in body.stmts}
    assert written == {k: (5 * (k + 2) + k + 1) ** 2 for k in range(count)}


def test_shadowed_variables_stay_apart():
    stmt = ir.parse_stmt("""
    let tid;
    for (i = 0; i < 2) { OUT[(tid * 2 + i) * 4] = i * 3 + tid; }
    for (i = 1; i < 3) { OUT2[(tid * 2 + i - 1) * 4] = i * 3 + tid; }
    """)
    out = optimize_stmt(stmt, "xehpg", ranges={"tid": range(0, THREADS)})
    assert_same_buffers(stmt, out, {"OUT": 16 * 4, "OUT2": 16 * 4})


def test_loop_ranges_guard_rewrites_inside_the_loop():
    stmt = ir.parse_stmt("let tid;\nfor (k = 0; k < 8) { OUT[(tid * 8 + k) * 4] = k / 8 + k % 8; }")
    out = optimize_stmt(stmt, "xehpg", ranges={"tid": range(0, THREADS)})
    store = next(n for n in ir.walk(out) if isinstance(n, ir.Store))
    assert store.value == ir.var("k")  # 0 <= k < 8: k / 8 = 0 and k % 8 = k
    assert_same_buffers(stmt, out, {"OUT": 64 * 4})


def test_blocks_of_k_share_their_decomposition_and_equal_lets_go():
    # the conv builder's K block: 8 consecutive k split into channel, kw, kh; k_start is a multiple
    # of 8 and 64 channels a multiple of the block, so all 8 have the same kw and kh
    lines = ["let tid;", "for (k_iter = 0; k_iter < 72) {", "  let k_start = k_iter * 8;"]
    for j in range(8):
        lines += [
            f"  let ic{j} = (k_start + {j}) % 64;",
            f"  let kw{j} = (k_start + {j}) / 64 % 3;",
            f"  let row{j} = kw{j} + tid;",
            f"  OUT[((tid * 72 + k_iter) * 8 + {j}) * 4] = (row{j} * 64 + ic{j}) * 3 + kw{j};",
        ]
    lines.append("}")
    stmt = ir.parse_stmt("\n".join(lines))
    out = optimize_stmt(stmt, "xehpg", ranges={"tid": range(0, THREADS)})
    lets = {s.var.name: s.value for s in ir.walk(out) if isinstance(s, ir.Let) and s.value is not None}
    assert "kw0" in lets and not any(f"kw{j}" in lets for j in range(1, 8))  # one decomposition, no aliases
    assert not any(f"row{j}" in lets for j in range(1, 8))  # built on the same value: equal too, so gone
    assert "/ 64" not in ir.format_stmt(out) and "% 64" not in ir.format_stmt(out)
    assert_same_buffers(stmt, out, {"OUT": THREADS * 72 * 8 * 4})


def test_uses_see_through_lets_and_lets_nothing_reads_go():
    """`mad(b, k1, 256)` with `let k1 = k + 1`: the e-graph sees `k + 1`, so the two offsets share
    `mad(b, k, 256)` and differ by a constant; `k1` is then read by nothing and its let goes.  A
    let whose value is still needed keeps its name."""
    stmt = ir.parse_stmt(
        "let tid;\nfor (k = 0; k < 8) {\n  let k1 = k + 1;\n  let kw = k / 3 % 3;\n"
        "  OUT[mad(tid * 64, k, 256)] = kw;\n  OUT[mad(tid * 64, k1, 256)] = kw * 5;\n}"
    )
    result = optimize_stmt_report(stmt, "xehpg", ranges={"tid": range(0, THREADS)})
    lets = {s.var.name: s.value for s in ir.walk(result.stmt) if isinstance(s, ir.Let) and s.value is not None}
    assert "k1" not in lets and "kw" in lets
    offsets = [n.offset for n in ir.walk(result.stmt) if isinstance(n, ir.Store)]
    assert isinstance(offsets[1], ir.Binary) and offsets[1].op == "add" and offsets[1].b == ir.const(256), offsets
    assert result.cost_after < result.cost_before
    assert_same_buffers(stmt, result.stmt, {"OUT": THREADS * 64 * 4 + 9 * 256 * 4})


@st.composite
def kernels(draw):
    """Two nested loops storing random integer expressions of tid and the loop variables."""
    names = ["tid", "k", "j"]

    def expression(depth: int) -> ir.Expr:
        if depth == 0 or draw(st.integers(0, 3)) == 0:
            return ir.var(draw(st.sampled_from(names))) if draw(st.booleans()) else ir.const(draw(st.integers(-9, 60)))
        op = draw(st.sampled_from(["add", "sub", "mul", "div", "mod", "min", "max", "shl", "and"]))
        a, b = expression(depth - 1), expression(depth - 1)
        if op == "shl":
            b = ir.const(draw(st.integers(0, 4)))
        if op in ("div", "mod"):
            b = ir.const(draw(st.sampled_from([1, 2, 3, 4, 7, 8, 16])))
        return ir.binary(op, a, b)

    stores = []
    for slot in range(draw(st.integers(1, 3))):
        value = expression(3)
        stores.append(f"OUT{slot}[((tid * 3 + k) * 2 + j) * 4] = {value};")
    k_bound, j_bound = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    text = "let tid;\n" + f"for (k = 0; k < {k_bound}) {{ for (j = 0; j < {j_bound}) {{ " + " ".join(stores) + " } }"
    return ir.parse_stmt(text), len(stores)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(kernels(), st.sampled_from(["xelp", "xehpg"]))
def test_property_optimized_statements_compute_the_same_buffers(case, hw):
    stmt, n = case
    report = optimize_stmt_report(stmt, hw, ranges={"tid": range(0, THREADS)})
    assert report.cost_after <= report.cost_before
    assert_same_buffers(stmt, report.stmt, {f"OUT{i}": THREADS * 3 * 2 * 4 for i in range(n)})


def test_an_expression_before_a_one_trip_loop_reads_no_variable_of_the_loop():
    """A loop that runs once has a variable of one value, so an expression before it can become
    equal to one inside it; the form extracted for both must not read the loop's variable, which
    the CSE binds inside the loop.  Such a site keeps its input expression.  (Found on a depthwise
    kernel whose double-buffered row loop ran once after its ramp-up; the scheduler now writes
    such a loop as straight-line code, so this takes the one-trip K loop of a 1x1 layer.)"""
    from xegen.conv import make_problem
    from xegen.pipeline import OPTIMIZE_LIMITS, build_kernel, index_ranges

    kernel = build_kernel(make_problem("mb1ic16ih8oc16oh8kh1", "FWD_B", "f32"), "xehpc", {"gmem_bufs": 1})
    assert any(isinstance(s, ir.For) and s.bound == ir.IntImm(1, S32) for s in ir.walk(kernel.body))
    assert ir.free_vars(kernel.body) == []
    out = optimize_stmt(kernel.body, "xehpc", ranges=index_ranges(kernel), limits=OPTIMIZE_LIMITS)
    assert ir.free_vars(out) == []
