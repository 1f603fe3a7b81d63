"""Instruction selection for expressions.

`Expressions.value(e)` returns where the value of `e` is: a `Constant`, or a `Region` of a
virtual register (a let-bound variable's register, a GRF buffer's bytes, or a fresh temporary
holding a computed result).  `Expressions.into(e, dst)` computes `e` straight into a region
(the last instruction writes `dst`), which is how stores to GRF buffers and `let`s avoid a
copy.

Scalars are thread-uniform values computed with SIMD1 instructions; vectors run at their
lane count, split by `Builder.alu` into legal instructions.  Operations on constants are
folded with the IR interpreter itself, so folding can never disagree with the semantics.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from ..emit.instruction import CondModifier, Imm, Predicate, Reg
from ..errors import UnsupportedError
from ..ir import evaluate
from ..ir import expr as E
from ..ir.types import BOOL, F32, S32, U16, U32, Type
from ..ir.visitor import walk
from . import arith
from .builder import Builder, PhysicalOperand, accumulator_runs, fits16
from .conditions import Conditions
from .convert import convert, halves
from .values import Constant, Region, Value, VReg, xe_type

if TYPE_CHECKING:
    from .inductions import LoopInductions
    from .messages import Messages


# --- what names are bound to ---------------------------------------------------------------------


@dataclass(frozen=True)
class GrfBuffer:
    """An `alloc ... grf`: bytes of one virtual register."""

    reg: VReg
    size: int


@dataclass(frozen=True)
class SlmBuffer:
    """An `alloc ... slm`: bytes of shared local memory from `base`."""

    base: int
    size: int


@dataclass(frozen=True)
class GlobalBuffer:
    """A buffer argument: its 64-bit address in a register, and the index of its surface in the
    binding table where it has one (A32 messages reach it by byte offset)."""

    address: Region
    bti: int | None = None


Binding = Value | GrfBuffer | SlmBuffer | GlobalBuffer


def _evaluate(e: E.Expr):
    return evaluate(e, {})


def constant_expr(c: Constant) -> E.Expr:
    return E.const(c.value, c.type)


def fold(e: E.Expr) -> Constant:
    """The value of an expression over constants, by the IR's semantics."""
    value = np.asarray(_evaluate(e))
    t = e.type
    if value.ndim == 0 or t.lanes == 1:
        v = value.reshape(-1)[0]
        return Constant(bool(v) if t.is_bool else float(v) if t.is_float else int(v), t.scalar)
    first = value.reshape(-1)[0]
    if np.all(value == first) or (t.is_float and np.all(np.isnan(value)) and np.isnan(first)):
        return Constant(bool(first) if t.is_bool else float(first) if t.is_float else int(first), t.scalar, t.lanes)
    raise _NotUniform(value)


class _NotUniform(Exception):
    def __init__(self, values):
        self.values = values


