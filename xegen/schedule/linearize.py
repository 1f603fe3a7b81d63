"""Deterministic linearization of a dependence DAG: list scheduling with priorities.

One thread issues in order, one instruction per cycle.  Each step issues, among the nodes whose
predecessors have all issued, the one that can start soonest (its operands ready after the
edge latencies, its unit free); ties go to the higher priority (the longest latency path to
the end: loads early, multiplies as soon as their data arrive), then to the earlier position in
program order.  The result is a topological order, so every dependence is kept.
"""

from __future__ import annotations

from typing import Hashable, Mapping, Sequence

from .costs import Cost

# A DAG as adjacency lists: node -> [(successor, latency)], every node a key.  (The dependence
# graph is a networkx DiGraph; its instances in an unrolled block are many, and plain lists keep
# their scheduling fast.)
Successors = Mapping[Hashable, list[tuple[Hashable, int]]]


def heights(successors: Successors, costs: Mapping[Hashable, Cost], order: Sequence[Hashable]) -> dict[Hashable, int]:
    """Longest latency path from each node to the end (its own latency included); `order` is
    any topological order."""
    result: dict[Hashable, int] = {}
    for node in reversed(order):
        best = costs[node].latency
        for succ, latency in successors[node]:
            best = max(best, latency + result[succ])
        result[node] = best
    return result


def list_schedule(successors: Successors, costs: Mapping[Hashable, Cost], priority: Mapping[Hashable, int],
                  position: Mapping[Hashable, tuple]) -> list[Hashable]:
    """A topological order of the DAG by in-order list scheduling."""
    waiting = {node: 0 for node in successors}
    for node in successors:
        for succ, _ in successors[node]:
            waiting[succ] += 1
    ready_at = {node: 0 for node in successors}
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
        for succ, latency in successors[best]:
            ready_at[succ] = max(ready_at[succ], issued + latency)
            waiting[succ] -= 1
            if waiting[succ] == 0:
                candidates.append(succ)
    if len(order) != len(successors):
        raise ValueError("the dependence graph has a cycle")  # a scheduler bug, not a user error
    return order


def program_order(nodes: Sequence[Hashable]) -> dict[Hashable, tuple]:
    return {node: (i,) for i, node in enumerate(nodes)}
