"""Simplifying expressions: IR in, cheapest equivalent IR out, under one platform's cost model.

    from xegen import ir
    from xegen.egraph import simplify
    result = simplify(ir.parse_expr("2*(a+b) - a"), "xehpg")
    str(result.result)       # 'mad(a, b, 2)'
    result.cost_before, result.cost_after   # 3, 1

Variable ranges (`ranges={"x": range(0, 1024)}`) seed the interval analysis that guards the
div/mod/comparison rules.  The result is never costlier than the input: if extraction finds
nothing better, the input comes back unchanged (`kept_input`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .. import ir
from ..errors import Error
from ..hw import Platform
from .costs import INFINITE, CostModel, cost_model
from .engine import Limits, SaturationReport, Seeds, prepare, saturate
from .extract import EXTRACTORS, Snapshot, choice_builder, greedy_dag, ilp_dag, share_more, tree_extractor
from .rules import RuleSet, load_rules
from .terms import OpaqueLeaf, TermBuilder, TermReader, is_term_type, quote, rebuild_opaque, ty

#: what `ranges` values may be: a half-open `range(lo, hi)` or an inclusive `(lo, hi)` pair
RangeSpec = range | tuple[int | None, int | None]


@dataclass
class ExtractionInfo:
    extractor: str
    egraph_nodes: int = 0
    egraph_classes: int = 0
    note: str = ""


@dataclass
class Problem:
    """Expressions translated into terms, with the facts that go along."""

    builder: TermBuilder
    seeds: Seeds = field(default_factory=Seeds)


def inclusive_bounds(spec: RangeSpec) -> tuple[int | None, int | None]:
    if isinstance(spec, range):
        if spec.step != 1:
            raise Error(f"a variable range must have step 1, not {spec}")
        if spec.stop <= spec.start:  # (len() of a range of 2^63 values or more overflows)
            raise Error(f"the range {spec.start}..{spec.stop} is empty")
        return spec.start, spec.stop - 1
    lo, hi = spec
    if lo is not None and hi is not None and lo > hi:
        raise Error(f"the range [{lo}, {hi}] is empty")
    return lo, hi


def seed_variables(problem: Problem, ranges: Mapping[str, RangeSpec] | None) -> None:
    """Ranks for every variable (by name, so the order of sums is deterministic) and the
    declared ranges (clipped to the type)."""
    builder, seeds = problem.builder, problem.seeds
    names = sorted(builder.variables)
    for rank, name in enumerate(names):
        v = builder.variables[name]
        seeds.ranks[_var_term(name, v)] = rank
    # (opaque leaves get their ranks from rules/linear.egg)
    for name, spec in (ranges or {}).items():
        matches = [n for n in names if builder.variables[n].name == name or n == name]
        for n in matches:
            v = builder.variables[n]
            lo, hi = inclusive_bounds(spec)
            if v.type.is_int:
                lo = v.type.min if lo is None else max(lo, v.type.min)
                hi = v.type.max if hi is None else min(hi, v.type.max)
                if lo > hi:
                    raise Error(f"the range of '{name}' does not intersect its type {v.type}")
                # the interval analysis only names i64 values: a smaller lower bound and no upper
                # bound are weaker facts, and still true
                lo = min(lo, (1 << 63) - 1)
                if hi >= 1 << 63:
                    hi = None
            seeds.ranges[_var_term(n, v)] = (n, lo, hi)


def _var_term(name: str, v: ir.Var) -> str:
    return f"(Var {ty(v.type)} {quote(name)})"


@dataclass
class SimplifyResult:
    input: ir.Expr
    result: ir.Expr
    cost_before: int
    cost_after: int
    hw: Platform
    extractor: str
    egraph_nodes: int
    egraph_classes: int
    saturation: SaturationReport
    milliseconds: float
    kept_input: bool = False
    note: str = ""

    def to_json(self) -> dict:
        return {
            "input": ir.format_expr(self.input),
            "result": ir.format_expr(self.result),
            "cost_before": _json_cost(self.cost_before),
            "cost_after": _json_cost(self.cost_after),
            "hw": self.hw.name,
            "extractor": self.extractor,
            "egraph_nodes": self.egraph_nodes,
            "egraph_classes": self.egraph_classes,
            "iterations": self.saturation.iterations,
            "stop": self.saturation.stop,
            "bound_hit": self.saturation.bound_hit,
            "milliseconds": round(self.milliseconds, 3),
            "kept_input": self.kept_input,
            "note": self.note,
        }


def _json_cost(cost: int):
    return None if cost >= INFINITE else cost


def extract_roots(
    run, problem: Problem, model: CostModel, extractor: str, share: bool = False, snapshot: Snapshot | None = None
) -> tuple[list[ir.Expr], ExtractionInfo]:
    """Extract every root of the problem; opaque leaves are rebuilt around their extracted holes.
    `share`: the greedy DAG choice is improved by `share_more` (standalone expressions: a kernel's
    e-graph is larger, and its compile time counts).  `snapshot`: the run's, if taken already
    (one serves every cost model)."""
    if extractor not in EXTRACTORS:
        raise Error(f"unknown extractor '{extractor}': expected one of {', '.join(EXTRACTORS)}")
    builder = problem.builder
    info = ExtractionInfo(extractor)
    if snapshot is None:
        snapshot = Snapshot.from_run(run)
    info.egraph_nodes = snapshot.node_count
    info.egraph_classes = len(snapshot.classes)
    built: dict[int, ir.Expr] = {}
    opaque_built: dict[int, ir.Expr] = {}

    def root(k: int) -> ir.Expr:  # built on demand: an opaque leaf may need a later root
        if k not in built:
            built[k] = extract_one(k)
        return built[k]

    def opaque(index: int) -> ir.Expr:
        if index not in opaque_built:
            opaque_built[index] = rebuild_opaque(builder.opaque[index], root)
        return opaque_built[index]

    reader = TermReader(builder.variables, opaque)
    extract_one: Callable[[int], ir.Expr]
    if extractor == "tree":
        tree_one = tree_extractor(run, model, reader)
        fallback = choice_builder(snapshot, greedy_dag(snapshot, model), reader)

        def tree_or_fallback(k: int) -> ir.Expr:
            try:
                return tree_one(k)
            except Exception:  # e.g. a root whose only nodes are subsumed: egglog cannot extract it
                info.note = "egglog's extractor could not extract a root; the greedy DAG extractor did"
                return fallback(k)

        extract_one = tree_or_fallback
    else:
        if extractor == "dag":
            choice = greedy_dag(snapshot, model)
            if share:
                choice = share_more(snapshot, model, choice)
        else:
            outcome = ilp_dag(snapshot, model)
            choice, info.note = outcome.choice, outcome.note
        extract_one = choice_builder(snapshot, choice, reader)
    return [root(k) for k in range(len(builder.roots))], info


def simplify(
    expr: ir.Expr | str,
    hw: Platform | str | CostModel = "xehpg",
    ranges: Mapping[str, RangeSpec] | None = None,
    extractor: str = "dag",
    rules: RuleSet | Sequence[str] | None = None,
    limits: Limits = Limits(),
) -> SimplifyResult:
    """The cheapest form of `expr` the rules find, under `hw`'s cost model."""
    return simplify_each(expr, [cost_model(hw)], ranges, extractor, rules, limits)[0]


