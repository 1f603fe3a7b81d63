"""The package's imports follow the layer order DEVELOPERS.md states ("Where things are").

Every import in xegen (module level, inside functions, under `if TYPE_CHECKING:`) is read from
the source with `ast`.  Each part of the package (a subpackage such as `xegen/ir/`, or a module such
as `xegen/hw.py`) has a row in the table, lower layers first, and its "may import" column names the
parts it may import (all of them rows above it).  The test fails on:

- an import of a part its row does not name (a back edge, or a shortcut across stages);
- a part of the package that has no row;
- an import cycle between modules (type-only imports under `if TYPE_CHECKING:` load nothing, so
  they may point back: a module may name in annotations a class that uses it);
- a private name (`_name`) imported from another module;
- an import inside a function without a comment saying why (the reason must be a heavy module
  loaded only when needed, not a cycle).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
EVERYTHING_ABOVE = "all of the above"


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, e.g. "xegen.lower.isel"
    target: str  # the imported module, e.g. "xegen.emit.instruction"
    names: tuple[str, ...]  # the names taken from it (`from target import names`)
    line: int
    where: str  # "module", "function" or "type" (under `if TYPE_CHECKING:`)
    commented: bool  # a comment on its line or on the line above


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(root: Path, package: str = "xegen") -> tuple[set[str], list[Import]]:
    """Every module of `package` under `root`, and every import of one of them."""
    paths = {module_name(p, root): p for p in sorted((root / package).rglob("*.py"))}
    found = [i for module, path in paths.items() for i in module_imports(module, path, paths)]
    return set(paths), found


def module_imports(module: str, path: Path, paths) -> list[Import]:
    """The imports of one module of the package."""
    text = path.read_text()
    lines = text.split("\n")
    base = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = "function"
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                inner = "type"
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                commented = "#" in lines[child.lineno - 1] or lines[child.lineno - 2].strip().startswith("#")
                for target, names in targets(child, base, paths):
                    found.append(Import(module, target, names, child.lineno, inner, commented))
            visit(child, inner)

    visit(ast.parse(text), "module")
    return found


def targets(node: ast.Import | ast.ImportFrom, base: str, modules) -> list[tuple[str, tuple[str, ...]]]:
    """The package's modules an import statement loads, with the names it takes from each."""
    if isinstance(node, ast.Import):
        return [(alias.name, ()) for alias in node.names if alias.name.partition(".")[0] == "xegen"]
    if node.level:
        parts = base.split(".")
        source = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    if source.partition(".")[0] != "xegen":
        return []
    result = []
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        result.append((submodule, ()) if submodule in modules else (source, (alias.name,)))
    return result


