"""The report's numbers for each layer: where its kernel sits on the roofline, and its peers.

A kernel's point on the roofline plot: x is the problem's arithmetic intensity (operations per
compulsory byte, an operation being a multiply or an add: two per multiply-add, as FLOP counts go),
y the rate it attains at its modeled cycles (operations x clock / cycles, in G operations per
second).  The roofs are the ones the model's roofline uses: the compute roof is the peak
multiply-add rate of the problem's data type (`modeled.roofline_terms.compute` is the problem's
multiply-adds at that rate), the slanted roof the platform's DRAM bandwidth.  A kernel at roofline
fraction f therefore sits at f times the roof above its x.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..conv import parse_descriptor
from ..hw import Platform
from .peers import PeerKernel


@dataclass(frozen=True)
class Roofs:
    compute: float  # G operations per second at the peak multiply-add rate
    bandwidth: float  # GB/s of DRAM

    def rate(self, intensity: float) -> float:
        """The roof above an arithmetic intensity (operations per byte)."""
        return min(self.compute, self.bandwidth * intensity)

    @property
    def ridge(self) -> float:
        """The intensity where the two roofs meet."""
        return self.compute / self.bandwidth


@dataclass(frozen=True)
class Layer:
    """One layer of the batch that compiled, with its `xegen conv` summary."""

    index: int  # 1-based position in the batch: names its anchor and its plot
    summary: dict
    roofs: Roofs
    intensity: float
    clock_ghz: float
    peers: tuple[PeerKernel, ...] = ()

    @property
    def name(self) -> str:
        return parse_descriptor(self.summary["problem"]).name or f"layer {self.index}"

    @property
    def modeled(self) -> dict:
        return self.summary["modeled"]

    @property
    def operations(self) -> int:
        return 2 * self.summary["multiply_adds"]

    def rate(self, cycles: float) -> float:
        """G operations per second of a kernel of this layer taking `cycles`."""
        return self.operations * self.clock_ghz / cycles if cycles else 0.0

    @property
    def attained(self) -> float:
        return self.rate(self.modeled["device_cycles"])

    @property
    def anchor(self) -> str:
        return f"layer-{self.index:03d}"

    def best_peer(self) -> PeerKernel | None:
        measured = [peer for peer in self.peers if peer.measured]
        return min(measured, key=lambda peer: peer.cycles, default=None)

    def ratio(self, peer: PeerKernel | None) -> float | None:
        """xegen's modeled cycles over the peer's (> 1: xegen is slower)."""
        if peer is None or not peer.measured:
            return None
        return self.modeled["device_cycles"] / peer.device_cycles


def make_layer(index: int, summary: dict, hw: Platform, peers: tuple[PeerKernel, ...] = ()) -> Layer:
    modeled = summary["modeled"]
    operations = 2 * summary["multiply_adds"]
    # the problem's multiply-adds over its cycles at peak: the platform's peak rate for its data type
    peak_per_clock = round(summary["multiply_adds"] / modeled["roofline_terms"]["compute"])
    roofs = Roofs(2 * peak_per_clock * hw.clock_ghz, hw.memory.dram_gb_per_second)
    return Layer(index, summary, roofs, operations / modeled["bytes"]["compulsory"], hw.clock_ghz, peers)


def worst_first(layers: list[Layer]) -> list[Layer]:
    """Lowest roofline fraction first; equal fractions in batch order."""
    return sorted(layers, key=lambda layer: (layer.modeled["roofline_fraction"], layer.index))
