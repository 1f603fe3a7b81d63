"""Hostile inputs (issue 21): each gives one `xegen: error:` line with status 2, or the right
answer; never a traceback, an exhausted memory or an unbounded run.

Each test names the input of the issue it stands for.  The verdicts depend on no clock: bounds
are checked by their mechanism (a size, a count, a depth), not by timing a run."""

from __future__ import annotations

import io
import os
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from xegen import Error, ir
from xegen.build.run import MAX_CHECK_IR_REGISTER_BYTES, check_ir
from xegen.cli import main
from xegen.conv.descriptor import parse_descriptor
from xegen.deep import MAX_DEPTH, NestingError, deeply
from xegen.emit import asm_parser
from xegen.emit.decoder import MAX_CODE_BYTES
from xegen.errors import ParseError
from xegen.files import TooLargeError, read_bytes, read_npy
from xegen.verify import LONG_VERIFY_SECONDS, SIMULATED_PER_SECOND, check_verify_time


def run(capsys, *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def one_error(capsys, *args: str) -> str:
    """The single error line of a command that must fail cleanly."""
    status, out, err = run(capsys, *args)
    lines = err.splitlines()
    assert status == 2 and len(lines) == 1 and lines[0].startswith("xegen: error: "), (status, out, err)
    return lines[0]


# Deep inputs ------------------------------------------------------------------------------


def test_a_sum_1200_terms_deep_simplifies_to_its_value(capsys):
    from xegen.egraph import Limits, simplify

    text = "a+" * 1200 + "a"
    status, _, err = run(capsys, "simplify", text, "--iterations", "2")
    assert status == 0, err
    result = deeply(simplify, text, "xehpg", limits=Limits(iterations=2)).result
    for a in (3, -7, 1 << 30):
        assert int(deeply(ir.evaluate, result, {"a": a})) == int(ir.evaluate(ir.parse_expr("a * 1201"), {"a": a}))


def test_a_term_deeper_than_the_optimizer_takes_is_one_error_line(capsys):
    from xegen.egraph.terms import MAX_TERM_DEPTH

    line = one_error(capsys, "simplify", "a+" * (MAX_TERM_DEPTH + 1) + "a")
    assert f"more than {MAX_TERM_DEPTH} levels" in line


def test_deep_terms_reach_egglog_in_pieces():
    """egglog's parse of one term is quadratic in its depth: deep terms are cut into `let`s."""
    from xegen.egraph.terms import PIECE_DEPTH, TermBuilder

    builder = TermBuilder()
    text = deeply(builder.term, deeply(ir.parse_expr, "a+" * 1000 + "a"))
    assert len(builder.pieces) >= 1000 // PIECE_DEPTH
    assert all(piece.count("(Add") <= PIECE_DEPTH for piece in builder.pieces) and text.count("(Add") <= PIECE_DEPTH


def test_nested_ternaries_twenty_thousand_deep_evaluate(capsys):
    """Their parse used to be quadratic (6,000 levels: 30 s)."""
    n = 20_000
    status, out, _ = run(capsys, "eval", "a ? " * n + "1" + " : 2" * n, "--var", "a=1")
    assert status == 0 and out.strip() == "1"
    status, out, _ = run(capsys, "eval", "a ? 1 : " * n + "2", "--var", "a=0")
    assert status == 0 and out.strip() == "2"


def test_a_deeply_nested_rule_term_is_checked(capsys, tmp_path):
    depth = 1500
    path = tmp_path / "deep.egg"
    path.write_text(
        ";; -(-(...x)) with an even count of negations is x\n"
        f'(rewrite {"(Neg t " * depth}x{")" * depth} x :ruleset rewrite :name "deep")\n'
    )
    status, out, err = run(capsys, "rules", "check", str(path), "--no-cache", "--jobs", "1", "--examples", "2")
    assert status == 0, err
    assert "deep  sound" in out.replace("  ", " ").replace(" sound", "  sound")


def test_recursion_past_the_bound_is_a_nesting_error():
    def down(n: int) -> int:
        return n if n == 0 else down(n - 1) + 1

    assert deeply(down, MAX_DEPTH // 2) == MAX_DEPTH // 2  # a recursion past Python's default limit works
    with pytest.raises(NestingError):
        deeply(down, 10 * MAX_DEPTH)
    assert sys.getrecursionlimit() < MAX_DEPTH  # and the limit is back where it was


def test_a_let_chain_deeper_than_the_default_limit_goes_through_a_mutator():
    """The scheduler's Mutator walks let chains by recursion (a 3-D int8 layer nests ~635 lets,
    past the default limit); within `deeply` they are rebuilt, and evaluate to the right value."""
    depth = 5000
    x = ir.Var("x", ir.S32)
    body: ir.Stmt = ir.Store(ir.Var("out", ir.PTR), ir.IntImm(0, ir.S32), x)
    for _ in range(depth):
        body = ir.Let(x, ir.Binary("add", x, ir.IntImm(1, ir.S32)), body)

    class Renumber(ir.Mutator):
        def mutate_IntImm(self, e):
            return ir.IntImm(e.value * 2, e.type)

    doubled = deeply(Renumber().mutate, body)
    steps, node = 0, doubled
    while isinstance(node, ir.Let):
        assert node.value.b.value == 2
        steps, node = steps + 1, node.body
    assert steps == depth


# Unbounded reads --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["asm", "/dev/zero", "-o", "never-written.bin"],
        ["disasm", "/dev/zero"],
        ["run", "/dev/zero", "-k", "k", "--global", "1", "--local", "1"],
        ["conv", "--batch", "/dev/zero"],
    ],
)
def test_an_endless_file_is_refused_at_its_size_limit(capsys, args):
    assert "(the limit for" in one_error(capsys, *args)
    assert not os.path.exists("never-written.bin")


