"""Named guards (language.egg's `PowerOfTwo`, `NonNeg`, `AddFits`, ...): the checker proves a rule
that asks for a guard against the guard's definition, so a wrong definition makes the rules that
use it unsound; a rule file may define guards of its own."""

from __future__ import annotations

import pytest

from xegen import RuleError
from xegen.egraph import rules
from xegen.egraph.check import check_rules, read_all_rules, rule_sources
from xegen.egraph.check.model import instances, language_signatures


def shipped_rule(name: str) -> str:
    """The text of a shipped rule (with its comment), to check on its own."""
    for f in rule_sources(None):
        for form in f.rules():
            if rules.rule_name(form) == name:
                return "; " + form.comment.replace("\n", "\n; ") + "\n" + str(form) + "\n"
    raise KeyError(name)


@pytest.fixture
def language(monkeypatch):
    """Replace text in language.egg for the test (the checker reads the guards from it)."""

    def clear():
        rules.language_file.cache_clear()
        rules.language_signatures.cache_clear()

    def edit(old: str, new: str) -> None:
        text = rules.LANGUAGE_FILE.read_text()
        assert old in text
        monkeypatch.setattr(rules, "language_text", lambda: text.replace(old, new))
        clear()

    yield edit
    monkeypatch.undo()
    clear()


@pytest.mark.parametrize(
    "rule, old, new",
    [
        # AddFits without its lower bound: x + z can wrap below the type's minimum
        ("lt-cancel-addend", "(>= (+ (lo a) (lo b)) (ty-min t)) ", ""),
        # MulFits without its upper bound: x * c can wrap above the maximum
        ("div-cancels-mul", "(<= (* (hi a) c) (ty-limit t))", "(<= (* (hi a) c) (* 2 (ty-limit t)))"),
        # PowerOfTwo without its bit test: 6 would be 2^2
        ("mul-power-of-two", "(> c 1) (= (& c (- c 1)) 0)", "(> c 1)"),
        # NonNeg that lets -1 through: -1 / 2 = 0 but -1 >> 1 = -1
        ("div-power-of-two", "(>= l 0)", "(>= l -1)"),
    ],
)
def test_a_wrong_guard_definition_makes_the_rules_that_use_it_unsound(tmp_path, language, rule, old, new):
    path = tmp_path / "rule.egg"
    path.write_text(shipped_rule(rule))
    (verdict,) = check_rules([path], examples=3)
    assert verdict.verdict == "sound", (verdict.detail, verdict.counterexample)
    language(old, new)
    (verdict,) = check_rules([path], examples=3)
    assert verdict.verdict == "unsound", (verdict.detail, verdict.counterexample)


SMALL = """\
(relation Small (Expr))
; a value in [0, LIMIT] is small
(rule ((= h (hi e)) (<= h LIMIT) (NonNeg e)) ((Small e)) :ruleset analysis :name "small")
; a small value is its own remainder modulo 128
(rewrite (Mod t x (Const t 128)) x :when ((Small x)) :ruleset rewrite :name "mod-of-small")
"""


@pytest.mark.parametrize("limit, verdict", [(127, "sound"), (128, "unsound")])
def test_a_rule_file_defines_its_own_guards(tmp_path, limit, verdict):
    path = tmp_path / "small.egg"
    path.write_text(SMALL.replace("LIMIT", str(limit)))
    definition, rule = check_rules([path], examples=3)
    assert definition.verdict == "sound"  # a definition claims nothing
    assert rule.verdict == verdict, (rule.detail, rule.counterexample)


def test_a_guard_derived_by_two_rules_is_checked_once_per_type():
    """NonNegMulAdd has a deriving rule for each order of the sum; both mean the same, so a rule
    asking for it has one instance per type, as if its body were written out."""
    files = rule_sources(None)
    signatures = language_signatures(files)
    (rule,) = [r for r in read_all_rules(files) if r.name == "div-of-mul-add"]
    assert len(rule.variants()) == 2
    found = list(instances(rule, signatures))
    assert sorted(i.type_text for i in found) == sorted({i.type_text for i in found})
    assert len(found) == 8


def test_a_guards_own_type_variables_do_not_multiply_the_checks():
    """PowerOfTwo is derived from a constant of any type (`(Const t c)` with its own t): the rule
    asking for it is still checked once per type of its own."""
    files = rule_sources(None)
    (rule,) = [r for r in read_all_rules(files) if r.name == "mul-power-of-two"]
    found = list(instances(rule, language_signatures(files)))
    assert sorted(i.type_text for i in found) == sorted(
        f"t={t}" for t in ("s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64")
    )


def test_a_rule_that_derives_a_guard_does_nothing_else(tmp_path):
    """Whatever else it did would escape the guard's meaning."""
    path = tmp_path / "r.egg"
    path.write_text(
        "(relation Small (Expr))\n; small, and at least 0\n"
        "(rule ((= h (hi e)) (<= h 3)) ((Small e) (set (lo e) 0)) :ruleset analysis :name \"small\")\n"
    )
    with pytest.raises(RuleError, match=r"r.egg:3: a rule that derives the guard 'Small' does only that"):
        check_rules([path])


def test_a_guard_that_is_never_derived_is_an_error(tmp_path):
    path = tmp_path / "r.egg"
    path.write_text(
        "(relation Never (Expr))\n; never fires\n"
        "(rewrite (Add t x y) x :when ((Never y)) :ruleset rewrite :name \"never\")\n"
    )
    (verdict,) = check_rules([path], examples=0)
    assert verdict.verdict == "error" and "Never" in verdict.detail


OPERANDS = """\
(relation SumOf (Expr Ty Expr Expr))
; remembers the operands of a sum
(rule ((= e (Add t x y))) ((SumOf e t x y)) :ruleset analysis :name "sum-of")
; a sum whose second operand is the constant K is its first
(rule ((SumOf e t x y) (= y (Const t K))) ((union e x)) :ruleset fold :name "add-k")
"""


@pytest.mark.parametrize("k, verdict", [(0, "sound"), (1, "unsound")])
def test_a_guard_that_names_operands_lets_later_facts_make_them_constants(tmp_path, k, verdict):
    """`(= y (Const t K))` after the guard's `(= e (Add t x y))`: the sum is built with y that
    constant, whatever order the facts are written in."""
    path = tmp_path / "operands.egg"
    path.write_text(OPERANDS.replace("K", str(k)))
    definition, rule = check_rules([path], examples=3)
    assert definition.verdict == "sound"
    assert rule.verdict == verdict, (rule.detail, rule.counterexample)
