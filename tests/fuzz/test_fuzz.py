"""Coverage-guided fuzzing of every reader (tests/fuzz/targets.py) with atheris.

The default run gives each target SHORT_RUNS executions (about a minute for all of them), the
slow run (`-m slow`) 100,000; both start from the committed seeds (tests/fuzz/seeds/, written by
make_seeds.py) with a fixed random seed, so a run is the same on every machine.  The bounds are
counts, not time: executions, input length (targets.MAX_LEN) and memory (RSS_LIMIT_MB); the
per-input timeout is libFuzzer's hang detector, far above any input's run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .targets import DEFAULT_MAX_LEN, MAX_LEN, TARGETS

HERE = Path(__file__).parent
SHORT_RUNS = 1_500
LONG_RUNS = 100_000
RSS_LIMIT_MB = 3072
HANG_SECONDS = 1200  # libFuzzer's default: only a real hang reaches it


def fuzz(target: str, runs: int, tmp_path: Path) -> None:
    pytest.importorskip("atheris", reason="the fuzz harnesses need atheris (pip install 'xegen[test]')")
    found = tmp_path / "corpus"  # new inputs go here, not into the committed seeds
    found.mkdir()
    result = subprocess.run(
        [
            sys.executable,
            str(HERE / "run.py"),
            target,
            f"-runs={runs}",
            "-seed=1",
            "-len_control=0",
            f"-max_len={MAX_LEN.get(target, DEFAULT_MAX_LEN)}",
            f"-rss_limit_mb={RSS_LIMIT_MB}",
            f"-timeout={HANG_SECONDS}",
            f"-artifact_prefix={tmp_path}/",
            "-print_final_stats=1",
            str(found),
            str(HERE / "seeds" / target),
        ],
        capture_output=True,
        text=True,
    )
    crashes = sorted(tmp_path.glob("crash-*")) + sorted(tmp_path.glob("oom-*")) + sorted(tmp_path.glob("timeout-*"))
    assert result.returncode == 0 and not crashes, (
        (
            f"{target}: a finding, input {crashes[0].read_bytes()[:200]!r}"
            if crashes
            else f"{target}: exit {result.returncode}"
        )
        + "\n"
        + result.stderr[-4000:]
    )
    assert f"stat::number_of_executed_units: {runs}" in result.stderr


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzz_briefly(target, tmp_path):
    fuzz(target, SHORT_RUNS, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzz_long(target, tmp_path):
    fuzz(target, LONG_RUNS, tmp_path)
