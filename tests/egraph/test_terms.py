"""IR <-> egglog terms: with no rules at all, extraction gives the input back (loads, floats and
vectors become opaque leaves, their integer parts are still terms), and the rule loader's errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xegen import RuleError, ir
from xegen.egraph import load_rules, sexpr, simplify
from xegen.egraph.engine import FORMS_PER_PROGRAM, programs
from xegen.egraph.rules import language_file, read_rule_file, rule_name, shipped_rule_files
from xegen.egraph.terms import TermBuilder, is_term_type

from ..ir.strategies import any_expr, deep_int_expr


@pytest.fixture(scope="module")
def no_rules(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("norules")
    (d / "empty.egg").write_text("; no rules: the e-graph holds the input only\n")
    return d


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(any_expr(depth=3))
def test_round_trip_without_rules(no_rules, e):
    r = simplify(e, "xehpg", rules=[no_rules])
    assert r.result == e


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(deep_int_expr(3, 5))
def test_round_trip_of_deep_integer_expressions(no_rules, e):
    assert simplify(e, "xelp", rules=[no_rules]).result == e


def test_terms_carry_their_types():
    b = TermBuilder()
    b.add_root(ir.parse_expr("x:u16 + 3", {}))
    assert b.roots[0] == '(Add (S32) (Cast (S32) (U16) (Var (U16) "x")) (Const (S32) 3))'


def test_u64_constants_are_bit_patterns():
    b = TermBuilder()
    b.add_root(ir.const((1 << 64) - 1, "u64"))
    assert b.roots[0] == "(Const (U64) -1)"


class _Forgetful(dict):
    """A memo that keeps nothing: a builder with it renders every term in full."""

    def __setitem__(self, key, value):
        pass


def _add_all(builder: TermBuilder, exprs: list[ir.Expr]) -> tuple:
    for e in exprs:
        if is_term_type(e.type):
            builder.add_root(e)
        else:
            builder.add_opaque_root(e)
    return builder.roots, builder.pieces, [(leaf.node, leaf.holes) for leaf in builder.opaque], builder.variables


def _chain(depth: int, leaf: str) -> ir.Expr:
    e = ir.parse_expr(leaf)
    for k in range(depth):
        e = e * ir.var(f"v{k % 3}") + k
    return e


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(any_expr(depth=3), min_size=1, max_size=4), st.integers(0, 100))
def test_terms_built_once_read_as_terms_built_every_time(exprs, depth):
    # the builder keeps the text of terms with no opaque leaf and no piece; the e-graph's input
    # (roots, pieces, opaque leaves and their holes, variables) must be what rendering every
    # occurrence in full gives.  A chain `depth` deep, alone and inside a bigger expression,
    # makes pieces (PIECE_DEPTH) and shared subterms across them
    chain = _chain(depth, "buf.s32[i * 4] + j")
    exprs = [*exprs, *(e for e in exprs if is_term_type(e.type)), chain, chain * 3 + exprs[0].type.bits, chain]
    memo, forgetful = TermBuilder(), TermBuilder()
    forgetful._plain = _Forgetful()
    assert _add_all(memo, exprs) == _add_all(forgetful, exprs)


def test_a_shared_subterm_is_rendered_once(monkeypatch):
    shared = _chain(20, "j")
    renders: list[ir.Expr] = []
    real = TermBuilder._node_text
    monkeypatch.setattr(TermBuilder, "_node_text", lambda self, e, below: renders.append(e) or real(self, e, below))
    b = TermBuilder()
    b.add_root(shared + 1)
    first = len(renders)
    b.add_root(shared * 1000)
    assert len(renders) == first + 2  # the product and its constant: not `shared` again
    assert b.roots[1] == f"(Mul (S32) {b.roots[0][len('(Add (S32) ') : -len(' (Const (S32) 1))')]} (Const (S32) 1000))"


def test_a_load_is_an_opaque_leaf_whose_offset_is_optimized():
    e = ir.parse_expr("buf.s32[(i + 1) * 4 - 4] * 2")
    r = simplify(e, "xehpg")
    loads = [n for n in ir.walk(r.result) if isinstance(n, ir.Load)]
    assert len(loads) == 1 and str(loads[0].offset) in ("i * 4", "i << 2")


@pytest.mark.parametrize(
    "text, words",
    [
        ("(rewrite (Add t x (Const t 0)) x)", "without ':ruleset NAME'"),
        ("(rewrite (Add t x (Const t 0)) x :ruleset nosuch)", "unknown ruleset 'nosuch'"),
        (
            "(rewrite (Add t x) x :ruleset rewrite :name \"r\")",
            "bad.egg:1: Add takes 3 argument(s) (Ty Expr Expr), not 2",
        ),
        ("(rewrite (Add t x (Const t 0)) x :ruleset rewrite)", "bad.egg:1: rewrite without ':name \"NAME\"'"),
        (
            "; one\n(rewrite (Add t x (Const t 0)) x :ruleset rewrite :name \"r\")\n"
            "; two\n(rewrite (Sub t x (Const t 0)) x :ruleset rewrite :name \"r\")",
            'bad.egg:4: the rule name "r" is already used at',
        ),
        ("(rewrite (Add t x (Const t 0)) x :ruleset rewrite", "bad.egg:1:1: '(' is never closed"),
        ("(rewrite (Add t x (Const t 0)) x :ruleset rewrite))", "bad.egg:1:51: unbalanced ')'"),
        ("(check (Add (S32) (Var (S32) \"x\") (Var (S32) \"x\")))", "not 'check'"),
    ],
)
def test_malformed_rule_files_raise_rule_errors_naming_the_file(tmp_path, text, words):
    (tmp_path / "bad.egg").write_text(text + "\n")
    with pytest.raises(RuleError) as info:
        simplify("x + 1", rules=[tmp_path])
    assert words in str(info.value) and "bad.egg" in str(info.value)


def test_an_error_egglog_finds_names_its_line_in_a_long_file(tmp_path):
    # the engine loads a file a few forms at a time (engine.programs): egglog still counts the
    # file's lines
    rules = [
        f'; {k} + x\n(rewrite (Add t x (Const t {k})) (Add t (Const t {k}) x) :ruleset rewrite :name "r{k}")\n'
        for k in range(3 * FORMS_PER_PROGRAM)
    ]
    text = "".join(rules) + '; bad\n(rewrite (Add t x (Const t 7))\n   (Nope t x) :ruleset rewrite :name "bad")\n'
    (tmp_path / "bad.egg").write_text(text)
    line = text.splitlines().index('   (Nope t x) :ruleset rewrite :name "bad")') + 1
    with pytest.raises(RuleError, match=rf"bad.egg:{line}: Unbound function Nope"):
        simplify("x + 1", rules=[tmp_path])


def test_the_programs_of_a_rule_file_hold_its_forms_where_the_file_has_them():
    for f in load_rules().files:
        read = [sexpr.read(piece) for piece in programs(f)]
        assert [len(forms) for forms in read[:-1]] == [FORMS_PER_PROGRAM] * (len(read) - 1)
        located = [(form.line, form.column, str(form)) for forms in read for form in forms]
        assert located == [(form.line, form.column, str(form)) for form in f.forms]


def test_a_rule_name_the_language_or_another_file_uses_is_an_error(tmp_path):
    (tmp_path / "a.egg").write_text('; x + 0 is x\n(rewrite (Add t x (Const t 0)) x :ruleset rewrite :name "r")\n')
    (tmp_path / "b.egg").write_text('; x - 0 is x\n(rewrite (Sub t x (Const t 0)) x :ruleset rewrite :name "r")\n')
    with pytest.raises(RuleError) as info:
        load_rules([tmp_path])
    assert f"{tmp_path / 'b.egg'}:2: the rule name \"r\" is already used at {tmp_path / 'a.egg'}:2" in str(info.value)
    (tmp_path / "b.egg").write_text('; x - 0 is x\n(rewrite (Sub t x (Const t 0)) x :ruleset rewrite :name "wrap")\n')
    with pytest.raises(RuleError, match=r'b.egg:2: the rule name "wrap" is already used at .*language.egg:\d+'):
        load_rules([tmp_path])


def test_rule_names_are_unique_across_the_shipped_rules():
    load_rules(standalone=True)  # refuses a duplicate, naming both places
    files = [language_file(), *(read_rule_file(p) for p in shipped_rule_files())]
    names = [rule_name(form) for f in files for form in f.rules()]
    assert len(names) == len(set(names)) and all(names)


def test_shipped_rule_files_have_short_lines():
    for path in [language_file().path, *shipped_rule_files()]:
        long = [n for n, line in enumerate(path.read_text().splitlines(), 1) if len(line) > 120]
        assert long == [], f"{path}: lines over 120 characters: {long}"


def test_a_missing_rule_directory_is_an_error(tmp_path):
    with pytest.raises(RuleError, match="no such rule file or directory"):
        load_rules([tmp_path / "nowhere"])
