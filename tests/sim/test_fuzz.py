"""Random valid instructions (the ISA tests' strategies) on random registers: the simulator
either executes them or raises an xegen error naming the instruction — never a Python
traceback, never a hang."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.emit.xe_strategies import basic_instructions, math_instructions, ternary_instructions
from xegen import Error
from xegen import hw as hwlib
from xegen.emit import assemble, encode

from .harness import end_of_thread, execute

PLATFORMS = [hwlib.XELP, hwlib.XEHPG, hwlib.XEHPC]


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_random_instructions_run_or_fail_cleanly(platform, data, seed):
    inst = data.draw(
        st.one_of(basic_instructions(platform), ternary_instructions(platform), math_instructions(platform))
    )
    code = encode(inst, platform) + assemble(end_of_thread(platform), platform)
    rng = np.random.default_rng(seed)
    registers = rng.integers(0, 256, size=256 * platform.grf_bytes, dtype=np.uint8)
    try:
        run = execute(
            "", platform.name, threads=2, simd=32, code=code, grf_count=256, inputs={0: np.tile(registers, (2, 1))}
        )
    except Error as error:
        assert "pc 0x0000" in str(error)  # names the instruction
        return
    assert run.machine.done.all()
