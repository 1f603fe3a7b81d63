"""docs/python.md's worked session runs as written: every ```python block of the page, in order,
in one namespace, in a fresh directory (the session writes conv.zebin and absorb.egg)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "python.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def blocks(text: str) -> list[str]:
    return BLOCK.findall(text)


def test_the_page_has_the_session():
    found = blocks(PAGE.read_text())
    assert len(found) >= 10
    joined = "\n".join(found)
    for step in (
        "xegen.compile(",
        ".summary",
        ".ir_after(",
        ".run(",
        "xegen.rules.load(",
        "xegen.simplify(",
        "xegen.extract_compare(",
        "run_on_device(",
        "device_less.accept(",
    ):
        assert step in joined, step


def test_every_example_runs(tmp_path, monkeypatch, neo):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "docs_python"}
    printed = io.StringIO()
    for number, block in enumerate(blocks(PAGE.read_text()), 1):
        with contextlib.redirect_stdout(printed):
            exec(compile(block, f"docs/python.md block {number}", "exec"), namespace)
    assert (tmp_path / "conv.zebin").is_file() and (tmp_path / "absorb.egg").is_file()
    assert "and-absorbs-or sound" in printed.getvalue()
    assert namespace["accepted"].ok  # the runtime block ran: NEO is installed (the neo fixture)
