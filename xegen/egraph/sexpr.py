"""A small reader for egglog's S-expression syntax, with line and column numbers.

The rule loader uses it to check conventions (every rule names its ruleset, every rule has a
comment) and the rule checker to read rules as data.  egglog itself parses the text it runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

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


@lru_cache(maxsize=4096)  # atoms are immutable, and rule files repeat a few hundred of them
def _atom(text: str) -> Atom:
    if text.startswith(":") and len(text) > 1:
        return Keyword(text[1:])
    try:
        return int(text)
    except ValueError:
        pass
    return Symbol(text)


#: one token after any blanks: a line end, a comment, a parenthesis, a string (escapes kept), an
#: unterminated string's quote, or an atom (the group that matched says which).  Reading token by
#: token rather than character by character makes loading the rules, part of every compile,
#: several times faster.
_TOKEN = re.compile(r'[ \t\r]*(?:(\n)|(;[^\n]*)|(\()|(\))|"((?:[^"\\\n]|\\[^\n])*)"|(")|([^ \t\r\n();"]+))')
NEWLINE, COMMENT, OPEN, CLOSE, STRING, UNTERMINATED, ATOM = range(1, 8)
_ESCAPE = re.compile(r"\\(.)")


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
    line, line_start = 1, 0  # a column is 1 + the characters since the line's start

    def error(message: str, at: int) -> ParseError:
        return FormSyntaxError(filename, message, text, line, at - line_start + 1)

    for token in _TOKEN.finditer(text):
        kind = token.lastindex
        if kind == NEWLINE:
            if line_is_blank and not stack:
                comment_lines = []
            line_is_blank = True
            line, line_start = line + 1, token.end()
            continue
        line_is_blank = False
        if kind == OPEN:
            form = SList([], line, token.start(OPEN) - line_start + 1)
            if not stack:
                form.comment = "\n".join(comment_lines)
                covered_a_form = True
            stack.append(form)
            continue
        if kind == CLOSE:
            if not stack:
                raise error("unbalanced ')'", token.start(CLOSE))
            form = stack.pop()
            if stack:
                stack[-1].items.append(form)
            else:
                forms.append(form)
            continue
        if kind == COMMENT:
            if not stack:
                if covered_a_form:
                    comment_lines, covered_a_form = [], False
                comment_lines.append(token.group(COMMENT).lstrip(";").strip())
            continue
        if kind == UNTERMINATED:  # no closing quote on the line
            raise error("unterminated string", token.start(UNTERMINATED))
        atom: Atom = _atom(token.group(ATOM)) if kind == ATOM else String(_ESCAPE.sub(r"\1", token.group(STRING)))
        if not stack:
            raise error(f"'{atom}' outside parentheses", token.end())
        stack[-1].items.append(atom)
    if stack:
        line, line_start = stack[-1].line, 0
        raise error("'(' is never closed", stack[-1].column - 1)
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
