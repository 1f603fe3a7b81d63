"""The configuration space a tuner searches: every knob's values, pruned to what can run.

The heuristic (`heuristic.py`) ranks a few configurations per multiply kind and takes the first
that fits; some knobs it derives instead of trying (thread-group shape, k_split), and it tries
one multiply kind and SIMD width.  `TuningSpace` widens that: for every multiply kind and SIMD
width `check_config` accepts, the values the heuristic itself considers for that kind
(`config_space` with the two fixed), and for the knobs in `WIDER` also the values listed there.
A knob the heuristic learns to choose among (a new `Config` key, a new plan kind) joins the
space through `config_space` alone.

Legality is decided by the planner's own checks, before anything is compiled, cheapest first:
`check_config` (the key rules) for every combination up front, `plan_layout` (tiles, messages,
index ranges; once for configurations that differ only in budget keys) and `check_budgets` (GRF
and SLM) when a configuration is first asked about (`legal`), since laying out takes
milliseconds and the spaces hold thousands.  A configuration that would leave a whole row or
column of a group's threads without work (`idle_threads`) is left out as well: it does what a
smaller group does, on more threads.

A problem's space (`problem_space`) is one GEMM's `TuningSpace`, or where the model chooses
between the plain forward product and the swapped one (`heuristic.swaps`) and no plan is given,
the union of both (`ProductSpaces`): each configuration is checked against its own GEMM, as
`plan_kernel` plans it (plan=swapped from the swapped GEMM only; on XeHPC the swapped GEMM with
`any`'s default weights and with the weights as rows, `gemm.swapped_weights`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from ..conv.problem import Problem
from ..errors import ConfigError
from ..hw import Platform
from .config import FMA_KINDS, KEYS, Config, check_config
from .gemm import Gemm, formulate, swapped_weights
from .heuristic import choose_config, config_space, swaps
from .kernel import KernelPlan, check_budgets, layout_key, plan_layout

GROUP_SIDES = (1, 2, 4, 8)  # threads along M or N in a group (the heuristic stops at 4)
K_SPLITS = (1, 2, 4, 8, 16)

#: knobs the heuristic derives rather than searches, and the values a tuner tries besides its own
WIDER: dict[str, Callable[[Gemm, Platform], tuple]] = {
    "tg_m": lambda gemm, hw: GROUP_SIDES,
    "tg_n": lambda gemm, hw: GROUP_SIDES,
    "k_split": lambda gemm, hw: K_SPLITS,
}
#: the keys that make a multiply kind: the heuristic's other options depend on them
KIND_KEYS = ("fma", "simd")
KIND_VALUES: dict[str, Callable[[Gemm, Platform], tuple]] = {
    "fma": lambda gemm, hw: FMA_KINDS,
    "simd": lambda gemm, hw: tuple(hw.simd_widths),
}

RULES, IDLE, LAYOUT, BUDGET = (
    "config rules (check_config)",
    "idle threads in a group",
    "tiles, messages or index ranges (plan_layout)",
    "GRF or SLM budget (check_budgets)",
)


def values(config: Config) -> tuple:
    """The configuration's values in KEYS order."""
    return tuple(getattr(config, key) for key in KEYS)


def _ordered(options) -> tuple:
    merged = tuple(dict.fromkeys(options))
    return tuple(sorted(merged)) if all(isinstance(v, int) for v in merged) else merged


def _follows_rules(config: Config, gemm: Gemm, hw: Platform) -> bool:
    try:
        check_config(config, gemm, hw)
    except ConfigError:
        return False
    return True


def idle_threads(config: Config, gemm: Gemm) -> bool:
    """Whether a whole row or column of the group's threads would have no tile of C."""
    return (config.tg_n > 1 and (config.tg_n - 1) * config.n_tile >= gemm.n.size) or (
        config.tg_m > 1 and (config.tg_m - 1) * config.m_tile >= gemm.m.size
    )


