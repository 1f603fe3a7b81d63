"""Kernel-level optimization: every expression of a statement in one e-graph.

`optimize_stmt(stmt, hw, ranges=...)`:

1. Every expression of the statement (let values, loop bounds, if conditions, store offsets and
   values, call arguments; the integer parts of loads and vectors) becomes a root of one e-graph.
   Binders get unique e-graph names, so two variables called `i` in different loops stay apart.
   Loops seed their variable's range (`init <= i < bound`), lets their variable's (the value's);
   `ranges` adds ranges of external variables (thread and group ids, kernel arguments).  Uses
   of pure integer lets see the let's value (`see_through_lets`), so rules can combine across
   lets; afterwards a let's value reads its variable again, and lets nothing reads are dropped.
2. Saturation, then one DAG extraction for all roots: a subexpression shared between roots is
   paid once, so the extractor prefers forms that share.
3. Common subexpressions and loop invariants become `let`s: a pure integer subexpression used
   more than once, or used in a loop whose variable it does not depend on, is bound once at the
   outermost scope where all its variables are defined (CSE and loop-invariant hoisting in one
   step).  Loads are never moved or shared: only arithmetic on variables and constants is.

The result computes the same buffers (the tests run both through `xegen.ir.execute`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

from .. import ir
from ..hw import Platform
from .costs import CostModel, cost_model
from .engine import Limits, SaturationReport, prepare, saturate
from .rules import RuleSet, load_rules
from .simplify import Problem, RangeSpec, extract_roots, seed_variables
from .terms import TermBuilder, is_term_type, quote, rebuild_opaque, ty


@dataclass
class KernelResult:
    stmt: ir.Stmt
    cost_before: int
    cost_after: int
    expressions: int  # expression roots in the e-graph
    lets: int  # lets introduced for shared or loop-invariant subexpressions
    egraph_nodes: int
    saturation: SaturationReport
    milliseconds: float
    note: str = ""


# Expression sites ---------------------------------------------------------------------------

@dataclass
class _Site:
    """One expression position of the statement, with the binders in scope there."""

    expr: ir.Expr
    scope: tuple[ir.Stmt, ...]  # enclosing Let/For statements, outermost first
    root: int | None = None  # root index when the expression is a term
    leaf: object = None  # OpaqueLeaf when it is not (a vector value with integer parts)


def _expression_fields(s: ir.Stmt) -> list[str]:
    if isinstance(s, ir.Let):
        return ["value"] if s.value is not None else []
    if isinstance(s, ir.For):
        return ["init", "bound"]
    if isinstance(s, ir.IfThenElse):
        return ["cond"]
    if isinstance(s, ir.Store):
        return [f for f in ("offset", "value", "mask") if getattr(s, f) is not None]
    return []


class _Namer:
    """Unique e-graph names for binders; free variables keep their names."""

    def __init__(self):
        self.used: dict[str, int] = {}
        self.binder_name: dict[int, str] = {}  # id(binder statement) -> name

    def bind(self, binder: ir.Stmt, var: ir.Var) -> str:
        count = self.used.get(var.name, 0)
        self.used[var.name] = count + 1
        name = var.name if count == 0 else f"{var.name}.{count}"
        self.binder_name[id(binder)] = name
        return name


def _collect_sites(stmt: ir.Stmt, namer: _Namer) -> tuple[list[_Site], dict]:
    """All expression sites in execution order, and per site the variable renaming in scope."""
    sites: list[_Site] = []
    renames: list[dict[str, str]] = []

    def walk(s: ir.Stmt, scope: tuple, names: dict[str, str]) -> None:
        if isinstance(s, ir.For):
            for f in ("init", "bound"):
                sites.append(_Site(getattr(s, f), scope))
                renames.append(names)
            inner = dict(names)
            inner[s.var.name] = namer.bind(s, s.var)
            walk(s.body, scope + (s,), inner)
            return
        if isinstance(s, ir.Let):
            if s.value is not None:
                sites.append(_Site(s.value, scope))
                renames.append(names)
            inner = dict(names)
            inner[s.var.name] = namer.bind(s, s.var)
            walk(s.body, scope + (s,), inner)
            return
        if isinstance(s, ir.Alloc):
            walk(s.body, scope, names)
            return
        if isinstance(s, ir.Seq):
            for x in s.stmts:
                walk(x, scope, names)
            return
        if isinstance(s, ir.IfThenElse):
            sites.append(_Site(s.cond, scope))
            renames.append(names)
            walk(s.then_case, scope, names)
            if s.else_case is not None:
                walk(s.else_case, scope, names)
            return
        if isinstance(s, ir.Store):
            for f in _expression_fields(s):
                sites.append(_Site(getattr(s, f), scope))
                renames.append(names)
            return
        if isinstance(s, ir.Call):
            for arg in s.args:
                if arg is not None:
                    sites.append(_Site(arg, scope))
                    renames.append(names)
            return
        raise TypeError(f"unknown statement {type(s).__name__}")

    walk(stmt, (), {})
    return sites, renames


def _rebuild(stmt: ir.Stmt, values: Iterator[ir.Expr]) -> ir.Stmt:
    """The statement with its expression sites replaced, in the order `_collect_sites` found them."""
    return _Rebuilder(values).stmt(stmt)


class _Rebuilder:
    """Puts the extracted expressions back, and merges lets that simplification made equal: a let
    whose value equals an enclosing let's value binds that variable instead (`kw_k1 = (k + 1) / 64 % 3`
    may have become `kw_k0`'s value), and a let bound to a variable or constant is replaced by it
    in everything after, so that expressions built on either alias compare equal as well."""

    def __init__(self, values: Iterator[ir.Expr]):
        self.values = values
        self.bound: dict[ir.Expr, ir.Var] = {}  # pure let values in scope -> their variable
        self.aliases: dict[ir.Expr, ir.Expr] = {}  # let variable -> the variable or constant it equals

    def next(self) -> ir.Expr:
        value = next(self.values)
        if value is None:
            return value
        if self.aliases:
            value = ir.substitute(value, self.aliases)
        # a let's value where it survived extraction reads the let's variable again (uses saw
        # through the let, see `see_through_lets`)
        return ir.substitute(value, self.bound) if self.bound else value

    def stmt(self, s: ir.Stmt) -> ir.Stmt:
        if isinstance(s, ir.For):
            init, bound = self.next(), self.next()
            return ir.For(s.var, init, bound, self.stmt(s.body), s.unroll)
        if isinstance(s, ir.Let):
            return self.let(s)
        if isinstance(s, ir.Alloc):
            return ir.Alloc(s.buffer, s.size, s.kind, self.stmt(s.body))
        if isinstance(s, ir.Seq):
            return ir.Seq(tuple(self.stmt(x) for x in s.stmts)) if s.stmts else s
        if isinstance(s, ir.IfThenElse):
            cond = self.next()
            then_case = self.stmt(s.then_case)
            else_case = self.stmt(s.else_case) if s.else_case is not None else None
            return ir.IfThenElse(cond, then_case, else_case)
        if isinstance(s, ir.Store):
            fields = {f: self.next() for f in _expression_fields(s)}
            return ir.Store(s.buffer, fields["offset"], fields["value"], s.stride, fields.get("mask"))
        if isinstance(s, ir.Call):
            return ir.Call(s.func, tuple(self.next() if a is not None else None for a in s.args))
        raise TypeError(type(s).__name__)

    def let(self, s: ir.Let) -> ir.Stmt:
        value = self.next() if s.value is not None else None
        if value is not None and value in self.bound:
            value = self.bound[value]
        if isinstance(value, (ir.Var, ir.IntImm)) and value.type == s.var.type:
            self.aliases[s.var] = value
        if value is None or isinstance(value, (ir.Var, ir.IntImm)) or not _pure(value):
            return ir.Let(s.var, value, self.stmt(s.body))
        self.bound[value] = s.var
        try:
            return ir.Let(s.var, value, self.stmt(s.body))
        finally:
            del self.bound[value]


def _statements(stmt: ir.Stmt) -> Iterator[ir.Stmt]:
    """Every statement under `stmt`, parents first, without recursion: CSE nests one let per
    shared subexpression, and a scheduled kernel's chain of lets can be thousands deep."""
    stack = [stmt]
    while stack:
        s = stack.pop()
        yield s
        stack.extend(reversed([c for c in ir.children(s) if isinstance(c, ir.Stmt)]))


