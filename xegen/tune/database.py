"""The tuning database: the best configuration found per problem, platform and compiler version.

SQLite, one file (`default_path()`: $XEGEN_TUNING_DB, else $XDG_CACHE_HOME/xegen/tuning.sqlite,
by default ~/.cache/xegen/tuning.sqlite).  One row per (canonical problem, platform, version):
`problem_key` is the problem as `xegen conv` prints it without the layer's name, `version_key`
is xegen's version and a digest of the rewrite rules (a change to either can change the
kernels, so entries of another version are kept but not used).

Writes are transactions (`BEGIN IMMEDIATE`: one writer at a time, the others wait up to
`BUSY_SECONDS`); a row is replaced only by one with fewer modeled cycles, so two tuners writing
one database keep the better result whatever their order.  `export_lines`/`import_lines` move
rows as JSON lines, one object per row, so a team can share what it tuned.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime
from pathlib import Path

from ..conv.problem import Problem
from ..egraph.rules import default_rules_directory, language_text, rule_files
from ..errors import Error
from ..version import __version__
from .paths import default_path  # noqa: F401 (its callers' name for it)

BUSY_SECONDS = 60.0  # how long a writer waits for another's transaction

SCHEMA = """
CREATE TABLE IF NOT EXISTS tuned (
    problem TEXT NOT NULL,
    platform TEXT NOT NULL,
    version TEXT NOT NULL,
    config TEXT NOT NULL,            -- JSON object: config key -> value
    modeled_cycles REAL NOT NULL,
    heuristic_config TEXT NOT NULL,  -- JSON object
    heuristic_cycles REAL,
    method TEXT NOT NULL,            -- exhaustive, evolutionary
    candidates INTEGER NOT NULL,     -- configurations compiled and modeled
    space INTEGER NOT NULL,          -- configurations the space held
    seed INTEGER NOT NULL,
    verified_on TEXT NOT NULL,       -- the reduced problem the winner ran on in the simulator
    found_at TEXT NOT NULL,          -- UTC, ISO 8601
    PRIMARY KEY (problem, platform, version)
)
"""


@dataclass(frozen=True)
class Entry:
    problem: str
    platform: str
    version: str
    config: dict
    modeled_cycles: float
    heuristic_config: dict
    heuristic_cycles: float | None
    method: str
    candidates: int
    space: int
    seed: int
    verified_on: str
    found_at: str

    @property
    def gain(self) -> float | None:
        """The heuristic's modeled cycles over the tuned ones (> 1: the tuned kernel is faster)."""
        return self.heuristic_cycles / self.modeled_cycles if self.heuristic_cycles else None

    def as_json(self) -> dict:
        return asdict(self)


COLUMNS = tuple(f.name for f in fields(Entry))
JSON_COLUMNS = ("config", "heuristic_config")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def problem_key(problem: Problem) -> str:
    """The problem as `xegen conv` prints it, without the layer's name (which changes no kernel)."""
    return str(problem.with_desc(replace(problem.desc, name="")))


def rules_digest() -> str:
    """A digest of the language and the shipped rule files (read as text, without loading egglog)."""
    h = hashlib.sha256(language_text().encode())
    for path in rule_files([default_rules_directory()]):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def version_key() -> str:
    return f"{__version__}+rules.{rules_digest()}"


