"""The e-graph optimizer: IR expressions as egglog terms, rewritten by the rule files in `rules/`,
guarded by an interval analysis, and extracted under a per-platform Xe cost model.

    from xegen.egraph import simplify, optimize_stmt, CostModel, load_rules, check_rules
"""

from .costs import INFINITE, CostModel, cost_model
from .engine import Limits, SaturationReport
from .extract import EXTRACTORS
from .kernel import KernelResult, optimize_stmt, optimize_stmt_report
from .rules import RuleSet, load_rules
from .simplify import SimplifyResult, simplify


def check_rules(*args, **kwargs):
    """Prove rules sound (see xegen.egraph.check; needs z3 and hypothesis)."""
    from .check import check_rules as check  # z3 and hypothesis take seconds to import: only when called

    return check(*args, **kwargs)


__all__ = [
    "EXTRACTORS",
    "INFINITE",
    "CostModel",
    "KernelResult",
    "Limits",
    "RuleSet",
    "SaturationReport",
    "SimplifyResult",
    "check_rules",
    "cost_model",
    "load_rules",
    "optimize_stmt",
    "optimize_stmt_report",
    "simplify",
]