def statement_cost(stmt: ir.Stmt, model: CostModel) -> int:
    """Cost of a statement's expressions, each distinct subexpression counted once per scope
    (what a compiler with CSE pays; loops are not multiplied out)."""
    return model.dag_cost([e for node in _statements(stmt) for e in _site_expressions(node)])


# The optimizer ------------------------------------------------------------------------------

def optimize_stmt(stmt: ir.Stmt, hw: Platform | str | CostModel = "xehpg",
                  ranges: Mapping[str, RangeSpec] | None = None, extractor: str = "dag",
                  rules: RuleSet | Sequence[str] | None = None, limits: Limits = Limits(seconds=5.0),
                  cse: bool = True) -> ir.Stmt:
    """The statement with every expression optimized in one e-graph, shared subexpressions and
    loop invariants bound once (see the module docstring)."""
    return optimize_stmt_report(stmt, hw, ranges, extractor, rules, limits, cse).stmt


def optimize_stmt_report(stmt: ir.Stmt, hw: Platform | str | CostModel = "xehpg",
                         ranges: Mapping[str, RangeSpec] | None = None, extractor: str = "dag",
                         rules: RuleSet | Sequence[str] | None = None, limits: Limits = Limits(seconds=5.0),
                         cse: bool = True) -> KernelResult:
    rule_set = rules if isinstance(rules, RuleSet) else load_rules(rules)
    prepare(rule_set)  # once per process: not part of this problem's time
    start = time.perf_counter()
    model = cost_model(hw)
    original = stmt
    stmt = see_through_lets(unique_binders(stmt))
    sites, _ = _collect_sites(stmt, _Namer())
    builder = TermBuilder()
    problem = Problem(builder)
    for site in sites:
        if is_term_type(site.expr.type):
            site.root = builder.add_root(site.expr)
        else:
            site.leaf = builder.add_opaque_root(site.expr)
    _seed_binders(stmt, sites, problem)
    seed_variables(problem, ranges)

    with saturate(rule_set, builder.roots, problem.seeds, limits) as run:
        roots, info = extract_roots(run, problem, model, extractor)
        report = run.report
    new_values = [roots[s.root] if s.root is not None else rebuild_opaque(s.leaf, lambda k: roots[k]) for s in sites]
    result = drop_unused_lets(_rebuild(stmt, iter(new_values)))
    lets = 0
    if cse:
        result, lets = bind_common_subexpressions(result, model)
    before, after = statement_cost(original, model), statement_cost(result, model)
    note = info.note
    if after > before:  # never return something costlier than the input
        result, after, note = original, before, (note + "; " if note else "") + "kept the input (nothing cheaper found)"
    return KernelResult(result, before, after, len(builder.roots), lets, info.egraph_nodes, report,
                        (time.perf_counter() - start) * 1000, note)


