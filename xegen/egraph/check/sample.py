"""Testing an instantiated rule against the interpreter (`xegen.ir.evaluate`).

Values are drawn for the rule's variables (negative values, zero, the type's extremes, small
numbers, powers of two, random values), lattice bounds are drawn around the values they bound,
egglog's primitives are computed exactly, and wherever the rule would fire both sides are
evaluated by the IR interpreter and compared.  Two drivers share this: a deterministic sweep
(`sweep`) and a hypothesis search (`search`) that shrinks what it finds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import ir
from ...errors import EvaluationError
from ...ir.semantics import numpy_dtype
from ...ir.types import Type
from . import prims
from .model import Instance, canonical, value_of


@dataclass
class Violation:
    assignment: dict  # variable -> value
    message: str


def edge_values(t: Type) -> list[int]:
    if t.is_bool:
        return [0, 1]
    values = {
        0,
        1,
        2,
        3,
        7,
        8,
        16,
        31,
        32,
        63,
        64,
        255,
        256,
        1000,
        1024,
        65535,
        65536,
        t.max,
        t.max - 1,
        t.min,
        t.min + 1,
        (t.max >> 1),
        (t.max >> 1) + 1,
    }
    if t.is_signed:
        values |= {-v for v in list(values) if -v >= t.min} | {-1, -2, -8, -1024}
    return sorted((v for v in values if t.min <= v <= t.max), key=lambda v: (abs(v), v < 0))


def draw_values(t: Type, n: int, rng: np.random.Generator) -> list[int]:
    """n values of type t: a third edges, a third small, a third uniform."""
    edges = edge_values(t)
    if t.is_bool:
        return [int(x) for x in rng.integers(0, 2, n)]
    out = []
    for kind in rng.integers(0, 3, n):
        if kind == 0:
            out.append(edges[int(rng.integers(0, len(edges)))])
        elif kind == 1:
            low, high = max(t.min, -40), min(t.max, 40)
            out.append(int(rng.integers(low, high + 1)))
        else:
            out.append(int(rng.integers(0, 1 << t.bits, dtype=np.uint64)) + (t.min if t.is_signed else 0))
    return out


def _as_array(values: list[int], t: Type) -> np.ndarray:
    if t.is_bool:
        return np.array([bool(v) for v in values], dtype=np.bool_)
    mask = (1 << t.bits) - 1
    if t.is_signed:
        return np.array(
            [((v & mask) ^ (1 << (t.bits - 1))) - (1 << (t.bits - 1)) for v in values], dtype=numpy_dtype(t)
        )
    return np.array([v & mask for v in values], dtype=numpy_dtype(t))


def _math(array: np.ndarray, t: Type) -> list[int]:
    return [int(x) for x in array.tolist()] if not t.is_bool else [int(bool(x)) for x in array.tolist()]


def _i64_of(value: int, t: Type) -> int:
    """What a Const of type t holding `value` stores."""
    if t.is_bool:
        return int(bool(value))
    return value - (1 << 64) if t.kind == "u64" and value >= 1 << 63 else value


def _wrap(value: int, t: Type) -> int:
    if t.is_bool:
        return value & 1
    value &= (1 << t.bits) - 1
    if t.is_signed and value >> (t.bits - 1):
        value -= 1 << t.bits
    return value


def check_batch(instance: Instance, values: dict[str, list[int]], slack: dict[str, list[int]]) -> Violation | None:
    """Evaluate the instance on a batch: `values` for IR variables, `slack` (>= 0) for how far
    each lattice bound lies from the value it bounds (other symbols: the value itself)."""
    n = len(next(iter(values.values()))) if values else len(next(iter(slack.values()), [0]))
    types = {v.name: v.type for v in instance.variables}
    values = {k: list(v) for k, v in values.items()}
    _repair_facts(instance, values, types)
    env = {name: _as_array(vals, types[name]) for name, vals in values.items()}
    fires = [True] * n
    symbols: dict[str, list] = {}
    for symbol, var_name in instance.const_links.items():
        t = types[var_name]
        symbols[symbol] = [_i64_of(v, t) for v in _math(env[var_name], t)]
    for symbol, kind, e in instance.lattice:
        exact = _math(np.broadcast_to(ir.evaluate(e, env), (n,)), e.type)
        d = slack[symbol]
        bound = [x - s if kind == "lo" else x + s for x, s in zip(exact, d, strict=True)]
        symbols[symbol] = [b if prims.I64_MIN <= b <= prims.I64_MAX else None for b in bound]
    for symbol in instance.free:
        symbols[symbol] = list(slack[symbol])

    def compute(x, i):
        tag = x[0]
        if tag == "lit":
            return x[1]
        if tag == "sym":
            value = symbols[x[1]][i]
            if value is None:
                raise prims.Fail
            return value
        return prims.apply(x[1], [compute(a, i) for a in x[2]])

    def column(expression) -> list:
        out: list[int | None] = []
        for i in range(n):
            if not fires[i]:
                out.append(None)
                continue
            try:
                out.append(compute(expression, i))
            except prims.Fail:
                fires[i] = False
                out.append(None)
        return out

    def action_column(expression):
        """Values computed by an action: a failing primitive there makes egglog panic."""
        out: list[int | None] = []
        for i in range(n):
            if not fires[i]:
                out.append(None)
                continue
            try:
                out.append(compute(expression, i))
            except prims.Fail:
                return Violation(
                    _assignment(values, symbols, instance, i),
                    "a computation in the rule's action fails (egglog would panic): compute it in :when",
                )
        return out

    for symbol, _, _ in instance.lattice:
        for i, b in enumerate(symbols[symbol]):
            if b is None:
                fires[i] = False
    for symbol, expression in instance.definitions:
        symbols[symbol] = column(expression)
    for op, a, b in instance.conditions:
        left, right = column(a), column(b)
        for i in range(n):
            if fires[i] and not prims.compare(op, left[i], right[i]):
                fires[i] = False
    for kind, args in instance.facts:
        if kind == "InLoop":
            v, init, end = (_math(np.broadcast_to(ir.evaluate(a, env), (n,)), a.type) for a in args)
            for i in range(n):
                fires[i] = fires[i] and init[i] <= v[i] < end[i]
        elif kind == "LetValue":
            variable, value = (np.broadcast_to(ir.evaluate(a, env), (n,)) for a in args)
            for i in range(n):
                fires[i] = fires[i] and bool(variable[i] == value[i])
    for e, k in instance.multiples:
        exact = _math(np.broadcast_to(ir.evaluate(e, env), (n,)), e.type)
        factor = column(k)
        for i in range(n):
            if fires[i] and (factor[i] == 0 or exact[i] % factor[i] != 0):
                fires[i] = False
    for hole in instance.holes:
        raw = action_column(hole.value)
        if isinstance(raw, Violation):
            return raw
        t = hole.var.type
        filled = []
        for i in range(n):
            if not fires[i]:
                filled.append(0)
                continue
            if hole.wrap:
                filled.append(_wrap(raw[i], t))
            elif not canonical(raw[i], t):
                return Violation(
                    _assignment(values, symbols, instance, i),
                    f"the rule builds the constant {raw[i]}, which is not a value of {t}",
                )
            else:
                filled.append(value_of(raw[i], t))
        env[hole.var.name] = _as_array(filled, t)
    if not any(fires):
        return None
    for lhs, rhs in instance.equal:
        left_side = np.broadcast_to(ir.evaluate(lhs, env), (n,))
        right_side = np.broadcast_to(ir.evaluate(rhs, env), (n,))
        for i in range(n):
            if fires[i] and left_side[i] != right_side[i]:
                sides = f"left side {_show(left_side[i], lhs.type)}, right side {_show(right_side[i], rhs.type)}"
                return Violation(_assignment(values, symbols, instance, i), sides)
    for e, k in instance.claimed_multiples:
        exact = _math(np.broadcast_to(ir.evaluate(e, env), (n,)), e.type)
        factor = action_column(k)
        if isinstance(factor, Violation):
            return factor
        for i in range(n):
            if fires[i] and (factor[i] == 0 or exact[i] % factor[i] != 0):
                return Violation(
                    _assignment(values, symbols, instance, i), f"{exact[i]} is not a multiple of {factor[i]}"
                )
    for kind, e, limit in instance.bounds:
        exact = _math(np.broadcast_to(ir.evaluate(e, env), (n,)), e.type)
        limits = action_column(limit)
        if isinstance(limits, Violation):
            return limits
        for i in range(n):
            if not fires[i]:
                continue
            ok = limits[i] <= exact[i] if kind == "lo" else exact[i] <= limits[i]
            if not ok:
                return Violation(
                    _assignment(values, symbols, instance, i),
                    f"the value {exact[i]} is {'below' if kind == 'lo' else 'above'} the bound {limits[i]}",
                )
    return None


def _repair_facts(instance: Instance, values: dict[str, list[int]], types: dict[str, Type]) -> None:
    """Make drawn values satisfy InLoop / LetValue facts on plain variables (so they get tested)."""
    for kind, args in instance.facts:
        names = [a.name for a in args if isinstance(a, ir.Var)]
        if kind == "InLoop" and len(names) == len(args):
            v, init, bound = (values[name] for name in names)
            t = args[0].type
            for i in range(len(v)):
                if not init[i] <= v[i]:
                    init[i] = v[i]
                if not v[i] < bound[i] and v[i] < t.max:
                    bound[i] = v[i] + 1
        elif (
            kind == "LetValue"
            and isinstance(args[0], ir.Var)
            and args[0].name not in {x.name for x in ir.free_vars(args[1])}
        ):
            env = {name: _as_array(vals, types[name]) for name, vals in values.items()}
            n = len(values[args[0].name])
            values[args[0].name] = _math(np.broadcast_to(ir.evaluate(args[1], env), (n,)), args[1].type)


def _show(value, t: Type) -> str:
    return str(bool(value)).lower() if t.is_bool else str(int(value))


def _assignment(values, symbols, instance: Instance, i: int) -> dict:
    out = {name: vals[i] for name, vals in values.items()}
    for symbol, _, _ in instance.lattice:
        out[symbol] = symbols[symbol][i]
    return out


def draw_batch(instance: Instance, n: int, rng: np.random.Generator) -> tuple[dict, dict]:
    values = {v.name: draw_values(v.type, n, rng) for v in instance.variables}
    slack = {}
    for symbol, _, _ in instance.lattice:
        choice = rng.integers(0, 4, n)
        small = rng.integers(0, 8, n)
        large = rng.integers(0, 1 << 40, n)
        slack[symbol] = [
            0 if c < 2 else int(s) if c == 2 else int(b) for c, s, b in zip(choice, small, large, strict=True)
        ]
    for symbol in instance.free:
        slack[symbol] = [int(x) for x in rng.integers(-100, 100, n)]
    return values, slack


def sweep(instance: Instance, samples: int = 256, seed: int = 0) -> Violation | None:
    """A deterministic batch: every variable at its edge values, then random draws."""
    rng = np.random.default_rng(seed)
    values, slack = draw_batch(instance, samples, rng)
    # first rows: all variables together at each edge value (lattices tight)
    for row in range(min(samples, 24)):
        for position, v in enumerate(instance.variables):
            edges = edge_values(v.type)
            values[v.name][row] = edges[(row + 5 * position) % len(edges)]
        for symbol in slack:
            if symbol in {s for s, _, _ in instance.lattice}:
                slack[symbol][row] = 0
    try:
        return check_batch(instance, values, slack)
    except EvaluationError as error:
        return Violation({}, f"the interpreter rejected the rule's expressions: {error}")


def search(instance: Instance, examples: int = 20, batch: int = 8) -> Violation | None:
    """A hypothesis search (deterministic, derandomized) for an assignment that breaks the rule;
    hypothesis shrinks what it finds toward small values."""
    from hypothesis import HealthCheck, Phase, given, settings  # seconds to import: only here
    from hypothesis import strategies as st

    found: list[Violation] = []

    def value_strategy(t: Type):
        if t.is_bool:
            return st.integers(0, 1)
        # small numbers first: hypothesis shrinks toward the first strategy's simplest values
        return st.one_of(
            st.integers(max(t.min, -64), min(t.max, 64)), st.sampled_from(edge_values(t)), st.integers(t.min, t.max)
        )

    lattice_symbols = [s for s, _, _ in instance.lattice]
    row = st.fixed_dictionaries(
        {
            **{v.name: value_strategy(v.type) for v in instance.variables},
            **{s: st.one_of(st.just(0), st.integers(0, 16), st.integers(0, 1 << 40)) for s in lattice_symbols},
            **{s: st.integers(-100, 100) for s in instance.free},
        }
    )

    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
    )
    @given(st.lists(row, min_size=1, max_size=batch))
    def run(rows):
        values = {v.name: [r[v.name] for r in rows] for v in instance.variables}
        slack = {s: [r[s] for r in rows] for s in [*lattice_symbols, *instance.free]}
        violation = check_batch(instance, values, slack)
        if violation is not None:
            found[:] = [violation]
            raise AssertionError(violation.message)

    try:
        run()
    except AssertionError:
        return found[0] if found else None
    return None
