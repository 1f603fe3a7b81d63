"""Visitor, mutator, substitution, free variables, node counts, hashing."""

from __future__ import annotations

import dataclasses
import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from xegen import ir
from xegen.ir import visitor
from xegen.ir.funcs import Func

from .strategies import any_stmt, vector_or_scalar_expr


def test_substitute_replaces_structurally_equal_subtrees():
    e = ir.parse_expr("(a + b) * (a + b) - c")
    replaced = ir.substitute(e, {ir.parse_expr("a + b"): ir.var("t")})
    assert replaced == ir.parse_expr("t * t - c")


def test_free_vars_respect_binders_and_keep_first_use_order():
    s = ir.parse_stmt("""
        let x = a + 1;
        for (i = 0; i < n) {
          buf[i * 4] = x + i + b;
        }
    """)
    assert [v.name for v in ir.free_vars(s)] == ["a", "n", "buf", "b"]


def test_free_vars_of_deep_trees():
    e = ir.parse_expr(" + ".join(["x"] * 3000) + " + y:u8")  # 3000 levels deep
    assert [str(v) for v in ir.free_vars(e)] == ["x", "y:u8"]
    s = ir.parse_stmt("\n".join(f"let v{i} = v{i - 1} + x;" for i in range(1, 1500)) + "\nbuf[0] = v1499;")
    assert [v.name for v in ir.free_vars(s)] == ["v0", "x", "buf"]


@settings(max_examples=200, deadline=None)
@given(vector_or_scalar_expr(depth=3))
def test_free_vars_of_an_expression_are_its_variables_in_walk_order(e):
    # an expression binds nothing: its free variables are every variable in it, first use first
    assert ir.free_vars(e) == list(dict.fromkeys(n for n in ir.walk(e) if isinstance(n, ir.Var)))


def _walk_order_vars(e: ir.Expr) -> list[ir.Var]:
    """An expression's variables in first-use order, by a walk that uses none of the visitor's
    functions (so none of the answers they keep on the nodes)."""
    found: dict[ir.Var, None] = {}
    pending: list[ir.Node] = [e]
    while pending:
        node = pending.pop()
        if type(node) is ir.Var:
            found[node] = None
        pending.extend(reversed(_every_field_child(node)))
    return list(found)


@settings(max_examples=200, deadline=None)
@given(vector_or_scalar_expr(depth=3), st.integers(min_value=1, max_value=4))
def test_free_vars_kept_on_subexpressions_give_the_walk_order(e, every):
    # free_vars keeps its answer on the expression and uses the answers below it: asked first
    # about some subexpressions (every `every`-th in the walk), then about the whole, it must
    # still give the plain walk's order
    for k, node in enumerate(ir.walk(e)):
        if k % every == 0 and isinstance(node, ir.Expr) and node is not e:
            assert ir.free_vars(node) == _walk_order_vars(node)
    assert ir.free_vars(e) == _walk_order_vars(e)
    answer = ir.free_vars(e)
    answer.append(ir.var("not_in_e"))  # a caller's list is its own
    assert ir.free_vars(e) == _walk_order_vars(e)


def test_free_vars_and_children_are_found_once_per_node(monkeypatch):
    e = ir.parse_expr("(a + b) * (c - a) + d")
    assert [v.name for v in ir.free_vars(e)] == ["a", "b", "c", "d"]
    assert ir.children(e) is ir.children(e)  # kept on the node, not found again
    walks: list[ir.Node] = []
    real_children = visitor.children
    monkeypatch.setattr(visitor, "children", lambda node: walks.append(node) or real_children(node))
    assert [v.name for v in ir.free_vars(e)] == ["a", "b", "c", "d"]
    assert walks == []  # the second question walks nothing
    bigger = e * ir.var("f")
    assert [v.name for v in ir.free_vars(bigger)] == ["a", "b", "c", "d", "f"]
    assert e not in walks  # the known part is not walked again


def test_kept_answers_change_neither_equality_nor_copies():
    e = ir.parse_expr("(a + b) * c")
    fresh = ir.parse_expr("(a + b) * c")
    ir.free_vars(e), ir.children(e), ir.node_count(e)
    assert e == fresh and hash(e) == hash(fresh)
    copy = pickle.loads(pickle.dumps(e))
    assert copy == e and ir.free_vars(copy) == ir.free_vars(fresh)
    assert dataclasses.replace(e, b=ir.var("x")) == ir.parse_expr("(a + b) * x")


def test_node_count_counts_every_node():
    assert ir.node_count(ir.parse_expr("a + b * 2")) == 5


class Doubler(ir.Mutator):
    def mutate_IntImm(self, e):
        return ir.IntImm(e.value * 2, e.type)


def test_mutator_rebuilds_only_what_changed():
    e = ir.parse_expr("a + 3 * b")
    assert Doubler().mutate(e) == ir.parse_expr("a + 6 * b")
    same = ir.parse_expr("a + b")
    assert Doubler().mutate(same) is same


@settings(max_examples=100, deadline=None)
@given(any_stmt(depth=2))
def test_identity_mutation_returns_the_same_object(s):
    assert ir.Mutator().mutate(s) is s


def _every_field_child(node: ir.Node) -> list[ir.Node]:
    """The children by the plain definition: the IR nodes (not call targets) in any constructor
    field, directly or in a tuple, in field order."""
    found: list[ir.Node] = []
    for f in dataclasses.fields(node):
        value = getattr(node, f.name) if f.init else None
        if isinstance(value, ir.Node) and not isinstance(value, Func):
            found.append(value)
        elif isinstance(value, tuple):
            found.extend(item for item in value if isinstance(item, ir.Node))
    return found


