"""Printer and parser: round trips, C conversions, and error positions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from xegen import ParseError, ir

from .strategies import any_stmt, deep_int_expr, vector_or_scalar_expr


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


@pytest.mark.parametrize("text, printed", [
    ("a - (b - c)", "a - (b - c)"), ("(a - b) - c", "a - b - c"), ("a * (b + c)", "a * (b + c)"),
    ("a ? b : c ? d : e", "a != 0 ? b : c != 0 ? d : e"), ("(a ? b : c) ? d : e", "(a != 0 ? b : c) != 0 ? d : e"),
    ("-(-a)", "-(-a)"), ("- -a", "-(-a)"), ("-(3)", "-(3)"), ("-3", "-3"), ("x - -3", "x - -3"),
    ("1 << 2 + 3", "1 << 2 + 3"), ("(1 << 2) + 3", "(1 << 2) + 3"), ("a & b == c", "a & (s32)(b == c)"),
    ("3000000000", "3000000000"), ("0x10", "16"), ("2.0", "2.0"), ("1e-9", "1.0e-09"),
])
def test_precedence_and_literals(text, printed):
    e = ir.parse_expr(text)
    assert str(e) == printed
    assert ir.parse_expr(printed) == e


def error_of(text: str, parse=ir.parse_expr) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse(text)
    return info.value


@pytest.mark.parametrize("text, column, words", [
    ("2*(a+ - b", 10, "expected ')'"),
    ("a + $", 5, "unexpected character"),
    ("a +", 4, "expected an expression"),
    ("1.5 % 2", 5, "does not apply"),
    ("~1.5", 1, "does not apply"),
    ("x:u99", 1, "unknown type"),
    ("a b", 3, "unexpected text"),
    ("min(a)", 1, "takes 2 arguments"),
    ("300:u8", 1, "does not fit u8"),
    ("x:u8 + x:s8", 8, "u8 elsewhere"),
])
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
