"""Verdicts remembered between runs of `xegen rules check`, outside the repository.

A verdict is stored under a key made of everything it depends on: the rule's text and comment,
the definitions of the named guards it asks for, the signatures it is read with, the number of
samples, and the checker's version (the source of this package and of the IR interpreter, the
term language, and the z3 and hypothesis versions), so editing a rule, a guard, the checker or
the interpreter invalidates it.  Each entry names its rule.  Only final verdicts are kept
(`sound`, `unsound`): an `unproven` rule is tried again.  The cache lives in
$XDG_CACHE_HOME/xegen/rules-check (default ~/.cache/xegen/rules-check), one small JSON file per
verdict; if it cannot be read or written, the checker works without it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

import z3

from ..rules import language_text
from .model import Rule, Signature

#: the verdicts worth remembering (the others are cheap, or may change with more time)
KEPT = ("sound", "unsound")
FIELDS = ("verdict", "instances", "counterexample", "detail", "types")


def default_directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "xegen" / "rules-check"


@functools.cache
def checker_version() -> str:
    import hypothesis  # seconds to import: only when a cache is consulted

    digest = hashlib.sha256()
    checker, interpreter = Path(__file__).parent, Path(__file__).parents[2] / "ir"  # the samples' semantics
    for path in sorted([*checker.glob("*.py"), *interpreter.glob("*.py")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(language_text().encode())
    digest.update(f"z3 {z3.get_version_string()} hypothesis {hypothesis.__version__}".encode())
    return digest.hexdigest()


class VerdictCache:
    def __init__(self, directory: Path | str | None = None):
        self.directory = Path(directory) if directory is not None else default_directory()

    def key(self, rule: Rule, signatures: dict[str, Signature], examples: int) -> str:
        text = json.dumps(
            {
                "checker": checker_version(),
                "rule": rule.text,
                "kind": rule.kind,
                "comment": bool(rule.comment.strip()),
                "guards": rule.guard_text,
                "signatures": sorted((name, list(s.inputs), s.output) for name, s in signatures.items()),
                "examples": examples,
            }
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, key: str) -> dict | None:
        try:
            entry = json.loads((self.directory / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("verdict") not in KEPT:
            return None
        return {k: entry[k] for k in FIELDS if k in entry}

    def put(self, key: str, verdict) -> None:
        """Remember a RuleVerdict (if final)."""
        if verdict.verdict not in KEPT:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=self.directory, suffix=".tmp", delete=False) as f:
                json.dump({"rule": verdict.rule.name, **{k: getattr(verdict, k) for k in FIELDS}}, f)
            os.replace(f.name, self.directory / f"{key}.json")  # whole or not at all
        except OSError:
            pass  # a cache that cannot be written only costs time
