"""bench/e2e prices every binary alike (`bench.e2e.measure.modeled`): from the zebin, the run's
execution counts, the launch, the layer's workload and the kernel's own tiling.

xegen's binary priced that way must give exactly what `xegen conv` reports from the compilation
(`xegen.modeling.modeled_cycles`): nothing of xegen's own records enters the bench's number.  The
peers' tilings are worked by hand from how their kernels read their group ids.
"""

from __future__ import annotations

import pytest

from bench.e2e import onednn, peer
from bench.e2e.measure import modeled
from xegen import hw as hwlib
from xegen.conv import make_problem
from xegen.emit.roofline import Tiling
from xegen.modeling import modeled_cycles, tiling
from xegen.pipeline import compile_problem
from xegen.plan import parse_overrides
from xegen.verify import verify


@pytest.mark.parametrize(
    "hw, desc, overrides",
    [
        ("xelp", "mb1ic32ih10oc48oh10kh3ph1", []),
        # SLM buffers and 256 GRFs: both are read from the zebin's execution environment
        ("xehpg", "mb1ic32ih10oc32oh10kh3ph1", ["slm=1", "tg_m=1", "tg_n=2", "m_tile=16", "n_tile=16", "grf=256"]),
    ],
)
def test_the_bench_prices_xegen_binary_as_xegen_conv_does(hw, desc, overrides):
    problem = make_problem(desc, "FWD_B", "f32", mb=1)
    compilation = compile_problem(problem, hw, parse_overrides(overrides))
    run = verify(compilation, seed=0).run
    compiled = compilation.compiled
    priced = modeled(
        problem,
        compilation.zebin(),
        compiled.name,
        compiled.hw,
        run.executions,
        compiled.local_size,
        tiling(compilation),
    )
    expected = modeled_cycles(compilation)
    assert priced["modeled"] == expected.as_dict()
    assert (priced["device_cycles"], priced["bound"], priced["roofline_fraction"]) == (
        expected.device,
        expected.bound,
        expected.roofline_fraction,
    )
    if overrides:
        assert compiled.stats.slm_bytes > 0 and priced["modeled"]["occupancy"]["threads_per_eu"] == 4  # 256 GRFs


def onednn_tiling(desc: str, hw: str, kernel: str) -> Tiling:
    problem = make_problem(desc, "FWD_B", "f32", mb=1)
    return onednn.tiling(problem, onednn.configure(problem, hwlib.platform(hw), kernel))


@pytest.mark.parametrize(
    "desc, hw, kernel, expected",
    [
        # res4a_branch2b 3x3 14x14 256->256, nhwc: grid (128/16, 14 rows * 2 width blocks, 256/128 slices):
        # 8 groups along N in each of 2 slices of OCB = 128 channels, 28 along M
        ("mb1ic256ih14oc256oh14kh3ph1", "xehpg", "nhwc", Tiling(m_groups=28, n_groups=16, n_outer=2)),
        # blocked on XeHPG: two sub-groups (32 channels) a group: grid (128/32, 14 * 1, 2)
        ("mb1ic256ih14oc256oh14kh3ph1", "xehpg", "blocked", Tiling(m_groups=14, n_groups=8, n_outer=2)),
        # res2a_branch2b 3x3 56x56 64->64, nhwc on XeLP: grid (64/16, 56 * 7, 1): one slice
        ("mb1ic64ih56oc64oh56kh3ph1", "xelp", "nhwc", Tiling(m_groups=392, n_groups=4)),
        # conv1 blocked (first-layer version, 32 channels a sub-group): grid (32/16, 112 * 14, 1)
        ("mb1ic3ih224oc64oh112kh7sh2ph3", "xelp", "blocked", Tiling(m_groups=1568, n_groups=2)),
    ],
)
def test_onednn_tiling_follows_its_group_ids(desc, hw, kernel, expected):
    assert onednn_tiling(desc, hw, kernel) == expected


def test_onednn_tiling_counts_the_minibatch_along_m():
    """mb 3 (the blocked kernel is not run at multiples of 16): dimension 2 is 2 slices x 3 images."""
    problem = make_problem("mb3ic256ih14oc256oh14kh3ph1", "FWD_B", "f32")
    config = onednn.configure(problem, hwlib.XEHPG, "nhwc")
    assert config.global_size[2] == 6
    assert onednn.tiling(problem, config) == Tiling(m_groups=28 * 3, n_groups=16, n_outer=2)


@pytest.mark.parametrize(
    "direction, expected",
    [
        # forward: 17 output channels -> 2 sub-groups along N; one group per output point, 2 x 3 x 5 points
        ("FWD_B", Tiling(m_groups=2 * 3 * 5, n_groups=2)),
        # backward-data: N is the 5 input channels (one sub-group), M every input point, 2 x 7 x 8
        ("BWD_D", Tiling(m_groups=2 * 7 * 8, n_groups=1)),
        # backward-weights: N the 17 output channels, M the 3 x 2 taps x 5 input channels
        ("BWD_WB", Tiling(m_groups=3 * 2 * 5, n_groups=2)),
    ],
)
def test_naive_peer_tiling_is_one_sub_group_per_point(direction, expected):
    problem = make_problem("mb2ic5ih7iw8oc17oh3ow5kh3kw2sh2sw2ph1pw1dh1dw0", direction, "f32")
    assert peer.tiling(problem) == expected


def test_the_tuning_bench_prices_a_configuration_naming_its_plan():
    """bench/tune prices a tuned configuration from its text, which names a row plan by a word
    (`plan=first`): the same cycles as compiling that configuration here."""
    from bench.tune.run import priced

    problem = make_problem("mb1ic3ih16oc16oh8kh3sh2ph1", "FWD_B", "f32", mb=1)
    text = "plan=first fma=mad simd=16"
    compilation = compile_problem(problem, "xehpg", parse_overrides([text]))
    assert compilation.config.plan == "first"
    assert priced(problem, "xehpg", text) == modeled_cycles(compilation).device
