"""Rules as data: what a rule claims, instantiated at concrete types, for the checker.

A rule file is read with `sexpr`; each `rewrite`, `birewrite` and `rule` becomes a `Rule`.
`instances(rule)` enumerates the type assignments the rule applies to (a type variable ranges
over every type its operators accept, narrowed by `(signed t)`-style relations) and builds, for
each, an `Instance`:

- IR variables for the pattern's Expr variables, and for its constants (`(Const t c)` is an IR
  variable `c` of type t whose i64 is its value or bit pattern);
- i64 expressions for the rule's arithmetic (egglog primitives: checked + - * / %, wrapping <<,
  ...), lattice symbols for `(lo e)` / `(hi e)` (any i64 with lo <= e <= hi), free symbols for
  `(rank e)`;
- conditions (comparisons) and facts (`InLoop`, `LetValue`);
- right-hand-side constants ("holes": a computed i64 that must be a canonical constant of its type,
  or `Wrap`ped);
- obligations: both sides equal (rewrites, `union`), or a bound holds (`set lo` / `set hi`).

The sampler (`sample.py`) and the prover (`prove.py`) interpret an Instance the same way.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ... import ir
from ...errors import RuleError
from ...ir.types import BOOL, INT_TYPES, Type
from .. import rules, sexpr
from ..rules import RuleFile, Signature, rule_name, signatures
from ..terms import CATEGORY, OPERATIONS, TY_ARGUMENTS, TY_TYPES, build_node
from .guards import FACT_RELATIONS, LATTICES, TYPE_RELATIONS, VALUE_RELATIONS, Guards, base_head, collect
from .patterns import PApp, Pattern, PInt, PVar, show, to_pattern, variables

#: the order instances are checked in (so a report names the common types first)
ALL_TYPES: tuple[Type, ...] = tuple(
    sorted(INT_TYPES, key=lambda t: (t.bits != 32, t.bits != 64, -t.bits, not t.is_signed))
) + (BOOL,)

#: egglog i64 primitives the checker understands: name -> arity (None: any)
PRIMITIVES = {
    "+": 2,
    "-": 2,
    "*": 2,
    "/": 2,
    "%": 2,
    "&": 2,
    "|": 2,
    "^": 2,
    "<<": 2,
    ">>": 2,
    "not-i64": 1,
    "log2": 1,
    "min": 2,
    "max": 2,
}
COMPARISONS = ("<", "<=", ">", ">=", "!=", "=")
TYPE_FUNCTIONS = ("ty-bits", "ty-min", "ty-max", "ty-limit", "ty-mask", "ty-half")
FREE_FUNCTIONS = ("rank",)


# Rules --------------------------------------------------------------------------------------


@dataclass
class Rule:
    kind: str  # rewrite, birewrite, rule
    name: str
    file: str
    line: int
    comment: str
    text: str
    ruleset: str
    lhs: Pattern | None = None
    rhs: Pattern | None = None
    conditions: tuple[Pattern, ...] = ()  # :when facts, or a rule's body
    actions: tuple[Pattern, ...] = ()
    guards: Guards = field(default_factory=Guards)  # the named guards its conditions may ask for

    @property
    def defines(self) -> str | None:
        """The guard this rule derives (its only action adds the guard), if any."""
        if (
            self.kind == "rule"
            and len(self.actions) == 1
            and isinstance(self.actions[0], PApp)
            and self.actions[0].head in self.guards
        ):
            return self.actions[0].head
        return None

    def variants(self) -> list[tuple[Pattern, ...]]:
        """The conditions with every named guard replaced by its definition (guards.py), one
        tuple per choice of deriving rules; raises RuleShapeError if a guard cannot be expanded."""
        try:
            return self.guards.expand(self.conditions)
        except ValueError as error:
            raise RuleShapeError(str(error)) from None

    @property
    def guard_text(self) -> str:
        """The definitions of the guards the rule asks for (a cached verdict depends on them)."""
        return self.guards.definition_text(self.conditions)

    def sides(self) -> tuple[Pattern, Pattern]:
        """A rewrite's left and right sides."""
        if self.lhs is None or self.rhs is None:
            raise ValueError(f"{self.name} is a {self.kind}, which has no sides")
        return self.lhs, self.rhs

    @property
    def summary(self) -> str:
        if self.kind == "rule":
            return f"rule {' '.join(show(a) for a in self.actions)}"
        arrow = "<->" if self.kind == "birewrite" else "->"
        lhs, rhs = self.sides()
        return f"{show(lhs)} {arrow} {show(rhs)}"