def _seed_binders(stmt: ir.Stmt, sites: list[_Site], problem: Problem) -> None:
    """InLoop facts for loop variables and LetValue facts for let variables (binder names are
    unique, see `unique_binders`)."""
    builder, seeds = problem.builder, problem.seeds
    site_iter = iter(sites)

    def var_term(v: ir.Var) -> str:
        return f"(Var {ty(v.type)} {quote(v.name)})"

    # the sites are in walk order: For gives (init, bound), Let with a value gives (value)
    def walk(s: ir.Stmt) -> None:
        if isinstance(s, ir.For):
            init, bound = next(site_iter), next(site_iter)
            if init.root is not None and bound.root is not None:
                seeds.facts.append(f"(InLoop {var_term(s.var)} {builder.roots[init.root]} {builder.roots[bound.root]})")
                builder.variables.setdefault(s.var.name, s.var)
            walk(s.body)
        elif isinstance(s, ir.Let):
            value = next(site_iter) if s.value is not None else None
            if value is not None and value.root is not None and is_term_type(s.var.type):
                seeds.facts.append(f"(LetValue {var_term(s.var)} {builder.roots[value.root]})")
                builder.variables.setdefault(s.var.name, s.var)
            walk(s.body)
        elif isinstance(s, ir.Alloc):
            walk(s.body)
        elif isinstance(s, ir.Seq):
            for x in s.stmts:
                walk(x)
        elif isinstance(s, ir.IfThenElse):
            next(site_iter)
            walk(s.then_case)
            if s.else_case is not None:
                walk(s.else_case)
        elif isinstance(s, ir.Store):
            for _ in _expression_fields(s):
                next(site_iter)
        elif isinstance(s, ir.Call):
            for a in s.args:
                if a is not None:
                    next(site_iter)

    walk(stmt)


