"""Compile time: whole-process `xegen conv` against ocloc compiling oneDNN's kernel of the same layer.

For every resnet_50 layer (real sizes, minibatch 1, f32 forward with bias; `--hw`, default
XeHPG), alternating, `--runs` times (default 5), each a whole process timed by its wall clock
(and its CPU seconds, user + system):

- xegen cold: `python -m xegen conv DESC -o K.zebin` (the default summary, with the model) with
  an empty kernel cache;
- xegen warm: the same command again, answered by the kernel cache the cold run filled;
- oneDNN: `ocloc compile` of oneDNN v3.2's `gen9_conv_nhwc_fwd` (the nhwc kernel, xegen's
  layout) with the macros oneDNN's C++ sets for the layer (bench/e2e/onednn.py);
- naive: `ocloc compile` of the one-work-item-per-output OpenCL kernel (bench/e2e/peer.py).

The table gives each layer's medians and the ratio xegen cold / oneDNN; then the whole network
in one process, `xegen conv --batch` of all the layers (empty cache, then warm), against the
sum of the oneDNN medians (ocloc compiling the kernels one by one).  Goals (issue 23): the
median over the layers of xegen cold / oneDNN <= 1, the batch <= 0.5 x ocloc's total, a warm
layer <= 0.2 s.  The load average before and after goes in the JSON (default
bench/compile/results.json, not committed): on a shared machine, run it under `nice` and read
the numbers with the load.

    python bench/compile/run.py
    python bench/compile/run.py --layers 3 --runs 3 --json /tmp/compile.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform as host
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.e2e import onednn, peer  # noqa: E402
from bench.e2e.measure import layer_name, timed_process_cpu  # noqa: E402
from tests.conv.shapes import RESNET  # noqa: E402
from xegen import hw as hwlib  # noqa: E402
from xegen import oracles  # noqa: E402
from xegen.conv import make_problem  # noqa: E402
from xegen.errors import Error  # noqa: E402

SIDES = ("xegen_cold", "xegen_warm", "onednn", "naive")
GOALS = {"cold_ratio": 1.0, "batch_ratio": 0.5, "warm_seconds": 0.2}


def xegen_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "xegen", "conv", *args, "--mb", "1", "--dir", "FWD_B", "--dt", "f32"]


def layer_runs(desc, hw: hwlib.Platform, runs: int, sources: Path, tmp: Path, tree: Path = ROOT) -> dict:
    """One layer's timings (wall and CPU seconds per run, by side), or why a side was not measured."""
    problem = make_problem(desc, "FWD_B", "f32", mb=1)
    seconds: dict[str, list[float]] = {side: [] for side in SIDES}
    cpu: dict[str, list[float]] = {side: [] for side in SIDES}

    def timed(side: str, what: str, command: list[str]) -> None:
        wall, used = timed_process_cpu(what, command, str(tmp), tree)
        seconds[side].append(wall)
        cpu[side].append(used)

    notes: dict[str, str] = {}
    argv: dict[str, list[str]] = {}
    try:
        config = onednn.configure(problem, hw, "nhwc")
        argv["onednn"] = onednn.ocloc_argv(problem, hw, config, sources, "onednn", str(tmp))
    except Error as error:
        notes["onednn"] = str(error)
    (tmp / "peer.cl").write_text(peer.opencl_source(problem))
    argv["naive"] = [
        oracles.find_tool("ocloc"),
        "compile",
        "-file",
        "peer.cl",
        "-device",
        hw.ocloc_device,
        "-output",
        "naive",
        "-output_no_suffix",
        "--format",
        "zebin",
    ]
    for run in range(runs):
        cache = tmp / f"cache{run}"  # empty: the cold run compiles, the warm one reads what it stored
        command = xegen_argv(str(desc), "--hw", hw.name, "-o", "xegen.zebin", "--cache-dir", str(cache))
        timed("xegen_cold", "xegen conv", command)
        cold = (tmp / "xegen.zebin").read_bytes()
        timed("xegen_warm", "xegen conv (warm)", command)
        if (tmp / "xegen.zebin").read_bytes() != cold:
            raise Error(f"{desc}: the kernel cache gave other bytes than the compile")
        for side in ("onednn", "naive"):
            if side in argv:
                timed(side, f"ocloc ({side})", argv[side])
    return {
        "layer": layer_name(desc),
        "descriptor": str(desc),
        "seconds": seconds,
        "median": {side: statistics.median(values) for side, values in seconds.items() if values},
        "cpu_seconds": cpu,
        "cpu_median": {side: statistics.median(values) for side, values in cpu.items() if values},
        "notes": notes,
    }


