"""From a transformed graph back to IR: software pipelining, unrolling, buffer rotation.

This is the only way from a graph back to IR.  The graph says, per statement, how many
iterations *ahead* it runs (its `ahead` attribute, the lookahead: the global loads of iteration
i+2 issue while iteration i multiplies), how many copies each multi-buffered buffer has
(`copies`; iteration i uses copy i mod R, and the statements that address it list it in
`rotates`), how far to unroll (`unroll`) and whether to keep program order (`order`).
Kernel iteration t runs every statement n for original iteration t + ahead(n).  With A the
largest lookahead and N the trip count:

- ramp-up: kernel iterations init-A .. init-1, each running only the statements whose iteration
  is already in range (the preloads);
- steady state: a loop over blocks of `unroll` kernel iterations, every statement active;
- ramp-down: the last iterations, running only the statements whose iteration is still < N.

A pipeline is legal when every dependence u -> v at distance d keeps
`d + ahead(u) - ahead(v) >= 0`; where it is 0 the two run in one kernel iteration and u comes
first.  Within a block the statements are linearized by list scheduling (`linearize.py`).
Copies rotate by constant offsets: the block covers a multiple of every register buffer's copy
count, so `i mod R` is known for each copy of the body (SLM buffers may also rotate by index
arithmetic when it is not).  Each iteration a block touches gets its own copy of the loop's
`let`s: renamed where several statements share one, substituted where only one uses it, and
folded to constants in the ramps, where the iteration is known.  A graph in program order with
nothing to pipeline becomes the loop with its statements as they are.  What hoisting moved out
goes in front of the loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import networkx as nx

from ..errors import UnsupportedError
from ..ir import (
    BoolImm,
    Expr,
    For,
    IntImm,
    Let,
    Load,
    Mutator,
    Names,
    Ptr,
    Seq,
    Stmt,
    Store,
    Var,
    binary,
    const,
    seq,
    substitute,
)
from ..passes import fold_constants
from .costs import Cost
from .graph import let_nodes, loop_body, stmt_nodes
from .linearize import heights, issue_cycles, issue_times, list_schedule


class ScheduleError(UnsupportedError):
    """A pipeline that would break a dependence: the loop cannot be transformed that way."""


def ahead(graph: nx.DiGraph, node: int) -> int:
    """How many iterations ahead of the kernel iteration statement `node` runs."""
    return graph.nodes[node].get("ahead", 0)


def pipeline_depth(graph: nx.DiGraph) -> int:
    return max((ahead(graph, n) for n in stmt_nodes(graph)), default=0)


def is_pipelined(graph: nx.DiGraph) -> bool:
    return pipeline_depth(graph) > 0 or graph.graph["unroll"] > 1 or bool(graph.graph["copies"])


def check_pipeline(graph: nx.DiGraph) -> None:
    """ScheduleError if a dependence would run backwards."""
    kinds, aheads = dict(graph.nodes(data="kind")), dict(graph.nodes(data="ahead", default=0))
    for u, v, data in graph.edges(data=True):
        if kinds[u] != "stmt" or kinds[v] != "stmt":
            continue
        slack = data["distance"] + aheads[u] - aheads[v]
        if slack < 0 or (u == v and slack == 0):
            raise ScheduleError(
                f"cannot run '{graph.nodes[v]['label']}' statement {v} {ahead(graph, v)} iterations ahead: it must "
                f"follow '{graph.nodes[u]['label']}' statement {u} ({'/'.join(data['kinds'])}, distance "
                f"{data['distance']})"
            )
    for name, count in graph.graph["copies"].items():
        if graph.graph["buffer_kinds"].get(name) == "grf" and graph.graph["unroll"] % count:
            raise ScheduleError(f"register buffer '{name}' has {count} copies: unroll by a multiple of {count}")


# Instances: a statement of one original iteration ----------------------------------------------


class Instance(NamedTuple):
    """Statement `node` in kernel iteration `kernel` (relative to the block in the steady loop,
    absolute in ramp-up and ramp-down); it runs original iteration kernel + lookahead.  (A named
    tuple: blocks have thousands of instances, hashed in every edge and schedule step.)"""

    node: int
    kernel: int


class _Rotate(Mutator):
    """Add each multi-buffered buffer's copy offset to every address into it."""

    def __init__(self, shifts: dict[str, Expr]):
        self.shifts = shifts

    def _shift(self, buffer: Var, offset: Expr) -> Expr:
        shift = self.shifts.get(buffer.name)
        if shift is None:
            return offset
        if isinstance(offset, IntImm) and isinstance(shift, IntImm):  # register offsets stay constants
            return IntImm(offset.value + shift.value, offset.type)
        return binary("add", offset, shift)

    def mutate_Ptr(self, node: Ptr):
        node = self.mutate_children(node)
        return Ptr(node.buffer, self._shift(node.buffer, node.offset))

    def mutate_Load(self, node: Load):
        node = self.mutate_children(node)
        return Load(node.buffer, self._shift(node.buffer, node.offset), node.type, node.stride)

    def mutate_Store(self, node: Store):
        node = self.mutate_children(node)
        return Store(node.buffer, self._shift(node.buffer, node.offset), node.value, node.stride, node.mask)


