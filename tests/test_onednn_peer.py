"""bench/e2e's production peer: oneDNN v3.2's OpenCL convolutions, configured as oneDNN's C++ does,
compiled by ocloc and checked in xegen's simulator against numpy (bench/e2e/onednn.py,
production.py and run.py --peer onednn).

The expected blockings are worked by hand from gen9_convolution.cpp's rules (comments below); the
expected layouts from oneDNN's offset formulas (offsets.h) written out here element by element.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bench.e2e import onednn
from xegen import hw as hwlib
from xegen import oracles
from xegen.conv import make_problem
from xegen.conv.check import compare, random_inputs
from xegen.errors import Error, UnsupportedError

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "bench" / "e2e" / "run.py"


@pytest.fixture(scope="module")
def sources() -> Path:
    try:
        return onednn.find_sources()
    except Error as error:
        pytest.skip(str(error))


def config(desc: str, hw: str, kernel: str) -> onednn.Config:
    return onednn.configure(make_problem(desc, "FWD_B", "f32", mb=1), hwlib.platform(hw), kernel)


# (descriptor, kernel, hw) -> (ow_block, oc_block, ocb, global size, local size)
BLOCKINGS = [
    # res2a_branch2b, 3x3 56x56 64->64.  nhwc: kw > 1 caps the block at 8, max_div(56, 8) = 8;
    # ocb = 16 * max_div(64/16, 8) = 64; grid (64, 56 rows * 56/8 blocks, 1)
    ("mb1ic64ih56oc64oh56kh3ph1", "nhwc", "xelp", (8, 16, 64, (64, 392, 1), (16, 1, 1))),
    # blocked: cap min(56, 16) = 16, max_div(56, 16) = 14 (not under 16/2); grid (64, 56 * 4, 1);
    # XeHPG's work-groups hold two sub-groups
    ("mb1ic64ih56oc64oh56kh3ph1", "blocked", "xelp", (14, 16, 64, (64, 224, 1), (16, 1, 1))),
    ("mb1ic64ih56oc64oh56kh3ph1", "blocked", "xehpg", (14, 16, 64, (64, 224, 1), (32, 1, 1))),
    # res4a_branch2b, 3x3 14x14 256->256.  nhwc: max_div(14, 8) = 7 <= 8, no block in 8..7, so 8;
    # ocb = 16 * max_div(16, 8) = 128; grid (128, 14 * 2, 256/128)
    ("mb1ic256ih14oc256oh14kh3ph1", "nhwc", "xehpg", (8, 16, 128, (128, 28, 2), (16, 1, 1))),
    ("mb1ic256ih14oc256oh14kh3ph1", "blocked", "xehpg", (14, 16, 128, (128, 14, 2), (32, 1, 1))),
    # 1x1 56x56 256->128: kw 1 and channels over 64 allow 16, max_div(56, 16) = 14
    ("mb1ic256ih56oc128oh56kh1", "nhwc", "xelp", (14, 16, 128, (128, 224, 1), (16, 1, 1))),
    # ow 19 (prime): nhwc picks the block in 8..15 with the longest tail, 19 % 10 = 9;
    # blocked the one in 8..16 wasting least of its last block, 10 - 19 % 10 = 1
    ("mb1ic32ih19oc128oh19kh1", "nhwc", "xelp", (10, 16, 128, (128, 19 * 2, 1), (16, 1, 1))),
    ("mb1ic32ih19oc128oh19kh1", "blocked", "xelp", (10, 16, 128, (128, 19 * 2, 1), (16, 1, 1))),
    # conv1, 7x7 stride 2, 3 input channels (oneDNN's first-layer version): nhwc max_div(112, 8) = 8;
    # blocked caps the block at 8, takes 32 output channels per sub-group (64 % 32 == 0): grid
    # (64 / 2, 112 * 14, 1)
    ("mb1ic3ih224oc64oh112kh7sh2ph3", "nhwc", "xelp", (8, 16, 64, (64, 1568, 1), (16, 1, 1))),
    ("mb1ic3ih224oc64oh112kh7sh2ph3", "blocked", "xelp", (8, 32, 64, (32, 1568, 1), (16, 1, 1))),
]


@pytest.mark.parametrize("desc, kernel, hw, expected", BLOCKINGS, ids=[f"{d}-{k}-{h}" for d, k, h, _ in BLOCKINGS])
def test_blocking_follows_onednn(desc, kernel, hw, expected):
    c = config(desc, hw, kernel)
    assert (c.ow_block, c.oc_block, c.ocb, c.global_size, c.local_size) == expected


def test_layouts_and_macros_of_the_first_layer():
    nhwc, blocked = (config("mb1ic3ih224oc64oh112kh7sh2ph3", "xelp", k) for k in ("nhwc", "blocked"))
    assert (nhwc.src_layout, nhwc.wei_layout, nhwc.dst_layout, nhwc.ic_block) == ("nhwc", "Ohwi16o", "nhwc", 1)
    assert (blocked.src_layout, blocked.wei_layout, blocked.dst_layout) == ("nchw", "Ohwi16o", "nChw16c")
    problem = make_problem("mb1ic3ih224oc64oh112kh7sh2ph3", "FWD_B", "f32", mb=1)
    m = onednn.macros(problem, blocked)
    assert (m["IC"], m["OC"], m["VER_1STCONV"], m["SRC_NCHW"], m["WEI_I16O"], m["DST_W16C"]) == (3, 64, 1, 1, 1, 1)
    # right padding: (112 - 1) * 2 + 6 + 1 - 224 - 3
    assert (m["PH_R"], m["OWB"], m["OW_LAST"]) == (2, 14, 112)


@pytest.mark.parametrize(
    "direction, dt, post_ops, desc, kernel, reason",
    [
        ("BWD_D", "f32", "", "mb1ic16ih8oc16oh8kh3ph1", "nhwc", "forward only"),
        ("FWD_B", "bf16", "", "mb1ic16ih8oc16oh8kh3ph1", "nhwc", "f32 only"),
        ("FWD_B", "f32", "", "g2mb1ic32ih8oc32oh8kh3ph1", "blocked", "no groups"),
        ("FWD_B", "f32", "", "mb1ic16id4oc16od4kd3pd1", "nhwc", "2-D only"),
        ("FWD_B", "f32", "relu", "mb1ic16ih8oc16oh8kh3ph1", "nhwc", "no post-ops"),
        ("FWD_B", "f32", "", "mb32ic16ih8oc16oh8kh3ph1", "blocked", "minibatch 32 is a multiple of 16"),
    ],
)
def test_what_the_kernels_do_not_cover_says_why(direction, dt, post_ops, desc, kernel, reason):
    problem = make_problem(desc, direction, dt, post_ops)
    with pytest.raises(UnsupportedError, match=reason):
        onednn.configure(problem, hwlib.platform("xelp"), kernel)


def test_layouts_place_each_element_where_onednn_reads_it():
    rng = np.random.default_rng(1)
    src = rng.standard_normal((1, 20, 3, 5)).astype(np.float32)
    wei = rng.standard_normal((24, 20, 3, 2)).astype(np.float32)
    flat = onednn.lay_out(src, "nChw16c", (32,))
    n, c, h, w = 0, 19, 2, 4  # off_nCdhw16c: (c / 16) * H * W * 16 + h * W * 16 + w * 16 + c % 16
    assert flat.size == 32 * 3 * 5 and flat[1 * 15 * 16 + h * 5 * 16 + w * 16 + 3] == src[n, c, h, w]
    assert flat[3] == src[0, 3, 0, 0] and flat[15 * 16 + 4] == 0  # channel 20 at (0, 0): padding
    weights = onednn.lay_out(wei, "OIhw16i16o", (32, 32))
    o, i, kh, kw = (
        21,
        17,
        2,
        1,
    )  # off_gOIdhw16i16o: ((o/16 * I/16 + i/16) * KH * KW + kh * KW + kw) * 256 + i%16 * 16 + o%16
    assert weights[((1 * 2 + 1) * 6 + kh * 2 + kw) * 256 + 1 * 16 + 5] == wei[o, i, kh, kw]
    first = onednn.lay_out(wei[:, :3], "Ohwi16o", (32,))
    o, i = 21, 2  # off_gOdhwi16o: o/16 * KH * KW * I * 16 + (kh * KW + kw) * I * 16 + i * 16 + o%16
    assert first[1 * 6 * 3 * 16 + (kh * 2 + kw) * 3 * 16 + i * 16 + 5] == wei[o, i, kh, kw]
    back, padding = onednn.read_back(flat, "nChw16c", src.shape, 32)
    assert np.array_equal(back, src) and padding.shape == (1, 12, 3, 5) and not padding.any()


# small layers with what the real ones have: padding, stride, a channel tail in the blocked layout,
# XeHPG's two sub-groups per work-group, the first layer's version
KERNEL_RUNS = [
    ("mb1ic32ih10oc32oh10kh3ph1", "nhwc", "xelp"),
    ("mb1ic32ih10oc48oh5kh3sh2ph1", "blocked", "xehpg"),
    ("mb1ic3ih20oc32oh10kh7sh2ph3", "blocked", "xelp"),
]


@pytest.mark.parametrize("desc, kernel, hw", KERNEL_RUNS, ids=[f"{d}-{k}-{h}" for d, k, h in KERNEL_RUNS])
def test_onednn_kernel_compiles_and_verifies_in_the_simulator(desc, kernel, hw, sources, ocloc):
    problem = make_problem(desc, "FWD_B", "f32", mb=1)
    platform = hwlib.platform(hw)
    c = onednn.configure(problem, platform, kernel)
    zebin = oracles.ocloc_compile(
        onednn.source_file(c, sources).read_text(), platform, options=onednn.options(problem, c, sources)
    )
    tensors = random_inputs(problem, seed=5)
    got, padding, result = onednn.simulate(problem, c, zebin, platform, tensors)
    comparisons = compare(problem, got, tensors)
    assert all(x.ok for x in comparisons), comparisons
    assert not padding.any()
    groups = [-(-g // lw) for g, lw in zip(c.global_size, c.local_size, strict=True)]
    assert result.groups == np.prod(groups)


def test_weights_in_another_layout_fail_verification(sources, ocloc):
    """The check is not vacuous: the same binary fed Ohwi16o weights instead of OIhw16i16o."""
    problem = make_problem("mb1ic32ih6oc16oh6kh3ph1", "FWD_B", "f32", mb=1)
    platform = hwlib.platform("xelp")
    c = onednn.configure(problem, platform, "nhwc")
    zebin = oracles.ocloc_compile(
        onednn.source_file(c, sources).read_text(), platform, options=onednn.options(problem, c, sources)
    )
    tensors = random_inputs(problem, seed=5)
    got, _, _ = onednn.simulate(problem, replace(c, wei_layout="Ohwi16o"), zebin, platform, tensors)
    (comparison,) = compare(problem, got, tensors)
    assert not comparison.ok and comparison.mismatches > comparison.elements // 2


def test_bench_table_on_one_scaled_layer(sources, ocloc, tmp_path):
    output = tmp_path / "e2e.json"
    result = subprocess.run(
        [
            sys.executable,
            str(RUN),
            "--peer",
            "onednn",
            "--cases",
            "xelp/fwd_b/f32",
            "--scaled",
            "--layers",
            "res2a_branch2b",
            "--json",
            str(output),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    kernels = [line for line in lines if "ok" in line.split()[-1:]]
    assert len(kernels) == 4 and kernels[0].startswith("res2a_branch2b")
    (case,) = json.loads(output.read_text())["cases"]
    (row,) = case["layers"]
    cycles = {side: row[side]["device_cycles"] for side in ("xegen", "onednn_nhwc", "onednn_blocked", "igc")}
    assert row["ratios"]["best_onednn"] == pytest.approx(
        cycles["xegen"] / min(cycles["onednn_nhwc"], cycles["onednn_blocked"])
    )
    assert case["summary"]["best_onednn"]["geomean"] == pytest.approx(row["ratios"]["best_onednn"])
    assert f"worst {row['ratios']['best_onednn']:.2f} (res2a_branch2b" in result.stdout
    for side in ("xegen", "onednn_nhwc", "onednn_blocked", "igc"):
        assert row[side]["bound"] in result.stdout and 0 < row[side]["roofline_fraction"] <= 1
    # the same layer's network report takes the bench's peers: xegen conv prices its kernel as the
    # bench did (static counts, the same model), and divides by the best of them
    report = subprocess.run(
        [
            sys.executable,
            "-m",
            "xegen",
            "conv",
            row["problem"],
            "--hw",
            "xelp",
            "--json",
            "--report",
            str(tmp_path / "report"),
            "--report-peers",
            str(output),
        ],
        capture_output=True,
        text=True,
    )
    assert report.returncode == 0, report.stderr
    ours = json.loads(report.stdout)["modeled"]["device_cycles"]
    assert ours == pytest.approx(cycles["xegen"], rel=1e-12)
    page = (tmp_path / "report" / "index.html").read_text()
    for side, label in case["kernels"].items():
        if side != "xegen":
            assert f"<td>{cycles[side]:,.0f} ({ours / cycles[side]:.2f})</td>" in page, label
    assert f"<td>{ours / min(cycles[s] for s in cycles if s != 'xegen'):.2f}</td></tr>" in page


def test_layers_by_name_descriptor_or_all():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_e2e_run", RUN)
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    every = run.select_layers("all", scale=False)
    assert len(every) == 20 and run.select_layers("", scale=False) == every
    chosen = run.select_layers("mb1ic256ih56oc128oh56kh1,res4a_branch2b", scale=False)
    assert [run.layer_name(d) for d in chosen] == ["res4a_branch2b*6", "mb1ic256ih56oc128oh56kh1"]
    assert (chosen[1].ic, chosen[1].oh, chosen[1].kh) == (256, 56, 1)
