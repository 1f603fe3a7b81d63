"""The repository is self-contained for its readers: no file points into the folder of notes the
project was started from (the `shared` directory beside the checkout), every Markdown page a file
names exists here, and every link to a section of a page names one of its headings."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"(?:\.\.|/work)/shared\b")  # spelled so that this file does not match itself
MARKDOWN_NAME = re.compile(r"[\w./-]*\w\.md\b")
LINK = re.compile(r"\]\(([\w./-]*)#([\w-]+)\)")


def repository_files() -> list[Path]:
    """The files git tracks; in a tree without git, every file outside caches and environments."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        names = [ROOT / name for name in listed.decode().split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        names = [
            p
            for p in ROOT.rglob("*")
            if not any(
                part.startswith(".") or part.endswith(".egg-info") or part == "__pycache__"
                for part in p.relative_to(ROOT).parts
            )
        ]
    return sorted(p for p in names if p.is_file())


def texts() -> dict[Path, str]:
    result = {}
    for path in repository_files():
        try:
            result[path] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary data
    return result


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: str) -> set[str]:
    return {slug(line.lstrip("#")) for line in page.splitlines() if line.startswith("#")}


def test_nothing_points_outside_the_repository():
    found = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
        for path, text in texts().items()
        for m in OUTSIDE.finditer(text)
    ]
    assert found == [], "pointers outside the repository (write the facts into docs/):\n" + "\n".join(found)


def test_every_markdown_page_named_exists():
    files = texts()
    pages = {p for p in files if p.suffix == ".md"}
    names = {p.name for p in pages}
    missing = []
    for path, text in files.items():
        for m in MARKDOWN_NAME.finditer(text):
            name = m.group(0)
            if "/" in name:
                ok = any((base / name).resolve() in pages for base in (ROOT, path.parent))
            else:
                ok = name in names
            if not ok:
                missing.append(f"{path.relative_to(ROOT)}: {name}")
    assert missing == []


def test_every_section_link_names_a_heading():
    files = texts()
    broken = []
    for path, text in files.items():
        if path.suffix != ".md":
            continue
        for m in LINK.finditer(text):
            target = (path.parent / m.group(1)).resolve() if m.group(1) else path
            if m.group(2) not in anchors(files.get(target, "")):
                broken.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert broken == []
