"""Deterministic linearization of a dependence DAG: list scheduling with priorities.

One thread issues in order, one instruction per cycle.  Each step issues, among the nodes whose
predecessors have all issued, the one that can start soonest (its operands ready after the
edge latencies, its unit free); ties go to the higher priority (the longest latency path to
the end: loads early, multiplies as soon as their data arrive), then to the earlier position in
program order.  The result is a topological order, so every dependence is kept.
"""

from __future__ import annotations

from typing import Hashable, Mapping, Sequence

import networkx as nx

from .costs import Cost


def heights(dag: nx.DiGraph, costs: Mapping[Hashable, Cost]) -> dict[Hashable, int]:
    """Longest latency path from each node to the end (its own latency included)."""
    result: dict[Hashable, int] = {}
    for node in reversed(list(nx.topological_sort(dag))):
        best = costs[node].latency
        for succ in dag.successors(node):
            best = max(best, dag.edges[node, succ]["latency"] + result[succ])
        result[node] = best
    return result


def list_schedule(dag: nx.DiGraph, costs: Mapping[Hashable, Cost], priority: Mapping[Hashable, int],
                  position: Mapping[Hashable, tuple]) -> list[Hashable]:
    """A topological order of `dag` (edges carry `latency`) by in-order list scheduling."""
    waiting = {node: dag.in_degree(node) for node in dag.nodes}
    ready_at = {node: 0 for node in dag.nodes}
    candidates = sorted((n for n, d in waiting.items() if d == 0), key=lambda n: position[n])
    unit_free: dict[str, int] = {}
    time = 0
    order: list[Hashable] = []

    def start(node) -> int:
        return max(time, ready_at[node], unit_free.get(costs[node].unit, 0))

    while candidates:
        best = min(candidates, key=lambda n: (start(n), -priority[n], position[n]))
        candidates.remove(best)
        issued = start(best)
        order.append(best)
        time = issued + 1
        cost = costs[best]
        unit_free[cost.unit] = issued + cost.busy
        for succ in dag.successors(best):
            ready_at[succ] = max(ready_at[succ], issued + dag.edges[best, succ]["latency"])
            waiting[succ] -= 1
            if waiting[succ] == 0:
                candidates.append(succ)
    if len(order) != dag.number_of_nodes():
        raise ValueError("the dependence graph has a cycle")  # a scheduler bug, not a user error
    return order


def program_order(nodes: Sequence[Hashable]) -> dict[Hashable, tuple]:
    return {node: (i,) for i, node in enumerate(nodes)}
