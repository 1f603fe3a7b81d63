"""The kernel cache: compiled kernels kept on disk between runs, as NEO's cl_cache keeps programs.

An entry is one file, `<key>.kernel`, holding a compiled kernel's zebin and the summary data
its command printed, so that a hit writes the same bytes and prints the same summary without
compiling.  The key is a SHA-256 over everything the kernel depends on: what the caller names
(the problem, the configuration, the platform, the options that change the bytes or the
summary) and what this module adds, xegen's version, a digest of its source (`code_digest`),
a digest of the rule files (`rules_digest`) and the installed versions of egglog, networkx and
numpy, so that editing the compiler or a rule, or upgrading one of those, misses every old entry.

Writers write a temporary file in the cache directory and rename it over the entry (atomic on
POSIX), so a reader sees a whole entry or none, and concurrent writers of one key leave one of
their (identical) entries.  An entry that does not read back whole (magic, key, digest of its
contents) is a miss and is removed.  The directory is bounded (`max_bytes`): after a write, the
least recently used entries (a hit refreshes an entry's modification time) are removed until the
rest fit.  The cache is an optimization: a directory that cannot be read or written makes every
lookup a miss, never an error.

Where: `--cache-dir`, else $XEGEN_CACHE_DIR, else $XDG_CACHE_HOME/xegen/kernels (by default
~/.cache/xegen/kernels).  This module imports nothing of the compiler, so that a hit costs only
the start of the process.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .version import __version__

ENVIRONMENT = "XEGEN_CACHE_DIR"
MAX_BYTES = 256 * 1024 * 1024  # a resnet_50 kernel is 10-100 KB: thousands of kernels
MAGIC = b"xegen kernel cache 1\n"
SUFFIX = ".kernel"
STALE_TEMPORARY_SECONDS = 3600  # a temporary file this old belongs to a writer that died
PACKAGE = Path(__file__).resolve().parent


def cache_home() -> Path:
    """$XDG_CACHE_HOME/xegen, by default ~/.cache/xegen: where xegen keeps what it remembers."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "xegen"


def default_directory() -> Path:
    given = os.environ.get(ENVIRONMENT)
    return Path(given) if given else cache_home() / "kernels"


def tree_digest(root: Path, suffixes: tuple[str, ...]) -> str:
    """SHA-256 over the files under `root` whose names end in `suffixes`: relative path and
    content, in path order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in suffixes and "__pycache__" not in p.parts):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def code_digest() -> str:
    """xegen's source and data files (~2 MB, ~15 ms): a changed compiler is another compiler."""
    return tree_digest(PACKAGE, (".py", ".egg"))


@functools.cache
def rules_digest() -> str:
    """The shipped rule files and the term language (egraph/language.egg)."""
    return hashlib.sha256(
        (tree_digest(PACKAGE / "rules", (".egg",)) + tree_digest(PACKAGE / "egraph", (".egg",))).encode()
    ).hexdigest()


#: the packages whose algorithms shape the kernel (extraction, graph orders, arithmetic)
DEPENDENCIES = ("egglog", "networkx", "numpy")


@functools.cache
def dependency_versions() -> tuple[str, ...]:
    """The installed distributions of DEPENDENCIES, as their metadata folders name them
    (`egglog-13.2.0.dist-info`), found beside each package without importing it:
    importlib.metadata would cost more than the rest of a hit."""
    found = []
    for name in DEPENDENCIES:
        spec = importlib.util.find_spec(name)
        folders = list(spec.submodule_search_locations or []) if spec else []
        for folder in folders:
            parent = Path(folder).parent
            found += sorted(p.name for p in parent.glob(f"{name}-*.*-info"))
        if not folders:
            found.append(f"{name} not installed")
    return tuple(found)


def make_key(fields: dict) -> str:
    """The key of a kernel named by `fields` (JSON values) under this xegen, its rules and the
    versions of the packages it computes with."""
    text = json.dumps(
        {
            "fields": fields,
            "version": __version__,
            "code": code_digest(),
            "rules": rules_digest(),
            "dependencies": dependency_versions(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Hit:
    """A kernel found in the cache: its zebin and the data stored with it."""

    zebin: bytes
    data: dict


class KernelCache:
    """One cache directory (created on the first write)."""

    def __init__(self, directory: str | Path | None = None, max_bytes: int = MAX_BYTES):
        self.directory = Path(directory) if directory is not None else default_directory()
        self.max_bytes = max_bytes

    def path(self, key: str) -> Path:
        return self.directory / f"{key}{SUFFIX}"

    def get(self, key: str) -> Hit | None:
        path = self.path(key)
        try:
            content = path.read_bytes()
        except OSError:
            return None
        hit = _decode(content, key)
        if hit is None:  # torn by something other than our writers (a full disk, an edit): drop it
            _remove(path)
            return None
        try:
            os.utime(path)  # recently used: evicted last
        except OSError:
            pass
        return hit

    def put(self, key: str, zebin: bytes, data: dict) -> None:
        """Store an entry (whole, by renaming a finished temporary file), then keep the bound."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(handle, "wb") as f:
                    f.write(_encode(key, zebin, data))
                os.replace(temporary, self.path(key))
            except BaseException:
                _remove(Path(temporary))
                raise
            self.evict()
        except OSError:
            return  # a cache that cannot be written is no cache, not an error

    def evict(self) -> None:
        """Remove least recently used entries until the rest fit in `max_bytes` (and temporary
        files that writers left behind)."""
        entries = []
        now = time.time()
        for path in self.directory.iterdir():
            try:
                status = path.stat()
            except OSError:  # removed meanwhile by another process
                continue
            if path.name.endswith(".tmp"):
                if now - status.st_mtime > STALE_TEMPORARY_SECONDS:
                    _remove(path)
            elif path.suffix == SUFFIX:
                entries.append((status.st_mtime_ns, path.name, status.st_size, path))
        total = sum(size for _, _, size, _ in entries)
        for _, _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            _remove(path)
            total -= size


def _encode(key: str, zebin: bytes, data: dict) -> bytes:
    header = json.dumps(
        {"key": key, "zebin_bytes": len(zebin), "zebin_sha256": hashlib.sha256(zebin).hexdigest(), "data": data}
    )  # (keys in their order: --json prints the summary's)
    return MAGIC + header.encode() + b"\n" + zebin


def _decode(content: bytes, key: str) -> Hit | None:
    """The entry in `content`, or None unless it is whole and belongs to `key`."""
    if not content.startswith(MAGIC):
        return None
    header, newline, zebin = content[len(MAGIC) :].partition(b"\n")
    try:
        fields = json.loads(header) if newline else None
    except ValueError:
        return None
    if (
        not isinstance(fields, dict)
        or fields.get("key") != key
        or fields.get("zebin_bytes") != len(zebin)
        or fields.get("zebin_sha256") != hashlib.sha256(zebin).hexdigest()
        or not isinstance(fields.get("data"), dict)
    ):
        return None
    return Hit(zebin, fields["data"])


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
