"""xegen's Python API: what the command line does, as functions and objects (`import xegen`).

    problem = xegen.conv_problem("mb1ic64ih56oc64oh56kh3ph1", dt="f16")
    kernel = xegen.compile(problem, hw="xehpg")            # a Kernel: zebin, asm, summary, run, ...
    xegen.simplify("2*(a+b) - a", hw="xelp")               # a Simplification with its costs
    xegen.extract_compare("x / 8", types={"x": "u32"})     # one program under several cost models
    xegen.autotune([problem], hw="xehpg", budget=16)      # xegen tune: searched, verified, recorded
    xegen.rules.load([...]); xegen.rules.check([...])     # rule files
    xegen.assemble(text), xegen.disassemble(data), xegen.read_zebin(data)
    xegen.runtime                                          # launching on an Intel GPU (OpenCL)

docs/python.md walks through a session.
"""

from __future__ import annotations

from .binary import assemble, disassemble, read_zebin, run_zebin
from .expressions import PlatformComparison, Simplification, evaluate, extract_compare, simplify
from .kernel import Argument, DeviceRun, Graph, Kernel, Summary, compile, conv_problem
from .tuning import autotune

__all__ = [
    "Argument",
    "DeviceRun",
    "Graph",
    "Kernel",
    "PlatformComparison",
    "Simplification",
    "Summary",
    "assemble",
    "autotune",
    "compile",
    "conv_problem",
    "disassemble",
    "evaluate",
    "extract_compare",
    "read_zebin",
    "run_zebin",
    "simplify",
]
