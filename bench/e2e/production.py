"""The e2e table against oneDNN's production OpenCL kernels (`run.py --peer onednn`).

Per layer of a case (f32 forward with bias, minibatch 1, XeLP or XeHPG), four kernels run in
xegen's simulator over their whole grids on the same random inputs and are checked against numpy:
xegen's, oneDNN v3.2's `gen9_conv_nhwc_fwd` and `gen9_conv_fwd` (compiled by ocloc with the macros
oneDNN's C++ would set, onednn.py), and the naive one-work-item-per-output OpenCL kernel
(peer.py).  Each gets its static counts (instructions, inner-loop instructions, sends, FMA
instructions) and its modeled cycles under `xegen.emit.cost` over the run's per-instruction
execution counts, the same model for every binary (measure.modeled: the layer's workload, each
kernel's tiling from its own launch), with the bound the model names and the roofline fraction
(the problem's own lower bound / the kernel's cycles).  A kernel's numbers count only when its
result verified.

The ratio column is xegen's modeled cycles over the kernel's (> 1: xegen is slower); on xegen's
own line, over the better of the two oneDNN kernels.  The summary gives that ratio's geometric
mean and worst layer per case.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.e2e import onednn
from bench.e2e.measure import SEED, Case, layer_name, modeled, peer_side, timed_process, xegen_side
from xegen import hw as hwlib
from xegen.conv import Descriptor
from xegen.conv.check import compare, random_inputs
from xegen.conv.problem import Problem
from xegen.errors import Error, UnsupportedError
from xegen.progress import Progress

DEFAULT_CASES = "xelp/fwd_b/f32,xehpg/fwd_b/f32"
ONEDNN = tuple(f"onednn_{kernel}" for kernel in onednn.KERNELS)
SIDES = ("xegen", *ONEDNN, "igc")
LABELS = {"xegen": "xegen", "onednn_nhwc": "oneDNN nhwc", "onednn_blocked": "oneDNN blocked", "igc": "IGC naive"}


def select_cases(cases: list[Case]) -> list[Case]:
    """The cases oneDNN's kernels run: f32 forward with bias."""
    chosen = [c for c in cases if c.direction == "FWD_B" and c.dt == "f32"]
    if not chosen:
        raise Error(
            f"--peer onednn runs f32 forward cases ({DEFAULT_CASES}); none of {', '.join(c.name for c in cases)} is one"
        )
    return chosen


def onednn_side(problem: Problem, hw: hwlib.Platform, config: onednn.Config, sources: Path, tmp: str) -> dict:
    """One oneDNN kernel, compiled by ocloc with oneDNN's macros, run and checked in the simulator."""
    name = f"onednn_{config.kernel}"
    argv = onednn.ocloc_argv(problem, hw, config, sources, name, tmp)
    seconds = timed_process(f"ocloc compile of oneDNN's {config.kernel_name}", argv, tmp)
    zebin = Path(tmp, name).read_bytes()
    tensors = random_inputs(problem, SEED)
    try:
        got, padding, result = onednn.simulate(problem, config, zebin, hw, tensors)
    except Error as error:
        raise Error(f"xegen's simulator: {error}") from None
    comparisons = compare(problem, got, tensors)
    padding_zero = bool(np.all(padding == 0))  # oneDNN's blocked layouts keep their padding zero
    return {
        "compile_seconds": seconds,
        "config": config.describe(),
        "macros": onednn.macros(problem, config),
        **modeled(
            problem, zebin, config.kernel_name, hw, result.executions, config.local_size, onednn.tiling(problem, config)
        ),
        "verify": [str(c) for c in comparisons] + ([] if padding_zero else ["dst channel padding not zero"]),
        "verified": all(c.ok for c in comparisons) and padding_zero,
    }


def _measure_side(side: str, desc: Descriptor, case: Case, sources: Path, tmp: str) -> dict:
    """One kernel of a row.  What stops it is recorded, not raised: "unsupported" when the
    compiler (xegen, oneDNN's C++, the naive peer) would not take the layer, "error" when a kernel
    it takes fails to compile or to run."""
    hw = hwlib.platform(case.hw)
    try:
        problem = case.problem(desc)
        if side == "xegen":
            return xegen_side(problem, case, tmp)
        if side == "igc":
            return peer_side(problem, case, tmp)
        config = onednn.configure(problem, hw, side.removeprefix("onednn_"))
    except UnsupportedError as error:
        return {"unsupported": str(error)}
    except Error as error:
        return {"error": str(error)}
    try:
        return onednn_side(problem, hw, config, sources, tmp)
    except Error as error:
        return {"error": str(error)}


def verified(side: dict) -> bool:
    return side.get("verified", False)


def ratios(row: dict) -> dict[str, float]:
    """xegen's modeled cycles over each verified peer's, and over the better oneDNN kernel's
    ("best_onednn"); empty when xegen's kernel did not verify."""
    ours = row["xegen"]
    if not verified(ours):
        return {}
    result = {side: ours["device_cycles"] / row[side]["device_cycles"] for side in SIDES[1:] if verified(row[side])}
    onednn_cycles = [row[side]["device_cycles"] for side in ONEDNN if verified(row[side])]
    if onednn_cycles:
        result["best_onednn"] = ours["device_cycles"] / min(onednn_cycles)
    return result


