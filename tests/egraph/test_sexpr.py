"""The S-expression reader (xegen/egraph/sexpr.py): atoms, strings, comments and error positions,
checked against values worked out by hand."""

import pytest

from xegen.egraph import sexpr
from xegen.errors import ParseError


def test_atoms_strings_and_locations():
    text = '; adds\n; zero\n(rewrite (Add t x (Const t -0)) x\n\t:ruleset rewrite :name "a \\"b\\" \\\\c")\n'
    (form,) = sexpr.read(text)
    assert (form.line, form.column, form.comment) == (3, 1, "adds\nzero")
    assert form.head == "rewrite"
    add = form[1]
    assert (add.line, add.column) == (3, 10)
    assert add[3].items == [sexpr.Symbol("Const"), sexpr.Symbol("t"), 0]
    assert form.option("ruleset") == sexpr.Symbol("rewrite")
    assert form.option("name") == sexpr.String('a "b" \\c')
    # a token that int() takes is an int, one that only looks like a number is a symbol
    assert sexpr.read("(f +3 1_0 -x - 3a)")[0].items[1:] == [
        3,
        10,
        sexpr.Symbol("-x"),
        sexpr.Symbol("-"),
        sexpr.Symbol("3a"),
    ]


def test_a_comment_covers_the_forms_below_it_up_to_a_blank_line():
    forms = sexpr.read("; one\n(a)\n(b)\n\n(c)\n; two\n(d) ; after\n(e)")
    assert [f.comment for f in forms] == ["one", "one", "", "two", "after"]  # the next comment starts anew


@pytest.mark.parametrize(
    "text, where",
    [
        ('(a "bc', "f:1:4: unterminated string"),  # at the opening quote
        ('(a\n  "b\nc")', "f:2:3: unterminated string"),  # a string ends on its line
        ('(a "b\\\nc")', "f:1:4: unterminated string"),  # an escaped line end too
        ("(a) b", "f:1:6: 'b' outside parentheses"),  # after the atom
        ("(a\n (b)", "f:1:1: '(' is never closed"),
        ("(a))", "f:1:4: unbalanced ')'"),
    ],
)
def test_errors_name_the_line_and_column(text, where):
    with pytest.raises(ParseError) as info:
        sexpr.read(text, "f")
    assert str(info.value) == where
