"""Layer classes beyond resnet_50, before and after: depthwise, grouped, first layers, 1-D, 3-D.

For every layer of bench/e2e/classes/<class> (real shapes of public networks, minibatch 1), every
platform and data type selected, this checkout's kernel (`xegen conv --batch FILE --json --verify
-o DIR`, run in the simulator over the whole grid against numpy, its zebin through `ocloc
validate`) beside the kernel of another revision of xegen (`--before REV`: `git archive REV`
into a temporary directory, run the same way without --verify): modeled cycles, the bound the
model names, the roofline fraction, the plan; after/before cycles; per class and platform the
geometric mean of the roofline fractions.  A layer below --goal of its roofline gets the reason
the model gives: its bound, that term's cycles against the roofline's and, when latency bounds
it, the threads per EU that could not cover it.

    python bench/e2e/classes.py                                    # every class, f32 and bf16, three platforms
    python bench/e2e/classes.py --classes depthwise,first --hw xehpg --dt f32 --before integ
    python bench/e2e/classes.py --before none --json /tmp/classes.json

Prints a Markdown table per class (docs/compile.md quotes one run); writes JSON with --json.
Exit status 1 if a kernel of this checkout failed to compile, verify or validate.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from xegen.cli import ArgumentParser  # noqa: E402
from xegen.oracles import ocloc_validate  # noqa: E402

CLASSES = ("depthwise", "grouped", "first", "1d", "3d")
SHAPES = Path(__file__).resolve().parent / "classes"


def run_xegen(source: Path, batch: Path, hw: str, dt: str, verify: bool, zebins: Path | None) -> list[dict]:
    """`xegen conv --batch` of the checkout at `source`: one JSON row per layer (an error row for a
    layer that failed)."""
    argv = [sys.executable, "-m", "xegen", "conv", "--batch", str(batch), "--mb", "1", "--hw", hw, "--dt", dt, "--json"]
    if verify:
        argv.append("--verify")
    if zebins is not None:
        argv += ["-o", str(zebins)]
    env = dict(os.environ, PYTHONPATH=str(source))
    result = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=source)
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"classes: error: xegen at {source} gave no JSON: {result.stderr.strip()[-400:]}") from None


def export(revision: str, into: Path) -> Path:
    """The tree of `revision` of this repository, unpacked under `into`."""
    archive = subprocess.run(["git", "archive", "--format=tar", revision], capture_output=True, cwd=ROOT)
    if archive.returncode:
        raise SystemExit(f"classes: error: git archive {revision}: {archive.stderr.decode().strip()}")
    tree = into / "before"
    tree.mkdir()
    with tempfile.TemporaryFile() as tar:
        tar.write(archive.stdout)
        tar.seek(0)
        tarfile.open(fileobj=tar).extractall(tree, filter="data")
    return tree


def layer_names(batch: Path) -> list[str]:
    lines = [line.strip() for line in batch.read_text().splitlines()]
    return [line.split('n"')[-1].rstrip('"') if 'n"' in line else line for line in lines if line and line[0] != "#"]


def summary(row: dict) -> dict:
    """What the table shows of one `xegen conv --json` row."""
    if "error" in row:
        return {"error": row["error"]}
    model = row["modeled"]
    first = row["config"].split()[0]
    plan = first.split("=")[1] if first.startswith("plan=") else "gemm"
    return {
        "cycles": model["device_cycles"],
        "bound": model["bound"],
        "roofline": model["roofline_fraction"],
        "roofline_bound": model["roofline_bound"],
        "plan": plan,
        "config": row["config"],
        "terms": model["terms"],
        "roofline_cycles": model["roofline_cycles"],
        "occupancy": model["occupancy"],
        "verified": row.get("verify", {}).get("ok"),
    }


def reason(after: dict) -> str:
    """Why a layer stays below its roofline, in the model's words."""
    term = after["terms"][after["bound"]]
    why = (
        f"{after['bound']}-bound: {term:.0f} cycles against the {after['roofline_bound']} roofline's "
        f"{after['roofline_cycles']:.0f}"
    )
    if after["bound"] == "latency":
        occupancy = after["occupancy"]
        why += f" ({occupancy['wave_threads_per_eu']} of {occupancy['threads_per_eu']} threads per EU to hide it)"
    return why


