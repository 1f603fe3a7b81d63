"""Extracting one program under several cost models, side by side (`xegen extract --compare`).

The rules offer every form on every platform (the add3/mad peepholes too: the cost model prices
a missing instruction as infinite), so saturation does not depend on the platform: an
expression's e-graph is saturated once and extracted under each cost model.  (A statement still
goes through `optimize_stmt_report` once per platform: see `compare_statement`.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .. import ir
from ..hw import platform
from .costs import INFINITE, CostModel, breakdown, format_cost
from .engine import Limits
from .kernel import optimize_stmt_report
from .simplify import RangeSpec, simplify_each


@dataclass
class PlatformResult:
    platform: str
    program: str
    cost: int
    cost_before: int
    instructions: list[tuple[str, int]] = field(default_factory=list)
    note: str = ""


@dataclass
class Comparison:
    input: str
    results: list[PlatformResult]

    def to_json(self) -> dict:
        return {
            "input": self.input,
            "platforms": [
                {
                    "hw": r.platform,
                    "program": r.program,
                    "cost": _cost(r.cost),
                    "cost_before": _cost(r.cost_before),
                    "instructions": [{"operation": op, "cost": c} for op, c in r.instructions],
                    "note": r.note,
                }
                for r in self.results
            ],
        }

    def text(self) -> str:
        lines = [f"input: {self.input}", ""]
        for r in self.results:
            lines.append(f"== {r.platform}: cost {format_cost(r.cost_before)} -> {format_cost(r.cost)}")
            lines.extend("   " + line for line in r.program.splitlines())
            why = ", ".join(f"{op} {format_cost(c)}" for op, c in r.instructions) or "no instructions"
            lines.append(f"   instructions: {why}")
            if r.note:
                lines.append(f"   note: {r.note}")
            lines.append("")
        costs = {r.platform: r.cost for r in self.results}
        programs = {r.program for r in self.results}
        if len(programs) > 1:
            lines.append(
                "the platforms extract different programs: "
                + ", ".join(f"{p} {format_cost(c)}" for p, c in costs.items())
            )
        else:
            lines.append("every platform extracts the same program")
        return "\n".join(lines)


def _cost(c: int):
    return None if c >= INFINITE else c


def compare_expression(
    expr: ir.Expr,
    platforms: Sequence[str],
    ranges: Mapping[str, RangeSpec] | None = None,
    extractor: str = "dag",
    rules=None,
    limits: Limits = Limits(),
) -> Comparison:
    models = [CostModel(platform(name)) for name in platforms]
    results = []
    for model, r in zip(models, simplify_each(expr, models, ranges, extractor, rules, limits), strict=True):
        note = "; ".join(x for x in (r.note, r.saturation.describe() if r.saturation.bound_hit else "") if x)
        results.append(
            PlatformResult(
                model.hw.display_name,
                ir.format_expr(r.result),
                r.cost_after,
                r.cost_before,
                breakdown(model, r.result),
                note,
            )
        )
    return Comparison(ir.format_expr(expr), results)


def compare_statement(
    stmt: ir.Stmt,
    platforms: Sequence[str],
    ranges: Mapping[str, RangeSpec] | None = None,
    extractor: str = "dag",
    rules=None,
    limits: Limits = Limits(seconds=5.0),
) -> Comparison:
    # one saturation per platform: the kernel optimizer saturates and extracts in one call
    results = []
    for name in platforms:
        model = CostModel(platform(name))
        r = optimize_stmt_report(stmt, model, ranges=ranges, extractor=extractor, rules=rules, limits=limits)
        results.append(
            PlatformResult(
                model.hw.display_name,
                ir.format_stmt(r.stmt),
                r.cost_after,
                r.cost_before,
                _statement_breakdown(r.stmt, model),
                r.note,
            )
        )
    return Comparison(ir.format_stmt(stmt), results)


def _statement_breakdown(stmt: ir.Stmt, model: CostModel) -> list[tuple[str, int]]:
    return breakdown(model, [e for s in ir.statements(stmt) for e in ir.expressions(s)])
