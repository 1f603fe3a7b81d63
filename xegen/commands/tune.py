"""`xegen tune DESC|--batch FILE`: search each layer's configuration space under the cost model,
verify the winners in the simulator, record them in the tuning database (docs/tune.md)."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

from ..errors import Error
from ..hw import platform
from ..plan import parse_overrides
from ..progress import Progress
from ..tune.backends import make_backend
from ..tune.database import Database, default_path, version_key
from ..tune.tuner import VERIFY_TOP, Layer, Result, tune
from .conv import Entry, add_problem_options, add_worker_options, entries, integer_at_least, seed_argument


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text}: must be more than 0")
    return value


def run(args: argparse.Namespace) -> int:
    if args.export is not None or args.import_ is not None:
        return _move_rows(args)
    if args.jobs < 1:
        raise Error(f"-j {args.jobs}: at least one worker")
    hw = platform(args.hw)
    given = tuple(parse_overrides(args.config).items())
    layers, failures = [], []
    for entry in entries(args):
        try:
            problem = entry.problem(args)
        except Error as error:
            if args.batch is None:
                raise
            failures.append(_failed_row(entry, error, args.json))
            continue
        layers.append(Layer(problem, hw, given, entry.source or problem.desc.name or str(problem.desc)))
    database = None if args.no_record else Database(args.db or default_path())
    version = version_key()
    progress = Progress(1, enabled=not args.json)
    printer = _InOrder(len(layers), args.json, progress)

    def on_progress(label: str, done: int, total: int) -> None:
        progress.finished(done, total, label)

    def on_result(index: int, result: Result) -> None:
        recorded = False
        entry = result.entry(args.seed, version)
        if database is not None and entry is not None:
            recorded = database.record(entry) > 0
        printer.add(index, result, recorded)

    backend = make_backend(args.jobs, args.ray)
    try:
        results = tune(layers, backend, args.budget, args.seconds, args.seed, args.verify_top, on_progress, on_result)
    finally:
        backend.close()
        progress.clear()
    if args.json:
        print(json.dumps(failures + printer.rows, indent=2))
    status = 1 if failures or any(r.error for r in results) else 0
    return status


def _failed_row(entry: Entry, error: Error, as_json: bool) -> dict:
    line = f"{entry.source or entry.text}: error: {error}"
    print(line, file=sys.stderr if as_json else sys.stdout)
    return {"descriptor": entry.text, "source": entry.source, "error": str(error)}


class _InOrder:
    """Prints each layer's result in the order the layers were given, as soon as those before it are done."""

    def __init__(self, count: int, as_json: bool, progress: Progress):
        self.waiting: dict[int, tuple[Result, bool]] = {}
        self.next, self.as_json, self.progress = 0, as_json, progress
        self.rows: list[dict] = []

    def add(self, index: int, result: Result, recorded: bool) -> None:
        self.waiting[index] = (result, recorded)
        while self.next in self.waiting:
            result, recorded = self.waiting.pop(self.next)
            self.next += 1
            self.rows.append(as_json(result, recorded))
            if not self.as_json:
                self.progress.clear()
                print(format_result(result, recorded), flush=True)


def as_json(result: Result, recorded: bool) -> dict:
    def config(c):
        return None if c is None else str(c)

    return {
        "layer": result.layer.name,
        "problem": str(result.layer.problem),
        "hw": result.layer.hw.name,
        "method": result.method,
        "space": result.space,
        "evaluated": result.evaluated,
        "heuristic": {"config": config(result.heuristic), "modeled_cycles": result.heuristic_cycles},
        "tuned": {
            "config": config(result.winner),
            "modeled_cycles": result.winner_cycles,
            "verified_on": result.verified_on,
        },
        "gain": result.gain,
        "recorded": recorded,
        "failed": [{"config": str(c), "error": why} for c, why in result.failed],
        "rejected": [{"config": str(c), "error": why} for c, why in result.rejected],
        "ranking": [{"config": str(c), "modeled_cycles": cycles} for c, cycles in result.ranking],
        **({"error": result.error} if result.error else {}),
    }


