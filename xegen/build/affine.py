"""Addresses and bounds checks of messages split into a loop-invariant part and a per-iteration
scalar.

A vector message inside the K loop addresses one line per lane, e.g. the forward source
`((oh + kh - 1)*IW + (ow + kw - 1))*IC + ic` with oh, ow per lane (fixed before the loop) and
kh, kw, ic per iteration (one value for all lanes).  Written as it comes, every iteration redoes
the vector arithmetic.  Regrouped as `(oh*IW + ow)*IC - (IW + 1)*IC` (bound once, before the loop)
`+ (kh*IW + kw)*IC + ic` (scalar), an iteration adds one scalar to a vector.  Likewise a bound
`0 <= oh + kh - 1` becomes `1 - kh <= oh`: the vector side is a value the kernel already holds.

The offset is the same value in wrapping s32 arithmetic whatever the grouping; moving a term
across a comparison is exact because the index arithmetic never leaves s32
(`gemm.check_index_range`).

A scalar message (one block per tile row) has its offset split the same way: the row's fixed
part is bound before the loop, and each iteration adds the part every row shares.  Its bounds
stay as they are: one scalar compare per side costs what the add it would save costs.
"""

from __future__ import annotations

from ..ir import Expr, IntImm, Var, free_vars
from ..ir.expr import Binary, Broadcast
from ..ir.types import S32

Terms = dict[Expr, int]  # atom -> coefficient


def affine(e: Expr) -> tuple[Terms, int]:
    """`e` as a sum of atoms times integer coefficients plus a constant.  Sums, differences,
    products by a constant and broadcasts are looked through; anything else is an atom."""
    if isinstance(e, IntImm):
        return {}, e.value
    if isinstance(e, Broadcast):
        return affine(e.value)
    if isinstance(e, Binary) and e.op in ("add", "sub"):
        (ta, ca), (tb, cb) = affine(e.a), affine(e.b)
        sign = 1 if e.op == "add" else -1
        return _combine(ta, tb, sign), ca + sign * cb
    if isinstance(e, Binary) and e.op == "mul":
        (ta, ca), (tb, cb) = affine(e.a), affine(e.b)
        if not tb:
            return {atom: k * cb for atom, k in ta.items()}, ca * cb
        if not ta:
            return {atom: k * ca for atom, k in tb.items()}, ca * cb
    return {e: 1}, 0


def _combine(a: Terms, b: Terms, sign: int) -> Terms:
    out = dict(a)
    for atom, k in b.items():
        out[atom] = out.get(atom, 0) + sign * k
    return {atom: k for atom, k in out.items() if k != 0}


def split(terms: Terms, variant: set[Var]) -> tuple[Terms, Terms]:
    """(terms fixed before the loop, terms that change in it)."""
    fixed: Terms = {}
    changing: Terms = {}
    for atom, k in terms.items():
        (changing if variant.intersection(free_vars(atom)) else fixed)[atom] = k
    return fixed, changing


def build(terms: Terms, constant: int, lanes: int) -> Expr:
    """The sum as IR with `lanes` lanes: vector atoms first, the scalar atoms and the constant
    summed as one scalar and broadcast once."""
    vector = {a: k for a, k in terms.items() if a.type.lanes > 1}
    uniform = _sum({a: k for a, k in terms.items() if a.type.lanes == 1}, constant, 1)
    if not vector:
        return uniform if lanes == 1 else Broadcast(uniform, lanes)
    total = _sum(vector, 0, lanes)
    if not (isinstance(uniform, IntImm) and uniform.value == 0):
        total = total + Broadcast(uniform, lanes)
    return total


def _sum(terms: Terms, constant: int, lanes: int) -> Expr:
    """Positive terms added, negative ones subtracted (`1 - kh`, not `kh * -1 + 1`)."""
    total: Expr | None = None
    for atom, k in sorted(terms.items(), key=lambda item: item[1] < 0):
        scaled = atom if abs(k) == 1 else atom * _constant(abs(k), lanes)
        if total is None:
            total = scaled if k > 0 else _constant(constant, lanes) - scaled
            constant = constant if k > 0 else 0
        else:
            total = total + scaled if k > 0 else total - scaled
    if total is None:
        return _constant(constant, lanes)
    if constant:
        total = total + _constant(constant, lanes) if constant > 0 else total - _constant(-constant, lanes)
    return total


def _constant(value: int, lanes: int) -> Expr:
    return IntImm(value) if lanes == 1 else Broadcast(IntImm(value), lanes)


def split_offset(offset: Expr, variant: set[Var], bind) -> Expr:
    """`offset` as its loop-invariant part, bound with `bind(expr)` before the loop, plus the
    part that changes per iteration; unchanged when either part is missing."""
    lanes = offset.type.lanes
    terms, constant = affine(offset)
    fixed, changing = split(terms, variant)
    if not changing or not _worth_binding(fixed, lanes):
        return offset
    base = bind(build(fixed, constant, lanes))
    return base + build(changing, 0, lanes)


def _worth_binding(fixed: Terms, lanes: int) -> bool:
    """Whether the loop-invariant terms are worth a value of their own: for a vector, a vector
    term (uniform terms alone stay in the per-iteration scalar); for a scalar, any term."""
    return _has_vector(fixed) if lanes > 1 else bool(fixed)


COMPARISONS = ("lt", "le", "gt", "ge")


def split_bound(condition: Expr, variant: set[Var], bind) -> Expr:
    """A vector comparison with loop-invariant vector terms on one side only, rewritten so that
    side holds just those terms (bound before the loop with `bind` unless a single variable) and
    everything else moves to the other side."""
    if not (
        isinstance(condition, Binary)
        and condition.op in COMPARISONS
        and condition.a.type.lanes > 1
        and condition.a.type.with_lanes(1) == S32
    ):
        return condition
    lanes = condition.a.type.lanes
    (ta, ca), (tb, cb) = affine(condition.a), affine(condition.b)
    (fa, va), (fb, vb) = split(ta, variant), split(tb, variant)
    if not (va or vb):
        return condition
    if _has_vector(fa) and not fb:  # fa + va + ca  op  vb + cb   ->   fa  op  vb - va + cb - ca
        return Binary(condition.op, bind(build(fa, 0, lanes)), build(_combine(vb, va, -1), cb - ca, lanes))
    if _has_vector(fb) and not fa:  # va + ca  op  fb + vb + cb   ->   va - vb + ca - cb  op  fb
        return Binary(condition.op, build(_combine(va, vb, -1), ca - cb, lanes), bind(build(fb, 0, lanes)))
    return condition


def _has_vector(terms: Terms) -> bool:
    return any(atom.type.lanes > 1 for atom in terms)
