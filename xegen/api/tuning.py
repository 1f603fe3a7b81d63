"""Tuning from Python: what `xegen tune` does, as a function.

    results = xegen.autotune(["mb1ic64ih56oc64oh56kh3ph1"], hw="xehpg", budget=16)
    results[0].winner, results[0].winner_cycles, results[0].gain
    xegen.compile(problem).tuned          # later compiles take the recorded winner

(`xegen.tune` is the tuner's package, hence the function's other name.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from .. import hw as hwlib
from ..conv.problem import Problem
from ..errors import Error
from ..plan.config import parse_overrides
from ..tune.backends import make_backend
from ..tune.database import Database, default_path, version_key
from ..tune.tuner import VERIFY_TOP, Layer, Result, tune
from .kernel import conv_problem


def autotune(
    problems: Sequence[Problem | str] | Problem | str,
    hw: str | hwlib.Platform = "xehpg",
    budget: int = 64,
    seconds: float | None = None,
    seed: int = 0,
    verify_top: int = VERIFY_TOP,
    config: Mapping[str, object] | None = None,
    jobs: int = 1,
    ray: str | None = None,
    db: bool | str | Path = True,
) -> list[Result]:
    """Search each problem's configurations under the model (`budget` candidates each, or until
    `seconds`), verify the best `verify_top` in the simulator at a reduced size, and record each
    winner in the tuning database (`db=True`: the default one `xegen.compile` reads, a path:
    that one, `False`: none).  `config` fixes keys of every candidate; `jobs` worker processes,
    or a Ray cluster at `ray` ("local" starts one).  One `xegen.tune.tuner.Result` per problem,
    in order: `.winner` and `.winner_cycles`, `.heuristic` and `.heuristic_cycles`, `.gain`,
    `.verified_on`, `.error`."""
    if isinstance(problems, (str, Problem)):
        problems = [problems]
    if budget < 1 or jobs < 1 or verify_top < 0:
        raise Error(
            f"budget={budget}, jobs={jobs}, verify_top={verify_top}: budget and jobs are at least 1, "
            "verify_top at least 0"
        )
    platform = hwlib.platform(hw)
    given = tuple(parse_overrides([f"{key}={value}" for key, value in (config or {}).items()]).items())
    layers = [Layer(p if isinstance(p, Problem) else conv_problem(p), platform, given) for p in problems]
    database = None if db is False else Database(default_path() if db is True else db)
    version = version_key()

    def record(index: int, result: Result) -> None:
        entry = result.entry(seed, version)
        if database is not None and entry is not None:
            database.record(entry)

    backend = make_backend(jobs, ray)
    try:
        return tune(layers, backend, budget, seconds, seed, verify_top, on_result=record)
    finally:
        backend.close()
        if database is not None:
            database.close()
