"""A network's layers on one page: `xegen conv --batch FILE --report DIR`.

`write_report` takes the summaries `xegen conv` made of a batch (each with its `modeled` numbers)
and writes DIR/index.html with the PNG plots it shows (replacing an earlier report's): every layer
on the platform's roofline (network.png), the layers sorted by roofline fraction, the worst first,
and per layer its point on the roofline beside its peers' (layer-NNN.png), its modeled terms, bytes
and occupancy.  Peers come from the JSON that `python bench/e2e/run.py` writes (`load_peers`),
matched by problem and platform.

layers.py: the numbers of a layer; peers.py: the bench's JSON; page.py: the HTML; plots.py: the
PNGs (the only module that imports matplotlib, and only when a report is written).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..conv import make_problem
from ..errors import Error
from ..hw import Platform
from ..progress import Progress
from .layers import Layer, make_layer, worst_first
from .page import render
from .peers import PeerKernel, load_peers, problem_key

__all__ = ["check_directory", "load_peers", "write_report"]

NETWORK_PIXELS = (800, 500)  # the whole-network plot
LAYER_PIXELS = (600, 380)  # each layer's


def check_directory(directory: str) -> None:
    """Refuse a report directory that cannot be one, before any layer is compiled."""
    if not directory.strip():
        raise Error("--report needs a directory name, not an empty string")
    path = Path(directory)
    if path.exists() and not path.is_dir():
        raise Error(f"--report {directory}: is a file, not a directory")


def write_report(
    directory: str,
    summaries: Sequence[dict],
    hw: Platform,
    peers: dict[str, tuple[PeerKernel, ...]] | None = None,
    peers_source: str | None = None,
    problem_options: dict | None = None,
    progress: Progress | None = None,
) -> Path:
    """Write the report of `summaries` (xegen conv's, in batch order; failed layers are entries
    with an `error`) to `directory`; returns the page's path.  `problem_options` are the batch's
    post-ops and layout tags (make_problem's keywords), which identify a layer's problem for its peers."""
    from . import plots  # matplotlib, only now

    failed = [s for s in summaries if "error" in s]
    layers: list[Layer] = []
    for index, summary in enumerate(summaries, 1):
        if "error" in summary:
            continue
        problem = make_problem(summary["problem"], summary["direction"], summary["dt"], **(problem_options or {}))
        layers.append(make_layer(index, summary, hw, (peers or {}).get(problem_key(hw.name, problem), ())))
    ranked = worst_first(layers)
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in [*sorted(folder.glob("layer-[0-9][0-9][0-9].png")), folder / "network.png"]:  # an earlier report's
        stale.unlink(missing_ok=True)
    progress = progress or Progress(len(ranked) + 1, enabled=False)
    if ranked:
        progress.start("report: network.png")
        numbers = [str(rank) for rank in range(1, len(ranked) + 1)]
        plots.roofline_png(
            folder / "network.png",
            [layer.roofs for layer in ranked],
            [
                plots.Series(
                    "xegen, numbered as in the table", [(layer.intensity, layer.attained) for layer in ranked], numbers
                )
            ],
            NETWORK_PIXELS,
        )
    for layer in ranked:
        progress.start(f"report: {layer.anchor}.png")
        series = [plots.Series("xegen", [(layer.intensity, layer.attained)])]
        series += [
            plots.Series(peer.label, [(layer.intensity, layer.rate(peer.cycles))])
            for peer in layer.peers
            if peer.measured
        ]
        plots.roofline_png(folder / f"{layer.anchor}.png", [layer.roofs], series, LAYER_PIXELS)
    progress.clear()
    page = folder / "index.html"
    page.write_text(render(ranked, failed, hw, peers_source, NETWORK_PIXELS, LAYER_PIXELS), encoding="utf-8")
    return page
