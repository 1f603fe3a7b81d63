"""`xegen tune` and what `xegen conv` does with its database, from the command line."""

from __future__ import annotations

import json

import pytest

from xegen import hw
from xegen.cli import main
from xegen.conv import make_problem
from xegen.pipeline import compile_problem
from xegen.plan import Config, formulate
from xegen.plan.heuristic import choose_config
from xegen.tune.database import Database

DESC = "mb1ic8ih4oc8oh4kh3ph1"


def xegen(capsys, *args: str) -> tuple[int, str, str]:
    try:
        status = main(list(args))
    except SystemExit as exit:  # argparse's errors
        status = exit.code
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.fixture(scope="module")
def tuned_db(tmp_path_factory):
    """A database holding DESC tuned on XeHPG (budget 4), and the command's JSON result."""
    path = tmp_path_factory.mktemp("db") / "tuning.sqlite"
    status = main(
        ["tune", DESC, "--budget", "4", "--verify-top", "1", "--db", str(path), "--json", "--config", "simd=16"]
    )
    assert status == 0
    return path


def test_tune_records_the_winner_and_prints_json(tuned_db, capsys):
    with Database(tuned_db) as db:
        [entry] = db.entries()
    assert entry.platform == "xehpg" and entry.candidates == 4 and entry.method == "evolutionary"
    assert entry.modeled_cycles <= entry.heuristic_cycles
    assert entry.problem == str(make_problem(DESC))


def test_conv_compiles_the_tuned_configuration_and_says_so(tuned_db, capsys):
    with Database(tuned_db) as db:
        [entry] = db.entries()
    status, out, _ = xegen(capsys, "conv", DESC, "--db", str(tuned_db), "--json")
    report = json.loads(out)
    assert status == 0
    assert report["tuned"]["used"] is True and report["tuned"]["database"] == str(tuned_db)
    assert report["config"] == str(Config(**entry.config))
    assert report["modeled"]["device_cycles"] == pytest.approx(entry.modeled_cycles)
    status, out, _ = xegen(capsys, "conv", DESC, "--db", str(tuned_db))
    assert out.splitlines()[2].startswith(f"tuned: configuration from {tuned_db} (evolutionary, 4 of ")


def test_without_a_matching_row_conv_compiles_the_heuristics_bytes(tuned_db, capsys, tmp_path):
    heuristic = compile_problem(make_problem(DESC), "xehpg").zebin()
    for args in (["--db", str(tuned_db), "--no-tuned"], [], ["--db", str(tuned_db), "--config", "tg_m=2"]):
        out = tmp_path / "k.zebin"
        status, text, _ = xegen(capsys, "conv", DESC, *args, "-o", str(out), "--no-model")
        assert status == 0 and "tuned" not in text
        if "--config" not in args:
            assert out.read_bytes() == heuristic
    status, text, _ = xegen(capsys, "conv", DESC, "--db", str(tuned_db), "--hw", "xelp", "--no-model")
    assert "tuned" not in text  # tuned for XeHPG only


def test_export_and_import_through_json_lines(tuned_db, capsys, tmp_path):
    lines = tmp_path / "team.jsonl"
    status, out, _ = xegen(capsys, "tune", "--export", str(lines), "--db", str(tuned_db))
    assert status == 0 and out == f"exported 1 rows of {tuned_db} to {lines}\n"
    other = tmp_path / "other.sqlite"
    status, out, _ = xegen(capsys, "tune", "--import", str(lines), "--db", str(other))
    assert status == 0 and out == f"imported 1 rows into {other}: 1 new or better, 0 kept as they were\n"
    with Database(tuned_db) as a, Database(other) as b:
        rows = a.entries()
        assert b.entries() == rows
    status, out, _ = xegen(capsys, "tune", "--export", "-", "--db", str(other))
    assert json.loads(out) == rows[0].as_json()


@pytest.mark.parametrize(
    "args, message",
    [
        (["tune"], "give a descriptor"),
        (["tune", DESC, "--budget", "0"], "must be at least 1"),
        (["tune", DESC, "-j", "0"], "at least one worker"),
        (["tune", DESC, "--export", "x.jsonl"], "give no descriptor"),
        (["tune", DESC, "--config", "fma=dpas", "--hw", "xelp"], "has no dpas"),
        (["conv", "--batch", "FILE", "--ray", "local", "--dump-graph", "d"], "not with --ray"),
    ],
)
def test_mistakes_are_one_line_errors(capsys, tmp_path, args, message):
    status, out, err = xegen(capsys, *args, "--db", str(tmp_path / "t.sqlite"))
    assert status == 2
    assert err.startswith("xegen: error: ") and message in err and err.count("\n") == 1


def test_a_bad_import_names_its_line(capsys, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('\n{"problem": 1}\n')
    status, _, err = xegen(capsys, "tune", "--import", str(bad), "--db", str(tmp_path / "t.sqlite"))
    assert status == 2 and err == f"xegen: error: {bad}:2: missing field 'platform'\n"


def test_print_space_lists_the_knobs_and_the_legal_configurations(capsys):
    status, out, _ = xegen(capsys, "conv", DESC, "--print-space", "--config", "simd=16", "--config", "grf=128")
    lines = out.splitlines()
    assert status == 0
    # tg_m 5 (1, 2, 4, 8 and the heuristic's 3: three tiles of 6 rows make M = 16) x tg_n 4 x
    # m_tile 5 (4 to 8) x n_tile 1 (16: N = 8) x k_block 3 (4, 8, 16) x tg_k 4 (1, 2, 4, 8) x k_split 5
    assert lines[1] == "space on XeHPG: 6000 combinations of the knobs"
    assert "  tg_m       1 2 3 4 8" in lines and "  simd       16" in lines
    legal = lines.index(next(line for line in lines if line.endswith("legal configurations (the heuristic's first):")))
    configs = lines[legal + 1 :]
    assert lines[legal].startswith(f"{len(configs)} legal")
    # the heuristic's lead (the model may compile another M tile: `heuristic.model_choices`)
    heuristic = choose_config(formulate(make_problem(DESC)), hw.platform("xehpg"), {"simd": 16, "grf": 128})
    assert configs[0] == f"  {heuristic}"


def test_a_batch_on_two_workers_prints_what_one_prints(capsys, tmp_path):
    shapes = tmp_path / "shapes"
    shapes.write_text(f"{DESC}\nmb1ic16ih4oc16oh4kh1ph0\nnot-a-descriptor\n")
    one = xegen(capsys, "conv", "--batch", str(shapes), "--json", "-o", str(tmp_path / "one"))
    two = xegen(
        capsys, "conv", "--batch", str(shapes), "--json", "-j", "2", "-o", str(tmp_path / "two"), "--no-cache"
    )  # the workers compile, rather than the cache answer
    assert one[0] == two[0] == 1  # the bad line
    assert one[2] == two[2]
    strip = [{k: v for k, v in r.items() if k not in ("compile_seconds", "zebin")} for r in json.loads(one[1])]
    assert strip == [{k: v for k, v in r.items() if k not in ("compile_seconds", "zebin")} for r in json.loads(two[1])]
    for name in ("000-conv_fwd_b_f32_xehpg.zebin", "001-conv_fwd_b_f32_xehpg.zebin"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
