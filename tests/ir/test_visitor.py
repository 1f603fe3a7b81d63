"""Visitor, mutator, substitution, free variables, node counts, hashing."""

from __future__ import annotations

from hypothesis import given, settings

from xegen import ir

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
