"""The one exception family xegen raises for user mistakes.

The CLI prints any `Error` as a single `xegen: error: ...` line and exits with status 2;
anything else escaping is a bug in xegen.
"""


class Error(Exception):
    """A problem with the user's input: a message that names the input and what to do."""


class ParseError(Error):
    """Text that does not parse: an expression, a descriptor, assembly, a rule file."""

    def __init__(self, message: str, text: str = "", line: int = 1, column: int = 1):
        self.text = text
        self.line = line
        self.column = column
        super().__init__(
            f"line {line}, column {column}: {message}"
            if line > 1 or text.count("\n")
            else f"column {column}: {message}"
        )


class DecodeError(Error):
    """Bytes that are not a valid instruction or binary; names the byte offset."""

    def __init__(self, message: str, offset: int):
        self.offset = offset
        super().__init__(f"at byte offset {offset} (0x{offset:x}): {message}")


class EncodeError(Error):
    """An instruction that cannot be encoded for the chosen platform."""


class UnsupportedError(Error):
    """A valid request that xegen does not support (a shape, a type, a platform feature)."""


class ConfigError(Error):
    """A kernel configuration that is malformed or does not fit the hardware."""


class EvaluationError(Error):
    """An expression or statement the interpreter cannot evaluate (unbound variable, bad operand)."""


class RuleError(Error):
    """A rule file that does not load."""
