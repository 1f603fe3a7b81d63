"""Kernel-level optimization: every expression of a statement in one e-graph.

`optimize_stmt(stmt, hw, ranges=...)`:

1. Every expression of the statement (let values, loop bounds, if conditions, store offsets and
   values, call arguments; the integer parts of loads and vectors) becomes a root of one e-graph.
   Binders are named apart first (`passes.unique_binders`), so two variables called `i` in
   different loops stay apart.
   Loops seed their variable's range (`init <= i < bound`), lets their variable's (the value's);
   `ranges` adds ranges of external variables (thread and group ids, kernel arguments).  Uses
   of pure integer lets see the let's value (`passes.see_through_lets`), so rules can combine
   across lets; afterwards a let's value reads its variable again, and lets nothing reads are
   dropped (`passes.drop_unused_lets`).
2. Saturation, then one DAG extraction for all roots: a subexpression shared between roots is
   paid once, so the extractor prefers forms that share.
3. Common subexpressions and loop invariants become `let`s: a pure integer subexpression used
   more than once, or used in a loop whose variable it does not depend on, is bound once at the
   outermost scope where all its variables are defined (`passes.bind_common_subexpressions`:
   CSE and loop-invariant hoisting in one step, priced by the platform's cost model).

The result computes the same buffers (the tests run both through `xegen.ir.execute`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from .. import ir
from ..hw import Platform
from ..passes import bind_common_subexpressions, drop_unused_lets, is_pure, see_through_lets, unique_binders
from .costs import CostModel, cost_model
from .engine import Limits, SaturationReport, prepare, saturate
from .rules import RuleSet, load_rules
from .simplify import Problem, RangeSpec, extract_roots, seed_variables
from .terms import OpaqueLeaf, TermBuilder, is_term_type, quote, rebuild_opaque, ty


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
    """One expression a statement evaluates (`ir.expressions`), as the e-graph holds it."""

    expr: ir.Expr
    root: int | None = None  # root index when the expression is a term
    leaf: OpaqueLeaf | None = None  # when it is not (a vector value with integer parts)

    def value(self, roots: Sequence[ir.Expr]) -> ir.Expr:
        """The extracted expression: its root's, or its opaque leaf's with the holes filled."""
        if self.leaf is not None:
            return rebuild_opaque(self.leaf, lambda k: roots[k])
        assert self.root is not None  # every site is one or the other
        return roots[self.root]


def _sites(stmt: ir.Stmt) -> list[tuple[ir.Stmt, list[_Site]]]:
    """Every statement with the expressions it evaluates, in program order."""
    return [(s, [_Site(e) for e in ir.expressions(s)]) for s in ir.statements(stmt)]


class _Rebuilder(ir.StmtMutator):
    """Puts the extracted expressions back (in program order, as `_sites` found them), and merges
    lets that simplification made equal: a let whose value equals an enclosing let's value binds
    that variable instead (`kw_k1 = (k + 1) / 64 % 3` may have become `kw_k0`'s value), and a let
    bound to a variable or constant is replaced by it in everything after, so that expressions
    built on either alias compare equal as well.

    An extracted expression that reads a variable not in scope where it is evaluated is put back
    as it was (`values` pairs each with the original).  The e-graph holds every scope's
    expressions together and extracts one form per class: a loop of one trip makes its variable
    a range of one value, so an expression inside the loop can become equal to one before it,
    and the form extracted for both may read the loop's variable (8 groups of 4 bf16 channels on
    XeHPC, plan=depthwise: the first row's loads, before a one-trip loop, read its variable)."""

    def __init__(self, values: Iterator[tuple[ir.Expr, ir.Expr]], scope: Iterable[ir.Var]):
        self.values = values
        self.scope = set(scope)  # variables defined where the next expression is evaluated
        self.bound: dict[ir.Expr, ir.Var] = {}  # pure let values in scope -> their variable
        self.bound_uses: dict[ir.Expr, frozenset[ir.Var]] = {}  # those values -> their variables
        self.aliases: dict[ir.Expr, ir.Expr] = {}  # let variable -> the variable or constant it equals

    def mutate_expr(self, e: ir.Expr) -> ir.Expr:
        value, original = next(self.values)
        uses = set(ir.free_vars(value))
        if not self.scope.issuperset(uses):
            value, uses = original, set(ir.free_vars(original))
        # A substitution only walks the expression when a key can occur in it: a subexpression
        # equal to a key uses the key's variables (expressions bind none), and an alias key is a
        # variable.  (Where none can occur, `substitute` would return `value` itself.)
        if self.aliases and not self.aliases.keys().isdisjoint(uses):
            value = ir.substitute(value, self.aliases)
            uses = set(ir.free_vars(value))
        # a let's value where it survived extraction reads the let's variable again (uses saw
        # through the let, see `see_through_lets`)
        if any(key_uses <= uses for key_uses in self.bound_uses.values()):
            value = ir.substitute(value, self.bound)
        return value

    def mutate_Let(self, s: ir.Let) -> ir.Stmt:
        value = self._expr(s.value)
        if value is not None and value in self.bound:
            value = self.bound[value]
        if isinstance(value, (ir.Var, ir.IntImm)) and value.type == s.var.type:
            self.aliases[s.var] = value
        if value is None or isinstance(value, (ir.Var, ir.IntImm)) or not is_pure(value):
            return ir.Let(s.var, value, self._body(s.var, s.body))
        self.bound[value] = s.var
        self.bound_uses[value] = frozenset(ir.free_vars(value))
        try:
            return ir.Let(s.var, value, self._body(s.var, s.body))
        finally:
            del self.bound[value], self.bound_uses[value]

    def mutate_For(self, s: ir.For) -> ir.Stmt:
        init, bound = self.mutate_expr(s.init), self.mutate_expr(s.bound)
        return ir.For(s.var, init, bound, self._body(s.var, s.body), s.unroll)

    def mutate_Alloc(self, s: ir.Alloc) -> ir.Stmt:
        return ir.Alloc(s.buffer, s.size, s.kind, self._body(s.buffer, s.body))

    def _body(self, binder: ir.Var, body: ir.Stmt) -> ir.Stmt:
        """`body` mutated with `binder` in scope (binders are unique: `unique_binders`)."""
        self.scope.add(binder)
        try:
            return self.mutate(body)
        finally:
            self.scope.discard(binder)


def statement_cost(stmt: ir.Stmt, model: CostModel) -> int:
    """Cost of a statement's expressions, each distinct subexpression counted once per scope
    (what a compiler with CSE pays; loops are not multiplied out)."""
    return model.dag_cost([e for s in ir.statements(stmt) for e in ir.expressions(s)])


# The optimizer ------------------------------------------------------------------------------


def optimize_stmt(
    stmt: ir.Stmt,
    hw: Platform | str | CostModel = "xehpg",
    ranges: Mapping[str, RangeSpec] | None = None,
    extractor: str = "dag",
    rules: RuleSet | Sequence[str] | None = None,
    limits: Limits = Limits(seconds=5.0),
    cse: bool = True,
) -> ir.Stmt:
    """The statement with every expression optimized in one e-graph, shared subexpressions and
    loop invariants bound once (see the module docstring)."""
    return optimize_stmt_report(stmt, hw, ranges, extractor, rules, limits, cse).stmt


def optimize_stmt_report(
    stmt: ir.Stmt,
    hw: Platform | str | CostModel = "xehpg",
    ranges: Mapping[str, RangeSpec] | None = None,
    extractor: str = "dag",
    rules: RuleSet | Sequence[str] | None = None,
    limits: Limits = Limits(seconds=5.0),
    cse: bool = True,
) -> KernelResult:
    rule_set = rules if isinstance(rules, RuleSet) else load_rules(rules)
    prepare(rule_set)  # once per process: not part of this problem's time
    start = time.perf_counter()
    model = cost_model(hw)
    original = stmt
    stmt = see_through_lets(unique_binders(stmt))
    by_statement = _sites(stmt)
    sites = [site for _, own in by_statement for site in own]
    builder = TermBuilder()
    problem = Problem(builder)
    for site in sites:
        if is_term_type(site.expr.type):
            site.root = builder.add_root(site.expr)
        else:
            site.leaf = builder.add_opaque_root(site.expr)
    _seed_binders(by_statement, problem)
    seed_variables(problem, ranges)

    with saturate(rule_set, builder.roots, problem.seeds, limits, builder.pieces) as run:
        roots, info = extract_roots(run, problem, model, extractor)
        report = run.report
    new_values = [(site.value(roots), site.expr) for site in sites]
    result = drop_unused_lets(_Rebuilder(iter(new_values), ir.free_vars(stmt)).mutate(stmt))
    lets = 0
    if cse:
        result, lets = bind_common_subexpressions(result, model.dag_cost)
    before, after = statement_cost(original, model), statement_cost(result, model)
    note = info.note
    if after > before:  # never return something costlier than the input
        result, after, note = original, before, (note + "; " if note else "") + "kept the input (nothing cheaper found)"
    return KernelResult(
        result,
        before,
        after,
        len(builder.roots),
        lets,
        info.egraph_nodes,
        report,
        (time.perf_counter() - start) * 1000,
        note,
    )


def _seed_binders(by_statement: list[tuple[ir.Stmt, list[_Site]]], problem: Problem) -> None:
    """InLoop facts for loop variables and LetValue facts for let variables (binder names are
    unique, see `unique_binders`)."""
    builder, seeds = problem.builder, problem.seeds

    def var_term(v: ir.Var) -> str:
        return f"(Var {ty(v.type)} {quote(v.name)})"

    for s, own in by_statement:
        if isinstance(s, ir.For):
            init, bound = own
            if init.root is not None and bound.root is not None:
                seeds.facts.append(f"(InLoop {var_term(s.var)} {builder.roots[init.root]} {builder.roots[bound.root]})")
                builder.variables.setdefault(s.var.name, s.var)
        elif isinstance(s, ir.Let) and own:
            value = own[0]
            if value.root is not None and is_term_type(s.var.type):
                seeds.facts.append(f"(LetValue {var_term(s.var)} {builder.roots[value.root]})")
                builder.variables.setdefault(s.var.name, s.var)
