"""The modeled cycles of every kernel of the acceptance matrix, to show a change makes no layer slower.

    .venv/bin/python scripts/matrix_model.py -o before.json          # on the old commit
    .venv/bin/python scripts/matrix_model.py --compare before.json   # on the new one: a table, exit 1
                                                                     # if a kernel got slower or failed

Every resnet_50 layer at its real size, minibatch 1, x every case of tests/test_end_to_end.py's
matrix, compiled with the heuristic's configuration and priced by `xegen.modeling.modeled_cycles`
(static execution counts, no simulator run): the configuration, threads, instructions, code bytes,
modeled device cycles, bound and roofline fraction, and how many kernels the compiler compiled to
choose it (`kernels_compiled`).  `--compare` prints one line per kernel with
the cycles before and after and their ratio (< 1: faster now), and the geometric mean per case.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def jobs() -> list[tuple[str, str, str, str]]:
    from tests.conv.shapes import RESNET
    from tests.test_end_to_end import CONFIGS

    return [(str(desc), hw, direction, dt) for hw, direction, dt in CONFIGS for desc in RESNET]


@contextmanager
def compiles_seen(record: Callable[..., None]) -> Iterator[None]:
    """Every kernel `pipeline.compile_problem` compiles (each configuration it tries: the model's
    choices, the weights' layouts, fall-backs) passed to `record(problem, gemm, config, hw,
    compilation)`, the compilation None where it failed."""
    from xegen import pipeline

    original = pipeline._compile_config

    def recorded(problem, gemm, config, hw, *args, **kwargs):
        try:
            result = original(problem, gemm, config, hw, *args, **kwargs)
        except Exception:
            record(problem, gemm, config, hw, None)
            raise
        record(problem, gemm, config, hw, result)
        return result

    pipeline._compile_config = recorded
    try:
        yield
    finally:
        pipeline._compile_config = original


def measure(job: tuple[str, str, str, str]) -> dict:
    from xegen.conv import make_problem, parse_descriptor
    from xegen.modeling import modeled_cycles
    from xegen.pipeline import compile_problem

    desc, hw, direction, dt = job
    compiled: list[object] = []
    try:
        with compiles_seen(lambda *seen: compiled.append(seen[2])):
            compilation = compile_problem(make_problem(parse_descriptor(desc), direction, dt, mb=1), hw)
    except Exception as error:  # a kernel that stopped compiling is a difference too
        return {"error": f"{type(error).__name__}: {error}"}
    cycles = modeled_cycles(compilation)
    stats = compilation.compiled.stats
    return {
        "config": str(compilation.config),
        "threads": compilation.kernel.threads,
        "instructions": stats.instructions,
        "inner_loop_instructions": stats.inner_loop_instructions,
        "code_bytes": len(compilation.compiled.code),
        "device_cycles": round(cycles.device, 1),
        "bound": cycles.bound,
        "roofline_fraction": round(cycles.roofline_fraction, 4),
        "kernels_compiled": len(compiled),
    }


def _short(key: str) -> str:
    """'res4a_branch2b xehpg FWD_B f32' from the job key."""
    desc, *rest = key.split(" ")
    name = desc.split(":")[-1].strip('"').split("*")[0] if ":" in desc else desc
    return " ".join([name, *rest])


def compare(before: dict, after: dict) -> int:
    print(f"{'kernel':<42} {'before':>10} {'after':>10} {'ratio':>6}  bound before -> after, roofline after")
    slower, failed, by_case = [], [], {}
    for key, now in after.items():
        old = before.get(key)
        if "error" in now or old is None or "error" in old:
            failed.append(key) if "error" in now else None
            print(
                f"{_short(key):<42} {old and old.get('device_cycles', old.get('error'))!s:>10} "
                f"{now.get('device_cycles', now.get('error'))!s:>10}"
            )
            continue
        ratio = now["device_cycles"] / old["device_cycles"]
        by_case.setdefault(" ".join(key.split(" ")[1:]), []).append(ratio)
        if ratio > 1:
            slower.append(key)
        print(
            f"{_short(key):<42} {old['device_cycles']:>10.0f} {now['device_cycles']:>10.0f} {ratio:>6.3f}  "
            f"{old['bound']} -> {now['bound']}, {now['roofline_fraction']:.1%}"
        )
    for case, ratios in by_case.items():
        geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"{case:<24} geomean after / before {geomean:.3f}, best {min(ratios):.3f}, worst {max(ratios):.3f}")
    print(f"{len(slower)} slower, {len(failed)} failed, of {len(after)}")
    return 1 if slower or failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", type=Path, help="write the measurements to this JSON file")
    parser.add_argument("--compare", type=Path, help="compare with measurements written earlier")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="processes (default 2)")
    parser.add_argument("-k", "--filter", default="", help="only jobs whose 'desc hw direction dt' contains this")
    args = parser.parse_args()

    todo = [job for job in jobs() if args.filter in " ".join(job)]
    results: dict[str, dict] = {}
    with ProcessPoolExecutor(args.jobs) as pool:
        for count, (job, result) in enumerate(zip(todo, pool.map(measure, todo), strict=True), 1):
            results[" ".join(job)] = result
            print(f"\r{count}/{len(todo)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    if args.output:
        args.output.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    if args.compare:
        return compare(json.loads(args.compare.read_text()), results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