def read_rules(rule_file: RuleFile, guards: Guards | None = None) -> list[Rule]:
    """The rules of a file, as data; `guards`: the named guards they may ask for (default: the
    language's and the file's own)."""
    if guards is None:
        guards = collect([rules.language_file(), rule_file])
    found = []
    for form in rule_file.rules():
        head = form.head
        positional = form.positional()
        when = form.option("when")
        conditions = tuple(to_pattern(c) for c in (when.items if isinstance(when, sexpr.SList) else []))
        lhs = rhs = None
        actions: tuple[Pattern, ...] = ()
        if head in ("rewrite", "birewrite"):
            if len(positional) != 3:
                raise RuleError(f"{rule_file.path}:{form.line}: {head} needs a left and a right side")
            kind, lhs, rhs = head, to_pattern(positional[1]), to_pattern(positional[2])
        else:
            if len(positional) != 3 or not all(isinstance(p, sexpr.SList) for p in positional[1:]):
                raise RuleError(f"{rule_file.path}:{form.line}: rule needs (facts) and (actions)")
            kind = "rule"
            conditions = tuple(to_pattern(f) for f in positional[1])
            actions = tuple(to_pattern(a) for a in positional[2])
        found.append(
            Rule(
                kind,
                name=rule_name(form),
                file=str(rule_file.path),
                line=form.line,
                comment=form.comment,
                text=str(form),
                ruleset=str(form.option("ruleset", "")),
                lhs=lhs,
                rhs=rhs,
                conditions=conditions,
                actions=actions,
                guards=guards,
            )
        )
    return found


# Signatures of the language -----------------------------------------------------------------


def language_signatures(extra_files: Sequence[RuleFile] = ()) -> dict[str, Signature]:
    """Constructor, function and relation signatures declared in language.egg and rule files."""
    return {**rules.language_signatures(), **signatures(form for f in extra_files for form in f.forms)}


# Instances ----------------------------------------------------------------------------------

# i64 expressions: ("lit", v) | ("sym", name) | ("op", primitive, (args...))
I64 = tuple


@dataclass
class Hole:
    """A right-hand-side constant: IR variable `var` takes the value of `value` (an i64)."""

    var: ir.Var
    value: I64
    wrap: bool  # Wrap: reduce modulo 2^bits; else the i64 must already be canonical for the type


@dataclass
class Instance:
    rule: Rule
    types: dict[str, Type]  # type variable -> type
    variables: list[ir.Var] = field(default_factory=list)  # IR variables (Expr and constant variables)
    const_links: dict[str, str] = field(default_factory=dict)  # i64 symbol -> IR variable it encodes
    lattice: list[tuple[str, str, ir.Expr]] = field(default_factory=list)  # (symbol, lo|hi, expression)
    free: list[str] = field(default_factory=list)  # unconstrained i64 symbols (ranks)
    definitions: list[tuple[str, I64]] = field(default_factory=list)  # symbol = expression, in order
    conditions: list[tuple[str, I64, I64]] = field(default_factory=list)  # (comparison, a, b)
    facts: list[tuple[str, tuple[ir.Expr, ...]]] = field(default_factory=list)  # InLoop, LetValue
    holes: list[Hole] = field(default_factory=list)
    equal: list[tuple[ir.Expr, ir.Expr]] = field(default_factory=list)
    bounds: list[tuple[str, ir.Expr, I64]] = field(default_factory=list)  # (lo|hi, expression, bound)
    multiples: list[tuple[ir.Expr, I64]] = field(default_factory=list)  # premise: e is a multiple of k
    claimed_multiples: list[tuple[ir.Expr, I64]] = field(default_factory=list)  # claim: e is a multiple of k

    @property
    def type_text(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.types.items())) or "-"

    def i64_symbols(self) -> list[str]:
        return [*self.const_links, *(s for s, _, _ in self.lattice), *self.free]

    def content(self) -> str:
        """Everything the instance claims and assumes, as text (equal texts: the same check)."""
        return repr([(k, v) for k, v in vars(self).items() if k != "rule"])


