"""A directed graph with node, edge and graph attributes: what the scheduler used of networkx.

networkx takes about 0.1 s to import (it loads every algorithm it ships), as long as scheduling
a layer's loop takes; the dependence graphs need only the container.  `DiGraph` keeps
networkx's interface for what `graph.py` and the transforms call, and its orders, which the
linearization inherits: nodes in the order added, each node's successors and predecessors in
the order their edges were added, and `copy` adding the edges source by source (so a copy lists
a node's predecessors in node order), as `networkx.DiGraph.copy` does.

An edge's attributes are one dict, shared by its source's successors and its target's
predecessors: `graph.edges[u, v]`, `graph.get_edge_data(u, v)`, `graph.pred[v][u]` are the same
object, and `add_edge` on an edge that exists updates it in place.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

Node = int  # the scheduler's nodes are statement and let ids
Attributes = dict[str, Any]


class NodeView(Mapping):
    """`graph.nodes`: iterate the nodes, `graph.nodes[n]` is n's attributes, and
    `graph.nodes(data=True)` yields (n, attributes)."""

    def __init__(self, nodes: dict[Node, Attributes]):
        self._nodes = nodes

    def __getitem__(self, n: Node) -> Attributes:
        return self._nodes[n]

    def __iter__(self) -> Iterator[Node]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, n: object) -> bool:
        return n in self._nodes

    def __call__(self, data: bool = False) -> Iterable:
        return list(self._nodes.items()) if data else list(self._nodes)


class EdgeView:
    """`graph.edges`: iterate (u, v) in the order of the sources, then of their successors;
    `graph.edges[u, v]` is the edge's attributes, and `graph.edges(data=True)` yields (u, v, attributes)."""

    def __init__(self, succ: dict[Node, dict[Node, Attributes]]):
        self._succ = succ

    def __getitem__(self, edge: tuple[Node, Node]) -> Attributes:
        u, v = edge
        return self._succ[u][v]

    def __iter__(self) -> Iterator[tuple[Node, Node]]:
        return ((u, v) for u, targets in self._succ.items() for v in targets)

    def __len__(self) -> int:
        return sum(len(targets) for targets in self._succ.values())

    def __contains__(self, edge: object) -> bool:
        if not isinstance(edge, tuple) or len(edge) != 2:
            return False
        u, v = edge
        return u in self._succ and v in self._succ[u]

    def __call__(self, data: bool = False) -> list:
        if data:
            return [(u, v, d) for u, targets in self._succ.items() for v, d in targets.items()]
        return list(self)


class AdjacencyView(Mapping):
    """`graph.pred` and `graph.succ`: node -> its neighbours -> the edge's attributes (read-only)."""

    def __init__(self, adjacency: dict[Node, dict[Node, Attributes]]):
        self._adjacency = adjacency

    def __getitem__(self, n: Node) -> Mapping[Node, Attributes]:
        return MappingProxyType(self._adjacency[n])

    def __iter__(self) -> Iterator[Node]:
        return iter(self._adjacency)

    def __len__(self) -> int:
        return len(self._adjacency)


class DiGraph:
    """A directed graph without parallel edges (see the module docstring)."""

    def __init__(self, **attributes: Any):
        self.graph: dict[str, Any] = dict(attributes)
        self._node: dict[Node, Attributes] = {}
        self._succ: dict[Node, dict[Node, Attributes]] = {}
        self._pred: dict[Node, dict[Node, Attributes]] = {}

    # nodes
    def add_node(self, n: Node, **attributes: Any) -> None:
        if n not in self._node:
            self._succ[n], self._pred[n], self._node[n] = {}, {}, {}
        self._node[n].update(attributes)

    def add_nodes_from(self, nodes: Iterable[Node | tuple[Node, Attributes]]) -> None:
        for entry in nodes:
            if isinstance(entry, tuple):
                self.add_node(entry[0], **entry[1])
            else:
                self.add_node(entry)

    @property
    def nodes(self) -> NodeView:
        return NodeView(self._node)

    def __iter__(self) -> Iterator[Node]:
        return iter(self._node)

    def __len__(self) -> int:
        return len(self._node)

    def __contains__(self, n: object) -> bool:
        return n in self._node

    # edges
    def add_edge(self, u: Node, v: Node, **attributes: Any) -> None:
        for n in (u, v):
            if n not in self._node:
                self.add_node(n)
        data = self._succ[u].get(v, {})
        data.update(attributes)
        self._succ[u][v] = data
        self._pred[v][u] = data

    def add_edges_from(self, edges: Iterable[tuple]) -> None:
        for edge in edges:
            self.add_edge(edge[0], edge[1], **(edge[2] if len(edge) > 2 else {}))

    def remove_edge(self, u: Node, v: Node) -> None:
        if not self.has_edge(u, v):
            raise KeyError(f"no edge {u} -> {v}")
        del self._succ[u][v]
        del self._pred[v][u]

    def remove_edges_from(self, edges: Iterable[tuple]) -> None:
        for u, v, *_ in edges:
            if self.has_edge(u, v):
                self.remove_edge(u, v)

    def has_edge(self, u: Node, v: Node) -> bool:
        return u in self._succ and v in self._succ[u]

    def get_edge_data(self, u: Node, v: Node, default: Attributes | None = None) -> Attributes | None:
        targets = self._succ.get(u)
        return targets.get(v, default) if targets is not None else default

    @property
    def edges(self) -> EdgeView:
        return EdgeView(self._succ)

    def number_of_edges(self) -> int:
        return len(self.edges)

    def in_edges(self, n: Node, data: bool = False) -> list[tuple]:
        return [(u, n, d) if data else (u, n) for u, d in self._pred[n].items()]

    def out_edges(self, n: Node, data: bool = False) -> list[tuple]:
        return [(n, v, d) if data else (n, v) for v, d in self._succ[n].items()]

    def predecessors(self, n: Node) -> Iterator[Node]:
        return iter(self._pred[n])

    def successors(self, n: Node) -> Iterator[Node]:
        return iter(self._succ[n])

    @property
    def pred(self) -> AdjacencyView:
        return AdjacencyView(self._pred)

    @property
    def succ(self) -> AdjacencyView:
        return AdjacencyView(self._succ)

    # whole graphs
    def copy(self) -> DiGraph:
        """A copy with its own attribute dicts (their values shared), built as networkx builds
        one: the nodes in order, then the edges source by source."""
        result = DiGraph(**self.graph)
        for n, attributes in self._node.items():
            result.add_node(n, **attributes)
        for u, targets in self._succ.items():
            for v, data in targets.items():
                result.add_edge(u, v, **data)
        return result
