"""`xegen rules check [FILE...]`: prove every rewrite rule sound."""

from __future__ import annotations

import argparse
import json
import os

from ..errors import Error


def run_check(args: argparse.Namespace) -> int:
    if not (args.effort is None or 0 < args.effort <= 100_000) or args.jobs < 1 or args.examples < 0:
        raise Error("--effort takes 0 < millions <= 100000, --jobs at least 1, --examples 0 or more")
    try:
        from ..egraph.check import EFFORT, VerdictCache, check_rules  # z3 and hypothesis: seconds, and optional
    except ImportError as error:
        raise Error(
            f"xegen rules check needs z3-solver and hypothesis ({error.name} is missing): pip install 'xegen[test]'"
        ) from None
    effort = EFFORT if args.effort is None else max(1, round(args.effort * 1e6))
    cache = None if args.no_cache else VerdictCache()
    verdicts = check_rules(args.files or None, examples=args.examples, effort=effort, jobs=args.jobs, cache=cache)
    failing = ("unsound", "error", "no comment") + (() if args.allow_unproven else ("unproven",))
    failed = [v for v in verdicts if v.verdict in failing]
    if args.json:
        print(
            json.dumps(
                {
                    "rules": [v.to_json() for v in verdicts],
                    "failed": len(failed),
                    "unproven": sum(1 for v in verdicts if v.verdict == "unproven"),
                },
                indent=2,
            )
        )
        return 1 if failed else 0
    width = max((len(v.rule.name) for v in verdicts), default=10)
    print(f"{'rule':<{width}}  {'verdict':<10}  {'types':>5}  counterexample / detail")
    for v in verdicts:
        detail = "; ".join(x for x in (v.counterexample, v.detail) if x)
        print(f"{v.rule.name:<{width}}  {v.verdict:<10}  {v.instances:>5}  {detail}")
        if v.verdict != "sound":
            print(f"{'':<{width}}  {v.rule.summary} (in {v.rule.file})")
    counts = {
        k: sum(1 for v in verdicts if v.verdict == k) for k in ("sound", "unproven", "unsound", "error", "no comment")
    }
    cached = sum(1 for v in verdicts if v.cached)
    print(
        ", ".join(f"{n} {k}" for k, n in counts.items() if n)
        + f" ({len(verdicts)} rules"
        + (f", {cached} verdicts from the cache" if cached else "")
        + ")"
    )
    if counts["unproven"]:
        print(
            f"{counts['unproven']} rule(s) unproven: z3 could not decide them within --effort {effort / 1e6:g}, "
            "so only samples back them"
            + (
                " (allowed by --allow-unproven)"
                if args.allow_unproven
                else "; a larger --effort may prove them, --allow-unproven accepts them"
            )
        )
    return 1 if failed else 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "rules",
        help="work with the rewrite rules (check: prove them sound)",
        description="Rule-file tools. 'xegen rules check' proves each rule at every type it applies to: "
        "values through the reference interpreter (edges, negatives, zero, hypothesis search) and "
        "a z3 proof (bit-vectors, or exact integer arithmetic); it prints rule / verdict / "
        "counterexample and exits 1 if a rule is unsound or unproven.",
    )
    sub = parser.add_subparsers(dest="rules_command", metavar="COMMAND", parser_class=type(parser))
    check = sub.add_parser(
        "check",
        help="prove rules sound (default: the language and rules/)",
        description="Check every rule of FILE... (default: xegen's term language and rules/). "
        "Exits 1 if a rule is unsound, cannot be read, has no comment, or is unproven "
        "(z3 gave up within --effort) unless --allow-unproven. Final verdicts are "
        "cached in ~/.cache/xegen/rules-check, keyed by the rule's text and the "
        "checker's version.",
    )
    check.add_argument("files", nargs="*", metavar="FILE", help="rule files or directories")
    check.add_argument("--examples", type=int, default=10, help="hypothesis examples per rule and type (default 10)")
    check.add_argument(
        "--effort",
        type=float,
        metavar="MILLIONS",
        help="z3's effort per encoding and type, in millions of its resource units (rlimit; an idle "
        "core does a few million a second): a bound on work, not time, so a verdict does not "
        "depend on the machine's speed or load (default: enough for every shipped rule)",
    )
    check.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes (default: one per CPU)")
    check.add_argument(
        "--allow-unproven",
        action="store_true",
        help="exit 0 even if z3 could not decide some rules (they are still reported)",
    )
    check.add_argument("--no-cache", action="store_true", help="check every rule again, and remember nothing")
    check.add_argument("--json", action="store_true", help="print JSON instead of a table")
    check.set_defaults(run=run_check)

    def missing_command(args: argparse.Namespace) -> int:
        raise Error("missing COMMAND: xegen rules check [FILE...] (see 'xegen rules --help')")

    parser.set_defaults(run=missing_command)
