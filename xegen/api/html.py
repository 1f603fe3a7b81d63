"""Small HTML tables for Jupyter's rich display (`_repr_html_`)."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape


def table(title: str, rows: Iterable[tuple[str, object]]) -> str:
    """A two-column table: a bold title row, then one row per (name, value)."""
    body = "".join(
        f"<tr><th style='text-align:left'>{escape(name)}</th><td style='text-align:left'>{escape(str(value))}</td></tr>"
        for name, value in rows
    )
    return f"<table><tr><th colspan='2' style='text-align:left'>{escape(title)}</th></tr>{body}</table>"