def test_a_large_regular_file_is_refused_by_its_size_before_reading(tmp_path):
    path = tmp_path / "big.asm"
    with open(path, "wb") as f:
        f.truncate(1 << 40)  # a sparse terabyte: read, it would exhaust memory
    with pytest.raises(TooLargeError, match="1.04858e\\+06 MiB|1048576 MiB"):
        read_bytes(str(path), 1 << 20, "assembly files")


def test_the_assembler_stops_past_its_instruction_bound(monkeypatch):
    monkeypatch.setattr(asm_parser, "MAX_INSTRUCTIONS", 10)
    assert len(asm_parser.assemble("nop\n" * 10, "xehpg")) == 160
    with pytest.raises(ParseError, match="line 11, column 1: more than 10 instructions"):
        asm_parser.assemble("nop\n" * 11, "xehpg")


def test_the_decoder_refuses_more_code_than_its_bound(capsys, tmp_path):
    path = tmp_path / "huge.bin"
    path.write_bytes(bytes(MAX_CODE_BYTES + 16))
    assert f"the decoder takes at most {MAX_CODE_BYTES}" in one_error(capsys, "disasm", str(path))


def test_check_ir_refuses_a_grid_too_large_for_the_interpreter():
    hw = SimpleNamespace(grf_bytes=64)
    threads = MAX_CHECK_IR_REGISTER_BYTES // (128 * 64) + 1
    with pytest.raises(Error, match=f"all {threads:,} threads"):
        check_ir(SimpleNamespace(threads=threads, grf_count=128, hw=hw))


def fake_compilation(thread_instructions: int):
    compiled = SimpleNamespace(
        executions=lambda grid: (thread_instructions // 2, thread_instructions - thread_instructions // 2)
    )
    return SimpleNamespace(compiled=compiled, kernel=SimpleNamespace(grid=(1, 1, 1)))


def test_verify_of_hours_is_refused_up_front_unless_forced():
    hours = fake_compilation(3 * 3600 * SIMULATED_PER_SECOND)
    with pytest.raises(Error, match="about 180 minutes.*--verify-long"):
        check_verify_time(hours, force=False)
    assert check_verify_time(hours, force=True) == 3 * 3600
    short = fake_compilation(LONG_VERIFY_SECONDS * SIMULATED_PER_SECOND)
    assert check_verify_time(short, force=False) == LONG_VERIFY_SECONDS


# numpy array files ------------------------------------------------------------------------


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype=np.int16).reshape(3, 4),
        np.asfortranarray(np.linspace(-1, 1, 6).reshape(2, 3)),
        np.zeros((0, 5), np.float32),
        np.array(7, np.uint8),
    ],
)
def test_npy_files_read_as_numpy_writes_them(array):
    read = read_npy(npy_bytes(array), "x.npy")
    assert read.dtype == array.dtype and read.shape == array.shape and np.array_equal(read, array)


