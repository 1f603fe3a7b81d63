"""IR walks without recursion, for the statements instruction selection looks through.

After scheduling and CSE a kernel body holds chains of lets more than a thousand deep (one let per
shared subexpression, nested), deeper than Python's recursion limit, which `ir.walk` and
`ir.substitute` descend by recursion (one frame per level).  These do the same with a stack.
"""

from __future__ import annotations

from typing import Iterator, Mapping

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.visitor import children, substitute


def nodes(node: E.Node) -> Iterator[E.Node]:
    """Every IR node under `node` (itself included), parents first, in `ir.walk`'s order."""
    stack = [node]
    while stack:
        item = stack.pop()
        yield item
        stack.extend(reversed(tuple(children(item))))


def _inner_statements(s: S.Stmt) -> tuple[S.Stmt, ...] | None:
    """The statements directly inside a compound statement; None for a leaf statement."""
    if isinstance(s, (S.Let, S.For, S.Alloc)):
        return (s.body,)
    if isinstance(s, S.Seq):
        return s.stmts
    if isinstance(s, S.IfThenElse):
        return (s.then_case,) if s.else_case is None else (s.then_case, s.else_case)
    return None


def _rebuilt(s: S.Stmt, inner: list[S.Stmt], mapping: Mapping[E.Node, E.Node]) -> S.Stmt:
    """Compound statement `s` over new inner statements, its own expressions substituted."""
    def sub(e: E.Expr | None) -> E.Expr | None:
        return None if e is None else substitute(e, mapping)

    if isinstance(s, S.Let):
        return S.Let(s.var, sub(s.value), inner[0])
    if isinstance(s, S.For):
        return S.For(s.var, sub(s.init), sub(s.bound), inner[0], s.unroll)
    if isinstance(s, S.Alloc):
        return S.Alloc(s.buffer, s.size, s.kind, inner[0])
    if isinstance(s, S.Seq):
        return S.Seq(tuple(inner))
    if isinstance(s, S.IfThenElse):
        return S.IfThenElse(sub(s.cond), inner[0], inner[1] if len(inner) > 1 else None)
    raise TypeError(type(s).__name__)


def substitute_stmt(stmt: S.Stmt, mapping: Mapping[E.Node, E.Node]) -> S.Stmt:
    """`ir.substitute` for a statement: every expression with the keys of `mapping` replaced;
    binders (let and loop variables, buffers) stay as they are."""
    done: list[S.Stmt] = []  # rebuilt statements, the inner ones of a compound on top
    stack: list[tuple[S.Stmt, bool]] = [(stmt, False)]
    while stack:
        s, expanded = stack.pop()
        inner = _inner_statements(s)
        if inner is None:
            done.append(substitute(s, mapping))
        elif not expanded:
            stack.append((s, True))
            stack.extend((x, False) for x in reversed(inner))
        else:
            cut = len(done) - len(inner)
            new_inner = done[cut:]
            del done[cut:]
            done.append(_rebuilt(s, new_inner, mapping))
    return done[0]
