"""Where a loop sits in its kernel: the buffers around it, the names in use, and replacing it.

The scheduling passes work on whole statements: they find the loops to transform
(`innermost_loops`), learn each buffer's kind and size from the enclosing `alloc`s (`BufferTable`;
external buffers are global memory), and put the linearized graph back (`replace_loop`), growing
the allocations of multi-buffered buffers (`grow_allocations`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Alloc, For, IfThenElse, Let, Load, Mutator, Ptr, Stmt, Store, statements, walk
from ..ir.visitor import children


@dataclass(frozen=True)
class BufferTable:
    kinds: dict[str, str]  # buffer name -> "grf", "slm" or "global"
    sizes: dict[str, int]  # bytes of each allocated buffer

    @staticmethod
    def of(stmt: Stmt) -> BufferTable:
        kinds: dict[str, str] = {}
        sizes: dict[str, int] = {}
        for node in statements(stmt):
            if isinstance(node, Alloc):
                kinds[node.buffer.name] = node.kind
                sizes[node.buffer.name] = node.size
            elif isinstance(node, Let) and node.value is None and node.var.type.is_ptr:
                kinds.setdefault(node.var.name, "global")
        return BufferTable(kinds, sizes)

    def kind(self, name: str) -> str:
        return self.kinds.get(name, "global")


def innermost_loops(stmt: Stmt) -> list[For]:
    """Loops with no loop inside, in program order."""
    return [
        node
        for node in statements(stmt)
        if isinstance(node, For) and not any(isinstance(inner, For) for inner in statements(node.body))
    ]


def addressed_buffers(stmt: Stmt, skip: For | None = None) -> set[str]:
    """The buffers `stmt` addresses (by a pointer, load or store), leaving out `skip`."""
    return {n.buffer.name for n in walk(stmt, skip) if isinstance(n, (Ptr, Load, Store))}


def buffers_used_outside(stmt: Stmt, loop: For) -> set[str]:
    """Buffers some statement outside `loop` touches."""
    return addressed_buffers(stmt, skip=loop)


class _Replace(Mutator):
    def __init__(self, loop: For, replacement: Stmt):
        self.loop, self.replacement = loop, replacement

    def mutate(self, node):
        if node is self.loop:
            return self.replacement
        return super().mutate(node)


def replace_loop(stmt: Stmt, loop: For, replacement: Stmt) -> Stmt:
    return _Replace(loop, replacement).mutate(stmt)


class _Grow(Mutator):
    def __init__(self, factors: dict[str, int]):
        self.factors = factors

    def mutate_Alloc(self, node: Alloc):
        body = self.mutate(node.body)
        factor = self.factors.get(node.buffer.name, 1)
        if factor == 1 and body is node.body:
            return node
        return Alloc(node.buffer, node.size * factor, node.kind, body)


def grow_allocations(stmt: Stmt, factors: dict[str, int]) -> Stmt:
    """Multiply the size of each named allocation by its factor."""
    return _Grow(factors).mutate(stmt) if factors else stmt


def allocated_bytes(stmt: Stmt, kind: str) -> int:
    """The most bytes of `kind` allocated at once: nested allocations add up, the two branches
    of an `if` (a kernel's versions of a loop, each with its own buffers) never live together.
    An explicit stack (let chains nest deep); only the branches of an `if` recurse."""
    total, pending = 0, [stmt]
    while pending:
        node = pending.pop()
        if isinstance(node, IfThenElse):
            total += max(
                allocated_bytes(node.then_case, kind),
                allocated_bytes(node.else_case, kind) if node.else_case is not None else 0,
            )
            continue
        if isinstance(node, Alloc) and node.kind == kind:
            total += node.size
        pending.extend(c for c in children(node) if isinstance(c, Stmt))
    return total
