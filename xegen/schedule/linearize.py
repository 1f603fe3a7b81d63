"""Deterministic linearization of a dependence DAG: list scheduling with priorities.

One thread issues in order, one instruction per cycle.  Each step issues, among the nodes whose
predecessors have all issued, the one that can start soonest (its operands ready after the
edge latencies, its unit free); ties go to the higher priority (the longest latency path to
the end: loads early, multiplies as soon as their data arrive), then to the earlier position in
program order.  The result is a topological order, so every dependence is kept.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Generic, TypeVar

from .costs import Cost

# A DAG as adjacency lists: node -> [(successor, latency)], every node a key.  (The dependence
# graph is a networkx DiGraph; its instances in an unrolled block are many, and plain lists keep
# their scheduling fast.)  Any hashable node type: statement ids, instances of an unrolled block.
DagNode = TypeVar("DagNode", bound=Hashable)
Successors = Mapping[DagNode, list[tuple[DagNode, int]]]


def heights(
    successors: Successors[DagNode], costs: Mapping[DagNode, Cost], order: Sequence[DagNode]
) -> dict[DagNode, int]:
    """Longest latency path from each node to the end (its own latency included); `order` is
    any topological order."""
    result: dict[DagNode, int] = {}
    for node in reversed(order):
        best = costs[node].latency
        for succ, latency in successors[node]:
            best = max(best, latency + result[succ])
        result[node] = best
    return result


class _InOrderIssue(Generic[DagNode]):
    """One thread issuing in order, one instruction per cycle: an instruction starts when the
    previous one has issued, its operands are ready (edge latencies) and its unit is free."""

    def __init__(
        self,
        successors: Successors[DagNode],
        costs: Mapping[DagNode, Cost],
        ready_at: Mapping[DagNode, int] | None = None,
    ):
        self.successors, self.costs = successors, costs
        self.time = 0
        self.ready_at = {node: (ready_at or {}).get(node, 0) for node in successors}
        self.issued_at: dict[DagNode, int] = {}
        self.unit_free: dict[str, int] = {}
        self.done = 0  # when the last result issued so far is ready

    def start(self, node: DagNode) -> int:
        return max(self.time, self.ready_at[node], self.unit_free.get(self.costs[node].unit, 0))

    def issue(self, node: DagNode) -> None:
        issued = self.start(node)
        cost = self.costs[node]
        self.issued_at[node] = issued
        self.time = issued + 1
        self.unit_free[cost.unit] = issued + cost.busy
        self.done = max(self.done, issued + cost.latency)
        for succ, latency in self.successors[node]:
            self.ready_at[succ] = max(self.ready_at[succ], issued + latency)


def list_schedule(
    successors: Successors[DagNode],
    costs: Mapping[DagNode, Cost],
    priority: Mapping[DagNode, int],
    position: Mapping[DagNode, tuple],
    ready_at: Mapping[DagNode, int] | None = None,
) -> list[DagNode]:
    """A topological order of the DAG by in-order list scheduling.  `ready_at`: the cycle (from
    the block's first issue) before which a node cannot start, for operands that code issued
    before the DAG produces (a load of an earlier block of a software pipeline)."""
    waiting = {node: 0 for node in successors}
    for node in successors:
        for succ, _ in successors[node]:
            waiting[succ] += 1
    candidates = sorted((n for n, d in waiting.items() if d == 0), key=lambda n: position[n])
    issue = _InOrderIssue(successors, costs, ready_at)
    order: list[DagNode] = []
    while candidates:
        best = min(candidates, key=lambda n: (issue.start(n), -priority[n], position[n]))
        candidates.remove(best)
        issue.issue(best)
        order.append(best)
        for succ, _ in successors[best]:
            waiting[succ] -= 1
            if waiting[succ] == 0:
                candidates.append(succ)
    if len(order) != len(successors):
        raise ValueError("the dependence graph has a cycle")  # a scheduler bug, not a user error
    return order


def issue_cycles(order: Sequence[DagNode], successors: Successors[DagNode], costs: Mapping[DagNode, Cost]) -> int:
    """Cycles until every result is ready when `order` (a topological order) issues in order."""
    return _replay(order, successors, costs).done


def issue_times(
    order: Sequence[DagNode],
    successors: Successors[DagNode],
    costs: Mapping[DagNode, Cost],
    ready_at: Mapping[DagNode, int] | None = None,
) -> tuple[dict[DagNode, int], int]:
    """The cycle each node of `order` issues at, and the cycle the next instruction could issue."""
    issue = _replay(order, successors, costs, ready_at)
    return issue.issued_at, issue.time


def _replay(
    order: Sequence[DagNode],
    successors: Successors[DagNode],
    costs: Mapping[DagNode, Cost],
    ready_at: Mapping[DagNode, int] | None = None,
) -> _InOrderIssue[DagNode]:
    issue = _InOrderIssue(successors, costs, ready_at)
    for node in order:
        issue.issue(node)
    return issue
