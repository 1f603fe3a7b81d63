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
        self._draw(self.done, self.done + 1, item)

    def finished(self, done: int, total: int, item: str) -> None:
        """`done` of `total` items are finished, the last `item` (for work that finishes out of order)."""
        self.done, self.total = done, total
        self._draw(done, done, item)

    def _draw(self, filled_items: int, shown: int, item: str) -> None:
        if self.enabled:
            filled = WIDTH * min(filled_items, self.total) // max(1, self.total)
            bar = "#" * filled + "." * (WIDTH - filled)
            self.stream.write(f"\r\x1b[K[{bar}] {shown}/{self.total} {item[:60]}")
            self.stream.flush()

    def clear(self) -> None:
        """Erase the bar (before printing a result line, and at the end)."""
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
