"""Evaluate expressions on numpy arrays: the reference semantics of the IR.

A variable may be bound to a Python number or to a numpy array (all thread ids of a grid, or
many random test values): the expression is evaluated for all of them at once.  Vector values
carry their lanes in the last axis.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..errors import EvaluationError
from . import semantics
from .expr import (
    Binary,
    BoolImm,
    Broadcast,
    Cast,
    Expr,
    FloatImm,
    IntImm,
    Load,
    Ptr,
    Select,
    Shuffle,
    Ternary,
    Unary,
    Var,
)
from .types import Type

#: load(buffer_value, byte_addresses, type) -> values; byte_addresses has one entry per lane; the
#: buffer value is whatever the caller bound the buffer's name to (the interpreter binds a Buffer)
LoadFunction = Callable[[Any, np.ndarray, Type], np.ndarray]


def to_value(value, t: Type, name: str = "value") -> np.ndarray:
    """A Python number or array as a value of type `t`.

    Integers must fit `t` (arrays as much as single numbers), bools take true/false or 0/1, and
    a vector type's lanes are the last axis (a single number fills every lane)."""
    if t.is_ptr:
        raise EvaluationError(f"'{name}' is a buffer (ptr): it has no numeric value")
    array = np.asarray(value)
    if array.dtype.kind not in "biuf" and not (array.dtype.kind == "O" and _all_numbers(array)):
        raise EvaluationError(f"{name} = {value!r} is not a number")
    if t.is_int:
        _check_integers(array, t, name)
    elif t.is_bool:
        _check_bools(array, name)
    converted = _convert(array, t.scalar)
    if t.lanes > 1:
        if converted.ndim == 0:
            return np.broadcast_to(converted, (t.lanes,))
        if converted.shape[-1] != t.lanes:
            raise EvaluationError(
                f"{name}: a {t} value needs {t.lanes} lanes in its last axis, not shape {converted.shape}"
            )
    return converted


def _all_numbers(array: np.ndarray) -> bool:
    return all(isinstance(v, (numbers.Real, np.bool_)) for v in array.flat)


def _check_integers(array: np.ndarray, t: Type, name: str) -> None:
    if array.size == 0:
        return
    if array.dtype.kind in "fO":
        whole = (
            np.array([math.isfinite(v) and v == math.floor(v) for v in array.flat])
            if array.dtype.kind == "O"
            else np.isfinite(array) & (array == np.trunc(array))
        )
        if not np.all(whole):
            raise EvaluationError(f"{name} = {array.flat[int(np.argmin(whole))]} is not an integer ({t})")
    for v in (int(array.min()), int(array.max())):
        if not t.can_represent(v):
            raise EvaluationError(f"{name} = {v} does not fit {t} [{t.min}, {t.max}]")


def _check_bools(array: np.ndarray, name: str) -> None:
    if array.dtype.kind == "b" or array.size == 0:
        return
    wrong = (array != 0) & (array != 1)
    if np.any(wrong):
        raise EvaluationError(f"{name} = {array.flat[int(np.argmax(wrong))]} is not a bool (true, false, 0 or 1)")


def _convert(array: np.ndarray, t: Type) -> np.ndarray:
    """Checked numbers (of any numpy kind) as values of scalar type `t`."""
    if not t.is_float:
        return array.astype(semantics.numpy_dtype(t))
    if array.dtype.kind == "O":  # Python numbers: integers of any size round once
        return np.vectorize(lambda v: _number_to_float(v, t), otypes=[semantics.numpy_dtype(t)])(array)
    if array.dtype.kind in "iu":
        wide = Type("s64") if array.dtype.kind == "i" else Type("u64")
        return semantics.convert(array.astype(semantics.numpy_dtype(wide)), wide, t)
    return semantics.round_array(array.astype(np.float64), t)


def _number_to_float(v, t: Type) -> float:
    if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
        return semantics.round_int(int(v), t)
    return semantics.round_float(float(v), t)


