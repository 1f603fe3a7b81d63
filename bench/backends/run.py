"""xegen's native back end against the vISA one (IGC's finalizer), layer by layer of resnet_50.

For every layer of tests/data/shapes_resnet_50 at minibatch 1 (or scaled down, `--scaled`), in
f32 and f16 on XeHPG (`--dts`, `--hw` for others), the same kernel IR and the same instruction
selection go through both code generators (`compile_problem(..., backend=...)`):

- native: xegen's register allocation, SWSB and encoder (xegen/lower, xegen/emit);
- visa: the selected instructions as vISA assembly, finalized by GenX_IR (xegen/visa).

Per layer and back end: instructions, inner-loop instructions, sends and sync instructions
(`xegen.emit.analysis` on the decoded code, counted the same way for both), GRFs the code
touches, bytes the finalizer spilled (the native back end never spills), modeled device cycles,
and the seconds of the lowering (from instruction selection to the zebin; for visa including
GenX_IR's process) and of the whole compile.  The modeled cycles come from the same model
(`xegen.modeling.modeled_cycles`) over execution counts from a simulator run of the first
work-group, times the number of groups, for both back ends (the vISA kernel's branches are the
finalizer's, so the native back end's static counts do not apply to it).  With --verify both
kernels are also checked against numpy over the whole grid.

Prints one table per data type and the geometric means of visa / native; writes JSON (default
bench/backends/results.json, not committed).  Exit status 1 if a kernel failed.

    python bench/backends/run.py                          # every layer, f32 and f16, XeHPG
    python bench/backends/run.py --scaled --verify        # scaled layers, checked in the simulator
    python bench/backends/run.py --layers res2a,res3a --dts f32 --json /tmp/backends.json
    python bench/backends/run.py --markdown TABLES   # the tables of docs/visa.md, as Markdown
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conv.shapes import RESNET, scaled, short_name  # noqa: E402
from xegen.conv import make_problem  # noqa: E402
from xegen.errors import Error  # noqa: E402
from xegen.modeling import modeled_cycles  # noqa: E402
from xegen.pipeline import compile_problem  # noqa: E402
from xegen.verify import first_group_executions, verify  # noqa: E402

BACKENDS = ("native", "visa")
FRONT_PASSES = ("build", "schedule", "optimize")  # the same for both back ends
COLUMNS = ("instructions", "inner", "sends", "syncs", "grfs", "spill", "cycles", "lower_s", "compile_s")


def measure(problem, hw: str, backend: str, check: bool) -> dict:
    started = time.perf_counter()
    compilation = compile_problem(problem, hw, backend=backend)
    seconds = time.perf_counter() - started
    stats = compilation.compiled.stats
    finalizer = getattr(compilation.compiled, "finalizer", None)
    cycles = modeled_cycles(compilation, first_group_executions(compilation))
    row = {
        "instructions": stats.instructions,
        "inner": stats.inner_loop_instructions,
        "sends": stats.sends,
        "syncs": stats.syncs,
        "grfs": stats.grfs_used,
        "spill": finalizer.spill_bytes if finalizer else 0,
        "cycles": round(cycles.device),
        "lower_s": round(seconds - sum(compilation.seconds.get(p, 0.0) for p in FRONT_PASSES), 3),
        "compile_s": round(seconds, 3),
        "config": str(compilation.config),
    }
    if check:
        result = verify(compilation, 0)
        row["verified"] = result.ok and not result.run.hazards
    return row


def geomean(values) -> float:
    values = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hw", default="xehpg", help="platform (default xehpg)")
    parser.add_argument("--dts", default="f32,f16", help="comma-separated data types (default f32,f16)")
    parser.add_argument("--layers", default="", help="comma-separated substrings of layer names (default: all)")
    parser.add_argument("--scaled", action="store_true", help="the layers scaled down as the tests scale them")
    parser.add_argument(
        "--verify", action="store_true", help="also verify both kernels against numpy (whole grid: use with --scaled)"
    )
    parser.add_argument("--json", default=str(ROOT / "bench" / "backends" / "results.json"), help="where to write JSON")
    parser.add_argument("--markdown", metavar="FILE", help="also write the tables as Markdown (docs/visa.md's form)")
    return parser.parse_args(argv)


def markdown(rows) -> str:
    """One table per data type: native -> visa per column, and the geometric means."""
    out = []
    for dt in dict.fromkeys(r["dt"] for r in rows):
        done = [r for r in rows if r["dt"] == dt and "error" not in r]
        out += [
            f"{rows[0]['hw']} forward {dt}, native → visa:",
            "",
            "| layer | " + " | ".join(COLUMNS) + " |",
            "|---" * (len(COLUMNS) + 1) + "|",
        ]
        out += [
            f"| {r['layer']} | " + " | ".join(f"{r['native'][c]} → {r['visa'][c]}" for c in COLUMNS) + " |"
            for r in done
        ]
        out += [f"| {r['layer']} | error: {r['error']} |" for r in rows if r["dt"] == dt and "error" in r]
        means = [
            f"{geomean([r['visa'][c] / r['native'][c] for r in done if r['native'][c]]):.2f}"
            if c != "spill"
            else str(sum(r["visa"][c] for r in done))
            for c in COLUMNS
        ]
        out += ["| geomean visa/native (spill: total bytes) | " + " | ".join(means) + " |", ""]
    return "\n".join(out)


def main(argv=None) -> int:
    args = parse_arguments(argv)
    wanted = [w for w in args.layers.split(",") if w]
    layers = [d for d in RESNET if not wanted or any(w in short_name(d) for w in wanted)]
    rows, failed = [], False
    for dt in [d for d in args.dts.split(",") if d]:
        print(f"\n{args.hw} FWD_B {dt}: native -> visa")
        print(f"{'layer':<18}" + "".join(f"{c:>22}" for c in COLUMNS))
        for desc in layers:
            problem = make_problem(scaled(desc) if args.scaled else desc, "FWD_B", dt, mb=1)
            row = {"layer": short_name(desc), "hw": args.hw, "dt": dt}
            try:
                for backend in BACKENDS:
                    row[backend] = measure(problem, args.hw, backend, args.verify)
            except Error as error:
                row["error"] = str(error)
                failed = True
                print(f"{row['layer']:<18} error: {error}")
                rows.append(row)
                continue
            failed |= args.verify and not all(row[b]["verified"] for b in BACKENDS)
            cells = "".join(f"{str(row['native'][c]) + ' -> ' + str(row['visa'][c]):>22}" for c in COLUMNS)
            print(f"{row['layer']:<18}{cells}")
            rows.append(row)
        done = [r for r in rows if r["dt"] == dt and "error" not in r]
        ratios = {
            c: geomean([r["visa"][c] / r["native"][c] for r in done if r["native"][c]])
            for c in ("instructions", "inner", "sends", "syncs", "grfs", "cycles", "lower_s")
        }
        print("geomean visa/native: " + ", ".join(f"{c} {v:.2f}" for c, v in ratios.items()))
    Path(args.json).write_text(json.dumps(rows, indent=1))
    print(f"\nwrote {args.json}")
    if args.markdown:
        Path(args.markdown).write_text(markdown(rows))
        print(f"wrote {args.markdown}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
