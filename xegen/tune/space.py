"""`xegen conv --print-space`: the configuration space of a problem, as a tuner searches it."""

from __future__ import annotations

from ..conv.problem import Problem
from ..hw import platform
from ..plan.space import ProductSpaces, problem_space


def space_of(problem: Problem, hw: str, given: dict | None = None) -> tuple[ProductSpaces, list]:
    """The problem's space with the keys of `given` fixed (`plan.space.problem_space`: with the
    swapped product's configurations where the model would try them), and its legal
    configurations (the heuristic's first)."""
    space, _ = problem_space(problem, platform(hw), given)
    return space, space.legal_configs()


def format_space(problem: Problem, hw: str, given: dict | None = None) -> str:
    space, legal = space_of(problem, hw, given)
    lines = [f"{problem}", f"space on {platform(hw).display_name}: {space.considered} combinations of the knobs"]
    width = max(len(key) for key in space.knobs)
    for key, options in space.knobs.items():
        lines.append(f"  {key:<{width}}  {' '.join(map(str, options))}")
    for reason, count in space.pruned.items():
        lines.append(f"  pruned: {count} by {reason}")
    lines.append(f"{len(legal)} legal configurations (the heuristic's first):")
    lines += [f"  {config}" for config in legal]
    return "\n".join(lines)
