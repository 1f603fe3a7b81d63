"""`xegen rules check [FILE...]`: prove every rewrite rule sound."""

from __future__ import annotations

import argparse
import json
import os

from ..errors import Error


def run_check(args: argparse.Namespace) -> int:
    try:
        from ..egraph.check import check_rules
    except ImportError as error:
        raise Error(f"xegen rules check needs z3-solver and hypothesis ({error.name} is missing): "
                    "pip install 'xegen[test]'") from None
    verdicts = check_rules(args.files or None, examples=args.examples, timeout_ms=int(args.timeout * 1000),
                           jobs=args.jobs)
    failed = [v for v in verdicts if v.verdict in ("unsound", "error", "no comment")]
    if args.json:
        print(json.dumps({"rules": [v.to_json() for v in verdicts], "failed": len(failed)}, indent=2))
        return 1 if failed else 0
    width = min(70, max((len(v.rule.summary) for v in verdicts), default=10))
    print(f"{'rule':<{width}}  {'verdict':<10}  {'types':>5}  counterexample / detail")
    for v in verdicts:
        summary = v.rule.summary if len(v.rule.summary) <= width else v.rule.summary[:width - 3] + "..."
        detail = "; ".join(x for x in (v.counterexample, v.detail) if x)
        print(f"{summary:<{width}}  {v.verdict:<10}  {v.instances:>5}  {detail}")
        if v.verdict != "sound":
            print(f"{'':<{width}}  at {v.rule.location}")
    counts = {k: sum(1 for v in verdicts if v.verdict == k) for k in ("sound", "unproven", "unsound", "error", "no comment")}
    print(", ".join(f"{n} {k}" for k, n in counts.items() if n) + f" ({len(verdicts)} rules)")
    return 1 if failed else 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "rules",
        help="work with the rewrite rules (check: prove them sound)",
        description="Rule-file tools. 'xegen rules check' proves each rule at every type it applies to: "
                    "values through the reference interpreter (edges, negatives, zero, hypothesis search) and "
                    "a z3 bit-vector proof; it prints rule / verdict / counterexample and exits 1 if a rule "
                    "is unsound.",
    )
    sub = parser.add_subparsers(dest="rules_command", metavar="COMMAND", parser_class=type(parser))
    check = sub.add_parser("check", help="prove rules sound (default: the language and rules/)",
                           description="Check every rule of FILE... (default: xegen's term language and rules/).")
    check.add_argument("files", nargs="*", metavar="FILE", help="rule files or directories")
    check.add_argument("--examples", type=int, default=10, help="hypothesis examples per rule and type (default 10)")
    check.add_argument("--timeout", type=float, default=10.0, help="z3 time limit per proof, seconds (default 10)")
    check.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes (default: one per CPU)")
    check.add_argument("--json", action="store_true", help="print JSON instead of a table")
    check.set_defaults(run=run_check)

    def missing_command(args: argparse.Namespace) -> int:
        raise Error("missing COMMAND: xegen rules check [FILE...] (see 'xegen rules --help')")

    parser.set_defaults(run=missing_command)