class NotApplicable(Exception):
    """This type assignment cannot match (a relation is false, a literal does not fit)."""


class RuleShapeError(Exception):
    """The rule uses something the checker cannot give a meaning to."""


def instances(rule: Rule, sigs: dict[str, Signature]) -> Iterator[Instance]:
    """Every type assignment the rule applies to, for every variant of its conditions (a guard
    derived by two rules gives two), as an Instance; variants that come out the same (deriving
    rules that differ only in the term they match) are checked once."""
    seen: set[str] = set()
    for conditions in rule.variants():
        slots = _TypeSlots(sigs)
        slots.collect(rule, conditions)
        for assignment in slots.assignments():
            try:
                instance = _Builder(rule, conditions, sigs, assignment, slots).build()
            except NotApplicable:
                continue
            key = instance.content()
            if key not in seen:
                seen.add(key)
                yield instance


class _TypeSlots:
    """Type variables of a rule, unified through the operators' signatures."""

    def __init__(self, sigs: dict[str, Signature]):
        self.sigs = sigs
        self.parent: dict[str, str] = {}
        self.fixed: dict[str, Type] = {}
        self.conflict = False  # two literal types met in one slot: the rule never applies
        self.counter = itertools.count()
        self.var_slot: dict[str, str] = {}  # pattern variable -> its type slot (Expr variables)
        self.ty_vars: set[str] = set()

    def find(self, slot: str) -> str:
        while self.parent.get(slot, slot) != slot:
            slot = self.parent[slot]
        return slot

    def union(self, a: str, b: str) -> None:
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent[b] = a
            if b in self.fixed:
                if a in self.fixed and self.fixed[a] != self.fixed[b]:
                    self.conflict = True
                else:
                    self.fixed.setdefault(a, self.fixed[b])

    def fresh(self) -> str:
        slot = f"#{next(self.counter)}"
        self.parent[slot] = slot
        return slot

    def ty_slot(self, p: Pattern) -> str:
        if isinstance(p, PVar):
            self.ty_vars.add(p.name)
            self.parent.setdefault(p.name, p.name)
            return p.name
        if isinstance(p, PApp) and p.head in TY_TYPES and not p.args:
            slot = self.fresh()
            self.fixed[slot] = TY_TYPES[p.head]
            return slot
        raise RuleShapeError(f"expected a type, found {show(p)}")

    def expr_slot(self, p: Pattern) -> str:
        """The type slot of an Expr-sorted pattern (walking into it)."""
        if isinstance(p, PVar):
            if p.name not in self.var_slot:
                self.var_slot[p.name] = self.fresh()
            return self.var_slot[p.name]
        if not isinstance(p, PApp) or p.head not in self.sigs or self.sigs[p.head].output != "Expr":
            raise RuleShapeError(f"expected an expression, found {show(p)}")
        head, args = p.head, p.args
        n_types = TY_ARGUMENTS[head]
        types = [self.ty_slot(a) for a in args[:n_types]]
        children = [a for a in args[n_types:]]
        sig = self.sigs[head].inputs[n_types:]
        # (constructors with i64 or String children are leaves, which use no child slot)
        child_slots = [self.expr_slot(c) for c, s in zip(children, sig, strict=False) if s == "Expr"]
        for c, s in zip(children, sig, strict=False):
            if s != "Expr":
                self.value_pattern(c)
        result = self.fresh()
        category = CATEGORY.get(OPERATIONS.get(head, ""))  # an IR operation's (terms.py)
        if head in ("Var", "Const", "Opaque", "Wrap"):
            self.union(result, types[0])
        elif category == "compare":
            self.union(child_slots[0], types[0])
            self.union(child_slots[1], types[0])
            self._bool(result)
        elif category == "logical":
            for s in [*child_slots, result]:
                self._bool(s)
        elif category == "shift":
            self.union(child_slots[0], types[0])
            self.union(result, types[0])
        elif head == "Select":
            self._bool(child_slots[0])
            self.union(child_slots[1], types[0])
            self.union(child_slots[2], types[0])
            self.union(result, types[0])
        elif head in ("Cast", "SatCast"):
            self.union(child_slots[0], types[1])
            self.union(result, types[0])
        else:  # arithmetic, ternary
            for s in child_slots:
                self.union(s, types[0])
            self.union(result, types[0])
        return result

    def _bool(self, slot: str) -> None:
        b = self.fresh()
        self.fixed[b] = BOOL
        self.union(slot, b)

    def value_pattern(self, p: Pattern) -> None:
        """i64-sorted patterns: walk into lookups to find the Expr and Ty patterns inside."""
        if isinstance(p, PApp):
            if base_head(p.head) in LATTICES or p.head in FREE_FUNCTIONS:
                self.expr_slot(p.args[0])
            elif p.head in TYPE_FUNCTIONS:
                self.ty_slot(p.args[0])
            else:
                for a in p.args:
                    self.value_pattern(a)

    def fact(self, p: Pattern) -> None:
        if isinstance(p, PApp):
            if p.head == "=" and len(p.args) == 2:
                for side in p.args:
                    self.any(side)
                left, right = p.args
                if (
                    isinstance(left, PVar)
                    and isinstance(right, PApp)
                    and right.head in self.sigs
                    and self.sigs[right.head].output == "Expr"
                ):
                    self.union(self.expr_slot(left), self.expr_slot(right))
                return
            if p.head in TYPE_RELATIONS:
                self.ty_slot(p.args[0])
                return
            if p.head in FACT_RELATIONS:
                slots = [self.expr_slot(a) for a in p.args]
                for s in slots[1:]:
                    self.union(slots[0], s)
                return
            if p.head in VALUE_RELATIONS:
                self.expr_slot(p.args[0])
                self.value_pattern(p.args[1])
                return
            self.any(p)

    def any(self, p: Pattern) -> None:
        if isinstance(p, PApp) and p.head in self.sigs and self.sigs[p.head].output == "Expr":
            self.expr_slot(p)
        else:
            self.value_pattern(p)

    def collect(self, rule: Rule, conditions: tuple[Pattern, ...]) -> None:
        if rule.kind != "rule":
            lhs, rhs = rule.sides()
            self.union(self.expr_slot(lhs), self.expr_slot(rhs))
        for c in conditions:
            self.fact(c)
        for a in rule.actions:
            if isinstance(a, PApp) and a.head == "union":
                self.union(self.expr_slot(a.args[0]), self.expr_slot(a.args[1]))
            elif isinstance(a, PApp) and a.head == "set":
                target = a.args[0]
                if isinstance(target, PApp):
                    for x in target.args:
                        self.any(x)
                self.value_pattern(a.args[1])
            elif isinstance(a, PApp) and a.head in ("subsume", "delete"):
                self.any(a.args[0])
            elif isinstance(a, PApp) and a.head in VALUE_RELATIONS:
                self.expr_slot(a.args[0])
                self.value_pattern(a.args[1])

    def assignments(self) -> Iterator[dict[str, Type]]:
        if self.conflict:
            return
        roots = sorted({self.find(s) for s in self.parent})
        free = [r for r in roots if r not in self.fixed]
        for combo in itertools.product(ALL_TYPES, repeat=len(free)):
            chosen = {**self.fixed, **dict(zip(free, combo, strict=True))}
            yield {slot: chosen[self.find(slot)] for slot in self.parent}


