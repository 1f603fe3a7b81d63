"""Hypothesis strategies for IR: random well-typed expressions and statements."""

from __future__ import annotations

from hypothesis import strategies as st

from xegen import ir
from xegen.ir import funcs
from xegen.ir.types import BOOL, FLOAT_TYPES, INT_TYPES, PTR, Type

INT_BINARY = ("add", "sub", "mul", "div", "mod", "and", "or", "xor", "min", "max")
COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")


def variable(t: Type, index: int) -> ir.Var:
    """One name per (type, index), so a name never has two types."""
    return ir.Var(f"{t.kind}_{index}", t)


def edge_values(t: Type) -> list[int]:
    return sorted({0, 1, t.max, t.min, t.max - 1, t.min + 1} | ({-1} if t.is_signed else set()))


def int_values(t: Type):
    return st.one_of(st.sampled_from(edge_values(t)), st.integers(t.min, t.max))


@st.composite
def int_expr(draw, t: Type, depth: int, types=INT_TYPES) -> ir.Expr:
    """An integer expression of type `t` whose tree is exactly `depth` deep along one path."""
    if depth == 0:
        if draw(st.booleans()):
            return variable(t, draw(st.integers(0, 2)))
        return ir.IntImm(draw(int_values(t)), t)

    def deep(u: Type = t):
        return draw(int_expr(u, depth - 1, types))

    def shallow(u: Type = t):
        return draw(int_expr(u, draw(st.integers(0, min(depth - 1, 2))), types))

    def other_type() -> Type:
        return draw(st.sampled_from(types))

    kind = draw(st.sampled_from(("binary", "binary", "shift", "unary", "ternary", "select", "cast", "compare_cast")))
    if kind == "binary":
        op = draw(st.sampled_from(INT_BINARY))
        a, b = deep(), shallow()
        if draw(st.booleans()):
            a, b = b, a
        return ir.Binary(op, a, b)
    if kind == "shift":
        return ir.Binary(draw(st.sampled_from(("shl", "shr"))), deep(), shallow(other_type()))
    if kind == "unary":
        return ir.Unary(draw(st.sampled_from(("neg", "bitnot"))), deep())
    if kind == "ternary":
        args = [deep(), shallow(), shallow()]
        order = draw(st.permutations(range(3)))
        return ir.Ternary(draw(st.sampled_from(("add3", "mad"))), *(args[i] for i in order))
    if kind == "select":
        u = other_type()
        cond = ir.Binary(draw(st.sampled_from(COMPARE)), shallow(u), shallow(u))
        a, b = deep(), shallow()
        if draw(st.booleans()):
            a, b = b, a
        return ir.Select(cond, a, b)
    if kind == "cast":
        return ir.Cast(t, deep(other_type()), draw(st.booleans()))
    # a comparison (or logic on comparisons) used as a number
    u = other_type()
    cond = ir.Binary(draw(st.sampled_from(COMPARE)), deep(u), shallow(u))
    if draw(st.booleans()):
        other = ir.Binary(draw(st.sampled_from(COMPARE)), shallow(u), shallow(u))
        cond = ir.Binary(draw(st.sampled_from(("land", "lor"))), cond, other)
    if draw(st.booleans()):
        cond = ir.Unary("not", cond)
    return ir.Cast(t, cond)


@st.composite
def deep_int_expr(draw, min_depth: int = 6, max_depth: int = 7):
    t = draw(st.sampled_from(INT_TYPES))
    return draw(int_expr(t, draw(st.integers(min_depth, max_depth))))


# Any expression, for printer/parser round trips ------------------------------------------

SCALARS = (BOOL, *INT_TYPES, *FLOAT_TYPES)


@st.composite
def float_literal(draw, t: Type) -> ir.Expr:
    value = draw(st.one_of(
        st.sampled_from([0.0, -0.0, 1.0, -1.5, 0.1, 65504.0, 1e-8, 3.0e38, float("inf"), float("-inf"), float("nan")]),
        st.floats(allow_nan=True, allow_infinity=True, width=32)))
    return ir.FloatImm(value, t)


