"""xegen tune on resnet_50: tuned against the heuristic, against oneDNN, and on one or two workers.

Three parts, each optional (`--parts`):

gains    Per case (default: f32 on XeLP and XeHPG, f16 on XeHPG) and layer (minibatch 1), tune
         with `--budget` configurations (default 64) on `-j` workers and print the heuristic's and
         the tuned configuration's modeled cycles (`xegen.modeling.modeled_cycles`, what the tuner
         minimizes), the gain (heuristic / tuned) and per case its geometric mean.
onednn   For the f32 cases: the tuned kernel against the better of oneDNN v3.2's two OpenCL
         kernels on every layer they run, both priced the way bench/e2e prices every kernel
         (`bench.e2e.measure.modeled`: the same cost model over each kernel's execution counts).
         oneDNN's numbers come from a `bench/e2e/run.py --peer onednn --json FILE` run
         (`--onednn-json FILE`), else are measured here (compiled by ocloc, run and verified in
         the simulator: minutes per layer).  Goal: tuned <= 0.8x the better oneDNN kernel.
timing   Wall time of tuning `--timing-layers` (default four layers, XeHPG f32, `--timing-budget`
         16) on one worker (this process), a pool of two, Ray with one CPU and with two: the
         speed-up of two workers over one, and whether every run found the same winners.

    python bench/tune/run.py                                       # everything (hours)
    python bench/tune/run.py --parts gains,onednn --layers res4a_branch2b,res5a --onednn-json e2e.json
    python bench/tune/run.py --parts timing
    python bench/tune/run.py --scaled --budget 8                   # a quick run on scaled layers

Results go to `--json` (default bench/tune/results.json, not committed).  Wall times depend on the
machine and its load: they are reported, never a verdict.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.e2e import onednn, production  # noqa: E402
from bench.e2e.measure import layer_name, modeled  # noqa: E402
from bench.e2e.run import select_layers  # noqa: E402
from xegen import hw as hwlib  # noqa: E402
from xegen.cli import ArgumentParser  # noqa: E402
from xegen.conv import Descriptor, make_problem  # noqa: E402
from xegen.errors import Error, UnsupportedError  # noqa: E402
from xegen.modeling import tiling  # noqa: E402
from xegen.pipeline import compile_problem  # noqa: E402
from xegen.plan import parse_overrides  # noqa: E402
from xegen.progress import Progress  # noqa: E402
from xegen.tune.backends import Pool, Ray, Serial, make_backend  # noqa: E402
from xegen.tune.tuner import Layer, tune  # noqa: E402

CASES = ("xehpg/f32", "xelp/f32", "xehpg/f16")
TIMING_LAYERS = "res2a_branch2b,res3a_branch2a,res4a_branch2b,res5a_branch2b"
GOAL_ONEDNN, GOAL_SPEEDUP = 0.8, 1.7


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def layers_of(case: str, descs: list[Descriptor]) -> list[Layer]:
    hw, dt = case.split("/")
    return [Layer(make_problem(d, "FWD_B", dt, mb=1), hwlib.platform(hw), (), layer_name(d)) for d in descs]


def run_tuning(layers: list[Layer], backend, budget: int, label: str) -> tuple[list, float]:
    progress = Progress(1)

    def step(name: str, done: int, total: int) -> None:
        progress.finished(done, total, f"{label} {name}")

    started = time.perf_counter()
    results = tune(layers, backend, budget, seed=0, on_progress=step)
    progress.clear()
    return results, time.perf_counter() - started


# gains ----------------------------------------------------------------------------------------


def gains(case: str, descs: list[Descriptor], budget: int, workers: int) -> dict:
    print(f"[{case}] tuning {len(descs)} layers, budget {budget}, {workers} worker(s)", flush=True)
    backend = make_backend(workers)
    try:
        results, seconds = run_tuning(layers_of(case, descs), backend, budget, case)
    finally:
        backend.close()
    rows = []
    print(f"{'layer':<24} {'heuristic':>10} {'tuned':>10} {'gain':>6}  method / tuned config")
    for r in results:
        row = {
            "layer": r.layer.name,
            "problem": str(r.layer.problem),
            "heuristic_cycles": r.heuristic_cycles,
            "tuned_cycles": r.winner_cycles,
            "gain": r.gain,
            "method": r.method,
            "evaluated": r.evaluated,
            "space": r.space,
            "heuristic": str(r.heuristic),
            "tuned": str(r.winner),
            "verified_on": r.verified_on,
            "failed": len(r.failed),
            "rejected": [f"{c}: {why}" for c, why in r.rejected],
            "error": r.error,
        }
        rows.append(row)
        if r.error:
            print(f"{r.layer.name:<24} error: {r.error}")
            continue
        print(
            f"{r.layer.name:<24} {r.heuristic_cycles:>10.0f} {r.winner_cycles:>10.0f} {r.gain:>5.2f}x  "
            f"{r.method}, {r.evaluated}/{r.space}: {r.winner}",
            flush=True,
        )
    mean = geomean([row["gain"] for row in rows if row["gain"]])
    print(
        f"[{case}] geomean gain {mean:.3f}x over {sum(1 for r in rows if r['gain'])} layers, {seconds:.0f} s\n",
        flush=True,
    )
    return {
        "case": case,
        "budget": budget,
        "workers": workers,
        "seconds": seconds,
        "geomean_gain": mean,
        "layers": rows,
    }


# onednn ---------------------------------------------------------------------------------------


def _onednn_from_json(path: str | None) -> dict[tuple[str, str], dict]:
    """(case, layer) -> the e2e row of a `bench/e2e/run.py --peer onednn` JSON file."""
    if not path:
        return {}
    report = json.loads(Path(path).read_text())
    return {(case["hw"] + "/" + case["dt"], row["layer"]): row for case in report["cases"] for row in case["layers"]}


def _best_onednn(row: dict) -> tuple[float | None, str]:
    verified = [(row[side]["device_cycles"], side) for side in production.ONEDNN if row.get(side, {}).get("verified")]
    if not verified:
        reasons = [
            row.get(side, {}).get("unsupported") or row.get(side, {}).get("error") or "not run"
            for side in production.ONEDNN
        ]
        return None, "; ".join(dict.fromkeys(reasons))
    cycles, side = min(verified)
    return cycles, side.removeprefix("onednn_")


def _measure_onednn(problem, hw, sources: Path) -> dict:
    row = {}
    with tempfile.TemporaryDirectory(prefix="xegen-tune-") as tmp:
        for kernel in onednn.KERNELS:
            try:
                config = onednn.configure(problem, hw, kernel)
                row[f"onednn_{kernel}"] = production.onednn_side(problem, hw, config, sources, tmp)
            except UnsupportedError as error:
                row[f"onednn_{kernel}"] = {"unsupported": str(error)}
            except Error as error:
                row[f"onednn_{kernel}"] = {"error": str(error)}
    return row


def priced(problem, hw: str, config: str) -> float:
    """A configuration's kernel priced as bench/e2e prices every kernel (static counts, which
    equal the simulator's: checked on every verified kernel)."""
    compilation = compile_problem(problem, hw, parse_overrides([config]))  # (plan=first is a word, not a number)
    compiled = compilation.compiled
    executions = compiled.executions(compilation.kernel.grid)
    return modeled(
        problem,
        compilation.zebin(),
        compiled.name,
        compiled.hw,
        executions,
        compiled.local_size,
        tiling(compilation),
        compilation.config.plan,
    )["device_cycles"]


