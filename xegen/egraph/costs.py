"""Cost models built from `xegen.hw`: the issue cost of every term operation on one platform.

A cost is the number of instructions one SIMD operation issues (`hw.Platform.integer_cost`):
what is emulated costs its sequence (32x32 multiply on XeHP+, 64-bit arithmetic, division) and
what does not exist costs INFINITE (add3 and integer mad on XeLP), so extraction never picks it.
Operand forms matter: the last add3 operand and the mad multiplier may be 16-bit immediates; a
multiply by a 16-bit immediate is native everywhere.  A three-source instruction whose operands do
not fit costs what the emitter would do instead (two adds, multiply + add).

Nothing here compares platform names: everything comes from the platform record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .. import ir
from ..hw import Platform, platform
from ..ir.types import Type
from . import terms
from .bounds import Bounds, bounds_function

INFINITE = 10**9

#: a 16-bit immediate as the emitter can encode it (:w or :uw)
IMM16_MIN, IMM16_MAX = -(1 << 15), (1 << 16) - 1


def fits_imm16(value: int | None) -> bool:
    return value is not None and IMM16_MIN <= value <= IMM16_MAX


def fits_imm32(value: int) -> bool:
    return -(1 << 31) <= value < (1 << 32)


def saturating_sum(values: Iterable[int]) -> int:
    return min(INFINITE, sum(values))


@dataclass(frozen=True)
class Operand:
    """What the cost of an operation needs to know about an operand."""

    type: Type | None  # None where only the operation's Ty is known, and it has none (LAnd, LOr, Not)
    constant: int | None = None  # the IR value when the operand is an immediate
    non_negative: bool = False  # every value is >= 0 (from the ranges: no sign fix-up for / and %)


_ALU_OPS = ("Add", "Sub", "Neg", "BitNot", "And", "Or", "Xor")
_COMPARE_OPS = ("Lt", "Le", "Gt", "Ge", "Eq", "Ne", "Min", "Max")


class CostModel:
    """Issue costs of term operations on one platform."""

    def __init__(self, hw: Platform | str):
        self.hw = platform(hw)
        self.cost = dict(self.hw.integer_cost)

    @property
    def name(self) -> str:
        return self.hw.name

    def __repr__(self) -> str:
        return f"CostModel({self.hw.name})"

    # -- one operation ----------------------------------------------------------------------
    def operation(self, op: str, t: Type | None, operands: Sequence[Operand], source: Type | None = None) -> int:
        """Cost of term constructor `op` computing in type `t` (the operand type of comparisons;
        for casts `t` is the target and `source` the source type)."""
        c = self.cost
        if op in ("Var", "Const", "Opaque"):
            return 0
        if op == "Wrap":
            return INFINITE
        if op in ("Not", "LAnd", "LOr"):
            return c["alu"]
        if t is None:
            raise ValueError(f"term operation {op} without its type")
        wide = t.bits == 64
        immediates = self._immediate_penalty(operands) if wide else 0
        if op in _ALU_OPS:
            return (c["alu64"] if wide else c["alu"]) + immediates
        if op in ("Shl", "Shr"):
            return (c["shift64"] if wide else c["alu"]) + immediates
        if op in _COMPARE_OPS:
            return (c["compare64"] if wide else c["alu"]) + immediates
        if op == "Select":
            return c["alu64"] if wide else c["alu"]
        if op == "Mul":
            return self._multiply(t, operands) + immediates
        if op in ("Div", "Mod"):
            return self._divide(op, t, operands)
        if op == "Add3":
            return self._add3(t, operands)
        if op == "Mad":
            return self._mad(t, operands)
        if op in ("Cast", "SatCast"):
            if source is None:
                raise ValueError(f"term operation {op} without its source type")
            if op == "SatCast":
                return c["alu64"] if wide or source.bits == 64 else c["alu"]
            if t.is_bool or source.is_bool:
                return c["alu"]  # cmp, or sel from a flag
            return 0 if t.bits <= source.bits else c["convert"]
        raise ValueError(f"no cost for term operation {op}")

    def _immediate_penalty(self, operands: Sequence[Operand]) -> int:
        """64-bit operations take 32-bit immediates; a wider one is moved into a register first."""
        return sum(self.cost["imm64"] for o in operands if o.constant is not None and not fits_imm32(o.constant))

    def _multiply(self, t: Type, operands: Sequence[Operand]) -> int:
        c = self.cost
        if t.bits == 64:
            return c["mul64"]
        if t.bits <= 16 or any(fits_imm16(o.constant) for o in operands):
            return c["mul"]
        return c["mul32"] if self.hw.has_native_dword_multiply else c["mul32_emulated"]

    def _divide(self, op: str, t: Type, operands: Sequence[Operand]) -> int:
        c = self.cost
        divisor = operands[1].constant
        if t.bits == 64:
            return c["div64"] if divisor is None else 2 * c["div_const"]
        if divisor is None:
            return c["div"]
        remainder = c["alu"] if op == "Mod" else 0  # x - (x / c) * c: one more mad or mul+add
        if divisor in (0, 1, -1):
            return c["alu"]
        if divisor > 0 and divisor & (divisor - 1) == 0:
            # shift (and mask), with a sign fix-up for signed dividends that may be negative
            return c["alu"] if not t.is_signed or operands[0].non_negative else 3 * c["alu"] + remainder
        return c["div_const"] + remainder

    def _add3(self, t: Type, operands: Sequence[Operand]) -> int:
        if not self.hw.has_add3:
            return INFINITE
        c = self.cost
        immediates = [o.constant for o in operands if o.constant is not None]
        if t.bits == 64 or len(immediates) > 1 or (immediates and not fits_imm16(immediates[0])):
            return 2 * (c["alu64"] if t.bits == 64 else c["alu"])  # the emitter's two adds
        return c["add3"]

    def _mad(self, t: Type, operands: Sequence[Operand]) -> int:
        if not self.hw.has_integer_mad:
            return INFINITE
        c = self.cost
        addend, multiplicand, multiplier = operands
        valid = (
            t.bits <= 32
            and addend.constant is None
            and multiplicand.constant is None
            and (t.bits <= 16 or fits_imm16(multiplier.constant))
        )
        if valid:
            return c["mad"]
        return self._multiply(t, operands[1:]) + (c["alu64"] if t.bits == 64 else c["alu"])

    # -- IR expressions ---------------------------------------------------------------------
    def node(self, e: ir.Expr, bounds: Callable[[ir.Expr], Bounds] | None = None) -> int:
        """Cost of one IR node (its own instruction, not its operands'); `bounds` (from
        `bounds.bounds_function`) tells which operands are non-negative."""
        if not terms.supported(e) or isinstance(e, (ir.Var, ir.IntImm, ir.BoolImm)):
            return 0
        if isinstance(e, (ir.Unary, ir.Binary, ir.Ternary)):
            return self.operation(terms.CONSTRUCTORS[e.op], e.a.type, [_operand(x, bounds) for x in terms.operands(e)])
        if isinstance(e, ir.Select):
            return self.operation("Select", e.type, [_operand(e.true_value), _operand(e.false_value)])
        if isinstance(e, ir.Cast):
            return self.operation("SatCast" if e.saturate else "Cast", e.type, [_operand(e.value)], e.value.type)
        raise AssertionError(type(e).__name__)

    def dag_cost(
        self,
        exprs: ir.Expr | Iterable[ir.Expr],
        ranges: Mapping[str, range | tuple[int | None, int | None]] | None = None,
    ) -> int:
        """Cost of computing the expressions with every distinct subexpression computed once
        (what CSE gives); opaque nodes cost nothing but their operands are counted.  `ranges`
        (the variables' ranges, as `simplify` takes them) prices what the extractor would with the same ranges:
        a signed / or % by 2^k of a non-negative dividend is a shift or a mask."""
        if isinstance(exprs, ir.Expr):
            exprs = [exprs]
        bounds = bounds_function(ranges) if ranges else None
        seen: set[ir.Node] = set()
        total = 0
        stack: list[ir.Node] = list(exprs)
        while stack:
            e = stack.pop()
            if e in seen:
                continue
            seen.add(e)
            total += self.node(e, bounds) if isinstance(e, ir.Expr) else 0
            stack.extend(ir.children(e))
        return min(total, INFINITE)

    def tree_cost(self, e: ir.Node) -> int:
        """Cost with every occurrence computed separately (no sharing)."""
        return saturating_sum(
            [self.node(e) if isinstance(e, ir.Expr) else 0, *(self.tree_cost(c) for c in ir.children(e))]
        )


def _operand(e: ir.Expr, bounds: Callable[[ir.Expr], Bounds] | None = None) -> Operand:
    if isinstance(e, ir.IntImm):
        return Operand(e.type, e.value, e.value >= 0)
    non_negative = bounds is not None and terms.supported(e) and e.type.is_int and bounds(e)[0] >= 0
    return Operand(e.type, non_negative=non_negative)


def cost_model(hw: Platform | str | CostModel) -> CostModel:
    return hw if isinstance(hw, CostModel) else CostModel(hw)


def format_cost(cost: int) -> str:
    return "inf" if cost >= INFINITE else str(cost)


def breakdown(model: CostModel, exprs: ir.Expr | Iterable[ir.Expr]) -> list[tuple[str, int]]:
    """The instructions an expression costs: (operation, cost) for every distinct costed node,
    in evaluation order (operands first).  Operations are named by their IR spelling."""
    if isinstance(exprs, ir.Expr):
        exprs = [exprs]
    seen: set[ir.Node] = set()
    out: list[tuple[str, int]] = []

    def visit(e) -> None:
        if e in seen:
            return
        seen.add(e)
        for c in ir.children(e):
            visit(c)
        if isinstance(e, ir.Expr):
            cost = model.node(e)
            if cost:
                out.append((_operation_name(e), cost))

    for e in exprs:
        visit(e)
    return out


def _operation_name(e: ir.Expr) -> str:
    t = e.type
    if isinstance(e, ir.Binary):
        t = e.a.type
        operands = [e.a, e.b]
    elif isinstance(e, ir.Ternary):
        operands = [e.a, e.b, e.c]
    else:
        operands = []
    op = getattr(e, "op", type(e).__name__.lower())
    if isinstance(e, ir.Cast):
        op = f"cast {e.value.type}->{e.type}"
    immediates = [str(o.value) for o in operands if isinstance(o, ir.IntImm)]
    suffix = f" imm {','.join(immediates)}" if immediates else ""
    return f"{op}.{t}{suffix}"