@st.composite
def any_expr(draw, t: Type | None = None, depth: int = 3) -> ir.Expr:
    """Expressions of every node kind and type (not necessarily meaningful to evaluate)."""
    if t is None:
        t = draw(st.sampled_from(SCALARS))
    if t.lanes > 1:
        choice = draw(st.sampled_from(("broadcast", "shuffle", "load", "binary")))
        scalar = t.scalar
        if choice == "broadcast" or depth == 0:
            return ir.Broadcast(draw(any_expr(scalar, max(depth - 1, 0))), t.lanes)
        if choice == "shuffle":
            source = draw(any_expr(scalar.with_lanes(2), depth - 1))
            indices = tuple(draw(st.lists(st.integers(0, 1), min_size=t.lanes, max_size=t.lanes)))
            return ir.Shuffle((source, draw(any_expr(scalar, depth - 1))), tuple(i if i < 2 else 2 for i in indices))
        if choice == "load" and not scalar.is_bool:
            stride = draw(st.one_of(st.none(), st.integers(0, 64)))
            return ir.Load(ir.Var("buf", PTR), draw(any_expr(ir.S32, depth - 1)), t, stride)
        return ir.Broadcast(draw(any_expr(scalar, depth - 1)), t.lanes)
    if depth == 0:
        if t.is_bool:
            return draw(st.sampled_from([ir.BoolImm(True), ir.BoolImm(False), variable(t, 0)]))
        if draw(st.booleans()):
            return variable(t, draw(st.integers(0, 1)))
        if t.is_int:
            return ir.IntImm(draw(int_values(t)), t)
        return draw(float_literal(t))
    sub = depth - 1
    options = ["cast", "select", "load"]
    if t.is_bool:
        options += ["compare", "logic", "not"]
    if t.is_int:
        options += ["int_binary", "shift", "neg", "bitnot", "ternary"]
    if t.is_float:
        options += ["float_binary", "neg", "mad"]
    kind = draw(st.sampled_from(options))
    if kind == "cast":
        source = draw(st.sampled_from([u for u in SCALARS if not (u.is_bool and t.is_bool)]))
        return ir.Cast(t, draw(any_expr(source, sub)), draw(st.booleans()))
    if kind == "select":
        return ir.Select(draw(any_expr(BOOL, sub)), draw(any_expr(t, sub)), draw(any_expr(t, sub)))
    if kind == "load":
        return ir.Load(ir.Var("buf", PTR), draw(any_expr(ir.S64, sub)), t if not t.is_bool else ir.U8,
                       draw(st.one_of(st.none(), st.integers(1, 8)))) if not t.is_bool else ir.BoolImm(True)
    if kind == "compare":
        u = draw(st.sampled_from(SCALARS))
        return ir.Binary(draw(st.sampled_from(COMPARE)), draw(any_expr(u, sub)), draw(any_expr(u, sub)))
    if kind == "logic":
        return ir.Binary(draw(st.sampled_from(("land", "lor"))), draw(any_expr(BOOL, sub)), draw(any_expr(BOOL, sub)))
    if kind == "not":
        return ir.Unary("not", draw(any_expr(BOOL, sub)))
    if kind == "int_binary":
        return ir.Binary(draw(st.sampled_from(INT_BINARY)), draw(any_expr(t, sub)), draw(any_expr(t, sub)))
    if kind == "shift":
        return ir.Binary(draw(st.sampled_from(("shl", "shr"))), draw(any_expr(t, sub)),
                         draw(any_expr(draw(st.sampled_from(INT_TYPES)), sub)))
    if kind in ("neg", "bitnot"):
        return ir.Unary(kind, draw(any_expr(t, sub)))
    if kind == "ternary":
        return ir.Ternary(draw(st.sampled_from(("add3", "mad"))), *(draw(any_expr(t, sub)) for _ in range(3)))
    if kind == "mad":
        return ir.Ternary("mad", *(draw(any_expr(t, sub)) for _ in range(3)))
    # float_binary
    op = draw(st.sampled_from(("add", "sub", "mul", "div", "min", "max")))
    return ir.Binary(op, draw(any_expr(t, sub)), draw(any_expr(t, sub)))


