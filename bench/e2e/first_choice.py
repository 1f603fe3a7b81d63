"""The heuristic's plan for first-layer-like convolutions against the best plan the model sees.

For each layer of --shapes (default bench/e2e/classes/first_choice: small ic, 3x3 to 11x11 kernels),
direction, data type and platform: the heuristic's kernel (no overrides) and the kernel of every
other plan that applies (`--config plan=first`, `plan=gemm`; `plan=depthwise` where it applies),
each compiled in-process and priced by the model (`xegen.modeling.modeled_cycles`).  A plan whose
configuration is one already compiled is not compiled again.  One Markdown table: the heuristic's
plan and cycles, each plan's cycles, and heuristic / best (1.00 where the heuristic took the best).

    nice -n 10 python bench/e2e/first_choice.py --json survey.json     # the table on stdout
    python bench/e2e/first_choice.py --hw xehpc --dt bf16 --dir BWD_WB --layers regression
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from xegen import hw as hwlib  # noqa: E402
from xegen.conv import make_problem, parse_descriptor  # noqa: E402
from xegen.errors import Error  # noqa: E402
from xegen.modeling import modeled_cycles  # noqa: E402
from xegen.pipeline import compile_problem  # noqa: E402
from xegen.plan import choose_config, formulate  # noqa: E402

SHAPES = Path(__file__).resolve().parent / "classes" / "first_choice"
PLANS = ("first", "gemm", "depthwise")
# (direction, data type): f32 and bf16 each direction, f16 forward
CASES = (
    ("FWD_B", "f32"),
    ("FWD_B", "bf16"),
    ("FWD_B", "f16"),
    ("BWD_D", "f32"),
    ("BWD_D", "bf16"),
    ("BWD_WB", "f32"),
    ("BWD_WB", "bf16"),
)


def layers() -> list:
    lines = [line.strip() for line in SHAPES.read_text().splitlines()]
    return [parse_descriptor(line) for line in lines if line and not line.startswith("#")]


def survey(desc, direction: str, dt: str, hw: str) -> dict:
    """The heuristic's configuration and cycles and each applicable plan's."""
    problem = make_problem(desc, direction, dt, mb=1)
    platform = hwlib.platform(hw)
    gemm = formulate(problem)
    compiled: dict[str, tuple[str, float]] = {}  # config compiled -> (plan, cycles)

    def cycles_of(overrides: dict | None) -> dict:
        try:
            config = str(choose_config(gemm, platform, overrides))
            if overrides is None or config not in compiled:  # (the heuristic's may be the model's choice)
                compilation = compile_problem(problem, platform, overrides)
                config = str(compilation.config)
                compiled[config] = (compilation.config.plan, modeled_cycles(compilation).device)
        except Error as error:
            return {"error": str(error)}
        plan, cycles = compiled[config]
        return {"config": config, "plan": plan, "cycles": cycles}

    row: dict = {"layer": desc.name or str(desc), "dir": direction, "dt": dt, "hw": hw, "heuristic": cycles_of(None)}
    for plan in PLANS:
        row[plan] = cycles_of({"plan": plan})
    modeled = [row[p]["cycles"] for p in PLANS if "cycles" in row[p]]
    if modeled and "cycles" in row["heuristic"]:
        row["ratio"] = row["heuristic"]["cycles"] / min(modeled)
    return row


def table(rows: list[dict]) -> str:
    lines = [
        "| layer | dir | dt | hw | heuristic | cycles | first | gemm | depthwise | heuristic / best |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        h = r["heuristic"]
        chosen = [h.get("plan", "error"), f"{h['cycles']:,.0f}" if "cycles" in h else "-"]
        cells = [f"{r[p]['cycles']:,.0f}" if "cycles" in r[p] else "-" for p in PLANS]
        ratio = f"{r['ratio']:.2f}" if "ratio" in r else "-"
        lines.append("| " + " | ".join([r["layer"], r["dir"], r["dt"], r["hw"], *chosen, *cells, ratio]) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hw", default="xelp,xehpg,xehpc", help="platforms, comma-separated")
    parser.add_argument("--dt", default="", help="data types to keep (default: f32, bf16, f16 forward)")
    parser.add_argument("--dir", default="", help="directions to keep (default: FWD_B, BWD_D, BWD_WB)")
    parser.add_argument("--layers", default="", help="only layers whose name contains one of these, comma-separated")
    parser.add_argument("--json", help="also write the rows as JSON here (written after every row)")
    args = parser.parse_args(argv)
    keep = [s for s in args.layers.split(",") if s]
    rows = []
    for desc in layers():
        if keep and not any(k in (desc.name or "") for k in keep):
            continue
        for direction, dt in CASES:
            if (args.dt and dt not in args.dt.split(",")) or (args.dir and direction not in args.dir.split(",")):
                continue
            for hw in args.hw.split(","):
                rows.append(survey(desc, direction, dt, hw))
                print(table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps(rows, indent=1))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
