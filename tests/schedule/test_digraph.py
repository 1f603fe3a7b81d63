"""The scheduler's DiGraph against networkx's: the same nodes, edges, attributes and orders after
any sequence of the edits the scheduler makes (the linearization inherits the orders)."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xegen.schedule.digraph import DiGraph

NODES = st.integers(0, 6)
EDITS = st.lists(
    st.one_of(
        st.tuples(st.just("add_node"), NODES, st.integers(0, 3)),
        st.tuples(st.just("add_edge"), NODES, NODES, st.integers(0, 3)),
        st.tuples(st.just("remove_edge"), NODES, NODES),
        st.tuples(st.just("copy")),
    ),
    max_size=40,
)


def apply(graph, edits):
    for edit in edits:
        if edit[0] == "add_node":
            graph.add_node(edit[1], label=edit[2])
        elif edit[0] == "add_edge":
            graph.add_edge(edit[1], edit[2], weight=edit[3])
        elif edit[0] == "remove_edge":
            if graph.has_edge(edit[1], edit[2]):
                graph.remove_edge(edit[1], edit[2])
        else:
            graph = graph.copy()
    return graph


def shape(graph):
    """Everything the scheduler reads, in the orders it reads it."""
    return (
        graph.graph,
        list(graph.nodes(data=True)),
        list(graph.edges(data=True)),
        list(graph.edges),
        [list(graph.predecessors(n)) for n in graph],
        [list(graph.pred[n]) for n in graph],
        [list(graph.in_edges(n, data=True)) for n in graph],
        [list(graph.out_edges(n, data=True)) for n in graph],
        [(u, v, graph.has_edge(u, v), graph.get_edge_data(u, v)) for u in range(7) for v in range(7)],
        len(graph),
        graph.number_of_edges(),
    )


@settings(max_examples=200, deadline=None)
@given(EDITS)
def test_edits_give_what_networkx_gives(edits):
    ours, theirs = apply(DiGraph(kind="test"), edits), apply(nx.DiGraph(kind="test"), edits)
    assert shape(ours) == shape(theirs)


def test_edge_attributes_are_one_dict_updated_in_place():
    graph = DiGraph()
    graph.add_edge(1, 2, a=1)
    data = graph.get_edge_data(1, 2)
    graph.add_edge(1, 2, b=2)
    assert data == {"a": 1, "b": 2} and graph.edges[1, 2] is data and graph.pred[2][1] is data
    copy = graph.copy()
    copy.edges[1, 2]["a"] = 5
    copy.nodes[1]["x"] = 1
    assert graph.edges[1, 2]["a"] == 1 and "x" not in graph.nodes[1]  # a copy has its own dicts


def test_removing_a_missing_edge_fails():
    graph = DiGraph()
    graph.add_node(1)
    with pytest.raises(KeyError):
        graph.remove_edge(1, 2)
