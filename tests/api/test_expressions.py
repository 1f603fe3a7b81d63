"""`xegen.simplify`, `xegen.extract_compare`, `xegen.rules`, the assembler: checked against the
interpreter, the command line and hand calculations."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

import xegen
from xegen.cli import main
from xegen.ir import evaluate, parse_expr

ABSORB = """\
; (x | y) & x is x: every bit set in x is set in x | y (absorption)
(rewrite (And t (Or t x y) x) x :ruleset rewrite :name "and-absorbs-or")
"""
WRONG = """\
; (x | y) & y is x: not true (x = 1, y = 0 gives 0)
(rewrite (And t (Or t x y) y) x :ruleset rewrite :name "and-or-wrong")
"""
EDGES = [-(2**31), -7, -1, 0, 1, 5, 2**31 - 1]


def cli_json(*argv: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    return json.loads(out.getvalue())


def same_values(a: str, b: str, names=("a", "b")) -> bool:
    left, right = parse_expr(a), parse_expr(b)
    return all(
        evaluate(left, dict(zip(names, values, strict=True))) == evaluate(right, dict(zip(names, values, strict=True)))
        for values in np.array(np.meshgrid(EDGES, EDGES)).T.reshape(-1, 2).tolist()
    )


def test_simplify_is_the_commands_result_with_a_cost_breakdown():
    result = xegen.simplify("2*(a+b) - a", hw="xelp")
    command = cli_json("simplify", "2*(a+b) - a", "--hw", "xelp", "--json")
    assert (result.result, result.cost_before, result.cost_after) == (
        command["result"],
        command["cost_before"],
        command["cost_after"],
    )
    assert result.cost_after < result.cost_before  # 2*(a+b) - a is a + 2*b: one operation fewer
    assert same_values("2*(a+b) - a", result.result)
    # every costed operation of the result is listed once: the costs add up to the total
    assert sum(cost for _, cost in result.breakdown) == result.cost_after
    assert sum(cost for _, cost in result.breakdown_before) == result.cost_before
    assert result.to_json()["breakdown"][0]["operation"] == result.breakdown[0][0]
    page = result._repr_html_()
    assert "<table" in page and "XeLP" in page and result.result in page


def test_simplify_uses_declared_ranges_and_types():
    unsigned = xegen.simplify("x / 8", hw="xehpg", types={"x": "u32"})
    assert "x:u32" in unsigned.input
    signed = xegen.simplify("x % 8", hw="xehpg")
    bounded = xegen.simplify("x % 8", hw="xehpg", ranges={"x": range(0, 1024)})
    assert bounded.cost_after < signed.cost_after  # a non-negative x needs no sign fix-up
    assert "&" in bounded.result


def test_a_rule_added_from_python_changes_the_result_and_checks_sound(tmp_path):
    mine = tmp_path / "absorb.egg"
    mine.write_text(ABSORB)
    before = xegen.simplify("(x | y) & x")
    assert before.result == "(x | y) & x"
    rules = xegen.rules.load([xegen.rules.directory(), mine])
    after = xegen.simplify("(x | y) & x", rules=rules)
    assert (after.result, after.cost_after) == ("x", 0)
    assert [(v.rule.name, v.verdict) for v in xegen.rules.check([mine], cache=False)] == [("and-absorbs-or", "sound")]
    # z3 given almost no effort cannot decide it: unproven, not sound
    assert [v.verdict for v in xegen.rules.check([mine], cache=False, effort=1)] == ["unproven"]
    wrong = tmp_path / "wrong.egg"
    wrong.write_text(WRONG)
    [verdict] = xegen.rules.check([wrong], cache=False)
    assert verdict.verdict == "unsound" and verdict.counterexample
    with pytest.raises(xegen.RuleError):
        xegen.rules.load([tmp_path / "missing.egg"])


def test_extract_compare_is_the_commands_comparison():
    comparison = xegen.extract_compare("a + b + c", platforms=("xelp", "xehpg"))
    command = cli_json("extract", "--compare", "xelp,xehpg", "a + b + c", "--json")
    assert comparison.to_json() == command
    # XeLP has no add3: two adds; XeHPG adds three sources in one instruction
    assert [r.cost for r in comparison.results] == [2, 1]
    assert comparison.program("xelp") != comparison.program("xehpg")
    assert "XeLP" in comparison._repr_html_() and "== XeLP" in str(comparison)


def test_extract_compare_takes_a_statement():
    comparison = xegen.extract_compare(
        "let tid;\nfor (k = 0; k < 8) { OUT[(tid * 8 + k) * 4] = k / 8 + k % 8; }", platforms=("xehpg",)
    )
    [result] = comparison.results
    assert result.cost < result.cost_before and "for" in result.program


def test_assemble_and_disassemble_round_trip():
    text = "add (8|M0) r10.0<1>:d r11.0<8;8,1>:d 1:d"
    data = xegen.assemble(text, hw="xelp")
    assert len(data) == 16
    listing = xegen.disassemble(data, hw="xelp")
    assert "add (8|M0)" in listing and xegen.assemble(listing, hw="xelp") == data


def test_the_package_lists_every_api_name():
    """`xegen/__init__.py` names the API without importing it (loaded on first use): the two lists
    must agree, and each name must resolve to the API's object."""
    import xegen.api

    assert set(xegen.api.__all__) <= set(xegen.__all__)
    assert all(getattr(xegen, name) is getattr(xegen.api, name) for name in xegen.api.__all__)
