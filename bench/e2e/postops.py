"""What a fused post-op chain costs: modeled cycles of each resnet_50 layer with and without it.

For every layer of tests/data/shapes_resnet_50 (minibatch 32 unless --mb) that is compute-bound
without post-ops (in the roofline's sense: the model's compute term exceeds its memory term),
compile the plain convolution and the same one with each chain, and compare the modeled device
cycles (`xegen.modeling`, the static execution counts, the same model for both).  The goal
(issue 20): a fused chain costs at most 10 % more than the plain convolution on compute-bound
layers.

    python bench/e2e/postops.py --layers branch2b             # xehpg f16, the default chains
    python bench/e2e/postops.py --hw xehpc --dt bf16 --chains 'sum+relu,gelu_erf' --mb 8

Prints one row per layer and chain and the worst ratio; exit status 1 if a ratio exceeds the goal.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from xegen.conv import make_problem  # noqa: E402
from xegen.modeling import modeled_cycles  # noqa: E402
from xegen.pipeline import compile_problem  # noqa: E402

SHAPES = Path(__file__).resolve().parents[2] / "tests" / "data" / "shapes_resnet_50"
CHAINS = ("relu", "sum+relu", "clip:0:6", "relu:0.1+add:f32:per_oc", "gelu_erf", "swish:1+mul:f32:per_tensor")
GOAL = 1.10


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hw", default="xehpg", help="platform (default xehpg)")
    parser.add_argument("--dt", default="f16", help="data types (default f16)")
    parser.add_argument("--mb", type=int, default=32, help="minibatch (default 32)")
    parser.add_argument("--chains", default=",".join(CHAINS), help="comma-separated post-op chains")
    parser.add_argument("--layers", default="", help="comma-separated substrings of layer names (default all)")
    args = parser.parse_args(argv)
    lines = [line.strip() for line in SHAPES.read_text().splitlines() if line.strip() and not line.startswith("#")]
    wanted = [w for w in args.layers.split(",") if w]
    worst = 0.0
    print(f"{'layer':28} {'chain':28} {'plain':>12} {'fused':>12} {'ratio':>7}")
    for line in lines:
        if wanted and not any(w in line for w in wanted):
            continue
        plain = modeled_cycles(compile_problem(make_problem(line, "FWD_B", args.dt, mb=args.mb), args.hw, None))
        name = line.split('"')[1] if '"' in line else line
        terms = plain.terms
        if terms["compute"] <= terms["memory"]:
            print(f"{name:28} {'(memory-bound: skipped)':28}")
            continue
        for chain in args.chains.split(","):
            fused = modeled_cycles(
                compile_problem(make_problem(line, "FWD_B", args.dt, chain, mb=args.mb), args.hw, None)
            )
            ratio = fused.device / plain.device
            worst = max(worst, ratio)
            print(f"{name:28} {chain:28} {plain.device:12.0f} {fused.device:12.0f} {ratio:7.3f}", flush=True)
    print(f"worst ratio {worst:.3f} (goal <= {GOAL})")
    return 0 if worst <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
