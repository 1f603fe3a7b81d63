"""The report's roofline plots, as PNG files (matplotlib's Agg renderer).

No pyplot: a `Figure` on its own Agg canvas, so nothing opens a window or keeps global figures.
Each plot is drawn under matplotlib's default style whatever a matplotlibrc says, and saved
without the Software tag that names matplotlib's version: the same layers give the same bytes.
A `$` in a label is escaped, so it is not read as math.  This module imports matplotlib, so it
is imported only when a report is written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .layers import Roofs

DPI = 100
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


@dataclass(frozen=True)
class Series:
    """Points of one kind of kernel: (arithmetic intensity, G operations per second)."""

    label: str
    points: Sequence[tuple[float, float]]
    numbers: Sequence[str] = field(default=())  # a text beside each point, if any


@contextmanager
def _default_style() -> Iterator[None]:
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        yield


def roofline_png(path: Path, roofs: Sequence[Roofs], series: Sequence[Series], pixels: tuple[int, int]) -> None:
    """Write a log-log roofline plot of `series` under `roofs` to `path`, `pixels` wide and high."""
    xs = [x for s in series for x, _ in s.points] + [r.ridge for r in roofs]
    left, right = min(xs) / 4, max(xs) * 4
    ys = [y for s in series for _, y in s.points if y > 0] + [r.rate(left) for r in roofs]
    bottom, top = min(ys) / 3, max(r.compute for r in roofs) * 3
    with _default_style():
        figure = Figure(figsize=(pixels[0] / DPI, pixels[1] / DPI), dpi=DPI, layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlim(left, right)
        axes.set_ylim(bottom, top)
        for roof in sorted(set(roofs), key=lambda r: (r.compute, r.bandwidth)):  # each distinct roof once
            axes.plot(
                [left, roof.ridge, right],
                [roof.rate(left), roof.compute, roof.compute],
                color="0.25",
                linewidth=1.5,
                label=f"roofs: {roof.compute:,.0f} G ops/s, {roof.bandwidth:,.1f} GB/s",
            )
        for number, s in enumerate(series):
            axes.scatter(
                [x for x, _ in s.points],
                [max(y, bottom) for _, y in s.points],
                label=s.label.replace("$", r"\$"),
                marker=MARKERS[number % len(MARKERS)],
                s=36,
                zorder=3,
            )
            for (x, y), text in zip(s.points, s.numbers, strict=False):
                axes.annotate(text, (x, max(y, bottom)), textcoords="offset points", xytext=(4, 3), fontsize=7)
        axes.set_xlabel("arithmetic intensity (operations per compulsory byte)")
        axes.set_ylabel("modeled rate (G operations / s)")
        axes.grid(True, which="major", linewidth=0.5, color="0.85")
        axes.legend(fontsize=8, loc="upper left")  # above the slanted roof, where no kernel can be
        figure.savefig(path, format="png", metadata={"Software": None})
