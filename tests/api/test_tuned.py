"""`xegen.compile(..., tuned=)`: the tuning database `xegen tune` writes, read from Python as
`xegen conv` reads it."""

from __future__ import annotations

from dataclasses import asdict

import pytest

import xegen
from xegen.tune.database import Database, Entry, problem_key, version_key

DESC = "mb1ic8ih4oc8oh4kh3ph1"
OTHER = "tg_m=2"  # a legal configuration the heuristic does not choose for DESC


@pytest.fixture(scope="module")
def kernels():
    problem = xegen.conv_problem(DESC)
    return problem, xegen.compile(problem, tuned=False), xegen.compile(problem, config=OTHER)


@pytest.fixture
def database(kernels, tmp_path):
    """A database whose row for DESC on XeHPG holds the OTHER configuration."""
    problem, heuristic, other = kernels
    assert heuristic.zebin != other.zebin
    path = tmp_path / "tuning.sqlite"
    with Database(path) as db:
        db.record(
            Entry(
                problem_key(problem),
                "xehpg",
                version_key(),
                asdict(other.compilation.config),
                other.summary.modeled.device_cycles,
                asdict(heuristic.compilation.config),
                heuristic.summary.modeled.device_cycles,
                "exhaustive",
                2,
                2,
                0,
                "",
                "2026-11-28",
            )
        )
    return path


def test_a_named_database_gives_the_tuned_configuration(kernels, database):
    problem, _, other = kernels
    kernel = xegen.compile(problem, tuned=database)
    assert kernel.zebin == other.zebin
    assert kernel.tuned["used"] is True and kernel.tuned["database"] == str(database)
    assert kernel.summary.tuned["method"] == "exhaustive"


def test_the_default_database_is_read_as_xegen_conv_reads_it(kernels, database, monkeypatch):
    problem, heuristic, other = kernels
    monkeypatch.setenv("XEGEN_TUNING_DB", str(database))
    assert xegen.compile(problem).zebin == other.zebin
    assert xegen.compile(problem, tuned=False).zebin == heuristic.zebin
    assert xegen.compile(problem, hw="xelp").tuned is None  # tuned for XeHPG only


def test_a_given_config_replaces_the_tuned_one(kernels, database):
    problem, heuristic, _ = kernels
    kernel = xegen.compile(problem, config={"tg_m": heuristic.compilation.config.tg_m}, tuned=database)
    assert kernel.tuned is None and kernel.zebin == heuristic.zebin


def test_without_a_database_the_heuristic_compiles(kernels, tmp_path, monkeypatch):
    problem, heuristic, _ = kernels
    monkeypatch.setenv("XEGEN_TUNING_DB", str(tmp_path / "none.sqlite"))
    kernel = xegen.compile(problem)
    assert kernel.tuned is None and kernel.zebin == heuristic.zebin and "tuned" not in kernel.summary.to_dict()
    with pytest.raises(xegen.Error, match="no such tuning database"):
        xegen.compile(problem, tuned=tmp_path / "missing.sqlite")


def test_autotune_finds_what_xegen_tune_finds_and_compile_takes_it(tmp_path, capsys):
    from xegen.cli import main

    path = tmp_path / "api.sqlite"
    [result] = xegen.autotune(DESC, budget=4, verify_top=1, config={"simd": 16}, db=path)
    assert result.error is None and result.evaluated == 4
    assert result.winner_cycles <= result.heuristic_cycles
    # the command line's search (same seed) picks the same winner
    assert (
        main(
            [
                "tune",
                DESC,
                "--budget",
                "4",
                "--verify-top",
                "1",
                "--config",
                "simd=16",
                "--db",
                str(tmp_path / "cli.sqlite"),
                "--json",
            ]
        )
        == 0
    )
    with Database(path) as ours, Database(tmp_path / "cli.sqlite") as theirs:
        [a], [b] = ours.entries(), theirs.entries()
    assert a.config == b.config == asdict(result.winner)
    kernel = xegen.compile(DESC, tuned=path)
    assert kernel.tuned["used"] is True and kernel.config == str(result.winner)


def test_autotune_refuses_a_zero_budget():
    with pytest.raises(xegen.Error, match="budget=0"):
        xegen.autotune(DESC, budget=0, db=False)
