"""General passes on IR statements, written on `xegen.ir`'s visitors (`StmtVisitor`, `StmtMutator`).

    unique_binders(stmt)                    every let and loop variable named apart (lets.py)
    see_through_lets(stmt)                  uses of pure lets see their values (lets.py)
    drop_unused_lets(stmt)                  pure lets nothing reads removed (lets.py)
    bind_common_subexpressions(stmt, cost)  CSE and loop-invariant hoisting in one step (cse.py)
    fold_constants(node)                    operations on constants evaluated (constants.py)

They know nothing of hardware: a pass that needs a price takes it as a function (`cost`).  The
e-graph optimizer (`xegen.egraph.kernel`) and the scheduler (`xegen.schedule`) use them.
"""

from .constants import fold_constants
from .cse import bind_common_subexpressions
from .lets import drop_unused_lets, is_pure, see_through_lets, unique_binders

__all__ = [
    "bind_common_subexpressions",
    "drop_unused_lets",
    "fold_constants",
    "is_pure",
    "see_through_lets",
    "unique_binders",
]
