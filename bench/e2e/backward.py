"""Backward kernels against the forward kernel of the same layer: modeled cycles and roofline.

For every layer of resnet_50 (tests/data/shapes_resnet_50) and of bench/e2e/classes/backward (a
first layer, a depthwise, a 1x1 stride-2 and a dilated layer of other networks), minibatch 1, every
platform and data type selected: this checkout's heuristic kernel for the forward pass (FWD_B),
backward data (BWD_D) and backward weights with the bias gradient (BWD_WB), each compiled in-process
and priced by the model (`xegen.modeling.modeled_cycles`, docs/model.md; the three directions do the
same multiply-adds, so cycles compare directly), its zebin through `ocloc validate` (the
configurations are in the JSON).  One Markdown table per backward direction: the forward and backward
cycles, backward / forward (goal <= --ratio, 1.5), the backward kernel's roofline fraction (goal >=
--goal, 50 %), and where a goal is missed, why in the model's words (its bound and that term against
the roofline's).  `--verify` also runs each backward kernel in the simulator over its whole grid
against numpy (slow at real sizes: minutes per layer).

    python bench/e2e/backward.py                                      # everything (hours on 2 cores)
    python bench/e2e/backward.py --hw xehpg --dt bf16 --layers res2a_branch2b,conv1,deeplab
    python bench/e2e/backward.py --hw xehpg --json /tmp/backward.json

Exit status 1 if a kernel failed to compile, validate or (with --verify) verify.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.e2e.classes import reason  # noqa: E402
from tests.conv.shapes import RESNET, short_name  # noqa: E402
from xegen.cli import ArgumentParser  # noqa: E402
from xegen.conv import make_problem, parse_descriptor  # noqa: E402
from xegen.errors import Error  # noqa: E402
from xegen.modeling import modeled_cycles  # noqa: E402
from xegen.oracles import ocloc_validate  # noqa: E402
from xegen.pipeline import compile_problem  # noqa: E402

OTHERS = Path(__file__).resolve().parent / "classes" / "backward"
BACKWARD = ("BWD_D", "BWD_WB")


def layers() -> list:
    lines = [line.strip() for line in OTHERS.read_text().splitlines()]
    return list(RESNET) + [parse_descriptor(line) for line in lines if line and not line.startswith("#")]


def side(desc, direction: str, hw: str, dt: str, verify: bool) -> dict:
    """One kernel: its configuration, modeled cycles, bound and roofline, ocloc's verdict."""
    try:
        problem = make_problem(desc, direction, dt, mb=1)
        compilation = compile_problem(problem, hw)
        cycles = modeled_cycles(compilation)
        valid, report = ocloc_validate(compilation.zebin())
        row = {
            "cycles": cycles.device,
            "bound": cycles.bound,
            "roofline": cycles.roofline_fraction,
            "roofline_bound": cycles.roofline.bound,
            "roofline_cycles": cycles.roofline.cycles,
            "terms": cycles.terms,
            "occupancy": cycles.as_dict()["occupancy"],
            "config": str(compilation.config),
            "ocloc_valid": valid,
        }
        if not valid:
            row["ocloc_report"] = report
        if verify:
            from xegen.verify import verify as run_verify

            row["verified"] = run_verify(compilation, 0).ok
        return row
    except Error as error:
        return {"error": str(error)}


def passed(kernel: dict) -> bool:
    return "error" not in kernel and kernel["ocloc_valid"] and kernel.get("verified", True)


def why(forward: dict, backward: dict, ratio: float, goal: float) -> str:
    parts = []
    if "error" not in forward and backward["cycles"] > ratio * forward["cycles"]:
        parts.append(
            f"{backward['cycles'] / forward['cycles']:.1f}x forward (forward {forward['bound']}-bound, "
            f"backward {backward['bound']}-bound)"
        )
    if backward["roofline"] < goal:
        parts.append(reason(backward))
    return "; ".join(parts)


