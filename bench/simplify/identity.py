"""Every simplification result of the bench corpus and the random corpus, to show that a change
meant only to be faster changes none (issue 22).

    python bench/simplify/identity.py -o before.jsonl              # on the old commit
    python bench/simplify/identity.py -o after.jsonl --compare before.jsonl   # exit 1 on a difference

One JSON line per expression: on XeLP, XeHPG and XeHPC (one saturation, `simplify_each`), the
result, the costs before and after, the e-graph's nodes and classes, the iterations, the stop and
whether the input was kept.  No wall-clock bound (`Limits(seconds=math.inf)`), so a loaded
machine gives the same lines; the random corpus's 2,000 take ~5 minutes of CPU.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

from corpus import corpus  # noqa: E402
from random_corpus import random_corpus  # noqa: E402

from xegen import ir  # noqa: E402
from xegen.egraph import CostModel, Limits  # noqa: E402
from xegen.egraph.simplify import simplify_each  # noqa: E402

PLATFORMS = ("xelp", "xehpg", "xehpc")


def lines(count: int, seed: int):
    models = [CostModel(hw) for hw in PLATFORMS]
    for case in [*corpus(), *random_corpus(count, seed)]:
        results = simplify_each(ir.parse_expr(case.text), models, ranges=case.ranges, limits=Limits(seconds=math.inf))
        yield {
            "name": case.name,
            "results": {
                model.name: [
                    str(r.result),
                    r.cost_before,
                    r.cost_after,
                    r.egraph_nodes,
                    r.egraph_classes,
                    r.saturation.iterations,
                    r.saturation.stop,
                    r.kept_input,
                ]
                for model, r in zip(models, results, strict=True)
            },
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, required=True, help="write the JSON lines here")
    parser.add_argument("--compare", type=Path, help="lines written earlier: exit 1 on a difference")
    parser.add_argument("--count", type=int, default=2000, help="random expressions (default 2000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with args.output.open("w") as out:
        for line in lines(args.count, args.seed):
            out.write(json.dumps(line) + "\n")
    if not args.compare:
        return 0
    before = [json.loads(line) for line in args.compare.read_text().splitlines()]
    after = [json.loads(line) for line in args.output.read_text().splitlines()]
    if [b["name"] for b in before] != [a["name"] for a in after]:
        print(f"{args.compare} holds other expressions (another --count or --seed?)")
        return 1
    differ = [a["name"] for b, a in zip(before, after, strict=True) if a != b]
    for name in differ:
        print(f"differs: {name}")
    print(f"{len(after) - len(differ)} same, {len(differ)} differ (expressions, each on {len(PLATFORMS)} platforms)")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
