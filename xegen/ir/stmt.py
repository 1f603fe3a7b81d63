"""IR statements: let, for, if, sequences, buffer allocation, stores and calls.

`Let` and `Alloc` scope over their `body`.  `Seq` flattens nested sequences, so a statement
has one canonical form (what the printer prints and the parser builds).
"""

from __future__ import annotations

from dataclasses import dataclass

from .expr import Expr, IRTypeError, Node, Ptr, Var, as_expr
from .funcs import Func
from .types import BOOL

ALLOC_KINDS = ("grf", "slm", "global")


class Stmt(Node):
    __slots__ = ()


@dataclass(frozen=True, slots=True, eq=False)
class Let(Stmt):
    """`var = value` within `body`; a value of None declares an external variable (a kernel
    argument or thread id whose value comes from outside)."""

    var: Var
    value: Expr | None
    body: Stmt

    def __post_init__(self):
        if self.value is not None and self.value.type != self.var.type:
            raise IRTypeError(f"let {self.var.name}: {self.var.type} bound to a {self.value.type} value")


@dataclass(frozen=True, slots=True, eq=False)
class For(Stmt):
    """for (var = init; var < bound; var++) body.  `unroll`: 1 none, n > 1 by n, 0 fully."""

    var: Var
    init: Expr
    bound: Expr
    body: Stmt
    unroll: int = 1

    def __post_init__(self):
        if not self.var.type.is_int or self.var.type.lanes != 1:
            raise IRTypeError(f"loop variable {self.var.name} must be a scalar integer, not {self.var.type}")
        for what, e in (("start", self.init), ("bound", self.bound)):
            if e.type != self.var.type:
                raise IRTypeError(f"loop {self.var.name}: {what} is {e.type}, expected {self.var.type}")
        if self.unroll < 0:
            raise IRTypeError(f"loop {self.var.name}: unroll must be ≥ 0, not {self.unroll}")


@dataclass(frozen=True, slots=True, eq=False)
class IfThenElse(Stmt):
    cond: Expr
    then_case: Stmt
    else_case: Stmt | None = None

    def __post_init__(self):
        if self.cond.type != BOOL:
            raise IRTypeError(f"an if condition must be a scalar bool, not {self.cond.type}")


@dataclass(frozen=True, slots=True, eq=False)
class Seq(Stmt):
    stmts: tuple[Stmt, ...]

    def __post_init__(self):
        flat: list[Stmt] = []
        for s in self.stmts:
            flat.extend(s.stmts if isinstance(s, Seq) else (s,))
        if len(flat) == 1:
            raise IRTypeError("a sequence of one statement is that statement: build it with seq()")
        object.__setattr__(self, "stmts", tuple(flat))


@dataclass(frozen=True, slots=True, eq=False)
class Alloc(Stmt):
    """A buffer of `size` bytes in the GRF (per thread), SLM (per thread group) or global memory."""

    buffer: Var
    size: int
    kind: str
    body: Stmt

    def __post_init__(self):
        if not self.buffer.type.is_ptr:
            raise IRTypeError(f"alloc of '{self.buffer.name}', which is not a buffer variable")
        if self.kind not in ALLOC_KINDS:
            raise IRTypeError(f"alloc kind must be one of {', '.join(ALLOC_KINDS)}, not {self.kind!r}")
        if self.size <= 0:
            raise IRTypeError(f"alloc of '{self.buffer.name}' needs a positive size, not {self.size}")


@dataclass(frozen=True, slots=True, eq=False)
class Store(Stmt):
    """Write `value` to `buffer` at byte `offset` (lane i at offset + i*stride; a vector offset
    scatters).  Lanes whose `mask` is false are not written."""

    buffer: Var
    offset: Expr
    value: Expr
    stride: int | None = None
    mask: Expr | None = None

    def __post_init__(self):
        if not self.buffer.type.is_ptr:
            raise IRTypeError(f"store to '{self.buffer.name}', which is not a buffer")
        lanes = self.value.type.lanes
        if not self.offset.type.is_int or self.offset.type.lanes not in (1, lanes):
            raise IRTypeError(f"a store offset must be an integer scalar or one per lane, not {self.offset.type}")
        if self.offset.type.lanes > 1 and self.stride is not None:
            raise IRTypeError("a scatter (vector offset) takes no stride")
        if self.mask is not None and (not self.mask.type.is_bool or self.mask.type.lanes not in (1, lanes)):
            raise IRTypeError(f"a store mask must be bool, scalar or one per lane, not {self.mask.type}")


@dataclass(frozen=True, slots=True, eq=False)
class Call(Stmt):
    """A call of a hardware function (send, dpas, mad, barrier, ...) on pointer and value args."""

    func: Func
    args: tuple[Expr | None, ...] = ()

    def __post_init__(self):
        self.func.check_args(self.args)


def pointer_arg(arg: Expr | None) -> Ptr:
    """A call argument `Func.check_args` accepted as a pointer (dst, src0-2, src, reg, mem), typed
    as one."""
    assert isinstance(arg, Ptr), arg
    return arg


def seq(*stmts: Stmt) -> Stmt:
    """A sequence; nested sequences are flattened and a single statement stays itself."""
    flat: list[Stmt] = []
    for s in stmts:
        flat.extend(s.stmts if isinstance(s, Seq) else (s,))
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def store(buffer: Var, offset, value: Expr, stride: int | None = None, mask: Expr | None = None) -> Store:
    return Store(buffer, as_expr(offset), value, stride, mask)


def let(var: Var, value, body: Stmt) -> Let:
    return Let(var, None if value is None else as_expr(value, var.type).cast(var.type), body)


def for_(var: Var, init, bound, body: Stmt, unroll: int = 1) -> For:
    return For(var, as_expr(init, var.type).cast(var.type), as_expr(bound, var.type).cast(var.type), body, unroll)
