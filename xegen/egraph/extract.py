"""Extraction: choosing one node per e-class so the roots cost least under a cost model.

- `tree`: egglog's own extractor with the platform cost model (optimal when nothing is shared).
- `dag`: greedy DAG extraction: a class's cost is the cost of the *set* of nodes below it, so a
  subexpression used twice is paid once (the "faster greedy DAG" idea of extraction-gym).
- `ilp`: exact DAG extraction as a 0/1 integer program (scipy.optimize.milp / HiGHS), for small
  e-graphs; it falls back to `dag` beyond its size or time budget and says so.

All three are deterministic: classes and nodes are visited in a fixed order and ties go to the
first node in that order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from .. import ir
from ..errors import Error
from ..ir.types import BOOL, Type
from .bindings import bindings
from .costs import INFINITE, CostModel, Operand
from .engine import EXPR_CONSTRUCTORS, Run
from .terms import CATEGORY, OPERATIONS, TY_ARGUMENTS, TY_TYPES, TermReader, build_node, constant_value

EXTRACTORS = ("tree", "dag", "ilp")


@dataclass(frozen=True)
class Node:
    """An e-node: constructor, Ty arguments, child classes, and its literal (Var name, Const
    bits, Opaque index) if it is a leaf."""

    op: str
    types: tuple[Type, ...]
    children: tuple[int, ...]
    literal: int | str | None = None
    subsumed: bool = False  # a rule replaced it: still equal, chosen only when nothing else is cheaper

    @property
    def type(self) -> Type | None:
        return self.types[0] if self.types else None


@dataclass
class Snapshot:
    """The e-graph's Expr classes after saturation, with dense class ids in a fixed order."""

    classes: list[list[Node]]
    roots: list[int]
    constant: dict[int, int] = field(default_factory=dict)  # class -> IR value of its Const
    class_type: dict[int, Type] = field(default_factory=dict)
    #: `node_costs` per cost model: the greedy extractor and `share_more` both price every node
    costs: dict[CostModel, list[list[int]]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def node_count(self) -> int:
        return sum(len(nodes) for nodes in self.classes)

    def operand(self, cls: int) -> Operand:
        return Operand(self.class_type[cls], self.constant.get(cls))

    @staticmethod
    def from_run(run: Run) -> Snapshot:
        graph = run.graph
        frozen = graph.freeze()
        functions = frozen.functions
        ty_of = {}
        for name, t in TY_TYPES.items():
            for row in functions[name].rows:
                ty_of[row.output] = t
        raw: dict = {}
        subsumed: dict = {}  # a class whose every node is subsumed keeps them (still equal, just not preferred)
        for op in EXPR_CONSTRUCTORS:
            function = functions.get(op)
            if function is None or op == "Wrap":
                continue
            n_types = TY_ARGUMENTS[op]
            for row in function.rows:
                inputs = row.inputs
                types = tuple(ty_of[v] for v in inputs[:n_types])
                rest = inputs[n_types:]
                literal = None
                if op in ("Var",):
                    literal, rest = graph.value_to_string(rest[0]), []
                elif op in ("Const", "Opaque"):
                    literal, rest = graph.value_to_i64(rest[0]), []
                (subsumed if row.subsumed else raw).setdefault(row.output, []).append((op, types, tuple(rest), literal))
        for value, nodes in subsumed.items():
            # subsumed nodes are still equal to their class, only not preferred: they come last
            # (a class can be left with nothing else, e.g. an overflowing Add of two constants)
            raw.setdefault(value, []).extend((op, types, rest, literal, True) for op, types, rest, literal in nodes)
        # drop nodes with a child class that has no extractable node, until nothing changes
        changed = True
        while changed:
            changed = False
            for value in list(raw):
                kept = [n for n in raw[value] if all(map(raw.__contains__, n[2]))]
                if len(kept) != len(raw[value]):
                    changed = True
                    if kept:
                        raw[value] = kept
                    else:
                        del raw[value]
        order = sorted(raw)  # egglog values are ordered: a fixed class order
        index = {value: i for i, value in enumerate(order)}
        classes: list[list[Node]] = []
        for value in order:
            nodes = [
                Node(op, types, tuple(map(index.__getitem__, rest)), literal, bool(extra))
                for op, types, rest, literal, *extra in raw[value]
            ]
            nodes.sort(key=_node_key)
            classes.append(nodes)
        snapshot = Snapshot(classes, [index[v] for v in run.root_values()])
        for cls, nodes in enumerate(classes):
            for node in nodes:
                if node.op == "Const":
                    assert isinstance(node.literal, int) and node.type is not None  # (Const Ty i64)
                    snapshot.constant[cls] = constant_value(node.literal, node.type)
        snapshot._infer_types()
        return snapshot

    def _infer_types(self) -> None:
        """The IR type of every class (all its nodes agree): leaves know it, operators derive it."""
        pending = True
        while pending:
            pending = False
            for cls, nodes in enumerate(self.classes):
                if cls in self.class_type:
                    continue
                for node in nodes:
                    t = result_type(node, self.class_type)
                    if t is not None:
                        self.class_type[cls] = t
                        pending = True
                        break


def _node_key(node: Node):
    return (node.subsumed, node.op, tuple(map(_type_name, node.types)), node.children, str(node.literal))


@cache  # (a snapshot sorts every class's nodes by their types' names)
def _type_name(t: Type) -> str:
    return str(t)


#: constructors whose result is a bool (comparisons and logical operations)
_BOOL_RESULT = frozenset(name for name, op in OPERATIONS.items() if CATEGORY[op] in ("compare", "logical"))


def result_type(node: Node, known: Mapping[int, Type]) -> Type | None:
    if node.op in _BOOL_RESULT:
        return BOOL
    if node.types:
        return node.types[0]
    return None


# Node costs ---------------------------------------------------------------------------------


def node_costs(snapshot: Snapshot, model: CostModel) -> list[list[int]]:
    """The cost of every node under `model`, by class and position (computed once per model)."""
    costs = snapshot.costs.get(model)
    if costs is None:
        costs = snapshot.costs[model] = _price_nodes(snapshot, model)
    return costs


def _price_nodes(snapshot: Snapshot, model: CostModel) -> list[list[int]]:
    # each class's operand once (a class is an operand of many nodes); `_infer_types` types every
    # class: each node has a Ty or a bool result
    operands = [snapshot.operand(c) for c in range(len(snapshot.classes))]
    operation = model.operation
    costs = []
    for nodes in snapshot.classes:
        row = []
        for node in nodes:
            types = node.types
            source = types[1] if len(types) > 1 else None
            row.append(operation(node.op, node.type, [operands[c] for c in node.children], source))
        costs.append(row)
    return costs


# Greedy DAG extraction ----------------------------------------------------------------------


def greedy_dag(snapshot: Snapshot, model: CostModel, bound: bool = True) -> dict[int, int]:
    """Choose a node per class minimizing the cost of the set of classes below it.  `bound`:
    skip merging the nodes a lower bound shows cannot win (the same choices, less work)."""
    costs = node_costs(snapshot, model)
    parents: list[list[tuple[int, int]]] = [[] for _ in snapshot.classes]
    for cls, nodes in enumerate(snapshot.classes):
        for i, node in enumerate(nodes):
            for child in set(node.children):
                parents[child].append((cls, i))
    # above INFINITE: a class whose every form is impossible on the platform still gets one
    # (its cost stays INFINITE), so that extraction always succeeds
    best_cost: list[int] = [INFINITE + 1] * len(snapshot.classes)
    best_node: list[int] = [-1] * len(snapshot.classes)
    best_set: list[dict[int, int] | None] = [None] * len(snapshot.classes)  # class -> its node cost

    queue: list[tuple[int, int]] = []
    for cls, nodes in enumerate(snapshot.classes):
        for i, node in enumerate(nodes):
            if not node.children:
                heapq.heappush(queue, (cls, i))
    queued = set(queue)
    while queue:
        cls, i = heapq.heappop(queue)
        queued.discard((cls, i))
        children = snapshot.classes[cls][i].children
        below = [s for c in children if (s := best_set[c]) is not None]
        if len(below) < len(children):
            continue  # a child class has no form yet
        cost = costs[cls][i]
        # the node's set holds its first child's set, at that set's costs, and the node: a node
        # that cannot win by that bound is not merged (merging is most of the work)
        least = min(INFINITE, (best_cost[children[0]] if children else 0) + cost)
        if bound and (least > best_cost[cls] or (least == best_cost[cls] and i >= best_node[cls])):
            continue
        if any(cls in child_set for child_set in below):
            continue  # the node would depend on its own class
        merged: dict[int, int] = {}
        for child_set in reversed(below):  # (a class in several: its cost in the first child's set)
            merged.update(child_set)
        merged[cls] = cost
        total = min(INFINITE, sum(merged.values()))  # (saturating_sum, inline: this loop is hot)
        if total < best_cost[cls] or (total == best_cost[cls] and i < best_node[cls]):
            changed = best_node[cls] != i or total != best_cost[cls]
            best_cost[cls], best_node[cls], best_set[cls] = total, i, merged
            if changed:
                for parent in parents[cls]:
                    if parent not in queued:
                        heapq.heappush(queue, parent)
                        queued.add(parent)
    for root in snapshot.roots:
        if best_node[root] < 0:
            raise Error("extraction failed: a root has no finite-cost form")
    return {cls: i for cls, i in enumerate(best_node) if i >= 0}


def dag_total(snapshot: Snapshot, costs: list[list[int]], choice: Mapping[int, int]) -> int:
    """The cost of the classes the roots reach under `choice`, each paid once; INFINITE + 1 when
    the choice makes a class depend on itself (a cycle has no expression)."""
    classes = snapshot.classes
    total = 0  # (costs are not negative: saturating once at the end is saturating every sum)
    state: dict[int, bool] = {}  # class -> finished (False while its operands are being visited)
    for root in snapshot.roots:
        stack = [(root, False)]
        while stack:
            cls, done = stack.pop()
            if done:
                state[cls] = True
                total += costs[cls][choice[cls]]
                continue
            finished = state.get(cls)
            if finished is not None:
                if not finished:
                    return INFINITE + 1
                continue
            state[cls] = False
            stack.append((cls, True))
            stack.extend((child, False) for child in classes[cls][choice[cls]].children)
    return min(total, INFINITE)


def share_more(snapshot: Snapshot, model: CostModel, choice: dict[int, int], budget: int = 40_000) -> dict[int, int]:
    """Improve a greedy choice by trying every other node of the classes it reaches, one at a time,
    keeping a change that lowers the whole DAG's cost.  The greedy extractor prices each class by
    the classes below it alone, so between two forms of equal price it cannot prefer the one that
    reuses a subexpression chosen elsewhere (`d - c*2` next to a `c*2`, not `c*-2 + d`).  Each
    trial re-prices the DAG, so the search stops after about `budget` classes visited in total."""
    costs = node_costs(snapshot, model)
    best = dag_total(snapshot, costs, choice)
    work = 0
    improved = True
    while improved and work < budget:
        improved = False
        reached = _chosen_reach(snapshot, choice)
        for cls in sorted(reached):
            for i, node in enumerate(snapshot.classes[cls]):
                if i == choice[cls] or costs[cls][i] >= INFINITE or any(c not in choice for c in node.children):
                    continue
                work += len(reached)
                if work > budget:
                    return choice
                old, choice[cls] = choice[cls], i
                total = dag_total(snapshot, costs, choice)
                if total < best:
                    best, improved = total, True
                else:
                    choice[cls] = old
    return choice


def _chosen_reach(snapshot: Snapshot, choice: Mapping[int, int]) -> set[int]:
    seen: set[int] = set()
    stack = list(snapshot.roots)
    while stack:
        cls = stack.pop()
        if cls not in seen:
            seen.add(cls)
            stack.extend(snapshot.classes[cls][choice[cls]].children)
    return seen


# Exact ILP extraction -----------------------------------------------------------------------


@dataclass
class IlpOutcome:
    choice: dict[int, int]
    optimal: bool
    note: str = ""


def ilp_dag(snapshot: Snapshot, model: CostModel, max_nodes: int = 4000, branch_nodes: int = 20_000) -> IlpOutcome:
    """Minimal DAG cost by integer programming; beyond `max_nodes` e-nodes, the greedy choice,
    and past `branch_nodes` nodes of the solver's branch and bound, its best so far (the note
    says so).  A count, not a time limit: the same e-graph gives the same choice on any machine."""
    # scipy takes seconds to import; only the ILP extractor needs it
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import lil_matrix

    greedy = greedy_dag(snapshot, model)
    costs = node_costs(snapshot, model)
    reachable = _reachable_classes(snapshot, costs)
    variables = [
        (cls, i)
        for cls in reachable
        for i, node in enumerate(snapshot.classes[cls])
        if costs[cls][i] < INFINITE and all(c in reachable for c in node.children) and cls not in node.children
    ]
    if len(variables) > max_nodes:
        return IlpOutcome(
            greedy, False, f"ILP skipped: {len(variables)} candidate nodes exceed {max_nodes}; greedy DAG used"
        )
    classes = sorted(reachable)
    class_index = {cls: k for k, cls in enumerate(classes)}
    n_nodes, n_classes = len(variables), len(classes)
    # x: one 0/1 per node; t: one topological order value per class (rules out cycles)
    n = n_nodes + n_classes
    big = float(n_classes)
    rows, lower, upper = [], [], []
    matrix = lil_matrix((0, n))

    def add_row(coefficients: dict[int, float], lo: float, hi: float) -> None:
        rows.append(coefficients)
        lower.append(lo)
        upper.append(hi)

    by_class: dict[int, list[int]] = {}
    for v, (cls, _) in enumerate(variables):
        by_class.setdefault(cls, []).append(v)
    for root in snapshot.roots:
        add_row({v: 1.0 for v in by_class.get(root, [])}, 1.0, np.inf)
    for v, (cls, i) in enumerate(variables):
        for child in set(snapshot.classes[cls][i].children):
            coefficients = {w: 1.0 for w in by_class.get(child, [])}
            coefficients[v] = coefficients.get(v, 0.0) - 1.0
            add_row(coefficients, 0.0, np.inf)  # choosing a node chooses a node in each child class
            # t[cls] - t[child] >= 1 - big * (1 - x): order classes along chosen edges
            order = {n_nodes + class_index[cls]: 1.0, n_nodes + class_index[child]: -1.0}
            order[v] = order.get(v, 0.0) - big
            add_row(order, 1.0 - big, np.inf)
    for cls in classes:  # at most one node per class
        if len(by_class.get(cls, [])) > 1:
            add_row({v: 1.0 for v in by_class[cls]}, 0.0, 1.0)
    matrix = lil_matrix((len(rows), n))
    for r, coefficients in enumerate(rows):
        for col, value in coefficients.items():
            matrix[r, col] = value
    objective = np.zeros(n)
    for v, (cls, i) in enumerate(variables):
        objective[v] = costs[cls][i]
    integrality = np.concatenate([np.ones(n_nodes), np.zeros(n_classes)])
    bounds = Bounds(np.zeros(n), np.concatenate([np.ones(n_nodes), np.full(n_classes, big)]))
    result = milp(
        objective,
        constraints=[LinearConstraint(matrix.tocsr(), lower, upper)],
        integrality=integrality,
        bounds=bounds,
        options={"node_limit": branch_nodes, "presolve": True},
    )
    if result.x is None:
        return IlpOutcome(greedy, False, f"ILP found no solution ({result.message.strip()}); greedy DAG used")
    choice: dict[int, int] = {}
    for v, (cls, i) in enumerate(variables):
        if result.x[v] > 0.5:
            if cls not in choice or costs[cls][i] < costs[cls][choice[cls]]:
                choice[cls] = i
    for cls, i in greedy.items():  # classes the ILP left open (not below a root) keep greedy's pick
        choice.setdefault(cls, i)
    optimal = result.status == 0
    return IlpOutcome(choice, optimal, "" if optimal else f"ILP stopped early ({result.message.strip()})")


def _reachable_classes(snapshot: Snapshot, costs: list[list[int]]) -> set[int]:
    seen: set[int] = set()
    stack = list(snapshot.roots)
    while stack:
        cls = stack.pop()
        if cls in seen:
            continue
        seen.add(cls)
        for i, node in enumerate(snapshot.classes[cls]):
            if costs[cls][i] < INFINITE:
                stack.extend(node.children)
    return seen


# Building IR from a choice --------------------------------------------------------------------


def choice_builder(snapshot: Snapshot, choice: Mapping[int, int], reader: TermReader) -> Callable[[int], ir.Expr]:
    """A function building root k's IR under the chosen nodes (shared classes share IR)."""
    memo: dict[int, ir.Expr] = {}

    def build(cls: int) -> ir.Expr:
        # iterative post-order: deep expressions must not hit Python's recursion limit
        stack = [(cls, False)]
        on_path: set[int] = set()
        while stack:
            c, expanded = stack.pop()
            if c in memo:
                continue
            node = snapshot.classes[c][choice[c]]
            if node.op in ("Var", "Const", "Opaque"):
                memo[c] = reader.leaf(node.op, node.type, node.literal)
                continue
            if expanded:
                on_path.discard(c)
                memo[c] = build_node(node.op, node.type, [memo[k] for k in node.children], list(node.types))
                continue
            if c in on_path:
                raise Error("extraction produced a cycle")
            on_path.add(c)
            stack.append((c, True))
            stack.extend((k, False) for k in node.children if k not in memo)
        return memo[cls]

    return lambda k: build(snapshot.roots[k])


# egglog's tree extraction ---------------------------------------------------------------------


def tree_extractor(run: Run, model: CostModel, reader: TermReader) -> Callable[[int], ir.Expr]:
    """egglog's extractor (optimal tree cost) with the platform's operation costs: a function
    extracting root k."""
    eb = bindings()  # loaded at the first saturation, not with xegen (bindings.py)

    graph = run.graph
    frozen = graph.freeze()
    ty_of = {}
    for name, t in TY_TYPES.items():
        for row in frozen.functions[name].rows:
            ty_of[row.output] = t
    constants = {}
    if "Const" in frozen.functions:
        for row in frozen.functions["Const"].rows:
            t = ty_of[row.inputs[0]]
            constants[row.output] = constant_value(graph.value_to_i64(row.inputs[1]), t)

    def enode_cost(name: str, args: list) -> int:
        if name in TY_TYPES:
            return 0
        n_types = TY_ARGUMENTS.get(name)
        if n_types is None:
            return INFINITE
        types = [ty_of[a] for a in args[:n_types]]
        if name in ("Var", "Const", "Opaque", "Wrap"):
            return model.operation(name, types[0] if types else None, [])
        operands = [Operand(types[0] if types else None, constants.get(a)) for a in args[n_types:]]
        return model.operation(name, types[0] if types else None, operands, types[1] if len(types) > 1 else None)

    cost_model = eb.CostModel(
        lambda name, head, children: min(INFINITE, head + sum(children)),
        enode_cost,
        lambda sort, value, elements: sum(elements),
        lambda sort, value: 0,
    )
    extractor = eb.Extractor(["Expr"], graph, cost_model)
    values = run.root_values()

    def extract(k: int) -> ir.Expr:
        dag = eb.TermDag()
        cost, term = extractor.extract_best(graph, dag, values[k], "Expr")
        if cost >= INFINITE:
            raise Error("extraction failed: a root has no finite-cost form")
        return reader.from_termdag(dag, term)

    return extract