@dataclass(frozen=True)
class _Block:
    """A ramp iteration (instances hold absolute iterations) or the steady loop's body (instances
    relative to `first`, the original iteration of its kernel offset 0, an expression of the loop
    variable; the body covers `unroll` kernel iterations)."""

    steady: bool
    first: Expr | None = None
    unroll: int = 1


class _Emitter:
    def __init__(self, graph: nx.DiGraph, names: Names):
        self.body, self.graph, self.names = loop_body(graph), graph, names
        self.nodes = stmt_nodes(graph)
        self.ahead = {n: ahead(graph, n) for n in self.nodes}
        self.costs: dict[int, Cost] = {n: graph.nodes[n]["cost"] for n in self.nodes}
        kinds = dict(graph.nodes(data="kind"))
        self.edges = [
            (u, v, d["distance"], d["latency"])
            for u, v, d in graph.edges(data=True)
            if kinds[u] == "stmt" and kinds[v] == "stmt"
        ]
        # the lets each statement and let value uses: the graph's VAR edges
        lets = let_nodes(graph)
        self.let_index = {graph.nodes[m]["var"]: j for j, m in enumerate(lets)}
        self.stmt_vars = [self._lets_used(n) for n in self.nodes]
        self.let_vars = [self._lets_used(m) for m in lets]

    def _lets_used(self, node: int) -> frozenset[Var]:
        return frozenset(
            self.graph.nodes[m]["var"] for m in self.graph.predecessors(node) if self.graph.nodes[m]["kind"] == "let"
        )

    def needed_lets(self, nodes: list[int]) -> tuple[list[int], dict[Var, int]]:
        """The lets the statements need (transitively), in order, and how many of those
        statements and lets use each of them."""
        needed: set[int] = set()
        stack = [v for n in nodes for v in self.stmt_vars[n] if v in self.let_index]
        while stack:
            j = self.let_index[stack.pop()]
            if j not in needed:
                needed.add(j)
                stack.extend(v for v in self.let_vars[j] if v in self.let_index)
        uses: dict[Var, int] = {}
        for used in [self.stmt_vars[n] for n in nodes] + [self.let_vars[j] for j in needed]:
            for var in used:
                uses[var] = uses.get(var, 0) + 1
        return sorted(needed), uses

    def iteration(self, inst: Instance) -> int:
        return inst.kernel + self.ahead[inst.node]

    # -- ordering ----------------------------------------------------------------------------------
    def instance_edges(self, instances: list[Instance]) -> dict[Instance, list[tuple[Instance, int]]]:
        """Instances with an edge wherever two of them conflict: v at least `distance` iterations
        after u (further apart they touch the same bytes too, so the order stays).  Edges go
        forward in original (iteration, statement) order, so this is a DAG."""
        by_node: dict[int, list[tuple[Instance, int]]] = {}
        for inst in dict.fromkeys(instances):  # (an instance listed twice is one node of the DAG)
            by_node.setdefault(inst.node, []).append((inst, self.iteration(inst)))
        successors: dict[Instance, list[tuple[Instance, int]]] = {inst: [] for inst in instances}
        # the graph has one edge per pair of statements, so each pair of instances gets one latency
        for u, v, distance, latency in self.edges:
            targets = by_node.get(v, ())
            for a, first in by_node.get(u, ()):
                found = successors[a]
                for b, second in targets:
                    # (instances of one node differ in their iteration)
                    if second - first >= distance and (u != v or first != second):
                        found.append((b, latency))
        return successors

    def _original_order(self, instances: list[Instance]) -> list[Instance]:
        return sorted(instances, key=lambda inst: (self.iteration(inst), inst.node))

    def order(
        self,
        instances: list[Instance],
        following: list[Instance] | None = None,
        successors: dict[Instance, list[tuple[Instance, int]]] | None = None,
        ready_at: dict[Instance, int] | None = None,
    ) -> list[Instance]:
        """List-schedule the instances; priorities also count the `following` block's work
        (`successors`: their `instance_edges`, when the caller has them); `ready_at`: when
        operands earlier blocks load arrive (`carried_ready`)."""
        extended = instances + (following or [])
        if successors is None:
            successors = self.instance_edges(extended)
        costs = {inst: self.costs[inst.node] for inst in extended}
        priority = heights(successors, costs, self._original_order(extended))
        inside = set(instances)
        block = {inst: [(s, lat) for s, lat in successors[inst] if s in inside] for inst in instances}
        position = {inst: (self.iteration(inst), inst.node) for inst in instances}
        return list_schedule(block, costs, priority, position, ready_at)

    def block_times(
        self, order: list[Instance], instances: list[Instance], ready_at: dict[Instance, int] | None = None
    ) -> tuple[dict[Instance, int], int]:
        """When each instance of a scheduled block issues, and when the block ends."""
        inside = self.instance_edges(instances)
        return issue_times(order, inside, {i: self.costs[i.node] for i in instances}, ready_at)

    def carried_ready(self, issued: dict[Instance, int], instances: list[Instance], clock: int) -> dict[Instance, int]:
        """For instances of a block that starts at cycle `clock`: the cycle (from the block's
        start) their operands issued earlier (`issued`: instance -> cycle) arrive.  Without it a
        short loop's ramp would multiply the first iteration's data before it loads the second's,
        waiting out one load latency after another."""
        ready: dict[Instance, int] = {}
        earlier = list(issued)
        inside = set(instances)
        for u, targets in self.instance_edges(earlier + instances).items():
            if u in inside:
                continue
            for v, latency in targets:
                if v in inside:
                    ready[v] = max(ready.get(v, 0), issued[u] + latency - clock)
        return ready

    # -- statements --------------------------------------------------------------------------------
    def instantiate(self, order: list[Instance], block: _Block, reuse_names: bool = False) -> Stmt:
        """The block's lets (a renamed copy per iteration it touches) and its statements.

        A let that only one statement (or let) of an iteration uses is substituted into it rather
        than copied: most of the builder's lets are single-use index components, and a copy of
        every one per iteration of an unrolled pipeline would nest hundreds of lets."""
        body = self.body
        iterations = sorted({self.iteration(inst) for inst in order})
        renames: dict[int, dict[Var, Expr]] = {}
        lets: list[tuple[Var, Expr]] = []
        for it in iterations:
            members = [inst.node for inst in order if self.iteration(inst) == it]
            origin = self.origin(it, block)
            mapping: dict[Var, Expr] = {body.var: origin}
            needed, uses = self.needed_lets(members)
            for j in needed:
                var, value = body.lets[j]
                new_value = substitute(value, mapping)
                if not block.steady:
                    new_value = fold_constants(new_value)
                if reuse_names:
                    copy = var
                elif uses.get(var, 0) <= 1 or isinstance(new_value, (IntImm, BoolImm, Var)):
                    mapping[var] = new_value
                    continue
                else:
                    suffix = f"{'u' if block.steady else 'i'}{it}".replace("-", "m")
                    copy = Var(self.names.fresh(f"{var.name}_{suffix}"), var.type)
                mapping[var] = copy
                lets.append((copy, new_value))
            renames[it] = mapping
        stmts: list[Stmt] = []
        for inst in order:
            it = self.iteration(inst)
            stmt = substitute(body.stmts[inst.node], renames[it])
            shifts = self._copy_shifts(inst.node, it, block)
            if shifts:
                stmt = _Rotate(shifts).mutate(stmt)
            if not block.steady:
                stmt = fold_constants(stmt)
            stmts.append(stmt)
        result = seq(*stmts) if stmts else Seq(())
        for var, value in reversed(lets):
            result = Let(var, value, result)
        return result

    def origin(self, iteration: int, block: _Block) -> Expr:
        """The original iteration as an expression of the loop variable (or a constant)."""
        var = self.body.var
        if not block.steady:
            return IntImm(iteration, var.type)
        assert block.first is not None  # (a steady block's)
        return block.first if iteration == 0 else binary("add", block.first, iteration)

    def _copy_shifts(self, node: int, iteration: int, block: _Block) -> dict[str, Expr]:
        """Where the copies of the buffers `node` rotates start for this iteration."""
        shifts: dict[str, Expr] = {}
        rotates = self.graph.nodes[node].get("rotates", ())
        if not rotates:  # (a list-scheduled loop's start need not be a constant)
            return shifts
        init, _ = self.body.constant_bounds("multi-buffering")  # (checked when the loop was pipelined)
        for name in rotates:
            count, size = self.graph.graph["copies"][name], self.graph.graph["sizes"][name]
            if not block.steady:
                index: int | Expr = (iteration - init) % count
            elif block.unroll % count == 0:
                # the block starts at init + (a multiple of unroll): i - init = iteration (mod count)
                index = iteration % count
            else:
                index = binary("mod", binary("sub", self.origin(iteration, block), init), count)
            if isinstance(index, int):
                if index:
                    shifts[name] = IntImm(index * size)
            else:
                shifts[name] = binary("mul", index, size)
        return shifts


