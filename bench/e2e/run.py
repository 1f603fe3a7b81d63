"""xegen against IGC, layer by layer of resnet_50: compile time, inner loop, modeled cycles.

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
  execution counts of a simulator run of the whole grid) and the fraction of the platform's peak
  that means.

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
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import platform as host
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.e2e import peer  # noqa: E402
from tests.conv.shapes import RESNET, scaled, short_name  # noqa: E402
from tests.test_end_to_end import CONFIGS as ACCEPTANCE_MATRIX  # noqa: E402
from xegen import hw as hwlib  # noqa: E402
from xegen import oracles  # noqa: E402
from xegen.cli import ArgumentParser  # noqa: E402
from xegen.conv import Descriptor, make_problem  # noqa: E402
from xegen.conv.check import compare, random_inputs  # noqa: E402
from xegen.conv.problem import Problem  # noqa: E402
from xegen.emit.analysis import kernel_counts  # noqa: E402
from xegen.emit.cost import kernel_cycles  # noqa: E402
from xegen.emit.decoder import decode_with_sizes  # noqa: E402
from xegen.emit.zebin import read_zebin  # noqa: E402
from xegen.errors import Error  # noqa: E402
from xegen.pipeline import compile_problem  # noqa: E402
from xegen.report import peak_fraction  # noqa: E402
from xegen.verify import verify  # noqa: E402

SEED = 0
DIRECTION_WORDS = {"FWD_B": "forward", "BWD_D": "backward-data", "BWD_WB": "backward-weights (with bias)"}


@dataclass(frozen=True)
class Case:
    """One cell kind of the matrix: a platform, a direction and data types."""

    hw: str
    direction: str
    dt: str

    @property
    def name(self) -> str:
        return f"{self.hw}/{self.direction.lower()}/{self.dt}"

    def problem(self, desc: Descriptor) -> Problem:
        return make_problem(desc, self.direction, self.dt, mb=1)


# the acceptance matrix, as the end-to-end tests run it
CASES = tuple(Case(*fields) for fields in ACCEPTANCE_MATRIX)


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


def select_layers(substrings: str, scale: bool) -> list[Descriptor]:
    """Layers whose name contains one of the substrings, real size or scaled as in the tests."""
    chosen = _selected(substrings, [short_name(d) for d in RESNET], lambda name, part: part in name, "layer")
    return [scaled(d) if scale else d for d in RESNET if short_name(d) in chosen]


def timed_process(what: str, argv: list[str], cwd: str) -> float:
    """Wall-clock seconds of a whole process; a failure is an Error quoting its first error line."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    # Timed as an installed package runs: from cached bytecode, not recompiling xegen's sources
    # in every process (which PYTHONDONTWRITEBYTECODE=1 would make it do).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.perf_counter()
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        lines = (result.stderr + result.stdout).strip().splitlines() or [f"exit status {result.returncode}"]
        raise Error(f"{what} failed: {next((line for line in lines if 'error:' in line.lower()), lines[-1])}")
    return seconds


def binary_counts(zebin: bytes, kernel: str, hw: hwlib.Platform) -> tuple[list, dict]:
    """Counts of a binary; `math_density` is the inner loop's, or the whole kernel's when the
    compiler unrolled every loop around the multiplies (`unrolled`)."""
    instructions, sizes = decode_with_sizes(read_zebin(zebin).kernel(kernel).code, hw)
    counts = kernel_counts(instructions, sizes)
    unrolled = counts.inner is None
    density = (counts.total if unrolled else counts.inner).math_density
    return instructions, {**counts.as_dict(), "math_density": density, "unrolled": unrolled}


def modeled(problem: Problem, zebin: bytes, kernel: str, hw: hwlib.Platform, executions, group_threads: int) -> dict:
    """Counts, modeled cycles and fraction of peak of a binary run in the simulator, whose thread
    groups of `group_threads` threads each share one subslice (as `xegen conv` models them)."""
    instructions, counts = binary_counts(zebin, kernel, hw)
    cycles = kernel_cycles(instructions, executions, hw, group_threads=group_threads)
    return {**counts, "modeled": cycles.as_dict(), "device_cycles": cycles.device,
            "peak_fraction": peak_fraction(problem, hw, cycles)}


