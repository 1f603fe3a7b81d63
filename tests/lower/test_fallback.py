"""Register allocation fall-back, for real: a configuration whose plan fits the GRF budget but
whose kernel does not (a 7x7 stride-2 kernel over 3 channels, conv1's shape: its index
arithmetic needs more than the 16 GRFs the plan reserves for scalars when SLM is
multi-buffered), so the compiler takes the next, smaller configuration; the result verifies."""

from __future__ import annotations

import pytest

from xegen.conv import make_problem
from xegen.errors import ConfigError
from xegen.pipeline import compile_problem
from xegen.verify import verify

CONV1_LIKE = "mb1ic3ih32oc64oh16kh7sh2ph3"


def test_a_kernel_that_does_not_fit_falls_back_to_a_smaller_configuration():
    problem = make_problem(CONV1_LIKE, "FWD_B", "f16")
    compilation = compile_problem(problem, "xehpg", {"grf": 128})
    assert compilation.fallbacks, "the first configuration fitted: the test no longer exercises the fall-back"
    given_up = [reason.split(": ", 1) for reason in compilation.fallbacks]
    for config, why in given_up:
        assert "does not fit 128 GRFs" in why and "at instruction" in why  # the allocator's error, not the plan's
        assert config != str(compilation.config)
        fields = dict(item.split("=") for item in config.split())
        with pytest.raises(ConfigError, match="fits XeHPG's registers"):
            compile_problem(problem, "xehpg", {key: _number(value) for key, value in fields.items()})
    chosen = dict(item.split("=") for item in str(compilation.config).split())
    first = dict(item.split("=") for item in given_up[0][0].split())
    assert int(chosen["slm_bufs"]) * int(chosen["gmem_bufs"]) < int(first["slm_bufs"]) * int(first["gmem_bufs"])
    assert compilation.compiled.stats.grfs_used <= 128
    result = verify(compilation, seed=7)
    assert not result.run.hazards and result.ok


def _number(value: str):
    return int(value) if value.isdigit() else value
