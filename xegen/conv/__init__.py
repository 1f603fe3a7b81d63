"""The convolution front end: benchdnn descriptors and problems, tensor layouts, the numpy
reference and the check of a kernel's outputs against it.  Nothing here knows about kernels.

    from xegen.conv import make_problem, random_inputs, expected_outputs
    problem = make_problem("mb1ic16ih8oc32oh8kh3ph1", direction="FWD_B", dt="f16")
    tensors = random_inputs(problem)                 # logical inputs, by buffer name
    reference = expected_outputs(problem, tensors)   # what a kernel must write

Kernels come from `xegen.plan` (how to compute a problem), `xegen.build` (its IR) and
`xegen.pipeline` (the whole compiler).
"""

from .check import Comparison, compare, random_inputs, tolerances
from .descriptor import Descriptor, format_descriptor, parse_descriptor
from .layout import Block, Layout, make_layout
from .problem import DIRECTIONS, DataTypes, Problem, make_problem, parse_data_types, parse_direction
from .reference import backward_data, backward_weights, expected_outputs, forward

__all__ = [
    "Block",
    "Comparison",
    "DIRECTIONS",
    "DataTypes",
    "Descriptor",
    "Layout",
    "Problem",
    "backward_data",
    "backward_weights",
    "compare",
    "expected_outputs",
    "format_descriptor",
    "forward",
    "make_layout",
    "make_problem",
    "parse_data_types",
    "parse_descriptor",
    "parse_direction",
    "random_inputs",
    "tolerances",
]
