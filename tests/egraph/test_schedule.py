"""The engine's schedule leaves out runs that provably change nothing, and the extractor work that
cannot change its choice: the e-graph, the iteration count and the choices must be those of the
plain schedule and the plain greedy extractor, written out here as the reference."""

from __future__ import annotations

import math

import pytest

from xegen import ir
from xegen.egraph import CostModel, Limits, engine
from xegen.egraph.extract import Snapshot, greedy_dag
from xegen.egraph.rules import load_rules, rule_files
from xegen.egraph.simplify import Problem, seed_variables
from xegen.egraph.terms import TermBuilder

#: the schedule as first written: every ruleset run, however little it can find
PLAIN_SETTLE = "(saturate (seq (saturate analysis) (saturate fold) (saturate canon)))"
PLAIN_ITERATION = f"(run-schedule {PLAIN_SETTLE} (run rewrite))"
PLAIN_LOWER = f"(run-schedule {PLAIN_SETTLE} (run lower) {PLAIN_SETTLE})"

#: expressions, their ranges and iteration limits: runs that saturate, and runs that stop at the
#: limit, one of them (the first) just as its rewrites have found nothing more
CASES = [
    ("2*(a+b) - a", {}, 4),
    ("2*(a+b) - a", {}, 10),
    ("gid / 56 % 56", {"gid": range(0, 12544)}, 10),
    ("((n*16 + c)*56 + h)*56 + w - (c*56*56 + h*56) + (n % 7) * (c / 3)", {}, 8),
    ("min(x*3 + 17, y) / 2 - x + (x*-2 + y) % 4", {"x": range(0, 64), "y": range(0, 1000)}, 10),
    ("(a < b ? a*7 + 3 : b - a) * 5 + (a & 15)", {}, 10),
]


def problem_of(text: str, ranges: dict) -> Problem:
    problem = Problem(TermBuilder())
    problem.builder.add_root(ir.parse_expr(text))
    seed_variables(problem, ranges)
    return problem


def limits(iterations: int) -> Limits:
    return Limits(iterations=iterations, seconds=math.inf)  # (within 20,000 nodes: the node bound is not tested)


def plain_run(problem: Problem, iterations: int) -> tuple[str, list[int], int, str]:
    """The e-graph (its snapshot, printed), roots, iterations and stop of the plain schedule."""
    loaded = engine._loaded(load_rules(standalone=True))
    graph = loaded.graph

    def run(text: str) -> bool:
        outputs = graph.run_program(*graph.parse_program(text))
        return any(o.report.updated for o in outputs if getattr(o, "report", None) is not None)

    with loaded.lock:
        graph.run_program(*loaded.push)
        try:
            builder = problem.builder
            actions = [*builder.pieces, *(f"(set (root {i}) {t})" for i, t in enumerate(builder.roots))]
            actions += problem.seeds.actions()
            for start in range(0, len(actions), engine.COMMANDS_PER_PROGRAM):  # (as the engine adds them)
                graph.run_program(*graph.parse_program("\n".join(actions[start : start + engine.COMMANDS_PER_PROGRAM])))
            run(engine.EXPAND)
            ran, stop = 0, "saturated"
            while True:
                changed = run(PLAIN_ITERATION)
                ran += 1
                if not changed:
                    break
                if ran >= iterations:
                    stop = "iteration limit"
                    break
            for _ in range(engine.LOWER_ROUNDS):
                run(PLAIN_LOWER)
            report = engine.SaturationReport(ran, engine.node_count(loaded), stop)
            snapshot = Snapshot.from_run(engine.Run(loaded, len(builder.roots), report))
            return repr(snapshot.classes), snapshot.roots, ran, stop
        finally:
            graph.run_program(*loaded.pop)


def engine_run(problem: Problem, iterations: int) -> tuple[tuple[str, list[int], int, str], Snapshot]:
    builder = problem.builder
    rules = load_rules(standalone=True)
    with engine.saturate(rules, builder.roots, problem.seeds, limits(iterations), builder.pieces) as run:
        snapshot = Snapshot.from_run(run)
        report = run.report
    return (repr(snapshot.classes), snapshot.roots, report.iterations, report.stop), snapshot


@pytest.mark.parametrize("text, ranges, iterations", CASES)
def test_the_schedule_builds_the_e_graph_of_the_plain_schedule(text, ranges, iterations):
    ours, _ = engine_run(problem_of(text, ranges), iterations)
    assert ours == plain_run(problem_of(text, ranges), iterations)


def test_the_cases_cover_saturated_runs_and_the_iteration_limit():
    stops = [engine_run(problem_of(text, ranges), iterations)[0][2:] for text, ranges, iterations in CASES]
    assert stops[:2] == [(4, "iteration limit"), (5, "saturated")]  # (the fifth iteration finds nothing)
    assert {stop for _, stop in stops} == {"saturated", "iteration limit"}


@pytest.mark.parametrize("text, ranges, iterations", CASES)
def test_the_greedy_extractor_chooses_what_it_would_without_its_bound(text, ranges, iterations):
    _, snapshot = engine_run(problem_of(text, ranges), iterations)
    for hw in ("xelp", "xehpg", "xehpc"):
        model = CostModel(hw)
        assert greedy_dag(snapshot, model) == greedy_dag(snapshot, model, bound=False)


def test_a_rule_directory_lists_what_a_glob_would(tmp_path):
    for name in ("b.egg", "a.egg", ".hidden.egg", "c.egg.txt", "B.egg", "notes.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub.egg").mkdir()
    assert rule_files([tmp_path]) == sorted(tmp_path.glob("*.egg"))