def see_through_lets(stmt: ir.Stmt) -> ir.Stmt:
    """Every use of a pure integer let with its value substituted (the let stays): the e-graph
    then sees `k + 1` rather than an opaque `k1`, so `mad(base, k1, 256)` can become the shared
    `mad(base, k, 256)` plus a constant.  After extraction the rebuilder turns surviving copies
    of a let's value back into its variable, and `drop_unused_lets` removes lets nothing reads.
    Needs unique binder names (no capture)."""
    def walk(s: ir.Stmt, values: dict) -> ir.Stmt:
        def inline(e):
            return ir.substitute(e, values) if values and e is not None else e

        if isinstance(s, ir.Let):
            value = inline(s.value)
            inner = values
            if value is not None and is_term_type(s.var.type) and _pure(value):
                inner = {**values, s.var: value}
            return ir.Let(s.var, value, walk(s.body, inner))
        if isinstance(s, ir.For):
            return ir.For(s.var, inline(s.init), inline(s.bound), walk(s.body, values), s.unroll)
        if isinstance(s, ir.Alloc):
            return ir.Alloc(s.buffer, s.size, s.kind, walk(s.body, values))
        if isinstance(s, ir.Seq):
            return ir.Seq(tuple(walk(x, values) for x in s.stmts)) if s.stmts else s
        if isinstance(s, ir.IfThenElse):
            return ir.IfThenElse(inline(s.cond), walk(s.then_case, values),
                                 walk(s.else_case, values) if s.else_case is not None else None)
        if isinstance(s, ir.Store):
            return ir.Store(s.buffer, inline(s.offset), inline(s.value), s.stride, inline(s.mask))
        if isinstance(s, ir.Call):
            return ir.Call(s.func, tuple(inline(a) for a in s.args))
        raise TypeError(f"unknown statement {type(s).__name__}")

    return walk(stmt, {})


def drop_unused_lets(stmt: ir.Stmt) -> ir.Stmt:
    """The statement without the pure lets no expression reads (binder names are unique), also
    those read only by other unused lets."""
    lets = {s.var.name: s.value for s in _statements(stmt)
            if isinstance(s, ir.Let) and s.value is not None and _pure(s.value)}
    reads: dict[str, int] = {}
    for node in _statements(stmt):
        for e in _site_expressions(node):
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
    return _without_lets(stmt, dead)


def _site_expressions(s: ir.Stmt) -> list[ir.Expr]:
    if isinstance(s, ir.Call):
        return [a for a in s.args if a is not None]
    return [getattr(s, f) for f in _expression_fields(s)]


def _without_lets(stmt: ir.Stmt, dead: set[str]) -> ir.Stmt:
    if isinstance(stmt, ir.Let):
        body = _without_lets(stmt.body, dead)
        return body if stmt.var.name in dead else ir.Let(stmt.var, stmt.value, body)
    if isinstance(stmt, ir.For):
        return ir.For(stmt.var, stmt.init, stmt.bound, _without_lets(stmt.body, dead), stmt.unroll)
    if isinstance(stmt, ir.Alloc):
        return ir.Alloc(stmt.buffer, stmt.size, stmt.kind, _without_lets(stmt.body, dead))
    if isinstance(stmt, ir.Seq):
        return ir.Seq(tuple(_without_lets(x, dead) for x in stmt.stmts)) if stmt.stmts else stmt
    if isinstance(stmt, ir.IfThenElse):
        return ir.IfThenElse(stmt.cond, _without_lets(stmt.then_case, dead),
                             _without_lets(stmt.else_case, dead) if stmt.else_case is not None else None)
    return stmt


def unique_binders(stmt: ir.Stmt) -> ir.Stmt:
    """The statement with every let and loop variable named apart: a binder reusing a name bound
    elsewhere gets a fresh one (`i_1`).  Free variables (kernel arguments, thread ids) keep their
    names.  Afterwards, structurally equal expressions mean the same values wherever both are in
    scope, which is what CSE needs."""
    taken = {n.name for n in ir.walk(stmt) if isinstance(n, ir.Var)}
    seen: set[str] = set()

    def fresh(name: str) -> str:
        k = 1
        while f"{name}_{k}" in taken:
            k += 1
        taken.add(f"{name}_{k}")
        return f"{name}_{k}"

    def walk(s: ir.Stmt) -> ir.Stmt:
        if isinstance(s, (ir.Let, ir.For)):
            var = s.var
            body = s.body
            if var.name in seen:
                new = ir.Var(fresh(var.name), var.type)
                body = ir.substitute(body, {var: new})
                var = new
            seen.add(var.name)
            if isinstance(s, ir.Let):
                return ir.Let(var, s.value, walk(body))
            return ir.For(var, s.init, s.bound, walk(body), s.unroll)
        if isinstance(s, ir.Alloc):
            return ir.Alloc(s.buffer, s.size, s.kind, walk(s.body))
        if isinstance(s, ir.Seq):
            return ir.Seq(tuple(walk(x) for x in s.stmts)) if s.stmts else s
        if isinstance(s, ir.IfThenElse):
            return ir.IfThenElse(s.cond, walk(s.then_case), walk(s.else_case) if s.else_case is not None else None)
        return s

    return walk(stmt)


