"""The rule checker: z3's encoding agrees with the interpreter, unsound rules are caught with a
counterexample, sound ones pass, and the shipped rules are sound (the full run is slow)."""

from __future__ import annotations

from pathlib import Path

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen.egraph.check import check_rules
from xegen.egraph.check.smt import encode, variable
from xegen.egraph.rules import default_rules_directory

from ..ir.strategies import int_expr_at_a_point


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_z3_encoding_agrees_with_the_interpreter(data):
    e, types, env, expected = data.draw(int_expr_at_a_point())
    z3_env = {name: variable(name, t) for name, t in types.items()}
    substitution = [
        (z3_env[name], z3.BitVecVal(value % (1 << types[name].bits), types[name].bits)) for name, value in env.items()
    ]
    got = (
        z3.simplify(z3.substitute(encode(e, z3_env), *substitution)) if substitution else z3.simplify(encode(e, z3_env))
    )
    value = got.as_long()
    if e.type.is_signed and value >> (e.type.bits - 1):
        value -= 1 << e.type.bits
    assert value == expected, (str(e), env)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_acceptance_x_div_8_is_not_a_shift_without_a_range(tmp_path):
    path = write(
        tmp_path,
        "shift.egg",
        "; x / 8 is x >> 3 (it is not: -1 / 8 = 0 but -1 >> 3 = -1)\n"
        "(rewrite (Div t x (Const t 8)) (Shr t x (Const t 3)) :ruleset rewrite :name \"div8\")\n",
    )
    (verdict,) = check_rules([path], examples=10)
    assert verdict.verdict == "unsound"
    values = dict(part.split(" = ") for part in verdict.counterexample.split(", ") if " = " in part)
    assert int(values["x"]) < 0  # a negative counterexample


def test_acceptance_x_div_8_is_a_shift_for_non_negative_x(tmp_path):
    path = write(
        tmp_path,
        "shift.egg",
        "; x / 8 is x >> 3 when x >= 0 (truncation and flooring agree there)\n"
        "(rewrite (Div t x (Const t 8)) (Shr t x (Const t 3)) :when ((>= (lo x) 0)) :ruleset rewrite"
        " :name \"div8\")\n",
    )
    (verdict,) = check_rules([path], examples=10)
    assert verdict.verdict == "sound" and verdict.instances == 8


@pytest.mark.parametrize(
    "rule, why",
    [
        ("(rewrite (Add t x (Const t 1)) (Const t 1) :ruleset rewrite)", "unsound"),
        ("(rewrite (Mul t x (Const t 2)) (Shl t x (Const t 1)) :ruleset rewrite)", "sound"),
        # 32-bit wrap-around: x + 1 > x is false for the maximum
        ("(rewrite (Lt t x (Add t x (Const t 1))) (Const (Bool) 1) :ruleset rewrite)", "unsound"),
        # a constant the rule builds must be a value of its type (300 is no s8)
        ("(rewrite (Mul t x (Const t 3)) (Mul t x (Const t v)) :when ((= v (* 3 100))) :ruleset rewrite)", "unsound"),
        # an interval claim
        ("(rule ((= e (And t a (Const t m))) (>= m 0)) ((set (hi e) m)) :ruleset analysis)", "sound"),
        (
            "(rule ((= e (Add t a b)) (= la (lo a)) (= lb (lo b))) ((set (lo e) (+ la lb))) :ruleset analysis)",
            "unsound",
        ),
    ],
)
def test_verdicts(tmp_path, rule, why):
    path = write(tmp_path, "r.egg", "; a rule under test\n" + rule[:-1] + ' :name "r")\n')
    (verdict,) = check_rules([path], examples=10)
    assert verdict.verdict == why, (verdict.verdict, verdict.counterexample, verdict.detail)


@pytest.mark.parametrize(
    "rule, detail",
    [
        ('(rewrite (Add 5 x (Const t 0)) x :ruleset rewrite)', "expected a type, found 5"),
        ('(rewrite (Add t 5 (Const t 0)) (Const t 5) :ruleset rewrite)', "expected an expression, found 5"),
        # these two raised AttributeError and ValueError out of the checker (a traceback from `xegen rules check`)
        ('(rewrite (Add t x (Const t "a")) x :ruleset rewrite)', 'expected a number, found "a"'),
        ("(rewrite (Add t x (Const t c)) x :when ((= k c 1) (= c 0)) :ruleset rewrite)", "'=' takes two arguments"),
    ],
)
def test_a_rule_of_the_wrong_shape_is_an_error_verdict(tmp_path, rule, detail):
    path = write(tmp_path, "r.egg", "; a rule of the wrong shape\n" + rule[:-1] + ' :name "r")\n')
    (verdict,) = check_rules([path], examples=0)
    assert (verdict.verdict, verdict.detail) == ("error", detail)


def test_a_rule_without_a_comment_fails(tmp_path):
    path = write(tmp_path, "r.egg", '(rewrite (Add t x (Const t 0)) x :ruleset rewrite :name "add-0")\n')
    (verdict,) = check_rules([path], examples=0)
    assert verdict.verdict == "no comment"


def test_a_comment_covers_the_rules_below_it_up_to_a_blank_line(tmp_path):
    path = write(
        tmp_path,
        "r.egg",
        "; adding or subtracting zero changes nothing\n"
        '(rewrite (Add t x (Const t 0)) x :ruleset rewrite :name "add-0")\n'
        '(rewrite (Sub t x (Const t 0)) x :ruleset rewrite :name "sub-0")\n'
        "\n"
        '(rewrite (Xor t x (Const t 0)) x :ruleset rewrite :name "xor-0")\n',
    )
    verdicts = check_rules([path], examples=0)
    assert [(v.rule.name, v.verdict) for v in verdicts] == [
        ("add-0", "sound"),
        ("sub-0", "sound"),
        ("xor-0", "no comment"),
    ]
    assert verdicts[1].rule.comment == "adding or subtracting zero changes nothing"


@pytest.mark.parametrize("name", ["canonical.egg", "select.egg", "peephole.egg"])
def test_shipped_rule_files_are_sound(name):
    verdicts = check_rules([default_rules_directory() / name], examples=3)
    assert [(v.rule.name, v.verdict, v.counterexample) for v in verdicts if v.verdict != "sound"] == []


@pytest.mark.slow
def test_all_shipped_rules_are_sound():
    """Every rule of the language and rules/ is proven by z3 and passes its samples."""
    verdicts = check_rules(examples=10, jobs=2)
    bad = [(v.rule.name, v.verdict, v.counterexample, v.detail) for v in verdicts if v.verdict != "sound"]
    assert bad == []
