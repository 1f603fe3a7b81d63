"""The rewrite rules: this directory's *.egg files, and `xegen.rules.load(paths)` and
`xegen.rules.check(paths)` to use them from Python.

    rules = xegen.rules.load([xegen.rules.directory(), "my_rules.egg"])   # the shipped ones and mine
    xegen.simplify("x * 8", rules=rules)
    [v.verdict for v in xegen.rules.check(["my_rules.egg"])]              # "sound", "unsound", ...

A rule file is egglog text in xegen's term language (docs/egraph.md);
`load` checks that egglog accepts it and that rule names are unique, `check` proves each rule
with the reference interpreter and z3 (`xegen rules check`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..egraph import RuleSet, load_rules
from ..egraph import check_rules as check_rule_files
from ..egraph.rules import default_rules_directory

if TYPE_CHECKING:  # the checker imports z3 and hypothesis: loaded only when `check` runs
    from ..egraph.check import RuleVerdict


def directory() -> Path:
    """The shipped rules: this package's directory (the repository's `rules/` links to it)."""
    return default_rules_directory()


def load(paths: Sequence[Path | str] | None = None) -> RuleSet:
    """The rule files of `paths` (files, or directories of *.egg files; default: `directory()`
    and its `standalone/`, the rules a standalone simplification loads), read and checked; pass
    the result as `rules=` to `xegen.simplify` and `xegen.extract_compare`."""
    return load_rules(None if paths is None else list(paths), standalone=True)


def check(
    paths: Sequence[Path | str] | None = None,
    examples: int = 10,
    jobs: int = 1,
    cache: bool = True,
    effort: int | None = None,
) -> list[RuleVerdict]:
    """Prove every rule of `paths` (default: the term language and `directory()`) sound; one
    verdict per rule: `.verdict` is "sound", "unsound" (with `.counterexample`), "unproven",
    "error" or "no comment", `.ok` is True when sound.  `effort` bounds z3's work per encoding
    and type in its resource units (default: enough for every shipped rule), as the command's
    --effort does in millions.  Verdicts are cached (as the command's are) unless `cache=False`.
    Needs z3-solver and hypothesis."""
    from ..egraph.check import VerdictCache  # z3 and hypothesis take seconds to import: only when called

    bound = {} if effort is None else {"effort": effort}
    return check_rule_files(
        None if paths is None else list(paths),
        examples=examples,
        jobs=jobs,
        cache=VerdictCache() if cache else None,
        **bound,
    )
