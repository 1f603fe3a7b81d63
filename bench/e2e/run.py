"""xegen against its peers, layer by layer of resnet_50: compile time, inner loop, modeled cycles.

Two tables: against the naive OpenCL C kernel compiled by IGC (`--peer igc`, the default, below),
or against oneDNN v3.2's production OpenCL convolutions (`--peer onednn`, production.py).

--peer igc

For every layer of tests/data/shapes_resnet_50 at minibatch 1 and every case of issue 8's
acceptance matrix (the cases of tests/test_end_to_end.py):

    XeHPG  forward f32, f16, bf16, int8 (u8:s8:f32, s8:s8:s32); backward-data f32, bf16;
           backward-weights (with bias) f32, bf16
    XeLP   forward f32, int8 (u8:s8:f32, s8:s8:s32)
    XeHPC  forward bf16

side by side in one run:

- compile time of the whole process: `xegen conv DESC -o K.zebin --no-model` against
  `ocloc compile` of the equivalent direct convolution in OpenCL C (bench/e2e/peer.py, one kernel
  per direction; bf16 stored as ushort and converted in the kernel);
- inner-loop instructions and math density (FMA instructions / instructions of the loop) of both
  binaries, counted the same way (`xegen.emit.analysis` on the decoded zebins);
- modeled device cycles of both under the same model (`xegen.emit.cost` over the per-instruction
  execution counts of a simulator run of the whole grid, with the layer's workload and each
  kernel's tiling from its launch) and the fraction of the platform's peak that means.

Both kernels run in that simulator run on the same random inputs and are checked against numpy
within conv.check's tolerances; xegen's kernel also under the simulator's SWSB hazard checks
(IGC's SWSB is IGC's business: its numbers alone are checked).

Prints a table per case and a summary line per case (medians over its layers of the math-density
ratio xegen/IGC, goal >= 5, and of the compile-time ratio xegen/ocloc, goal <= 1); writes JSON
(default bench/e2e/results.json, not committed).  Exit status 1 if a kernel failed to compile or
verify, 2 for bad arguments.

    python bench/e2e/run.py                                        # every case, every layer
    python bench/e2e/run.py --scaled                               # the same, layers scaled down
    python bench/e2e/run.py --cases 'xehpg/fwd_b/*' --layers res2a,res3a --json /tmp/e2e.json
    python bench/e2e/run.py --cases 'xelp/*,*/bwd_*/bf16' --layers res5a_branch2a

--peer onednn

For the f32 forward cases among those selected (default: XeLP and XeHPG), per layer: xegen, oneDNN's
gen9_conv_nhwc_fwd (nhwc) and gen9_conv_fwd (nChw16c) compiled by ocloc with the macros oneDNN's C++
sets, and the naive IGC kernel; each run in the simulator over its whole grid, checked against
numpy, and counted: instructions, inner-loop instructions, sends, FMA instructions, modeled cycles
with their bound and roofline fraction (the same model for every kernel: the layer's workload, each
kernel's tiling from its launch), xegen's cycles over each kernel's.  Summary per case: geometric
mean and worst of xegen / the better oneDNN kernel.  A kernel oneDNN would not run for a layer is
listed with the reason.  oneDNN's sources are read from --onednn-dir, $XEGEN_ONEDNN_OCL or
shared/peers/onednn-v3.2-ocl beside a parent of this checkout.

    python bench/e2e/run.py --peer onednn --layers all
    python bench/e2e/run.py --peer onednn --cases xelp/fwd_b/f32 --layers res2a_branch2b,res4a_branch2b
    python bench/e2e/run.py --peer onednn --layers mb1ic256ih56oc128oh56kh1ph0   # a layer of one's own

--layers takes substrings of resnet_50 layer names, benchdnn descriptors, or 'all' (the default).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import platform as host
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.e2e import onednn, production  # noqa: E402
from bench.e2e.measure import CASES, Case, layer_name, peer_side, xegen_side  # noqa: E402
from tests.conv.shapes import RESNET, scaled, short_name  # noqa: E402
from xegen import hw as hwlib  # noqa: E402
from xegen import oracles  # noqa: E402
from xegen.cli import ArgumentParser  # noqa: E402
from xegen.conv import Descriptor, parse_descriptor  # noqa: E402
from xegen.errors import Error, ParseError  # noqa: E402

DIRECTION_WORDS = {"FWD_B": "forward", "BWD_D": "backward-data", "BWD_WB": "backward-weights (with bias)"}


def _selected(patterns: str, names: list[str], matches, what: str) -> set[str]:
    """The names matching any of the comma-separated `patterns` (all names if there are none);
    a pattern that matches nothing is an error."""
    wanted = [p for p in patterns.split(",") if p]
    chosen = set()
    for pattern in wanted:
        hits = {name for name in names if matches(name, pattern)}
        if not hits:
            raise Error(f"no {what} matches '{pattern}' (the {what}s: {', '.join(names)})")
        chosen |= hits
    return chosen if wanted else set(names)


def select_cases(patterns: str) -> list[Case]:
    """Cases whose name (hw/direction/dt) matches one of the shell-style patterns."""
    chosen = _selected(patterns, [c.name for c in CASES], fnmatch.fnmatchcase, "case")
    return [c for c in CASES if c.name in chosen]


def select_layers(items: str, scale: bool) -> list[Descriptor]:
    """The layers the comma-separated items name, real size or scaled as in the tests: substrings
    of resnet_50 layer names, benchdnn descriptors (layers of one's own, after resnet_50's, in the
    order given), or 'all' (also the default)."""
    names, own = [], []
    for item in filter(None, items.split(",")):
        try:
            desc = parse_descriptor(item)
            own.append(desc if desc.name else replace(desc, name=item))
        except ParseError:
            names.append(item)
    every = "all" in names or not (names or own)
    chosen = (
        _selected(
            "" if every else ",".join(names), [short_name(d) for d in RESNET], lambda name, part: part in name, "layer"
        )
        if every or names
        else set()
    )
    return [scaled(d) if scale else d for d in [*(d for d in RESNET if short_name(d) in chosen), *own]]


def measure(desc: Descriptor, case: Case) -> dict:
    """One row: both sides of one layer and case (a failure is recorded, not raised)."""
    started = time.perf_counter()
    row: dict = {"layer": layer_name(desc), "descriptor": str(desc)}
    try:
        problem = case.problem(desc)
        row["problem"] = str(problem.desc)  # what `xegen conv --report-peers` matches a layer by
        with tempfile.TemporaryDirectory(prefix="xegen-e2e-") as tmp:
            row["xegen"] = xegen_side(problem, case, tmp)
            row["igc"] = peer_side(problem, case, tmp)
    except Error as error:
        row["error"] = str(error)
    row["bench_seconds"] = time.perf_counter() - started
    return row


def passed(row: dict) -> bool:
    return "error" not in row and row["xegen"]["verified"] and row["igc"]["verified"]


def format_row(row: dict) -> str:
    if "error" in row:
        return f"{row['layer']:<28} error: {row['error']}"
    ours, theirs = row["xegen"], row["igc"]

    def pair(key: str, form: str) -> str:
        def show(side: dict) -> str:
            value = side.get(key)
            if value is None:
                return "-"
            marked = key == "math_density" and side["unrolled"]
            return format(value, form) + ("*" if marked else "")

        return f"{show(ours):>8} {show(theirs):>8}"

    verified = "ok" if passed(row) else "FAILED"
    return (
        f"{row['layer']:<28} {pair('compile_seconds', '.2f')} {pair('inner_loop_instructions', 'd')} "
        f"{pair('math_density', '.3f')} {pair('device_cycles', '.0f')} "
        f"{pair('peak_fraction', '.1%')} {verified:>6}"
    )


HEADER = (
    f"{'layer':<28} {'compile s':>17} {'inner-loop insts':>17} {'math density':>17} {'modeled cycles':>17} "
    f"{'of peak':>17} {'check':>6}\n{'':<28} " + " ".join(["   xegen      IGC"] * 5)
)


def _median_ratio(rows: list[dict], key: str) -> float | None:
    ratios = [row["xegen"][key] / row["igc"][key] for row in rows if "error" not in row and row["igc"][key]]
    return statistics.median(ratios) if ratios else None


def summarize(case: Case, rows: list[dict]) -> dict:
    return {
        "case": case.name,
        "layers": len(rows),
        "passed": sum(passed(r) for r in rows),
        "median_density_ratio": _median_ratio(rows, "math_density"),
        "median_compile_time_ratio": _median_ratio(rows, "compile_seconds"),
    }


def format_summary(summary: dict) -> str:
    def ratio(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}x"

    return (
        f"{summary['case']:<22} {summary['passed']:>3}/{summary['layers']:<3} verified   "
        f"density xegen/IGC {ratio(summary['median_density_ratio']):>7}   "
        f"compile time xegen/ocloc {ratio(summary['median_compile_time_ratio']):>7}"
    )


def run_case(case: Case, layers: list[Descriptor], scale: bool) -> dict:
    hw = hwlib.platform(case.hw)
    size = "scaled (as in the tests)" if scale else "at minibatch 1"
    print(
        f"resnet_50 {DIRECTION_WORDS[case.direction]} {case.dt} {size} on {hw.display_name}: "
        f"xegen vs IGC (ocloc, OpenCL C peer)  [{case.name}]"
    )
    print(HEADER)
    rows = []
    for desc in layers:
        rows.append(measure(desc, case))
        print(format_row(rows[-1]), flush=True)
    summary = summarize(case, rows)
    print(format_summary(summary) + "\n", flush=True)
    return {
        "case": case.name,
        "hw": hw.name,
        "direction": case.direction,
        "dt": case.dt,
        "kernels": {"xegen": "xegen", "igc": "IGC naive"},
        "layers": rows,
        "summary": summary,
    }


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = ArgumentParser(
        prog="bench/e2e/run.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--peer",
        choices=("igc", "onednn"),
        default="igc",
        help="igc: the naive OpenCL C kernel (default); onednn: oneDNN v3.2's production OpenCL "
        "kernels, the naive one beside them",
    )
    parser.add_argument(
        "--cases",
        default="",
        help="comma-separated shell patterns of case names hw/direction/dt, "
        "e.g. 'xehpg/fwd_b/f32', 'xelp/*', '*/bwd_*/bf16' (default: all 13; with --peer onednn "
        f"the f32 forward ones among them, default {production.DEFAULT_CASES})",
    )
    parser.add_argument(
        "--layers",
        default="",
        help="comma-separated substrings of layer names, benchdnn "
        "descriptors of layers of your own, or 'all' (default: all 20)",
    )
    parser.add_argument(
        "--scaled",
        action="store_true",
        help="layers scaled down as in the tests (at most 4x4 outputs, channels / 8): a quick run",
    )
    parser.add_argument(
        "--onednn-dir",
        metavar="DIR",
        help="oneDNN's OpenCL sources for --peer onednn (the folder with src/gpu/ocl/; default "
        f"${onednn.ENVIRONMENT}, else {onednn.PEER_FOLDER} beside a parent of this checkout)",
    )
    parser.add_argument("--json", default=str(ROOT / "bench" / "e2e" / "results.json"), help="where to write JSON")
    return parser.parse_args(argv)


FOOTNOTE = """\
inner-loop instructions '-': no loop around the multiplies (fully unrolled); math density then
counts the whole kernel (marked *).  Modeled cycles: xegen.emit.cost over a simulator run of the grid.
Summary: medians over the layers; goals density xegen/IGC >= 5x, compile time xegen/ocloc <= 1x."""


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    try:
        layers = select_layers(args.layers, args.scaled)
        if args.peer == "onednn":
            cases = production.select_cases(select_cases(args.cases or production.DEFAULT_CASES))
            sources = onednn.find_sources(args.onednn_dir)
        else:
            cases = select_cases(args.cases)
        ocloc = oracles.find_tool("ocloc")
        if Path(args.json).is_dir() or not Path(args.json).resolve().parent.is_dir():  # now, not after the run
            raise Error(f"--json {args.json}: not a file in an existing directory")
    except Error as error:
        sys.stderr.write(f"xegen: error: {error}\n")
        return 2
    report = {
        "host": host.node(),
        "python": sys.version.split()[0],
        "ocloc": ocloc,
        "scaled": args.scaled,
        "peer": args.peer,
    }
    if args.peer == "onednn":
        results = [production.run_case(case, layers, args.scaled, sources) for case in cases]
        print(production.FOOTNOTE)
        summaries, ok = (
            production.format_summary,
            not any(production.failed(row) for r in results for row in r["layers"]),
        )
        report["onednn_sources"] = str(sources)
    else:
        results = [run_case(case, layers, args.scaled) for case in cases]
        print(FOOTNOTE)
        summaries, ok = format_summary, all(passed(row) for r in results for row in r["layers"])
    for result in results:
        print(summaries(result["summary"]))
    Path(args.json).write_text(json.dumps({**report, "cases": results}, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
