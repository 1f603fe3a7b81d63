"""The version of xegen (its own module, so that any layer may name it)."""

__version__ = "0.1.0"
