"""`xegen conv --run-on-device` and `Kernel.run_on_device`: on NEO without hardware the launch is
enqueued and reported as not executed; with no device at all, one clear error line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import xegen
from xegen.runtime import Launch, run
from xegen.runtime.device_less import environment

DESC = "mb1ic16ih6oc32oh6kh1"


def conv(*options: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "xegen", "conv", DESC, *options],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )


@pytest.mark.parametrize("hw, dt", [("xelp", "f32"), ("xehpc", "bf16")])
def test_run_on_device_without_hardware_enqueues_and_says_nothing_ran(hw, dt, neo):
    text = conv("--hw", hw, "--dt", dt, "--run-on-device", env=environment(hw))
    assert text.returncode == 0, text.stderr
    assert "launch enqueued" in text.stdout and "nothing executed" in text.stdout


def test_run_on_device_reports_in_json(neo):
    document = conv("--hw", "xehpg", "--run-on-device", "--json", env=environment("xehpg"))
    assert document.returncode == 0, document.stderr
    device = json.loads(document.stdout)["device"]
    assert device["executed"] is False and device["outputs"] == []


def test_run_on_device_without_a_device_is_one_error_line(neo):
    env = {key: "" for key in environment("xehpg")} | {"NEOReadDebugKeys": "0"}
    result = conv("--hw", "xehpg", "--run-on-device", env=env)
    if result.returncode == 0:  # a machine with an Intel GPU: the run was compared with numpy
        assert "dst: max error" in result.stdout and "ok" in result.stdout
    else:
        assert result.returncode == 2
        assert result.stderr.startswith("xegen: error: no Intel GPU found") and "Traceback" not in result.stderr


def test_run_checks_the_buffers_before_loading_anything():
    launch = Launch(b"", "k", (16, 8), (8, 1, 1), (8, 1, 1))
    with pytest.raises(xegen.Error, match="takes 2 buffers, not 1"):
        run(launch, [np.zeros(4, np.float32)])
    with pytest.raises(xegen.Error, match="buffer 1 has 4 bytes, the kernel reads 8"):
        run(launch, [np.zeros(4, np.float32), np.zeros(1, np.float32)])