class Expressions:
    """Expression lowering over an environment of bindings."""

    def __init__(self, builder: Builder):
        self.b = builder
        self.env: dict[str, Binding] = {}
        self.conditions = Conditions(builder, self)
        self.messages: Messages | None = None  # set by the statement lowering (memory loads in expressions)
        # vector results computed in the current statement, by expression (`forget_computed`)
        self.computed: dict[E.Expr, Value] = {}
        self.inductions: LoopInductions | None = None  # the innermost runtime loop's (inductions.py)

    # --- environment --------------------------------------------------------------------------
    def lookup(self, name: str) -> Binding:
        if name not in self.env:
            raise UnsupportedError(f"variable '{name}' is not bound here")
        return self.env[name]

    def buffer(self, var: E.Var) -> Binding:
        bound = self.lookup(var.name)
        if not isinstance(bound, (GrfBuffer, SlmBuffer, GlobalBuffer)):
            raise UnsupportedError(f"'{var.name}' is not a buffer")
        return bound

    # --- entry points -------------------------------------------------------------------------
    def value(self, e: E.Expr) -> Value:
        """Where the value of `e` is (computing it if needed).  A vector integer result is
        computed once per statement: the IR's CSE binds only scalars, and one gathered
        message's addresses and in-bounds conditions repeat the same lane arithmetic (a
        pixel's row and column, by division) in each of its terms.  An induction variable of
        the loop is its register (inductions.py)."""
        if self.inductions is not None:
            stepped = self.inductions.register(e, self)
            if stepped is not None:
                return stepped
        shared = _shareable(e)
        if shared:
            known = self.computed.get(e)
            if known is not None:
                return known
        result = getattr(self, "_" + type(e).__name__)(e, None)
        if shared:
            self.computed[e] = result
        return result

    def forget_computed(self) -> None:
        """Start a statement: the values computed for the last one may since have been
        overwritten (a register reused, a loop's back edge), and names may be bound anew."""
        self.computed.clear()

    def into(self, e: E.Expr, dst: Region) -> None:
        """Compute `e` into `dst` (lanes of e's type, or a scalar broadcast to them)."""
        if _reads_register(e, dst, self) or (self.inductions is not None and self.inductions.register(e, self)):
            self._copy(dst, self.value(e))
            return
        result = getattr(self, "_" + type(e).__name__)(e, dst)
        if result is not dst:
            self._copy(dst, result)

    def constant_int(self, e: E.Expr, what: str) -> int:
        v = self.value(e)
        if not isinstance(v, Constant):
            raise UnsupportedError(f"{what} must be known at compile time, not '{e}'")
        return int(v.value)

    # --- helpers ------------------------------------------------------------------------------
    def _copy(self, dst: Region, v: Value, predicate: Predicate | None = None) -> None:
        if isinstance(v, Region) and v.lanes == 1 and dst.lanes > 1:
            v = v.broadcast(dst.lanes)
        if isinstance(v, Constant) and dst.lanes > 1:
            v = v.broadcast(dst.lanes)
        if (
            isinstance(v, Region)
            and v.type == dst.type
            and v.reg is dst.reg
            and v.offset == dst.offset
            and (v.stride == dst.stride or dst.lanes == 1)
            and not v.negate
        ):
            return
        convert(self.b, dst, v, predicate=predicate)

    def _target(self, dst: Region | None, t: Type) -> Region:
        if dst is not None:
            return dst
        return self.b.temp(t.scalar, t.lanes)

    def _lanes(self, v: Value, lanes: int) -> Value:
        if lanes > 1 and (isinstance(v, Constant) or v.lanes == 1):
            return v.broadcast(lanes)
        return v

    def _register(self, v: Value, t: Type | None = None) -> Region:
        return self.b.scalar(v, t) if isinstance(v, Constant) else v

    # --- leaves -------------------------------------------------------------------------------
    def _Var(self, e: E.Var, dst):
        bound = self.lookup(e.name)
        if isinstance(bound, (GrfBuffer, SlmBuffer, GlobalBuffer)):
            raise UnsupportedError(f"buffer '{e.name}' used as a value")
        return bound

    def _IntImm(self, e: E.IntImm, dst):
        return Constant(e.value, e.type)

    def _FloatImm(self, e: E.FloatImm, dst):
        return Constant(e.value, e.type)

    def _BoolImm(self, e: E.BoolImm, dst):
        return Constant(e.value, BOOL)

    def _Broadcast(self, e: E.Broadcast, dst):
        v = self.value(e.value)
        if e.type.is_bool:
            if isinstance(v, Constant):
                return v.broadcast(e.lanes)
            return self._bool(e, dst)
        return v.broadcast(e.lanes)

    def _Ptr(self, e: E.Ptr, dst):
        raise UnsupportedError(f"a pointer ('{e}') can only be a call argument")

    # --- operators ----------------------------------------------------------------------------
    def _bool(self, e: E.Expr, dst):
        """A bool used as a value: kept in a register (see Conditions.to_register)."""
        try:
            return fold(e)
        except (_NotUniform, Exception) as error:  # noqa: BLE001 - not constant
            if isinstance(error, UnsupportedError):
                raise
        return self.conditions.to_register(e)

    def _Binary(self, e: E.Binary, dst):
        if e.type.is_bool:
            return self._bool_binary(e, dst)
        a, c = self.value(e.a), self.value(e.b)
        if isinstance(a, Constant) and isinstance(c, Constant):
            return self._fold(E.Binary(e.op, constant_expr(a), constant_expr(c)), e.type)
        simpler = _identity(e.op, a, c, e.type)
        if simpler is not None:
            return simpler
        t = e.type.scalar
        if t.is_float:
            return self._float_binary(e.op, a, c, e.type, dst)
        if e.op == "mod" and _shareable(e) and isinstance(c, Constant) and _needs_quotient(int(c.value), t):
            # x % d from x / d: a pixel's column and row divide the same index once
            quotient = self.value(E.Binary("div", e.a, e.b))
            assert isinstance(quotient, Region)  # (x is not constant: both were not folded)
            return arith.divide(self.b, self._lanes(a, e.type.lanes), int(c.value), t, "remainder", quotient)
        return self._int_binary(e.op, a, c, e.type, dst)

    def _bool_binary(self, e: E.Binary, dst):
        try:
            return fold(e)
        except Exception:  # noqa: BLE001 - operands are not constants
            pass
        return self.conditions.to_register(e)

    def _fold(self, e: E.Expr, t: Type) -> Value:
        try:
            return fold(e)
        except _NotUniform as vector:
            return self._vector_constant(vector.values, t)

    def _float_binary(self, op: str, a: Value, c: Value, t: Type, dst) -> Value:
        scalar = t.scalar
        if scalar.kind == "bf16":
            wide_a, wide_c = self._to_f32(a, t.lanes), self._to_f32(c, t.lanes)
            wide = self.b.temp(F32, t.lanes)
            self._float_binary(op, wide_a, wide_c, F32.with_lanes(t.lanes), wide)
            out = self._target(dst, t)
            convert(self.b, out, wide)
            return out
        if scalar.bits == 64 and not self.b.hw.has_fp64:
            raise UnsupportedError(f"{self.b.hw.display_name} has no 64-bit floating point")
        out = self._target(dst, t)
        a, c = self._lanes(a, t.lanes), self._lanes(c, t.lanes)
        if op == "add":
            self.b.alu("add", out, [a, c])
        elif op == "sub":
            self.b.alu("add", out, [a, _negate(c)])
        elif op == "mul":
            self.b.alu("mul", out, [a, c])
        elif op == "div":
            raise UnsupportedError(
                "floating-point division is not supported (Xe has no correctly rounded "
                "divide instruction); multiply by a reciprocal in the IR instead"
            )
        elif op in ("min", "max"):
            a = self._register(a) if isinstance(a, Constant) else a
            cond = "lt" if op == "min" else "ge"
            self.b.alu("sel", out, [a, c], cond=CondModifier(cond, self.b.scratch_flag()))
        else:
            raise UnsupportedError(f"'{op}' on {scalar} is not supported")
        return out

    def _math(self, op: str, a: Value, t: Type, dst) -> Value:
        """A math-unit function, on f32 (narrower floats go through f32)."""
        if t.scalar != F32:
            wide = self._to_f32(a, t.lanes)
            result = self._math(op, wide, F32.with_lanes(t.lanes), None)
            out = self._target(dst, t)
            convert(self.b, out, result)
            return out
        out = self._target(dst, t)
        self.b.alu("math", out, [self._lanes(a, t.lanes)], function=_MATH_FUNCTIONS[op])
        return out

    def _to_f32(self, v: Value, lanes: int) -> Value:
        if isinstance(v, Constant):
            return Constant(float(v.value), F32, v.lanes)
        out = self.b.temp(F32, v.lanes if v.stride else 1)
        convert(self.b, out, v if v.stride else Region(v.reg, v.offset, v.type))
        return out if v.stride or v.lanes == 1 else out.broadcast(v.lanes)

    def _int_binary(self, op: str, a: Value, c: Value, t: Type, dst) -> Value:
        scalar = t.scalar
        lanes = t.lanes
        if scalar.bits < 32:
            return self._narrow(op, a, c, t, dst)
        if scalar.bits == 64:
            return self._int64_binary(op, a, c, t, dst)
        a, c = self._lanes(a, lanes), self._lanes(c, lanes)
        if op in ("div", "mod"):
            if not isinstance(c, Constant):
                raise UnsupportedError(
                    "division by a value known only at run time is not supported (only by constants)"
                )
            if isinstance(a, Constant):
                a = self.b.scalar(a).broadcast(lanes) if lanes > 1 else self.b.scalar(a)
            result = arith.divide(self.b, a, int(c.value), scalar, "quotient" if op == "div" else "remainder")
            return result
        out = self._target(dst, t)
        if op == "add":
            self.b.alu("add", out, [a, c])
        elif op == "sub":
            if isinstance(a, Constant):
                self.b.alu("add", out, [_negate(c), a])
            else:
                self.b.alu("add", out, [a, _negate(c)])
        elif op == "mul":
            arith.multiply(self.b, out, a, c)
        elif op in ("and", "or", "xor"):
            self.b.alu(op, out, [a, c])
        elif op in ("shl", "shr"):
            if isinstance(a, Constant):
                a = self._register(a)
                a = a.broadcast(lanes) if lanes > 1 else a
            opcode = "shl" if op == "shl" else ("asr" if scalar.is_signed else "shr")
            count = c if not isinstance(c, Constant) else Constant(int(c.value) & 31, U32, c.lanes)
            self.b.alu(opcode, out, [a, count], types=(xe_type(scalar), xe_type(scalar), "ud"))
        elif op in ("min", "max"):
            self.b.alu("sel", out, [a, c], cond=CondModifier("lt" if op == "min" else "ge", self.b.scratch_flag()))
        else:
            raise UnsupportedError(f"'{op}' on {scalar} is not supported")
        return out

    def _narrow(self, op: str, a: Value, c: Value, t: Type, dst) -> Value:
        """8- and 16-bit integer arithmetic: in 32 bits, then wrapped to the type."""
        wide_type = (S32 if t.scalar.is_signed else U32).with_lanes(t.lanes)
        wa, wc = self._widen(a, wide_type), self._widen(c, wide_type)
        if op in ("shl", "shr"):
            mask = t.scalar.bits - 1
            if isinstance(wc, Constant):
                wc = Constant(int(wc.value) & mask, wc.type, wc.lanes)
            else:
                masked = self.b.temp(wc.type.scalar, wc.lanes if wc.stride else 1)
                self.b.alu("and", masked, [wc, Constant(mask, wc.type.scalar)])
                wc = masked
        wide = self._int_binary(op, wa, wc, wide_type, None)
        out = self._target(dst, t)
        self._copy(out, wide)
        return out

    def _widen(self, v: Value, t: Type) -> Value:
        if isinstance(v, Constant):
            return Constant(v.value, t.scalar, v.lanes)
        out = self.b.temp(t.scalar, v.lanes if v.stride else 1)
        convert(self.b, out, v if v.stride or v.lanes == 1 else Region(v.reg, v.offset, v.type))
        return out if v.stride or v.lanes == 1 else out.broadcast(v.lanes)

    def _int64_binary(self, op: str, a: Value, c: Value, t: Type, dst) -> Value:
        lanes = t.lanes
        a, c = self._lanes(a, lanes), self._lanes(c, lanes)
        out = self._target(dst, t)
        if self.b.hw.has_int64_arithmetic and op in ("add", "sub", "and", "or", "xor"):
            srcs = [self._register(a), _negate(c) if op == "sub" else c]
            self.b.alu("add" if op == "sub" else op, out, [srcs[0], self._register(srcs[1])])
            return out
        if op in ("and", "or", "xor"):
            for part in (0, 1):
                self.b.alu(op, halves(out)[part], [_half(self.b, a, part), _half(self.b, c, part)])
            return out
        if op in ("add", "sub"):
            add64(self.b, out, a, c, subtract=op == "sub")
            return out
        raise UnsupportedError(f"'{op}' on 64-bit integers is not supported on {self.b.hw.display_name}")

    def _Unary(self, e: E.Unary, dst):
        if e.op == "not":
            return self._bool(e, dst)
        a = self.value(e.a)
        if isinstance(a, Constant):
            return self._fold(E.Unary(e.op, constant_expr(a)), e.type)
        t = e.type
        if e.op in E.MATH_OPS:
            return self._math(e.op, a, t, dst)
        if t.scalar.kind == "bf16":
            out = self._target(dst, t)
            self.b.alu(
                "xor",
                Region(out.reg, out.offset, U16, out.lanes, out.stride),
                [Region(a.reg, a.offset, U16, a.lanes, a.stride), Constant(0x8000, U16)],
                types=("uw", "uw", "uw"),
            )
            return out
        if t.scalar.bits < 32 and t.scalar.is_int:
            return (
                self._narrow("sub", Constant(0, t.scalar), a, t, dst)
                if e.op == "neg"
                else self._narrow("xor", a, Constant(-1, t.scalar), t, dst)
            )
        out = self._target(dst, t)
        if e.op == "neg":
            if t.scalar.bits == 64 and not self.b.hw.has_int64_arithmetic and t.scalar.is_int:
                add64(self.b, out, Constant(0, t.scalar), a, subtract=True)
            else:
                self.b.mov(out, _negate(a))
        else:  # bitnot
            if t.scalar.bits == 64 and not self.b.hw.has_int64_arithmetic:
                for part in (0, 1):
                    self.b.alu("not", halves(out)[part], [_half(self.b, a, part)])
            else:
                self.b.alu("not", out, [a])
        return out

    def _Ternary(self, e: E.Ternary, dst):
        a, b_, c = self.value(e.a), self.value(e.b), self.value(e.c)
        t = e.type
        if isinstance(a, Constant) and isinstance(b_, Constant) and isinstance(c, Constant):
            return self._fold(E.Ternary(e.op, constant_expr(a), constant_expr(b_), constant_expr(c)), t)
        scalar = t.scalar
        if scalar.kind == "bf16" or (scalar.is_int and scalar.bits != 32):
            raise UnsupportedError(f"{e.op} on {scalar} is not supported (compute in 32 bits)")
        lanes = t.lanes
        a, b_, c = (self._lanes(v, lanes) for v in (a, b_, c))
        out = self._target(dst, t)
        if e.op == "add3":
            if self.b.hw.has_add3:
                self.b.alu("add3", out, [a, b_, c])
            else:
                partial = self.b.temp(scalar, lanes)
                self.b.alu("add", partial, [a, b_] if not isinstance(a, Constant) else [b_, a])
                self.b.alu("add", out, [partial, c])
            return out
        if scalar.is_float:
            if scalar.bits == 64 and not self.b.hw.has_fp64:
                raise UnsupportedError(f"{self.b.hw.display_name} has no 64-bit floating point")
            self.b.alu("mad", out, [a, b_, c])
            return out
        # integer a + b * c
        if self.b.hw.has_integer_mad:
            if isinstance(b_, Constant) and not isinstance(c, Constant):
                b_, c = c, b_
            if isinstance(c, Constant) and fits16(c) and not isinstance(b_, Constant):
                self.b.alu("mad", out, [a, b_, c])
                return out
        product = self.b.temp(scalar, lanes)
        arith.multiply(self.b, product, b_, c)
        self.b.alu("add", out, [product, a])
        return out

    def _Select(self, e: E.Select, dst):
        if e.type.is_bool:
            raise UnsupportedError("a select between bools is not supported")
        t_value, f_value = self.value(e.true_value), self.value(e.false_value)
        cond = self.value(e.cond) if isinstance(e.cond, (E.BoolImm,)) else None
        if isinstance(cond, Constant):
            return t_value if cond.value else f_value
        lanes = e.type.lanes
        flag = self.conditions.flag(e.cond, lanes)
        out = self._target(dst, e.type)
        t_value, f_value = self._lanes(t_value, lanes), self._lanes(f_value, lanes)
        predicate = Predicate(flag)
        if isinstance(t_value, Constant):
            if isinstance(f_value, Constant):
                t_value = self.b.scalar(t_value)
                t_value = t_value.broadcast(lanes) if lanes > 1 else t_value
            else:
                t_value, f_value = f_value, t_value
                predicate = Predicate(flag, invert=True)
        types = ("uw", "uw", "uw") if e.type.scalar.kind == "bf16" else None
        self.b.alu("sel", out, [t_value, f_value], predicate=predicate, types=types)
        return out

    def _Cast(self, e: E.Cast, dst):
        source = e.value
        if source.type.is_bool:
            lanes = e.type.lanes
            v = self.value(source) if isinstance(source, E.BoolImm) else None
            if isinstance(v, Constant):
                return Constant(
                    int(bool(v.value)) if not e.type.is_float else float(bool(v.value)), e.type.scalar, lanes
                )
            flag = self.conditions.flag(source, lanes)
            out = self._target(dst, e.type)
            self._copy(out, Constant(0, e.type.scalar, lanes))
            self._copy(out, Constant(1, e.type.scalar, lanes), predicate=Predicate(flag))
            return out
        if e.type.is_bool:
            return self._bool(e, dst)
        v = self.value(source)
        if isinstance(v, Constant):
            return self._fold(
                E.Cast(
                    e.type,
                    constant_expr(v).cast(source.type) if v.lanes == 1 else E.Broadcast(constant_expr(v), v.lanes),
                    e.saturate,
                ),
                e.type,
            )
        if e.type.scalar == source.type.scalar and not e.saturate:
            return v
        if (
            isinstance(v, Region)
            and not e.saturate
            and e.type.scalar.is_int
            and source.type.scalar.is_int
            and e.type.scalar.size == source.type.scalar.size
        ):
            return self._lanes(replace(v, type=e.type.scalar), e.type.lanes)  # same bits: read them as the new type
        out = self._target(dst, e.type)
        convert(self.b, out, self._lanes(v, e.type.lanes), saturate=e.saturate)
        return out

    def _Load(self, e: E.Load, dst):
        bound = self.buffer(e.buffer)
        if isinstance(bound, GrfBuffer):
            return self._grf_load(bound, e)
        assert self.messages is not None  # (set before any statement is lowered)
        return self.messages.load_expression(e, bound, dst)

    def _grf_load(self, buffer: GrfBuffer, e: E.Load) -> Value:
        t = e.type
        size = t.scalar.size
        if e.offset.type.lanes > 1:  # a gather from registers: lane by lane
            offsets = self.value(e.offset)
            if not isinstance(offsets, Constant):
                values = constant_lanes(self, e.offset)
            else:
                values = [int(offsets.value)] * t.lanes
            out = self.b.temp(t.scalar, t.lanes)
            for lane, offset in enumerate(values):
                self._copy(out.lane(lane), self._region(buffer, e.buffer.name, offset, t.scalar, 1, 1))
            return out
        offset = self.constant_int(e.offset, f"the offset into GRF buffer '{e.buffer.name}'")
        stride = e.stride if e.stride is not None else size
        if stride % size:
            raise UnsupportedError(
                f"a load from GRF buffer '{e.buffer.name}' with a stride of {stride} bytes "
                f"is not a whole number of {t.scalar} elements"
            )
        return self._region(buffer, e.buffer.name, offset, t.scalar, t.lanes, stride // size)

    def _region(self, buffer: GrfBuffer, name: str, offset: int, t: Type, lanes: int, stride: int) -> Region:
        end = offset + ((lanes - 1) * stride + 1) * t.size
        if offset < 0 or end > buffer.size:
            raise UnsupportedError(f"bytes {offset}..{end} are outside GRF buffer '{name}' ({buffer.size} bytes)")
        if offset % t.size:
            raise UnsupportedError(f"offset {offset} into GRF buffer '{name}' is not aligned to {t}")
        return Region(buffer.reg, offset, t, lanes, stride if lanes > 1 else 1)

    def grf_destination(
        self, buffer: GrfBuffer, name: str, offset: int, t: Type, lanes: int, stride_bytes: int | None
    ) -> Region:
        stride = stride_bytes if stride_bytes is not None else t.size
        if stride % t.size:
            raise UnsupportedError(
                f"a store to GRF buffer '{name}' with a stride of {stride} bytes is not a whole number of {t} elements"
            )
        return self._region(buffer, name, offset, t, lanes, stride // t.size)

    def _Shuffle(self, e: E.Shuffle, dst):
        vectors = [self.value(v) for v in e.vectors]
        t = e.type
        constants = [v for v in vectors if isinstance(v, Constant)]
        if len(constants) == len(vectors):
            lanes_values = []
            for constant, expr in zip(constants, e.vectors, strict=True):
                lanes_values.extend([constant.value] * expr.type.lanes)
            values = [lanes_values[i] for i in e.indices]
            if all(v == values[0] for v in values):
                return Constant(values[0], t.scalar, t.lanes)
            return self._vector_constant(np.asarray(values), t)
        # lanes of the concatenation: (vector index, lane) pairs
        sources = []
        for v, expr in zip(vectors, e.vectors, strict=True):
            for lane in range(expr.type.lanes):
                sources.append((v, lane))
        picked = [sources[i] for i in e.indices]
        region = _as_region(picked)
        if region is not None:
            return region
        out = self._target(dst, t)
        for lane, (v, index) in enumerate(picked):
            if isinstance(v, Constant):
                self._copy(out.lane(lane), Constant(v.value, v.type))
            else:
                self._copy(
                    out.lane(lane), v.lane(index) if v.lanes > 1 and v.stride else Region(v.reg, v.offset, v.type)
                )
        return out

    def _vector_constant(self, constants: np.ndarray, t: Type) -> Region:
        """Different constants per lane, materialized: an arithmetic progression a + i*d of
        integers from lane indices (:uv vector immediates, eight lanes each), anything else
        lane by lane."""
        values = [v.item() if hasattr(v, "item") else v for v in np.asarray(constants).reshape(-1)]
        lanes = len(values)
        out = self.b.temp(t.scalar, lanes)
        step = values[1] - values[0] if lanes > 1 else 0
        progression = (
            t.scalar.is_int and t.scalar.bits == 32 and all(values[i] == values[0] + i * step for i in range(lanes))
        )
        if progression:
            index = self.b.temp(U16, lanes)
            for lane in range(0, lanes, 8):
                n = min(8, lanes - lane)
                packed = sum(i << (4 * i) for i in range(8))
                self.b.alu("mov", index.slice(lane, n), [_VectorImmediate(Imm(packed, "uv"))])
                if lane:
                    self.b.alu("add", index.slice(lane, n), [index.slice(lane, n), Constant(lane, U16)])
            if step == 1:
                self.b.alu("add", out, [index, Constant(values[0], t.scalar)])
            elif -0x8000 <= step <= 0x7FFF and self.b.hw.has_integer_mad:
                self.b.alu(
                    "mad",
                    out,
                    [Constant(values[0], t.scalar), index, Constant(step, t.scalar)],
                    types=(None, None, "uw", None),
                )
            else:
                arith.multiply(self.b, out, index, Constant(step, t.scalar))
                if values[0]:
                    self.b.alu("add", out, [out, Constant(values[0], t.scalar)])
            return out
        for lane in range(lanes):
            self._copy(out.lane(lane), Constant(values[lane], t.scalar))
        return out


class _VectorImmediate:
    """A :v/:uv immediate source (eight 4-bit lanes)."""

    lanes = 8
    stride = 1

    def __init__(self, imm):
        self.imm = imm
        self.type = S32

    def at(self, position: int, n: int, grf: int, ternary: bool = False):
        return Imm(self.imm.value >> (4 * position), self.imm.type)  # lane i of a chunk is nibble position+i


def _as_region(picked) -> Region | None:
    """The picked lanes as one evenly strided region of one register, if they are."""
    if any(isinstance(v, Constant) for v, _ in picked):
        return None
    first, first_lane = picked[0]
    if first.stride == 0 and first.lanes > 1:
        return None
    size = first.type.size

    def address(v, lane):
        return v.offset + (lane * v.stride if v.lanes > 1 else 0) * size

    if any(v.reg is not first.reg or v.type != first.type or v.negate != first.negate for v, _ in picked):
        return None
    addresses = [address(v, lane) for v, lane in picked]
    if len(addresses) == 1:
        return Region(first.reg, addresses[0], first.type, 1, 1, first.negate)
    step = addresses[1] - addresses[0]
    if step <= 0 or step % size or any(b - a != step for a, b in pairwise(addresses)):
        return None
    return Region(first.reg, addresses[0], first.type, len(addresses), step // size, first.negate)


#: IR math operation -> the math unit's function
_MATH_FUNCTIONS = {"exp2": "exp", "log2": "log", "sqrt": "sqt", "inv": "inv"}


def _negate(v: Value) -> Value:
    if isinstance(v, Constant):
        if v.type.is_int:
            bits = v.type.bits
            value = (-int(v.value)) & ((1 << bits) - 1)
            if v.type.is_signed and value >> (bits - 1):
                value -= 1 << bits
            return Constant(value, v.type, v.lanes)
        return Constant(-float(v.value), v.type, v.lanes)
    return -v


def _identity(op: str, a: Value, c: Value, t: Type) -> Value | None:
    """x + 0, x - 0, x * 1, x << 0, x >> 0, x | 0, x ^ 0 (integers): x itself."""
    if not t.scalar.is_int or not isinstance(c, Constant):
        if t.scalar.is_int and isinstance(a, Constant) and op in ("add", "mul", "or", "xor"):
            return _identity(op, c, a, t)
        return None
    v = int(c.value)
    if (op in ("add", "sub", "or", "xor", "shl", "shr") and v == 0) or (op in ("mul", "div") and v == 1):
        if isinstance(a, Region) and a.lanes < t.lanes:
            return a.broadcast(t.lanes)
        return a
    return None


def _half(b: Builder, v: Value, part: int) -> Value:
    if isinstance(v, Constant):
        bits = int(v.value) & ((1 << 64) - 1)
        return Constant((bits >> (32 * part)) & 0xFFFFFFFF, U32, v.lanes)
    return halves(v)[part]


def add64(b: Builder, dst: Region, a: Value, c: Value, subtract: bool = False) -> None:
    """dst = a +/- c on 64-bit integers with 32-bit instructions (carry through acc0)."""
    lanes = dst.lanes
    if subtract:  # a - c = a + ~c + 1
        if isinstance(c, Constant):
            c = Constant((-int(c.value)) & ((1 << 64) - 1), U32.with_kind("u64"), c.lanes)
        else:
            inverted = b.temp(c.type.scalar, lanes)
            for part in (0, 1):
                b.alu("not", halves(inverted)[part], [_half(b, c, part)])
            one = b.temp(c.type.scalar, lanes)
            add64(b, one, inverted, Constant(1, c.type.scalar, lanes))
            c = one
    if isinstance(a, Constant):
        a, c = c, a
    if isinstance(a, Constant):
        a = b.scalar(a)

    def half_of(v, which, start, n):  # lanes [start, start + n) of a half
        h = _half(b, v, which)
        if isinstance(h, Constant):
            return h.broadcast(n) if n > 1 else h
        if h.lanes > 1 and h.stride:
            return h.slice(start, n)
        return h.broadcast(n) if n > 1 else h

    def fits(start: int, n: int) -> bool:
        low = halves(dst.slice(start, n))[0]
        return b.one_instruction("addc", low, [half_of(a, 0, start, n), half_of(c, 0, start, n)], n, ("ud",) * 3)

    # the carry of each lane sits in acc0 (one register of dwords), from the addc's channel 0
    for start, n in accumulator_runs(lanes, b.grf // 4, fits):
        part_dst = dst.slice(start, n) if lanes > 1 else dst
        low, high = halves(part_dst)
        b.alu(
            "addc",
            low,
            [half_of(a, 0, start, n), half_of(c, 0, start, n)],
            options=("AccWrEn",),
            types=("ud", "ud", "ud"),
        )
        carry = PhysicalOperand(Reg("acc", 0, 0, "ud"), vector=n > 1)
        if b.hw.has_add3:
            b.alu("add3", high, [half_of(a, 1, start, n), carry, half_of(c, 1, start, n)], types=("ud",) * 4)
        else:
            b.alu("add", high, [half_of(a, 1, start, n), half_of(c, 1, start, n)], types=("ud", "ud", "ud"))
            b.alu("add", high, [high, carry], types=("ud", "ud", "ud"))


def _shareable(e: E.Expr) -> bool:
    """Whether `value` keeps `e`'s result for the rest of the statement: integer vector
    arithmetic (a scalar costs one instruction and the IR's CSE shares it already; bools live
    in flags, which the next condition overwrites)."""
    return isinstance(e, (E.Binary, E.Ternary, E.Unary, E.Cast, E.Select)) and e.type.lanes > 1 and e.type.is_int


def _needs_quotient(divisor: int, t: Type) -> bool:
    """Whether `arith.divide`'s remainder by the constant `divisor` goes through the quotient
    (a signed 32-bit division by other than 0 and +-1)."""
    return t.is_signed and t.bits == 32 and divisor not in (0, 1, -1)


def _reads_register(e: E.Expr, dst: Region, lowering: Expressions) -> bool:
    """Whether evaluating `e` reads bytes of `dst` other than through the identical region
    (then `into` must compute elsewhere first: an instruction may write part of `dst` before
    a later one reads it)."""
    low, high = dst.offset, dst.end
    for node in walk(e):
        region = None
        if isinstance(node, E.Load):
            bound = lowering.env.get(node.buffer.name)
            if isinstance(bound, GrfBuffer) and bound.reg is dst.reg:
                try:
                    region = lowering._grf_load(bound, node)
                except UnsupportedError:
                    return True
        elif isinstance(node, E.Var):
            bound = lowering.env.get(node.name)
            if isinstance(bound, Region) and bound.reg is dst.reg:
                region = bound
        if region is None or not isinstance(region, Region):
            continue
        if region.end <= low or region.offset >= high:
            continue
        same = (
            region.offset == dst.offset
            and region.type == dst.type
            and region.lanes == dst.lanes
            and (region.stride == dst.stride or dst.lanes == 1)
        )
        if not same:
            return True
    return False


def constant_lanes(lowering: Expressions, e: E.Expr) -> list[int]:
    try:
        values = np.asarray(_evaluate(e)).reshape(-1)
    except Exception as error:  # noqa: BLE001 - the offsets depend on run-time values
        raise UnsupportedError(f"offsets into a GRF buffer must be known at compile time, not '{e}'") from error
    return [int(v) for v in values]
