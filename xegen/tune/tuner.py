"""Tuning layers: their searches interleaved on one backend, the winners verified and recorded.

`tune(layers, backend, ...)` runs one `Search` per layer and keeps the backend's workers busy with
whichever layer has configurations to evaluate, so a network spreads over every worker.  When a
layer's search is done, its best `verify_top` configurations run in the simulator at a reduced
problem (`evaluate.reduced_problem`); the best that verifies wins, unless it is slower than the
heuristic's configuration.  Otherwise the heuristic's configuration stays (it is what `xegen conv`
compiles without a database).  Only the driver sees results and writes the database
(`xegen.tune.database`).

Nothing a layer decides depends on the order in which results arrive (`search.py`), so the
winners are the same on one worker, a pool or a cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..conv.problem import Problem
from ..hw import Platform
from ..plan.config import Config
from ..plan.space import problem_space
from .backends import Lost
from .database import Entry, now, problem_key
from .evaluate import Job, Outcome, as_config, as_items
from .search import Search

VERIFY_TOP = 3


@dataclass(frozen=True)
class Layer:
    problem: Problem
    hw: Platform
    given: tuple[tuple[str, object], ...] = ()  # config keys the user fixed
    name: str = ""  # how to call it in the output (its FILE:LINE or layer name)


@dataclass
class Result:
    """What tuning one layer found."""

    layer: Layer
    space: int  # configurations in its space (before the layout and budget checks)
    method: str
    heuristic: Config | None = None
    heuristic_cycles: float | None = None
    winner: Config | None = None
    winner_cycles: float | None = None
    verified_on: str | None = None
    evaluated: int = 0  # configurations compiled and modeled
    failed: list[tuple[Config, str]] = field(default_factory=list)  # configurations that did not compile
    rejected: list[tuple[Config, str]] = field(default_factory=list)  # winners the simulator rejected
    ranking: list[tuple[Config, float]] = field(default_factory=list)  # the best evaluated, best first
    error: str | None = None

    @property
    def gain(self) -> float | None:
        if self.heuristic_cycles and self.winner_cycles:
            return self.heuristic_cycles / self.winner_cycles
        return None

    def entry(self, seed: int, version: str) -> Entry | None:
        if self.winner is None or self.winner_cycles is None or self.heuristic is None:
            return None
        return Entry(
            problem_key(self.layer.problem),
            self.layer.hw.name,
            version,
            dict(as_items(self.winner)),
            self.winner_cycles,
            dict(as_items(self.heuristic)),
            self.heuristic_cycles,
            self.method,
            self.evaluated,
            self.space,
            seed,
            self.verified_on or "",
            now(),
        )


class _LayerRun:
    """One layer's progress through search and verification."""

    def __init__(self, layer: Layer, budget: int, seed: int, verify_top: int):
        self.layer = layer
        self.space, self.heuristic = problem_space(layer.problem, layer.hw, dict(layer.given))
        self.search = Search(self.space, budget, f"{seed}:{problem_key(layer.problem)}:{layer.hw.name}", self.heuristic)
        self.verify_top = verify_top
        self.result = Result(layer, len(self.space.candidates), self.search.method)
        self.verifying: dict[Config, Outcome | None] = {}
        self.done = False

    def jobs(self, deadline_passed: bool, seed: int) -> list[tuple[Config, Job]]:
        """Jobs to submit now (none while waiting for results)."""
        if self.done:
            return []
        problem, hw = self.layer.problem, self.layer.hw.name
        if not self.search.finished and not deadline_passed:
            batch = self.search.ask()
            if batch:  # the heuristic's own job compiles as `xegen conv` does: fall-backs allowed
                return [
                    (c, Job("model", problem, hw, self.layer.given if c == self.heuristic else as_items(c)))
                    for c in batch
                ]
        if self.search.pending:
            return []
        if not self.verifying:
            top = [r.config for r in self.search.ranking()[: self.verify_top]]
            if not top:
                self._finish()
                return []
            self.verifying = {c: None for c in top}
            return [(c, Job("verify", problem, hw, as_items(c), seed)) for c in top]
        return []

    def told(self, config: Config, outcome: Outcome, phase: str) -> None:
        if phase == "model":
            compiled = as_config(outcome.config) if outcome.config else None
            if config == self.heuristic and compiled is not None:
                self.result.heuristic, self.result.heuristic_cycles = compiled, outcome.cycles
                if compiled != config:
                    # the heuristic's first choice did not fit the registers (its fall-backs), or
                    # the model priced another of the heuristic's kernels lower (a first layer's
                    # other plan, `model_decides`; another dpas shape, `model_choices`)
                    self.search.tell(config, None)
                    if compiled.plan == config.plan and outcome.fallbacks:
                        self.result.failed.append((config, outcome.fallbacks[0]))
                    config = compiled
            if outcome.error is None:  # outcome.ok
                self.result.evaluated += 1
            else:
                self.result.failed.append((config, outcome.error))
            self.search.tell(config, outcome.cycles if outcome.ok else None)
            return
        self.verifying[config] = outcome
        if all(v is not None for v in self.verifying.values()):
            self._finish()

    def _finish(self) -> None:
        ranking = self.search.ranking()
        self.result.ranking = [(r.config, r.cycles) for r in ranking[:10] if r.cycles is not None]
        if self.result.heuristic is None:
            self.result.error = next(
                (why for c, why in self.result.failed if c == self.heuristic),
                "the heuristic's configuration did not compile",
            )
        for evaluated in ranking:
            # slower than what `xegen conv` compiles anyway (the heuristic's, rejected at the reduced
            # size, say, where its tiles need other registers): the heuristic's stays
            heuristic = self.result.heuristic_cycles
            if evaluated.cycles is not None and heuristic is not None and evaluated.cycles > heuristic:
                break
            outcome = self.verifying.get(evaluated.config)
            if outcome is None:
                continue
            if outcome.verified:
                self.result.winner, self.result.winner_cycles = evaluated.config, evaluated.cycles
                self.result.verified_on = outcome.reduced
                break
            self.result.rejected.append((evaluated.config, outcome.error or "failed"))
        if self.result.winner is None and self.result.heuristic is not None:
            self.result.winner, self.result.winner_cycles = self.result.heuristic, self.result.heuristic_cycles
            self.result.method += " (no better configuration verified: the heuristic's)"
        self.done = True


