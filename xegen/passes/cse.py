"""Common subexpressions and loop invariants bound once, by `let`s at the outermost legal scope.

`bind_common_subexpressions(stmt, cost)` binds every pure subexpression (`lets.is_pure`) that
costs something and is used more than once, or used in a loop whose variable it does not depend
on, with a `let` at the outermost scope where all its variables are defined: CSE and
loop-invariant hoisting in one step.  Loads are never moved or shared: only arithmetic on
variables and constants is.  Binder names must be unique (`lets.unique_binders`).
"""

from __future__ import annotations

from collections.abc import Callable

from .. import ir
from .lets import is_pure

Cost = Callable[[ir.Expr], int]  # what computing an expression costs (0: free, e.g. folded away)
Scope = tuple[ir.Let | ir.For, ...]  # the Let and For statements around a use, outermost first


def bind_common_subexpressions(stmt: ir.Stmt, cost: Cost) -> tuple[ir.Stmt, int]:
    """Bind shared and loop-invariant pure subexpressions with lets placed at the outermost
    scope where their variables are defined; returns the statement and the number of lets."""
    taken = {n.name for n in ir.walk(stmt) if isinstance(n, ir.Var)}
    bound: list[tuple[ir.Var, ir.Expr]] = []  # (let variable, value) in the order chosen
    counter = 0
    depends: dict[str, set[str]] = {}  # let variable -> the variables its value really uses
    home_scope: dict[str, Scope] = {}  # let variable -> the binders enclosing where it will be placed
    candidates = _Candidates(cost)
    while True:
        # each round binds the largest worthwhile subexpressions that do not contain each other;
        # the smaller ones inside them are reconsidered in the next round
        occurrences = _Occurrences(candidates).of(stmt)
        for var, value in bound:  # the let values chosen so far are uses too, where they will go
            for sub, scopes in candidates.occurrences(value, home_scope[var.name]).items():
                occurrences.setdefault(sub, []).extend(scopes)
        choices = _pick(occurrences, depends)
        if not choices:
            break
        mapping = {}
        for expr in choices:
            while f"t{counter}" in taken:
                counter += 1
            var = ir.Var(f"t{counter}", expr.type)
            taken.add(var.name)
            counter += 1
            mapping[expr] = var
        stmt = ir.substitute(stmt, mapping)
        bound = [(v, ir.substitute(value, mapping)) for v, value in bound]
        for expr, var in mapping.items():
            bound.append((var, expr))
            depends[var.name] = _real_variables(expr, depends)
            first = occurrences[expr][0]
            home_scope[var.name] = first[: _binder_depth(expr, first, depends)]
    return _place_lets(stmt, bound), len(bound)


class _Candidates:
    """Which subexpressions are worth a let if shared: pure scalar integer arithmetic that costs
    something (a register holding it saves instructions)."""

    def __init__(self, cost: Cost):
        self.cost = cost
        self.known: dict = {}  # answers by expression and by id

    def __call__(self, e: ir.Expr) -> bool:
        # by identity first: the rounds of CSE revisit the same objects, and comparing equal trees
        # structurally walks them (the entry keeps `e` alive, so its id is not reused)
        seen = self.known.get(id(e))
        if seen is not None:
            return seen[1]
        answer = self.known.get(e)
        if answer is None:
            answer = (
                e.type.is_int
                and e.type.lanes == 1
                and not isinstance(e, (ir.Var, ir.IntImm))
                and is_pure(e)
                and self.cost(e) > 0
            )
            self.known[e] = answer
        self.known[id(e)] = (e, answer)
        return answer

    def occurrences(self, e: ir.Expr, scope: Scope) -> dict[ir.Expr, list[Scope]]:
        """The candidates among `e` and its subexpressions, each with `scope` once per use."""
        found: dict[ir.Expr, list[Scope]] = {}
        stack: list[ir.Node] = [e]
        while stack:
            x = stack.pop()
            if isinstance(x, ir.Expr) and self(x):
                found.setdefault(x, []).append(scope)
            stack.extend(ir.children(x))
        return found


class _Occurrences(ir.StmtVisitor):
    """Candidate subexpressions of every expression of a statement, with the scopes of their uses."""

    def __init__(self, candidates: _Candidates):
        self.candidates = candidates
        self.found: dict[ir.Expr, list[Scope]] = {}

    def of(self, stmt: ir.Stmt) -> dict[ir.Expr, list[Scope]]:
        self.visit(stmt)
        return self.found

    def visit_expr(self, e: ir.Expr) -> None:
        for sub, scopes in self.candidates.occurrences(e, self.scope).items():
            self.found.setdefault(sub, []).extend(scopes)


def _real_variables(expr: ir.Expr, depends: dict[str, set[str]]) -> set[str]:
    """The statement's variables an expression uses, looking through chosen let variables."""
    names: set[str] = set()
    for v in ir.free_vars(expr):
        names |= depends.get(v.name, {v.name})
    return names


