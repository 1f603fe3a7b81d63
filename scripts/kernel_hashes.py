"""The sha256 of every kernel of the acceptance matrix, to show a refactoring changes no byte.

    .venv/bin/python scripts/kernel_hashes.py -o before.json        # on the old commit
    .venv/bin/python scripts/kernel_hashes.py --compare before.json  # on the new one: exit 1 on a difference

Every resnet_50 layer (real, minibatch 1, and scaled as the tests scale it) x every configuration of
tests/test_end_to_end.py's matrix, compiled with the heuristic's configuration.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def jobs() -> list[tuple[str, str, str, str]]:
    from tests.conv.shapes import RESNET, scaled
    from tests.test_end_to_end import CONFIGS

    layers = [str(desc) for desc in RESNET] + [str(scaled(desc)) for desc in RESNET]
    return [(desc, hw, direction, dt) for hw, direction, dt in CONFIGS for desc in layers]


def kernel_hash(job: tuple[str, str, str, str]) -> str:
    from xegen.conv import make_problem, parse_descriptor
    from xegen.pipeline import compile_problem

    desc, hw, direction, dt = job
    try:
        zebin = compile_problem(make_problem(parse_descriptor(desc), direction, dt, mb=1), hw).zebin()
    except Exception as error:  # a kernel that stopped compiling is a difference too
        return f"error: {type(error).__name__}: {error}"
    return hashlib.sha256(zebin).hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", type=Path, help="write the hashes to this JSON file")
    parser.add_argument("--compare", type=Path, help="compare with hashes written earlier; exit 1 on a difference")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="processes (default 2)")
    parser.add_argument("-k", "--filter", default="", help="only jobs whose 'desc hw direction dt' contains this")
    args = parser.parse_args()

    todo = [job for job in jobs() if args.filter in " ".join(job)]
    hashes: dict[str, str] = {}
    with ProcessPoolExecutor(args.jobs) as pool:
        for count, (job, digest) in enumerate(zip(todo, pool.map(kernel_hash, todo, chunksize=4), strict=True), 1):
            hashes[" ".join(job)] = digest
            print(f"\r{count}/{len(todo)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    if args.output:
        args.output.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
    if args.compare:
        before = json.loads(args.compare.read_text())
        differ = [key for key in hashes if key in before and before[key] != hashes[key]]
        missing = [key for key in hashes if key not in before]
        for key in differ:
            print(f"differs: {key}: {before[key][:16]} -> {hashes[key][:16]}")
        for key in missing:
            print(f"not in {args.compare}: {key}")
        print(f"{len(hashes) - len(differ) - len(missing)} same, {len(differ)} differ, {len(missing)} not compared")
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
