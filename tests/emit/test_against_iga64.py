"""Random valid instructions per platform, checked against iga64 in batches.

For each batch (one kernel of 100-200 instructions): our bytes equal `iga64 -a
-Xforce-no-compact` on our printed text, `iga64 -d` on our bytes prints our text (token
for token), decoding our bytes gives the instructions back and parsing our text gives
them back too.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from xegen import hw as hwlib
from xegen import oracles
from xegen.emit import decode, encode_kernel, format_kernel, parse_asm

from .iga_compare import assert_same_bytes, assert_same_listing
from .xe_strategies import kernels

PLATFORMS = [hwlib.XELP, hwlib.XEHPG, hwlib.XEHPC]
_SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)


def _check_batch(instructions, platform) -> None:
    text = format_kernel(instructions, platform)
    ours = encode_kernel(instructions, platform)
    theirs = oracles.iga64_assemble(text, platform)
    assert_same_bytes(instructions, ours, theirs, platform)
    assert_same_listing(text, oracles.iga64_disassemble(ours, platform))
    assert decode(ours, platform) == instructions
    assert parse_asm(text, platform) == instructions


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_random_instructions_match_iga64(platform, iga64):
    @settings(max_examples=25, **_SETTINGS)
    @given(kernels(platform, 100, 200))
    def check(instructions):
        _check_batch(instructions, platform)

    check()


@pytest.mark.slow
@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_many_random_instructions_match_iga64(platform, iga64):
    @settings(max_examples=400, **_SETTINGS)
    @given(kernels(platform, 100, 200))
    def check(instructions):
        _check_batch(instructions, platform)

    check()