# CSE and hoisting -----------------------------------------------------------------------------

def _pure(e: ir.Expr) -> bool:
    """Arithmetic on variables and constants only (no loads, no opaque parts)."""
    return all(isinstance(n, (ir.Var, ir.IntImm, ir.BoolImm, ir.Unary, ir.Binary, ir.Ternary, ir.Select, ir.Cast))
               and (not isinstance(n, ir.Var) or not n.type.is_ptr) and is_term_type(n.type)
               for n in ir.walk(e))


def _candidate(e: ir.Expr, model: CostModel, cache: dict) -> bool:
    """A pure integer subexpression that costs something (worth a register if shared)."""
    # by identity first: the rounds of CSE revisit the same objects, and comparing equal trees
    # structurally walks them (the entry keeps `e` alive, so its id is not reused)
    seen = cache.get(id(e))
    if seen is not None:
        return seen[1]
    known = cache.get(e)
    if known is None:
        known = (e.type.is_int and e.type.lanes == 1 and not isinstance(e, (ir.Var, ir.IntImm))
                 and _pure(e) and model.dag_cost(e) > 0)
        cache[e] = known
    cache[id(e)] = (e, known)
    return known


@dataclass
class _Occurrence:
    scope: tuple  # binder statements enclosing the use, outermost first


def bind_common_subexpressions(stmt: ir.Stmt, model: CostModel) -> tuple[ir.Stmt, int]:
    """Bind shared and loop-invariant pure subexpressions with lets placed at the outermost
    scope where their variables are defined; returns the statement and the number of lets."""
    taken = {n.name for n in ir.walk(stmt) if isinstance(n, ir.Var)}
    bound: list[tuple[ir.Var, ir.Expr]] = []  # (let variable, value) in the order chosen
    counter = 0
    depends: dict[str, set[str]] = {}  # let variable -> the variables its value really uses
    home_scope: dict[str, tuple] = {}  # let variable -> the binders enclosing where it will be placed
    cache: dict = {}  # _candidate's answers, by expression and by id
    while True:
        # each round binds the largest worthwhile subexpressions that do not contain each other;
        # the smaller ones inside them are reconsidered in the next round
        occurrences = _occurrences(stmt, model, cache)
        for var, value in bound:  # the let values chosen so far are uses too, where they will go
            for sub, scopes in _occurrences_in(value, home_scope[var.name], model, cache).items():
                occurrences.setdefault(sub, []).extend(scopes)
        choices = _pick(occurrences, model, depends)
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
            home_scope[var.name] = first[:_binder_depth(expr, first, depends)]
    return _place_lets(stmt, bound), len(bound)


def _occurrences_in(e: ir.Expr, scope: tuple, model: CostModel, cache: dict) -> dict[ir.Expr, list[tuple]]:
    found: dict[ir.Expr, list[tuple]] = {}
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, ir.Expr) and _candidate(x, model, cache):
            found.setdefault(x, []).append(scope)
        stack.extend(ir.children(x))
    return found