def format_result(result: Result, recorded: bool) -> str:
    name = result.layer.name
    if result.error:
        return f"{name}: error: {result.error}"
    gain = f"{result.gain:.2f}x" if result.gain else "-"
    lines = [
        f"{name}: {result.winner_cycles:.0f} modeled cycles, {gain} the heuristic's {result.heuristic_cycles:.0f}",
        f"  config: {result.winner}",
        f"  {result.method}: {result.evaluated} configurations modeled of {result.space}"
        + (f", {len(result.failed)} did not compile" if result.failed else "")
        + (f"; verified on {result.verified_on}" if result.verified_on else "")
        + ("; recorded" if recorded else ""),
    ]
    for config, why in result.rejected:
        lines.append(f"  rejected by the simulator: {config}: {why}")
    internal = [why for _, why in result.failed if why.startswith("internal error")]
    if internal:
        lines.append(f"  {len(internal)} configurations hit a compiler error, the first: {internal[0]}")
    return "\n".join(lines)


def _move_rows(args: argparse.Namespace) -> int:
    if args.desc or args.batch:
        raise Error("--export and --import move database rows; give no descriptor or --batch with them")
    path = args.db or default_path()
    if args.export is not None:
        database = Database.existing(path)
        lines = list(database.export_lines()) if database else []
        text = "".join(line + "\n" for line in lines)
        if args.export == "-":
            sys.stdout.write(text)
        else:
            Path(args.export).write_text(text)
            print(f"exported {len(lines)} rows of {path} to {args.export}")
        return 0
    source = args.import_
    text = sys.stdin.read() if source == "-" else Path(source).read_text()
    with Database(path) as database:
        read, changed = database.import_lines(text.splitlines(), "<stdin>" if source == "-" else source)
    print(f"imported {read} rows into {path}: {changed} new or better, {read - changed} kept as they were")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "tune",
        help="search each layer's configuration space under the cost model and record the best in a tuning database",
        description=textwrap.fill(
            "Tune convolutions: for each layer, compile and model configurations of its space (xegen conv "
            "--print-space shows it), starting from the heuristic's choice, by an evolutionary search of --budget "
            "configurations (every one when the space is that small); the best few run in the simulator at a "
            "reduced problem, and the best that verifies is recorded in the tuning database, where xegen conv "
            "finds it. Layers run interleaved on -j local worker processes or on a Ray cluster (--ray).",
            100,
        ),
        epilog="examples:\n"
        "  xegen tune mb1ic256ih14oc256oh14kh3ph1 --hw xehpg --budget 64\n"
        "  xegen tune --batch shapes_resnet_50 --mb 1 --dt f16 -j 2 --json > tuned.json\n"
        "  xegen tune --batch shapes_resnet_50 --mb 1 --ray auto --budget 256\n"
        "  xegen tune --export team.jsonl          xegen tune --import team.jsonl --db shared.sqlite",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("desc", nargs="?", metavar="DESC", help="descriptor, e.g. mb1ic256ih14oc256oh14kh3ph1")
    parser.add_argument(
        "--batch",
        metavar="FILE",
        help="also tune the descriptors of FILE, one per line ('#' comments); a bad line is reported "
        "(FILE:LINE) and the others are tuned, exit status 1",
    )
    add_problem_options(parser)
    search = parser.add_argument_group("search")
    search.add_argument(
        "--budget",
        type=integer_at_least(1),
        default=64,
        metavar="N",
        help="configurations to compile and model per layer (default 64)",
    )
    search.add_argument(
        "--seconds",
        type=_seconds,
        metavar="S",
        help="stop proposing configurations after S seconds (those started finish and are verified)",
    )
    search.add_argument(
        "--seed",
        type=seed_argument,
        default=0,
        help="seed of the search and of the verification data (default 0): the same seed, the same winners",
    )
    search.add_argument(
        "--verify-top",
        type=integer_at_least(1),
        default=VERIFY_TOP,
        metavar="K",
        help=f"run the best K configurations in the simulator (default {VERIFY_TOP}); the best that verifies wins",
    )
    workers = parser.add_argument_group("workers")
    add_worker_options(workers)
    database = parser.add_argument_group("database")
    database.add_argument(
        "--db", metavar="PATH", help="the tuning database (default $XEGEN_TUNING_DB, else ~/.cache/xegen/tuning.sqlite)"
    )
    database.add_argument("--no-record", action="store_true", help="tune and print, but write nothing to the database")
    database.add_argument(
        "--export", metavar="FILE", help="write every row of the database to FILE as JSON lines ('-': standard output)"
    )
    database.add_argument(
        "--import",
        dest="import_",
        metavar="FILE",
        help="add the JSON lines of FILE ('-': standard input); a row replaces one of the same "
        "problem, platform and version only if it models fewer cycles",
    )
    parser.add_argument("--json", action="store_true", help="print the results as one JSON list on standard output")
    parser.set_defaults(run=run)
