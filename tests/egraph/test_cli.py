"""xegen simplify / extract / rules check on the command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def xegen(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xegen", *args], capture_output=True, text=True)


def test_simplify_gives_one_mad_on_xehpg():
    r = xegen("simplify", "2*(a+b) - a", "--hw", "xehpg")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0] == "mad(a, b, 2)"
    assert lines[1].startswith("cost 3 -> 1 on XeHPG")


def test_simplify_avoids_add3_and_mad_on_xelp():
    r = xegen("simplify", "2*(a+b) - a", "--hw", "xelp")
    assert r.returncode == 0
    result = r.stdout.splitlines()[0]
    assert "mad" not in result and "add3" not in result
    assert r.stdout.splitlines()[1].startswith("cost 3 -> 2 on XeLP")


def test_simplify_json_has_every_field():
    r = xegen("simplify", "x / 8", "--var", "x:s32[0,1024)", "--extractor", "ilp", "--json")
    data = json.loads(r.stdout)
    assert data["result"] == "x >> 3" and data["extractor"] == "ilp" and data["hw"] == "xehpg"
    assert {"input", "cost_before", "cost_after", "egraph_nodes", "milliseconds", "bound_hit"} <= set(data)


def test_simplify_says_when_a_bound_was_hit():
    r = xegen("simplify", "(a + b + c + d) * 3 - (a - c) * 2", "--iterations", "1")
    assert "iteration limit" in r.stdout


def test_extract_compare_shows_the_platforms_differ_and_why():
    r = xegen("extract", "--compare", "xelp,xehpg", "2*(a+b) - a")
    assert r.returncode == 0
    text = r.stdout
    assert "== XeLP: cost 3 -> 2" in text and "== XeHPG: cost 3 -> 1" in text
    assert "mad.s32 imm 2 1" in text  # XeHPG: one mad
    assert "mul.s32 imm 2 1, add.s32 1" in text  # XeLP: a multiply and an add
    assert "different programs" in text


def test_extract_reads_a_statement_file(tmp_path):
    path = tmp_path / "kernel.ir"
    path.write_text("let tid;\nfor (k = 0; k < 4) { OUT[(tid * 4 + k) * 4] = (tid * 4 + k) * 3; }\n")
    r = xegen("extract", "--compare", "xelp,xehpc", str(path), "--var", "tid[0,16)", "--json")
    data = json.loads(r.stdout)
    assert [p["hw"] for p in data["platforms"]] == ["XeLP", "XeHPC"]
    assert all("for (k" in p["program"] for p in data["platforms"])


def test_rules_check_rejects_an_unsound_rule_and_accepts_a_guarded_one(tmp_path):
    bad = tmp_path / "bad.egg"
    bad.write_text(
        "; x / 8 is x >> 3\n(rewrite (Div t x (Const t 8)) (Shr t x (Const t 3)) :ruleset rewrite :name \"div8\")\n"
    )
    r = xegen("rules", "check", str(bad), "--jobs", "1")
    assert r.returncode == 1
    assert "unsound" in r.stdout and "x = -" in r.stdout
    good = tmp_path / "good.egg"
    good.write_text(
        "; x / 8 is x >> 3 for x >= 0\n"
        "(rewrite (Div t x (Const t 8)) (Shr t x (Const t 3)) :when ((>= (lo x) 0)) :ruleset rewrite"
        " :name \"div8\")\n"
    )
    r = xegen("rules", "check", str(good), "--jobs", "1")
    assert r.returncode == 0 and "1 sound" in r.stdout


@pytest.mark.parametrize(
    "args, words",
    [
        (["simplify", "x +", "--hw", "xehpg"], "column"),
        (["simplify", "x", "--hw", "gen9"], "unknown hardware 'gen9'"),
        (["simplify", "x", "--var", "x:s32[5,1)"], "the range is empty"),
        (["simplify", "x", "--var", "x:f32[0,1)"], "scalar integer type"),
        (["simplify", "x", "--rules", "/nonexistent"], "no such rule file or directory"),
        (["extract", "--compare", "", "x"], "at least one platform"),
        (["extract", "no/such/file.ir"], "not a file, and not an expression"),
        (["rules"], "missing COMMAND"),
    ],
)
def test_user_mistakes_are_one_line_errors(args, words):
    r = xegen(*args)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("xegen: error:") and words in lines[0]


@pytest.mark.parametrize(
    "content, words",
    [
        (bytes([0xB9, 0x00, 0xFF, 0x10]), "line 1 is not UTF-8 text"),
        (b"x + (\n", "neither an expression (line 2, column 1"),
    ],
)
def test_an_unreadable_extract_file_is_a_one_line_error(tmp_path, content, words):
    path = tmp_path / "input.ir"
    path.write_bytes(content)
    r = xegen("extract", str(path))
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"xegen: error: {path}: ") and words in lines[0]