class Database:
    """One tuning database file.  `Database(path)` creates it (and its directory) for writing;
    `Database.existing(path)` opens one for lookups, or gives None when there is none."""

    def __init__(self, path: str | Path, create: bool = True):
        self.path = Path(path)
        if self.path.is_dir():
            raise Error(f"--db {path}: is a directory, not a database file")
        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.connection = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None)
                self.connection.execute("PRAGMA journal_mode=WAL")
                self.connection.execute(SCHEMA)
            else:
                self.connection = sqlite3.connect(
                    f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_SECONDS, isolation_level=None
                )
            self.connection.execute("SELECT count(*) FROM tuned").fetchone()
        except sqlite3.DatabaseError as error:
            raise Error(f"--db {path}: not a tuning database ({error})") from None

    @classmethod
    def existing(cls, path: str | Path) -> Database | None:
        return cls(path, create=False) if Path(path).is_file() else None

    def close(self) -> None:
        self.connection.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- writing -------------------------------------------------------------------------------
    def record(self, entries: Entry | Iterable[Entry]) -> int:
        """Store entries in one transaction; an entry replaces a row of the same problem, platform and
        version only if it models fewer cycles.  Returns how many rows changed."""
        entries = [entries] if isinstance(entries, Entry) else list(entries)
        placeholders = ", ".join("?" for _ in COLUMNS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[3:])
        statement = (
            f"INSERT INTO tuned ({', '.join(COLUMNS)}) VALUES ({placeholders}) "
            f"ON CONFLICT (problem, platform, version) DO UPDATE SET {updates} "
            f"WHERE excluded.modeled_cycles < tuned.modeled_cycles"
        )
        changed = 0
        cursor = self.connection.cursor()
        cursor.execute("BEGIN IMMEDIATE")
        try:
            for entry in entries:
                cursor.execute(statement, _row(entry))
                changed += cursor.rowcount
            cursor.execute("COMMIT")
        except BaseException:
            cursor.execute("ROLLBACK")
            raise
        return changed

    # -- reading -------------------------------------------------------------------------------
    def lookup(self, problem: Problem, platform: str, version: str | None = None) -> Entry | None:
        row = self.connection.execute(
            f"SELECT {', '.join(COLUMNS)} FROM tuned WHERE problem = ? AND platform = ? AND version = ?",
            (problem_key(problem), platform, version or version_key()),
        ).fetchone()
        return _entry(row) if row else None

    def entries(self) -> list[Entry]:
        rows = self.connection.execute(f"SELECT {', '.join(COLUMNS)} FROM tuned ORDER BY problem, platform, version")
        return [_entry(row) for row in rows]

    # -- JSON lines ----------------------------------------------------------------------------
    def export_lines(self) -> Iterator[str]:
        for entry in self.entries():
            yield json.dumps(entry.as_json(), sort_keys=True)

    def import_lines(self, lines: Iterable[str], source: str) -> tuple[int, int]:
        """Read JSON lines (blank lines skipped) and store them in one transaction; returns (rows
        read, rows that changed the database).  A bad line is an Error naming SOURCE:LINE, and
        nothing is stored."""
        entries = []
        for number, line in enumerate(lines, 1):
            if line.strip():
                entries.append(parse_entry(line, f"{source}:{number}"))
        return len(entries), self.record(entries)


def _row(entry: Entry) -> tuple:
    return tuple(
        json.dumps(getattr(entry, c), sort_keys=False) if c in JSON_COLUMNS else getattr(entry, c) for c in COLUMNS
    )


def _entry(row) -> Entry:
    values = dict(zip(COLUMNS, row, strict=True))
    for column in JSON_COLUMNS:
        values[column] = json.loads(values[column])
    return Entry(**values)


TYPES: dict[str, type | tuple[type, ...]] = {
    "problem": str,
    "platform": str,
    "version": str,
    "config": dict,
    "modeled_cycles": (int, float),
    "heuristic_config": dict,
    "heuristic_cycles": (int, float, type(None)),
    "method": str,
    "candidates": int,
    "space": int,
    "seed": int,
    "verified_on": str,
    "found_at": str,
}


def parse_entry(line: str, where: str) -> Entry:
    """One exported row; an Error naming `where` if it is not one."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        raise Error(f"{where}: not JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(value, dict):
        raise Error(f"{where}: expected a JSON object with the fields {', '.join(COLUMNS)}")
    missing = [c for c in COLUMNS if c not in value]
    if missing:
        raise Error(f"{where}: missing field '{missing[0]}'")
    unknown = sorted(set(value) - set(COLUMNS))
    if unknown:
        raise Error(f"{where}: unknown field '{unknown[0]}'")
    for column, kind in TYPES.items():
        if not isinstance(value[column], kind) or isinstance(value[column], bool):
            raise Error(f"{where}: field '{column}' has the wrong type ({type(value[column]).__name__})")
    if value["modeled_cycles"] <= 0:
        raise Error(f"{where}: modeled_cycles must be positive")
    return Entry(**value)