def measure(klass: str, hw: str, dt: str, before: Path | None, tmp: Path) -> list[dict]:
    batch = SHAPES / klass
    zebins = tmp / f"{klass}-{hw}-{dt.replace(':', '_')}"
    after_rows = run_xegen(ROOT, batch, hw, dt, verify=True, zebins=zebins)
    before_rows = run_xegen(before, batch, hw, dt, verify=False, zebins=None) if before else [{}] * len(after_rows)
    rows = []
    for index, (name, after, previous) in enumerate(zip(layer_names(batch), after_rows, before_rows, strict=True)):
        row = {
            "class": klass,
            "hw": hw,
            "dt": dt,
            "layer": name,
            "after": summary(after),
            "before": summary(previous) if previous else None,
        }
        if "error" not in row["after"]:
            kernels = sorted(zebins.glob(f"{index:03d}-*.zebin"))
            valid, report = ocloc_validate(kernels[0].read_bytes()) if kernels else (False, "no zebin written")
            row["after"]["ocloc_valid"] = valid
            if not valid:
                row["after"]["ocloc_report"] = report
        rows.append(row)
    return rows


def passed(row: dict) -> bool:
    after = row["after"]
    return "error" not in after and bool(after["verified"]) and after["ocloc_valid"]


def format_side(side: dict | None) -> str:
    if side is None:
        return "-"
    if "error" in side:
        return "error: " + side["error"]
    return f"{side['cycles']:.0f} {side['bound']} {side['roofline']:.1%} ({side['plan']})"


def format_table(rows: list[dict], goal: float) -> list[str]:
    lines = [
        "| layer | hw | dt | before: cycles, bound, roofline (plan) | after | after/before | check | "
        f"below {goal:.0%}: why |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        before, after = row["before"], row["after"]
        ratio = "-"
        if before and "error" not in before and "error" not in after:
            ratio = f"{after['cycles'] / before['cycles']:.2f}"
        check = "ok" if passed(row) else "FAILED"
        why = reason(after) if "error" not in after and after["roofline"] < goal else ""
        lines.append(
            f"| {row['layer']} | {row['hw']} | {row['dt']} | {format_side(before)} | {format_side(after)} "
            f"| {ratio} | {check} | {why} |"
        )
    return lines


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values and min(values) > 0 else None


def format_geomeans(rows: list[dict]) -> list[str]:
    lines = []
    for hw in dict.fromkeys(r["hw"] for r in rows):
        mine = [r for r in rows if r["hw"] == hw]
        parts = []
        for side in ("before", "after"):
            mean = geomean([r[side]["roofline"] for r in mine if r[side] and "error" not in r[side]])
            parts.append(f"{side} {mean:.1%}" if mean is not None else f"{side} -")
        lines.append(f"- {hw}: geometric mean of the roofline fractions: {', '.join(parts)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(
        prog="classes.py", description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--classes", default=",".join(CLASSES), help=f"comma-separated: {', '.join(CLASSES)}")
    parser.add_argument("--hw", default="xelp,xehpg,xehpc", help="comma-separated platforms")
    parser.add_argument("--dt", default="f32,bf16", help="comma-separated data types (as xegen conv --dt)")
    parser.add_argument(
        "--before", default="integ", help="git revision to compare against (default integ; 'none': this checkout alone)"
    )
    parser.add_argument("--goal", type=float, default=0.5, help="roofline fraction a layer should reach (0.5)")
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args(argv)
    classes = [c for c in args.classes.split(",") if c]
    for klass in classes:
        if klass not in CLASSES:
            parser.error(f"--classes: unknown class '{klass}' (the classes: {', '.join(CLASSES)})")
    every = []
    with tempfile.TemporaryDirectory(prefix="xegen-classes-") as name:
        tmp = Path(name)
        before = None if args.before == "none" else export(args.before, tmp)
        for klass in classes:
            rows = []
            for hw in args.hw.split(","):
                for dt in args.dt.split(","):
                    rows += measure(klass, hw, dt, before, tmp)
            print(f"\n### {klass} (before: {args.before}, after: this checkout)\n")
            print("\n".join(format_table(rows, args.goal) + [""] + format_geomeans(rows)), flush=True)
            every += rows
    if args.json:
        Path(args.json).write_text(json.dumps(every, indent=1) + "\n")
    return 0 if all(passed(row) for row in every) else 1


if __name__ == "__main__":
    sys.exit(main())
