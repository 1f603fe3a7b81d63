"""Shared helpers for the e-graph tests: random values within ranges, equality by evaluation."""

from __future__ import annotations

import numpy as np

from xegen import ir
from xegen.ir.semantics import numpy_dtype


def wrap_values(values, t: ir.Type) -> np.ndarray:
    """Python integers reduced into type t, as t's numpy dtype."""
    mask = (1 << t.bits) - 1
    out = []
    for v in values:
        v = int(v) & mask
        if t.is_signed and v >> (t.bits - 1):
            v -= 1 << t.bits
        out.append(v)
    return np.array(out, dtype=numpy_dtype(t))


def sample_env(variables, ranges: dict, n: int = 64, seed: int = 0) -> dict:
    """Values for each variable: its range's ends and random values inside it (or, without a
    range, the type's edges and random 64-bit patterns)."""
    rng = np.random.default_rng(seed)
    env = {}
    for v in variables:
        if v.type.is_bool:
            env[v.name] = rng.integers(0, 2, n).astype(bool)
            continue
        r = ranges.get(v.name)
        if r is not None:
            values = [r.start, r.stop - 1] + [int(x) for x in rng.integers(r.start, r.stop, n - 2)]
        else:
            t = v.type
            values = [0, 1, -1, t.min, t.max, 2, -2, 7] + [int(x) for x in rng.integers(-(2**62), 2**62, n - 8)]
        env[v.name] = wrap_values(values, v.type)
    return env


def same_values(a: ir.Expr, b: ir.Expr, ranges: dict | None = None, n: int = 64) -> tuple[bool, dict | None]:
    variables = {v.name: v for v in [*ir.free_vars(a), *ir.free_vars(b)] if not v.type.is_ptr}
    env = sample_env(variables.values(), ranges or {}, n)
    x = np.broadcast_to(ir.evaluate(a, env), (n,))
    y = np.broadcast_to(ir.evaluate(b, env), (n,))
    if np.array_equal(x, y):
        return True, None
    i = int(np.argmax(x != y))
    return False, {name: env[name][i] for name in env} | {"left": x[i], "right": y[i]}
