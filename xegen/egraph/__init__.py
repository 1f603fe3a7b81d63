"""The e-graph optimizer: IR expressions as egglog terms, rewritten by the rule files in `rules/`,
guarded by an interval analysis, and extracted under a per-platform Xe cost model.

    from xegen.egraph import simplify, optimize_stmt, CostModel, load_rules, check_rules
"""

from .costs import INFINITE, CostModel, cost_model
from .engine import Limits, SaturationReport
from .extract import EXTRACTORS
from .rules import RuleSet, load_rules
from .simplify import SimplifyResult, simplify

__all__ = [
    "EXTRACTORS", "INFINITE", "CostModel", "Limits", "RuleSet", "SaturationReport", "SimplifyResult",
    "cost_model", "load_rules", "simplify",
]
