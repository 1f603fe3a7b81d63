"""How far the configuration estimate is from the model on the kernels the compiler compiles.

    PYTHONPATH=$PWD .venv/bin/python scripts/estimate_error.py -o err.json      # every matrix dpas job
    PYTHONPATH=$PWD .venv/bin/python scripts/estimate_error.py -k "xehpg FWD_B f16"

For each job of the acceptance matrix (scripts/matrix_model.py) whose kernels dpas multiplies, the
problem is compiled as `pipeline.compile_problem` compiles it, and every configuration it compiles
on the way (the model's choices, `plan.heuristic.model_choices`, and the weights' layouts,
`plan.gemm.weights_choices`) is recorded with its estimate (`plan.estimate`) and its modeled
cycles (`xegen.modeling.modeled_cycles`).  Printed per job: the kernels compiled, estimate /
model of each, and whether the estimate's best is the model's; at the end the compiles per job,
the geomean and spread of estimate / model, and how often the estimate ranked the winner first.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

DPAS_CASES = (
    "xehpg FWD_B f16",
    "xehpg FWD_B bf16",
    "xehpg FWD_B u8:s8:f32",
    "xehpg FWD_B s8:s8:s32",
    "xehpg BWD_D bf16",
    "xehpg BWD_WB bf16",
    "xehpc FWD_B bf16",
)


def measure(job: tuple[str, str, str, str]) -> dict:
    """The kernels `compile_problem` compiles for `job`: configuration, weights' layout, estimate
    and modeled cycles of each, and the one it keeps."""
    from matrix_model import compiles_seen

    from xegen.conv import make_problem, parse_descriptor
    from xegen.hw import platform
    from xegen.modeling import modeled_cycles
    from xegen.pipeline import compile_problem
    from xegen.plan.estimate import estimate

    desc, hw, direction, dt = job
    compiled: list[dict] = []

    def record(problem, gemm, config, target, result) -> None:
        seen = {"config": str(config), "wtag": problem.wtag}
        if result is None:
            seen["error"] = "failed"
        else:
            seen["estimate"] = round(estimate(config, gemm, target).device, 1)
            seen["model"] = round(modeled_cycles(result).device, 1)
        compiled.append(seen)

    with compiles_seen(record):
        result = compile_problem(make_problem(parse_descriptor(desc), direction, dt, mb=1), platform(hw))
    return {
        "compiled": compiled,
        "chosen": str(result.config),
        "wtag": result.problem.wtag,
        "model": round(modeled_cycles(result).device, 1),
    }


def summary(results: dict[str, dict]) -> None:
    ratios, counts, first = [], [], 0
    for key, result in results.items():
        priced = [c for c in result["compiled"] if "model" in c]
        counts.append(len(result["compiled"]))
        print(key)
        for c in result["compiled"]:
            mark = "*" if c.get("model") == result["model"] and c["config"] == result["chosen"] else " "
            if "model" in c:
                ratios.append(c["estimate"] / c["model"])
                print(
                    f"  {mark} {c['config']:<70} {c['wtag'] or '-':<14} est {c['estimate']:>9.0f} "
                    f"model {c['model']:>9.0f} ratio {c['estimate'] / c['model']:.2f}"
                )
            else:
                print(f"    {c['config']:<70} {c['error']}")
        by_estimate = min(priced, key=lambda c: c["estimate"]) if priced else None
        first += by_estimate is not None and by_estimate["model"] == result["model"]
    logs = [math.log(r) for r in ratios]
    mean = sum(logs) / len(logs)
    spread = math.sqrt(sum((x - mean) ** 2 for x in logs) / len(logs))
    print(
        f"jobs {len(results)}, kernels compiled {sum(counts)} ({sum(counts) / len(counts):.2f} per job, "
        f"histogram {dict(sorted({n: counts.count(n) for n in counts}.items()))})"
    )
    print(
        f"estimate / model: geomean {math.exp(mean):.3f}, log spread {spread:.3f}, "
        f"min {min(ratios):.2f}, max {max(ratios):.2f}"
    )
    print(f"the estimate's lowest of the compiled kernels is the model's choice in {first} of {len(results)} jobs")


def main() -> int:
    from matrix_model import jobs

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", type=Path, help="write the measurements to this JSON file")
    parser.add_argument("--summary", type=Path, help="summarize measurements written earlier")
    parser.add_argument("-k", "--filter", default="", help="only jobs whose 'desc hw direction dt' contains this")
    args = parser.parse_args()
    if args.summary:
        summary(json.loads(args.summary.read_text()))
        return 0
    todo = [j for j in jobs() if " ".join(j[1:]) in DPAS_CASES and args.filter in " ".join(j)]
    results: dict[str, dict] = {}
    for count, job in enumerate(todo, 1):
        results[" ".join(job)] = measure(job)
        print(f"\r{count}/{len(todo)}", end="", file=sys.stderr, flush=True)
        if args.output:
            args.output.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print(file=sys.stderr)
    summary(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
