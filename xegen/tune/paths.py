"""Where the tuning database is by default (a module of its own: `xegen conv` looks for the
database to key its kernel cache without importing the database's code)."""

from __future__ import annotations

import os
from pathlib import Path

from ..cache import cache_home


def default_path() -> Path:
    """$XEGEN_TUNING_DB, else $XDG_CACHE_HOME/xegen/tuning.sqlite (~/.cache/xegen/tuning.sqlite)."""
    given = os.environ.get("XEGEN_TUNING_DB")
    return Path(given) if given else cache_home() / "tuning.sqlite"