def tune(
    layers: list[Layer],
    backend,
    budget: int = 64,
    seconds: float | None = None,
    seed: int = 0,
    verify_top: int = VERIFY_TOP,
    on_progress: Callable[[str, int, int], None] | None = None,
    on_result: Callable[[int, Result], None] | None = None,
) -> list[Result]:
    """Tune every layer on `backend`; `seconds` stops proposing new candidates after that long (the
    ones submitted finish, and are verified).  `on_progress(label, done, total)` after each job,
    `on_result(index, result)` when a layer is done."""
    started = time.monotonic()
    runs = [_LayerRun(layer, budget, seed, verify_top) for layer in layers]
    total = sum(min(budget, r.result.space) + verify_top for r in runs)
    done = 0
    submitted: set[int] = set()
    cursor = 0  # the next layer asked for jobs: layers take turns
    while True:
        late = seconds is not None and time.monotonic() - started > seconds
        idle_rounds = 0
        while backend.in_flight < backend.capacity and idle_rounds < len(runs):
            run_index = cursor % len(runs)
            cursor += 1
            run = runs[run_index]
            jobs = run.jobs(late, seed)
            if not jobs:
                idle_rounds += 1
                _report(run_index, run, submitted, on_result)
                continue
            idle_rounds = 0
            for config, job in jobs:
                backend.submit((run_index, job.kind, config), job)
        if backend.in_flight == 0:
            break
        (run_index, phase, config), outcome = backend.next()
        if isinstance(outcome, Lost):
            outcome = Outcome(None, error=outcome.reason)
        runs[run_index].told(config, outcome, phase)
        done += 1
        if on_progress is not None:
            on_progress(runs[run_index].layer.name or str(runs[run_index].layer.problem.desc), done, total)
        _report(run_index, runs[run_index], submitted, on_result)
    for index, run in enumerate(runs):
        _report(index, run, submitted, on_result)
    return [run.result for run in runs]


def _report(index: int, run: _LayerRun, submitted: set[int], on_result) -> None:
    if run.done and index not in submitted:
        submitted.add(index)
        if on_result is not None:
            on_result(index, run.result)
