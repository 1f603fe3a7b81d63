"""Hypothesis strategies for IR: random well-typed expressions and statements."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from xegen import ir
from xegen.ir import funcs
from xegen.ir.types import BOOL, FLOAT_TYPES, INT_TYPES, PTR, Type

#: let and loop variables share these names, with different types in different scopes
BINDER_NAMES = ("x", "i")
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


@st.composite
def int_expr_at_a_point(draw, max_depth: int = 3):
    """A small integer expression of any integer type, its variables' types, a value for each
    variable (edges included), and the interpreter's value there (a Python int)."""
    t = draw(st.sampled_from(INT_TYPES))
    e = draw(int_expr(t, draw(st.integers(1, max_depth))))
    types = {v.name: v.type for v in ir.walk(e) if isinstance(v, ir.Var)}
    env = {name: draw(int_values(vt)) for name, vt in types.items()}
    return e, types, env, int(np.asarray(ir.evaluate(e, env)).astype(object))


# Any expression, for printer/parser round trips ------------------------------------------

SCALARS = (BOOL, *INT_TYPES, *FLOAT_TYPES)


@st.composite
def float_literal(draw, t: Type) -> ir.Expr:
    value = draw(
        st.one_of(
            st.sampled_from(
                [0.0, -0.0, 1.0, -1.5, 0.1, 65504.0, 1e-8, 3.0e38, float("inf"), float("-inf"), float("nan")]
            ),
            st.floats(allow_nan=True, allow_infinity=True, width=32),
        )
    )
    return ir.FloatImm(value, t)


@st.composite
def any_expr(draw, t: Type | None = None, depth: int = 3, scope: tuple[ir.Var, ...] = ()) -> ir.Expr:
    """Expressions of every node kind and type (not necessarily meaningful to evaluate);
    `scope` holds the let and loop variables a leaf may use."""
    if t is None:
        t = draw(st.sampled_from(SCALARS))

    def sub(u: Type, d: int) -> ir.Expr:
        return draw(any_expr(u, d, scope))

    if t.lanes > 1:
        choice = draw(st.sampled_from(("broadcast", "shuffle", "load", "binary", "cast", "select")))
        scalar = t.scalar
        if choice == "broadcast" or depth == 0:
            return ir.Broadcast(sub(scalar, max(depth - 1, 0)), t.lanes)
        if choice == "shuffle":
            source = sub(scalar.with_lanes(2), depth - 1)
            indices = tuple(draw(st.lists(st.integers(0, 1), min_size=t.lanes, max_size=t.lanes)))
            return ir.Shuffle((source, sub(scalar, depth - 1)), tuple(i if i < 2 else 2 for i in indices))
        if choice == "load" and not scalar.is_bool:
            if draw(st.booleans()):  # a gather: one offset per lane, no stride
                return ir.Load(ir.Var("buf", PTR), sub(ir.S32.with_lanes(t.lanes), depth - 1), t)
            stride = draw(st.one_of(st.none(), st.integers(0, 64)))
            return ir.Load(ir.Var("buf", PTR), sub(ir.S32, depth - 1), t, stride)
        if choice == "binary" and not scalar.is_bool:  # lane-wise arithmetic
            ops = INT_BINARY if scalar.is_int else ("add", "sub", "mul", "div", "min", "max")
            return ir.Binary(draw(st.sampled_from(ops)), sub(t, depth - 1), sub(t, depth - 1))
        if choice == "binary":  # a lane-wise comparison
            u = draw(st.sampled_from(SCALARS)).with_lanes(t.lanes)
            return ir.Binary(draw(st.sampled_from(COMPARE)), sub(u, depth - 1), sub(u, depth - 1))
        if choice == "cast":
            source = draw(st.sampled_from([u for u in SCALARS if not (u.is_bool and scalar.is_bool)]))
            return ir.Cast(t, sub(source.with_lanes(t.lanes), depth - 1), draw(st.booleans()))
        if choice == "select":  # a condition per lane or one for all
            cond = BOOL.with_lanes(draw(st.sampled_from((1, t.lanes))))
            return ir.Select(sub(cond, depth - 1), sub(t, depth - 1), sub(t, depth - 1))
        return ir.Broadcast(sub(scalar, depth - 1), t.lanes)
    if depth == 0:
        in_scope = [v for v in scope if v.type == t]
        if in_scope and draw(st.booleans()):
            return draw(st.sampled_from(in_scope))
        if t == ir.S32 and draw(st.integers(0, 3)) == 0:
            # a binder's name outside its scope (or shadowed by a binder of another type)
            return ir.Var(draw(st.sampled_from(BINDER_NAMES)), t)
        if t.is_bool:
            return draw(st.sampled_from([ir.BoolImm(True), ir.BoolImm(False), variable(t, 0)]))
        if draw(st.booleans()):
            return variable(t, draw(st.integers(0, 1)))
        if t.is_int:
            return ir.IntImm(draw(int_values(t)), t)
        return draw(float_literal(t))
    d = depth - 1
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
        return ir.Cast(t, sub(source, d), draw(st.booleans()))
    if kind == "select":
        return ir.Select(sub(BOOL, d), sub(t, d), sub(t, d))
    if kind == "load":
        return (
            ir.Load(
                ir.Var("buf", PTR),
                sub(ir.S64, d),
                t if not t.is_bool else ir.U8,
                draw(st.one_of(st.none(), st.integers(1, 8))),
            )
            if not t.is_bool
            else ir.BoolImm(True)
        )
    if kind == "compare":
        u = draw(st.sampled_from(SCALARS))
        return ir.Binary(draw(st.sampled_from(COMPARE)), sub(u, d), sub(u, d))
    if kind == "logic":
        return ir.Binary(draw(st.sampled_from(("land", "lor"))), sub(BOOL, d), sub(BOOL, d))
    if kind == "not":
        return ir.Unary("not", sub(BOOL, d))
    if kind == "int_binary":
        return ir.Binary(draw(st.sampled_from(INT_BINARY)), sub(t, d), sub(t, d))
    if kind == "shift":
        return ir.Binary(draw(st.sampled_from(("shl", "shr"))), sub(t, d), sub(draw(st.sampled_from(INT_TYPES)), d))
    if kind in ("neg", "bitnot"):
        return ir.Unary(kind, sub(t, d))
    if kind == "ternary":
        return ir.Ternary(draw(st.sampled_from(("add3", "mad"))), *(sub(t, d) for _ in range(3)))
    if kind == "mad":
        return ir.Ternary("mad", *(sub(t, d) for _ in range(3)))
    # float_binary
    op = draw(st.sampled_from(("add", "sub", "mul", "div", "min", "max")))
    return ir.Binary(op, sub(t, d), sub(t, d))


