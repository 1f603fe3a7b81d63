"""`xegen extract --compare xelp,xehpg,xehpc EXPR|FILE`: one e-graph, extracted per cost model."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..egraph.compare import compare_expression, compare_statement
from ..errors import Error, ParseError
from ..ir import parse_stmt
from .simplify import add_common_options, limits, parse_inputs


def _platforms(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise Error("--compare needs at least one platform, e.g. --compare xelp,xehpg")
    return names


def run(args: argparse.Namespace) -> int:
    platforms = _platforms(args.compare)
    path = Path(args.input)
    if path.is_file():
        text = path.read_text()
        try:
            expression, ranges, _ = parse_inputs(args, text)
            comparison = compare_expression(expression, platforms, ranges, args.extractor, args.rules, limits(args))
        except ParseError:
            _, ranges, types = parse_inputs(args, "0")
            comparison = compare_statement(parse_stmt(text, types), platforms, ranges, args.extractor, args.rules,
                                           limits(args))
    else:
        expression, ranges, _ = parse_inputs(args, args.input)
        comparison = compare_expression(expression, platforms, ranges, args.extractor, args.rules, limits(args))
    if args.json:
        print(json.dumps(comparison.to_json(), indent=2))
    else:
        print(comparison.text())
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "extract",
        help="extract an expression or kernel under several platform cost models, side by side",
        description="Saturate the e-graph of EXPR (or of the expression or statement in FILE) once per "
                    "platform and print the extracted program and its cost under each platform's model, "
                    "with the instructions each cost is made of.",
        epilog='example: xegen extract --compare xelp,xehpg "2*(a+b) - a"',
    )
    parser.add_argument("input", metavar="EXPR|FILE", help="an expression, or a file with an expression or statement")
    parser.add_argument("--compare", default="xelp,xehpg,xehpc", metavar="P1,P2,...",
                        help="comma-separated platforms (default xelp,xehpg,xehpc)")
    add_common_options(parser)
    parser.set_defaults(run=run)