def batch_runs(layers, hw: hwlib.Platform, runs: int, tmp: Path, tree: Path = ROOT) -> dict:
    """The whole network in one `xegen conv --batch` process: cold (empty cache), then warm."""
    shapes = tmp / "shapes"
    shapes.write_text("".join(f"{desc}\n" for desc in layers))
    seconds: dict[str, list[float]] = {"cold": [], "warm": []}
    cpu: dict[str, list[float]] = {"cold": [], "warm": []}
    for run in range(runs):
        command = xegen_argv(
            "--batch",
            str(shapes),
            "--hw",
            hw.name,
            "-o",
            str(tmp / f"batch{run}"),
            "--cache-dir",
            str(tmp / f"batch-cache{run}"),
        )
        for name, what in (("cold", "xegen conv --batch"), ("warm", "xegen conv --batch (warm)")):
            wall, used = timed_process_cpu(what, command, str(tmp), tree)
            seconds[name].append(wall)
            cpu[name].append(used)
    return {
        "seconds": seconds,
        "median": {name: statistics.median(values) for name, values in seconds.items()},
        "cpu_seconds": cpu,
        "cpu_median": {name: statistics.median(values) for name, values in cpu.items()},
    }


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def summarize(rows: list[dict], batch: dict) -> dict:
    ratios = [row["median"]["xegen_cold"] / row["median"]["onednn"] for row in rows if "onednn" in row["median"]]
    onednn_total = sum(row["median"]["onednn"] for row in rows if "onednn" in row["median"])
    complete = len(ratios) == len(rows)  # the batch compares with ocloc's total only over the same layers
    warm = [row["median"]["xegen_warm"] for row in rows]
    return {
        "median_cold_ratio": statistics.median(ratios) if ratios else None,
        "layers_with_onednn": len(ratios),
        "layers": len(rows),
        "median_cold_seconds": statistics.median(row["median"]["xegen_cold"] for row in rows),
        "median_onednn_seconds": statistics.median(row["median"]["onednn"] for row in rows if "onednn" in row["median"])
        if ratios
        else None,
        "median_warm_seconds": statistics.median(warm),
        "max_warm_seconds": max(warm),
        "onednn_total_seconds": onednn_total,
        "batch_cold_seconds": batch["median"]["cold"],
        "batch_warm_seconds": batch["median"]["warm"],
        "batch_ratio": batch["median"]["cold"] / onednn_total if complete and onednn_total else None,
        "goals": GOALS,
        **_cpu_summary(rows, batch, complete),
    }


def _cpu_summary(rows: list[dict], batch: dict, complete: bool) -> dict:
    """The same figures in CPU seconds (user + system), where the runs recorded them."""
    if not all("cpu_median" in row for row in rows) or "cpu_median" not in batch:
        return {}
    measured = [row["cpu_median"] for row in rows if "onednn" in row["cpu_median"]]
    onednn_total = sum(m["onednn"] for m in measured)
    ratios = [m["xegen_cold"] / m["onednn"] for m in measured]
    return {
        "cpu_median_cold_ratio": statistics.median(ratios) if ratios else None,
        "cpu_median_cold_seconds": statistics.median(row["cpu_median"]["xegen_cold"] for row in rows),
        "cpu_median_onednn_seconds": statistics.median(m["onednn"] for m in measured) if measured else None,
        "cpu_onednn_total_seconds": onednn_total,
        "cpu_batch_cold_seconds": batch["cpu_median"]["cold"],
        "cpu_batch_ratio": batch["cpu_median"]["cold"] / onednn_total if complete and onednn_total else None,
    }


