"""Named guards: what `(AddFits t a b)` in a rule's :when means to the checker.

A named guard is a relation the rules derive for themselves (language.egg's, or a rule file's
own): rules whose only action adds it, `(rule ((Add t a b) (>= ...) ...) ((AddFits t a b)))`,
define it; it holds where one of their bodies held.  A rule that asks for a guard is checked with
the guard's definition in its place (`expand`): the body of each deriving rule (one variant per
rule), its own variables renamed apart and its lattice lookups (`lo`, `hi`) kept apart from the
rule's: egglog derived the guard earlier, when the bounds may have been looser (both bound the
same value).  So a guard whose definition is wrong makes the rules that use it fail their check.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ...errors import RuleError
from .. import sexpr
from ..rules import RuleFile, signatures
from .patterns import PApp, Pattern, PVar, show, to_pattern

#: relations whose meaning the checker knows (model.py), the others are named guards: relations on
#: types; facts about variables; relations on an expression and an i64 (DivBy has a meaning, a
#: multiple of k; Want is only a request that drives the DivBy analysis and carries no meaning)
TYPE_RELATIONS = ("signed", "unsigned", "narrow", "integer")
FACT_RELATIONS = ("InLoop", "LetValue")
VALUE_RELATIONS = ("DivBy", "Want")
BUILT_IN_RELATIONS = TYPE_RELATIONS + FACT_RELATIONS + VALUE_RELATIONS
#: the lattice functions (bounds); a guard's lookups get a scope of their own (`lo@0.1`)
LATTICES = ("lo", "hi")


@dataclass(frozen=True)
class Derivation:
    """A rule deriving a guard: `(G params...)` holds where `body` held."""

    params: tuple[str, ...]
    body: tuple[Pattern, ...]


@dataclass
class Guards:
    derived: dict[str, list[Derivation]] = field(default_factory=dict)

    def __contains__(self, name: str) -> bool:
        return name in self.derived

    def expand(self, facts: tuple[Pattern, ...]) -> list[tuple[Pattern, ...]]:
        """The facts with every guard replaced by its definition: one list of facts per choice of
        deriving rules (usually one).  Raises ValueError for a guard that cannot be expanded."""
        return [tuple(v) for v in self._expand(list(facts), "", ())]

    def _expand(self, facts: list[Pattern], scope: str, within: tuple[str, ...]) -> list[list[Pattern]]:
        variants: list[list[Pattern]] = [[]]
        for position, fact in enumerate(facts):
            if isinstance(fact, PApp) and fact.head in self.derived:
                head = fact.head
                if head in within:
                    raise ValueError(f"the guard '{head}' is defined in terms of itself")
                inner = f"{scope}.{position}" if scope else str(position)
                options = []
                for derivation in self.derived[head]:
                    if len(derivation.params) != len(fact.args):
                        raise ValueError(f"the guard '{head}' takes {len(derivation.params)} arguments")
                    binding = dict(zip(derivation.params, fact.args, strict=True))
                    body = [_instantiate(b, binding, inner) for b in derivation.body]
                    options += self._expand(body, inner, (*within, head))
            else:
                options = [[fact]]
            variants = [v + o for v in variants for o in options]
        return variants

    def definition_text(self, facts: Iterable[Pattern]) -> str:
        """The definitions of the guards the facts use (part of a cached verdict's key)."""
        used = sorted({f.head for f in facts if isinstance(f, PApp) and f.head in self})
        parts = []
        for name in used:
            for d in self.derived[name]:
                parts.append(f"{name} {d.params}: {' '.join(show(b) for b in d.body)}")
                parts.append(self.definition_text(d.body))
        return "\n".join(parts)


def _instantiate(p: Pattern, binding: dict[str, Pattern], scope: str) -> Pattern:
    """A body pattern with the parameters bound and everything else renamed into `scope`."""
    if isinstance(p, PVar):
        return binding.get(p.name, PVar(f"{p.name}@{scope}"))
    if isinstance(p, PApp):
        head = f"{p.head}@{scope}" if p.head in LATTICES else p.head
        return PApp(head, tuple(_instantiate(a, binding, scope) for a in p.args))
    return p


def base_head(head: str) -> str:
    """`lo@0.1` -> `lo`."""
    return head.split("@", 1)[0]


def collect(files: Iterable[RuleFile]) -> Guards:
    """The named guards the files define (with the language, which the caller includes)."""
    files = list(files)
    sigs = signatures(form for f in files for form in f.forms)
    relations = {name for name, s in sigs.items() if s.output == "Unit" and name not in BUILT_IN_RELATIONS}
    guards = Guards()
    for f in files:
        for form in f.forms:
            if form.head in relations:
                raise RuleError(f"{f.path}:{form.line}: the guard '{form.head}' is derived by rules, not stated")
            derivation = _derivation(form, relations, f"{f.path}:{form.line}")
            if derivation is not None:
                guards.derived.setdefault(derivation[0], []).append(derivation[1])
    return guards


def _derivation(form: sexpr.SList, relations: set[str], where: str) -> tuple[str, Derivation] | None:
    """The guard a rule derives and how, if it derives one (its only action adds the guard, with
    distinct variables, so that the body is the guard's whole meaning)."""
    positional = form.positional()
    if form.head != "rule" or len(positional) != 3 or not all(isinstance(x, sexpr.SList) for x in positional[1:]):
        return None
    actions = positional[2].items
    guards = [a.head for a in actions if isinstance(a, sexpr.SList) and a.head in relations]
    if not guards:
        return None
    params = [to_pattern(x) for x in actions[0].items[1:]] if len(actions) == 1 else []
    names = tuple(x.name for x in params if isinstance(x, PVar))
    if len(actions) != 1 or len(set(names)) != len(params):
        raise RuleError(
            f"{where}: a rule that derives the guard '{guards[0]}' does only that, "
            f"with distinct variables: (({guards[0]} x y ...))"
        )
    body = tuple(to_pattern(x) for x in positional[1].items)
    return guards[0], Derivation(names, body)
