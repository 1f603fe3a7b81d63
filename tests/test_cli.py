"""The `xegen` command line: version, eval, error reporting."""

from __future__ import annotations

import subprocess
import sys

import pytest

from xegen.cli import main


def xegen(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xegen", *args], capture_output=True, text=True)


def test_eval_prints_the_value():
    result = xegen("eval", "2*(a+b) - a", "--var", "a=3", "--var", "b=4")
    assert (result.returncode, result.stdout) == (0, "11\n")


def test_eval_wraps_around_at_32_bits():
    assert xegen("eval", "(s32)2147483647 + 1").stdout == "-2147483648\n"


def test_syntax_error_is_one_line_naming_the_column():
    result = xegen("eval", "2*(a+ - b")
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("xegen: error: column 10:")


@pytest.mark.parametrize(
    "args, words",
    [
        (["eval", "a + 1"], "variable 'a' has no value"),
        (["eval", "x", "--var", "x:u8=300"], "300 does not fit u8"),
        (["eval", "x", "--var", "x=abc"], "'abc' is not a number"),
        (["eval", "x", "--var", "x:q9=1"], "unknown type 'q9'"),
        (["eval"], "required: EXPR"),
        (["frobnicate"], "invalid choice"),
        ([], "missing COMMAND: one of asm, conv, disasm, eval,"),
        (["eval", "x", "--var", "x:s8=1", "--var", "x:u8=2"], "--var x is given twice"),
        (["eval", "x", "--var", "x=1", "--var", "x=1"], "--var x is given twice"),
        (["eval", "x:ptr", "--var", "x=1"], "is a buffer (ptr)"),
        (["eval", "x", "--var", "x:ptr=1"], "a ptr (buffer) variable has no value"),
        (["eval", "x:bool", "--var", "x=5"], "x = 5 is not a bool"),
        (["eval", "x", "--var", "x:s32x5000=1"], "1 to 1024 lanes"),
        (["eval", "broadcast(1, 100000000000)"], "column 1: broadcast takes a scalar to 2 to 1024 lanes"),
        (["eval", "-9223372036854775809"], "column 1: -9223372036854775809 does not fit 64 bits"),
        (["eval", "x + -9223372036854775809"], "column 5: -9223372036854775809 does not fit 64 bits"),
        (["eval", "min(" * 300 + "1" + ", 2)" * 300], "nest more than 100 deep"),
    ],
)
def test_user_mistakes_are_one_error_line_with_status_2(capsys, args, words):
    with pytest.raises(SystemExit) as exit_info:
        status = main(args)
        raise SystemExit(status)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("xegen: error:") and words in err[0]


def test_typed_variables_and_vectors():
    assert xegen("eval", "x * 2", "--var", "x:u8=200").stdout == "400\n"
    assert xegen("eval", "(u8)(x * 2)", "--var", "x:u8=200").stdout == "144\n"
    assert xegen("eval", "broadcast(a, 3) + shuffle<0,1,2>(broadcast(1, 3))", "--var", "a=5").stdout == "[6, 6, 6]\n"


def test_version_and_help():
    assert xegen("--version").stdout.startswith("xegen ")
    result = xegen("eval", "--help")
    assert result.returncode == 0 and "--var" in result.stdout
    assert "truncating / and %," in " ".join(result.stdout.split()) and "%%" not in result.stdout


def test_a_command_imports_only_its_own_module():
    script = (
        "import sys; from xegen.cli import main; main(['eval', '1']); "
        "print(sorted(m for m in sys.modules if m.startswith('xegen.commands.')))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.splitlines()[-1] == "['xegen.commands.eval']"


@pytest.mark.parametrize(
    "args, printed",
    [
        (["mad(x, y, 1.5)", "--var", "x=0", "--var", "y=3"], "4.5"),  # as x + y*1.5
        (["add3(x, 0, 3000000000)", "--var", "x=0"], "3000000000"),  # as x + 0 + 3000000000
        (["c ? 1:2", "--var", "c=1"], "1"),
        (["x:s32x4", "--var", "x=1"], "[1, 1, 1, 1]"),
        (["x:bool", "--var", "x=1"], "true"),
        (["(f16)65519"], "65504.0"),  # the value, not f16's shortest text 65500.0
        (["(f32)30000001024"], "30000001024.0"),
        (["0.1"], "0.1"),
        (["+".join(["1"] * 2000)], "2000"),
        (["(" * 300 + "7" + ")" * 300], "7"),
        (["~" * 1001 + "1"], "-2"),
        (["--var", "x=1", "--", "-x"], "-1"),  # an EXPR that looks like an option, after -- (as --help says)
        (["-x + 1", "--var", "x=1"], "0"),  # one with a space is an EXPR anyway
    ],
)
def test_eval_prints_c_values(args, printed):
    result = xegen("eval", *args)
    assert (result.returncode, result.stdout, result.stderr) == (0, printed + "\n", "")


def test_deep_expressions_print_their_ir():
    result = xegen("eval", "+".join(["x"] * 2000), "--var", "x=2", "--show-ir")
    assert result.returncode == 0 and result.stdout.endswith("x + x  : s32\n4000\n")
