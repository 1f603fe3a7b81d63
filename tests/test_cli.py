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


@pytest.mark.parametrize("args, words", [
    (["eval", "a + 1"], "variable 'a' has no value"),
    (["eval", "x", "--var", "x:u8=300"], "300 does not fit u8"),
    (["eval", "x", "--var", "x=abc"], "'abc' is not a number"),
    (["eval", "x", "--var", "x:q9=1"], "unknown type 'q9'"),
    (["eval"], "required: EXPR"),
    (["frobnicate"], "invalid choice"),
])
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