def against_onednn(gained: dict, peers: dict, sources: Path | None) -> dict:
    case = gained["case"]
    hw_name = case.split("/")[0]
    hw = hwlib.platform(hw_name)
    print(f"[{case}] tuned xegen vs the better oneDNN kernel (priced as bench/e2e prices them)", flush=True)
    print(f"{'layer':<24} {'heuristic':>10} {'tuned':>10} {'oneDNN':>10} {'kernel':>8} {'heur/oD':>8} {'tuned/oD':>8}")
    rows = []
    for layer in gained["layers"]:
        if layer["error"]:
            continue
        problem = make_problem(layer["problem"].split()[-1], "FWD_B", "f32")
        peer = peers.get((case, layer["layer"]))
        if peer is None and sources is not None:
            peer = _measure_onednn(problem, hw, sources)
        if peer is None:
            print(f"{layer['layer']:<24} no oneDNN numbers (give --onednn-json)")
            continue
        best, kernel = _best_onednn(peer)
        if best is None:
            print(f"{layer['layer']:<24} oneDNN does not run it: {kernel}")
            rows.append({"layer": layer["layer"], "onednn": None, "why": kernel})
            continue
        heuristic = priced(problem, hw_name, layer["heuristic"])
        tuned = priced(problem, hw_name, layer["tuned"])
        rows.append(
            {
                "layer": layer["layer"],
                "heuristic_cycles": heuristic,
                "tuned_cycles": tuned,
                "onednn": best,
                "onednn_kernel": kernel,
                "heuristic_ratio": heuristic / best,
                "tuned_ratio": tuned / best,
            }
        )
        mark = "" if tuned / best <= GOAL_ONEDNN else "  > goal"
        print(
            f"{layer['layer']:<24} {heuristic:>10.0f} {tuned:>10.0f} {best:>10.0f} {kernel:>8} "
            f"{heuristic / best:>8.2f} {tuned / best:>8.2f}{mark}",
            flush=True,
        )
    ratios = [r["tuned_ratio"] for r in rows if r.get("onednn")]
    met = sum(1 for v in ratios if v <= GOAL_ONEDNN)
    print(
        f"[{case}] tuned / best oneDNN: geomean {geomean(ratios) or float('nan'):.2f}, worst "
        f"{max(ratios, default=float('nan')):.2f}; <= {GOAL_ONEDNN} on {met} of {len(ratios)} layers\n",
        flush=True,
    )
    return {
        "case": case,
        "layers": rows,
        "geomean": geomean(ratios),
        "worst": max(ratios, default=None),
        "met": met,
        "supported": len(ratios),
    }


