"""A wheel built from this checkout, installed into a fresh virtual environment, runs the session
of docs/python.md there: the package, its rules (package data) and its runtime work outside the
checkout.  Slow (a wheel build and a pip install of the dependencies): `pytest -m slow`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.api.test_docs_session import PAGE, blocks

ROOT = Path(__file__).resolve().parents[2]


def run(*argv, cwd: Path) -> str:
    result = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.slow
def test_the_installed_wheel_runs_the_session(tmp_path, neo):
    run(sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "-q", "-w", tmp_path / "dist", cwd=tmp_path)
    [wheel] = (tmp_path / "dist").glob("xegen-*.whl")
    run(sys.executable, "-m", "venv", tmp_path / "venv", cwd=tmp_path)
    python = tmp_path / "venv" / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", wheel, cwd=tmp_path)
    work = tmp_path / "session"
    work.mkdir()
    script = work / "session.py"
    script.write_text("\n".join(blocks(PAGE.read_text())) + "\nprint('where', xegen.__file__, xegen.rules.directory())\n")
    out = run(python, script, cwd=work)
    where = out.strip().splitlines()[-1].split()
    assert where[1].startswith(str(tmp_path / "venv")) and str(ROOT) not in where[1]  # the installed package
    assert where[2].startswith(str(tmp_path / "venv")) and Path(where[2], "identities.egg").is_file()
    assert "and-absorbs-or sound" in out