class TuningSpace:
    """The configurations of one GEMM on one platform a tuner may compile.

    `candidates` passed the cheap checks (heuristic's choice first, then the knobs' order);
    `legal(config)` adds the layout and budget checks; `pruned` counts what each check left out
    so far."""

    def __init__(
        self, gemm: Gemm, hw: Platform, given: Mapping[str, object] | None = None, heuristic: Config | None = None
    ):
        self.gemm, self.hw = gemm, hw
        given = dict(given or {})
        self.pruned: dict[str, int] = {}
        self._layouts: dict[tuple, KernelPlan | ConfigError] = {}
        self._legal: dict[Config, bool] = {}
        knobs: dict[str, tuple] = {}
        candidates: list[Config] = []
        self.considered = 0
        kinds = itertools.product(*((given[k],) if given.get(k) else KIND_VALUES[k](gemm, hw) for k in KIND_KEYS))
        for kind in kinds:
            fixed = {**given, **dict(zip(KIND_KEYS, kind, strict=True))}
            try:
                # each plan's own configurations of this kind, those the key rules take: a plan may
                # list some its planner refuses (plan=first's backward weights multiply with mad
                # only), and the GEMM plan's of the kind must not go with them
                heuristics = [c for c in config_space(gemm, hw, fixed) if _follows_rules(c, gemm, hw)]
            except ConfigError:
                continue
            if not heuristics:
                continue
            options = {
                key: _ordered(
                    [getattr(c, key) for c in heuristics]
                    + ([] if key in given else list(WIDER[key](gemm, hw)) if key in WIDER else [])
                )
                for key in KEYS
            }
            for key in KEYS:
                knobs[key] = _ordered(knobs.get(key, ()) + options[key])
            for combination in itertools.product(*(options[key] for key in KEYS)):
                self.considered += 1
                config = Config(**dict(zip(KEYS, combination, strict=True)))
                if idle_threads(config, gemm):
                    self._drop(IDLE)
                    continue
                try:
                    check_config(config, gemm, hw)
                except ConfigError:
                    self._drop(RULES)
                    continue
                candidates.append(config)
        if heuristic is not None:
            candidates = [heuristic] + [c for c in candidates if c != heuristic]
        self.knobs = knobs
        self.candidates = tuple(dict.fromkeys(candidates))
        self.index = {values(c): c for c in self.candidates}

    def _drop(self, reason: str) -> None:
        self.pruned[reason] = self.pruned.get(reason, 0) + 1

    def legal(self, config: Config) -> bool:
        """Whether `config` is a candidate whose plan fits its registers and SLM."""
        if config in self._legal:
            return self._legal[config]
        ok = values(config) in self.index and self._fits(config)
        self._legal[config] = ok
        return ok

    def _fits(self, config: Config) -> bool:
        key = layout_key(config, self.hw)
        if key not in self._layouts:
            try:
                self._layouts[key] = plan_layout(self.gemm, config, self.hw)
            except ConfigError as error:
                self._layouts[key] = error
        layout = self._layouts[key]
        if isinstance(layout, ConfigError):
            self._drop(LAYOUT)
            return False
        try:
            check_budgets(replace(layout, config=config))
        except ConfigError:
            self._drop(BUDGET)
            return False
        return True

    def legal_configs(self) -> list[Config]:
        """Every legal configuration (lays out every candidate: seconds on large spaces)."""
        return [c for c in self.candidates if self.legal(c)]


class ProductSpaces:
    """The union of the spaces of one problem's GEMM products, as a tuner sees one space: the
    candidates of each in turn, a configuration legal where its own product's space says so
    (the spaces' configurations differ in `plan`, except the swapped product's with either
    weights layout, `swapped_weights`: legal where one of the two says so, as the compiler tries
    both)."""

    def __init__(self, spaces: Sequence[TuningSpace]):
        self.spaces = tuple(spaces)
        self.candidates = tuple(dict.fromkeys(c for space in self.spaces for c in space.candidates))
        self.index = {key: c for space in self.spaces for key, c in space.index.items()}
        self.knobs = {
            key: _ordered(tuple(v for space in self.spaces for v in space.knobs.get(key, ()))) for key in KEYS
        }
        self.considered = sum(space.considered for space in self.spaces)

    @property
    def pruned(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for space in self.spaces:
            for reason, count in space.pruned.items():
                counts[reason] = counts.get(reason, 0) + count
        return counts

    def legal(self, config: Config) -> bool:
        return any(space.legal(config) for space in self.spaces if values(config) in space.index)

    def legal_configs(self) -> list[Config]:
        return [c for c in self.candidates if self.legal(c)]


def problem_space(
    problem: Problem, hw: Platform, given: Mapping[str, object] | None = None
) -> tuple[ProductSpaces, Config]:
    """The space of `problem` on `hw` with the keys of `given` fixed, and the heuristic's
    configuration (of the plain product unless `given` names a plan), first in the space: the
    given plan's product's space, else the plain product's, joined by the swapped product's
    where the model chooses between the two (`swaps`)."""
    given = dict(given or {})
    plain = formulate(problem, str(given.get("plan", "gemm")))
    heuristic = choose_config(plain, hw, given)
    spaces = [TuningSpace(plain, hw, given, heuristic)]
    swapped = []
    if "plan" not in given and swaps(plain, hw):
        swapped.append(formulate(problem, "swapped"))
    rows = swapped_weights(problem, hw)  # the weights as rows the swapped product also compiles with
    if rows is not problem and (swapped or plain.swapped):
        swapped.append(formulate(rows, "swapped"))
    spaces += [TuningSpace(gemm, hw, given, choose_config(gemm, hw, given)) for gemm in swapped]
    return ProductSpaces(spaces), heuristic
