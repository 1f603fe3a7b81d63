"""`xegen conv` with a tuning database: compile the tuned configuration when one matches."""

from __future__ import annotations

from dataclasses import dataclass

from ..conv.problem import Problem
from ..errors import ConfigError
from ..hw import Platform
from ..pipeline import Compilation, compile_problem
from .database import Database, Entry


@dataclass(frozen=True)
class Tuned:
    """A database row that matches a problem, and the database it came from."""

    entry: Entry
    database: str

    @classmethod
    def find(cls, database: Database, problem: Problem, hw: Platform) -> Tuned | None:
        """`database`'s row for `problem` on `hw`, if it has one."""
        found = database.lookup(problem, hw.name)
        return None if found is None else cls(found, str(database.path))


def compile_tuned(problem, hw, overrides, tuned: Tuned | None, **options) -> tuple[Compilation, dict | None]:
    """Compile `problem` with the tuned configuration if there is one, else with the heuristic's
    (and `overrides`); the summary's "tuned" entry says which and why."""
    if tuned is None:
        return compile_problem(problem, hw, overrides, **options), None
    entry = tuned.entry
    about = {
        "database": tuned.database,
        "config": entry.config,
        "modeled_cycles": entry.modeled_cycles,
        "heuristic_cycles": entry.heuristic_cycles,
        "method": entry.method,
        "candidates": entry.candidates,
        "space": entry.space,
        "found_at": entry.found_at,
    }
    try:
        return compile_problem(problem, hw, entry.config, **options), {"used": True, **about}
    except ConfigError as error:  # e.g. a row imported from a differently built xegen
        return compile_problem(problem, hw, overrides, **options), {"used": False, "error": str(error), **about}


def describe(tuned: dict) -> str:
    """One line for the summary."""
    if not tuned["used"]:
        return (
            f"tuned: {tuned['database']} has a configuration that does not compile ({tuned['error']}); "
            "used the heuristic's"
        )
    heuristic = tuned["heuristic_cycles"]
    versus = f", the heuristic's {heuristic:.0f}" if heuristic else ""
    return (
        f"tuned: configuration from {tuned['database']} ({tuned['method']}, {tuned['candidates']} of "
        f"{tuned['space']} configurations, {tuned['found_at']}; modeled {tuned['modeled_cycles']:.0f} cycles"
        f"{versus})"
    )
