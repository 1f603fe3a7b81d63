"""Modeled cycles of the convolution K loop with single, double and triple SLM buffering.

For every resnet_50 layer (scaled as in the tests: minibatch 1, at most 4 outputs per spatial
dimension, channels / 8; `--real` for the real sizes at minibatch 1) the kernel is built three
times, with slm_bufs = 1, 2 and 3, and `xegen.schedule.model_cycles` models one thread running
its compute loop (ramp-up, steady state and ramp-down) on the platform's numbers from xegen/hw.py:

- cycles: in-order issue, operands and units permitting (what the table compares);
- cp: the critical path (dependences only, unlimited issue);
- res: the resource bound (the busiest unit's busy cycles: usually the systolic array).

The kernels are staged through SLM (slm=1, 2x2 threads where the tiles allow); double and
triple buffering use the heuristic's register copies of the global loads (gmem_bufs=2 for dpas)
and an LSC prefetch; single buffering has neither.  `--gmem-bufs` forces one count for all.
A variant that does not fit (a ConfigError, e.g. three SLM buffers too large for the platform)
shows its error in its layer's row.  Everything also goes to a JSON file (default
bench/schedule/results.json, not committed).  Bad arguments give one line `error: ...` and exit
status 2.

    python bench/schedule/run.py
    python bench/schedule/run.py --hw xehpc --dt bf16 --dir BWD_D
    python bench/schedule/run.py --real --layers 3 --json /tmp/schedule.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conv.shapes import RESNET, scaled, short_name  # noqa: E402
from xegen import hw  # noqa: E402
from xegen.conv import make_problem  # noqa: E402
from xegen.errors import ConfigError, Error  # noqa: E402
from xegen.pipeline import build_kernel  # noqa: E402
from xegen.plan import formulate  # noqa: E402
from xegen.schedule import model_cycles  # noqa: E402

STAGED = ({"slm": 1, "tg_m": 2, "tg_n": 2}, {"slm": 1, "tg_m": 2, "tg_n": 1}, {"slm": 1})
BUFFERS = (1, 2, 3)


def staged_config(problem, platform: str) -> dict | None:
    """The heuristic's configuration with SLM staging forced, or None if no staging fits."""
    for overrides in STAGED:
        try:
            return asdict(build_kernel(problem, platform, {**overrides, "slm_bufs": 1, "gmem_bufs": 1}).config)
        except ConfigError:
            continue
    return None


def build_variant(problem, platform: str, config: dict, slm_bufs: int, gmem_bufs: int | None):
    """The kernel with `slm_bufs` SLM buffers; gmem_bufs as given, else 1 for single buffering and
    the heuristic's choice (1 when two copies do not fit) for double and triple buffering."""
    overrides = {**config, "slm_bufs": slm_bufs, "gmem_bufs": gmem_bufs or 1}
    if gmem_bufs is None and slm_bufs > 1:
        del overrides["gmem_bufs"]
        try:
            return build_kernel(problem, platform, overrides)
        except ConfigError:
            overrides["gmem_bufs"] = 1
    return build_kernel(problem, platform, overrides)


def measure(problem, platform: str, config: dict, slm_bufs: int, gmem_bufs: int | None) -> dict:
    """Modeled cycles of one variant, or its ConfigError."""
    started = time.perf_counter()
    try:
        kernel = build_variant(problem, platform, config, slm_bufs, gmem_bufs)
    except ConfigError as error:
        return {"slm_bufs": slm_bufs, "error": str(error)}
    built = time.perf_counter()
    report = model_cycles(kernel.body, platform)
    return {
        "slm_bufs": slm_bufs,
        "gmem_bufs": kernel.config.gmem_bufs,
        **report.as_dict(),
        "build_seconds": round(built - started, 3),
        "model_seconds": round(time.perf_counter() - built, 3),
    }


def cell(result: dict) -> str:
    if "error" in result:
        return f"{'does not fit':>25}"
    return f"{result['cycles']:>9} {result['critical_path']:>7} {result['resource_bound']:>7}"


def speedup(single: dict, result: dict) -> str:
    if "error" in single or "error" in result:
        return "-"
    return f"{single['cycles'] / result['cycles']:.2f}"


def platform_name(text: str) -> str:
    try:
        return hw.platform(text).name
    except Error as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def positive(text: str) -> int:
    value = int(text)  # argparse turns a ValueError into "invalid positive value"
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of layers, not {text}")
    return value


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hw", default="xehpg", type=platform_name, help="platform (default xehpg)")
    parser.add_argument("--dt", default="f16", help="data types (default f16)")
    parser.add_argument("--dir", default="FWD_D", help="direction (default FWD_D)")
    parser.add_argument("--real", action="store_true", help="real layer sizes at minibatch 1 instead of scaled")
    parser.add_argument("--layers", type=positive, default=None, help="only the first N layers (N >= 1)")
    parser.add_argument(
        "--gmem-bufs", type=int, default=None, choices=(1, 2), help="force gmem_bufs (1 or 2) for every variant"
    )
    parser.add_argument("--json", default=str(Path(__file__).with_name("results.json")), help="output JSON file")
    args = parser.parse_args(argv)
    try:  # the data types and direction, checked once on the first layer
        make_problem(scaled(RESNET[0]), args.dir, args.dt)
    except Error as error:
        parser.error(str(error))
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    rows = []
    header = (
        f"{'layer':<22} {'M':>5} {'N':>4} {'K':>5} {'iters':>5} | "
        + " | ".join(f"{'slm_bufs=' + str(b):>9} {'cp':>7} {'res':>7}" for b in BUFFERS)
        + " | speedup 2, 3"
    )
    print(
        f"K loop of one thread, modeled on {args.hw} ({args.dir}, {args.dt}, "
        f"{'real sizes, mb1' if args.real else 'scaled'}): cycles, critical path (cp), resource bound (res)"
    )
    print(header)
    print("-" * len(header))
    for desc in RESNET[: args.layers]:
        problem = make_problem(desc if args.real else scaled(desc), args.dir, args.dt, mb=1 if args.real else None)
        config = staged_config(problem, args.hw)
        if config is None:
            print(f"{short_name(desc):<22} no SLM-staged configuration fits")
            continue
        results = [measure(problem, args.hw, config, b, args.gmem_bufs) for b in BUFFERS]
        sizes = formulate(problem)  # the GEMM's sizes, for the table
        iterations = -(-sizes.k.size // config["k_block"])
        cells = " | ".join(cell(r) for r in results)
        speedups = ", ".join(speedup(results[0], r) for r in results[1:])
        print(
            f"{short_name(desc):<22} {sizes.m.size:>5} {sizes.n.size:>4} {sizes.k.size:>5} {iterations:>5} | "
            f"{cells} | {speedups}"
        )
        for result in results:
            if "error" in result:
                print(f"{'':<22} slm_bufs={result['slm_bufs']}: {result['error']}")
        rows.append(
            {
                "layer": desc.name,
                "problem": str(problem.desc),
                "config": config,
                "M": sizes.m.size,
                "N": sizes.n.size,
                "K": sizes.k.size,
                "iterations": iterations,
                "results": results,
            }
        )
    Path(args.json).write_text(
        json.dumps({"hw": args.hw, "dt": args.dt, "direction": args.dir, "real": args.real, "layers": rows}, indent=1)
        + "\n"
    )
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