def simplify_each(
    expr: ir.Expr | str,
    models: Sequence[CostModel],
    ranges: Mapping[str, RangeSpec] | None = None,
    extractor: str = "dag",
    rules: RuleSet | Sequence[str] | None = None,
    limits: Limits = Limits(),
) -> list[SimplifyResult]:
    """`simplify(expr, model)` for each model, from one saturation (the rules, and so the
    e-graph, do not depend on the cost model).  Each result's milliseconds are the
    saturation's plus its own extraction's."""
    rule_set = rules if isinstance(rules, RuleSet) else load_rules(rules, standalone=True)
    prepare(rule_set)  # once per process: not part of this problem's time
    start = time.perf_counter()
    if isinstance(expr, str):
        expr = ir.parse_expr(expr)
    problem = Problem(TermBuilder())
    if is_term_type(expr.type):
        root = problem.builder.add_root(expr)  # not always 0: an opaque part's holes come first
        top: OpaqueLeaf | None = None
    else:
        top = problem.builder.add_opaque_root(expr)
    seed_variables(problem, ranges)
    results = []
    with saturate(rule_set, problem.builder.roots, problem.seeds, limits, problem.builder.pieces) as run:
        saturated = time.perf_counter()
        snapshot = Snapshot.from_run(run)  # (the e-graph is the same for every model)
        snapshot_seconds = time.perf_counter() - saturated
        for model in models:
            begin = time.perf_counter() - snapshot_seconds  # (each result's time includes the snapshot)
            roots, info = extract_roots(run, problem, model, extractor, share=True, snapshot=snapshot)
            result = roots[root] if top is None else rebuild_opaque(top, roots.__getitem__)
            cost_before, cost_after = model.dag_cost(expr, ranges), model.dag_cost(result, ranges)
            # never costlier than the input, nor larger at the same cost
            kept = cost_after > cost_before or (
                cost_after == cost_before and result != expr and _size(result) > _size(expr)
            )
            if kept:
                result, cost_after = expr, cost_before
            milliseconds = (saturated - start + time.perf_counter() - begin) * 1000
            results.append(
                SimplifyResult(
                    expr,
                    result,
                    cost_before,
                    cost_after,
                    model.hw,
                    extractor,
                    info.egraph_nodes,
                    info.egraph_classes,
                    run.report,
                    milliseconds,
                    kept,
                    info.note,
                )
            )
    return results


def _size(e: ir.Expr) -> int:
    return ir.node_count(e)
