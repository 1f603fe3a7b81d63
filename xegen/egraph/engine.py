"""Running the rules: one e-graph per rule set, bounded saturation, snapshots for extraction.

The language and the rules are loaded into an egglog e-graph once per process (per rule set);
each problem runs between `push` and `pop`, so it starts from a clean e-graph without paying for
parsing the rules again.

The schedule:

    run(expand)                                        the input's add3/mad as adds and multiplies
    repeat: saturate(analysis + fold + canon) ; run(rewrite)     the algebra, until nothing changes
    2 times: saturate(analysis + fold + canon) ; run(lower)     strength reduction and peepholes

Interval analysis, constant folding and canonical forms go to a fixed point before each round of
the algebra.  Runs that provably change nothing are left out (SETTLE, LOWER_AGAIN, the loop's last
iteration): the runs that change the e-graph are the plain schedule's, in the same order.  The
lowering rules run after the algebra: they offer cheaper instruction sequences
(shifts, magic-number division, add3, mad) for the extractor to choose among, and feeding them
back into the algebra only multiplies the e-graph.  Saturation stops when nothing changes or at
the first bound hit (iterations, e-graph nodes, wall-clock time); the report says which.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..errors import Error, RuleError
from .bindings import bindings
from .forks import keep_through_forks
from .rules import LANGUAGE_FILE, RuleFile, RuleSet, constructors, egglog_message, language_text
from .terms import TY_TYPES, quote

#: term constructors whose rows are e-graph nodes (the Expr sort), as language.egg declares them
EXPR_CONSTRUCTORS = constructors("Expr")

#: the schedule's steps; the loops (with the bounds) are in Python.  SETTLE saturates analysis,
#: fold and canon together: it runs each to its fixed point in turn, (analysis* fold* canon*)
#: repeated, until none of them changes anything.  Written as analysis* (fold* canon*
#: analysis*)+, it makes the same runs in the same order but stops once the turn that ends with
#: analysis changes nothing: analysis is most often the last to change, and a turn that starts
#: with it would then find nothing in three more runs (each costs ~0.1-0.3 ms even so).
SETTLE = "(seq (saturate analysis) (saturate (seq (saturate fold) (saturate canon) (saturate analysis))))"
EXPAND = "(run-schedule (run expand))"
SETTLE_PROGRAM = f"(run-schedule {SETTLE})"
REWRITE = "(run-schedule (run rewrite))"
LOWER = f"(run-schedule {SETTLE} (run lower) {SETTLE})"
#: a lowering round after the first starts from a settled e-graph, so it does not settle first
LOWER_AGAIN = f"(run-schedule (run lower) {SETTLE})"
LOWER_ROUNDS = 2
#: commands per egglog program when adding a problem's terms: a program's parse and run grow
#: quadratically with its commands, so small ones are fastest (res2a_branch2b's ~1,400 commands:
#: 0.11 s at 64, 0.04 s at 4, no faster at 1 or 2)
COMMANDS_PER_PROGRAM = 4
#: top-level forms per egglog program when loading a rule file, for the same reason (the rules
#: load in 0.1 s instead of 0.2 s)
FORMS_PER_PROGRAM = 8
#: a step is not started when it would likely end with more than this many times the node limit
NODE_OVERSHOOT = 2
#: egglog keeps a report of every iteration it ran (`pop` carries the popped e-graph's report over),
#: and `push` copies it with the e-graph: a push and pop costs ~16 ms with the rules alone and
#: ~2 ms more per 1,000 iterations run (~100 per 30-node problem); past this many the rules are
#: loaded again (~0.15 s), which costs less than the copies it saves
HISTORY_LIMIT = 5_000


@dataclass(frozen=True)
class Limits:
    """Bounds on saturation; the first one reached stops it.  `seconds=math.inf`: no wall-clock
    bound, so that the result does not depend on the machine's load (benches that compare runs)."""

    iterations: int = 10
    nodes: int = 20_000
    seconds: float = 2.0

    def __post_init__(self):
        if self.iterations < 1 or self.nodes < 1 or not self.seconds > 0:  # (nan fails too)
            raise Error(f"saturation limits must be positive, not {self}")