@st.composite
def vector_or_scalar_expr(draw, depth: int = 3) -> ir.Expr:
    t = draw(st.sampled_from(SCALARS))
    if draw(st.booleans()):
        t = t.with_lanes(draw(st.sampled_from((2, 4, 8))))
    return draw(any_expr(t, depth))


# Statements ------------------------------------------------------------------------------

NUMBER_TYPES = (*INT_TYPES, *FLOAT_TYPES)


@st.composite
def send(draw) -> funcs.Send:
    """Every op, kind and space a send may have (atomics are scattered; elems only scattered)."""
    op = draw(st.sampled_from(funcs.SEND_OPS))
    kind = "scattered" if op == "atomic" else draw(st.sampled_from(funcs.SEND_KINDS))
    if kind == "block2d":  # global loads and prefetches of whole 16-bit rows (the IR checks the limits)
        transform = draw(st.sampled_from(("none", "vnni")))
        return funcs.Send(
            draw(st.sampled_from(("load", "prefetch"))),
            kind,
            "global",
            draw(st.sampled_from([t for t in NUMBER_TYPES if t.bits == 16])),
            draw(st.sampled_from((2, 4, 8, 16))),
            2 * draw(st.integers(1, 16)),
            width=64 * draw(st.integers(1, 4)),
            height=draw(st.integers(1, 64)),
            pitch=256,
            transform=transform,
        )
    return funcs.Send(
        op,
        kind,
        draw(st.sampled_from(funcs.SEND_SPACES)),
        draw(st.sampled_from(NUMBER_TYPES)),
        draw(st.integers(1, 16)),
        draw(st.integers(1, 4)) if kind == "scattered" else 1,
        draw(st.sampled_from(funcs.ATOMIC_OPS)) if op == "atomic" else "",
    )


@st.composite
def dpas(draw) -> funcs.Dpas:
    bits = draw(st.sampled_from((8, 16, 32)))
    sources = st.sampled_from([t for t in NUMBER_TYPES if t.bits == bits])
    return funcs.Dpas(
        draw(st.sampled_from((8, 16))),
        8,
        draw(st.integers(1, 8)),
        draw(st.sampled_from((ir.F32, ir.S32, ir.U32, ir.F16, ir.BF16))),
        draw(sources),
        draw(sources),
        draw(st.booleans()),
    )


