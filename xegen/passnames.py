"""The names of the compiler's passes, in the order `pipeline.py` runs them.

A module of its own so that the command line can name and check them (`--print-after`) without
importing the compiler.
"""

from __future__ import annotations

from .errors import ConfigError

PASSES = ("build", "schedule", "optimize", "isel", "regalloc", "swsb")


def check_pass_names(names) -> frozenset[str]:
    unknown = sorted(set(names) - set(PASSES))
    if unknown:
        raise ConfigError(f"unknown pass '{unknown[0]}' (passes: {', '.join(PASSES)})")
    return frozenset(names)
