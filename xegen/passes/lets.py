"""Passes on `let`s: binders named apart, pure lets seen through, lets nothing reads dropped.

A *pure* expression is scalar integer or bool arithmetic on variables and constants: no loads,
pointers or vectors, so it may be computed anywhere its variables are defined, as often as wanted.
"""

from __future__ import annotations

from .. import ir


def is_pure(e: ir.Expr) -> bool:
    """Scalar integer or bool arithmetic on variables and constants only."""
    return all(
        isinstance(n, (ir.Var, ir.IntImm, ir.BoolImm, ir.Unary, ir.Binary, ir.Ternary, ir.Select, ir.Cast))
        and (not isinstance(n, ir.Var) or not n.type.is_ptr)
        and n.type.lanes == 1
        and (n.type.is_int or n.type.is_bool)
        for n in ir.walk(e)
    )


def unique_binders(stmt: ir.Stmt) -> ir.Stmt:
    """The statement with every let and loop variable named apart: a binder reusing a name bound
    elsewhere gets a fresh one (`i_1`).  Free variables (kernel arguments, thread ids) keep their
    names.  Afterwards, structurally equal expressions mean the same values wherever both are in
    scope, which is what CSE needs."""
    return _UniqueBinders(stmt).mutate(stmt)


class _UniqueBinders(ir.StmtMutator):
    def __init__(self, stmt: ir.Stmt):
        self.taken = {n.name for n in ir.walk(stmt) if isinstance(n, ir.Var)}
        self.seen: set[str] = set()

    def fresh(self, name: str) -> str:
        k = 1
        while f"{name}_{k}" in self.taken:
            k += 1
        self.taken.add(f"{name}_{k}")
        return f"{name}_{k}"

    def binder(self, s: ir.Let | ir.For) -> tuple[ir.Var, ir.Stmt]:
        """The binder's variable, renamed if its name is bound elsewhere, and its body accordingly."""
        var, body = s.var, s.body
        if var.name in self.seen:
            new = ir.Var(self.fresh(var.name), var.type)
            body = ir.substitute(body, {var: new})
            var = new
        self.seen.add(var.name)
        return var, self.mutate(body)

    def mutate_Let(self, s: ir.Let) -> ir.Stmt:
        var, body = self.binder(s)
        return ir.Let(var, s.value, body)

    def mutate_For(self, s: ir.For) -> ir.Stmt:
        var, body = self.binder(s)
        return ir.For(var, s.init, s.bound, body, s.unroll)


def see_through_lets(stmt: ir.Stmt) -> ir.Stmt:
    """Every use of a pure let with its value substituted (the let stays): an optimizer then sees
    `k + 1` rather than an opaque `k1`, so `mad(base, k1, 256)` can become the shared
    `mad(base, k, 256)` plus a constant.  Whatever still computes a let's value afterwards can read
    its variable again, and `drop_unused_lets` removes the lets nothing reads.  Needs unique
    binder names (no capture)."""
    return _SeeThroughLets().mutate(stmt)


class _SeeThroughLets(ir.StmtMutator):
    def __init__(self):
        self.values: dict[ir.Expr, ir.Expr] = {}  # pure let variables in scope -> their values

    def mutate_expr(self, e: ir.Expr) -> ir.Expr:
        # (an expression binds nothing, so a key occurs in it only as one of its free variables;
        # where none does, `substitute` would walk it to return `e` itself)
        if self.values and not self.values.keys().isdisjoint(ir.free_vars(e)):
            return ir.substitute(e, self.values)
        return e

    def mutate_Let(self, s: ir.Let) -> ir.Stmt:
        value = self._expr(s.value)
        outer = self.values
        if value is not None and is_pure(value):
            self.values = {**outer, s.var: value}
        try:
            return ir.Let(s.var, value, self.mutate(s.body))
        finally:
            self.values = outer


def drop_unused_lets(stmt: ir.Stmt) -> ir.Stmt:
    """The statement without the pure lets no expression reads (binder names are unique), also
    those read only by other unused lets."""
    lets = {
        s.var.name: s.value
        for s in ir.statements(stmt)
        if isinstance(s, ir.Let) and s.value is not None and is_pure(s.value)
    }
    reads: dict[str, int] = {}
    for s in ir.statements(stmt):
        for e in ir.expressions(s):
            for v in ir.free_vars(e):
                reads[v.name] = reads.get(v.name, 0) + 1
    unused = [name for name in lets if not reads.get(name)]
    dead: set[str] = set()
    while unused:  # a dropped let no longer reads its value's variables
        name = unused.pop()
        dead.add(name)
        for v in ir.free_vars(lets[name]):
            reads[v.name] -= 1
            if v.name in lets and v.name not in dead and not reads[v.name]:
                unused.append(v.name)
    if not dead:
        return stmt
    return _WithoutLets(dead).mutate(stmt)


class _WithoutLets(ir.StmtMutator):
    def __init__(self, dead: set[str]):
        self.dead = dead

    def mutate_Let(self, s: ir.Let) -> ir.Stmt:
        body = self.mutate(s.body)
        return body if s.var.name in self.dead else ir.Let(s.var, s.value, body)
