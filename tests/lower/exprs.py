"""Random expressions the lowering supports, and kernels that evaluate them per thread.

Each generated kernel loads its variables from an input buffer (one 16-byte slot per
variable and thread: thread t's `s32_1` is at `inp[(t * VARS + slot) * 16]`), evaluates a list
of expressions and stores each to its own 64-byte output slot, so one simulator run checks
many expressions on many inputs against the interpreter.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from xegen import ir
from xegen.ir.types import BF16, F16, F32, S8, S16, S32, U8, U16, U32, Type

INTS = (S8, U8, S16, U16, S32, U32)
FLOATS = (F32, F16, BF16)
SCALARS = INTS + FLOATS
VECTORS = tuple(t.with_lanes(n) for t in (S32, U32, S16, U8, F32, F16, BF16) for n in (8, 16))
VARIABLES = 3  # per type
SLOT = 64
OUT_SLOT = 64
COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")
DIVISORS = (0, 1, -1, 2, -2, 3, 4, 7, 8, -9, 10, 16, 255, 1000, 65536, 1000000007, -2147483648, 2147483647)


def variables() -> list[ir.Var]:
    return [variable(t, i) for t in SCALARS + VECTORS for i in range(VARIABLES)]


def slot_of(var: ir.Var) -> int:
    return variables().index(var)


def variable(t: Type, index: int) -> ir.Var:
    return ir.Var(f"{t.kind}_{index}" if t.lanes == 1 else f"{t.kind}x{t.lanes}_{index}", t)


def int_constant(draw, t: Type) -> ir.Expr:
    edge = [0, 1, t.max, t.min, t.max - 1, t.min + 1] + ([-1] if t.is_signed else [])
    return ir.IntImm(draw(st.one_of(st.sampled_from(edge), st.integers(t.min, t.max))), t)


def float_constant(draw, t: Type) -> ir.Expr:
    value = draw(
        st.one_of(
            st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1e-3, 65504.0]),
            st.floats(-1e4, 1e4, allow_nan=False, width=32),
        )
    )
    return ir.FloatImm(value, t)


@st.composite
def int_expr(draw, t: Type, depth: int) -> ir.Expr:
    if depth == 0:
        if draw(st.booleans()):
            return variable(t, draw(st.integers(0, VARIABLES - 1)))
        return int_constant(draw, t)

    def sub(u: Type = t, d: int | None = None):
        return draw(int_expr(u, depth - 1 if d is None else d))

    wide = t.bits == 32
    kinds = ["binary", "binary", "shift", "unary", "select", "cast", "compare", "divide"]
    if wide:
        kinds += ["ternary"]
    kind = draw(st.sampled_from(kinds))
    if kind == "binary":
        op = draw(st.sampled_from(("add", "sub", "mul", "and", "or", "xor", "min", "max")))
        a, b = sub(), sub(d=draw(st.integers(0, depth - 1)))
        return ir.Binary(op, *((a, b) if draw(st.booleans()) else (b, a)))
    if kind == "shift":
        return ir.Binary(draw(st.sampled_from(("shl", "shr"))), sub(), sub(draw(st.sampled_from(INTS)), 0))
    if kind == "divide":
        d = draw(st.sampled_from(DIVISORS))
        divisor = ir.IntImm(((d - t.min) % (1 << t.bits)) + t.min if t.is_signed else d % (1 << t.bits), t)
        return ir.Binary(draw(st.sampled_from(("div", "mod"))), sub(), divisor)
    if kind == "unary":
        return ir.Unary(draw(st.sampled_from(("neg", "bitnot"))), sub())
    if kind == "ternary":
        args = [sub(), sub(d=0), sub(d=0)]
        order = draw(st.permutations(range(3)))
        return ir.Ternary(draw(st.sampled_from(("add3", "mad"))), *(args[i] for i in order))
    if kind == "select":
        return ir.Select(draw(condition(depth - 1)), sub(), sub(d=0))
    if kind == "cast":
        u = draw(st.sampled_from(SCALARS))
        inner = draw(float_expr(u, depth - 1)) if u.is_float else sub(u)
        return ir.Cast(t, inner, draw(st.booleans()) and not u.is_float)
    return ir.Cast(t, draw(condition(depth - 1)))


@st.composite
def condition(draw, depth: int) -> ir.Expr:
    u = draw(st.sampled_from(SCALARS))

    def operand(d):
        return draw(float_expr(u, d)) if u.is_float else draw(int_expr(u, d))

    cond = ir.Binary(draw(st.sampled_from(COMPARE)), operand(max(depth, 0)), operand(0))
    if draw(st.booleans()):
        other = ir.Binary(draw(st.sampled_from(COMPARE)), operand(0), operand(0))
        cond = ir.Binary(draw(st.sampled_from(("land", "lor"))), cond, other)
    if draw(st.booleans()):
        cond = ir.Unary("not", cond)
    return cond


@st.composite
def float_expr(draw, t: Type, depth: int) -> ir.Expr:
    if depth <= 0:
        if draw(st.booleans()):
            return variable(t, draw(st.integers(0, VARIABLES - 1)))
        return float_constant(draw, t)

    def sub(u: Type = t, d: int | None = None):
        return draw(float_expr(u, depth - 1 if d is None else d))

    kinds = ["binary", "binary", "unary", "select", "cast"]
    if t != BF16:
        kinds.append("mad")
    kind = draw(st.sampled_from(kinds))
    if kind == "binary":
        ops = ("add", "sub", "mul", "min", "max")
        a, b = sub(), sub(d=draw(st.integers(0, depth - 1)))
        return ir.Binary(draw(st.sampled_from(ops)), *((a, b) if draw(st.booleans()) else (b, a)))
    if kind == "unary":
        return ir.Unary("neg", sub())
    if kind == "mad":
        return ir.Ternary("mad", sub(), sub(d=0), sub(d=0))
    if kind == "select":
        return ir.Select(draw(condition(depth - 1)), sub(), sub(d=0))
    u = draw(st.sampled_from(SCALARS))
    if u == BF16 and t == BF16:
        u = F32
    inner = draw(float_expr(u, depth - 1)) if u.is_float else draw(int_expr(u, depth - 1))
    if t == BF16 and u.is_int and u.bits == 32:
        inner = ir.Cast(F32, inner)
    return ir.Cast(t, inner)


@st.composite
def vector_expr(draw, t: Type, depth: int) -> ir.Expr:
    """Lane-wise expressions of vector type `t`: vector variables, broadcasts of scalar
    expressions, lane shuffles, and the scalar operators applied lane by lane."""
    scalar = t.scalar
    if depth <= 0:
        if draw(st.booleans()):
            return variable(t, draw(st.integers(0, VARIABLES - 1)))
        inner = draw(float_expr(scalar, 1)) if scalar.is_float else draw(int_expr(scalar, 1))
        return ir.Broadcast(inner, t.lanes)

    def sub(u: Type = t, d: int | None = None):
        return draw(vector_expr(u, depth - 1 if d is None else d))

    kinds = ["binary", "binary", "select", "cast", "shuffle", "unary"]
    if scalar.bits == 32:
        kinds.append("ternary")
    kind = draw(st.sampled_from(kinds))
    if kind == "binary":
        ops = (
            ("add", "sub", "mul", "min", "max")
            if scalar.is_float
            else ("add", "sub", "mul", "and", "or", "xor", "min", "max", "shl", "shr", "div", "mod")
        )
        op = draw(st.sampled_from(ops))
        a = sub()
        if op in ("div", "mod"):
            d = draw(st.sampled_from(DIVISORS))
            b = ir.Broadcast(
                ir.IntImm(
                    ((d - scalar.min) % (1 << scalar.bits)) + scalar.min
                    if scalar.is_signed
                    else d % (1 << scalar.bits),
                    scalar,
                ),
                t.lanes,
            )
            return ir.Binary(op, a, b)
        b = sub(d=draw(st.integers(0, depth - 1)))
        return ir.Binary(op, *((a, b) if draw(st.booleans()) else (b, a)))
    if kind == "unary":
        return ir.Unary("neg" if scalar.is_float or draw(st.booleans()) else "bitnot", sub())
    if kind == "ternary":
        op = "mad" if scalar.is_float else draw(st.sampled_from(("add3", "mad")))
        return ir.Ternary(op, sub(), sub(d=0), sub(d=0))
    if kind == "select":
        u = draw(st.sampled_from(VECTORS)).with_lanes(t.lanes)
        cond = ir.Binary(draw(st.sampled_from(COMPARE)), draw(vector_expr(u, depth - 1)), draw(vector_expr(u, 0)))
        if draw(st.booleans()):
            cond = ir.Binary(
                "land",
                cond,
                ir.Binary(draw(st.sampled_from(COMPARE)), draw(vector_expr(u, 0)), draw(vector_expr(u, 0))),
            )
        return ir.Select(cond, sub(), sub(d=0))
    if kind == "shuffle":
        indices = draw(st.sampled_from(("reverse", "even", "rotate")))
        n = t.lanes
        if indices == "even":
            wide = t.with_lanes(2 * n) if 2 * n * scalar.size <= 128 and t.with_lanes(2 * n) in VECTORS else None
            if wide is None:
                return ir.Shuffle((sub(),), tuple(range(n - 1, -1, -1)))
            return ir.Shuffle((sub(), sub(d=0)), tuple(range(0, 2 * n, 2)))
        picks = tuple(range(n - 1, -1, -1)) if indices == "reverse" else tuple((i + 1) % n for i in range(n))
        return ir.Shuffle((sub(),), picks)
    u = draw(st.sampled_from(VECTORS)).with_lanes(t.lanes)
    if u.scalar.kind == "bf16" and (scalar.is_int and scalar.bits == 32 or scalar.kind == "bf16"):
        u = F32.with_lanes(t.lanes)
    if scalar.kind == "bf16" and u.scalar.is_int and u.scalar.bits == 32:
        u = F32.with_lanes(t.lanes)
    return ir.Cast(t, draw(vector_expr(u, depth - 1)), draw(st.booleans()) and u.scalar.is_int and scalar.is_int)


def any_vector_expr(depth: int = 2):
    return st.sampled_from(VECTORS).flatmap(lambda t: vector_expr(t, depth))


def any_scalar_expr(depth: int = 3):
    return st.sampled_from(SCALARS).flatmap(lambda t: float_expr(t, depth) if t.is_float else int_expr(t, depth))


# --- the kernel -----------------------------------------------------------------------------------


def expression_kernel(exprs: list[ir.Expr]) -> str:
    """IR text: load this thread's scalar variables and the vectors used, store every expression."""
    from xegen.ir.visitor import walk

    used = {n.name for e in exprs for n in walk(e) if isinstance(n, ir.Var)}
    lines = []
    for slot, var in enumerate(variables()):
        if var.type.lanes > 1 and not any(var.name == n for n in used):
            continue
        lines.append(f"let {var.name} = inp.{var.type}[(group_id0 * {len(variables())} + {slot}) * {SLOT}];")
    for i, e in enumerate(exprs):
        lines.append(f"out[(group_id0 * {len(exprs)} + {i}) * {OUT_SLOT}] = {e};")
    return "\n".join(lines)


