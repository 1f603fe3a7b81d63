"""Strided backward data by phases: each phase of the stride sums only the kernel positions that
reach it.  The taps are checked against a brute-force enumeration of `o*S + k*E - P = i`."""

from __future__ import annotations

import math

import pytest

from xegen.build import check_ir
from xegen.conv import make_problem
from xegen.conv.index import Idx
from xegen.pipeline import build_kernel
from xegen.plan import formulate
from xegen.plan.gemm import StridePhases


def reaching_taps(ph: StridePhases, i: int) -> list[tuple[int, int]]:
    """(k, o) of every kernel position k through which output o reaches input i, by enumeration."""
    return [
        (k, o) for k in range(ph.kernel) for o in range(ph.outputs) if o * ph.stride + k * ph.dilation - ph.padding == i
    ]


PHASES = [
    StridePhases(stride=s, dilation=e, padding=p, kernel=k, inputs=i, outputs=(i + 2 * p - (k - 1) * e - 1) // s + 1)
    for s, e, p, k, i in [
        (2, 1, 3, 7, 15),
        (2, 1, 1, 3, 8),
        (2, 1, 0, 1, 10),
        (3, 1, 1, 3, 11),
        (2, 2, 2, 3, 12),
        (3, 2, 1, 3, 11),
        (4, 6, 3, 4, 23),
        (3, 3, 0, 2, 9),
        (5, 1, 2, 3, 7),
        (2, 3, 0, 5, 13),
    ]
]


@pytest.mark.parametrize("ph", PHASES, ids=str)
def test_phase_taps_are_exactly_the_reaching_taps(ph):
    residues = {ph.residue(Idx.const(k0)).lo: k0 for k0 in range(ph.count)}
    assert len(residues) == ph.count  # phases are distinct residues
    assert ph.covers_all == (ph.count == ph.stride)
    for i in range(ph.inputs):
        q, r = divmod(i, ph.stride)
        expected = reaching_taps(ph, i)
        if r not in residues:
            assert expected == []  # no phase: the launcher's zero fill is the gradient
            continue
        k0 = residues[r]
        listed = [
            (k, q + (r + ph.padding - k0 * ph.dilation) // ph.stride - t * ph.output_step)
            for t in range(ph.taps)
            for k in [k0 + t * ph.tap_step]
            if k < ph.kernel
        ]
        assert [(k, o) for k, o in listed if 0 <= o < ph.outputs] == expected


def test_phases_take_fewer_products_than_the_dense_loop():
    # 7x7 stride 2: phases get 4 or 3 taps per dimension, so K is 4*4*oc instead of 7*7*oc
    gemm = formulate(make_problem("mb1ic3ih224oc64oh112kh7sh2ph3", "BWD_D", "f32"))
    assert gemm.k.size == 4 * 4 * 64
    assert gemm.groups == 4  # the phases (2 x 2) are grid groups
    # three input channels: transposed, positions along N
    assert gemm.m.size == 3 and gemm.n.size == 112 * 112


SHAPES = [
    ("mb1ic16ih8oc32oh4kh3sh2ph1", "f32", "xelp"),
    ("mb2ic5ih9oc7oh4kh3sh2ph0", "bf16", "xehpg"),
    ("mb1ic3ih15oc16kh7sh2ph3", "f32", "xehpg"),  # a first layer: transposed
    ("mb1ic3ih15oc16kh7sh2ph3", "bf16", "xehpc"),
    ("mb1ic8ih11oc8kh3sh3ph1dh1", "f32", "xehpg"),  # dilation 2, stride 3: one tap every 3
    ("mb1ic8ih12oc8kh3sh2ph2dh1", "f16", "xehpg"),  # dilation 2, stride 2: odd phases get no tap
    ("g2mb1ic8ih10oc16kh1sh2ph0", "f32", "xelp"),  # 1x1 s2, grouped
    ("g16mb1ic16ih9oc16kh3sh2ph1", "f32", "xehpg"),  # depthwise
    ("mb1ic4ih13iw9oc8kh5kw2sh3sw2ph2pw1", "f32", "xehpg"),
    ("mb1ic8id6ih7iw5oc8kd3kh3kw1sd2sh1sw2pd1ph1pw0", "f32", "xelp"),  # 3-D, stride in d and w
]


@pytest.mark.parametrize("desc, dt, platform", SHAPES)
def test_phased_backward_data_matches_numpy(desc, dt, platform):
    kernel = build_kernel(make_problem(desc, "BWD_D", dt), platform)
    results = check_ir(kernel, seed=3)
    assert results and all(r.ok for r in results), [str(r) for r in results]


def test_blocked_diff_src_keeps_its_padding_zero():
    problem = make_problem("mb1ic12ih9oc8kh3sh2ph1", "BWD_D", "f32", stag="nChw16c")
    results = check_ir(build_kernel(problem, "xehpg"), seed=5)
    assert len(results) == 2 and all(r.ok for r in results), [str(r) for r in results]


def test_phase_counts_multiply():
    gemm = formulate(make_problem("g3mb1ic6id6ih7iw5oc6kd3kh3kw1sd2sh1sw3pd1ph1pw0", "BWD_D", "f32"))
    assert gemm.groups == 3 * math.prod((2, 1, 1))  # kw1 with sw3: one phase, two residues get nothing
    assert gemm.skips_outputs


def test_a_1x1_stride_2_layer_runs_one_phase_and_zeroes_the_rest():
    gemm = formulate(make_problem("mb1ic64ih56oc128oh28kh1sh2", "BWD_D", "f32"))
    assert gemm.groups == 1 and gemm.k.size == 128 and gemm.skips_outputs
    assert build_kernel(make_problem("mb1ic8ih6oc8kh1sh2", "BWD_D", "f32"), "xelp").zero_outputs == ("src",)
    assert build_kernel(make_problem("mb1ic8ih6oc8kh3sh2ph1", "BWD_D", "f32"), "xelp").zero_outputs == ()
