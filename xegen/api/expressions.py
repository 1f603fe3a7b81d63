"""The e-graph optimizer from Python: one expression under one cost model, or under several.

    result = simplify("2*(a+b) - a", hw="xehpg", ranges={"a": range(0, 1024)})
    result.result, result.cost_before, result.cost_after, result.breakdown
    extract_compare("x / 8", platforms=("xelp", "xehpg"), types={"x": "u32"})

Expressions are in xegen's C syntax (`xegen eval`'s); variables are s32 unless `types` says
otherwise.  `rules` takes a rule set from `xegen.rules.load` or rule files and directories (the
default: rules/).  What these return is what `xegen simplify` and `xegen extract --compare`
print.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .. import hw as hwlib
from .. import ir
from ..egraph import Limits, RuleSet, SimplifyResult
from ..egraph import simplify as simplify_expression
from ..egraph.compare import Comparison, compare_expression, compare_statement
from ..egraph.costs import CostModel, breakdown, format_cost
from ..errors import ParseError
from ..ir.semantics import scalar_value
from .html import table

Ranges = Mapping[str, "range | tuple[int | None, int | None]"]
Types = Mapping[str, str]


@dataclass(frozen=True)
class Simplification:
    """The cheapest equivalent of `input` the rules found under `hw`'s cost model.  `breakdown`
    and `breakdown_before` list the (operation, cost) pairs the costs are made of."""

    input: str
    result: str
    cost_before: int
    cost_after: int
    breakdown_before: tuple[tuple[str, int], ...]
    breakdown: tuple[tuple[str, int], ...]
    details: SimplifyResult  # the optimizer's record: e-graph size, saturation, time

    @property
    def hw(self) -> hwlib.Platform:
        return self.details.hw

    def to_json(self) -> dict:
        return {**self.details.to_json(), "breakdown": [{"operation": op, "cost": c} for op, c in self.breakdown]}

    def __str__(self) -> str:
        return (
            f"{self.result}  (cost {format_cost(self.cost_before)} -> {format_cost(self.cost_after)} "
            f"on {self.hw.display_name})"
        )

    def _repr_html_(self) -> str:
        def costs(pairs) -> str:
            return ", ".join(f"{op} {format_cost(c)}" for op, c in pairs) or "nothing"

        saturation = self.details.saturation
        return table(
            f"simplify on {self.hw.display_name} ({self.details.extractor} extraction)",
            [
                ("input", self.input),
                ("result", self.result),
                ("cost", f"{format_cost(self.cost_before)} -> {format_cost(self.cost_after)}"),
                ("input costs", costs(self.breakdown_before)),
                ("result costs", costs(self.breakdown)),
                ("e-graph", f"{self.details.egraph_nodes} nodes, {saturation.describe()}"),
            ],
        )


def evaluate(expr: ir.Expr | str, types: Types | None = None, **values: int | float | bool):
    """The value of `expr` with Xe semantics (wrap-around at the type width, truncating / and %),
    variables bound by keyword: `evaluate("x * 3", x=5)`, as `xegen eval` prints it."""
    expression = _parse(expr, types)
    return scalar_value(ir.evaluate(expression, values), expression.type)


def _parse(expr: ir.Expr | str, types: Types | None) -> ir.Expr:
    return expr if isinstance(expr, ir.Expr) else ir.parse_expr(expr, dict(types or {}))


def _limits(limits: Limits | None) -> Limits:
    return Limits() if limits is None else limits


def simplify(
    expr: ir.Expr | str,
    hw: str | hwlib.Platform = "xehpg",
    ranges: Ranges | None = None,
    rules: RuleSet | Sequence[str] | None = None,
    extractor: str = "dag",
    types: Types | None = None,
    limits: Limits | None = None,
) -> Simplification:
    """The cheapest form of `expr` under `hw`'s cost model.  `ranges` bounds variables
    ({"i": range(0, 64)} or {"i": (0, 63)}, inclusive), which guards the div/mod and comparison
    rules; `extractor` is "dag" (greedy), "tree" (egglog's) or "ilp" (exact)."""
    expression = _parse(expr, types)
    details = simplify_expression(
        expression, hw, ranges=dict(ranges or {}), extractor=extractor, rules=rules, limits=_limits(limits)
    )
    model = CostModel(details.hw)
    return Simplification(
        ir.format_expr(details.input),
        ir.format_expr(details.result),
        details.cost_before,
        details.cost_after,
        tuple(breakdown(model, details.input)),
        tuple(breakdown(model, details.result)),
        details,
    )


class PlatformComparison:
    """One program extracted under several platforms' cost models (`extract_compare`)."""

    def __init__(self, comparison: Comparison):
        self.comparison = comparison

    @property
    def input(self) -> str:
        return self.comparison.input

    @property
    def results(self):
        """Per platform: `.platform`, `.program`, `.cost`, `.cost_before`, `.instructions`."""
        return self.comparison.results

    def program(self, hw: str | hwlib.Platform) -> str:
        """The program extracted for `hw`."""
        name = hwlib.platform(hw).display_name
        return next(r.program for r in self.results if r.platform == name)

    def to_json(self) -> dict:
        return self.comparison.to_json()

    def __str__(self) -> str:
        return self.comparison.text()

    def _repr_html_(self) -> str:
        rows = [
            (r.platform, f"cost {format_cost(r.cost_before)} -> {format_cost(r.cost)}: {r.program}")
            for r in self.results
        ]
        return table(f"extracted per platform: {self.input}", rows)


def extract_compare(
    expr_or_stmt: ir.Expr | ir.Stmt | str,
    platforms: Sequence[str] = ("xelp", "xehpg", "xehpc"),
    ranges: Ranges | None = None,
    rules: RuleSet | Sequence[str] | None = None,
    extractor: str = "dag",
    types: Types | None = None,
    limits: Limits | None = None,
) -> PlatformComparison:
    """`expr_or_stmt` optimized under each platform's cost model, side by side.  Text is read as
    an expression, else as a statement (a kernel body in xegen's statement language)."""
    ranges = dict(ranges or {})
    if isinstance(expr_or_stmt, str):
        text = expr_or_stmt
        try:
            expr_or_stmt = ir.parse_expr(text, dict(types or {}))
        except ParseError:
            expr_or_stmt = ir.parse_stmt(text, dict(types or {}))
    if isinstance(expr_or_stmt, ir.Expr):
        result = compare_expression(expr_or_stmt, list(platforms), ranges, extractor, rules, _limits(limits))
    else:
        bounds = {} if limits is None else {"limits": limits}  # else the statement optimizer's own bounds
        result = compare_statement(expr_or_stmt, list(platforms), ranges, extractor, rules, **bounds)
    return PlatformComparison(result)


__all__ = ["PlatformComparison", "Simplification", "evaluate", "extract_compare", "simplify"]