@settings(max_examples=100, deadline=None)
@given(any_stmt(depth=2))
def test_children_skip_only_fields_that_hold_no_nodes(s):
    # `children` leaves out fields annotated with scalar types without reading them
    for node in ir.walk(s):
        expected = _every_field_child(node)
        found = ir.children(node)
        assert len(found) == len(expected) and all(a is b for a, b in zip(found, expected, strict=True))


@settings(max_examples=200, deadline=None)
@given(vector_or_scalar_expr(depth=3))
def test_equal_trees_hash_equal_and_stable_hash_is_structural(e):
    copy = ir.parse_expr(str(e))
    assert hash(copy) == hash(e) and copy == e
    assert ir.stable_hash(copy) == ir.stable_hash(e)


def test_ir_nodes_are_immutable_and_have_no_truth_value():
    e = ir.parse_expr("a < b")
    try:
        e.op = "gt"
    except AttributeError:
        pass
    else:
        raise AssertionError("IR nodes must be frozen")
    try:
        bool(e)
    except TypeError:
        pass
    else:
        raise AssertionError("an IR comparison must not silently become a Python bool")


# --- statements and the expressions they evaluate --------------------------------------------

ORDERED = """
let n;
for (i = 0; i < n + 1) {
  let x = i * 2;
  if (x < 5) {
    out[x * 4] = x + 7 if n > 0;
  } else {
    out[0] = 3;
  }
  alloc r[64] grf;
  r[0] = n - 1;
}
"""


def test_statements_and_their_expressions_come_in_program_order():
    s = ir.parse_stmt(ORDERED)
    found = [str(e) for node in ir.statements(s) for e in ir.expressions(node)]
    assert found == ["0", "n + 1", "i * 2", "x < 5", "x * 4", "x + 7", "n > 0", "0", "3", "0", "n - 1"]


class Recorder(ir.StmtVisitor):
    def __init__(self):
        self.seen = []

    def visit_expr(self, e):
        self.seen.append((str(e), [b.var.name for b in self.scope]))


def test_stmt_visitor_sees_each_expression_whole_with_its_binders_in_scope():
    recorder = Recorder()
    recorder.visit(ir.parse_stmt(ORDERED))
    assert recorder.seen == [
        ("0", ["n"]),
        ("n + 1", ["n"]),
        ("i * 2", ["n", "i"]),
        ("x < 5", ["n", "i", "x"]),
        ("x * 4", ["n", "i", "x"]),
        ("x + 7", ["n", "i", "x"]),
        ("n > 0", ["n", "i", "x"]),
        ("0", ["n", "i", "x"]),
        ("3", ["n", "i", "x"]),
        ("0", ["n", "i", "x"]),
        ("n - 1", ["n", "i", "x"]),
    ]


class Negate(ir.StmtMutator):
    """Every expression a statement evaluates, as `0 - e` (binders and buffers untouched)."""

    def mutate_expr(self, e):
        return ir.binary("sub", ir.IntImm(0, e.type), e) if e.type.is_int and e.type.lanes == 1 else e


def test_stmt_mutator_rewrites_whole_expressions_and_keeps_binders():
    s = ir.parse_stmt("let n;\nfor (i = 0; i < n) {\n  let x = i * 2;\n  out[x] = x;\n}")
    assert Negate().mutate(s) == ir.parse_stmt(
        "let n;\nfor (i = 0 - 0; i < 0 - n) {\n  let x = 0 - i * 2;\n  out[0 - x] = 0 - x;\n}"
    )


@settings(max_examples=100, deadline=None)
@given(any_stmt(depth=2))
def test_identity_stmt_mutation_returns_the_same_object_and_visits_every_expression(s):
    assert ir.StmtMutator().mutate(s) is s
    recorder = Recorder()
    recorder.visit(s)
    assert [e for e, _ in recorder.seen] == [str(e) for node in ir.statements(s) for e in ir.expressions(node)]


def test_substitute_stmt_keeps_binders_and_handles_deep_let_chains():
    s = ir.parse_stmt("for (i = 0; i < n) {\n  let n = i + n;\n  out[n] = n;\n}")
    assert ir.substitute_stmt(s, {ir.var("n"): ir.var("m")}) == ir.parse_stmt(
        "for (i = 0; i < m) {\n  let n = i + m;\n  out[m] = m;\n}"
    )
    deep = ir.parse_stmt("\n".join(f"let v{i} = v{i - 1} + x;" for i in range(1, 3000)) + "\nbuf[0] = v2999;")
    replaced = ir.substitute_stmt(deep, {ir.var("x"): ir.var("y")})
    assert [v.name for v in ir.free_vars(replaced)] == ["v0", "y", "buf"]


def test_walk_leaves_out_the_node_it_skips():
    s = ir.parse_stmt("for (i = 0; i < 4) {\n  a[i] = 1;\n}\nb[0] = 2;")
    loop = next(n for n in ir.walk(s) if isinstance(n, ir.For))
    assert {n.buffer.name for n in ir.walk(s, skip=loop) if isinstance(n, ir.Store)} == {"b"}


def test_names_hands_out_names_not_in_use():
    names = ir.Names(ir.parse_stmt("let k = 1;\nout[k] = k_2;"))
    assert [names.fresh("k"), names.fresh("k"), names.fresh("j")] == ["k_3", "k_4", "j"]
