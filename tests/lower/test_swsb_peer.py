"""Our SWSB on our own conv kernels against `iga64 -Xauto-deps` on the same code.

tests/emit/test_scoreboard.py compares the two on IGC's kernels; this compares them on what
`xegen conv` emits (dpas and LSC on XeHPG/XeHPC, legacy HDC on XeLP): the kernel's
annotations and syncs are stripped, iga64 annotates the stripped listing, and ours must need
no more sync instructions (and so no more instructions) than iga64's, with no hazard in the
simulator run of the whole grid."""

from __future__ import annotations

import pytest

from xegen import oracles
from xegen.conv import make_problem
from xegen.emit import decode, format_kernel
from xegen.emit.scoreboard import assign_swsb, count_syncs, strip_swsb
from xegen.pipeline import compile_problem
from xegen.verify import verify

from ..conv.shapes import RESNET, scaled

RES2A_BRANCH2B = 3  # 3x3 with padding

CASES = [
    ("xehpg", "FWD_B", "f16", {}),
    ("xehpg", "BWD_D", "bf16", {}),
    ("xehpc", "FWD_B", "bf16", {}),
    ("xelp", "FWD_B", "u8:s8:f32", {}),
    ("xehpg", "FWD_B", "f16", {"fma": "dpasw", "m_tile": 16}),
]


@pytest.mark.parametrize(
    "hw, direction, dt, overrides",
    CASES,
    ids=["-".join(c[:3]) + "".join(f"-{v}" for v in c[3].values()) for c in CASES],
)
def test_no_more_syncs_than_iga64_auto_deps_on_our_kernels(hw, direction, dt, overrides, iga64):
    problem = make_problem(scaled(RESNET[RES2A_BRANCH2B]), direction, dt, mb=1)
    compilation = compile_problem(problem, hw, overrides)
    platform = compilation.compiled.hw
    ours = list(compilation.compiled.instructions)
    stripped = strip_swsb(ours)
    assert assign_swsb(stripped, platform) == ours  # what we shipped is what the pass gives
    theirs = decode(
        oracles.iga64_assemble(format_kernel(stripped, platform), platform, extra=("-Xauto-deps",)), platform
    )
    assert count_syncs(ours) <= count_syncs(theirs), f"ours {count_syncs(ours)}, iga64 {count_syncs(theirs)}"
    assert len(ours) <= len(theirs)
    assert not verify(compilation, seed=1).run.hazards
