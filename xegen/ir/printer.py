"""The text form of IR: C-like expressions and a small statement language.

Expressions print with the fewest parentheses C's precedence allows.  Types are written after
a colon where the parser could not infer them: `x:u16`, `3:u32`, `1.5:f16` (variables default
to s32, integer literals to s32/s64 by magnitude, float literals to f32).  Casts are `(u32)x`,
saturating casts `(sat u8)x`; loads `buf.f32x8[offset]` (`, stride=N` when not dense);
pointers `&buf[offset]`; broadcasts `broadcast(x, 8)`; shuffles `shuffle<0,2,1>(a, b)`.

Statements (one per line, blocks in braces; `let` and `alloc` scope to the end of their block):

    alloc c[256] grf;
    for (k = 0; k < 16) unroll(4) {
      let off = k * 64;
      c[off] = a.f32x8[off] if m;
      mad<exec_size=8, ...>(&c[0], null, &a[off], &b[0]);
    }
"""

from __future__ import annotations

import math
from dataclasses import MISSING, fields

import numpy as np

from .expr import (
    BINARY_OPS, UNARY_OPS, Binary, IRTypeError, binary, ternary, unary, BoolImm, Broadcast, Cast, Expr, FloatImm, IntImm, Load, Ptr, Select,
    Shuffle, Ternary, Unary, Var,
)
from .funcs import Func
from .stmt import Alloc, Call, For, IfThenElse, Let, Seq, Stmt, Store
from .types import F32, S32, Type, literal_type

# C precedence: higher binds tighter.
PRECEDENCE = {
    "lor": 2, "land": 3, "or": 4, "xor": 5, "and": 6, "eq": 7, "ne": 7,
    "lt": 8, "le": 8, "gt": 8, "ge": 8, "shl": 9, "shr": 9,
    "add": 10, "sub": 10, "mul": 11, "div": 11, "mod": 11,
}
SELECT_PRECEDENCE = 1
UNARY_PRECEDENCE = 12
PRIMARY_PRECEDENCE = 13


def format_type_suffix(t: Type, default: Type) -> str:
    return "" if t == default else f":{t}"


def format_float(value: float, t: Type) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if t.kind == "f64":
        text = repr(value)
    else:
        holder = np.float16(value) if t.kind == "f16" else np.float32(value)
        text = np.format_float_positional(holder, unique=True, trim="0") if abs(value) < 1e16 and (
            value == 0 or abs(value) >= 1e-5) else np.format_float_scientific(holder, unique=True, trim="0")
    if not any(c in text for c in ".en"):
        text += ".0"
    return text


def precedence(e: Expr) -> int:
    if isinstance(e, Binary) and e.op in PRECEDENCE:
        return PRECEDENCE[e.op]
    if isinstance(e, Select):
        return SELECT_PRECEDENCE
    if isinstance(e, (Unary, Cast)):
        return UNARY_PRECEDENCE
    if isinstance(e, IntImm) and e.value < 0:
        return UNARY_PRECEDENCE
    if isinstance(e, FloatImm) and (e.value < 0 or (e.value == 0 and math.copysign(1, e.value) < 0)):
        return UNARY_PRECEDENCE
    return PRIMARY_PRECEDENCE


def _wrap(e: Expr, needed: int) -> str:
    text = format_expr(e)
    return f"({text})" if precedence(e) < needed else text


def _c_syntax_rebuilds(e: Expr) -> bool:
    """Does the C form of this operation parse back to the very same node?"""
    try:
        if isinstance(e, Unary):
            return unary(e.op, e.a) == e
        if isinstance(e, Binary):
            return binary(e.op, e.a, e.b) == e
        return ternary(e.op, e.a, e.b, e.c) == e
    except IRTypeError:
        return False


