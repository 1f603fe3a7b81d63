"""`xegen extract --compare xelp,xehpg,xehpc EXPR|FILE`: the input optimized under each cost model, side by side."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from ..egraph.compare import compare_expression, compare_statement
from ..errors import Error, ParseError
from ..files import read_text
from ..ir import parse_stmt
from .simplify import add_common_options, limits, parse_inputs

MAX_FILE_BYTES = 1 << 20  # an expression or a kernel's statement: far less


def _platforms(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise Error("--compare needs at least one platform, e.g. --compare xelp,xehpg")
    return names


def _read_file(path: Path) -> str:
    text = read_text(str(path), MAX_FILE_BYTES, "expression files")
    if not text.strip():
        raise Error(f"{path}: the file is empty: no expression or statement to extract")
    return text


def run(args: argparse.Namespace) -> int:
    platforms = _platforms(args.compare)
    path = Path(args.input)
    if os.path.isfile(args.input):  # (False, not an error, for a name too long to be a file's)
        text = _read_file(path)
        try:
            expression, ranges, _ = parse_inputs(args, text)
        except ParseError as not_expression:
            _, ranges, types = parse_inputs(args, "0")
            try:
                statement = parse_stmt(text, types)
            except ParseError as not_statement:
                raise Error(
                    f"{path}: neither an expression ({not_expression}) nor a statement ({not_statement})"
                ) from None
            comparison = compare_statement(statement, platforms, ranges, args.extractor, args.rules, limits(args))
        else:
            comparison = compare_expression(expression, platforms, ranges, args.extractor, args.rules, limits(args))
    else:
        try:
            expression, ranges, _ = parse_inputs(args, args.input)
        except ParseError as error:
            if "/" in args.input or ("." in args.input and " " not in args.input.strip()):
                raise Error(f"{args.input}: not a file, and not an expression ({error})") from None
            raise
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
        description="Saturate the e-graph of EXPR (or of the expression or statement in FILE) and print "
        "the program extracted under each platform's cost model, its cost, and the instructions "
        "the cost is made of. An expression is saturated once (the rules do not depend on the "
        "platform) and extracted per platform; a statement is optimized once per platform.",
        epilog='example: xegen extract --compare xelp,xehpg "2*(a+b) - a"',
    )
    parser.add_argument("input", metavar="EXPR|FILE", help="an expression, or a file with an expression or statement")
    parser.add_argument(
        "--compare",
        default="xelp,xehpg,xehpc",
        metavar="P1,P2,...",
        help="comma-separated platforms (default xelp,xehpg,xehpc)",
    )
    add_common_options(parser)
    parser.set_defaults(run=run)