def test_an_npy_header_claiming_more_data_than_the_file_has_is_refused_before_allocating():
    data = npy_bytes(np.zeros(4, np.float32)).replace(b"(4,)", b"(1000000000000,)")
    with pytest.raises(Error, match="header describes 4000000000000 bytes"):
        read_npy(data, "x.npy")


# Wrong acceptance -------------------------------------------------------------------------


def test_a_long_expression_is_not_taken_for_a_file_name(capsys):
    status, out, err = run(capsys, "extract", "--compare", "xehpg", "a+" * 200 + "a")
    assert status == 0, err
    assert "a * 201" in out


@pytest.mark.parametrize("command", ["simplify", "extract"])
def test_a_variable_declared_twice_is_refused(capsys, command):
    assert "--var a is given twice" in one_error(capsys, command, "a+b", "--var", "a:s32", "--var", "a:u8")


@pytest.mark.parametrize("seconds", ["nan", "inf", "-1", "0"])
def test_seconds_must_be_a_positive_number(capsys, seconds):
    assert "--seconds takes a positive number" in one_error(capsys, "simplify", "a+b", f"--seconds={seconds}")


def test_an_empty_file_has_nothing_to_extract(capsys, tmp_path):
    path = tmp_path / "empty.ir"
    path.write_text("\n  \n")
    assert "the file is empty" in one_error(capsys, "extract", str(path))


@pytest.mark.parametrize("text", ['mb1ic16ih8oc32oh8kh3ph1n"abc', 'mb1ic16ih8oc32oh8kh3ph1n"'])
def test_an_unterminated_name_is_a_parse_error(text):
    with pytest.raises(ParseError, match="has no closing"):
        parse_descriptor(text)
    assert parse_descriptor('mb1ic16ih8oc32oh8kh3ph1n"ab"').name == "ab"


@pytest.mark.parametrize(
    "spec, x, expected",
    [
        ("x:u64[9223372036854775808,9223372036854775810)", 9223372036854775809, 9223372036854775810),
        ("x:u64[0,18446744073709551615]", 18446744073709551615, 0),
        ("x:s64[-9223372036854775808,9223372036854775807]", -9223372036854775808, -9223372036854775807),
    ],
)
def test_64_bit_ranges_of_any_size_simplify(capsys, spec, x, expected):
    status, out, err = run(capsys, "simplify", "x+1", "--var", spec)
    assert status == 0, err
    result = out.splitlines()[0]
    t = ir.parse_type(spec.split(":")[1][:3])
    assert int(ir.evaluate(ir.parse_expr(result, {"x": t}), {"x": x})) == expected


def test_a_rule_with_the_wrong_arity_is_one_error_line(capsys, tmp_path):
    path = tmp_path / "arity.egg"
    path.write_text(';; x + ? is x\n(rewrite (Add t x) x :ruleset rewrite :name "arity")\n')
    line = one_error(capsys, "rules", "check", str(path), "--no-cache", "--jobs", "1")
    assert f"{path}:2: Add takes 3 argument(s) (Ty Expr Expr), not 2" in line


def test_a_rule_file_that_is_not_utf8_is_one_error_line(capsys, tmp_path):
    path = tmp_path / "latin1.egg"
    path.write_bytes(b';; caf\xe9\n(rewrite (Neg t (Neg t x)) x :ruleset rewrite :name "n")\n')
    assert f"{path}: line 1 is not UTF-8 text (byte 0xe9)" in one_error(capsys, "simplify", "a", "--rules", str(path))


def test_a_rule_file_over_its_size_limit_is_refused(capsys, tmp_path):
    from xegen.egraph.rules import MAX_RULE_FILE_BYTES

    path = tmp_path / "huge.egg"
    path.write_text(";" * (MAX_RULE_FILE_BYTES + 1))
    assert "(the limit for rule files is 256 KiB)" in one_error(capsys, "simplify", "a", "--rules", str(path))
