"""Constant folding: every scalar integer or bool operation on constants evaluated, with the IR's
own semantics (the reference interpreter), so a folded program computes exactly what it did."""

from __future__ import annotations

import numpy as np

from .. import ir
from ..ir.visitor import ExprOrStmt


def fold_constants(node: ExprOrStmt) -> ExprOrStmt:
    """`node` with its scalar integer and bool operations on constants replaced by their values."""
    return _FoldConstants().mutate(node)


class _FoldConstants(ir.Mutator):
    """Evaluate (with IR semantics) every scalar integer or bool operation on constants."""

    def mutate(self, node):
        node = super().mutate(node)
        if (
            isinstance(node, (ir.Unary, ir.Binary, ir.Ternary, ir.Select, ir.Cast))
            and node.type.lanes == 1
            and (node.type.is_int or node.type.is_bool)
            and all(isinstance(c, (ir.IntImm, ir.BoolImm)) for c in ir.children(node))
        ):
            result = np.asarray(ir.Evaluator({}).evaluate(node))
            return ir.BoolImm(bool(result)) if node.type.is_bool else ir.IntImm(int(result), node.type)
        return node
