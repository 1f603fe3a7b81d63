"""Kernel planning: how a convolution problem becomes a kernel, decided before any IR is built.

    formulate(problem)               the convolution as a GEMM with views of its tensors (gemm.py)
    choose_config(gemm, hw)          the heuristic's configuration: multiply, tiles, threads,
                                     SLM, buffering (heuristic.py; the keys in config.py)
    plan_kernel(gemm, config, hw)    every buffer laid out and every message chosen, within the
                                     register and SLM budgets (kernel.py, with tiles.py,
                                     messages.py, multiply.py, dpasw.py)

`xegen.build` turns a `KernelPlan` into IR.
"""

from .config import KEYS as CONFIG_KEYS
from .config import Config, check_config, parse_overrides
from .gemm import Gemm, GemmDim, View, formulate
from .heuristic import choose_config, config_candidates
from .kernel import KernelPlan, plan_kernel

__all__ = [
    "CONFIG_KEYS",
    "Config",
    "Gemm",
    "GemmDim",
    "KernelPlan",
    "View",
    "check_config",
    "choose_config",
    "config_candidates",
    "formulate",
    "parse_overrides",
    "plan_kernel",
]
