"""Bench: xegen's e-graph optimizer against Halide's and tinygrad's simplifiers on convolution
index expressions, all costed under xegen's XeHPG cost model.

    python bench/simplify/run.py [--hw xehpg] [--json out.json] [--repeat 5]

Prints per expression: xegen's result, cost and CPU time (median of warm runs) and e-graph size;
Halide's and tinygrad's results and costs.  A peer's result is checked against the input with the
interpreter on random values within the declared ranges ("wrong" if they differ).  Then issue 22's
speed goals, in CPU time of this process (`time.process_time`, egglog's threads included), medians
of warm runs: one simplification of a 30-40-node expression (the corpus's) <= 50 ms, of a
300-node one (seeded index-style expressions) <= 200 ms, and a kernel of a few hundred expressions
in one e-graph <= 1 s.  `--speed` measures only these (no peers).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

from corpus import corpus  # noqa: E402
from peers import from_sexpr, halide_simplify, tinygrad_simplify  # noqa: E402
from random_corpus import index_generator  # noqa: E402

from xegen import ir  # noqa: E402
from xegen.egraph import CostModel, simplify  # noqa: E402
from xegen.egraph.costs import format_cost  # noqa: E402
from xegen.egraph.kernel import optimize_stmt_report  # noqa: E402


def same_values(a: ir.Expr, b: ir.Expr, ranges: dict, samples: int = 400) -> bool:
    rng = np.random.default_rng(1)
    env = {}
    for v in ir.free_vars(a):
        r = ranges[v.name]
        values = np.concatenate([[r.start, r.stop - 1], rng.integers(r.start, r.stop, samples)])
        env[v.name] = values.astype(ir.semantics.numpy_dtype(v.type))
    try:
        x = np.broadcast_to(ir.evaluate(a, env), (samples + 2,))
        y = np.broadcast_to(ir.evaluate(b, env), (samples + 2,))
    except Exception:
        return False
    return bool(np.array_equal(x.astype(np.int64), y.astype(np.int64)))


def timed(function, repeat: int):
    """The last result and the median CPU time of `repeat` runs, in ms (CPU, not wall: the
    machine's other load does not count)."""
    times, result = [], None
    for _ in range(repeat):
        start = time.process_time()
        result = function()
        times.append((time.process_time() - start) * 1000)
    return result, statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hw", default="xehpg")
    parser.add_argument("--repeat", type=int, default=5, help="warm runs per expression (median time)")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--speed", action="store_true", help="only the speed goals")
    args = parser.parse_args()
    model = CostModel(args.hw)
    cases = corpus()
    exprs = [ir.parse_expr(c.text) for c in cases]
    simplify("x + 0", model)  # load the rules once
    if args.speed:
        speed = speed_goals(model, cases, args.repeat)
        print_speed(speed)
        if args.json:
            args.json.write_text(json.dumps({"hw": args.hw, "speed": speed}, indent=2))
        return 0
    halide_out = halide_simplify([(e, c.ranges) for e, c in zip(exprs, cases, strict=True)])
    rows = []
    for case, e, halide_text in zip(cases, exprs, halide_out, strict=True):
        result, ms = timed(partial(simplify, e, model, ranges=case.ranges), args.repeat)
        row = {
            "name": case.name,
            "input": case.text,
            "cost_input": model.dag_cost(e, case.ranges),
            "xegen": str(result.result),
            "xegen_cost": result.cost_after,
            "xegen_ms": round(ms, 2),
            "egraph_nodes": result.egraph_nodes,
            "stop": result.saturation.stop,
            "xegen_ok": same_values(e, result.result, case.ranges),
        }
        types = {v.name: v.type for v in ir.free_vars(e)}
        try:
            h = from_sexpr(halide_text, types) if not halide_text.startswith("error") else None
        except Exception as error:  # a Halide form we cannot read back
            h, halide_text = None, f"unreadable: {error}"
        row["halide"] = str(h) if h is not None else halide_text
        row["halide_ok"] = h is not None and same_values(e, h, case.ranges)
        row["halide_cost"] = model.dag_cost(h, case.ranges) if row["halide_ok"] else None
        try:
            t = tinygrad_simplify(e, case.ranges)
            row["tinygrad"] = str(t)
            row["tinygrad_ok"] = same_values(e, t, case.ranges)
            row["tinygrad_cost"] = model.dag_cost(t, case.ranges) if row["tinygrad_ok"] else None
        except Exception as error:
            row["tinygrad"], row["tinygrad_ok"], row["tinygrad_cost"] = f"error: {error}", False, None
        rows.append(row)
    print_table(rows, model)
    speed = speed_goals(model, cases, args.repeat)
    print_speed(speed)
    if args.json:
        args.json.write_text(json.dumps({"hw": args.hw, "rows": rows, "speed": speed}, indent=2))
    return 0


def print_table(rows, model) -> None:
    def c(x):
        return "n/a" if x is None else format_cost(x)

    print(f"cost model: {model.hw.display_name}\n")
    print(
        f"{'expression':<30} {'in':>4} {'xegen':>5} {'halide':>6} {'tinygrad':>8} {'ms':>6} {'nodes':>6}  xegen result"
    )
    wins = ties = losses = 0
    for r in rows:
        peers = [x for x in (r["halide_cost"], r["tinygrad_cost"]) if x is not None]
        if not r["xegen_ok"]:
            verdict = "WRONG"
        elif peers and r["xegen_cost"] > min(peers):
            verdict, losses = "worse", losses + 1
        elif peers and all(r["xegen_cost"] < p for p in peers):
            verdict, wins = "better", wins + 1
        else:
            verdict, ties = "tie", ties + 1
        r["verdict"] = verdict
        print(
            f"{r['name']:<30} {r['cost_input']:>4} {c(r['xegen_cost']):>5} {c(r['halide_cost']):>6} "
            f"{c(r['tinygrad_cost']):>8} {r['xegen_ms']:>6.1f} {r['egraph_nodes']:>6}  {r['xegen']}  [{verdict}]"
        )
    print(f"\nxegen strictly cheaper than both peers on {wins}, tied on {ties}, costlier on {losses} of {len(rows)}")
    for r in rows:
        if r["verdict"] in ("worse", "WRONG"):
            print(
                f"  {r['verdict']}: {r['name']}: xegen {r['xegen']} | halide {r['halide']} | tinygrad {r['tinygrad']}"
            )
    bad_peers = [r["name"] for r in rows if not (r["halide_ok"] and r["tinygrad_ok"])]
    if bad_peers:
        print(f"peer results not usable (unreadable or not equal to the input): {', '.join(bad_peers)}")


#: issue 22's goals, ms of CPU time: one 30-40-node expression, one 300-node one, a kernel
GOALS = {"small": 50, "large": 200, "kernel": 1000}


def large_expressions(count: int = 5, nodes: int = 300) -> list[tuple[ir.Expr, dict]]:
    """`count` seeded index-style expressions of about `nodes` nodes, every variable in [0, 4096)."""
    rng = random.Random(22)
    found = []
    while len(found) < count:
        e = ir.parse_expr(index_generator(rng).expr(nodes))
        if abs(ir.node_count(e) - nodes) <= nodes // 10:
            found.append((e, {v.name: range(0, 4096) for v in ir.free_vars(e)}))
    return found


def speed_goals(model, cases, repeat: int = 5) -> dict:
    """Issue 22's speed measures: the median over expressions of each one's median CPU time."""
    small = [(ir.parse_expr(c.text), c.ranges) for c in cases if 30 <= ir.node_count(ir.parse_expr(c.text)) <= 40]
    small_ms = [timed(lambda e=e, r=r: simplify(e, model, ranges=r), repeat)[1] for e, r in small]
    large = large_expressions()
    large_ms = [timed(lambda e=e, r=r: simplify(e, model, ranges=r), max(1, repeat // 2))[1] for e, r in large]
    # a kernel: every corpus expression six times, each copy with its own constant offset (as an
    # unrolled loop would have it), so that every stored value is a different expression
    stores = []
    ranges = {}
    for k, c in enumerate(cases * 6):
        ranges.update(c.ranges)
        value = ir.parse_expr(c.text)
        if value.type.is_bool:
            value = ir.cast(ir.S32, value)
        stores.append(f"OUT[{4 * k}] = ({value}) + {64 * (k // len(cases))};")
    stmt = ir.parse_stmt("\n".join(stores))
    report, kernel_ms = timed(lambda: optimize_stmt_report(stmt, model, ranges=ranges), 3)
    return {
        "small_expressions": len(small),
        "small_nodes": [ir.node_count(e) for e, _ in small],
        "small_ms": round(statistics.median(small_ms), 2),
        "small_max_ms": round(max(small_ms), 2),
        "large_expressions": len(large),
        "large_nodes": [ir.node_count(e) for e, _ in large],
        "large_ms": round(statistics.median(large_ms), 2),
        "large_max_ms": round(max(large_ms), 2),
        "kernel_expressions": len(stores),
        "kernel_ms": round(kernel_ms, 1),
        "kernel_nodes": report.egraph_nodes,
        "kernel_stop": report.saturation.describe(),
        "goals_ms": GOALS,
    }


def print_speed(speed: dict) -> None:
    def verdict(ms: float, goal: int) -> str:
        return f"goal <= {goal} ms: {'met' if ms <= goal else 'NOT met'}"

    print(
        f"\nspeed (CPU time, medians): {speed['small_expressions']} expressions of 30-40 nodes: "
        f"{speed['small_ms']:.1f} ms (slowest {speed['small_max_ms']:.1f}), "
        f"{verdict(speed['small_ms'], GOALS['small'])}"
    )
    print(
        f"speed: {speed['large_expressions']} expressions of ~300 nodes ({min(speed['large_nodes'])}-"
        f"{max(speed['large_nodes'])}): {speed['large_ms']:.1f} ms (slowest {speed['large_max_ms']:.1f}), "
        f"{verdict(speed['large_ms'], GOALS['large'])}"
    )
    print(
        f"speed: a kernel of {speed['kernel_expressions']} expressions in one e-graph: {speed['kernel_ms']:.0f} ms, "
        f"{verdict(speed['kernel_ms'], GOALS['kernel'])}; {speed['kernel_nodes']} e-graph nodes, {speed['kernel_stop']}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