def format_expr(e: Expr) -> str:
    if isinstance(e, Var):
        return e.name + format_type_suffix(e.type, S32)
    if isinstance(e, IntImm):
        return str(e.value) + format_type_suffix(e.type, literal_type(e.value))
    if isinstance(e, FloatImm):
        return format_float(e.value, e.type) + format_type_suffix(e.type, F32)
    if isinstance(e, BoolImm):
        return "true" if e.value else "false"
    if isinstance(e, (Unary, Binary, Ternary)) and not _c_syntax_rebuilds(e):
        # C's promotions would change this node (e.g. s8 arithmetic): spell the operation out
        operands = (e.a,) if isinstance(e, Unary) else (e.a, e.b) if isinstance(e, Binary) else (e.a, e.b, e.c)
        return f"{e.op}.{e.a.type.scalar}({', '.join(format_expr(x) for x in operands)})"
    if isinstance(e, Unary):
        operand = _wrap(e.a, UNARY_PRECEDENCE)
        if isinstance(e.a, (Unary, IntImm, FloatImm)) and not operand.startswith("("):
            operand = f"({operand})"  # keep -(3) a negation, not the literal -3
        return UNARY_OPS[e.op] + operand
    if isinstance(e, Binary):
        symbol = BINARY_OPS[e.op][0]
        if e.op in ("min", "max"):
            return f"{symbol}({format_expr(e.a)}, {format_expr(e.b)})"
        p = PRECEDENCE[e.op]
        return f"{_wrap(e.a, p)} {symbol} {_wrap(e.b, p + 1)}"
    if isinstance(e, Ternary):
        return f"{e.op}({format_expr(e.a)}, {format_expr(e.b)}, {format_expr(e.c)})"
    if isinstance(e, Select):
        return (f"{_wrap(e.cond, SELECT_PRECEDENCE + 1)} ? {_wrap(e.true_value, SELECT_PRECEDENCE + 1)}"
                f" : {_wrap(e.false_value, SELECT_PRECEDENCE)}")
    if isinstance(e, Cast):
        prefix = "sat " if e.saturate else ""
        target = e.type.scalar if e.type.lanes == e.value.type.lanes and e.type.lanes > 1 else e.type
        return f"({prefix}{target}){_wrap(e.value, UNARY_PRECEDENCE)}"
    if isinstance(e, Load):
        stride = f", stride={e.stride}" if e.stride is not None else ""
        return f"{e.buffer.name}.{e.type}[{format_expr(e.offset)}{stride}]"
    if isinstance(e, Ptr):
        return f"&{e.buffer.name}[{format_expr(e.offset)}]"
    if isinstance(e, Broadcast):
        return f"broadcast({format_expr(e.value)}, {e.lanes})"
    if isinstance(e, Shuffle):
        indices = ",".join(str(i) for i in e.indices)
        return f"shuffle<{indices}>({', '.join(format_expr(v) for v in e.vectors)})"
    raise TypeError(f"cannot print {type(e).__name__}")


def format_attribute(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def format_func(f: Func) -> str:
    """`name<attr=value, ...>`, leaving out attributes at their default value."""
    defaults = {fl.name: fl.default for fl in fields(f)}
    shown = {k: v for k, v in f.attributes().items() if defaults[k] is MISSING or v != defaults[k]}
    if not shown:
        return f.name
    return f"{f.name}<{', '.join(f'{k}={format_attribute(v)}' for k, v in shown.items())}>"


def _block(s: Stmt, indent: str) -> list[str]:
    """The lines of `s` as the contents of a block."""
    items = s.stmts if isinstance(s, Seq) else (s,)
    lines: list[str] = []
    for i, item in enumerate(items):
        scoped = isinstance(item, (Let, Alloc))
        if scoped and i < len(items) - 1:  # its scope must end before the next item
            lines.append(indent + "{")
            lines += _block(item, indent + "  ")
            lines.append(indent + "}")
        else:
            lines += _stmt(item, indent)
    return lines


def _stmt(s: Stmt, indent: str) -> list[str]:
    inner = indent + "  "
    if isinstance(s, Let):
        value = "" if s.value is None else f" = {format_expr(s.value)}"
        return [f"{indent}let {format_expr(s.var)}{value};", *_block(s.body, indent)]
    if isinstance(s, Alloc):
        return [f"{indent}alloc {s.buffer.name}[{s.size}] {s.kind};", *_block(s.body, indent)]
    if isinstance(s, For):
        unroll = "" if s.unroll == 1 else " unroll(full)" if s.unroll == 0 else f" unroll({s.unroll})"
        head = f"{indent}for ({format_expr(s.var)} = {format_expr(s.init)}; {s.var.name} < {format_expr(s.bound)}){unroll} {{"
        return [head, *_block(s.body, inner), indent + "}"]
    if isinstance(s, IfThenElse):
        lines = [f"{indent}if ({format_expr(s.cond)}) {{", *_block(s.then_case, inner)]
        if s.else_case is not None:
            lines += [indent + "} else {", *_block(s.else_case, inner)]
        return lines + [indent + "}"]
    if isinstance(s, Seq):
        if not s.stmts:
            return [indent + "{}"]
        return [indent + "{", *_block(s, inner), indent + "}"]
    if isinstance(s, Store):
        stride = f", stride={s.stride}" if s.stride is not None else ""
        mask = f" if {format_expr(s.mask)}" if s.mask is not None else ""
        return [f"{indent}{s.buffer.name}[{format_expr(s.offset)}{stride}] = {format_expr(s.value)}{mask};"]
    if isinstance(s, Call):
        args = ", ".join("null" if a is None else format_expr(a) for a in s.args)
        return [f"{indent}{format_func(s.func)}({args});"]
    raise TypeError(f"cannot print {type(s).__name__}")


def format_stmt(s: Stmt) -> str:
    if isinstance(s, Seq) and s.stmts:
        return "\n".join(_block(s, ""))
    return "\n".join(_stmt(s, ""))


def format_node(node) -> str:
    if isinstance(node, Expr):
        return format_expr(node)
    if isinstance(node, Stmt):
        return format_stmt(node)
    if isinstance(node, Func):
        return format_func(node)
    raise TypeError(f"cannot print {type(node).__name__}")
