"""Walking and rewriting IR: visitor, mutator, substitution, free variables, fresh names, node counts.

`Visitor.visit` calls `visit_<ClassName>` when a subclass defines it, else visits the children.
`Mutator.mutate` calls `mutate_<ClassName>` when defined, else rebuilds the node from its mutated
children (returning the same object when nothing changed).

Passes over a kernel's statements mostly care about the expressions each statement evaluates (a
let's value, a loop's bounds, a condition, a store's offset, value and mask, a call's arguments:
`expressions`), taken whole, in program order, with the binders around them: `StmtVisitor` and
`StmtMutator` walk statements that way (`xegen.passes` and the e-graph optimizer build on them).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import fields
from typing import TypeVar

from .expr import Expr, Node, Var
from .funcs import Func
from .stmt import Alloc, Call, For, IfThenElse, Let, Seq, Stmt, Store, seq

ExprOrStmt = TypeVar("ExprOrStmt", Expr, Stmt)  # what a rewrite of expressions returns as it got
Pattern = TypeVar("Pattern", bound=Expr)  # the keys of a substitution (a Mapping's key type is invariant)


#: field annotations that never hold an IR node: a walk skips those fields without reading them
#: (most nodes a walk meets are leaves, variables and constants, whose fields are all such)
_SCALAR_ANNOTATIONS = frozenset({"str", "int", "float", "bool", "Type", "int | None", "tuple[int, ...]"})

#: node class -> the names of its fields that may hold IR nodes, in field order
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(node: Node) -> tuple[str, ...]:
    cls = type(node)
    try:
        return _CHILD_FIELDS[cls]
    except KeyError:
        names = tuple(f.name for f in fields(cls) if f.init and f.type not in _SCALAR_ANNOTATIONS)
        _CHILD_FIELDS[cls] = names
        return names


#: node class -> the names of all its constructor's fields
_INIT_FIELDS: dict[type, tuple[str, ...]] = {}


def _init_fields(cls: type) -> tuple[str, ...]:
    try:
        return _INIT_FIELDS[cls]
    except KeyError:
        names = _INIT_FIELDS[cls] = tuple(f.name for f in fields(cls) if f.init)
        return names


#: (visitor or mutator class, node class) -> its `visit_<NodeClass>` / `mutate_<NodeClass>`
#: function, or None: a walk meets every node, and looking the method up by name (a miss, for
#: most nodes) cost as much as the rest of the visit
_VISIT_METHODS: dict[tuple[type, type], Callable | None] = {}
_MUTATE_METHODS: dict[tuple[type, type], Callable | None] = {}


def children(node: Node) -> tuple[Node, ...]:
    """The IR nodes directly below `node`, in field order.  Kept on the node once found (nodes
    are immutable): every walk asks for them, and the passes walk the same subtrees many times."""
    try:
        return node._children
    except AttributeError:
        pass
    found: list[Node] = []
    for name in _child_fields(node):
        value = getattr(node, name)
        if isinstance(value, Node):
            if not isinstance(value, Func):
                found.append(value)
        elif isinstance(value, tuple):
            found.extend([item for item in value if isinstance(item, Node)])
    below = tuple(found)
    object.__setattr__(node, "_children", below)
    return below


class Visitor:
    def visit(self, node: Node) -> None:
        key = (type(self), type(node))
        try:
            method = _VISIT_METHODS[key]
        except KeyError:
            method = _VISIT_METHODS[key] = getattr(type(self), "visit_" + type(node).__name__, None)
        if method is not None:
            method(self, node)
        else:
            self.visit_children(node)

    def visit_children(self, node: Node) -> None:
        for child in children(node):
            self.visit(child)


class Mutator:
    def mutate(self, node):
        if node is None:
            return None
        key = (type(self), type(node))
        try:
            method = _MUTATE_METHODS[key]
        except KeyError:
            method = _MUTATE_METHODS[key] = getattr(type(self), "mutate_" + type(node).__name__, None)
        if method is not None:
            return method(self, node)
        return self.mutate_children(node)

    def mutate_children(self, node):
        if isinstance(node, Seq):
            items = [self.mutate(s) for s in node.stmts]
            if all(a is b for a, b in zip(items, node.stmts, strict=True)):
                return node
            return seq(*items) if items else Seq(())
        changed = False
        values = {}
        for name in _child_fields(node):
            old = getattr(node, name)
            if isinstance(old, Node) and not isinstance(old, Func):
                new = self.mutate(old)
            elif isinstance(old, tuple) and any(isinstance(x, Node) for x in old):
                new = tuple(self.mutate(x) if isinstance(x, Node) else x for x in old)
                new = old if all(a is b for a, b in zip(new, old, strict=True)) else new
            else:
                new = old
            changed |= new is not old
            values[name] = new
        if not changed:
            return node
        for name in _init_fields(type(node)):
            if name not in values:
                values[name] = getattr(node, name)
        return type(node)(**values)


def expressions(s: Stmt) -> list[Expr]:
    """The expressions statement `s` itself evaluates, in program order (not those of the
    statements inside it, nor its binder or buffer)."""
    if isinstance(s, Let):
        return [s.value] if s.value is not None else []
    if isinstance(s, For):
        return [s.init, s.bound]
    if isinstance(s, IfThenElse):
        return [s.cond]
    if isinstance(s, Store):
        return [e for e in (s.offset, s.value, s.mask) if e is not None]
    if isinstance(s, Call):
        return [a for a in s.args if a is not None]
    return []


class StmtVisitor(Visitor):
    """Visits statements in program order, handing each expression a statement evaluates
    (`expressions`) whole to `visit_expr`.  `scope` holds the Let and For statements around the
    one being visited, outermost first."""

    scope: tuple[Let | For, ...] = ()

    def visit_expr(self, e: Expr) -> None:
        pass

    def visit_inside(self, binder: Let | For) -> None:
        """Visit the body of `binder` with `binder` in scope."""
        outer = self.scope
        self.scope = outer + (binder,)
        try:
            self.visit(binder.body)
        finally:
            self.scope = outer

    def visit_Let(self, s: Let) -> None:
        for e in expressions(s):
            self.visit_expr(e)
        self.visit_inside(s)

    def visit_For(self, s: For) -> None:
        for e in expressions(s):
            self.visit_expr(e)
        self.visit_inside(s)

    def visit_Alloc(self, s: Alloc) -> None:
        self.visit(s.body)

    def visit_IfThenElse(self, s: IfThenElse) -> None:
        self.visit_expr(s.cond)
        self.visit(s.then_case)
        if s.else_case is not None:
            self.visit(s.else_case)

    def visit_Store(self, s: Store) -> None:
        for e in expressions(s):
            self.visit_expr(e)

    def visit_Call(self, s: Call) -> None:
        for e in expressions(s):
            self.visit_expr(e)


class StmtMutator(Mutator):
    """Rebuilds statements in program order, handing each expression a statement evaluates
    (`expressions`) whole to `mutate_expr`; binders and buffers stay as they are."""

    def mutate_expr(self, e: Expr) -> Expr:
        return e

    def _expr(self, e: Expr | None) -> Expr | None:
        return None if e is None else self.mutate_expr(e)

    def mutate_Let(self, s: Let) -> Stmt:
        value = self._expr(s.value)
        body = self.mutate(s.body)
        return s if value is s.value and body is s.body else Let(s.var, value, body)

    def mutate_For(self, s: For) -> Stmt:
        init, bound = self.mutate_expr(s.init), self.mutate_expr(s.bound)
        body = self.mutate(s.body)
        if init is s.init and bound is s.bound and body is s.body:
            return s
        return For(s.var, init, bound, body, s.unroll)

    def mutate_Alloc(self, s: Alloc) -> Stmt:
        body = self.mutate(s.body)
        return s if body is s.body else Alloc(s.buffer, s.size, s.kind, body)

    def mutate_IfThenElse(self, s: IfThenElse) -> Stmt:
        cond = self.mutate_expr(s.cond)
        then_case, else_case = self.mutate(s.then_case), self.mutate(s.else_case)
        if cond is s.cond and then_case is s.then_case and else_case is s.else_case:
            return s
        return IfThenElse(cond, then_case, else_case)

    def mutate_Store(self, s: Store) -> Stmt:
        offset, value, mask = self.mutate_expr(s.offset), self.mutate_expr(s.value), self._expr(s.mask)
        if offset is s.offset and value is s.value and mask is s.mask:
            return s
        return Store(s.buffer, offset, value, s.stride, mask)

    def mutate_Call(self, s: Call) -> Stmt:
        args = tuple(self._expr(a) for a in s.args)
        return s if all(a is b for a, b in zip(args, s.args, strict=True)) else Call(s.func, args)


class _Substituter(Mutator):
    def __init__(self, mapping: Mapping[Pattern, Expr]):
        self.mapping = mapping

    def mutate(self, node):
        replacement = self.mapping.get(node) if node is not None else None
        if replacement is not None:
            return replacement
        return super().mutate(node)


def substitute(node: ExprOrStmt, mapping: Mapping[Pattern, Expr]) -> ExprOrStmt:
    """Replace every occurrence of each key (structurally equal) by its value: an expression
    stays an expression, a statement a statement."""
    return _Substituter(mapping).mutate(node)


def _inner_statements(s: Stmt) -> tuple[Stmt, ...] | None:
    """The statements directly inside a compound statement; None for a leaf statement."""
    if isinstance(s, (Let, For, Alloc)):
        return (s.body,)
    if isinstance(s, Seq):
        return s.stmts
    if isinstance(s, IfThenElse):
        return (s.then_case,) if s.else_case is None else (s.then_case, s.else_case)
    return None


def _rebuilt(s: Stmt, inner: list[Stmt], mapping: Mapping[Pattern, Expr]) -> Stmt:
    """Compound statement `s` over new inner statements, its own expressions substituted."""

    def sub(e: Expr) -> Expr:
        return substitute(e, mapping)

    if isinstance(s, Let):
        return Let(s.var, None if s.value is None else sub(s.value), inner[0])
    if isinstance(s, For):
        return For(s.var, sub(s.init), sub(s.bound), inner[0], s.unroll)
    if isinstance(s, Alloc):
        return Alloc(s.buffer, s.size, s.kind, inner[0])
    if isinstance(s, Seq):
        return Seq(tuple(inner))
    if isinstance(s, IfThenElse):
        return IfThenElse(sub(s.cond), inner[0], inner[1] if len(inner) > 1 else None)
    raise TypeError(type(s).__name__)


def substitute_stmt(stmt: Stmt, mapping: Mapping[Pattern, Expr]) -> Stmt:
    """`substitute` for a statement: every expression with the keys of `mapping` replaced;
    binders (let and loop variables, buffers) stay as they are.  An explicit stack, so that the
    let chains scheduling and CSE nest thousands deep (which `substitute` would descend one
    Python frame per level) work too."""
    done: list[Stmt] = []  # rebuilt statements, the inner ones of a compound on top
    stack: list[tuple[Stmt, bool]] = [(stmt, False)]
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


def free_vars(node: Node) -> list[Var]:
    """Variables used but not bound inside `node` (lets, loops and allocs bind), in order of
    first use.  An explicit stack, so that deep trees (a long parsed sum) work too."""
    if isinstance(node, Expr):
        return _expression_vars(node)
    found: dict[Var, None] = {}  # insertion-ordered set
    pending: list[tuple[Node, frozenset]] = [(node, frozenset())]
    while pending:
        item, bound = pending.pop()
        if isinstance(item, Var):
            if item not in bound:
                found.setdefault(item)
            continue
        visits: list[tuple[Node, frozenset]]
        if isinstance(item, Let):  # the value is outside the binder's scope, the body inside
            visits = [(item.value, bound)] if item.value is not None else []
            visits.append((item.body, bound | {item.var}))
        elif isinstance(item, For):
            visits = [(item.init, bound), (item.bound, bound), (item.body, bound | {item.var})]
        elif isinstance(item, Alloc):
            visits = [(item.body, bound | {item.buffer})]
        else:
            visits = [(child, bound) for child in children(item)]
        pending.extend(reversed(visits))  # (first child on top: first use comes first)
    return list(found)


def _expression_vars(e: Expr) -> list[Var]:
    """`free_vars` of an expression, which binds nothing: every variable in it, in order of first
    use (most calls are on expressions, and this walk is twice as fast as the general one).
    The answer is kept on `e`, and a subexpression that has one is not walked again (its
    variables come in one piece in a preorder walk): the passes ask for the variables of the
    same let values and offsets many times.  Only the expressions asked about keep an answer,
    so the memory is that of the answers the callers get anyway."""
    try:
        return list(e._vars)
    except AttributeError:
        pass
    found: dict[Var, None] = {}  # insertion-ordered set (a repeated key keeps its first place)
    pending: list[Node] = [e]
    while pending:
        item = pending.pop()
        if type(item) is Var:  # (no class derives from Var)
            found[item] = None
            continue
        try:
            found.update(dict.fromkeys(item._vars))
        except AttributeError:
            pending.extend(reversed(children(item)))
    answer = tuple(found)
    object.__setattr__(e, "_vars", answer)
    return list(answer)


class Names:
    """Variable names in use in one kernel, and fresh ones on request (`hint`, `hint_2`, ...)."""

    def __init__(self, *nodes: Node):
        self.used: set[str] = set()
        for node in nodes:
            self.add_all(node)

    def add_all(self, node: Node) -> None:
        self.used.update(n.name for n in walk(node) if isinstance(n, Var))

    def fresh(self, hint: str) -> str:
        name, n = hint, 1
        while name in self.used:
            n += 1
            name = f"{hint}_{n}"
        self.used.add(name)
        return name


def node_count(node: Node) -> int:
    """Number of IR nodes in the tree (shared subtrees counted each time)."""
    return sum(1 for _ in walk(node))


def stable_hash(node: Node) -> str:
    """A structural hash that is the same in every process (Python's hash() is salted)."""
    return hashlib.sha256(str(node).encode()).hexdigest()[:16]


def statements(stmt: Stmt) -> Iterator[Stmt]:
    """Every statement under `stmt` (itself included), parents first, in program order; an
    explicit stack, so that the chains of lets CSE and scheduling nest thousands deep walk too."""
    pending = [stmt]
    while pending:
        s = pending.pop()
        yield s
        pending.extend(reversed([c for c in children(s) if isinstance(c, Stmt)]))


def walk(node: Node, skip: Node | None = None) -> Iterator[Node]:
    """Every node, parents before children (in field order), leaving out `skip` (the very object)
    and what is under it; an explicit stack, so deep trees walk too."""
    pending = [node]
    while pending:
        node = pending.pop()
        if node is skip:
            continue
        yield node
        pending.extend(reversed(children(node)))
