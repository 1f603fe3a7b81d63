"""bench/e2e/backward.py's tables from hand-made rows: the ratio and roofline goals, the reasons."""

from __future__ import annotations

from bench.e2e.backward import format_summary, format_table, why


def kernel(cycles, roofline, bound="compute"):
    return {
        "cycles": cycles,
        "bound": bound,
        "roofline": roofline,
        "roofline_bound": "compute",
        "roofline_cycles": cycles * roofline,
        "terms": {bound: cycles},
        "occupancy": {},
        "config": "fma=mad",
        "ocloc_valid": True,
    }


ROWS = [
    {
        "layer": "fast",
        "hw": "xehpg",
        "dt": "f32",
        "FWD_B": kernel(100, 0.8),
        "BWD_D": kernel(140, 0.6),
        "BWD_WB": kernel(100, 0.8),
    },
    {
        "layer": "slow",
        "hw": "xehpg",
        "dt": "f32",
        "FWD_B": kernel(100, 0.8, "latency"),
        "BWD_D": kernel(300, 0.2),
        "BWD_WB": {"error": "no configuration fits"},
    },
]


def test_a_kernel_within_both_goals_gets_no_reason():
    assert why(ROWS[0]["FWD_B"], ROWS[0]["BWD_D"], 1.5, 0.5) == ""


def test_a_slow_kernel_gets_its_ratio_and_the_models_reason():
    text = why(ROWS[1]["FWD_B"], ROWS[1]["BWD_D"], 1.5, 0.5)
    assert text.startswith("3.0x forward (forward latency-bound, backward compute-bound)")
    assert "compute-bound: 300 cycles against the compute roofline's 60" in text


def test_tables_count_the_goals_and_show_failures():
    table = format_table(ROWS, "BWD_WB", 1.5, 0.5)
    assert "| slow | xehpg | f32 | - | error: no configuration fits | - | - | FAILED | |" in table
    assert all(line.count("|") == table[0].count("|") for line in table)
    assert format_summary(ROWS, "BWD_D", 1.5, 0.5) == [
        "- xehpg f32: 1 of 2 within 1.5x forward, 1 of 2 at 50% of the roofline or more"
    ]
