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

Where the lanes run along the loop's dimension instead (an im2col gather of a first layer, one
K position per lane: `((oh + kh - 3)*IW + ow + kw - 3)*IC + ic` with oh, ow fixed and kh, kw, ic
per lane and iteration), the per-lane part `(kh*IW + kw)*IC + ic` is the same for every message
of the iteration: it is bound once in the loop body (`bind_changing`) and each message adds its
own fixed scalar to it.  A bound `0 <= oh + kh - 3` becomes `3 - oh <= kh`: the vector side is
the iteration's own value, the other a scalar bound before the loop.
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


def split_offset(offset: Expr, variant: set[Var], bind, bind_changing=None) -> Expr:
    """`offset` as its loop-invariant part, bound with `bind(expr)` before the loop, plus the
    part that changes per iteration; unchanged when either part is missing.  With
    `bind_changing`, a vector offset whose fixed part is uniform and whose changing part is a
    vector becomes `bind_changing(changing) + broadcast(bind(fixed))`."""
    lanes = offset.type.lanes
    terms, constant = _wrapped(*affine(offset))
    fixed, changing = split(terms, variant)
    if not changing:
        return offset
    if bind_changing is not None and lanes > 1 and _has_vector(changing) and not _has_vector(fixed):
        if not fixed and not constant:
            return offset
        return bind_changing(build(changing, 0, lanes)) + Broadcast(_bound_scalar(fixed, constant, bind), lanes)
    if not _worth_binding(fixed, lanes):
        return offset
    base = bind(build(fixed, constant, lanes))
    return base + build(changing, 0, lanes)


def _wrapped(terms: Terms, constant: int) -> tuple[Terms, int]:
    """Coefficients and constant as s32 values: an offset is computed in wrapping s32 arithmetic,
    where regrouping its terms is exact however large the products of their factors get."""
    wrapped = {atom: _s32(k) for atom, k in terms.items() if _s32(k)}
    return wrapped, _s32(constant)


def _s32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def _fits(terms: Terms, constant: int) -> bool:
    return all(_s32(k) == k for k in terms.values()) and _s32(constant) == constant


def _bound_scalar(terms: Terms, constant: int, bind) -> Expr:
    """A uniform sum, bound with `bind` unless it is a constant or a variable."""
    value = build(terms, constant, 1)
    return value if isinstance(value, (IntImm, Var)) else bind(value)


def _worth_binding(fixed: Terms, lanes: int) -> bool:
    """Whether the loop-invariant terms are worth a value of their own: for a vector, a vector
    term (uniform terms alone stay in the per-iteration scalar); for a scalar, any term."""
    return _has_vector(fixed) if lanes > 1 else bool(fixed)


COMPARISONS = ("lt", "le", "gt", "ge")


def split_bound(condition: Expr, variant: set[Var], bind, bind_changing=lambda e: e) -> Expr:
    """A vector comparison with loop-invariant vector terms on one side only, rewritten so that
    side holds just those terms (bound before the loop with `bind` unless a single variable) and
    everything else moves to the other side.  One whose vector terms all change per iteration
    (lanes along the loop's dimension) keeps them alone on one side, bound with
    `bind_changing`, against a uniform bound."""
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
    # lanes along the loop's dimension: the lanes' values alone on the side that had them, a
    # uniform bound on the other, fa + va + ca  op  fb + vb + cb  ->  va - vb  op  fb - fa + cb - ca
    changing, uniform = _combine(va, vb, -1), _combine(fb, fa, -1)
    if not (fa or fb or ca or cb) or not _has_vector(changing) or _has_vector(fa) or _has_vector(fb):
        return condition
    if not (_fits(changing, 0) and _fits(uniform, cb - ca)):  # a bound moves exactly only in s32
        return condition
    if _has_vector(va) or not _has_vector(vb):
        bound = Broadcast(_bound_scalar(uniform, cb - ca, bind), lanes)
        return Binary(condition.op, _bound_vector(changing, lanes, bind_changing), bound)
    bound = Broadcast(_bound_scalar(_combine({}, uniform, -1), ca - cb, bind), lanes)  # mirrored
    return Binary(condition.op, bound, _bound_vector(_combine({}, changing, -1), lanes, bind_changing))


def _bound_vector(terms: Terms, lanes: int, bind) -> Expr:
    """A vector sum, bound with `bind` unless it is a variable."""
    value = build(terms, 0, lanes)
    return value if isinstance(value, Var) else bind(value)


def merge_bounds(conditions: list[Expr], bind) -> list[Expr]:
    """Bounds of one vector on the same side merged: `v < a && v < b` is `v < min(a, b)` (and
    `max` for a lower bound), where a and b are uniform; the merged bound is bound with `bind`."""
    merged: dict[tuple[str, Expr], int] = {}
    out: list[Expr] = []
    for c in conditions:
        if not (isinstance(c, Binary) and c.op in COMPARISONS and isinstance(c.b, Broadcast)):
            out.append(c)
            continue
        key = (c.op, c.a)
        if key not in merged:
            merged[key] = len(out)
            out.append(c)
            continue
        first = out[merged[key]]
        assert isinstance(first, Binary) and isinstance(first.b, Broadcast)
        pick = "min" if c.op in ("lt", "le") else "max"
        bound = bind(Binary(pick, first.b.value, c.b.value))
        out[merged[key]] = Binary(c.op, c.a, Broadcast(bound, c.a.type.lanes))
    return out


def _has_vector(terms: Terms) -> bool:
    return any(atom.type.lanes > 1 for atom in terms)
