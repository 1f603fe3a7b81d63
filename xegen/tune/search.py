"""Searching one layer's configuration space under the cost model.

The heuristic's choice is evaluated first.  When the space holds no more legal configurations
than the budget, every one is evaluated (`exhaustive`).  Otherwise an evolutionary search
(`evolutionary`), as TVM's Ansor and MetaSchedule run over their spaces under a cost model:
each generation is bred from the best configurations evaluated so far, by uniform crossover of
two parents and a mutation that moves one knob to a neighbouring value (a larger or smaller
tile, one more or fewer thread along a side, the next multiply kind), and four times in ten
another (knobs that often move together: SIMD width, tile and group side), keeping only children
the space says are legal and that were not evaluated yet; random legal configurations fill a
generation the breeding cannot.  docs/tune.md says why this search and not another.

A search is deterministic given its seed: generations have a fixed size, the next is bred only
when every result of the previous is in, and ranks break ties by the configurations' order in
the space, so the order in which workers finish changes nothing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..plan.config import KEYS, Config
from ..plan.space import ProductSpaces, TuningSpace, values

GENERATION = 8  # configurations per generation (a batch the workers share)
PARENTS = 4  # the best configurations a generation is bred from
CROSSOVER = 0.3  # chance that a child mixes two parents before its mutation
JUMP = 0.15  # chance that a mutation picks any value of the knob, not a neighbouring one
AGAIN = 0.4  # chance that a mutation moves one more knob (tiles, SIMD and group sides move together)
ATTEMPTS = 64  # breeding attempts per child before a random configuration is taken instead


@dataclass(frozen=True)
class Evaluated:
    config: Config
    cycles: float | None  # None: it failed to compile or to model
    order: int  # its place in the space (ties go to the earlier)


class Search:
    """One layer's search: `ask` for configurations to evaluate, `tell` each result."""

    def __init__(self, space: TuningSpace | ProductSpaces, budget: int, seed: int | str, heuristic: Config):
        self.space, self.budget, self.heuristic = space, budget, heuristic
        self.rng = random.Random(f"xegen-tune:{seed}")
        self.order = {c: i for i, c in enumerate(space.candidates)}
        self.results: dict[Config, Evaluated] = {}
        self.pending: set[Config] = set()
        self.proposed = 0
        self.exhausted = False
        self.exhaustive = len(space.candidates) <= budget
        self.method = "exhaustive" if self.exhaustive else "evolutionary"
        self._unseen = list(space.candidates)  # exhaustive order, and the pool random picks come from

    # -- the interface -----------------------------------------------------------------------
    def ask(self) -> list[Config]:
        """The next configurations to evaluate; empty while results are outstanding or when done."""
        if self.pending or self.finished:
            return []
        if self.proposed == 0:
            batch = self._first()
        elif self.exhaustive:
            batch = self._next_unseen(GENERATION)
        else:
            batch = self._breed()
        batch = batch[: self.budget - self.proposed]
        if not batch:
            self.exhausted = True
        self.proposed += len(batch)
        self.pending.update(batch)
        return batch

    def tell(self, config: Config, cycles: float | None) -> None:
        self.pending.discard(config)
        self.results[config] = Evaluated(config, cycles, self.order.get(config, len(self.order)))

    @property
    def finished(self) -> bool:
        return not self.pending and (self.exhausted or self.proposed >= self.budget)

    def ranking(self) -> list[Evaluated]:
        """Evaluated configurations that modeled, best first."""
        good = [r for r in self.results.values() if r.cycles is not None]
        return sorted(good, key=lambda r: (r.cycles, r.order))

    # -- proposing ---------------------------------------------------------------------------
    def _fresh(self, config: Config) -> bool:
        return config not in self.results and config not in self.pending and self.space.legal(config)

    def _first(self) -> list[Config]:
        """The heuristic's choice, then (searching) its neighbours in random order."""
        batch = [self.heuristic]
        if self.exhaustive:
            return batch + self._next_unseen(GENERATION - 1, exclude=batch)
        neighbours = [c for c in self._neighbours(self.heuristic) if c != self.heuristic]
        self.rng.shuffle(neighbours)
        for config in neighbours:
            if len(batch) == GENERATION:
                break
            if config not in batch and self._fresh(config):
                batch.append(config)
        return batch + self._random(GENERATION - len(batch), batch)

    def _next_unseen(self, count: int, exclude=()) -> list[Config]:
        batch: list[Config] = []
        while self._unseen and len(batch) < count:
            config = self._unseen.pop(0)
            if config not in exclude and self._fresh(config):
                batch.append(config)
        return batch

    def _random(self, count: int, exclude: list[Config]) -> list[Config]:
        """Up to `count` legal configurations not evaluated yet, at random."""
        batch: list[Config] = []
        while len(batch) < count and self._unseen:
            config = self._unseen.pop(self.rng.randrange(len(self._unseen)))
            if config not in exclude and self._fresh(config):
                batch.append(config)
        return batch

    def _neighbours(self, config: Config) -> list[Config]:
        """Configurations one knob step away that the space holds."""
        found = []
        current = values(config)
        for position, key in enumerate(KEYS):
            options = self.space.knobs.get(key, ())
            if current[position] not in options:
                continue
            at = options.index(current[position])
            for step in (-1, 1):
                if 0 <= at + step < len(options):
                    moved = self.space.index.get(current[:position] + (options[at + step],) + current[position + 1 :])
                    if moved is not None:
                        found.append(moved)
        return found

    def _breed(self) -> list[Config]:
        parents = [r.config for r in self.ranking()[:PARENTS]] or [self.heuristic]
        weights = [len(parents) - i for i in range(len(parents))]  # the better, the likelier
        batch: list[Config] = []
        for _ in range(GENERATION):
            child = None
            for _ in range(ATTEMPTS):
                genes = list(values(self.rng.choices(parents, weights)[0]))
                if len(parents) > 1 and self.rng.random() < CROSSOVER:
                    other = values(self.rng.choices(parents, weights)[0])
                    genes = [g if self.rng.random() < 0.5 else o for g, o in zip(genes, other, strict=True)]
                genes = self._mutate(genes)
                candidate = self.space.index.get(tuple(genes))
                if candidate is not None and candidate not in batch and self._fresh(candidate):
                    child = candidate
                    break
            if child is None:
                child = next(iter(self._random(1, batch)), None)
            if child is None:
                break
            batch.append(child)
        return batch

    def _mutate(self, genes: list) -> list:
        movable = [i for i, key in enumerate(KEYS) if len(self.space.knobs.get(key, ())) > 1]
        if not movable:
            return genes
        genes = self._move(genes, self.rng.choice(movable))
        while self.rng.random() < AGAIN:
            genes = self._move(genes, self.rng.choice(movable))
        return genes

    def _move(self, genes: list, position: int) -> list:
        options = self.space.knobs[KEYS[position]]
        if genes[position] not in options or self.rng.random() < JUMP:
            genes[position] = self.rng.choice(options)
        else:
            at = options.index(genes[position]) + self.rng.choice((-1, 1))
            genes[position] = options[min(max(at, 0), len(options) - 1)]
        return genes