@st.composite
def vector_or_scalar_expr(draw, depth: int = 3) -> ir.Expr:
    t = draw(st.sampled_from(SCALARS))
    if draw(st.booleans()):
        t = t.with_lanes(draw(st.sampled_from((2, 4, 8))))
    return draw(any_expr(t, depth))


# Statements ------------------------------------------------------------------------------

def _funcs():
    types = st.sampled_from((ir.F32, ir.F16, ir.BF16, ir.S32, ir.U8, ir.S8))
    return st.one_of(
        st.builds(funcs.Send, op=st.sampled_from(("load", "store")), kind=st.just("block"),
                  space=st.sampled_from(("global", "slm")), type=types, count=st.integers(1, 16)),
        st.builds(funcs.Mad, exec_size=st.sampled_from((8, 16)), dst_type=types, src1_type=types, src2_type=types,
                  src1_stride=st.integers(0, 2), src2_stride=st.integers(0, 2)),
        st.builds(funcs.Barrier), st.builds(funcs.Signal), st.builds(funcs.Wait),
        st.builds(funcs.Fence, space=st.sampled_from(("slm", "global"))),
        st.builds(funcs.Dpas, exec_size=st.just(8), sdepth=st.just(8), rcount=st.integers(1, 8),
                  dst_type=st.just(ir.F32), src1_type=st.just(ir.F16), src2_type=st.just(ir.F16),
                  dpasw=st.booleans()),
    )


def _pointer(draw, depth):
    return ir.Ptr(ir.Var(draw(st.sampled_from(("a_grf", "b_grf", "mem"))), PTR), draw(any_expr(ir.S32, depth)))


@st.composite
def any_stmt(draw, depth: int = 2) -> ir.Stmt:
    kinds = ["store", "call"] + (["let", "for", "if", "seq", "alloc"] if depth > 0 else [])
    kind = draw(st.sampled_from(kinds))
    sub = depth - 1
    if kind == "store":
        value = draw(vector_or_scalar_expr(1))
        lanes = value.type.lanes
        mask = draw(st.one_of(st.none(), any_expr(BOOL.with_lanes(lanes), 1)))
        return ir.Store(ir.Var("a_grf", PTR), draw(any_expr(ir.S32, 1)), value,
                        draw(st.one_of(st.none(), st.integers(1, 16))), mask)
    if kind == "call":
        func = draw(_funcs())
        args = []
        for name in func.expected_args():
            if name.endswith("?") and draw(st.booleans()):
                args.append(None)
            elif name.rstrip("?") in ("mask",):
                args.append(draw(any_expr(BOOL, 1)))
            else:
                args.append(_pointer(draw, 1))
        return ir.Call(func, tuple(args))
    if kind == "let":
        t = draw(st.sampled_from(SCALARS))
        name = f"l_{t.kind}_{draw(st.integers(0, 1))}"
        value = draw(st.one_of(st.none(), any_expr(t, 1)))
        return ir.Let(ir.Var(name, t), value, draw(any_stmt(sub)))
    if kind == "for":
        t = draw(st.sampled_from((ir.S32, ir.U32, ir.S64)))
        loop_var = ir.Var(f"i_{t.kind}", t)
        return ir.For(loop_var, draw(any_expr(t, 1)), draw(any_expr(t, 1)), draw(any_stmt(sub)),
                      draw(st.sampled_from((1, 0, 2, 4))))
    if kind == "if":
        return ir.IfThenElse(draw(any_expr(BOOL, 1)), draw(any_stmt(sub)), draw(st.one_of(st.none(), any_stmt(sub))))
    if kind == "alloc":
        return ir.Alloc(ir.Var(draw(st.sampled_from(("a_grf", "b_grf"))), PTR), draw(st.integers(1, 4096)),
                        draw(st.sampled_from(("grf", "slm", "global"))), draw(any_stmt(sub)))
    items = draw(st.lists(any_stmt(sub), min_size=0, max_size=4))
    return ir.seq(*items) if items else ir.Seq(())