def number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def format_table(rows: list[dict], summary: dict, runs: int) -> str:
    lines = [f"{'layer':<16} {'xegen cold':>10} {'warm':>6} {'oneDNN':>7} {'naive':>6} {'cold/oneDNN':>11}"]
    for row in rows:
        m = row["median"]
        ratio = m["xegen_cold"] / m["onednn"] if "onednn" in m else None
        lines.append(
            f"{row['layer']:<16} {number(m['xegen_cold']):>10} {number(m['xegen_warm']):>6} "
            f"{number(m.get('onednn')):>7} {number(m.get('naive')):>6} {number(ratio):>11}"
            + "".join(f"  ({side}: {note})" for side, note in row["notes"].items())
        )
    s = summary
    lines += [
        f"seconds, medians of {runs} alternating runs, whole processes",
        f"median over {s['layers']} layers: xegen cold / oneDNN {number(s['median_cold_ratio'])} (goal <= 1.0); "
        f"cold {number(s['median_cold_seconds'])} s, oneDNN {number(s['median_onednn_seconds'])} s",
        f"warm cache: median {number(s['median_warm_seconds'], 3)} s, worst {number(s['max_warm_seconds'], 3)} s "
        f"(goal <= 0.2 s)",
        f"batch of all layers in one process: cold {number(s['batch_cold_seconds'])} s, warm "
        f"{number(s['batch_warm_seconds'])} s; ocloc's oneDNN total {number(s['onednn_total_seconds'])} s; "
        f"cold / total {number(s['batch_ratio'])} (goal <= 0.5)",
    ]
    if "cpu_median_cold_seconds" in s:
        lines.append(
            f"CPU seconds (user + system): xegen cold median {number(s['cpu_median_cold_seconds'])} s, oneDNN "
            f"{number(s['cpu_median_onednn_seconds'])} s, median ratio {number(s['cpu_median_cold_ratio'])}; "
            f"batch cold {number(s['cpu_batch_cold_seconds'])} s / ocloc's total "
            f"{number(s['cpu_onednn_total_seconds'])} s = {number(s['cpu_batch_ratio'])}"
        )
    return "\n".join(lines)


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hw", default="xehpg", help="platform (default xehpg)")
    parser.add_argument("--runs", type=int, default=5, help="alternating runs per layer and of the batch (default 5)")
    parser.add_argument("--layers", type=int, default=None, help="only the first N resnet_50 layers")
    parser.add_argument("--onednn-dir", metavar="DIR", help="oneDNN's OpenCL sources (see bench/e2e/onednn.py)")
    parser.add_argument(
        "--xegen",
        metavar="DIR",
        type=Path,
        default=ROOT,
        help="the checkout whose xegen is timed (default this one): compare two commits under the same load",
    )
    parser.add_argument("--json", default=str(ROOT / "bench" / "compile" / "results.json"), help="where to write JSON")
    args = parser.parse_args(argv)
    if args.runs < 1 or (args.layers is not None and args.layers < 1):
        parser.error("--runs and --layers take at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    try:
        hw = hwlib.platform(args.hw)
        sources = onednn.find_sources(args.onednn_dir)
        oracles.find_tool("ocloc")
    except Error as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    layers = RESNET[: args.layers]
    report = {
        "host": host.node(),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "hw": hw.name,
        "runs": args.runs,
        "xegen": str(args.xegen),
        "load_before": load_average(),
    }
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        rows = []
        for desc in layers:
            rows.append(layer_runs(desc, hw, args.runs, sources, tmp, args.xegen))
            print(
                f"{rows[-1]['layer']}: {json.dumps({k: round(v, 3) for k, v in rows[-1]['median'].items()})}",
                file=sys.stderr,
            )
        batch = batch_runs(layers, hw, args.runs, tmp, args.xegen)
    report.update(layers=rows, batch=batch, summary=summarize(rows, batch), load_after=load_average())
    print(format_table(rows, report["summary"], args.runs))
    print(f"load average (1, 5, 15 min): before {report['load_before']}, after {report['load_after']}")
    Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
