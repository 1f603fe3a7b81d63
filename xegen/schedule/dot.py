"""Pictures of dependence graphs: Graphviz DOT text, and SVG when Graphviz's `dot` is installed.

Nodes are coloured by label (loads blue, SLM green, multiplies orange, synchronization red,
headers grey) and show the statement's text; statements that run ahead of their iteration say
`+N`, and those that address a multi-buffered buffer which copies they rotate through.  Edges:
solid RAW, dashed WAR, dotted WAW, bold red SYNC, grey VAR (a let's use); loop-carried edges are
labelled with their iteration distance (in a pipelined graph, the distance between the kernel
iterations that run the two statements).  To stay readable (and drawable) a picture leaves out
what other edges imply: within an iteration only the transitive reduction is drawn, and of the
loop-carried edges those carrying data or synchronization (RAW, SYNC).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import networkx as nx

from ..errors import Error
from ..ir import format_expr, format_stmt

COLORS = {
    "g2r_load": "#9ecae1",
    "prefetch": "#deebf7",
    "g2s_store": "#a1d99b",
    "s2r_load": "#c7e9c0",
    "multiply": "#fdae6b",
    "reorder": "#fdd0a2",
    "grf_store": "#f0f0f0",
    "r2g_store": "#bcbddc",
    "barrier": "#fb6a4a",
    "signal": "#fc9272",
    "wait": "#fcbba1",
    "fence": "#fee0d2",
    "compound_sync": "#fb6a4a",
    "header": "#d9d9d9",
    "compound": "#ffffff",
}
STYLES = {"RAW": "solid", "WAR": "dashed", "WAW": "dotted", "SYNC": "bold", "VAR": "solid"}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\l") + '"'


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def node_text(data: dict) -> str:
    if data["kind"] == "let":
        return f"let {data['var'].name} = {_short(format_expr(data['value']))}"
    return _short(format_stmt(data["stmt"]))


def shown_edges(graph: nx.DiGraph) -> list[tuple]:
    """The edges a picture draws (see the module docstring), in id order."""
    same_iteration = nx.DiGraph()
    same_iteration.add_nodes_from(graph.nodes)
    same_iteration.add_edges_from((u, v) for u, v, d in graph.edges(data=True) if d["distance"] == 0 and u != v)
    kept = set(nx.transitive_reduction(same_iteration).edges)
    for u, v, data in graph.edges(data=True):
        if data["distance"] > 0 and ({"RAW", "SYNC"} & set(data["kinds"])):
            kept.add((u, v))
    return sorted(kept)


def to_dot(graph: nx.DiGraph, title: str = "") -> str:
    """The graph as DOT text (deterministic: nodes and edges in id order)."""
    lines = [
        "digraph schedule {",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontname="monospace", fontsize=10];',
        '  edge [fontname="monospace", fontsize=9];',
    ]
    if title:
        lines.append(f"  label={_quote(title)}; labelloc=t;")
    for node in sorted(graph.nodes):
        data = graph.nodes[node]
        what = data["label"]
        ahead = data.get("ahead", 0)
        head = f"{node}: {what}" + (f" (+{ahead})" if ahead else "")
        copies = graph.graph.get("copies", {})
        if data.get("rotates"):
            head += " rotates " + ", ".join(f"{name} x{copies[name]}" for name in data["rotates"])
        text = head + "\n" + node_text(data) + "\n"
        lines.append(f"  n{node} [label={_quote(text)}, fillcolor={_quote(COLORS.get(what, '#ffffff'))}];")
    for u, v in shown_edges(graph):
        data = graph.edges[u, v]
        kinds = data["kinds"]
        style = "bold" if "SYNC" in kinds else STYLES[kinds[0]]
        color = "#cb181d" if "SYNC" in kinds else "#969696" if "VAR" in kinds else "#252525"
        attributes = [f"style={style}", f"color={_quote(color)}"]
        distance = data["distance"]
        if graph.nodes[u]["kind"] == "stmt":  # in the pipelined loop
            distance += graph.nodes[u].get("ahead", 0) - graph.nodes[v].get("ahead", 0)
        label = "/".join(k for k in kinds if k != "VAR")
        if distance:
            label += f" d={distance}"
            attributes.append("constraint=false")
        if label:
            attributes.append(f"label={_quote(label)}")
        lines.append(f"  n{u} -> n{v} [{', '.join(attributes)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


class GraphDump:
    """Writes numbered DOT files (and SVG when `dot` is on PATH) into a directory."""

    def __init__(self, directory: str | Path, prefix: str = ""):
        self.directory = Path(directory)
        self.prefix = prefix
        self.step = 0
        self.written: list[Path] = []
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise Error(f"--dump-graph: cannot create directory '{directory}': {error.strerror}") from None

    def write(self, name: str, graph: nx.DiGraph, title: str = "") -> Path:
        stem = f"{self.prefix}{self.step:02d}-{name}"
        self.step += 1
        path = self.directory / f"{stem}.dot"
        path.write_text(to_dot(graph, title or stem), encoding="utf-8")
        self.written.append(path)
        svg = render_svg(path)
        if svg is not None:
            self.written.append(svg)
        return path

    def discard(self) -> None:
        """Remove the files written so far (a configuration given up: the next one's replace them)."""
        for path in self.written:
            path.unlink(missing_ok=True)
        self.written.clear()
        self.step = 0


def render_svg(dot_path: Path) -> Path | None:
    """Run Graphviz's dot on the file when it is installed; None when it is not."""
    tool = shutil.which("dot")
    if tool is None:
        return None
    svg = dot_path.with_suffix(".svg")
    result = subprocess.run([tool, "-Tsvg", str(dot_path), "-o", str(svg)], capture_output=True, text=True)
    if result.returncode != 0:
        raise Error(f"dot could not draw {dot_path}: {result.stderr.strip()}")
    return svg


def write_graph(dump: GraphDump | None, name: str, graph: nx.DiGraph, title: str) -> None:
    """`dump.write(...)` when there is a dump."""
    if dump is not None:
        dump.write(name, graph, title)
