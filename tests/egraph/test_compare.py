"""`extract --compare` saturates an expression's e-graph once and extracts it per cost model: the
results are those of one `simplify` per platform."""

from __future__ import annotations

import pytest

from xegen import ir
from xegen.egraph import simplify
from xegen.egraph.compare import compare_expression
from xegen.egraph.costs import CostModel
from xegen.egraph.simplify import simplify_each
from xegen.hw import platform

PLATFORMS = ("xelp", "xehpg", "xehpc")

CASES = [
    ("2*(a+b) - a", None),
    ("(x * 64 + y) / 16", {"x": range(0, 1000), "y": range(0, 16)}),
    ("((n * 56 + oh) * 56 + ow) % 56 + (ow + 3) / 4", {"n": range(0, 2), "oh": range(0, 56), "ow": range(0, 56)}),
    ("(a < b) && (b < 100)", None),  # a bool expression: an opaque root
]


@pytest.mark.parametrize("text, ranges", CASES)
def test_one_saturation_gives_what_each_simplify_gives(text, ranges):
    expr = ir.parse_expr(text)
    models = [CostModel(platform(p)) for p in PLATFORMS]
    together = simplify_each(expr, models, ranges=ranges)
    for model, got in zip(models, together, strict=True):
        alone = simplify(expr, model, ranges=ranges)
        assert (got.result, got.cost_before, got.cost_after, got.kept_input) == (
            alone.result,
            alone.cost_before,
            alone.cost_after,
            alone.kept_input,
        ), model.hw.name
        assert got.egraph_nodes == alone.egraph_nodes  # the same e-graph


def test_the_platforms_differ_after_one_saturation():
    comparison = compare_expression(ir.parse_expr("2*(a+b) - a"), ["xelp", "xehpg"])
    xelp, xehpg = comparison.results
    assert "mad" not in xelp.program and "add3" not in xelp.program
    assert xehpg.cost == 1 and xelp.cost > xehpg.cost