def random_inputs(rng: np.random.Generator, threads: int) -> np.ndarray:
    """Per thread and variable a 16-byte slot; values at the start, in the variable's type."""
    data = np.zeros((threads, len(variables()), SLOT), dtype=np.uint8)
    for slot, var in enumerate(variables()):
        t = var.type.scalar
        lanes = var.type.lanes
        count = threads * lanes
        if t.is_int:
            edges = np.array([0, 1, -1, t.min, t.max, t.max - 1, t.min + 1], dtype=np.int64)
            values = np.where(
                rng.random(count) < 0.3, rng.choice(edges, count), rng.integers(t.min, t.max + 1, count, dtype=np.int64)
            )
            raw = values.astype(np.dtype(t.kind.replace("s", "int").replace("u", "uint")))
        else:
            special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 65504.0, 1e-7, 3e38])
            values = np.where(
                rng.random(count) < 0.3,
                rng.choice(special, count),
                rng.standard_normal(count) * 10.0 ** rng.integers(-3, 4, count),
            )
            with np.errstate(over="ignore"):
                if t == BF16:
                    raw = (values.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
                else:
                    raw = values.astype(np.float32 if t == F32 else np.float16)
        size = t.size * lanes
        data[:, slot, :size] = np.ascontiguousarray(raw).view(np.uint8).reshape(threads, size)
    return data.reshape(-1)


def results(buffer: np.ndarray, exprs: list[ir.Expr], threads: int) -> list[np.ndarray]:
    """Each expression's values per thread, as comparable arrays (floats by value, NaN = NaN)."""
    rows = buffer.reshape(threads, len(exprs), OUT_SLOT)
    out = []
    for i, e in enumerate(exprs):
        t = e.type
        raw = np.ascontiguousarray(rows[:, i, : t.size * t.lanes])
        if t.kind == "bf16":
            values = (raw.view(np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32).reshape(threads, -1)
        else:
            from xegen.ir.semantics import numpy_dtype

            values = raw.view(numpy_dtype(t.scalar))
        out.append(values.reshape(threads, -1))
    return out


def same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind == "f":
        return bool(
            np.array_equal(a, b, equal_nan=True)
            and np.array_equal(np.signbit(a[~np.isnan(a)]), np.signbit(b[~np.isnan(b)]))
        )
    return bool(np.array_equal(a, b))
