"""The builder of each kernel strategy (`xegen.plan.strategies`): a plan in, its kernel IR out."""

from __future__ import annotations

from ..ir import Stmt
from ..plan.depthwise import DepthwisePlan
from ..plan.depthwise_weights import DepthwiseWeightsPlan
from ..plan.first_layer import FirstLayerPlan
from ..plan.first_layer_weights import FirstLayerWeightsPlan
from ..plan.strategies import AnyPlan
from .builder import build_body
from .depthwise import build_depthwise
from .depthwise_weights import build_depthwise_weights
from .first_layer import build_first_layer
from .first_layer_weights import build_first_layer_weights


def build_plan(plan: AnyPlan) -> Stmt:
    """The kernel IR of any plan: the GEMM builder's, or a row plan's."""
    if isinstance(plan, DepthwisePlan):
        return build_depthwise(plan)
    if isinstance(plan, FirstLayerWeightsPlan):  # before its base class
        return build_first_layer_weights(plan)
    if isinstance(plan, DepthwiseWeightsPlan):
        return build_depthwise_weights(plan)
    if isinstance(plan, FirstLayerPlan):
        return build_first_layer(plan)
    return build_body(plan)
