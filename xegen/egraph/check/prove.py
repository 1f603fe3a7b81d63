"""Proving an instantiated rule with z3 bit-vectors at the instance's widths.

The rule is sound for the instance when no assignment makes its premises true (the pattern's
constants canonical, lattice bounds holding, egglog's primitives defined, :when conditions and
facts true) and its claim false (both sides equal, the bound holds, every constant it builds is
a canonical constant of its type).

z3's work is bounded by its resource counter (`rlimit`), never by the clock: how far a proof
gets, and so its verdict, does not depend on the machine's speed or load.  Budgets ("effort")
are in z3's resource units; an idle core does a few million per second.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import z3

from ... import ir
from ...ir.types import Type
from . import prims
from .ints import Formula
from .model import Instance
from .smt import WIDE, ExactProducts, encode, variable


@dataclass
class Proof:
    verdict: str  # "proved", "counterexample", "unknown"
    counterexample: dict | None = None  # variable -> value
    detail: str = ""


def _i64_of_constant(var, t: Type) -> prims.Sized:
    """The i64 a Const of type t holds for IR value `var` (its value, or a u64's bit pattern)."""
    if t.is_bool:
        return prims.Sized(z3.If(var, z3.BitVecVal(1, 2), z3.BitVecVal(0, 2)), 2, True)
    if t.bits == 64:
        return prims.Sized(var, 64)
    if t.is_signed:
        return prims.Sized(var, t.bits)
    return prims.Sized(z3.ZeroExt(1, var), t.bits + 1, True)


def _canonical_z3(value: prims.Sized, t: Type):
    x = value.i64
    if t.is_bool:
        return z3.Or(x == prims.wide(0), x == prims.wide(1))
    if t.kind == "u64":
        return z3.BoolVal(True)
    return z3.And(x >= prims.wide(t.min), x <= prims.wide(t.max))


def _math(value, t: Type):
    """A value of type t as a 65-bit signed number (every i64 and every u64 fits)."""
    if t.is_bool:
        return z3.If(value, z3.BitVecVal(1, 65), z3.BitVecVal(0, 65))
    return (z3.SignExt if t.is_signed else z3.ZeroExt)(65 - t.bits, value)


def _multiple(value, t: Type, k):
    """The value of type t is a multiple of the i64 k, k nonzero (computed at 64 bits when the
    value fits an i64, as the rules' own % is: the same circuit on both sides)."""
    if t.kind != "u64":
        i64 = (
            value
            if t.bits == 64
            else (z3.SignExt if t.is_signed else z3.ZeroExt)(64 - t.bits, value)
            if not t.is_bool
            else z3.If(value, z3.BitVecVal(1, 64), z3.BitVecVal(0, 64))
        )
        return z3.And(k != 0, z3.SRem(i64, k) == 0)
    return z3.And(k != 0, z3.SRem(_math(value, t), z3.SignExt(1, k)) == 0)


def _math_i64(value):
    return z3.SignExt(1, value)


def _narrow(value: prims.Sized, t: Type):
    """The low bits of an i64 as a value of t (bool: the lowest bit)."""
    if t.is_bool:
        return z3.Extract(0, 0, value.bv) == 1
    return z3.Extract(t.bits - 1, 0, value.at(max(t.bits, value.width)))


#: z3 effort (resource units) per encoding and type: the default, and the first round's, within
#: which most instances are proven (or refuted); each further round gives the encodings that ran
#: out of effort four times as much, up to the effort
EFFORT = 50_000_000
FIRST_ROUND = 1_000_000
#: what z3 says when a check ran out of effort (solver, tactic)
OUT_OF_EFFORT = ("max. resource limit exceeded", "canceled")


def prove(instance: Instance, effort: int = EFFORT) -> Proof:
    """Three encodings, each a complete proof when z3 answers unsat: bit-vectors exactly
    (wrap-around, bitwise operations), mathematical integers (`prove_integers`: range-guarded
    arithmetic, where bit-blasted multipliers and dividers are hopeless), and bit-vectors with
    multiplication abstracted (fast when the claim follows from the lemmas), last also with the
    lemmas about factors 2^j apart (hundreds per pair of products: tried only where the others
    fail in a round, so no proof found without them waits for them).  Each gets a short
    first round, in the order likely to succeed first, then those that ran out of effort get
    rounds four times as long, up to `effort` each (so one that needs a little more is not left
    waiting behind one that would need far more)."""
    exact = lambda units: _prove(instance, units, abstract=False)  # noqa: E731
    integers = lambda units: prove_integers(instance, units)  # noqa: E731
    abstract = lambda units: _prove(instance, units, abstract=True)  # noqa: E731
    scaled = lambda units: _prove(instance, units, abstract=True, scaling=True)  # noqa: E731
    if not _has_products(instance):
        strategies = [exact, integers]
    elif instance.lattice:  # products guarded by ranges
        strategies = [integers, exact, abstract, scaled]
    else:
        strategies = [abstract, exact, integers, scaled]
    reasons: list[str] = []
    for budget in _rounds(effort):
        retry, reasons = [], []
        for strategy in strategies:
            proof = strategy(budget)
            if proof.verdict != "unknown":
                return proof
            reasons.append(proof.detail)
            if proof.detail.endswith("out of effort"):
                retry.append(strategy)
        strategies = retry
    return Proof("unknown", detail="; ".join(dict.fromkeys(reasons)))


def _rounds(effort: int) -> list[int]:
    """The effort of each round: FIRST_ROUND, four times that, ..., `effort`."""
    rounds = [min(FIRST_ROUND, effort)]
    while rounds[-1] < effort:
        rounds.append(min(rounds[-1] * 4, effort))
    return rounds


class Budget:
    """z3 effort left for a proof, in resource units: a check takes at most what is left, and
    what it used is taken from this budget and the budgets it was shared from."""

    def __init__(self, units: int, parent: Budget | None = None):
        self.left, self.parent = units, parent

    def share(self, units: int) -> Budget:
        """A part of this budget (at most `units`) for one step."""
        return Budget(min(units, self.left), self)

    def check(self, formulas: list, units: int, nonlinear_tactic: bool = False):
        """z3's answer and solver, spending at most `units` (and at most what is left)."""
        result, solver, used = _check(formulas, min(units, self.left), nonlinear_tactic)
        budget: Budget | None = self
        while budget is not None:
            budget.left -= used
            budget = budget.parent
        return result, solver


def prove_integers(instance: Instance, effort: int) -> Proof:
    """The claim over mathematical integers (an exact translation, see ints.py): first in one
    piece for a moment, then staged.  The side claims (the rule's computations are defined, its
    constants fit their types) are proven first; then, assuming them, each fact the premises may
    imply (an operation does not wrap around, a division is of a non-negative or a non-positive
    number by a positive one, a divisor is not zero) is proven on its own, and the proven facts
    simplify the formulas (a value that does not wrap is its exact value, ...); then the claim:
    without the case-by-case definitions of powers of two and logarithms (a proof without them is a
    proof), then with them.  If z3 cannot decide it, the proof splits on the sign of a dividend whose
    sign is open, and proves each case the same way.  Range-guarded rules are easy for z3 split this
    way
    and hard in one piece.  A model is reported only when the interpreter confirms it."""
    formula = Formula(instance)
    budget = Budget(effort)
    result, solver = budget.check(formula.goal(), min(DIRECT, effort // 10))  # easy claims: in one piece
    if result != z3.unknown:
        return _answer(formula, result, solver)
    if formula.side:
        proof = _staged(formula, formula.side, [], budget.share(effort // 4), SPLITS)
        if proof.verdict != "proved":
            return proof
    return _staged(formula, formula.claims, list(formula.side), budget, SPLITS)


#: the effort of the first, unstaged attempt and of one lemma; how many times a proof may split
#: into cases
DIRECT = 1_500_000
LEMMA = 1_000_000
SPLITS = 2


def _staged(formula: Formula, claims: list, assumed: list, budget: Budget, splits: int) -> Proof:
    """Proves the claims from the premises and the `assumed` facts (see prove_integers)."""
    base = [*formula.premises, *assumed]
    facts: list = []  # z3 formulas (z3 ships no types)
    proven = []
    for candidate in formula.candidates:
        lemma = [*base, *formula.definitions, *facts, z3.Not(candidate.fact)]
        if budget.check(lemma, min(LEMMA, budget.left // 2))[0] == z3.unsat:
            facts += [candidate.fact, *candidate.consequences]
            proven.append(candidate)
    premises, exact, negated = _simplified(formula, [*base, *facts], proven, claims)
    known = {id(c) for c in proven}
    open_signs = [
        d
        for d, k in formula.dividends
        if id(formula.candidates[k]) not in known and id(formula.candidates[k + 1]) not in known
    ]
    attempts = [(premises, False), ([*premises, *exact], False), ([*premises, *exact], True)]
    if not exact:
        attempts = attempts[1:]
    tries = budget.share(budget.left // (2 if splits and open_signs else 1))
    reason = ""
    for n, (formulas, tactic) in enumerate(attempts):
        result, solver = tries.check([*formulas, negated], tries.left // (len(attempts) - n), tactic)
        if result == z3.unsat or (result == z3.sat and formulas is not premises):  # a model of the exact formula
            return _answer(formula, result, solver)
        reason = reason or (_reason(solver) if result == z3.unknown else "")
    if splits and open_signs:
        dividend = open_signs[0]
        for sign, part in ((dividend >= 0, budget.share(budget.left // 2)), (dividend < 0, budget)):
            proof = _staged(formula, claims, [*assumed, sign], part, splits - 1)
            if proof.verdict != "proved":
                return proof
        return Proof("proved")
    return Proof("unknown", detail=f"z3 (integers): {reason or 'unknown'}")


def _simplified(formula: Formula, premises: list, proven: list, claims: list) -> tuple[list, list, object]:
    """The premises, exact definitions and negated claim with the proven facts' simplifications:
    the definitions they replace dropped, their substitutions made (in the order made, so a
    value may use a variable substituted before it)."""
    replaced = {d.get_id() for c in proven for d in c.replaces}
    pairs: list = []
    for c in proven:
        if c.substitution is not None:
            variable, value = c.substitution
            pairs.append((variable, z3.substitute(value, *pairs) if pairs else value))
    kept = [d for d in formula.definitions if d.get_id() not in replaced]
    negated = z3.Not(z3.And(*claims))

    def substituted(formulas: list) -> list:
        return [z3.substitute(f, *pairs) for f in formulas] if pairs else formulas

    premises, exact = substituted([*premises, *kept]), substituted(formula.exact)
    return premises, exact, substituted([negated])[0]


def _answer(formula: Formula, result, solver) -> Proof:
    if result == z3.unsat:
        return Proof("proved")
    if result == z3.unknown:
        return Proof("unknown", detail=f"z3 (integers): {_reason(solver)}")
    violation = formula.confirm(solver.model())
    if violation is None:
        return Proof("unknown", detail="z3's integer model does not break the rule in the interpreter")
    return Proof("counterexample", violation.assignment)


def _reason(solver) -> str:
    reason = solver.reason_unknown()
    return "out of effort" if reason in OUT_OF_EFFORT else reason


def _check(formulas: list, units: int, nonlinear_tactic: bool = False):
    """z3's answer on the formulas within `units` of effort, the solver, and the effort it used;
    `nonlinear_tactic`: through z3's tactic for nonlinear integer problems (which decides some
    claims its default solver does not, and vice versa)."""
    solver = z3.Then("simplify", "elim-term-ite", "qfnia").solver() if nonlinear_tactic else z3.Solver()
    solver.set("rlimit", max(1, units))  # 0 would be no limit
    solver.add(*formulas)
    before = _effort_count()
    result = solver.check()
    return result, solver, _rlimit_count(solver) - before


def _effort_count() -> int:
    """z3's resource counter (it counts for the whole context; a check of nothing costs 2)."""
    solver = z3.Solver()
    solver.check()
    return _rlimit_count(solver)


def _rlimit_count(solver) -> int:
    """The context's resource count after `solver`'s check.  z3's statistics give a count past
    2^32 as a float, and a float budget would reach `rlimit`, which takes only integers."""
    return int(solver.statistics().get_key_value("rlimit count"))


def _has_products(instance: Instance) -> bool:
    def i64_has(x) -> bool:
        return x[0] == "op" and (x[1] in ("*", "/", "%") or any(i64_has(a) for a in x[2]))

    exprs = [e for pair in instance.equal for e in pair] + [e for _, e, _ in instance.bounds]
    exprs += [e for e, _ in instance.multiples + instance.claimed_multiples]
    ir_has = any(
        isinstance(n, (ir.Binary, ir.Ternary)) and n.op in ("mul", "mad", "div", "mod", "shl")
        for e in exprs
        for n in ir.walk(e)
    )
    i64 = [d for _, d in instance.definitions] + [h.value for h in instance.holes] + [b for _, _, b in instance.bounds]
    return ir_has or any(i64_has(x) for x in i64)


def _prove(instance: Instance, units: int, abstract: bool, scaling: bool = False) -> Proof:
    widths = tuple(sorted({v.type.bits for v in instance.variables if v.type.is_int} | {64}))
    products = ExactProducts(widths, scaling) if abstract else None
    counter = itertools.count()
    premises: list = []
    env: dict = {v.name: variable(v.name, v.type) for v in instance.variables}
    symbols: dict = {}

    def fresh(kind: str):
        return z3.BitVec(f"{kind}#{next(counter)}", 64)

    types = {v.name: v.type for v in instance.variables}
    for symbol, var_name in instance.const_links.items():
        symbols[symbol] = _i64_of_constant(env[var_name], types[var_name])
    for symbol, kind, e in instance.lattice:
        s = z3.BitVec(symbol, 64)
        value = _math(encode(e, env, products), e.type)
        premises.append(_math_i64(s) <= value if kind == "lo" else value <= _math_i64(s))
        symbols[symbol] = prims.Sized(s, 64)
    for symbol in instance.free:
        symbols[symbol] = prims.Sized(z3.BitVec(symbol, 64), 64)

    def i64(x, defined=premises):
        """An i64 expression; its definedness is a premise in queries (a failing primitive means
        the rule does not fire) and a claim in actions (egglog panics there)."""
        tag = x[0]
        if tag == "lit":
            return prims.literal(x[1])
        if tag == "sym":
            return symbols[x[1]]
        return prims.apply_z3(x[1], [i64(a, defined) for a in x[2]], defined, fresh, products)

    for symbol, expression in instance.definitions:
        symbols[symbol] = i64(expression)
    for op, a, b in instance.conditions:
        premises.append(prims.compare_z3(op, i64(a), i64(b)))
    for kind, args in instance.facts:
        if kind == "InLoop":
            v, init, bound = (_math(encode(a, env, products), a.type) for a in args)
            premises.append(z3.And(init <= v, v < bound))
        elif kind == "LetValue":
            v, e = (encode(a, env, products) for a in args)
            premises.append(v == e)
    for e, k in instance.multiples:
        premises.append(_multiple(encode(e, env, products), e.type, i64(k).i64))
    claims: list = []  # z3 formulas
    for hole in instance.holes:
        value = i64(hole.value, claims)
        env[hole.var.name] = _narrow(value, hole.var.type)
        if not hole.wrap:
            claims.append(_canonical_z3(value, hole.var.type))
    for lhs, rhs in instance.equal:
        claims.append(encode(lhs, env, products) == encode(rhs, env, products))
    for e, k in instance.claimed_multiples:
        claims.append(_multiple(encode(e, env, products), e.type, i64(k, claims).i64))
    for kind, e, bound in instance.bounds:
        value = _math(encode(e, env, products), e.type)
        b = _math_i64(i64(bound, claims).i64)
        claims.append(b <= value if kind == "lo" else value <= b)
    solver = z3.Solver()
    solver.set("rlimit", max(1, units))
    solver.add(*premises)
    solver.add(*division_lemmas([*premises, *claims]))
    if products is not None:
        solver.add(*quotient_lemmas([*premises, *claims], products))
        solver.add(*products.lemmas())
    solver.add(z3.Not(z3.And(*claims)) if claims else z3.BoolVal(False))
    result = solver.check()
    if result == z3.unsat:
        return Proof("proved")
    if result == z3.unknown:
        return Proof("unknown", detail=f"z3 ({'abstract' if abstract else 'bit-vectors'}): {_reason(solver)}")
    if abstract:
        return Proof("unknown", detail="the abstraction of multiplication was too weak")
    model = solver.model()
    assignment = {}
    for v in instance.variables:
        value = model.eval(env[v.name], model_completion=True)
        if v.type.is_bool:
            assignment[v.name] = bool(z3.is_true(value))
        else:
            raw = value.as_long()
            assignment[v.name] = raw - (1 << v.type.bits) if v.type.is_signed and raw >> (v.type.bits - 1) else raw
    for symbol, _, _ in instance.lattice:
        assignment[symbol] = model.eval(symbols[symbol].bv, model_completion=True).as_signed_long()
    return Proof("counterexample", assignment)


_DIVISIONS = {z3.Z3_OP_BSDIV: True, z3.Z3_OP_BSDIV_I: True, z3.Z3_OP_BUDIV: False, z3.Z3_OP_BUDIV_I: False}


def _divisions(formulas) -> list:
    """Every bit-vector division in the formulas, as (term, signed)."""
    found, seen = [], set()
    stack = list(formulas)
    while stack:
        e = stack.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_app(e):
            kind = e.decl().kind()
            if kind in _DIVISIONS:
                found.append((e, _DIVISIONS[kind]))
            stack.extend(e.children())
    return found


def division_lemmas(formulas) -> list:
    """Monotonicity of division, stated for each pair of divisions in the formulas: with the same
    positive divisor, a smaller dividend never gives a larger quotient (true of truncating and
    of unsigned division).  SAT-based bit-vector solving cannot find this fact in reasonable
    time, and interval rules (lo(a / c) = lo(a) / c) rest on it."""
    divisions = _divisions(formulas)
    width = 66

    def ext(x, signed: bool):
        return (z3.SignExt if signed else z3.ZeroExt)(width - x.size(), x)

    lemmas = []
    for (q1, s1), (q2, s2) in itertools.permutations(divisions, 2):
        n1, d1 = q1.children()
        n2, d2 = q2.children()
        lemmas.append(
            z3.Implies(
                z3.And(ext(d1, s1) == ext(d2, s2), ext(d1, s1) > 0, ext(n1, s1) <= ext(n2, s2)),
                ext(q1, s1) <= ext(q2, s2),
            )
        )
    return lemmas


def quotient_lemmas(formulas, products: ExactProducts) -> list:
    """What a quotient is, in terms of the exact-product function: for a non-negative dividend n
    and a positive divisor d, q = n / d satisfies q*d <= n < q*d + d."""
    lemmas = []
    for q, signed in _divisions(formulas):
        n, d = q.children()
        extend = z3.SignExt if signed else z3.ZeroExt
        wide_n, wide_d, wide_q = (extend(WIDE - x.size(), x) for x in (n, d, q))
        p = products.exact(wide_q, wide_d)
        lemmas.append(z3.Implies(z3.And(wide_d > 0, wide_n >= 0), z3.And(p <= wide_n, wide_n < p + wide_d)))
    return lemmas