@dataclass
class SaturationReport:
    iterations: int = 0
    nodes: int = 0
    stop: str = "saturated"  # or "iteration limit", "node limit", "time limit"
    seconds: float = 0.0

    @property
    def bound_hit(self) -> bool:
        return self.stop != "saturated"

    def describe(self) -> str:
        if self.stop == "saturated":
            return f"saturated after {self.iterations} iterations ({self.nodes} nodes)"
        return f"stopped at the {self.stop} after {self.iterations} iterations ({self.nodes} nodes)"


class _LoadedRules:
    """An egglog e-graph with the language and one rule set loaded (the base state)."""

    def __init__(self, rule_set: RuleSet):
        eb = bindings()  # loaded at the first saturation, not with xegen (bindings.py)

        self.eb = eb
        self.graph = eb.EGraph()
        keep_through_forks(self)  # (its e-graph and the programs parsed by it)
        self.graph.run_program(*self.graph.parse_program(language_text(), filename=str(LANGUAGE_FILE)))
        for f in rule_set.files:
            for text in programs(f):
                try:
                    self.graph.run_program(*self.graph.parse_program(text, filename=str(f.path)))
                except eb.EggSmolError as error:
                    raise RuleError(egglog_message(error, f.path)) from None
        self.expand = self.graph.parse_program(EXPAND)
        self.settle = self.graph.parse_program(SETTLE_PROGRAM)
        self.rewrite = self.graph.parse_program(REWRITE)
        self.lower = self.graph.parse_program(LOWER)
        self.lower_again = self.graph.parse_program(LOWER_AGAIN)
        self.push = self.graph.parse_program("(push)")
        self.pop = self.graph.parse_program("(pop)")
        self.print_size = self.graph.parse_program("(print-size)")
        self.lock = threading.Lock()
        #: iteration reports egglog keeps in its overall run report (see HISTORY_LIMIT)
        self.history = 0


def programs(f: RuleFile) -> list[str]:
    """The rule file's text in programs of FORMS_PER_PROGRAM top-level forms (cut where a form
    opens), each after as many newlines and spaces as the text before it has lines and columns:
    egglog's errors then name the file's lines."""
    text = f.text
    line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    cuts = [line_starts[form.line - 1] + form.column - 1 for form in f.forms[FORMS_PER_PROGRAM::FORMS_PER_PROGRAM]]
    pieces, begin = [], 0
    for end in [*cuts, len(text)]:
        lines_before = text.count("\n", 0, begin)
        pieces.append("\n" * lines_before + " " * (begin - line_starts[lines_before]) + text[begin:end])
        begin = end
    return pieces


#: the loaded rule sets by digest, per thread: an egglog e-graph may be used, and dropped, only
#: on the thread that made it (xegen.deep runs commands on a thread of its own)
_LOADED = threading.local()


def _loaded(rule_set: RuleSet) -> _LoadedRules:
    per_thread = _LOADED.__dict__.setdefault("by_digest", {})
    loaded = per_thread.get(rule_set.digest)
    if loaded is None or loaded.history > HISTORY_LIMIT:
        loaded = per_thread[rule_set.digest] = _LoadedRules(rule_set)
    return loaded


def prepare(rule_set: RuleSet) -> None:
    """Load the language and `rule_set` into egglog now (once per process; a few hundred ms), so
    that the time a problem reports is its own."""
    _loaded(rule_set)


@dataclass
class Seeds:
    """Facts added with the terms: variable ranges, ranks, loop and let relations."""

    ranges: dict[str, tuple[str, int | None, int | None]] = field(default_factory=dict)  # term -> (term, lo, hi)
    ranks: dict[str, int] = field(default_factory=dict)  # term text -> rank
    facts: list[str] = field(default_factory=list)  # extra egglog commands, e.g. (InLoop ...)

    def actions(self) -> list[str]:
        lines = []
        for term, (_, lo, hi) in self.ranges.items():
            if lo is not None:
                lines.append(f"(set (lo {term}) {lo})")
            if hi is not None:
                lines.append(f"(set (hi {term}) {hi})")
        for term, rank in self.ranks.items():
            lines.append(f"(set (rank {term}) {rank})")
        lines.extend(self.facts)
        return lines


class Run:
    """One problem in the e-graph: its roots after saturation, ready for extraction."""

    def __init__(self, loaded: _LoadedRules, root_count: int, report: SaturationReport):
        self.loaded = loaded
        self.graph = loaded.graph
        self.root_count = root_count
        self.report = report

    def root_values(self) -> list:
        eb = self.loaded.eb
        span = eb.PanicSpan()
        return [
            self.graph.eval_expr(eb.Call(span, "root", [eb.Lit(span, eb.Int(i))]))[1] for i in range(self.root_count)
        ]


