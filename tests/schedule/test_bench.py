"""bench/schedule/run.py: bad arguments are one-line errors, and a variant that does not fit
shows its error in its layer's row instead of ending the table."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from xegen.conv import parse_descriptor

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "schedule" / "run.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_schedule_run", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--hw", "foo"], "argument --hw: unknown hardware 'foo'"),
        (["--gmem-bufs", "3"], "argument --gmem-bufs: invalid choice: 3"),
        (["--dt", "f64"], "unknown data type 'f64'"),
        (["--dir", "SIDEWAYS"], "unknown direction 'SIDEWAYS'"),
        (["--layers", "-1"], "expected a positive number of layers, not -1"),
        (["--layers", "0"], "expected a positive number of layers, not 0"),
    ],
)
def test_bad_arguments_are_one_line_errors(bench, argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as stopped:
        bench.main(argv + ["--json", str(tmp_path / "out.json")])
    assert stopped.value.code == 2
    errors = capsys.readouterr().err
    assert message in errors and "Traceback" not in errors
    assert not (tmp_path / "out.json").exists()


def test_a_variant_that_does_not_fit_shows_its_error_in_its_row(bench, capsys, tmp_path, monkeypatch):
    # 8 x 8 threads with 8 x 16 f16 tiles, k_block 64: (64 + 128) x 64 x 2 = 24 KB of SLM per buffer,
    # so two buffers fit XeHPG's 64 KB and three do not
    monkeypatch.setattr(bench, "RESNET", [parse_descriptor("mb1ic256ih8oc256oh8kh3ph1n:big")])
    monkeypatch.setattr(
        bench, "STAGED", ({"slm": 1, "tg_m": 8, "tg_n": 8, "m_tile": 8, "n_tile": 16, "k_block": 64, "grf": 256},)
    )
    assert bench.main(["--real", "--json", str(tmp_path / "out.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    row = lines.index(next(line for line in lines if line.startswith("big")))
    cells = lines[row].split("|")
    assert "does not fit" not in cells[1] + cells[2] and "does not fit" in cells[3] and cells[4].endswith(", -")
    assert "slm_bufs=3: slm=1 needs 73728 bytes of SLM" in lines[row + 1]
