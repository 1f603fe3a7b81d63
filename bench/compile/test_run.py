"""bench/compile's summary: the ratios the goals are read from (hand-computed numbers)."""

from __future__ import annotations

import pytest

from bench.compile.run import format_table, summarize


def row(layer: str, cold: float, warm: float, onednn: float | None) -> dict:
    median = {"xegen_cold": cold, "xegen_warm": warm, "naive": 0.5}
    if onednn is not None:
        median["onednn"] = onednn
    return {"layer": layer, "median": median, "notes": {} if onednn is not None else {"onednn": "not supported"}}


def test_the_ratios_are_medians_over_the_layers_and_the_batch_against_oclocs_total():
    rows = [row("a", 2.0, 0.1, 1.0), row("b", 3.0, 0.3, 0.5), row("c", 1.0, 0.2, 2.0)]
    batch = {"median": {"cold": 1.75, "warm": 0.25}}
    s = summarize(rows, batch)
    assert s["median_cold_ratio"] == 2.0  # ratios 2, 6, 0.5
    assert s["onednn_total_seconds"] == 3.5 and s["batch_ratio"] == 0.5
    assert s["median_warm_seconds"] == 0.2 and s["max_warm_seconds"] == 0.3
    table = format_table(rows, s, runs=5)
    assert "xegen cold / oneDNN 2.00 (goal <= 1.0)" in table and "cold / total 0.50 (goal <= 0.5)" in table


def test_the_batch_is_not_compared_when_onednn_missed_a_layer():
    rows = [row("a", 2.0, 0.1, 1.0), row("b", 3.0, 0.3, None)]
    s = summarize(rows, {"median": {"cold": 4.0, "warm": 0.3}})
    assert s["median_cold_ratio"] == pytest.approx(2.0) and s["layers_with_onednn"] == 1
    assert s["batch_ratio"] is None
    assert "(onednn: not supported)" in format_table(rows, s, runs=1)


def test_cpu_seconds_give_the_same_ratios_where_the_runs_recorded_them():
    rows = [row("a", 2.0, 0.1, 1.0), row("b", 3.0, 0.3, 0.5)]
    rows[0]["cpu_median"] = {"xegen_cold": 1.5, "xegen_warm": 0.1, "onednn": 0.5}  # ratio 3
    rows[1]["cpu_median"] = {"xegen_cold": 1.0, "xegen_warm": 0.1, "onednn": 1.0}  # ratio 1
    batch = {"median": {"cold": 3.0, "warm": 0.3}, "cpu_median": {"cold": 0.75, "warm": 0.2}}
    s = summarize(rows, batch)
    assert s["cpu_median_cold_ratio"] == 2.0 and s["cpu_median_cold_seconds"] == 1.25
    assert s["cpu_onednn_total_seconds"] == 1.5 and s["cpu_batch_ratio"] == 0.5
    assert "batch cold 0.75 s / ocloc's total 1.50 s = 0.50" in format_table(rows, s, runs=1)
    assert "cpu_batch_ratio" not in summarize([row("a", 2.0, 0.1, 1.0)], {"median": {"cold": 1.0, "warm": 0.1}})
