"""xegen: an optimizing kernel compiler for Intel Xe GPUs.

The Python API (docs/python.md) is reached from here: `xegen.compile`, `xegen.conv_problem`,
`xegen.simplify`, `xegen.rules`, `xegen.runtime`, ...  They load on first use (PEP 562's module
`__getattr__`), so that `import xegen` and the command line's quick commands do not pay for the
compiler's imports (egglog, scipy: about a second).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    ConfigError,
    DecodeError,
    EncodeError,
    Error,
    EvaluationError,
    ParseError,
    RuleError,
    UnsupportedError,
)

if TYPE_CHECKING:  # what the lazy names are, for type checkers and editors
    from . import rules, runtime
    from .api import (
        Argument,
        DeviceRun,
        Graph,
        Kernel,
        PlatformComparison,
        Simplification,
        Summary,
        assemble,
        autotune,
        compile,
        conv_problem,
        disassemble,
        evaluate,
        extract_compare,
        read_zebin,
        run_zebin,
        simplify,
    )

from .version import __version__

__all__ = [
    "ConfigError",
    "DecodeError",
    "EncodeError",
    "Error",
    "EvaluationError",
    "ParseError",
    "RuleError",
    "UnsupportedError",
    "__version__",
    # xegen.api's names and two subpackages: loaded on first use, by __getattr__ below
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
    "rules",
    "runtime",
]


def __getattr__(name: str) -> Any:  # called only for names not defined above
    if name in ("rules", "runtime"):
        return importlib.import_module(f"xegen.{name}")  # the rule tools, the OpenCL launcher: on first use
    if name in __all__:
        api = importlib.import_module("xegen.api")  # the compiler: loaded on first use (see above)
        return getattr(api, name)
    raise AttributeError(f"module 'xegen' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