def format_table(rows: list[dict], direction: str, ratio: float, goal: float) -> list[str]:
    lines = [
        f"| layer | hw | dt | forward cycles | {direction} cycles | {direction}/forward | roofline | "
        "check | why (goal missed) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        forward, backward = row["FWD_B"], row[direction]
        if "error" in backward:
            lines.append(
                f"| {row['layer']} | {row['hw']} | {row['dt']} | - | error: {backward['error']} | - | - | FAILED | |"
            )
            continue
        fwd = f"{forward['cycles']:.0f}" if "error" not in forward else "error"
        times = f"{backward['cycles'] / forward['cycles']:.2f}" if "error" not in forward else "-"
        lines.append(
            f"| {row['layer']} | {row['hw']} | {row['dt']} | {fwd} | {backward['cycles']:.0f} | {times} | "
            f"{backward['roofline']:.1%} | "
            f"{'ok' if passed(backward) else 'FAILED'} | {why(forward, backward, ratio, goal)} |"
        )
    return lines


def format_summary(rows: list[dict], direction: str, ratio: float, goal: float) -> list[str]:
    """Per platform and data type: how many kernels meet each goal."""
    lines = []
    for key in dict.fromkeys((row["hw"], row["dt"]) for row in rows):
        mine = [
            row
            for row in rows
            if (row["hw"], row["dt"]) == key and "error" not in row[direction] and "error" not in row["FWD_B"]
        ]
        fast = sum(row[direction]["cycles"] <= ratio * row["FWD_B"]["cycles"] for row in mine)
        full = sum(row[direction]["roofline"] >= goal for row in mine)
        lines.append(
            f"- {key[0]} {key[1]}: {fast} of {len(mine)} within {ratio}x forward, "
            f"{full} of {len(mine)} at {goal:.0%} of the roofline or more"
        )
    return lines


def print_tables(rows: list[dict], ratio: float, goal: float) -> None:
    for direction in BACKWARD:
        print(f"\n### {direction} against FWD_B\n")
        print(
            "\n".join(format_table(rows, direction, ratio, goal) + [""] + format_summary(rows, direction, ratio, goal)),
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(
        prog="backward.py", description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hw", default="xelp,xehpg,xehpc", help="comma-separated platforms")
    parser.add_argument("--dt", default="f32,bf16", help="comma-separated data types (as xegen conv --dt)")
    parser.add_argument("--layers", default="", help="comma-separated substrings of layer names (default: all)")
    parser.add_argument("--ratio", type=float, default=1.5, help="backward / forward cycles a kernel should stay under")
    parser.add_argument("--goal", type=float, default=0.5, help="roofline fraction a kernel should reach (0.5)")
    parser.add_argument("--verify", action="store_true", help="also run every backward kernel in the simulator")
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--tables", metavar="JSON", help="print the tables of the rows an earlier run wrote, and stop")
    args = parser.parse_args(argv)
    if args.tables:
        print_tables(json.loads(Path(args.tables).read_text()), args.ratio, args.goal)
        return 0
    wanted = [part for part in args.layers.split(",") if part]
    chosen = [d for d in layers() if not wanted or any(part in d.name for part in wanted)]
    if not chosen:
        parser.error(f"--layers: no layer matches '{args.layers}'")
    rows = []
    for hw in args.hw.split(","):
        for dt in args.dt.split(","):
            for desc in chosen:
                row = {
                    "layer": short_name(desc) if desc.name.startswith("resnet_50") else desc.name,
                    "descriptor": str(desc),
                    "hw": hw,
                    "dt": dt,
                }
                for direction in ("FWD_B", *BACKWARD):
                    row[direction] = side(desc, direction, hw, dt, args.verify and direction != "FWD_B")
                rows.append(row)
                print(f"measured {row['layer']} {hw} {dt}", file=sys.stderr, flush=True)
                if args.json:  # partial results survive an interrupted run
                    Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    print_tables(rows, args.ratio, args.goal)
    return 0 if all(passed(row[d]) for row in rows for d in BACKWARD) else 1


if __name__ == "__main__":
    sys.exit(main())
