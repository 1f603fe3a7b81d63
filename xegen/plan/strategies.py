"""The kernel strategies a configuration's `plan` key selects, one planner each:

| plan        | planner                                        | for                                                   |
|-------------|------------------------------------------------|-------------------------------------------------------|
| `gemm`      | `kernel.plan_kernel`                           | every problem (the GEMM formulation, `gemm.py`)       |
| `depthwise` | `depthwise.plan_depthwise`                     | forward and backward data, at most 8 channels a group |
|             | `depthwise_weights.plan_depthwise_weights`     | backward weights of depthwise convolutions            |
| `first`     | `first_layer.plan_first_layer`                 | forward, ungrouped, few input channels                |
|             | `first_layer_weights.plan_first_layer_weights` | backward weights of those (channels-last src)         |
|             | `first_layer_data.plan_first_layer_data`       | backward data of those                                |

`strategy_configs` lists the configurations of the strategies other than `gemm` that apply to a
problem, best first; the heuristic (`heuristic.py`) tries them before the GEMM plan's, and
`strategy_fallbacks` after them, should all of them run out of registers.
"""

from __future__ import annotations

from ..conv.problem import Problem
from ..errors import ConfigError
from ..hw import Platform
from . import depthwise, depthwise_weights, first_layer, first_layer_data, first_layer_weights
from .config import Config, Given
from .depthwise import DepthwisePlan, depthwise_configs, depthwise_fallbacks, plan_depthwise
from .depthwise_weights import DepthwiseWeightsPlan, depthwise_weights_configs, plan_depthwise_weights
from .first_layer import FirstLayerPlan, first_layer_configs, plan_first_layer
from .first_layer_data import FirstLayerDataPlan, first_layer_data_configs, plan_first_layer_data
from .first_layer_weights import FirstLayerWeightsPlan, first_layer_weights_configs, plan_first_layer_weights
from .gemm import Gemm
from .kernel import KernelPlan, plan_kernel

AnyPlan = (
    KernelPlan | DepthwisePlan | DepthwiseWeightsPlan | FirstLayerPlan | FirstLayerWeightsPlan | FirstLayerDataPlan
)


def plan_for(gemm: Gemm, config: Config, hw: Platform) -> AnyPlan:
    """The plan of `config`'s strategy; ConfigError if it does not apply or does not fit."""
    if config.plan == "depthwise" and _computes_weights(gemm.problem):
        return plan_depthwise_weights(gemm, config, hw)
    if config.plan == "depthwise":
        return plan_depthwise(gemm, config, hw)
    if config.plan == "first" and _computes_weights(gemm.problem):
        return plan_first_layer_weights(gemm, config, hw)
    if config.plan == "first" and gemm.problem.direction == "BWD_D":
        return plan_first_layer_data(gemm, config, hw)
    if config.plan == "first":
        return plan_first_layer(gemm, config, hw)
    return plan_kernel(gemm, config, hw)


def strategy_configs(gemm: Gemm, hw: Platform, given: Given) -> list[Config]:
    """Configurations of the strategies besides `gemm` that apply to `gemm`'s problem, best
    first, with the keys of `given` fixed (none when `given` asks for another plan); ConfigError
    when `given` asks for one that does not apply, saying why."""
    asked = given.get("plan", "")
    reason = {"depthwise": _depthwise_unsuited, "first": first_unsuited}.get(asked, lambda *_: None)(gemm.problem, hw)
    if reason:
        raise ConfigError(f"plan={asked}: {reason}")
    return (
        depthwise_configs(gemm, hw, given)
        + depthwise_weights_configs(gemm, hw, given)
        + first_layer_configs(gemm, hw, given)
        + first_layer_weights_configs(gemm, hw, given)
        + first_layer_data_configs(gemm, hw, given)
    )


def strategy_fallbacks(gemm: Gemm, hw: Platform, given: Given) -> list[Config]:
    """Configurations of those strategies to compile only when every one of `strategy_configs`
    fails to (registers or instruction cache), in order, before the GEMM plan: smaller blocks the
    estimate is not trusted to rank against the others (`depthwise.depthwise_fallbacks`)."""
    return depthwise_fallbacks(gemm, hw, given)


def _computes_weights(problem: Problem) -> bool:
    return problem.direction in depthwise_weights.DIRECTIONS


def _depthwise_unsuited(problem: Problem, hw: Platform) -> str | None:
    """Why plan=depthwise does not apply: its backward-weights planner's reason for BWD_W and
    BWD_WB, the forward (and backward data) planner's otherwise."""
    module = depthwise_weights if _computes_weights(problem) else depthwise
    return module.unsuited(problem, hw)


def first_unsuited(problem: Problem, hw: Platform) -> str | None:
    """Why plan=first does not apply: its backward-weights planner's reason for BWD_W and BWD_WB,
    its backward-data planner's for BWD_D, the forward planner's otherwise."""
    if problem.direction == "BWD_D":
        return first_layer_data.unsuited(problem, hw)
    module = first_layer_weights if _computes_weights(problem) else first_layer
    return module.unsuited(problem, hw)
