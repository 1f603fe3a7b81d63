"""Random integer expressions for the simplifier bench: expressions nobody chose.

`random_corpus(n, seed)` gives n seeded cases of 5 to 60 IR nodes, half index-style (sums of
scaled variables, divisions and remainders by constants, min/max clamps, as address and mask
arithmetic has them) and half general (any of + - * / % min max select and comparisons); half of
each kind declares a range for every variable (non-negative, as thread ids and loop counters
are), half declares none (every s32 value, negative dividends and wrap-around included).
"""

from __future__ import annotations

import random

from corpus import Case

from xegen import ir

VARIABLES = ("a", "b", "c", "d", "x", "y")
DIVISORS = (2, 3, 4, 5, 7, 8, 12, 16, 24, 32, 64)
SMALL = (0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 64, 255, -1, -2, -3, -4, -8, -16)


class _Generator:
    def __init__(self, rng: random.Random, index_style: bool, names: tuple[str, ...]):
        self.rng, self.index_style, self.names = rng, index_style, names

    def constant(self) -> str:
        r = self.rng
        return str(r.choice(SMALL) if r.random() < 0.7 else r.randrange(-1000, 5000))

    def leaf(self) -> str:
        return self.rng.choice(self.names) if self.rng.random() < 0.75 else self.constant()

    def expr(self, budget: int) -> str:
        """An integer expression of about `budget` nodes."""
        r = self.rng
        if budget <= 1:
            return self.leaf()
        if budget == 2:
            return f"-{self.rng.choice(self.names)}" if not self.index_style else self.leaf()
        left = r.randint(1, budget - 2)
        ops = ["+", "-", "*c", "/c", "%c", "+c", "min", "max"]
        ops += ["+", "*c", "+", "/c"] if self.index_style else ["*", "sel", "-", "sel", "&c", ">>c"]
        op = r.choice(ops)
        if op in ("*c", "/c", "%c", "+c", "&c", ">>c"):
            inner = self.expr(budget - 2)
            if op == "*c":
                return f"({inner}) * {r.choice(DIVISORS + SMALL)}"
            if op == "+c":
                return f"({inner}) + {self.constant()}"
            if op == "&c":
                return f"({inner}) & {r.choice((1, 3, 7, 15, 255, 1023))}"
            if op == ">>c":
                return f"({inner}) >> {r.randrange(1, 6)}"
            return f"({inner}) {op[0]} {r.choice(DIVISORS)}"
        if op == "sel":
            third = max(1, (budget - 2) // 3)
            return f"({self.condition(third)} ? {self.expr(third)} : {self.expr(max(1, budget - 2 - 2 * third))})"
        a, b = self.expr(left), self.expr(budget - 1 - left)
        if op in ("min", "max"):
            return f"{op}({a}, {b})"
        return f"({a}) {op} ({b})"

    def condition(self, budget: int) -> str:
        half = max(1, (budget - 1) // 2)
        return f"({self.expr(half)}) {self.rng.choice(('<', '<=', '==', '!=', '>', '>='))} ({self.expr(half)})"


def index_generator(rng: random.Random, names: tuple[str, ...] = VARIABLES[:4]) -> _Generator:
    """A generator of index-style expressions over `names` (for expressions of any size)."""
    return _Generator(rng, True, names)


def random_corpus(n: int = 2000, seed: int = 0) -> list[Case]:
    rng = random.Random(seed)
    cases: list[Case] = []
    while len(cases) < n:
        k = len(cases)
        index_style, ranged = k % 2 == 0, k % 4 < 2
        names = tuple(rng.sample(VARIABLES, rng.randint(1, 4)))
        gen = _Generator(rng, index_style, names)
        target = rng.randint(5, 60)
        text = gen.condition(target) if rng.random() < 0.15 else gen.expr(target)
        e = ir.parse_expr(text)
        if not 5 <= ir.node_count(e) <= 60:
            continue
        used = sorted(v.name for v in ir.free_vars(e))
        if not used:
            continue
        ranges = {v: range(0, rng.choice((8, 64, 1000, 4096, 65536))) for v in used} if ranged else {}
        kind = ("index" if index_style else "general") + ("-ranged" if ranged else "")
        cases.append(Case(f"random{seed}.{k}.{kind}", ir.format_expr(e), ranges))
    return cases