@contextmanager
def saturate(
    rule_set: RuleSet,
    roots: Sequence[str],
    seeds: Seeds | None = None,
    limits: Limits = Limits(),
    pieces: Sequence[str] = (),
) -> Iterator[Run]:
    """Add the root terms (egglog text, after the `let` commands of the `pieces` they refer to)
    and seeds, run the schedule within `limits`, and yield the run for extraction; the e-graph
    returns to its base state afterwards."""
    loaded = _loaded(rule_set)
    graph = loaded.graph
    with loaded.lock:
        graph.run_program(*loaded.push)
        try:
            # roots go in a table (a global `let` per root would slow every later step down),
            # one command each, parsed and run in chunks: egglog's parse and run of one program
            # grow quadratically with its number of commands
            actions = [*pieces, *(f"(set (root {i}) {term})" for i, term in enumerate(roots))]
            if seeds is not None:
                actions.extend(seeds.actions())
            for start in range(0, len(actions), COMMANDS_PER_PROGRAM):
                chunk = "\n".join(actions[start : start + COMMANDS_PER_PROGRAM])
                graph.run_program(*graph.parse_program(chunk))
            report = _run_bounded(loaded, limits)
            yield Run(loaded, len(roots), report)
        finally:
            graph.run_program(*loaded.pop)


def node_count(loaded: _LoadedRules) -> int:
    (output,) = loaded.graph.run_program(*loaded.print_size)
    return sum(size for name, size in output.sizes if name in _EXPR_SET)


_EXPR_SET = frozenset(EXPR_CONSTRUCTORS)


def _run_bounded(loaded: _LoadedRules, limits: Limits) -> SaturationReport:
    """Run the schedule step by step within `limits`.  egglog cannot stop inside a step, so a
    step is not started when the last one's growth, repeated, would take it past the time limit
    or far past the node limit (each step grows the e-graph, and takes time, roughly in proportion
    to the one before)."""
    report = SaturationReport()
    start = time.perf_counter()
    last = {"growth": 1.0, "seconds": 0.0}  # the last step's growth factor and duration

    def step(*programs) -> list[bool]:
        """Run the programs as one step; whether each changed the e-graph."""
        began, before = time.perf_counter(), report.nodes
        changed = []
        for program in programs:
            outputs = loaded.graph.run_program(*program)
            reports = [o.report for o in outputs if getattr(o, "report", None) is not None]
            loaded.history += sum(len(r.iterations) for r in reports)
            changed.append(any(r.updated for r in reports))
        report.nodes = node_count(loaded)
        report.seconds = time.perf_counter() - start
        last.update(growth=report.nodes / before if before else 1.0, seconds=time.perf_counter() - began)
        return changed

    def bound_hit() -> str | None:
        if report.nodes >= limits.nodes:
            return "node limit"
        if report.seconds >= limits.seconds:
            return "time limit"
        growth = max(last["growth"], 1.0)
        if report.nodes * growth >= NODE_OVERSHOOT * limits.nodes:
            return "node limit"
        if report.seconds + last["seconds"] * growth >= limits.seconds:
            return "time limit"
        return None

    step(loaded.expand)
    report.stop = "saturated"
    while True:
        settled, rewrote = step(loaded.settle, loaded.rewrite)
        report.iterations += 1
        if not (settled or rewrote):
            break
        hit = bound_hit() or ("iteration limit" if report.iterations >= limits.iterations else None)
        if hit:
            report.stop = hit
            break
        if not rewrote:
            # the next iteration would change nothing (the e-graph is settled and the rewrites
            # found nothing in it since), and end the loop: it is counted, not run (an empty
            # rewrite run costs ~1.5 ms); the node bound sees what running it would have left,
            # the time bound a step that took no time
            report.iterations += 1
            report.seconds = time.perf_counter() - start
            last.update(growth=1.0, seconds=0.0)
            break
    for lowering in range(LOWER_ROUNDS):
        hit = bound_hit()
        if hit:
            report.stop = hit
            break
        step(loaded.lower if lowering == 0 else loaded.lower_again)
    return report


def var_term(name: str, type_name: str) -> str:
    return f"(Var ({type_name}) {quote(name)})"


def ty_name_of(type_) -> str:
    for name, t in TY_TYPES.items():
        if t == type_:
            return name
    raise KeyError(type_)
