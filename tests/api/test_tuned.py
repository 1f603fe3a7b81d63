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
        db.record(Entry(problem_key(problem), "xehpg", version_key(), asdict(other.compilation.config),
                        other.summary.modeled.device_cycles, asdict(heuristic.compilation.config),
                        heuristic.summary.modeled.device_cycles, "exhaustive", 2, 2, 0, "", "2026-11-28"))
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
