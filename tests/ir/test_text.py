"""Printer and parser: round trips, C conversions, and error positions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from xegen import ParseError, ir

from .strategies import any_stmt, call_stmt, deep_int_expr, vector_or_scalar_expr


@settings(max_examples=400, deadline=None)
@given(vector_or_scalar_expr(depth=4))
def test_print_parse_round_trip_for_expressions(e):
    text = str(e)
    assert ir.parse_expr(text) == e, text


@settings(max_examples=100, deadline=None)
@given(deep_int_expr())
def test_print_parse_round_trip_for_deep_integer_expressions(e):
    assert ir.parse_expr(str(e)) == e


@settings(max_examples=300, deadline=None)
@given(any_stmt(depth=3))
def test_print_parse_round_trip_for_statements(s):
    text = str(s)
    assert ir.parse_stmt(text) == s, text


@settings(max_examples=300, deadline=None)
@given(call_stmt())
def test_print_parse_round_trip_for_calls_of_every_function(s):
    """Every function and attribute (send ops, kinds, spaces and atomics; dpas/dpasw; mad; dp4a;
    reorder; barrier, signal, wait, fence, eot): `any_stmt` draws a call only now and then."""
    text = str(s)
    assert ir.parse_stmt(text) == s, text


def test_operator_overloading_builds_the_parsed_ir():
    a, b = ir.var("a"), ir.var("b")
    assert 2 * (a + b) - a == ir.parse_expr("2*(a+b) - a")
    assert str(2 * (a + b) - a) == "2 * (a + b) - a"
    x = ir.var("x", "u16")
    assert (x + 1).type == ir.S32  # u16 promotes to s32 as in C
    assert (ir.var("u", "u32") + -1) == ir.parse_expr("u:u32 + 4294967295:u32")
    assert (ir.var("w", "s64") + ir.var("v", "u32")).type == ir.S64
    assert (ir.var("v", "u32") + ir.var("s")).type == ir.U32
    assert (ir.var("h", "f16") * 2).type == ir.F16
    assert (ir.var("h", "f16") + ir.var("g", "bf16")).type == ir.F32


@pytest.mark.parametrize(
    "text, printed",
    [
        ("a - (b - c)", "a - (b - c)"),
        ("(a - b) - c", "a - b - c"),
        ("a * (b + c)", "a * (b + c)"),
        ("a ? b : c ? d : e", "a != 0 ? b : c != 0 ? d : e"),
        ("(a ? b : c) ? d : e", "(a != 0 ? b : c) != 0 ? d : e"),
        ("-(-a)", "-(-a)"),
        ("- -a", "-(-a)"),
        ("-(3)", "-(3)"),
        ("-3", "-3"),
        ("x - -3", "x - -3"),
        ("1 << 2 + 3", "1 << 2 + 3"),
        ("(1 << 2) + 3", "(1 << 2) + 3"),
        ("a & b == c", "a & (s32)(b == c)"),
        ("3000000000", "3000000000"),
        ("0x10", "16"),
        ("2.0", "2.0"),
        ("1e-9", "1.0e-09"),
    ],
)
def test_precedence_and_literals(text, printed):
    e = ir.parse_expr(text)
    assert str(e) == printed
    assert ir.parse_expr(printed) == e


def error_of(text: str, parse=ir.parse_expr) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse(text)
    return info.value


@pytest.mark.parametrize(
    "text, column, words",
    [
        ("2*(a+ - b", 10, "expected ')'"),
        ("a + $", 5, "unexpected character"),
        ("a +", 4, "expected an expression"),
        ("1.5 % 2", 5, "does not apply"),
        ("~1.5", 1, "does not apply"),
        ("x:u99", 2, "unknown type"),
        ("a b", 3, "unexpected text"),
        ("min(a)", 1, "takes 2 arguments"),
        ("300:u8", 1, "does not fit u8"),
        ("x:u8 + x:s8", 8, "u8 elsewhere"),
    ],
)
def test_syntax_errors_name_the_column(text, column, words):
    error = error_of(text)
    assert error.column == column
    assert words in str(error)
    assert str(error).startswith(f"column {column}:")


def test_statement_errors_name_line_and_column():
    error = error_of("alloc a[16] grf;\nfor (i = 0; j < 4) {}", ir.parse_stmt)
    assert (error.line, error.column) == (2, 13)
    assert "loop variable 'i'" in str(error)
    error = error_of("barrier<x=1>();", ir.parse_stmt)
    assert "no attribute 'x'" in str(error)
    error = error_of("mad<exec_size=8, dst_type=f32, src1_type=f32, src2_type=f32>(&a[0]);", ir.parse_stmt)
    assert "takes 4 arguments" in str(error)


def test_scoped_statements_print_flat_and_nest_when_needed():
    text = "let x = 1;\nbuf[x] = 2;"
    s = ir.parse_stmt(text)
    assert isinstance(s, ir.Let) and str(s) == text
    seq = ir.seq(s, ir.parse_stmt("buf[0] = 3;"))
    assert str(seq) == "{\n  let x = 1;\n  buf[x] = 2;\n}\nbuf[0] = 3;"
    assert ir.parse_stmt(str(seq)) == seq


# C's `?:` ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, c, expected",
    [
        ("c ? 1:2", 1, 1),
        ("c ? 1:2", 0, 2),
        ("c?1:2", 0, 2),
        ("c ? a:b", 1, 10),
        ("c ? a:b", 0, 20),
        ("c?a:s32:b", 0, 20),
        ("c ? 1:c ? 2:3", 0, 3),
        ("c ? c ? 1:2:3", 1, 1),
        ("(c ? a:b) + 1", 0, 21),
    ],
)
def test_a_colon_is_a_type_annotation_only_before_a_type(text, c, expected):
    assert ir.evaluate(ir.parse_expr(text), {"c": c, "a": 10, "b": 20}).item() == expected


# Deep input --------------------------------------------------------------------------------------


def test_deep_nesting_parses_prints_and_evaluates():
    cases = {
        "(" * 300 + "x" + ")" * 300: 5,
        " + ".join(["x"] * 2000): 10000,
        "~" * 1001 + "x": ~5,
        "- " * 1001 + "x": -5,
        "c ? " * 500 + "x" + " : 2" * 500: 5,  # nested in the true arm
        "c ? 1 : " * 500 + "x": 1,  # nested in the false arm
    }
    for text, expected in cases.items():
        e = ir.parse_expr(text)
        assert ir.evaluate(e, {"x": 5, "c": 1}).item() == expected
        again = ir.parse_expr(str(e))
        assert again == e and hash(again) == hash(e)
        assert ir.node_count(e) == len(list(ir.walk(e)))


def test_nesting_of_calls_and_brackets_is_limited_with_a_clear_error():
    from xegen.ir.parser import MAX_NESTING

    fine = "min(" * (MAX_NESTING - 1) + "1" + ", 2)" * (MAX_NESTING - 1)
    assert ir.evaluate(ir.parse_expr(fine)).item() == 1
    error = error_of("min(" * 300 + "1" + ", 2)" * 300)
    assert f"nest more than {MAX_NESTING} deep" in str(error)
    error = error_of("{" * 300 + "}" * 300, ir.parse_stmt)
    assert f"nest more than {MAX_NESTING} deep" in str(error)


def test_long_runs_of_lets_parse():
    text = "\n".join(f"let v{i} = {i};" for i in range(1500)) + "\nbuf[0] = v1499;"
    s = ir.parse_stmt(text)
    assert str(s) == text


@pytest.mark.parametrize(
    "text, words",
    [
        ("broadcast(1, 100000000000)", "2 to 1024 lanes"),
        ("x:s32x5000", "1 to 1024 lanes"),
        ("(s32x2000)x", "1 to 1024 lanes"),
        ("buf.f32x4096[0]", "1 to 1024 lanes"),
        ("shuffle<" + ",".join(["0"] * 2000) + ">(x)", "1 to 1024 indices"),
    ],
)
def test_lane_counts_are_limited(text, words):
    assert words in str(error_of(text))


# Names with different types in different scopes ----------------------------------------------------


def _store(value):
    return ir.Store(ir.Var("buf", ir.PTR), ir.IntImm(0), value)


X_U8, X_S32, I_U32, I_S32 = ir.Var("x", ir.U8), ir.Var("x"), ir.Var("i", ir.U32), ir.Var("i")
SCOPED = {
    "a name with two types in sibling scopes": ir.seq(
        ir.Let(X_U8, ir.IntImm(1, ir.U8), _store(X_U8)), ir.Let(X_S32, ir.IntImm(5), _store(X_S32))
    ),
    "a loop variable, then the same name free": ir.seq(
        ir.For(I_U32, ir.IntImm(0, ir.U32), ir.IntImm(4, ir.U32), _store(I_U32)), _store(I_S32)
    ),
    "a free name, then a let of it with another type": ir.seq(_store(X_U8), ir.Let(X_S32, ir.IntImm(5), _store(X_S32))),
    "a shadowed variable of another type": ir.Let(X_U8, ir.IntImm(1, ir.U8), _store(X_S32)),
    "shadowing with another type": ir.Let(
        X_U8, ir.IntImm(1, ir.U8), ir.Let(X_S32, ir.Binary("add", ir.Cast(ir.S32, X_U8), ir.IntImm(1)), _store(X_S32))
    ),
    "a loop bound naming the outer variable": ir.Let(
        I_S32, None, ir.For(I_U32, ir.IntImm(0, ir.U32), ir.Cast(ir.U32, I_S32), _store(I_U32))
    ),
}


@pytest.mark.parametrize("name", SCOPED)
def test_statements_round_trip_when_names_have_several_types(name):
    s = SCOPED[name]
    assert ir.parse_stmt(str(s)) == s, str(s)


def test_two_types_of_one_free_name_are_an_error_not_a_silent_change():
    e = ir.Binary("add", ir.Cast(ir.S32, X_U8), X_S32)
    assert str(e) == "(s32)x:u8 + x:s32"
    assert "u8 elsewhere" in str(error_of(str(e)))


# Literals -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, t, value",
    [
        ("0x7FFFFFFF", "s32", 2**31 - 1),
        ("0x80000000", "u32", 2**31),
        ("0xFFFFFFFF", "u32", 2**32 - 1),
        ("0x100000000", "s64", 2**32),
        ("0xFFFFFFFFFFFFFFFF", "u64", 2**64 - 1),
        ("2147483648", "s64", 2**31),
        ("4294967295", "s64", 2**32 - 1),
        ("18446744073709551615", "u64", 2**64 - 1),
        ("-2147483648", "s32", -(2**31)),  # a minus sign before a decimal literal belongs to it
        ("-0xFFFFFFFF", "u32", 1),  # C: the negation of unsigned 0xFFFFFFFF
        ("-0x10", "s32", -16),
        ("x + 0xFFFFFFFF", "u32", 2),
        ("x:s64 + 0xFFFFFFFF", "s64", 2**32 + 2),
    ],
)
def test_integer_literals_have_c_types(text, t, value):
    e = ir.parse_expr(text)
    assert (str(e.type), ir.evaluate(e, {"x": 3}).item()) == (t, value)
    assert ir.parse_expr(str(e)) == e


@pytest.mark.parametrize("text", ["010", "0x", "1e", "9223372036854775807999"])
def test_malformed_numbers_are_errors(text):
    error_of(text)


@pytest.mark.parametrize(
    "name", sorted(ir.expr.RESERVED_WORDS) + ["s32", "f16x8", "bool", "ptr", "u8x0", "1x", "a-b", "", "é", "x y"]
)
def test_names_the_text_form_cannot_hold_are_not_variables(name):
    with pytest.raises(ir.IRTypeError):
        ir.Var(name)
    with pytest.raises(ir.IRTypeError):
        ir.buffer(name)


def test_names_like_reserved_words_are_fine():
    for name in ("true_value", "nan_count", "s32_", "xs32", "f16x", "minimum", "letter", "_"):
        v = ir.Var(name)
        assert ir.parse_expr(str(v + 1)) == v + 1


@pytest.mark.parametrize("value", [True, 1.0, 2.5, "3", None])
def test_integer_immediates_hold_integers(value):
    with pytest.raises(ir.IRTypeError):
        ir.IntImm(value)


def test_integer_immediates_take_numpy_integers_as_python_ints():
    import numpy as np

    immediate = ir.IntImm(np.int64(7), ir.S64)
    assert type(immediate.value) is int and immediate == ir.IntImm(7, ir.S64) and str(immediate) == "7:s64"
