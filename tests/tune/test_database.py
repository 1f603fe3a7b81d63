"""The tuning database: a round trip, keep-the-better writes, JSON lines, two writers at once."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3

import pytest

from xegen.conv import make_problem
from xegen.errors import Error
from xegen.tune.database import Database, Entry, default_path, problem_key, version_key

CONFIG = {
    "fma": "mad",
    "simd": 16,
    "tg_m": 2,
    "tg_n": 1,
    "m_tile": 4,
    "n_tile": 16,
    "k_block": 8,
    "k_split": 1,
    "slm": 0,
    "slm_bufs": 1,
    "gmem_bufs": 1,
    "grf": 128,
}


def entry(problem="--dir=FWD_B --dt=f32 p", platform="xehpg", version="v1", cycles=100.0, tg_m=2) -> Entry:
    return Entry(
        problem,
        platform,
        version,
        {**CONFIG, "tg_m": tg_m},
        cycles,
        CONFIG,
        150.0,
        "evolutionary",
        64,
        180,
        0,
        "g1mb1_ic8ih3",
        "2026-01-01T00:00:00+00:00",
    )


def test_a_row_comes_back_as_it_went_in(tmp_path):
    path = tmp_path / "sub" / "tuning.sqlite"
    with Database(path) as db:
        assert db.record(entry()) == 1
    with Database.existing(path) as db:
        assert db.entries() == [entry()]
    assert Database.existing(tmp_path / "missing.sqlite") is None


def test_lookup_keys_on_the_canonical_problem_the_platform_and_the_version(tmp_path):
    named = make_problem('mb1ic8ih4oc8oh4kh3ph1n"layer"')
    plain = make_problem("mb1ic8ih4oc8oh4kh3ph1")
    assert problem_key(named) == problem_key(plain) == str(plain)
    with Database(tmp_path / "t.sqlite") as db:
        db.record(entry(problem=problem_key(plain), version=version_key()))
        assert db.lookup(named, "xehpg") == entry(problem=problem_key(plain), version=version_key())
        assert db.lookup(named, "xelp") is None
        assert db.lookup(named, "xehpg", version="0.0.0+rules.other") is None
        assert db.lookup(make_problem("mb1ic8ih4oc8oh4kh3ph1", dt="f16"), "xehpg") is None


def test_the_version_names_xegen_and_the_rules():
    version = version_key()
    assert version.startswith("0.1.0+rules.") and len(version.split(".")[-1]) == 16


def test_a_row_is_replaced_only_by_a_better_one(tmp_path):
    with Database(tmp_path / "t.sqlite") as db:
        db.record(entry(cycles=100.0, tg_m=2))
        assert db.record(entry(cycles=120.0, tg_m=4)) == 0
        assert db.entries()[0].config["tg_m"] == 2
        assert db.record(entry(cycles=90.0, tg_m=8)) == 1
        assert [(e.modeled_cycles, e.config["tg_m"]) for e in db.entries()] == [(90.0, 8)]


def test_json_lines_round_trip(tmp_path):
    rows = [entry(problem=f"p{i}", cycles=100.0 + i) for i in range(3)]
    with Database(tmp_path / "a.sqlite") as db:
        db.record(rows)
        lines = list(db.export_lines())
    assert [json.loads(line)["problem"] for line in lines] == ["p0", "p1", "p2"]
    with Database(tmp_path / "b.sqlite") as other:
        assert other.import_lines(lines + [""], "team.jsonl") == (3, 3)
        assert other.entries() == rows
        assert other.import_lines(lines, "team.jsonl") == (3, 0)  # nothing better


@pytest.mark.parametrize(
    "line, message",
    [
        ("{", "team.jsonl:2: not JSON"),
        ("[1]", "team.jsonl:2: expected a JSON object"),
        ('{"problem": "p"}', "team.jsonl:2: missing field 'platform'"),
    ],
)
def test_a_bad_line_names_its_place_and_nothing_is_stored(tmp_path, line, message):
    good = json.dumps(entry().as_json())
    with Database(tmp_path / "t.sqlite") as db:
        with pytest.raises(Error, match=message):
            db.import_lines([good, line], "team.jsonl")
        assert db.entries() == []


def test_wrong_types_and_extra_fields_are_refused(tmp_path):
    row = entry().as_json()
    with Database(tmp_path / "t.sqlite") as db:
        with pytest.raises(Error, match="field 'candidates' has the wrong type"):
            db.import_lines([json.dumps({**row, "candidates": "many"})], "x")
        with pytest.raises(Error, match="unknown field 'extra'"):
            db.import_lines([json.dumps({**row, "extra": 1})], "x")
        with pytest.raises(Error, match="modeled_cycles must be positive"):
            db.import_lines([json.dumps({**row, "modeled_cycles": 0})], "x")


def test_a_file_that_is_not_a_database_is_an_error(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(Error, match="not a tuning database"):
        Database(path)
    with pytest.raises(Error, match="is a directory"):
        Database(tmp_path)


def test_the_default_path_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("XEGEN_TUNING_DB", str(tmp_path / "mine.sqlite"))
    assert default_path() == tmp_path / "mine.sqlite"
    monkeypatch.delenv("XEGEN_TUNING_DB")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert default_path() == tmp_path / "cache" / "xegen" / "tuning.sqlite"


WRITES = 150


def _writer(path: str, offset: float, start) -> None:
    """One of two tuners: every problem once per call, with its own cycles, one transaction per row."""
    start.wait()
    with Database(path) as db:
        for i in range(WRITES):
            db.record(entry(problem=f"p{i % 50}", cycles=1000.0 + (i * 7 + offset) % 97, tg_m=int(offset)))


def test_two_processes_writing_one_database_keep_every_problem_and_the_better_rows(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    Database(path).close()
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    writers = [context.Process(target=_writer, args=(path, offset, start)) for offset in (1.0, 2.0)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    assert [w.exitcode for w in writers] == [0, 0]
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    connection.close()
    expected = {}
    for offset in (1.0, 2.0):
        for i in range(WRITES):
            key, cycles = f"p{i % 50}", 1000.0 + (i * 7 + offset) % 97
            expected[key] = min(expected.get(key, cycles), cycles)
    with Database(path) as db:
        assert {e.problem: e.modeled_cycles for e in db.entries()} == expected
