"""Loading rule files: `rules/*.egg` (or the directories given with `--rules DIR`).

A rule file is egglog's own language over the terms of `language.egg`.  One concern per file,
each rule under a comment saying why it holds, and every rule names the ruleset it belongs to
(`:ruleset rewrite`) and itself (`:name "add-zero"`, unique among the rules loaded together: tests
and `xegen rules check` cite rules by name); see docs/egraph.md.  Adding an optimization is adding
a file.

The term language's declarations are read here too (`language_signatures`, `constructors`), so
that code needing the list of term constructors derives it from `language.egg`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from ..errors import Error, ParseError, RuleError
from ..files import KiB, read_text
from . import sexpr

LANGUAGE_FILE = Path(__file__).with_name("language.egg")
RULESETS = ("expand", "analysis", "fold", "canon", "rewrite", "lower")
RULE_HEADS = ("rewrite", "birewrite", "rule")
MAX_RULE_FILE_BYTES = 256 * KiB  # five times all of rules/ together
#: forms a rule file may contain besides rules (helper relations and functions of its own)
OTHER_HEADS = ("relation", "function", "constructor", "ruleset", "sort", "datatype")


@lru_cache(maxsize=1)  # (resolving the path costs a system call per component)
def default_rules_directory() -> Path:
    """xegen/rules, shipped with the package (the repository's top-level `rules/` links to it)."""
    return Path(__file__).resolve().parents[1] / "rules"


def standalone_rules_directory() -> Path:
    """xegen/rules/standalone: rules a standalone simplification loads on top of the shipped ones
    and a kernel's e-graph does not.  Every rule costs a compile CPU time whether it fires or
    not (docs/egraph.md); one that only free-form expressions need pays for itself only there."""
    return default_rules_directory() / "standalone"


def shipped_rule_files(standalone: bool = True) -> list[Path]:
    """The shipped rule files: `rules/*.egg`, and with `standalone` `rules/standalone/*.egg`."""
    directories = [default_rules_directory()]
    if standalone and standalone_rules_directory().is_dir():
        directories.append(standalone_rules_directory())
    return rule_files(directories)


@dataclass(frozen=True)
class RuleFile:
    path: Path
    text: str
    forms: tuple[sexpr.SList, ...]

    @property
    def name(self) -> str:
        return self.path.name

    def rules(self) -> list[sexpr.SList]:
        return [f for f in self.forms if f.head in RULE_HEADS]


def rule_name(form: sexpr.SList) -> str:
    """The `:name` of a rule form (read_rule_file made sure it has one)."""
    name = form.option("name")
    return name.value if isinstance(name, sexpr.String) else ""


def check_unique_names(files: Iterable[RuleFile]) -> None:
    """Rule names are unique among the rules loaded together (egglog would stop at the second
    in the same ruleset; tests and the checker cite rules by name)."""
    seen: dict[str, str] = {}
    for f in files:
        for form in f.rules():
            name, here = rule_name(form), _location(f.path, form.line)
            if name in seen:
                raise RuleError(f"{here}: the rule name \"{name}\" is already used at {seen[name]}")
            seen[name] = here


@dataclass(frozen=True)
class RuleSet:
    """The language and a list of rule files, ready to load into an e-graph."""

    files: tuple[RuleFile, ...]

    @property
    def program(self) -> str:
        return "\n".join(f"; ---- {f.path}\n{f.text}" for f in self.files)

    @cached_property  # (the engine looks its e-graph up by it on every problem)
    def digest(self) -> str:
        h = hashlib.sha256(language_text().encode())
        for f in self.files:
            h.update(f.path.name.encode() + b"\0" + f.text.encode() + b"\0")
        return h.hexdigest()

    def rule_count(self) -> int:
        return sum(len(f.rules()) for f in self.files)


@lru_cache(maxsize=1)
def language_text() -> str:
    return LANGUAGE_FILE.read_text()


@lru_cache(maxsize=1)
def language_file() -> RuleFile:
    """language.egg as a rule file (its own rules, such as the named guards, have names too)."""
    return read_rule_file(LANGUAGE_FILE, language=True, text=language_text())


@dataclass(frozen=True)
class Signature:
    """A constructor's, function's or relation's argument sorts and result sort ("Unit" for a
    relation); `constructor`: a datatype variant or `constructor`, whose rows are e-graph nodes."""

    inputs: tuple[str, ...]
    output: str
    constructor: bool = False


def signatures(forms: Iterable[sexpr.SList]) -> dict[str, Signature]:
    """The signatures the forms declare (datatype, constructor, function, relation)."""
    sigs: dict[str, Signature] = {}
    for form in forms:
        head = form.head
        if head == "datatype":
            sort = str(form[1])
            for variant in form.items[2:]:
                if isinstance(variant, sexpr.SList) and variant.head is not None:
                    inputs = tuple(str(x) for x in variant.positional()[1:])
                    sigs[variant.head] = Signature(inputs, sort, constructor=True)
        elif head in ("function", "constructor"):
            sigs[str(form[1])] = Signature(
                tuple(str(x) for x in form[2].items), str(form[3]), constructor=head == "constructor"
            )
        elif head == "relation":
            sigs[str(form[1])] = Signature(tuple(str(x) for x in form[2].items), "Unit")
    return sigs


@lru_cache(maxsize=1)
def language_signatures() -> dict[str, Signature]:
    return signatures(language_file().forms)


def constructors(sort: str) -> tuple[str, ...]:
    """The constructors of `sort` in language.egg, in the order declared."""
    return tuple(name for name, s in language_signatures().items() if s.constructor and s.output == sort)


def _location(path: Path, line: int) -> str:
    return f"{path}:{line}"


def read_rule_file(path: Path, language: bool = False, text: str | None = None) -> RuleFile:
    """Read one rule file and check its conventions (egglog checks the rest when loading).
    `language`: the language file, which also holds facts (`set`, relation facts)."""
    if text is None:
        try:
            text = read_text(str(path), MAX_RULE_FILE_BYTES, "rule files")
        except OSError as error:
            raise RuleError(f"{path}: cannot read rule file ({error.strerror or error})") from None
        except Error as error:
            raise RuleError(str(error)) from None
    try:
        forms = tuple(sexpr.read(text, str(path)))
    except ParseError as error:
        raise RuleError(str(error)) from None
    for form in forms:
        head = form.head
        if head in RULE_HEADS:
            ruleset = form.option("ruleset")
            if ruleset is None:
                raise RuleError(
                    f"{_location(path, form.line)}: {head} without ':ruleset NAME' would never run "
                    f"(rulesets: {', '.join(RULESETS)})"
                )
            if str(ruleset) not in RULESETS:
                raise RuleError(
                    f"{_location(path, form.line)}: unknown ruleset '{ruleset}' (rulesets: {', '.join(RULESETS)})"
                )
            if not rule_name(form):
                raise RuleError(
                    f"{_location(path, form.line)}: {head} without ':name \"NAME\"' "
                    f"(tests and 'xegen rules check' cite rules by name)"
                )
        elif head not in OTHER_HEADS and not language:
            raise RuleError(
                f"{_location(path, form.line)}: a rule file holds rules (rewrite, birewrite, rule) "
                f"and declarations, not '{head}'"
            )
    if not language:
        _check_arities(path, forms, {**language_signatures(), **signatures(forms)})
    rule_file = RuleFile(path, text, forms)
    check_unique_names([rule_file])
    return rule_file


def _check_arities(path: Path, forms: Sequence[sexpr.SList], sigs: dict[str, Signature]) -> None:
    """Every application of a declared constructor, function or relation has as many arguments
    as its declaration (egglog refuses the file otherwise, but the rule checker reads rules
    without egglog).  An explicit stack: rule terms may nest deeply."""
    pending = [item for form in reversed(forms) if form.head in RULE_HEADS for item in reversed(form.items)]
    while pending:  # (in file order: the first mistake is reported)
        item = pending.pop()
        if not isinstance(item, sexpr.SList):
            continue
        sig = sigs.get(item.head) if item.head else None
        if sig is not None and len(item.items) - 1 != len(sig.inputs):
            raise RuleError(
                f"{_location(path, item.line)}: {item.head} takes {len(sig.inputs)} argument(s) "
                f"({' '.join(sig.inputs) or 'none'}), not {len(item.items) - 1}"
            )
        pending.extend(reversed(item.items))


def rule_files(paths: Iterable[Path | str]) -> list[Path]:
    """The .egg files named (directly or as directories), sorted by name within a directory."""
    found: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            # what p.glob("*.egg") lists, in a fifth of the time (every simplify call asks)
            found.extend(p / name for name in sorted(os.listdir(p)) if name.endswith(".egg"))
        elif p.is_file():
            found.append(p)
        else:
            raise RuleError(f"{p}: no such rule file or directory")
    return found


def load_rules(paths: Sequence[Path | str] | None = None, standalone: bool = False) -> RuleSet:
    """Read the rule files in `paths` (files or directories; default: the shipped `rules/`, and
    with `standalone` also `rules/standalone/`) and check that egglog accepts them.  Raises
    RuleError naming the file and line."""
    if paths is None:
        directory = default_rules_directory()
        if not directory.is_dir():
            raise RuleError(f"{directory}: the rule directory is missing (pass --rules DIR)")
        files, where = shipped_rule_files(standalone), str(directory)
    else:
        files, where = rule_files(paths), ", ".join(str(p) for p in paths)
    if not files:
        raise RuleError(f"no rule files (*.egg) in {where}")
    key = tuple(_file_key(p) for p in files)
    cached = _CACHE.get(key)
    if cached is None:  # reading the files again only when they change
        cached = _CACHE[key] = _checked(tuple(read_rule_file(p) for p in files))
    return cached


_CACHE: dict[tuple, RuleSet] = {}


def _file_key(path: Path) -> tuple[str, int, int]:
    """What identifies a rule file's contents between calls: its absolute path (a string
    operation: resolving links costs a system call per path component), mtime and size."""
    st = os.stat(path)
    return os.path.abspath(path), st.st_mtime_ns, st.st_size


def _checked(files: tuple[RuleFile, ...]) -> RuleSet:
    """The rule set, its names unique among the language's and the files' rules; egglog checks
    the rest when the engine loads the files (errors name the file)."""
    check_unique_names([language_file(), *files])
    return RuleSet(files)


def egglog_message(error, path: Path) -> str:
    """egglog says 'In 3:10-20 of FILE: text\\nmessage'; turn it into 'FILE:3: message'."""
    text = str(getattr(error, "context", error))
    first, _, rest = text.partition("\n")
    if first.startswith("In ") and " of " in first:
        where = first[3:].split(" of ", 1)[0]
        line = where.split(":", 1)[0]
        message = rest.strip().splitlines()[-1] if rest.strip() else first
        return f"{path}:{line}: {message}"
    return f"{path}: {text.strip()}"
