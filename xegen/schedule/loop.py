"""A loop body as the scheduler sees it: the loop's pure `let`s and a flat list of statements.

The builder's K loop is `for (k_iter ...) { let k_start = ...; let ...; stmt; stmt; ... }`.  The
scheduler works on that shape: `flatten_loop` pulls every pure `let` (one whose value reads no
memory) to the front, renaming it when its name is taken elsewhere, and keeps everything else as
statements in program order.  A statement that is not a plain store or call (an `if`, an inner
loop, a `let` whose value loads from memory, an `alloc`) stays one opaque statement.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UnsupportedError
from ..ir import Expr, For, IntImm, Let, Load, Names, Seq, Stmt, Var, free_vars, seq, substitute, walk


@dataclass(frozen=True)
class LoopBody:
    """`for (var = init; var < bound)` over `lets` (pure, in dependency order) then `stmts`."""

    var: Var
    init: Expr
    bound: Expr
    lets: tuple[tuple[Var, Expr], ...]
    stmts: tuple[Stmt, ...]

    def constant_bounds(self, why: str) -> tuple[int, int]:
        """The loop's start and end as integers; UnsupportedError (naming `why`) otherwise."""
        if not (isinstance(self.init, IntImm) and isinstance(self.bound, IntImm)):
            raise UnsupportedError(
                f"{why} needs a loop with constant bounds, not {self.var.name} from {self.init} to {self.bound}"
            )
        return self.init.value, self.bound.value

    def rebuild(self, stmts: list[Stmt] | tuple[Stmt, ...] | None = None) -> For:
        """The loop with its lets in front of `stmts` (by default its own statements)."""
        body = seq(*(self.stmts if stmts is None else stmts)) if (stmts or self.stmts) else Seq(())
        for var, value in reversed(self.lets):
            body = Let(var, value, body)
        return For(self.var, self.init, self.bound, body)


def has_load(e: Expr) -> bool:
    return any(isinstance(n, Load) for n in walk(e))


def flatten_loop(loop: For, names: Names) -> LoopBody:
    """The loop's body as pure lets (renamed where their name is taken) and statements."""
    # a let moved to the top of the body (or out of the loop) must not capture a variable of the
    # same name that the loop uses from outside
    taken = {loop.var.name} | {v.name for v in free_vars(loop)}
    lets: list[tuple[Var, Expr]] = []
    stmts: list[Stmt] = []

    def visit(s: Stmt, renames: dict[Var, Expr]) -> None:
        if isinstance(s, Seq):
            for item in s.stmts:
                visit(item, renames)
            return
        if isinstance(s, Let) and s.value is not None and not has_load(s.value):
            value = substitute(s.value, renames) if renames else s.value
            var = s.var
            if var.name in taken:
                var = Var(names.fresh(var.name), var.type)
                renames = {**renames, s.var: var}
            taken.add(var.name)
            lets.append((var, value))
            visit(s.body, renames)
            return
        if isinstance(s, Let) and s.value is None:
            raise UnsupportedError(
                f"the loop over {loop.var.name} declares external variable '{s.var.name}' inside its body"
            )
        stmts.append(substitute(s, renames) if renames else s)

    visit(loop.body, {})
    return LoopBody(loop.var, loop.init, loop.bound, tuple(lets), tuple(stmts))
