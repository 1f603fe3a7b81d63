"""A small reader for egglog's S-expression syntax, with line and column numbers.

The rule loader uses it to check conventions (every rule names its ruleset, every rule has a
comment) and the rule checker to read rules as data.  egglog itself parses the text it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ParseError


@dataclass(frozen=True)
class Symbol:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Keyword:
    """`:when`, `:ruleset`, ..."""

    name: str

    def __str__(self) -> str:
        return ":" + self.name


@dataclass(frozen=True)
class String:
    value: str

    def __str__(self) -> str:
        return '"' + self.value.replace("\\", "\\\\").replace('"', '\\"') + '"'


Atom = Symbol | Keyword | String | int | float


@dataclass
class SList:
    """A parenthesised list; `line`/`column` locate its opening parenthesis."""

    items: list
    line: int = 0
    column: int = 0
    comment: str = ""  # the comment covering a top-level form (without ';'): see `read`

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index]

    def __iter__(self):
        return iter(self.items)

    @property
    def head(self) -> str | None:
        return self.items[0].name if self.items and isinstance(self.items[0], Symbol) else None

    def __str__(self) -> str:
        return "(" + " ".join(str(x) for x in self.items) + ")"

    def option(self, name: str, default=None):
        """The value after keyword `:name` in this list, or `default`."""
        for i, item in enumerate(self.items):
            if isinstance(item, Keyword) and item.name == name:
                return self.items[i + 1] if i + 1 < len(self.items) else True
        return default

    def has_flag(self, name: str) -> bool:
        return any(isinstance(x, Keyword) and x.name == name for x in self.items)

    def positional(self) -> list:
        """Items before the first keyword option (keywords with a value are skipped)."""
        out = []
        for item in self.items:
            if isinstance(item, Keyword):
                break
            out.append(item)
        return out


def _atom(text: str) -> Atom:
    if text.startswith(":") and len(text) > 1:
        return Keyword(text[1:])
    try:
        return int(text)
    except ValueError:
        pass
    return Symbol(text)


class FormSyntaxError(ParseError):
    """Text that is not S-expressions, named like a compiler names it: `FILE:LINE:COLUMN: reason`."""

    def __init__(self, filename: str, reason: str, text: str, line: int, column: int):
        super().__init__(reason, text, line, column)
        self.args = (f"{filename}:{line}:{column}: {reason}",)


def read(text: str, filename: str = "<rules>") -> list[SList]:
    """All top-level forms of `text`; raises ParseError with the line and column."""
    forms: list[SList] = []
    stack: list[SList] = []
    # a comment covers the top-level forms below it, up to the next blank line or the next comment
    comment_lines: list[str] = []
    covered_a_form = False  # a form came after the comment: the next comment line starts a new one
    line_is_blank = True
    i, line, column = 0, 1, 1
    n = len(text)

    def error(message: str) -> ParseError:
        return FormSyntaxError(filename, message, text, line, column)

    while i < n:
        c = text[i]
        if c == "\n":
            if line_is_blank and not stack:
                comment_lines = []
            line_is_blank = True
            i, line, column = i + 1, line + 1, 1
            continue
        if c in " \t\r":
            i, column = i + 1, column + 1
            continue
        line_is_blank = False
        if c == ";":
            end = text.find("\n", i)
            end = n if end < 0 else end
            if not stack:
                if covered_a_form:
                    comment_lines, covered_a_form = [], False
                comment_lines.append(text[i:end].lstrip(";").strip())
            column += end - i
            i = end
            continue
        if c == "(":
            form = SList([], line, column)
            if not stack:
                form.comment = "\n".join(comment_lines)
                covered_a_form = True
            stack.append(form)
            i, column = i + 1, column + 1
            continue
        if c == ")":
            if not stack:
                raise error("unbalanced ')'")
            form = stack.pop()
            if stack:
                stack[-1].items.append(form)
            else:
                forms.append(form)
            i, column = i + 1, column + 1
            continue
        if c == '"':
            j = i + 1
            chars = []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    j += 1
                if text[j] == "\n":
                    raise error("unterminated string")
                chars.append(text[j])
                j += 1
            if j >= n:
                raise error("unterminated string")
            atom: Atom = String("".join(chars))
            column += j + 1 - i
            i = j + 1
        else:
            j = i
            while j < n and text[j] not in " \t\r\n();\"":
                j += 1
            atom = _atom(text[i:j])
            column += j - i
            i = j
        if not stack:
            raise error(f"'{atom}' outside parentheses")
        stack[-1].items.append(atom)
    if stack:
        line, column = stack[-1].line, stack[-1].column
        raise error("'(' is never closed")
    return forms


@dataclass
class Location:
    filename: str
    line: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}"


@dataclass
class Form:
    """A top-level form of a rule file with where it came from."""

    sexpr: SList
    location: Location
    extra: dict = field(default_factory=dict)