class Evaluator:
    """Evaluates expressions under an environment of variable values.

    The tree is walked with an explicit stack (a sum of thousands of terms is thousands of
    levels deep), and a subexpression shared within one evaluation is computed once."""

    def __init__(self, env: Mapping[str, object] | None = None, load: LoadFunction | None = None):
        self.env = dict(env or {})
        self._load = load

    def bind(self, name: str, value) -> None:
        self.env[name] = value

    def __call__(self, e: Expr) -> np.ndarray:
        return self.evaluate(e)

    def evaluate(self, e: Expr) -> np.ndarray:
        values: dict[int, np.ndarray] = {}
        pending = [e]
        while pending:
            node = pending[-1]
            if id(node) in values:
                pending.pop()
                continue
            operands = _operands(node)
            missing = [x for x in operands if id(x) not in values]
            if missing:
                pending.extend(reversed(missing))
                continue
            pending.pop()
            method = getattr(self, "_" + type(node).__name__)
            values[id(node)] = method(node, *(values[id(x)] for x in operands))
        return values[id(e)]

    # leaves
    def _Var(self, e: Var):
        if e.name not in self.env:
            raise EvaluationError(f"variable '{e.name}' has no value (bind it with --var {e.name}=VALUE)")
        value = self.env[e.name]
        if e.type.is_ptr:
            if isinstance(value, (numbers.Number, np.ndarray)):
                raise EvaluationError(f"'{e.name}' is a buffer (ptr): it has no numeric value")
            return value
        if (
            isinstance(value, np.ndarray)
            and value.dtype == semantics.numpy_dtype(e.type)
            and e.type.kind != "bf16"
            and (e.type.lanes == 1 or value.shape[-1:] == (e.type.lanes,))
        ):
            return value  # already a value of this type (e.g. bound by a let)
        return to_value(value, e.type, e.name)

    def _IntImm(self, e: IntImm):
        return np.asarray(e.value, dtype=semantics.numpy_dtype(e.type))

    def _FloatImm(self, e: FloatImm):
        return np.asarray(e.value, dtype=semantics.numpy_dtype(e.type))

    def _BoolImm(self, e: BoolImm):
        return np.asarray(e.value)

    # operators (called with the values of the operands)
    def _Unary(self, e: Unary, a):
        return semantics.unary(e.op, a, e.type.scalar)

    def _Binary(self, e: Binary, a, b):
        return semantics.binary(e.op, a, b, e.a.type.scalar)

    def _Ternary(self, e: Ternary, a, b, c):
        return semantics.ternary(e.op, a, b, c, e.type.scalar)

    def _Select(self, e: Select, cond, true_value, false_value):
        if e.cond.type.lanes == 1 and e.type.lanes > 1:
            cond = cond[..., None]
        return semantics.select(cond, true_value, false_value)

    def _Cast(self, e: Cast, value):
        return semantics.convert(value, e.value.type.scalar, e.type.scalar, e.saturate)

    def _Broadcast(self, e: Broadcast, value):
        return np.broadcast_to(value[..., None], value.shape + (e.lanes,))

    def _Shuffle(self, e: Shuffle, *parts):
        vectors = [p[..., None] if v.type.lanes == 1 else p for p, v in zip(parts, e.vectors, strict=True)]
        batch = np.broadcast_shapes(*(p.shape[:-1] for p in vectors))
        vectors = [np.broadcast_to(p, batch + p.shape[-1:]) for p in vectors]
        return np.concatenate(vectors, axis=-1)[..., list(e.indices)]

    def _Load(self, e: Load, buffer, offset):
        if self._load is None:
            raise EvaluationError(f"cannot load from '{e.buffer.name}' in a pure expression")
        offset = offset.astype(np.int64)
        lanes = e.type.lanes
        if lanes > 1 and e.offset.type.lanes == 1:
            stride = e.stride if e.stride is not None else e.type.scalar.size
            offset = offset[..., None] + np.arange(lanes, dtype=np.int64) * stride
        return self._load(buffer, offset, e.type)

    def _Ptr(self, e: Ptr, offset):
        raise EvaluationError("a pointer has no value outside a call")


def _operands(e: Expr) -> tuple[Expr, ...]:
    """The subexpressions whose values `e`'s method takes, in order."""
    if isinstance(e, (Unary, Binary, Ternary)):
        return (e.a,) if isinstance(e, Unary) else (e.a, e.b) if isinstance(e, Binary) else (e.a, e.b, e.c)
    if isinstance(e, Select):
        return e.cond, e.true_value, e.false_value
    if isinstance(e, (Cast, Broadcast)):
        return (e.value,)
    if isinstance(e, Shuffle):
        return e.vectors
    if isinstance(e, Load):
        return e.buffer, e.offset
    if isinstance(e, Ptr):
        return (e.offset,)
    return ()


def evaluate(e: Expr, env: Mapping[str, object] | None = None) -> np.ndarray:
    """Evaluate a pure expression (no loads) with variables bound in `env`."""
    return Evaluator(env).evaluate(e)
