"""Rule patterns as data: egglog S-expressions read into variables, numbers, strings and
applications, for the checker."""

from __future__ import annotations

from dataclasses import dataclass

from .. import sexpr


@dataclass(frozen=True)
class PVar:
    name: str


@dataclass(frozen=True)
class PInt:
    value: int


@dataclass(frozen=True)
class PStr:
    value: str


@dataclass(frozen=True)
class PApp:
    head: str
    args: tuple[Pattern, ...]


Pattern = PVar | PInt | PStr | PApp


def to_pattern(x) -> Pattern:
    if isinstance(x, sexpr.SList):
        if not x.items or not isinstance(x.items[0], sexpr.Symbol):
            raise ValueError(f"cannot read {x}")
        return PApp(x.items[0].name, tuple(to_pattern(a) for a in x.items[1:]))
    if isinstance(x, sexpr.Symbol):
        return PVar(x.name)
    if isinstance(x, int):
        return PInt(x)
    if isinstance(x, sexpr.String):
        return PStr(x.value)
    raise ValueError(f"cannot read {x}")


def show(p: Pattern) -> str:
    if isinstance(p, PVar):
        return p.name
    if isinstance(p, PInt):
        return str(p.value)
    if isinstance(p, PStr):
        return f'"{p.value}"'
    return "(" + " ".join([p.head, *(show(a) for a in p.args)]) + ")"


def variables(p: Pattern) -> set[str]:
    """The names of the variables in a pattern."""
    if isinstance(p, PVar):
        return {p.name}
    if isinstance(p, PApp):
        return set().union(*(variables(a) for a in p.args))
    return set()
