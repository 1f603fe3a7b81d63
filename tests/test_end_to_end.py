"""Issue 8's acceptance: resnet_50 layers through the whole compiler (`compile_problem`), run in
the simulator over the whole grid against numpy (`verify`), for every configuration of the matrix:

    XeHPG  forward f32, f16, bf16 and int8 (u8:s8:f32 and s8:s8:s32), backward-data f32 and bf16,
           backward-weights (with bias) f32 and bf16
    XeLP   forward f32 and int8 (u8:s8:f32 and s8:s8:s32)
    XeHPC  forward bf16

Every kernel must verify (every output within conv.check's tolerance, no SWSB hazard), count its
instruction executions without a run exactly as the simulator does (`xegen.lower.counts`), decode
under `iga64 -d -Wall` silently (and re-assemble to the same bytes), pass `ocloc validate`, and
come out byte-identical when compiled again, also in another process with another hash seed.

The default run takes two scaled layers (minibatch 1, at most 4x4 outputs, channels divided by 8)
per configuration; `-m slow` runs every layer scaled, and every real layer at minibatch 1
(`--mb 1`), one test per layer and configuration (about 20 minutes on one core).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from xegen.conv import Descriptor, make_problem
from xegen.oracles import ocloc_validate
from xegen.pipeline import Compilation, compile_problem
from xegen.plan.config import KEYS
from xegen.verify import verify

from .conv.shapes import RESNET, scaled, short_name
from .lower.harness import check_static_counts, iga_report

# (platform, direction, data types)
CONFIGS = [
    ("xehpg", "FWD_B", "f32"),
    ("xehpg", "FWD_B", "f16"),
    ("xehpg", "FWD_B", "bf16"),
    ("xehpg", "FWD_B", "u8:s8:f32"),
    ("xehpg", "FWD_B", "s8:s8:s32"),
    ("xehpg", "BWD_D", "f32"),
    ("xehpg", "BWD_D", "bf16"),
    ("xehpg", "BWD_WB", "f32"),
    ("xehpg", "BWD_WB", "bf16"),
    ("xelp", "FWD_B", "f32"),
    ("xelp", "FWD_B", "u8:s8:f32"),
    ("xelp", "FWD_B", "s8:s8:s32"),
    ("xehpc", "FWD_B", "bf16"),
]
SCALED_LAYERS = (3, 5)  # res2a_branch2b (3x3 with padding), res3a_branch1 (1x1 with stride 2)
ROOT = Path(__file__).resolve().parents[1]


def case_id(layer: int, hw: str, direction: str, dt: str) -> str:
    return f"{short_name(RESNET[layer])}-{hw}-{direction}-{dt}"


def check_end_to_end(
    desc: Descriptor,
    hw: str,
    direction: str,
    dt: str,
    seed: int,
    overrides: dict | None = None,
    tags: dict | None = None,
    mb: int | None = 1,
) -> Compilation:
    """Compile, compile the kernel chosen again from its configuration (same bytes), verify in the
    simulator, and ask Intel's tools; returns the compilation (`tags`: layout tags, stag= etc.,
    as make_problem takes them; `mb`: the minibatch, None: the descriptor's).  The second compile
    is of the chosen kernel alone, not of every kernel the model chose among (the whole choice
    twice: `test_same_bytes_in_another_process_with_another_hash_seed` below, and
    tests/test_compile.py's `test_same_problem_same_bytes`)."""
    problem = make_problem(desc, direction, dt, mb=mb, **(tags or {}))
    compilation = compile_problem(problem, hw, overrides)
    config = {key: getattr(compilation.config, key) for key in KEYS}
    again = compile_problem(compilation.problem, hw, config, choose=False)
    assert again.zebin() == compilation.zebin(), "a second compilation of its configuration gave other bytes"

    result = verify(compilation, seed)
    assert not result.run.hazards, f"{len(result.run.hazards)} SWSB hazards, the first: {result.run.hazards[0]}"
    assert sorted(c.name for c in result.comparisons) == sorted(problem.outputs)
    for comparison in result.comparisons:
        assert comparison.ok, f"{problem} with {compilation.config} on {hw}: {comparison}"
    assert result.ok
    check_static_counts(compilation.compiled, compilation.kernel.grid, result.run.executions)

    assert iga_report(compilation.compiled.code, hw) == ""
    valid, report = ocloc_validate(compilation.zebin())
    assert valid, report
    return compilation


def cases(layers):
    for hw, direction, dt in CONFIGS:
        for layer in layers:
            yield pytest.param(layer, hw, direction, dt, id=case_id(layer, hw, direction, dt))


@pytest.mark.parametrize("layer, hw, direction, dt", list(cases(SCALED_LAYERS)))
def test_scaled_layer_end_to_end(layer, hw, direction, dt, iga64, ocloc):
    compilation = check_end_to_end(scaled(RESNET[layer]), hw, direction, dt, seed=layer)
    assert compilation.compiled.stats.fma_instructions >= 1


@pytest.mark.slow
@pytest.mark.parametrize("layer, hw, direction, dt", list(cases(range(len(RESNET)))))
def test_every_scaled_layer_end_to_end(layer, hw, direction, dt, iga64, ocloc):
    """Scaled shapes take other configurations than the real ones (smaller tiles, ramps that
    unroll): scaled conv1 backward-data bf16 found a let chain deeper than Python's stack."""
    check_end_to_end(scaled(RESNET[layer]), hw, direction, dt, seed=layer)


# fma=dpasw (XeHPG's fused thread pairs share A), forced with tiles that pair C rows (m_tile 16 =
# two dpasw row blocks) and with N wide enough that both threads of each pair store C
DPASW_CASES = [
    (5, "FWD_B", "f16", {"m_tile": 16, "n_tile": 16, "tg_m": 1, "slm": 1, "gmem_bufs": 1}),
    (5, "FWD_B", "bf16", {"m_tile": 16, "n_tile": 16, "tg_m": 1, "slm": 0, "gmem_bufs": 1}),
    (5, "FWD_B", "s8:s8:s32", {"m_tile": 16, "n_tile": 16, "tg_m": 1, "slm": 1}, "slow"),  # 7 s
    (5, "BWD_D", "bf16", {"m_tile": 16, "n_tile": 16, "tg_m": 2, "slm": 1}),
]


def dpasw_cases():
    for layer, direction, dt, overrides, *slow in DPASW_CASES:
        yield pytest.param(
            layer,
            direction,
            dt,
            overrides,
            id=case_id(layer, "xehpg", direction, dt) + "-dpasw",
            marks=[pytest.mark.slow] if slow else [],
        )


@pytest.mark.parametrize("layer, direction, dt, overrides", list(dpasw_cases()))
def test_dpasw_end_to_end_and_against_dpas(layer, direction, dt, overrides, iga64, ocloc):
    """The dpasw kernel verifies like any other.  Against the dpas kernel of the same configuration
    it has the same multiplies as dpasw and no more sends or GRFs; fewer sends where A comes
    through SLM (each thread reads half of it; direct vector loads gather the rows of A into the
    same number of messages either way, only half as wide)."""
    desc = scaled(RESNET[layer])
    # the plain weights (with `any`'s interleaved ones, `weights_choices`, scaled res3a_branch1's
    # dpasw kernel takes one GRF more than dpas: 136 against 135, with 43 sends against 51)
    shared = check_end_to_end(desc, "xehpg", direction, dt, layer, {"fma": "dpasw", **overrides}, {"wtag": "cdba"})
    config = shared.config
    assert config.fma == "dpasw"
    own = compile_problem(
        make_problem(desc, direction, dt, mb=1, wtag="cdba"), "xehpg", {**asdict(config), "fma": "dpas"}
    )
    opcodes = [inst.opcode for inst in shared.compiled.instructions]
    assert "dpasw" in opcodes and "dpas" not in opcodes
    assert opcodes.count("dpasw") == [inst.opcode for inst in own.compiled.instructions].count("dpas") > 0
    fewer, same = shared.compiled.stats, own.compiled.stats
    assert fewer.fma_instructions == same.fma_instructions
    assert fewer.sends <= same.sends and fewer.grfs_used <= same.grfs_used
    if config.slm:
        assert fewer.sends < same.sends


HASH_SCRIPT = """
import hashlib, json, sys
from xegen.conv import make_problem
from xegen.pipeline import compile_problem
for desc, hw, direction, dt in json.loads(sys.stdin.read()):
    zebin = compile_problem(make_problem(desc, direction, dt, mb=1), hw).zebin()
    print(hashlib.sha256(zebin).hexdigest())
"""


def test_same_bytes_in_another_process_with_another_hash_seed():
    """Set or dict order leaking into the output would give other bytes under another
    PYTHONHASHSEED: every configuration on the cheaper scaled layer, here and in a child process."""
    desc = scaled(RESNET[SCALED_LAYERS[1]])
    jobs = [(str(desc), hw, direction, dt) for hw, direction, dt in CONFIGS]
    here = [
        hashlib.sha256(compile_problem(make_problem(desc, direction, dt, mb=1), hw).zebin()).hexdigest()
        for _, hw, direction, dt in jobs
    ]
    seed = "4242" if os.environ.get("PYTHONHASHSEED") != "4242" else "17"
    environment = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", HASH_SCRIPT],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        env=environment,
        cwd=ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == here, f"PYTHONHASHSEED={seed} changes the bytes"


@pytest.mark.slow
@pytest.mark.parametrize("layer, hw, direction, dt", list(cases(range(len(RESNET)))))
def test_resnet_layer_at_minibatch_1_end_to_end(layer, hw, direction, dt, iga64, ocloc):
    check_end_to_end(RESNET[layer], hw, direction, dt, seed=layer)
