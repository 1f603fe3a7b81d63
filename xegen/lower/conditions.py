"""Boolean expressions into flag registers.

A bool of `lanes` lanes lives in bits 0..lanes-1 of a flag (f0.0 holds 16 lanes, f0 all 32);
a scalar bool used for `lanes` lanes sets all of them, because its comparison runs at that
execution size with scalar operands.  `&&` and `||` combine in place through predication: a
comparison predicated by the flag only updates the lanes still true (`&&`) or, inverted, the
lanes still false (`||`), which is how disabled channels leave flag bits alone.  Anything
else is computed into a second flag and combined with a logic instruction on the flags.

All non-bool operands are evaluated first, so that nothing they need (a select, a division
by a constant) can disturb a flag the condition is building.

Bools bound by `let` are kept in a GRF dword: a scalar as all ones or zeros, a vector as the
flag's lane mask.
"""

from __future__ import annotations

from ..emit.instruction import CondModifier, Flag, Predicate, Reg
from ..errors import UnsupportedError
from ..ir import evaluate
from ..ir import expr as E
from ..ir.types import BOOL, S32, U16, U32
from .builder import Builder, PhysicalOperand
from .values import Constant, Region, Value, xe_type

COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")
INVERSE = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}


class Conditions:
    """Lowers bool expressions; `values.value(e)` evaluates their non-bool operands."""

    def __init__(self, builder: Builder, values):
        self.b = builder
        self.values = values
        # the values read, by id of the expression: a comparison's two operands, a cast's or variable's value
        self.compared: dict[int, tuple[Value, Value]] = {}
        self.operands: dict[int, Value] = {}

    # -- flags ---------------------------------------------------------------------------------
    def flag_for(self, depth: int, lanes: int) -> Flag:
        """The flag at nesting depth `depth` (half registers for up to 16 lanes); the last
        flag register stays free for short internal sequences (`Builder.scratch_flag`)."""
        registers = self.b.hw.flag_registers - 1
        if lanes <= 16 and depth < 2 * registers:
            return Flag(depth // 2, depth % 2)
        if lanes > 16 and depth < registers:
            return Flag(depth, 0)
        raise UnsupportedError("a boolean expression is nested too deeply for the flag registers")

    @staticmethod
    def register(flag: Flag, lanes: int) -> Reg:
        """The flag as an ALU operand (:uw for a half, :ud for a whole register)."""
        if lanes <= 16:
            return Reg("f", flag.reg, flag.subreg, "uw")
        return Reg("f", flag.reg, 0, "ud")

    # -- entry points --------------------------------------------------------------------------
    def flag(self, e: E.Expr, lanes: int, width: int | None = None) -> Flag:
        """Evaluate `e` (scalar, or `lanes` lanes) into a flag and return it; `width` is how
        many flag bits its users read (a whole register beyond 16)."""
        if lanes > 32 or (width or 0) > 32:
            raise UnsupportedError(
                f"a mask of {max(lanes, width or 0)} lanes does not fit a flag register (at most 32)"
            )
        outer = self.compared, self.operands  # operands may hold conditions of their own
        self.compared, self.operands = {}, {}
        try:
            self._prepare(e)
            flag = self.flag_for(0, max(lanes, width or 0))
            self._lower(e, flag, lanes, "set", 0)
        finally:
            self.compared, self.operands = outer
        return flag

    def to_register(self, e: E.Expr) -> Region:
        """A bool for a `let`: a scalar as a dword of all ones (true) or zeros; a vector as
        its lane mask (bit i = lane i)."""
        lanes = e.type.lanes
        flag = self.flag(e, lanes)
        if lanes == 1:
            out = self.b.temp(S32, name="bool")
            self.b.alu("mov", out, [Constant(0, S32)])
            self.b.alu("mov", out, [Constant(-1, S32)], predicate=Predicate(flag))
            return out
        out = self.b.temp(U32, name="mask")
        reg = self.register(flag, lanes)
        self.b.alu("mov", out, [PhysicalOperand(reg)], types=("ud", reg.type))
        return out

    # -- evaluating operands first -------------------------------------------------------------
    def _prepare(self, e: E.Expr) -> None:
        if isinstance(e, E.Broadcast):
            return self._prepare(e.value)
        if isinstance(e, E.Binary) and e.op in COMPARISONS:
            if e.a.type.scalar == BOOL:
                raise UnsupportedError(f"comparing bools ('{e}') is not supported")
            a, c = self.values.value(e.a), self.values.value(e.b)
            if e.a.type.scalar.kind == "bf16":  # compared as the f32 values they are
                a, c = self.values._to_f32(a, e.a.type.lanes), self.values._to_f32(c, e.b.type.lanes)
            self.compared[id(e)] = (a, c)
        elif isinstance(e, E.Binary) and e.op in ("land", "lor"):
            self._prepare(e.a)
            self._prepare(e.b)
        elif isinstance(e, E.Unary) and e.op == "not":
            self._prepare(e.a)
        elif isinstance(e, E.Cast) and not e.value.type.is_bool:
            v = self.values.value(e.value)
            if e.value.type.scalar.kind == "bf16":
                v = self.values._to_f32(v, e.value.type.lanes)
            self.operands[id(e)] = v
        elif isinstance(e, E.Var):
            self.operands[id(e)] = self.values.value(e)
        elif not isinstance(e, E.BoolImm):
            raise UnsupportedError(f"cannot use '{e}' as a condition")

    # -- lowering ------------------------------------------------------------------------------
    def _lower(self, e: E.Expr, flag: Flag, lanes: int, mode: str, depth: int) -> None:
        """flag = e (mode "set"), flag &= e ("and"), flag |= e ("or")."""
        if isinstance(e, E.Broadcast):
            return self._lower(e.value, flag, lanes, mode, depth)
        if isinstance(e, E.BoolImm):
            return self._constant(e.value, flag, lanes, mode)
        if isinstance(e, E.Binary) and e.op in COMPARISONS:
            a, c = self.compared[id(e)]
            return self._compare(a, c, e.op, flag, lanes, mode)
        if isinstance(e, E.Binary) and e.op in ("land", "lor"):
            inner = "and" if e.op == "land" else "or"
            if mode in ("set", inner):
                self._lower(e.a, flag, lanes, mode, depth)
                self._lower(e.b, flag, lanes, inner, depth)
                return
            return self._via_second_flag(e, flag, lanes, mode, depth)
        if isinstance(e, E.Unary) and e.op == "not":
            return self._not(e, flag, lanes, mode, depth)
        if isinstance(e, E.Cast):
            v = self.operands[id(e)]
            return self._compare(v, Constant(0.0 if v.type.is_float else 0, v.type.scalar), "ne", flag, lanes, mode)
        if isinstance(e, E.Var):
            return self._variable(self.operands[id(e)], e.type.lanes, flag, lanes, mode)
        raise UnsupportedError(f"cannot use '{e}' as a condition")

    def _not(self, e: E.Unary, flag: Flag, lanes: int, mode: str, depth: int) -> None:
        inner = e.a
        if isinstance(inner, E.Binary) and inner.op in COMPARISONS and not inner.a.type.is_float:
            a, c = self.compared[id(inner)]
            return self._compare(a, c, INVERSE[inner.op], flag, lanes, mode)
        if isinstance(inner, E.Unary) and inner.op == "not":
            return self._lower(inner.a, flag, lanes, mode, depth)
        if mode != "set":
            return self._via_second_flag(e, flag, lanes, mode, depth)
        self._lower(inner, flag, lanes, "set", depth)
        reg = self.register(flag, lanes)
        mask = 0xFFFF if reg.type == "uw" else 0xFFFFFFFF
        self.b.alu("xor", reg, [PhysicalOperand(reg), Constant(mask, U32)], lanes=1, types=(reg.type,) * 3)

    def _variable(self, bound, var_lanes: int, flag: Flag, lanes: int, mode: str) -> None:
        if isinstance(bound, Constant):
            return self._constant(bool(bound.value), flag, lanes, mode)
        if var_lanes == 1:  # all ones or zeros: compare with 0 at the lanes wanted
            return self._compare(bound.as_type(S32), Constant(0, S32), "ne", flag, lanes, mode)
        reg = self.register(flag, lanes)
        mask = bound.as_type(U32) if reg.type == "ud" else Region(bound.reg, bound.offset, U16)
        if mode == "set":
            self.b.alu("mov", reg, [mask], lanes=1, types=(reg.type, reg.type))
        else:
            self.b.alu(mode, reg, [PhysicalOperand(reg), mask], lanes=1, types=(reg.type,) * 3)

    def _constant(self, value: bool, flag: Flag, lanes: int, mode: str) -> None:
        if (mode == "and" and value) or (mode == "or" and not value):
            return
        reg = self.register(flag, lanes)
        bits = (0xFFFF if reg.type == "uw" else 0xFFFFFFFF) if value else 0
        self.b.alu("mov", reg, [Constant(bits, U32)], lanes=1, types=(reg.type, reg.type))

    def _compare(self, a, c, cond: str, flag: Flag, lanes: int, mode: str) -> None:
        if isinstance(a, Constant) and isinstance(c, Constant):
            truth = bool(_evaluate(E.Binary(cond, E.const(a.value, a.type), E.const(c.value, c.type))))
            return self._constant(truth, flag, lanes, mode)
        predicate = None
        if mode == "and":
            predicate = Predicate(flag)
        elif mode == "or":
            predicate = Predicate(flag, invert=True)
        self.b.alu(
            "cmp",
            Reg("null", 0, 0, xe_type(a.type)),
            [_at(a, lanes), _at(c, lanes)],
            cond=CondModifier(cond, flag),
            predicate=predicate,
            lanes=lanes,
        )

    def _via_second_flag(self, e: E.Expr, flag: Flag, lanes: int, mode: str, depth: int) -> None:
        second = self.flag_for(depth + 1, lanes)
        self._lower(e, second, lanes, "set", depth + 1)
        reg = self.register(flag, lanes)
        other = self.register(second, lanes)
        op = "and" if mode == "and" else "or"
        self.b.alu(op, reg, [PhysicalOperand(reg), PhysicalOperand(other)], lanes=1, types=(reg.type,) * 3)


def _at(v, lanes: int):
    """A value seen by `lanes` lanes."""
    if isinstance(v, Constant):
        return v.broadcast(lanes)
    if v.lanes == 1 and lanes > 1:
        return v.broadcast(lanes)
    return v


def _evaluate(e: E.Expr):
    return evaluate(e, {})