def measure(desc: Descriptor, case: Case, sources: Path, progress: Progress) -> dict:
    """One layer: its four kernels (a failure or an unsupported kernel is recorded in its side)."""
    started = time.perf_counter()
    row: dict = {"layer": layer_name(desc), "descriptor": str(desc)}
    try:
        row["problem"] = str(case.problem(desc).desc)  # what `xegen conv --report-peers` matches a layer by
    except Error:
        pass  # the sides say why
    with tempfile.TemporaryDirectory(prefix="xegen-e2e-") as tmp:
        for side in SIDES:
            progress.start(f"{case.name} {row['layer']}: {LABELS[side]}")
            row[side] = _measure_side(side, desc, case, sources, tmp)
    row["ratios"] = ratios(row)
    row["bench_seconds"] = time.perf_counter() - started
    return row


def failed(row: dict) -> bool:
    """A kernel failed to compile or to verify (unsupported is not a failure)."""
    return any("unsupported" not in row[side] and not verified(row[side]) for side in SIDES)


def _number(value, form: str) -> str:
    return "-" if value is None else format(value, form)


class Table:
    """The rows of one case, printed as they come, under a header printed first."""

    NAME = 24

    def header(self) -> str:
        return (
            f"{'layer':<{self.NAME}} {'kernel':<15} {'insts':>6} {'inner':>6} {'sends':>6} {'FMAs':>6} "
            f"{'modeled cycles':>14} {'bound':<10} {'roofline':>8} {'ratio':>6} {'check':>6}"
        )

    def lines(self, row: dict) -> list[str]:
        out = []
        name = row["layer"]
        if len(name) > self.NAME:  # a long name gets a line of its own
            out.append(name)
            name = ""
        for side in SIDES:
            s = row[side]
            start = f"{name if side == 'xegen' else '':<{self.NAME}} {LABELS[side]:<15}"
            if "unsupported" in s or "error" in s:
                out.append(
                    f"{start} not run: {s['unsupported']}" if "unsupported" in s else f"{start} error: {s['error']}"
                )
                continue
            ratio = row["ratios"].get("best_onednn" if side == "xegen" else side)
            mark = "*" if side == "xegen" and ratio is not None else " "
            out.append(
                f"{start} {s['instructions']:>6} {_number(s['inner_loop_instructions'], 'd'):>6} "
                f"{s['sends']:>6} {s['fmas']:>6} {s['device_cycles']:>14.0f} {s['bound']:<10} "
                f"{_number(s['roofline_fraction'], '.1%'):>8} {_number(ratio, '.2f'):>5}{mark} "
                f"{'ok' if verified(s) else 'FAILED':>6}"
            )
        return out


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summarize(case: Case, rows: list[dict]) -> dict:
    """Per case: how many layers ran each kernel and verified; geometric mean and worst of xegen's
    cycles over each peer's (and over the better oneDNN kernel's)."""
    result = {
        "case": case.name,
        "layers": len(rows),
        "verified": {side: sum(verified(r[side]) for r in rows) for side in SIDES},
        "unsupported": {side: sum("unsupported" in r[side] for r in rows) for side in SIDES},
    }
    for key in ("best_onednn", *SIDES[1:]):
        measured = [(r["ratios"][key], r["layer"]) for r in rows if key in r["ratios"]]
        worst = max(measured, default=None)
        result[key] = {
            "layers": len(measured),
            "geomean": _geomean([v for v, _ in measured]),
            "worst": worst[0] if worst else None,
            "worst_layer": worst[1] if worst else None,
        }
    return result


def format_summary(summary: dict) -> str:
    best = summary["best_onednn"]
    counted = ", ".join(f"{LABELS[side]} {summary['verified'][side]}" for side in SIDES)
    lines = [f"{summary['case']}: verified of {summary['layers']} layers: {counted}"]
    if best["geomean"] is None:
        lines.append("  xegen / best oneDNN: no layer with xegen and a oneDNN kernel verified")
    else:
        lines.append(
            f"  xegen / best oneDNN: geomean {best['geomean']:.2f}, worst {best['worst']:.2f} "
            f"({best['worst_layer']}), over {best['layers']} layers"
        )
    others = ", ".join(
        f"{LABELS[side]} {summary[side]['geomean']:.2f}" for side in SIDES[1:] if summary[side]["geomean"] is not None
    )
    if others:
        lines.append(f"  geomeans of xegen / {others}")
    return "\n".join(lines)


def run_case(case: Case, layers: list[Descriptor], scale: bool, sources: Path) -> dict:
    hw = hwlib.platform(case.hw)
    size = "scaled (as in the tests)" if scale else "at minibatch 1"
    print(
        f"resnet_50 forward f32 with bias {size} on {hw.display_name}: xegen vs oneDNN v3.2's OpenCL kernels "
        f"vs the naive IGC peer  [{case.name}]",
        flush=True,
    )
    table, progress, rows = Table(), Progress(len(layers) * len(SIDES)), []
    print(table.header(), flush=True)
    for desc in layers:
        rows.append(measure(desc, case, sources, progress))
        progress.clear()
        print("\n".join(table.lines(rows[-1])), flush=True)
    summary = summarize(case, rows)
    print(format_summary(summary) + "\n", flush=True)
    return {
        "case": case.name,
        "hw": hw.name,
        "direction": case.direction,
        "dt": case.dt,
        "kernels": LABELS,
        "layers": rows,
        "summary": summary,
    }


FOOTNOTE = """\
insts, sends, FMAs: the binary's instructions; inner: the inner loop's ('-': no loop around the multiplies).
Modeled cycles: xegen.emit.cost over the simulator's per-instruction execution counts of the whole grid, the
same model for every kernel (the layer's workload, each kernel's tiling from its launch); bound: the term
they are; roofline: the layer's roofline cycles (max of FMA peak and compulsory bytes at DRAM bandwidth) /
the kernel's.  ratio: xegen's modeled cycles / the kernel's (> 1: xegen is slower); on xegen's line (*)
over the better oneDNN kernel's.  Only verified kernels count."""
