"""xegen: an optimizing kernel compiler for Intel Xe GPUs."""

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

__version__ = "0.1.0"

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
]