def list_scheduling_helps(graph: nx.DiGraph) -> bool:
    """Whether the body list-scheduled issues two consecutive iterations in fewer modeled cycles
    than in program order (the scheduler's cost model: `costs.py` and the edge latencies)."""
    emitter = _Emitter(graph, Names())
    first = [Instance(n, 0) for n in emitter.nodes]
    second = [Instance(n, 1) for n in emitter.nodes]
    successors = emitter.instance_edges(first + second)
    costs = {inst: emitter.costs[inst.node] for inst in first + second}
    listed = emitter.order(first, second, successors)
    listed_twice = listed + [Instance(inst.node, 1) for inst in listed]
    return issue_cycles(listed_twice, successors, costs) < issue_cycles(first + second, successors, costs)


def linearize(graph: nx.DiGraph, names: Names) -> Stmt:
    """The IR the graph stands for: what hoisting moved out, then the loop (pipelined, unrolled
    or list-scheduled as the graph says, else in program order)."""
    if is_pipelined(graph) or graph.graph["order"] == "latency":
        loop = _emit_loop(graph, names)
    else:
        loop = loop_body(graph).rebuild()
    result = seq(*graph.graph["preheader"], loop)
    for var, value in reversed(graph.graph["outer_lets"]):
        result = Let(var, value, result)
    return result