def xegen_side(problem: Problem, case: Case, tmp: str) -> dict:
    argv = [sys.executable, "-m", "xegen", "conv", str(problem.desc), "--mb", "1", "--dir", case.direction,
            "--dt", case.dt, "--hw", case.hw, "-o", "xegen.zebin", "--no-model"]
    seconds = timed_process("xegen conv", argv, tmp)
    compilation = compile_problem(problem, case.hw)
    zebin = compilation.zebin()
    if zebin != Path(tmp, "xegen.zebin").read_bytes():
        raise Error(f"{problem.desc}: the command and the library compiled different bytes")
    checked = verify(compilation, seed=SEED)
    compiled = compilation.compiled
    return {"compile_seconds": seconds, "grfs": compiled.stats.grfs_used,
            "config": str(compilation.config),
            **modeled(problem, zebin, compiled.name, compiled.hw, checked.run.executions,
                      math.prod(compiled.local_size) // compiled.simd),
            "hazards": len(checked.run.hazards), "verify": [str(c) for c in checked.comparisons],
            "verified": checked.ok}


def peer_side(problem: Problem, case: Case, tmp: str) -> dict:
    hw = hwlib.platform(case.hw)
    Path(tmp, "peer.cl").write_text(peer.opencl_source(problem))
    argv = [oracles.find_tool("ocloc"), "compile", "-file", "peer.cl", "-device", hw.ocloc_device,
            "-output", "peer", "-output_no_suffix", "--format", "zebin"]
    seconds = timed_process("ocloc compile", argv, tmp)
    zebin = Path(tmp, "peer").read_bytes()
    tensors = random_inputs(problem, SEED)
    got, result = peer.simulate(problem, zebin, hw, tensors)
    comparisons = compare(problem, got, tensors)
    return {"compile_seconds": seconds,
            # each of the peer's groups is one sub-group: one thread
            **modeled(problem, zebin, peer.kernel_name(problem), hw, result.executions, group_threads=1),
            "verify": [str(c) for c in comparisons], "verified": all(c.ok for c in comparisons)}


def measure(desc: Descriptor, case: Case) -> dict:
    """One row: both sides of one layer and case (a failure is recorded, not raised)."""
    started = time.perf_counter()
    row: dict = {"layer": short_name(desc), "descriptor": str(desc)}
    try:
        problem = case.problem(desc)
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
    return (f"{row['layer']:<28} {pair('compile_seconds', '.2f')} {pair('inner_loop_instructions', 'd')} "
            f"{pair('math_density', '.3f')} {pair('device_cycles', '.0f')} "
            f"{pair('peak_fraction', '.1%')} {verified:>6}")


HEADER = (f"{'layer':<28} {'compile s':>17} {'inner-loop insts':>17} {'math density':>17} {'modeled cycles':>17} "
          f"{'of peak':>17} {'check':>6}\n{'':<28} " + " ".join(["   xegen      IGC"] * 5))


def _median_ratio(rows: list[dict], key: str) -> float | None:
    ratios = [row["xegen"][key] / row["igc"][key] for row in rows if "error" not in row and row["igc"][key]]
    return statistics.median(ratios) if ratios else None


def summarize(case: Case, rows: list[dict]) -> dict:
    return {"case": case.name, "layers": len(rows), "passed": sum(passed(r) for r in rows),
            "median_density_ratio": _median_ratio(rows, "math_density"),
            "median_compile_time_ratio": _median_ratio(rows, "compile_seconds")}


def format_summary(summary: dict) -> str:
    def ratio(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}x"
    return (f"{summary['case']:<22} {summary['passed']:>3}/{summary['layers']:<3} verified   "
            f"density xegen/IGC {ratio(summary['median_density_ratio']):>7}   "
            f"compile time xegen/ocloc {ratio(summary['median_compile_time_ratio']):>7}")


def run_case(case: Case, layers: list[Descriptor], scale: bool) -> dict:
    hw = hwlib.platform(case.hw)
    size = "scaled (as in the tests)" if scale else "at minibatch 1"
    print(f"resnet_50 {DIRECTION_WORDS[case.direction]} {case.dt} {size} on {hw.display_name}: "
          f"xegen vs IGC (ocloc, OpenCL C peer)  [{case.name}]")
    print(HEADER)
    rows = []
    for desc in layers:
        rows.append(measure(desc, case))
        print(format_row(rows[-1]), flush=True)
    summary = summarize(case, rows)
    print(format_summary(summary) + "\n", flush=True)
    return {"case": case.name, "hw": hw.name, "direction": case.direction, "dt": case.dt, "layers": rows,
            "summary": summary}


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = ArgumentParser(prog="bench/e2e/run.py", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="", help="comma-separated shell patterns of case names hw/direction/dt, "
                        "e.g. 'xehpg/fwd_b/f32', 'xelp/*', '*/bwd_*/bf16' (default: all 13)")
    parser.add_argument("--layers", default="", help="comma-separated substrings of layer names (default: all 20)")
    parser.add_argument("--scaled", action="store_true",
                        help="layers scaled down as in the tests (at most 4x4 outputs, channels / 8): a quick run")
    parser.add_argument("--json", default=str(ROOT / "bench" / "e2e" / "results.json"), help="where to write JSON")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    try:
        cases, layers = select_cases(args.cases), select_layers(args.layers, args.scaled)
        ocloc = oracles.find_tool("ocloc")
        if Path(args.json).is_dir() or not Path(args.json).resolve().parent.is_dir():  # now, not after the run
            raise Error(f"--json {args.json}: not a file in an existing directory")
    except Error as error:
        sys.stderr.write(f"xegen: error: {error}\n")
        return 2
    results = [run_case(case, layers, args.scaled) for case in cases]
    print("inner-loop instructions '-': no loop around the multiplies (fully unrolled); math density then\n"
          "counts the whole kernel (marked *).  Modeled cycles: xegen.emit.cost over a simulator run of the grid.\n"
          "Summary: medians over the layers; goals density xegen/IGC >= 5x, compile time xegen/ocloc <= 1x.")
    for result in results:
        print(format_summary(result["summary"]))
    report = {"host": host.node(), "python": sys.version.split()[0], "ocloc": ocloc, "scaled": args.scaled,
              "cases": results}
    Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0 if all(passed(row) for result in results for row in result["layers"]) else 1


if __name__ == "__main__":
    sys.exit(main())