class _Builder:
    """Builds one Instance for one type assignment."""

    def __init__(
        self,
        rule: Rule,
        conditions: tuple[Pattern, ...],
        sigs: dict[str, Signature],
        assignment: dict[str, Type],
        slots: _TypeSlots,
    ):
        self.rule = rule
        self.conditions = conditions
        self.sigs = sigs
        self.assignment = assignment
        self.slots = slots
        # a guard's own type variables (`t@0`) only type the terms its definition matches, which
        # mean nothing to the claim: instances differing in them alone are the same check
        self.instance = Instance(rule, {v: assignment[v] for v in sorted(slots.ty_vars) if "@" not in v})
        self.expr_vars: dict[str, ir.Expr] = {}  # pattern variable -> IR
        self.i64_vars: dict[str, I64] = {}  # pattern variable -> i64 expression
        self.holes = itertools.count()
        self.lattice_of: dict[tuple[str, str], str] = {}

    # -- types ---------------------------------------------------------------------------
    def type_of(self, p: Pattern) -> Type:
        if isinstance(p, PVar):
            return self.assignment[p.name]
        if not isinstance(p, PApp):
            raise RuleShapeError(f"expected a type, found {show(p)}")
        return TY_TYPES[p.head]

    def type_fact(self, head: str, t: Type) -> int:
        if head == "ty-bits":
            return 1 if t.is_bool else t.bits
        if head == "ty-min":
            return 0 if t.is_bool else t.min
        if head == "ty-max":
            if t.kind == "u64":
                raise NotApplicable  # no entry: a rule looking it up does not fire
            return 1 if t.is_bool else t.max
        if head == "ty-limit":
            return 1 if t.is_bool else min(t.max, (1 << 63) - 1)
        if head == "ty-mask":
            return 1 if t.is_bool else (-1 if t.bits == 64 else (1 << t.bits) - 1)
        if head == "ty-half":
            return 1 << (t.bits - 1) if t.is_int and t.is_signed and t.bits < 64 else 0
        raise RuleShapeError(head)

    def type_relation(self, head: str, t: Type) -> bool:
        return {
            "signed": t.is_int and t.is_signed,
            "unsigned": t.is_int and not t.is_signed,
            "narrow": t.is_int and t.bits <= 32,
            "integer": t.is_int,
        }[head]

    # -- patterns ------------------------------------------------------------------------
    def expr(self, p: Pattern, lhs: bool) -> ir.Expr:
        """IR for an Expr pattern; `lhs`: new variables may be introduced (a match)."""
        if isinstance(p, PVar):
            if p.name not in self.expr_vars:
                if not lhs:
                    raise RuleShapeError(f"'{p.name}' is used on the right side but never matched")
                t = self.assignment[self.slots.var_slot[p.name]]
                v = ir.Var(_ir_name(p.name), t)
                self.instance.variables.append(v)
                self.expr_vars[p.name] = v
            return self.expr_vars[p.name]
        if not isinstance(p, PApp):
            raise RuleShapeError(f"expected an expression, found {show(p)}")
        head, args = p.head, p.args
        n_types = TY_ARGUMENTS[head]
        types = [self.type_of(a) for a in args[:n_types]]
        rest = args[n_types:]
        if head == "Const":
            return self.constant(types[0], rest[0], lhs)
        if head == "Wrap":
            if lhs:  # matching a Wrap node: its i64 is any value, its value that i64 wrapped
                if not isinstance(rest[0], PVar) or rest[0].name in self.i64_vars:
                    raise RuleShapeError("a Wrap on the left side must bind a new variable")
                self.instance.free.append(rest[0].name)
                self.i64_vars[rest[0].name] = ("sym", rest[0].name)
            return self.hole(types[0], self.i64(rest[0], lhs), wrap=True)
        if head in ("Var", "Opaque"):
            if not lhs:
                raise RuleShapeError(f"{head} on the right side")
            if head == "Opaque" and isinstance(rest[0], PVar) and rest[0].name not in self.i64_vars:
                self.instance.free.append(rest[0].name)  # the opaque leaf's index: any number
                self.i64_vars[rest[0].name] = ("sym", rest[0].name)
            # any variable or opaque value of the type: a fresh IR variable
            name = f"{head.lower()}{len(self.instance.variables)}"
            v = ir.Var(name, types[0])
            self.instance.variables.append(v)
            return v
        children = [self.expr(c, lhs) for c in rest]
        try:
            return build_node(head, types[0] if types else None, children, types)
        except ir.IRTypeError:
            raise NotApplicable from None

    def constant(self, t: Type, value: Pattern, lhs: bool) -> ir.Expr:
        if isinstance(value, PInt):
            if not _canonical(value.value, t):
                if lhs:
                    raise NotApplicable  # the literal is not a constant of this type: never matches
                raise RuleShapeError(f"the constant {value.value} is not a value of {t}")
            return ir.BoolImm(bool(value.value)) if t.is_bool else ir.IntImm(_value_of(value.value, t), t)
        if lhs and isinstance(value, PVar) and value.name not in self.i64_vars:
            v = ir.Var(_ir_name(value.name), t)
            self.instance.variables.append(v)
            self.instance.const_links[value.name] = v.name
            self.i64_vars[value.name] = ("sym", value.name)
            return v
        if isinstance(value, PVar) and lhs and value.name in self.i64_vars and value.name in self.instance.const_links:
            # the same constant twice in a pattern: the same IR variable
            name = self.instance.const_links[value.name]
            return next(v for v in self.instance.variables if v.name == name)
        return self.hole(t, self.i64(value, lhs), wrap=False)

    def hole(self, t: Type, value: I64, wrap: bool) -> ir.Var:
        v = ir.Var(f"k{next(self.holes)}_", t)
        self.instance.holes.append(Hole(v, value, wrap))
        return v

    def i64(self, p: Pattern, lhs: bool) -> I64:
        if isinstance(p, PInt):
            return ("lit", p.value)
        if isinstance(p, PVar):
            if p.name not in self.i64_vars:
                raise RuleShapeError(f"'{p.name}' is used before it is bound")
            return self.i64_vars[p.name]
        if not isinstance(p, PApp):
            raise RuleShapeError(f"expected a number, found {show(p)}")
        head = p.head
        if head in PRIMITIVES:
            arity = PRIMITIVES[head]
            if arity is not None and len(p.args) != arity:
                raise RuleShapeError(f"{head} takes {arity} arguments")
            return ("op", head, tuple(self.i64(a, lhs) for a in p.args))
        if head in TYPE_FUNCTIONS:
            return ("lit", self.type_fact(head, self.type_of(p.args[0])))
        if base_head(head) in LATTICES:  # `lo@0.1`: a lookup made when a guard was derived (guards.py)
            e = self.expr(p.args[0], lhs=True)
            key = (head, str(e) + ":" + str(e.type))
            if key not in self.lattice_of:
                symbol = f"{base_head(head)}{len(self.lattice_of)}_"
                self.lattice_of[key] = symbol
                self.instance.lattice.append((symbol, base_head(head), e))
            return ("sym", self.lattice_of[key])
        if head in FREE_FUNCTIONS:
            symbol = f"{head}{len(self.instance.free)}_"
            self.instance.free.append(symbol)
            return ("sym", symbol)
        raise RuleShapeError(f"unknown function '{head}' in an i64 position")

    # -- facts and actions -----------------------------------------------------------------
    def fact(self, p: Pattern) -> bool:
        """Record a fact; False if it cannot be handled yet (a variable bound later)."""
        if not isinstance(p, PApp):
            raise RuleShapeError(f"cannot read the fact {show(p)}")
        head, args = p.head, p.args
        if head in TYPE_RELATIONS:
            if not self.type_relation(head, self.type_of(args[0])):
                raise NotApplicable
            return True
        if head in VALUE_RELATIONS:
            e = self.expr(args[0], lhs=True)
            if isinstance(args[1], PVar) and args[1].name not in self.i64_vars:
                # the relation's number is bound by the match: any value
                self.instance.free.append(args[1].name)
                self.i64_vars[args[1].name] = ("sym", args[1].name)
            if not self._ready(args[1]):
                return False
            if head == "DivBy":
                if not e.type.is_int:
                    raise NotApplicable
                self.instance.multiples.append((e, self.i64(args[1], True)))
            return True
        if head in FACT_RELATIONS:
            exprs = tuple(self.expr(a, lhs=True) for a in args)
            if head == "InLoop" and not exprs[0].type.is_int:
                raise NotApplicable  # loop variables are integers
            self.instance.facts.append((head, exprs))
            return True
        if (
            head == "="
            and isinstance(args[0], PVar)
            and args[0].name not in self.i64_vars
            and args[0].name not in self.expr_vars
        ):
            if len(args) != 2:
                raise RuleShapeError("'=' takes two arguments")
            symbol, right = args[0].name, args[1]
            if isinstance(right, PApp) and right.head in self.sigs and self.sigs[right.head].output == "Expr":
                self.expr_vars[symbol] = self.expr(right, lhs=True)
                return True
            if not self._ready(right):
                return False
            self.instance.definitions.append((symbol, self.i64(right, lhs=True)))
            self.i64_vars[symbol] = ("sym", symbol)
            return True
        if head in COMPARISONS:
            if not all(self._ready(a) for a in args):
                return False
            if head == "=" and all(self._is_expr(a) for a in args):
                raise RuleShapeError("equality of expressions in a condition")
            self.instance.conditions.append((head, self.i64(args[0], True), self.i64(args[1], True)))
            return True
        if head in self.sigs and self.sigs[head].output == "Expr":
            self.expr(p, lhs=True)  # the term must exist: nothing to assume about its value
            return True
        raise RuleShapeError(f"the checker does not know the meaning of '{head}'")

    def _is_expr(self, p: Pattern) -> bool:
        return (isinstance(p, PVar) and p.name in self.expr_vars) or (
            isinstance(p, PApp) and p.head in self.sigs and self.sigs[p.head].output == "Expr"
        )

    def _ready(self, p: Pattern) -> bool:
        if isinstance(p, PVar):
            return p.name in self.i64_vars or p.name in self.expr_vars
        if isinstance(p, PApp):
            if base_head(p.head) in LATTICES or p.head in FREE_FUNCTIONS:
                return self._expr_ready(p.args[0])
            if p.head in TYPE_FUNCTIONS:
                return True
            return all(self._ready(a) for a in p.args)
        return True

    def _expr_ready(self, p: Pattern) -> bool:
        if isinstance(p, PVar):
            return p.name in self.expr_vars or p.name in self.slots.var_slot
        return True

    def build(self) -> Instance:
        rule = self.rule
        if rule.kind == "rule":
            pending = list(self.conditions)
        else:
            lhs = self.expr(rule.sides()[0], lhs=True)
            pending = list(self.conditions)
        # facts naming a term first, so that a variable is bound to its term before other facts use it
        pending = self._names_first(pending)
        while pending:
            progress = [c for c in pending if self.fact(c)]
            if not progress:
                raise RuleShapeError(f"cannot order the conditions {', '.join(show(c) for c in pending)}")
            pending = [c for c in pending if c not in progress]
        if rule.kind != "rule":
            rhs = self.expr(rule.sides()[1], lhs=False)
            if rhs.type != lhs.type:
                raise RuleShapeError(f"the sides have different types: {lhs.type} and {rhs.type}")
            self.instance.equal.append((lhs, rhs))
            return self.instance
        for action in rule.actions:
            self.action(action)
        return self.instance

    def _names_term(self, c: Pattern) -> bool:
        return (
            isinstance(c, PApp)
            and c.head == "="
            and len(c.args) == 2
            and isinstance(c.args[0], PVar)
            and isinstance(c.args[1], PApp)
            and c.args[1].head in self.sigs
            and self.sigs[c.args[1].head].output == "Expr"
        )

    def _names_first(self, facts: list[Pattern]) -> list[Pattern]:
        """The facts naming a term, each after those naming the variables its term uses
        (`(= e (Add t x y))` after `(= x (Const t a))`, which makes `x` that constant), then the rest."""
        naming = [c for c in facts if self._names_term(c)]
        ordered: list[Pattern] = []
        while naming:
            named = {c.args[0].name for c in naming if isinstance(c, PApp) and isinstance(c.args[0], PVar)}
            ready = [c for c in naming if isinstance(c, PApp) and not (variables(c.args[1]) & named)]
            if not ready:
                raise RuleShapeError(f"the terms named by {', '.join(show(c) for c in naming)} contain each other")
            ordered += ready
            naming = [c for c in naming if c not in ready]
        return ordered + [c for c in facts if not self._names_term(c)]

    def action(self, a: Pattern) -> None:
        if not isinstance(a, PApp):
            raise RuleShapeError(f"cannot read the action {show(a)}")
        if a.head == self.rule.defines:
            pass  # derives a named guard: a definition, which claims nothing (rules that use it are
            # checked against it)
        elif a.head == "union":
            left, right = (self.expr(x, lhs=False) for x in a.args)
            if left.type != right.type:
                raise RuleShapeError(f"union of a {left.type} and a {right.type}")
            self.instance.equal.append((left, right))
        elif a.head == "set":
            target, value = a.args
            if not isinstance(target, PApp):
                raise RuleShapeError(f"cannot read {show(target)}")
            if target.head in LATTICES:
                e = self.expr(target.args[0], lhs=False)
                self.instance.bounds.append((target.head, e, self.i64(value, lhs=False)))
            elif target.head in FREE_FUNCTIONS:
                self.i64(value, lhs=False)  # ranks carry no meaning: only check it is computable
            else:
                raise RuleShapeError(f"the checker does not know what setting '{target.head}' means")
        elif a.head in ("subsume", "delete"):
            pass  # removing a node from matching keeps every claim sound
        elif a.head == "Want":
            self.expr(a.args[0], lhs=False)  # a request: no claim
        elif a.head == "DivBy":
            e = self.expr(a.args[0], lhs=False)
            if not e.type.is_int:
                raise NotApplicable
            self.instance.claimed_multiples.append((e, self.i64(a.args[1], lhs=False)))
        else:
            raise RuleShapeError(f"the checker does not know the action '{a.head}'")


def _ir_name(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
    return cleaned if cleaned[:1].isalpha() or cleaned[:1] == "_" else "v_" + cleaned


def _canonical(value: int, t: Type) -> bool:
    """Is the i64 a `Const` of type t can hold (value, or u64 bit pattern)?"""
    if t.is_bool:
        return value in (0, 1)
    if t.kind == "u64":
        return -(1 << 63) <= value < (1 << 63)
    return t.min <= value <= t.max


def _value_of(bits: int, t: Type) -> int:
    return bits + (1 << 64) if t.kind == "u64" and bits < 0 else bits


canonical = _canonical
value_of = _value_of