def part_of(module: str) -> str:
    """The part of the package a module belongs to: "ir" for xegen.ir.expr, "xegen" for the root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "xegen"


def layer_table(text: str) -> list[tuple[tuple[str, ...], tuple[str, ...] | None]]:
    """The rows of the "Where things are" table: (parts, the parts they may import; None for all
    the rows above)."""
    section = text.split("## Where things are", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        parts = tuple(
            part_of(
                module_name(ROOT / path.rstrip("/") / ("__init__.py" if path.endswith("/") else ""), ROOT)
                if path.endswith("/")
                else module_name(ROOT / path, ROOT)
            )
            for path in re.findall(r"`(xegen/[^`]*)`", cells[0])
        )
        if not parts:
            continue  # rows outside the package (rules/, bench/)
        allowed = cells[-1]
        rows.append(
            (
                parts,
                None
                if allowed == EVERYTHING_ABOVE
                else tuple(name.strip() for name in allowed.split(",") if name.strip() not in ("", "—")),
            )
        )
    return rows


def allowed_imports(rows) -> dict[str, set[str]]:
    """Part -> the parts it may import; every name a row gives must be a part of a row above it."""
    allowed: dict[str, set[str]] = {}
    for parts, names in rows:
        above = set(allowed)
        if names is not None:
            unknown = set(names) - above
            assert not unknown, f"{', '.join(parts)} may import {', '.join(sorted(unknown))}, not a row above it"
        for part in parts:
            allowed[part] = above if names is None else set(names)
    return allowed


def violations(modules: set[str], found: list[Import], allowed: dict[str, set[str]]) -> list[str]:
    problems = []
    for part in sorted({part_of(m) for m in modules} - set(allowed)):
        problems.append(f"{'xegen' if part == 'xegen' else 'xegen.' + part} has no row in DEVELOPERS.md's layer table")
    for imp in found:
        source, target = part_of(imp.module), part_of(imp.target)
        if source != target and source in allowed and target not in allowed[source]:
            problems.append(
                f"{imp.module}:{imp.line} imports {imp.target}: {source} may import only "
                f"{', '.join(sorted(allowed[source])) or 'nothing'}"
            )
        if imp.target != imp.module:
            private = [n for n in imp.names if n.startswith("_") and not n.startswith("__")]
            if private:
                problems.append(f"{imp.module}:{imp.line} imports the private {', '.join(private)} from {imp.target}")
        if imp.where == "function" and not imp.commented:
            problems.append(
                f"{imp.module}:{imp.line} imports {imp.target} inside a function without a comment saying why"
            )
    graph = nx.DiGraph((imp.module, imp.target) for imp in found if imp.where != "type" and imp.module != imp.target)
    for cycle in sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1):
        problems.append(f"import cycle: {', '.join(cycle)}")
    return problems


def test_the_package_follows_the_documented_layer_order():
    rows = layer_table((ROOT / "DEVELOPERS.md").read_text())
    assert len(rows) > 10
    modules, found = imports(ROOT)
    problems = violations(modules, found, allowed_imports(rows))
    assert not problems, "\n" + "\n".join(problems)


FAKE_TABLE = """
## Where things are

| path | job | may import |
|---|---|---|
| `xegen/errors.py` | errors | — |
| `xegen/__init__.py` | the package | errors |
| `xegen/low/` | the bottom | errors |
| `xegen/high.py` | the top | low, errors |
"""


def fake_package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in {"xegen/__init__.py": "", "xegen/errors.py": "", **files}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def check(root: Path) -> list[str]:
    modules, found = imports(root)
    return violations(modules, found, allowed_imports(layer_table(FAKE_TABLE)))


def test_the_check_finds_back_edges_cycles_private_names_and_silent_function_imports(tmp_path):
    root = fake_package(
        tmp_path,
        {
            "xegen/low/__init__.py": "",
            "xegen/low/a.py": "from . import b\nfrom ..high import run  # a back edge\n",
            "xegen/low/b.py": "def f():\n    from .a import _helper\n",
            "xegen/high.py": "from .low.a import value\n\ndef g():\n    # numpy is heavy\n    from .low import b\n",
        },
    )
    problems = check(root)
    assert [p for p in problems if "high" in p and "may import only" in p] == [
        "xegen.low.a:2 imports xegen.high: low may import only errors"
    ]
    assert "xegen.low.b:2 imports the private _helper from xegen.low.a" in problems
    assert "xegen.low.b:2 imports xegen.low.a inside a function without a comment saying why" in problems
    assert "import cycle: xegen.high, xegen.low.a, xegen.low.b" in problems  # b's import in a function counts
    assert not any(p.startswith("xegen.high:") for p in problems)  # commented, and allowed


def test_the_check_passes_a_package_that_follows_its_table_and_flags_a_missing_row(tmp_path):
    root = fake_package(
        tmp_path,
        {
            "xegen/low/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n",
            "xegen/low/a.py": "from .. import errors\nfrom . import b\n",
            "xegen/low/b.py": "",
            "xegen/high.py": "import xegen.low.a\nfrom xegen.low import b\n",
        },
    )
    assert check(root) == []
    (root / "xegen" / "extra.py").write_text("")
    assert check(root) == ["xegen.extra has no row in DEVELOPERS.md's layer table"]
