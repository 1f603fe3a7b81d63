"""`xegen simplify EXPR`: the cheapest equivalent expression under one platform's cost model."""

from __future__ import annotations

import argparse
import json
import math

from ..egraph import EXTRACTORS, Limits, simplify
from ..egraph.costs import format_cost
from ..egraph.ranges import parse_var_spec
from ..errors import Error
from ..hw import PLATFORMS
from ..ir import parse_expr


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by simplify and extract."""
    parser.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME[:TYPE][LO,HI)",
        help="declare a variable's type and range, e.g. x:s32[0,1024) (repeatable); variables are s32 unless typed",
    )
    parser.add_argument(
        "--extractor",
        choices=EXTRACTORS,
        default="dag",
        help="tree: egglog's extractor; dag: greedy DAG (default); ilp: exact DAG by integer programming",
    )
    parser.add_argument(
        "--rules",
        action="append",
        metavar="DIR",
        default=None,
        help="rule files or directories to use instead of rules/ (repeatable)",
    )
    parser.add_argument(
        "--iterations", type=int, default=Limits.iterations, help="saturation bound: rewrite iterations"
    )
    parser.add_argument("--nodes", type=int, default=Limits.nodes, help="saturation bound: e-graph nodes")
    parser.add_argument("--seconds", type=float, default=Limits.seconds, help="saturation bound: wall-clock seconds")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def parse_inputs(args: argparse.Namespace, text: str):
    """The expression (typed by --var) and the declared ranges."""
    specs = [parse_var_spec(v) for v in args.var]
    names = [s.name for s in specs]
    twice = next((name for i, name in enumerate(names) if name in names[:i]), None)
    if twice is not None:
        raise Error(f"--var {twice} is given twice")
    types = {s.name: s.type for s in specs if s.type is not None}
    ranges = {s.name: s.range for s in specs if s.range is not None}
    return parse_expr(text, types), ranges, types


def limits(args: argparse.Namespace) -> Limits:
    if not (math.isfinite(args.seconds) and args.seconds > 0):
        raise Error(f"--seconds takes a positive number, not {args.seconds}")
    if args.iterations < 1 or args.nodes < 1:
        raise Error("--iterations and --nodes take positive integers")
    return Limits(args.iterations, args.nodes, args.seconds)


def run(args: argparse.Namespace) -> int:
    expression, ranges, _ = parse_inputs(args, args.expr)
    result = simplify(
        expression, args.hw, ranges=ranges, extractor=args.extractor, rules=args.rules, limits=limits(args)
    )
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
        return 0
    print(result.result)
    print(
        f"cost {format_cost(result.cost_before)} -> {format_cost(result.cost_after)} on {result.hw.display_name} "
        f"({result.extractor} extraction, {result.egraph_nodes} e-graph nodes, {result.milliseconds:.1f} ms)"
    )
    if result.saturation.bound_hit:
        print(f"note: saturation {result.saturation.describe()}: the result may not be the best the rules can reach")
    if result.note:
        print(f"note: {result.note}")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "simplify",
        help="optimize an expression with the rewrite rules and a platform cost model",
        description="Put EXPR in an e-graph, rewrite it with the rules of rules/ (bounded saturation), and "
        "extract the cheapest equivalent under the platform's cost model. Ranges declared with "
        "--var guard the div/mod/comparison rules.",
        epilog='example: xegen simplify "2*(a+b) - a" --hw xehpg',
    )
    parser.add_argument("expr", metavar="EXPR", help="the expression, in xegen's C syntax")
    parser.add_argument(
        "--hw",
        default="xehpg",
        metavar="PLATFORM",
        help=f"platform cost model: {', '.join(p.name for p in PLATFORMS)} (default xehpg)",
    )
    add_common_options(parser)
    parser.set_defaults(run=run)
