"""resnet_50 layers for tests: the real descriptors, and copies scaled to run in CI."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from xegen.conv import Descriptor, parse_descriptor

SHAPES = Path(__file__).resolve().parents[1] / "data" / "shapes_resnet_50"
RESNET_LINES = [line.strip() for line in SHAPES.read_text().splitlines() if line.strip() and not line.startswith("#")]
RESNET = [parse_descriptor(line) for line in RESNET_LINES]


def short_name(desc: Descriptor) -> str:
    return desc.name.split(":")[-1]


def scaled(desc: Descriptor, outputs: int = 4) -> Descriptor:
    """Minibatch 1, at most `outputs` outputs per spatial dimension, channels divided by 8 (at least
    8, at most 32; fewer than 8 kept), with kernel, stride, padding and dilation unchanged.

    The input size is chosen so the output formula gives the reduced size and the right padding
    keeps its sign: i = (o-1)*s + ek - 2p + (s-1)."""
    fields = {}
    for dim in desc.used:
        o, s, p = desc.field("o", dim), desc.field("s", dim), desc.field("p", dim)
        ek = desc.effective_kernel(dim)
        out = min(o, outputs)
        size = (out - 1) * s + ek - 2 * p + (s - 1)
        fields["i" + dim] = size
        fields["o" + dim] = (size - ek + 2 * p) // s + 1

    def channels(c: int) -> int:
        return c if c < 8 else min(32, max(8, c // 8))

    return replace(desc, mb=1, ic=channels(desc.ic), oc=channels(desc.oc), **fields)
