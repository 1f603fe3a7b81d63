"""Evaluate expressions on numpy arrays: the reference semantics of the IR.

A variable may be bound to a Python number or to a numpy array (all thread ids of a grid, or
many random test values): the expression is evaluated for all of them at once.  Vector values
carry their lanes in the last axis.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from ..errors import EvaluationError
from . import semantics
from .expr import (
    Binary, BoolImm, Broadcast, Cast, Expr, FloatImm, IntImm, Load, Ptr, Select, Shuffle, Ternary, Unary, Var,
)
from .types import Type

#: load(buffer_value, byte_addresses, type) -> values; byte_addresses has one entry per lane
LoadFunction = Callable[[object, np.ndarray, Type], np.ndarray]


def to_value(value, t: Type, name: str = "value") -> np.ndarray:
    """A Python number or array as a value of type `t` (Python integers must fit the type)."""
    dtype = semantics.numpy_dtype(t)
    if isinstance(value, bool) or isinstance(value, (int, float)):
        if t.is_int:
            if isinstance(value, float) and not value.is_integer():
                raise EvaluationError(f"{name} = {value} is not an integer ({t})")
            if not t.can_represent(int(value)):
                raise EvaluationError(f"{name} = {int(value)} does not fit {t} [{t.min}, {t.max}]")
            return np.asarray(int(value), dtype=dtype)
        if t.is_float:
            return semantics.round_array(np.float64(value), t)
        return np.asarray(bool(value))
    array = np.asarray(value)
    if t.is_float:
        return semantics.round_array(array.astype(np.float64), t.scalar)
    return array.astype(dtype)


class Evaluator:
    """Evaluates expressions under an environment of variable values."""

    def __init__(self, env: Mapping[str, object] | None = None, load: LoadFunction | None = None):
        self.env = dict(env or {})
        self._load = load

    def bind(self, name: str, value) -> None:
        self.env[name] = value

    def __call__(self, e: Expr) -> np.ndarray:
        return self.evaluate(e)

    def evaluate(self, e: Expr) -> np.ndarray:
        method = getattr(self, "_" + type(e).__name__)
        return method(e)

    # leaves
    def _Var(self, e: Var):
        if e.name not in self.env:
            raise EvaluationError(f"variable '{e.name}' has no value (bind it with --var {e.name}=VALUE)")
        value = self.env[e.name]
        if e.type.is_ptr:
            return value
        if isinstance(value, np.ndarray) and value.dtype == semantics.numpy_dtype(e.type):
            return value
        return to_value(value, e.type, e.name)

    def _IntImm(self, e: IntImm):
        return np.asarray(e.value, dtype=semantics.numpy_dtype(e.type))

    def _FloatImm(self, e: FloatImm):
        return np.asarray(e.value, dtype=semantics.numpy_dtype(e.type))

    def _BoolImm(self, e: BoolImm):
        return np.asarray(e.value)

    # operators
    def _Unary(self, e: Unary):
        return semantics.unary(e.op, self.evaluate(e.a), e.type.scalar)

    def _Binary(self, e: Binary):
        return semantics.binary(e.op, self.evaluate(e.a), self.evaluate(e.b), e.a.type.scalar)

    def _Ternary(self, e: Ternary):
        return semantics.ternary(e.op, self.evaluate(e.a), self.evaluate(e.b), self.evaluate(e.c), e.type.scalar)

    def _Select(self, e: Select):
        cond = self.evaluate(e.cond)
        if e.cond.type.lanes == 1 and e.type.lanes > 1:
            cond = cond[..., None]
        return semantics.select(cond, self.evaluate(e.true_value), self.evaluate(e.false_value))

    def _Cast(self, e: Cast):
        return semantics.convert(self.evaluate(e.value), e.value.type.scalar, e.type.scalar, e.saturate)

    def _Broadcast(self, e: Broadcast):
        value = self.evaluate(e.value)
        return np.broadcast_to(value[..., None], value.shape + (e.lanes,))

    def _Shuffle(self, e: Shuffle):
        parts = [self.evaluate(v) for v in e.vectors]
        parts = [p[..., None] if v.type.lanes == 1 else p for p, v in zip(parts, e.vectors)]
        batch = np.broadcast_shapes(*(p.shape[:-1] for p in parts))
        parts = [np.broadcast_to(p, batch + p.shape[-1:]) for p in parts]
        return np.concatenate(parts, axis=-1)[..., list(e.indices)]

    def _Load(self, e: Load):
        if self._load is None:
            raise EvaluationError(f"cannot load from '{e.buffer.name}' in a pure expression")
        offset = self.evaluate(e.offset).astype(np.int64)
        lanes = e.type.lanes
        if lanes > 1 and e.offset.type.lanes == 1:
            stride = e.stride if e.stride is not None else e.type.scalar.size
            offset = offset[..., None] + np.arange(lanes, dtype=np.int64) * stride
        return self._load(self.evaluate(e.buffer), offset, e.type)

    def _Ptr(self, e: Ptr):
        raise EvaluationError("a pointer has no value outside a call")


def evaluate(e: Expr, env: Mapping[str, object] | None = None) -> np.ndarray:
    """Evaluate a pure expression (no loads) with variables bound in `env`."""
    return Evaluator(env).evaluate(e)