def call_functions():
    """Every function a `Call` can name, with its attributes drawn over their whole range."""
    number = st.sampled_from(NUMBER_TYPES)
    stride = st.integers(0, 4)
    byte = st.sampled_from((ir.S8, ir.U8))
    return st.one_of(
        send(),
        dpas(),
        st.builds(
            funcs.Mad,
            exec_size=st.integers(1, 32),
            dst_type=number,
            src1_type=number,
            src2_type=number,
            src1_stride=stride,
            src2_stride=stride,
        ),
        st.builds(
            funcs.Dp4a,
            exec_size=st.integers(1, 32),
            dst_type=st.sampled_from((ir.S32, ir.U32)),
            src1_type=byte,
            src2_type=byte,
            src1_stride=stride,
            src2_stride=stride,
        ),
        st.builds(
            funcs.Reorder,
            src_type=number,
            dst_type=number,
            rows=st.integers(1, 8),
            cols=st.integers(1, 8),
            src_row_stride=st.integers(0, 16),
            src_col_stride=stride,
            dst_row_stride=st.integers(0, 16),
            dst_col_stride=stride,
            saturate=st.booleans(),
        ),
        st.builds(funcs.Barrier),
        st.builds(funcs.Signal),
        st.builds(funcs.Wait),
        st.builds(funcs.Fence, space=st.sampled_from(funcs.FENCE_SPACES)),
        st.builds(funcs.EndOfThread),
    )


@st.composite
def call_stmt(draw, scope: tuple[ir.Var, ...] = ()) -> ir.Call:
    """A call of any function, with arguments of the kinds it takes (null where it may)."""
    func = draw(call_functions())
    # a send's mask and offsets: one per slot, or one for all (a block2d's mask: one for all)
    lanes = 1 if getattr(func, "kind", "") == "block2d" else getattr(func, "count", 1)

    def expression(t: Type) -> ir.Expr:
        return draw(any_expr(t, 1, scope))

    args = []
    for name in func.expected_args():
        if name.endswith("?") and draw(st.booleans()):
            args.append(None)
        elif name.rstrip("?") == "mask":
            args.append(expression(BOOL.with_lanes(draw(st.sampled_from(sorted({1, lanes}))))))
        elif name in ("x", "y"):
            args.append(expression(ir.S32))
        elif name == "offsets":
            args.append(expression(ir.S32.with_lanes(draw(st.sampled_from(sorted({1, lanes}))))))
        else:
            args.append(ir.Ptr(ir.Var(draw(st.sampled_from(("a_grf", "b_grf", "mem"))), PTR), expression(ir.S32)))
    return ir.Call(func, tuple(args))


@st.composite
def any_stmt(draw, depth: int = 2, scope: tuple[ir.Var, ...] = ()) -> ir.Stmt:
    """Statements of every kind; let and loop variables reuse `BINDER_NAMES` with any type
    (sibling and nested scopes, shadowing) and are used inside their scopes."""
    kinds = ["store", "call"] + (["let", "for", "if", "seq", "alloc"] if depth > 0 else [])
    kind = draw(st.sampled_from(kinds))
    sub = depth - 1

    def expression(t: Type, d: int = 1) -> ir.Expr:
        return draw(any_expr(t, d, scope))

    def body(var: ir.Var) -> ir.Stmt:
        return draw(any_stmt(sub, tuple(v for v in scope if v.name != var.name) + (var,)))

    if kind == "store":
        t = draw(st.sampled_from(SCALARS))
        if draw(st.booleans()):
            t = t.with_lanes(draw(st.sampled_from((2, 4, 8))))
        value = expression(t)
        mask = draw(st.one_of(st.none(), any_expr(BOOL.with_lanes(t.lanes), 1, scope)))
        if t.lanes > 1 and draw(st.booleans()):  # a scatter: one offset per lane, no stride
            return ir.Store(ir.Var("a_grf", PTR), expression(ir.S32.with_lanes(t.lanes)), value, None, mask)
        return ir.Store(
            ir.Var("a_grf", PTR), expression(ir.S32), value, draw(st.one_of(st.none(), st.integers(1, 16))), mask
        )
    if kind == "call":
        return draw(call_stmt(scope))
    if kind == "let":
        var = ir.Var(draw(st.sampled_from(BINDER_NAMES)), draw(st.sampled_from(SCALARS)))
        value = draw(st.one_of(st.none(), any_expr(var.type, 1, scope)))
        return ir.Let(var, value, body(var))
    if kind == "for":
        t = draw(st.sampled_from((ir.S32, ir.U32, ir.S64, ir.U8)))
        var = ir.Var(draw(st.sampled_from(BINDER_NAMES)), t)
        return ir.For(var, expression(t), expression(t), body(var), draw(st.sampled_from((1, 0, 2, 4))))
    if kind == "if":
        return ir.IfThenElse(
            expression(BOOL), draw(any_stmt(sub, scope)), draw(st.one_of(st.none(), any_stmt(sub, scope)))
        )
    if kind == "alloc":
        return ir.Alloc(
            ir.Var(draw(st.sampled_from(("a_grf", "b_grf"))), PTR),
            draw(st.integers(1, 4096)),
            draw(st.sampled_from(("grf", "slm", "global"))),
            draw(any_stmt(sub, scope)),
        )
    items = draw(st.lists(any_stmt(sub, scope), min_size=0, max_size=4))
    return ir.seq(*items) if items else ir.Seq(())
