"""A one-line progress bar on standard error, for long batch runs (`xegen conv --batch`).

Drawn only when standard error is a terminal, so logs and pipes stay clean."""

from __future__ import annotations

import sys
from typing import TextIO

WIDTH = 24


class Progress:
    def __init__(self, total: int, enabled: bool = True, stream: TextIO | None = None):
        self.total = total
        self.done = -1
        self.stream = stream or sys.stderr
        self.enabled = enabled and self.stream.isatty()

    def start(self, item: str) -> None:
        """Item number done+1 begins."""
        self.done += 1
        if self.enabled:
            filled = WIDTH * self.done // max(1, self.total)
            bar = "#" * filled + "." * (WIDTH - filled)
            self.stream.write(f"\r\x1b[K[{bar}] {self.done + 1}/{self.total} {item[:60]}")
            self.stream.flush()

    def clear(self) -> None:
        """Erase the bar (before printing a result line, and at the end)."""
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