def _emit_loop(graph: nx.DiGraph, names: Names) -> Stmt:
    """The IR replacing the loop: ramp-up, the steady-state loop, ramp-down."""
    check_pipeline(graph)
    emitter = _Emitter(graph, names)
    body = emitter.body
    nodes = emitter.nodes
    unroll = graph.graph["unroll"]
    var = body.var
    if not is_pipelined(graph):
        # a reordering of one iteration: the loop keeps its variable, bounds and let names
        order = emitter.order([Instance(n, 0) for n in nodes], [Instance(n, 1) for n in nodes])
        block = emitter.instantiate(order, _Block(True, var, 1), reuse_names=True)
        return For(var, body.init, body.bound, block)

    init, bound = body.constant_bounds("software pipelining and unrolling")
    depth = pipeline_depth(graph)
    blocks = max(0, bound - init - depth) // unroll
    loop_end = init + blocks * unroll  # first kernel iteration after the steady loop
    if blocks <= 1:
        # the steady loop would run once at most: the whole loop is straight-line code, scheduled as
        # one block, so a later iteration's loads issue before an earlier one's multiplies wait
        whole = [
            Instance(n, t) for t in range(init - depth, bound) for n in nodes if init <= t + emitter.ahead[n] < bound
        ]
        return emitter.instantiate(emitter.order(whole), _Block(False)) if whole else Seq(())
    out: list[Stmt] = []
    issued: dict[Instance, int] = {}  # when the ramps' instances issue, in cycles from the first
    clock = 0  # when the next block starts issuing
    longest = max((cost.latency for cost in emitter.costs.values()), default=0)

    def peeled(t: int) -> None:
        nonlocal clock
        active = [Instance(n, t) for n in nodes if init <= t + emitter.ahead[n] < bound]
        if not active:
            return
        ready = emitter.carried_ready(issued, active, clock)
        order = emitter.order(active, ready_at=ready)
        times, end = emitter.block_times(order, active, ready)
        for inst, time in times.items():
            issued[inst] = clock + time
        clock += end
        for inst in [i for i, time in issued.items() if time + longest <= clock]:
            del issued[inst]  # (its results have arrived before anything still to issue)
        out.append(emitter.instantiate(order, _Block(False)))

    for t in range(init - depth, init):
        peeled(t)
    first: Expr  # the original iteration of the block's first kernel iteration
    if unroll == 1:
        loop_var, first, loop_range = var, var, (init, loop_end)
    else:
        loop_var = Var(names.fresh(f"{var.name}_block"), var.type)
        scaled = binary("mul", loop_var, unroll)
        first = scaled if init == 0 else binary("add", scaled, init)
        loop_range = (0, blocks)
    instances = [Instance(n, u) for u in range(unroll) for n in nodes]
    following = [Instance(n, u + unroll) for u in range(unroll) for n in nodes]
    successors = emitter.instance_edges(instances + following)
    order = emitter.order(instances, following, successors)
    # the block follows itself: schedule it again knowing when the previous pass's loads arrive
    times, length = emitter.block_times(order, instances)
    previous = {Instance(i.node, i.kernel - unroll): t - length for i, t in times.items()}
    ready = emitter.carried_ready(previous, instances, 0)
    if ready:
        order = emitter.order(instances, following, successors, ready)
        times, length = emitter.block_times(order, instances, ready)
    block = emitter.instantiate(order, _Block(True, first, unroll))
    out.append(For(loop_var, const(loop_range[0], var.type), const(loop_range[1], var.type), block))
    # the ramp-down follows the block's last pass
    issued = {Instance(i.node, i.kernel + loop_end - unroll): t - length for i, t in times.items()}
    clock = 0
    for t in range(loop_end, bound):
        peeled(t)
    return seq(*out)
