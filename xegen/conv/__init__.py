"""The convolution front end: benchdnn problems, layouts and views, configs, the kernel IR builder,
and a numpy reference.

    from xegen.conv import make_problem, build_kernel, check_ir
    problem = make_problem("mb1ic16ih8oc32oh8kh3ph1", direction="FWD_B", dt="f16")
    kernel = build_kernel(problem, "xehpg")          # heuristic config; overrides={"slm": 0}
    print(kernel)                                    # the IR
    for result in check_ir(kernel):                  # run it in the interpreter vs numpy
        print(result)
"""

from .check import Comparison, check_ir, compare, random_inputs, tolerances
from .config import KEYS as CONFIG_KEYS
from .config import Config, check_config, choose_config, parse_overrides
from .descriptor import Descriptor, format_descriptor, parse_descriptor
from .gemm import Gemm, GemmDim, View, formulate
from .kernel import Kernel, build_kernel, dispatch_ids, run_ir
from .layout import Block, Layout, make_layout
from .problem import DIRECTIONS, DataTypes, Problem, make_problem, parse_data_types, parse_direction
from .reference import backward_data, backward_weights, expected_outputs, forward

__all__ = [
    "Block", "CONFIG_KEYS", "Comparison", "Config", "DIRECTIONS", "DataTypes", "Descriptor", "Gemm", "GemmDim",
    "Kernel", "Layout", "Problem", "View", "backward_data", "backward_weights", "build_kernel", "check_config",
    "check_ir", "choose_config", "compare", "dispatch_ids", "expected_outputs", "format_descriptor", "formulate",
    "forward", "make_layout", "make_problem", "parse_data_types", "parse_descriptor", "parse_direction",
    "parse_overrides", "random_inputs", "run_ir", "tolerances",
]
