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
    BINARY_OPS,
    UNARY_OPS,
    Binary,
    BoolImm,
    Broadcast,
    Cast,
    Expr,
    FloatImm,
    IntImm,
    IRTypeError,
    Load,
    Node,
    Ptr,
    Select,
    Shuffle,
    Ternary,
    Unary,
    Var,
    binary,
    ternary,
    unary,
)
from .funcs import Func
from .stmt import Alloc, Call, For, IfThenElse, Let, Seq, Stmt, Store
from .types import F32, S32, Type, literal_type
from .visitor import walk

# C precedence: higher binds tighter.
PRECEDENCE = {
    "lor": 2,
    "land": 3,
    "or": 4,
    "xor": 5,
    "and": 6,
    "eq": 7,
    "ne": 7,
    "lt": 8,
    "le": 8,
    "gt": 8,
    "ge": 8,
    "shl": 9,
    "shr": 9,
    "add": 10,
    "sub": 10,
    "mul": 11,
    "div": 11,
    "mod": 11,
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
    if value != 0 and value == math.floor(value) and abs(value) < 1e16:
        return f"{int(value)}.0"  # every digit of a whole number: 65504.0, not f16's shortest 65500.0
    if t.kind == "f64":
        text = repr(value)
    else:
        holder = np.float16(value) if t.kind == "f16" else np.float32(value)
        text = (
            np.format_float_positional(holder, unique=True, trim="0")
            if abs(value) < 1e16 and (value == 0 or abs(value) >= 1e-5)
            else np.format_float_scientific(holder, unique=True, trim="0")
        )
    if not any(c in text for c in ".en"):
        text += ".0"
    return text


def precedence(e: Expr) -> int:
    if isinstance(e, Binary) and e.op in PRECEDENCE:
        return PRECEDENCE[e.op]
    if isinstance(e, Select):
        return SELECT_PRECEDENCE
    if isinstance(e, Unary) and UNARY_OPS[e.op] == e.op:
        return PRIMARY_PRECEDENCE
    if isinstance(e, (Unary, Cast)):
        return UNARY_PRECEDENCE
    if isinstance(e, IntImm) and e.value < 0:
        return UNARY_PRECEDENCE
    if isinstance(e, FloatImm) and (e.value < 0 or (e.value == 0 and math.copysign(1, e.value) < 0)):
        return UNARY_PRECEDENCE
    return PRIMARY_PRECEDENCE


def _c_syntax_rebuilds(e: Unary | Binary | Ternary) -> bool:
    """Does the C form of this operation parse back to the very same node?"""
    try:
        if isinstance(e, Unary):
            return unary(e.op, e.a) == e
        if isinstance(e, Binary):
            return binary(e.op, e.a, e.b) == e
        return ternary(e.op, e.a, e.b, e.c) == e
    except IRTypeError:
        return False


class _Names:
    """Which variables need their type written (`x:u8`) for the parser to know it.

    A plain name inside a `let`/`for` of that name has the binder's type, elsewhere s32 (or
    the type of the name's annotations outside binders, which must then all agree)."""

    def __init__(self, root, scope: dict[str, Type] | None = None):
        self.scope = scope or {}
        if root is not None:
            types: dict[str, set[Type]] = {}
            for node in walk(root):
                if isinstance(node, Var):
                    types.setdefault(node.name, set()).add(node.type)
            # a name used with several types is annotated everywhere outside its binders
            self.several_types = {name for name, found in types.items() if len(found) > 1}

    def bind(self, var: Var) -> _Names:
        inner = _Names(None, {**self.scope, var.name: var.type})
        inner.several_types = self.several_types
        return inner

    def suffix(self, var: Var) -> str:
        if var.name in self.scope:
            return format_type_suffix(var.type, self.scope[var.name])
        if var.name in self.several_types:
            return f":{var.type}"
        return format_type_suffix(var.type, S32)


def format_expr(e: Expr, names: _Names | None = None) -> str:
    """The C-like text of an expression (built with an explicit stack: deep trees print)."""
    names = names or _Names(e)
    out: list[str] = []
    pending: list = [(e, 0)]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        node, needed = item  # print `node`, in parentheses if it binds less tightly than `needed`
        parts = _parts(node, names)
        if precedence(node) < needed:
            parts = ["(", *parts, ")"]
        pending.extend(reversed(parts))
    return "".join(out)


def _parts(e: Expr, names: _Names) -> list:
    """The text of `e` as strings and (subexpression, precedence it needs) pairs."""
    if isinstance(e, Var):
        return [e.name + names.suffix(e)]
    if isinstance(e, IntImm):
        return [str(e.value) + format_type_suffix(e.type, literal_type(e.value))]
    if isinstance(e, FloatImm):
        return [format_float(e.value, e.type) + format_type_suffix(e.type, F32)]
    if isinstance(e, BoolImm):
        return ["true" if e.value else "false"]
    if isinstance(e, (Unary, Binary, Ternary)) and not _c_syntax_rebuilds(e):
        # C's promotions would change this node (e.g. s8 arithmetic): spell the operation out
        operands = (e.a,) if isinstance(e, Unary) else (e.a, e.b) if isinstance(e, Binary) else (e.a, e.b, e.c)
        return [f"{e.op}.{e.a.type.scalar}(", *_listed(operands), ")"]
    if isinstance(e, Unary):
        if UNARY_OPS[e.op] == e.op:  # a call: exp2(x)
            return [f"{e.op}(", (e.a, 0), ")"]
        if isinstance(e.a, (Unary, IntImm, FloatImm)):
            return [UNARY_OPS[e.op], "(", (e.a, 0), ")"]  # keep -(3) a negation, not the literal -3
        return [UNARY_OPS[e.op], (e.a, UNARY_PRECEDENCE)]
    if isinstance(e, Binary):
        symbol = BINARY_OPS[e.op][0]
        if symbol == e.op:  # a call: min(a, b)
            return [f"{symbol}(", *_listed((e.a, e.b)), ")"]
        p = PRECEDENCE[e.op]
        return [(e.a, p), f" {symbol} ", (e.b, p + 1)]
    if isinstance(e, Ternary):
        return [f"{e.op}(", *_listed((e.a, e.b, e.c)), ")"]
    if isinstance(e, Select):
        return [
            (e.cond, SELECT_PRECEDENCE + 1),
            " ? ",
            (e.true_value, SELECT_PRECEDENCE + 1),
            " : ",
            (e.false_value, SELECT_PRECEDENCE),
        ]
    if isinstance(e, Cast):
        prefix = "sat " if e.saturate else ""
        target = e.type.scalar if e.type.lanes == e.value.type.lanes and e.type.lanes > 1 else e.type
        return [f"({prefix}{target})", (e.value, UNARY_PRECEDENCE)]
    if isinstance(e, Load):
        stride = f", stride={e.stride}" if e.stride is not None else ""
        return [f"{e.buffer.name}.{e.type}[", (e.offset, 0), f"{stride}]"]
    if isinstance(e, Ptr):
        return [f"&{e.buffer.name}[", (e.offset, 0), "]"]
    if isinstance(e, Broadcast):
        return ["broadcast(", (e.value, 0), f", {e.lanes})"]
    if isinstance(e, Shuffle):
        indices = ",".join(str(i) for i in e.indices)
        return [f"shuffle<{indices}>(", *_listed(e.vectors), ")"]
    raise TypeError(f"cannot print {type(e).__name__}")


def _listed(operands) -> list:
    """Function arguments: `a, b, c`."""
    parts: list = []
    for i, operand in enumerate(operands):
        parts += [", "] if i else []
        parts.append((operand, 0))
    return parts


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


def _block(s: Stmt, indent: str, names: _Names) -> list[str]:
    """The lines of `s` as the contents of a block.  A let or alloc last in a block scopes over
    the rest of it, so a chain of them prints flat (in a loop: thousands of lets print)."""
    lines: list[str] = []
    while True:
        items = s.stmts if isinstance(s, Seq) else (s,)
        for item in items[:-1]:
            if isinstance(item, (Let, Alloc)):  # its scope must end before the next item
                lines += [indent + "{", *_block(item, indent + "  ", names), indent + "}"]
            else:
                lines += _stmt(item, indent, names)
        last = items[-1] if items else None
        if not isinstance(last, (Let, Alloc)):
            return lines + ([] if last is None else _stmt(last, indent, names))
        lines.append(indent + _scoped_head(last, names))
        names = names.bind(last.var) if isinstance(last, Let) else names
        s = last.body


def _scoped_head(s: Let | Alloc, names: _Names) -> str:
    if isinstance(s, Alloc):
        return f"alloc {s.buffer.name}[{s.size}] {s.kind};"
    value = "" if s.value is None else f" = {format_expr(s.value, names)}"
    return f"let {s.var.name}{format_type_suffix(s.var.type, S32)}{value};"


def _stmt(s: Stmt, indent: str, names: _Names) -> list[str]:
    inner = indent + "  "
    if isinstance(s, (Let, Alloc)):
        return _block(s, indent, names)
    if isinstance(s, For):
        unroll = "" if s.unroll == 1 else " unroll(full)" if s.unroll == 0 else f" unroll({s.unroll})"
        binder = s.var.name + format_type_suffix(s.var.type, S32)
        head = (
            f"{indent}for ({binder} = {format_expr(s.init, names)}; {s.var.name} < "
            f"{format_expr(s.bound, names)}){unroll} {{"
        )
        return [head, *_block(s.body, inner, names.bind(s.var)), indent + "}"]
    if isinstance(s, IfThenElse):
        lines = [f"{indent}if ({format_expr(s.cond, names)}) {{", *_block(s.then_case, inner, names)]
        if s.else_case is not None:
            lines += [indent + "} else {", *_block(s.else_case, inner, names)]
        return lines + [indent + "}"]
    if isinstance(s, Seq):
        if not s.stmts:
            return [indent + "{}"]
        return [indent + "{", *_block(s, inner, names), indent + "}"]
    if isinstance(s, Store):
        stride = f", stride={s.stride}" if s.stride is not None else ""
        mask = f" if {format_expr(s.mask, names)}" if s.mask is not None else ""
        return [
            f"{indent}{s.buffer.name}[{format_expr(s.offset, names)}{stride}] = {format_expr(s.value, names)}{mask};"
        ]
    if isinstance(s, Call):
        args = ", ".join("null" if a is None else format_expr(a, names) for a in s.args)
        return [f"{indent}{format_func(s.func)}({args});"]
    raise TypeError(f"cannot print {type(s).__name__}")


def format_stmt(s: Stmt) -> str:
    names = _Names(s)
    if isinstance(s, Seq) and s.stmts:
        return "\n".join(_block(s, "", names))
    return "\n".join(_stmt(s, "", names))


def format_node(node) -> str:
    if isinstance(node, Expr):
        return format_expr(node)
    if isinstance(node, Stmt):
        return format_stmt(node)
    if isinstance(node, Func):
        return format_func(node)
    raise TypeError(f"cannot print {type(node).__name__}")


Node.text_form = format_node  # str() of every node (expr.py)