def _occurrences(stmt: ir.Stmt, model: CostModel, cache: dict) -> dict[ir.Expr, list[tuple]]:
    """Candidate subexpressions of every expression site, with the scopes they occur in."""
    found: dict[ir.Expr, list[tuple]] = {}

    def visit_expr(e: ir.Expr, scope: tuple) -> None:
        for sub, scopes in _occurrences_in(e, scope, model, cache).items():
            found.setdefault(sub, []).extend(scopes)

    def walk(s: ir.Stmt, scope: tuple) -> None:
        if isinstance(s, (ir.For, ir.Let)):
            for f in _expression_fields(s):
                visit_expr(getattr(s, f), scope)
            walk(s.body, scope + (s,))
        elif isinstance(s, ir.Alloc):
            walk(s.body, scope)
        elif isinstance(s, ir.Seq):
            for x in s.stmts:
                walk(x, scope)
        elif isinstance(s, ir.IfThenElse):
            visit_expr(s.cond, scope)
            walk(s.then_case, scope)
            if s.else_case is not None:
                walk(s.else_case, scope)
        elif isinstance(s, ir.Store):
            for f in _expression_fields(s):
                visit_expr(getattr(s, f), scope)
        elif isinstance(s, ir.Call):
            for a in s.args:
                if a is not None:
                    visit_expr(a, scope)

    walk(stmt, ())
    return found


def _real_variables(expr: ir.Expr, depends: dict[str, set[str]]) -> set[str]:
    """The statement's variables an expression uses, looking through chosen let variables."""
    names: set[str] = set()
    for v in ir.free_vars(expr):
        names |= depends.get(v.name, {v.name})
    return names


def _binder_depth(expr: ir.Expr, scope: tuple, depends: dict[str, set[str]]) -> int:
    """How many of the enclosing binders the expression's placement goes inside: up to the
    innermost one binding a variable the expression uses."""
    used = _real_variables(expr, depends)
    depth = 0
    for i, binder in enumerate(scope):
        if binder.var.name in used:
            depth = i + 1
    return depth


def _pick(occurrences: dict[ir.Expr, list[tuple]], model: CostModel, depends: dict[str, set[str]]) -> list[ir.Expr]:
    """Subexpressions worth a let (used twice, or invariant in a loop around a use), largest
    first, none inside another (deterministic order: size, then text)."""
    worth = []
    for expr, scopes in occurrences.items():
        shared = len(scopes) >= 2
        hoisted = shared or any(any(isinstance(b, ir.For) for b in scope[_binder_depth(expr, scope, depends):])
                                for scope in scopes)
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
    binders = _binders_by_name(stmt)

    def home(value: ir.Expr) -> int | None:
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
        ready = [(var, value) for var, value in pending
                 if all(v.name not in let_vars or v.name in home_of for v in ir.free_vars(value))]
        for var, value in ready:
            h = home(value)
            home_of[var.name] = h
            placement.setdefault(h[0] if h else None, []).append((var, value))
        pending = [p for p in pending if p not in ready]

    def wrap(body: ir.Stmt, lets: list[tuple[ir.Var, ir.Expr]]) -> ir.Stmt:
        for var, value in reversed(lets):
            body = ir.Let(var, value, body)
        return body

    def rebuild(s: ir.Stmt) -> ir.Stmt:
        if isinstance(s, ir.For):
            return ir.For(s.var, s.init, s.bound, wrap(rebuild(s.body), placement.get(id(s), [])), s.unroll)
        if isinstance(s, ir.Let):
            return ir.Let(s.var, s.value, wrap(rebuild(s.body), placement.get(id(s), [])))
        if isinstance(s, ir.Alloc):
            return ir.Alloc(s.buffer, s.size, s.kind, rebuild(s.body))
        if isinstance(s, ir.Seq):
            return ir.Seq(tuple(rebuild(x) for x in s.stmts)) if s.stmts else s
        if isinstance(s, ir.IfThenElse):
            return ir.IfThenElse(s.cond, rebuild(s.then_case), rebuild(s.else_case) if s.else_case is not None else None)
        return s

    return wrap(rebuild(stmt), placement.get(None, []))


def _binders_by_name(stmt: ir.Stmt) -> dict[str, list[tuple[int, int]]]:
    """Variable name -> (id of its Let/For statement, nesting depth) for every binder."""
    found: dict[str, list[tuple[int, int]]] = {}

    def walk(s: ir.Stmt, depth: int) -> None:
        if isinstance(s, (ir.For, ir.Let)):
            found.setdefault(s.var.name, []).append((id(s), depth))
            walk(s.body, depth + 1)
        elif isinstance(s, ir.Alloc):
            walk(s.body, depth)
        elif isinstance(s, ir.Seq):
            for x in s.stmts:
                walk(x, depth)
        elif isinstance(s, ir.IfThenElse):
            walk(s.then_case, depth)
            if s.else_case is not None:
                walk(s.else_case, depth)

    walk(stmt, 0)
    return found