# timing ---------------------------------------------------------------------------------------


def timing(descs: list[Descriptor], budget: int) -> dict:
    layers = layers_of("xehpg/f32", descs)
    print(f"[timing] tuning {len(layers)} XeHPG f32 layers, budget {budget}, on 1 and 2 workers", flush=True)
    runs = {}
    for label, make in (
        ("1 worker (this process)", lambda: Serial()),
        ("pool of 2", lambda: Pool(2)),
        ("Ray, 1 CPU", lambda: Ray("local", 1)),
        ("Ray, 2 CPUs", lambda: Ray("local", 2)),
    ):
        try:
            backend = make()
        except Error as error:
            print(f"  {label:<24} not run: {error}")
            continue
        try:
            results, seconds = run_tuning(layers, backend, budget, label)
        finally:
            backend.close()
        runs[label] = {"seconds": seconds, "winners": [(r.layer.name, str(r.winner), r.winner_cycles) for r in results]}
        print(f"  {label:<24} {seconds:>8.1f} s", flush=True)
    base = runs.get("1 worker (this process)")
    summary = {"layers": [layer.name for layer in layers], "budget": budget, "runs": runs}
    if base:
        same = all(run["winners"] == base["winners"] for run in runs.values())
        summary["same_winners"] = same
        for two, one in (("pool of 2", "1 worker (this process)"), ("Ray, 2 CPUs", "Ray, 1 CPU")):
            if two in runs and one in runs:
                summary[f"speedup {two} / {one}"] = runs[one]["seconds"] / runs[two]["seconds"]
                print(f"  speed-up {two} over {one}: {summary[f'speedup {two} / {one}']:.2f}x (goal >= {GOAL_SPEEDUP})")
        print(f"  same winners in every run: {'yes' if same else 'NO'}\n", flush=True)
    return summary


def parse_arguments(argv):
    parser = ArgumentParser(
        prog="bench/tune/run.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", default="gains,onednn,timing", help="comma-separated: gains, onednn, timing")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated of {', '.join(CASES)}")
    parser.add_argument("--layers", default="", help="substrings of resnet_50 layer names, descriptors, or all")
    parser.add_argument("--scaled", action="store_true", help="layers scaled down as in the tests")
    parser.add_argument("--budget", type=int, default=64, help="configurations per layer (default 64)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="worker processes for the gains part (default 2)")
    parser.add_argument("--onednn-json", metavar="FILE", help="a bench/e2e/run.py --peer onednn --json FILE")
    parser.add_argument("--onednn-dir", metavar="DIR", help="oneDNN's sources, to measure oneDNN here")
    parser.add_argument("--timing-layers", default=TIMING_LAYERS, help=f"default {TIMING_LAYERS}")
    parser.add_argument("--timing-budget", type=int, default=16, help="configurations per layer when timing")
    parser.add_argument(
        "--gains-from",
        metavar="FILE",
        help="the onednn part without the gains part: take the tuned layers from an earlier --json",
    )
    parser.add_argument("--json", default=str(ROOT / "bench" / "tune" / "results.json"), help="where to write JSON")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_arguments(argv)
    parts = set(filter(None, args.parts.split(",")))
    try:
        unknown = parts - {"gains", "onednn", "timing"} or set(filter(None, args.cases.split(","))) - set(CASES)
        if unknown:
            raise Error(f"unknown part or case '{sorted(unknown)[0]}'")
        descs = select_layers(args.layers, args.scaled)
        timing_descs = select_layers(args.timing_layers, args.scaled)
        sources = None
        if "onednn" in parts and not args.onednn_json:
            sources = onednn.find_sources(args.onednn_dir)
    except Error as error:
        sys.stderr.write(f"xegen: error: {error}\n")
        return 2
    report: dict = {"budget": args.budget, "scaled": args.scaled, "cases": []}
    peers = _onednn_from_json(args.onednn_json)
    earlier = {}
    if args.gains_from:
        earlier = {c["gains"]["case"]: c["gains"] for c in json.loads(Path(args.gains_from).read_text())["cases"]}
    for case in filter(None, args.cases.split(",")):
        if not parts & {"gains", "onednn"}:
            break
        gained = gains(case, descs, args.budget, args.jobs) if "gains" in parts else earlier.get(case)
        if gained is None:
            continue
        entry = {"gains": gained}
        if "onednn" in parts and case.endswith("/f32"):
            entry["onednn"] = against_onednn(gained, peers, sources)
        report["cases"].append(entry)
        Path(args.json).write_text(json.dumps(report, indent=2, default=str) + "\n")  # what a long run has so far
    if "timing" in parts:
        report["timing"] = timing(timing_descs, args.timing_budget)
    Path(args.json).write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