def _binder_depth(expr: ir.Expr, scope: Scope, depends: dict[str, set[str]]) -> int:
    """How many of the enclosing binders the expression's placement goes inside: up to the
    innermost one binding a variable the expression uses."""
    used = _real_variables(expr, depends)
    depth = 0
    for i, binder in enumerate(scope):
        if binder.var.name in used:
            depth = i + 1
    return depth


def _pick(occurrences: dict[ir.Expr, list[Scope]], depends: dict[str, set[str]]) -> list[ir.Expr]:
    """Subexpressions worth a let (used twice, or invariant in a loop around a use), largest
    first, none inside another (deterministic order: size, then text)."""
    worth = []
    for expr, scopes in occurrences.items():
        shared = len(scopes) >= 2
        hoisted = shared or any(
            any(isinstance(b, ir.For) for b in scope[_binder_depth(expr, scope, depends) :]) for scope in scopes
        )
        if shared or hoisted:
            worth.append(((-ir.node_count(expr), ir.format_expr(expr)), expr))
    worth.sort(key=lambda item: item[0])
    chosen: list[ir.Expr] = []
    inside: set[ir.Expr] = set()
    for _, expr in worth:
        if expr in inside:
            continue
        chosen.append(expr)
        inside.update(n for n in ir.walk(expr) if isinstance(n, ir.Expr))
    return chosen


def _place_lets(stmt: ir.Stmt, bound: list[tuple[ir.Var, ir.Expr]]) -> ir.Stmt:
    """Wrap each let around the body of the innermost binder its value depends on (or the whole
    statement); lets at one place keep the order they were chosen in reverse, so that a let is
    defined before the lets that use it."""
    if not bound:
        return stmt
    # dependencies: a later-chosen let (smaller) may be used by earlier ones (larger)
    order = list(reversed(bound))  # smallest first
    let_vars = {v.name: (v, value) for v, value in bound}
    placement: dict[int | None, list[tuple[ir.Var, ir.Expr]]] = {}
    binders = _Binders().of(stmt)

    def home(value: ir.Expr) -> tuple[int, int] | None:
        # the innermost binder statement among the value's variables (following let variables)
        names = {v.name for v in ir.free_vars(value)}
        best: tuple[int, int] | None = None
        for name in names:
            if name in let_vars:
                candidate = home_of.get(name)
                if candidate is not None and (best is None or candidate[1] > best[1]):
                    best = candidate
            elif name in binders:
                for binder_id, depth in binders[name]:
                    if best is None or depth > best[1]:
                        best = (binder_id, depth)
        return best

    home_of: dict[str, tuple[int, int] | None] = {}
    pending = list(order)
    while pending:  # a let's home needs the homes of the lets its value uses
        ready = [
            (var, value)
            for var, value in pending
            if all(v.name not in let_vars or v.name in home_of for v in ir.free_vars(value))
        ]
        for var, value in ready:
            h = home(value)
            home_of[var.name] = h
            placement.setdefault(h[0] if h else None, []).append((var, value))
        pending = [p for p in pending if p not in ready]
    return _wrap(_PlaceLets(placement).mutate(stmt), placement.get(None, []))


def _wrap(body: ir.Stmt, lets: list[tuple[ir.Var, ir.Expr]]) -> ir.Stmt:
    for var, value in reversed(lets):
        body = ir.Let(var, value, body)
    return body


class _PlaceLets(ir.StmtMutator):
    """Each binder's body inside the lets placed at that binder (by the binder's id)."""

    def __init__(self, placement: dict[int | None, list[tuple[ir.Var, ir.Expr]]]):
        self.placement = placement

    def mutate_For(self, s: ir.For) -> ir.Stmt:
        return ir.For(s.var, s.init, s.bound, _wrap(self.mutate(s.body), self.placement.get(id(s), [])), s.unroll)

    def mutate_Let(self, s: ir.Let) -> ir.Stmt:
        return ir.Let(s.var, s.value, _wrap(self.mutate(s.body), self.placement.get(id(s), [])))


class _Binders(ir.StmtVisitor):
    """Variable name -> (id of its Let/For statement, nesting depth) for every binder."""

    def __init__(self):
        self.found: dict[str, list[tuple[int, int]]] = {}

    def of(self, stmt: ir.Stmt) -> dict[str, list[tuple[int, int]]]:
        self.visit(stmt)
        return self.found

    def visit_Let(self, s: ir.Let) -> None:
        self.found.setdefault(s.var.name, []).append((id(s), len(self.scope)))
        self.visit_inside(s)

    def visit_For(self, s: ir.For) -> None:
        self.found.setdefault(s.var.name, []).append((id(s), len(self.scope)))
        self.visit_inside(s)
