"""Walking and rewriting IR: visitor, mutator, substitution, free variables, fresh names, node counts.

`Visitor.visit` calls `visit_<ClassName>` when a subclass defines it, else visits the children.
`Mutator.mutate` calls `mutate_<ClassName>` when defined, else rebuilds the node from its mutated
children (returning the same object when nothing changed).
"""

from __future__ import annotations

import hashlib
from dataclasses import fields
from typing import Iterator, Mapping

from .expr import Node, Var
from .funcs import Func
from .stmt import Alloc, For, Let, Seq, seq


def _child_fields(node: Node) -> list[str]:
    cls = type(node)
    names = cls.__dict__.get("_child_field_cache")
    if names is None:
        names = [f.name for f in fields(node) if f.init]
        type.__setattr__(cls, "_child_field_cache", names)
    return names


def children(node: Node) -> Iterator[Node]:
    """The IR nodes directly below `node`, in field order."""
    for name in _child_fields(node):
        value = getattr(node, name)
        if isinstance(value, Node) and not isinstance(value, Func):
            yield value
        elif isinstance(value, tuple):
            for item in value:
                if isinstance(item, Node):
                    yield item


class Visitor:
    def visit(self, node: Node) -> None:
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            method(node)
        else:
            self.visit_children(node)

    def visit_children(self, node: Node) -> None:
        for child in children(node):
            self.visit(child)


class Mutator:
    def mutate(self, node):
        if node is None:
            return None
        method = getattr(self, "mutate_" + type(node).__name__, None)
        if method is not None:
            return method(node)
        return self.mutate_children(node)

    def mutate_children(self, node):
        if isinstance(node, Seq):
            items = [self.mutate(s) for s in node.stmts]
            if all(a is b for a, b in zip(items, node.stmts)):
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
                new = old if all(a is b for a, b in zip(new, old)) else new
            else:
                new = old
            changed |= new is not old
            values[name] = new
        if not changed:
            return node
        for f in fields(node):
            if f.init and f.name not in values:
                values[f.name] = getattr(node, f.name)
        return type(node)(**values)


class _Substituter(Mutator):
    def __init__(self, mapping: Mapping[Node, Node]):
        self.mapping = mapping

    def mutate(self, node):
        replacement = self.mapping.get(node) if node is not None else None
        if replacement is not None:
            return replacement
        return super().mutate(node)


def substitute(node: Node, mapping: Mapping[Node, Node]) -> Node:
    """Replace every occurrence of each key (structurally equal) by its value."""
    return _Substituter(mapping).mutate(node)


def free_vars(node: Node) -> list[Var]:
    """Variables used but not bound inside `node` (lets, loops and allocs bind), in order of
    first use.  An explicit stack, so that deep trees (a long parsed sum) work too."""
    found: dict[Var, None] = {}  # insertion-ordered set
    pending: list[tuple[Node, frozenset]] = [(node, frozenset())]
    while pending:
        item, bound = pending.pop()
        if isinstance(item, Var):
            if item not in bound:
                found.setdefault(item)
            continue
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


def walk(node: Node) -> Iterator[Node]:
    """Every node, parents before children (in field order); an explicit stack, so deep trees
    walk too."""
    pending = [node]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(reversed(list(children(node))))

