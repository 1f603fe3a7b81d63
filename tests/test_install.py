"""An installed xegen (a wheel in a fresh virtual environment, no source tree) carries its rules, and
the Python session of docs/python.md runs there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.api.test_docs_session import PAGE, blocks

ROOT = Path(__file__).resolve().parents[1]


def test_the_repository_rules_directory_is_the_package_one():
    # users drop rule files into rules/; the package reads xegen/rules — one directory, not two copies
    assert (ROOT / "rules").resolve() == (ROOT / "xegen" / "rules").resolve()
    assert sorted(p.name for p in (ROOT / "rules").glob("*.egg"))


@pytest.mark.slow  # builds a wheel and installs it and its dependencies into a new environment: minutes
def test_a_wheel_installed_into_a_fresh_venv_simplifies(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)], check=True)
    (wheel,) = wheels.glob("xegen-*.whl")
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    # nothing of the source tree may be importable: with it on PYTHONPATH, pip takes its
    # xegen.egg-info for an installed xegen and skips the wheel
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([python, "-m", "pip", "install", "-q", str(wheel)], check=True, env=env)
    work = tmp_path / "elsewhere"  # run from an empty directory, for the same reason
    work.mkdir()
    result = subprocess.run(
        [env_dir / "bin" / "xegen", "simplify", "x*8 + 0", "--json"], cwd=work, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["result"] == "x * 8"  # rules/identities.egg's x + 0 = x fired
    located = subprocess.run(
        [python, "-c", "import xegen; print(xegen.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert str(env_dir) in located.stdout
    # the Python API: docs/python.md's whole session, its rules and runtime from the installed package
    session = work / "session.py"
    session.write_text("\n".join(blocks(PAGE.read_text())) + "\nprint('rules at', xegen.rules.directory())\n")
    ran = subprocess.run([python, session], cwd=work, env=env, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "and-absorbs-or sound" in ran.stdout
    assert f"rules at {env_dir}" in ran.stdout
