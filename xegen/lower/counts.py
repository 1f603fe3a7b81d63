"""Execution counts without running a kernel: from its loops and branches and their trip counts.

Lowering (`xegen.lower.isel`) turns every `for` and `if` of the IR into scalar `jmpi`
instructions and records, for each `jmpi` in program order, what it is (a `Branch`): the back
edge of a counted loop (with the IR expressions of its first value and bound), the guard that
skips a loop of no trips, the jump over a then-part (with its condition), the jump from a
then-part over its else-part.  Together with the final instructions (whose branch offsets say
where each region starts and ends) that is the kernel's control structure.

`static_executions` walks that structure once for a whole launch.  A set of threads (`Points`)
carries the values of the variables the branches look at — thread and group ids, scalar
kernel arguments, loop variables — as numpy arrays; only the id dimensions some branch reads are
enumerated, the others are a weight.  A straight run of instructions executes once per thread of
the set, a loop multiplies by its trip count (or, when something inside it depends on the loop
variable, enumerates the iterations), an `if` splits the set, and an end of thread removes its
threads.  The result equals the simulator's per-instruction thread executions (a test checks it
on every kernel the tests build).  Branches on values loaded from memory cannot be counted this
way: `static_executions` raises `UnsupportedError` and the caller runs the simulator instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..emit.flow import branch_targets, is_terminating
from ..emit.instruction import Instruction
from ..errors import EvaluationError, UnsupportedError
from ..ir import Evaluator, Expr, Var, free_vars
from ..ir.semantics import numpy_dtype

Lets = tuple[tuple[Var, Expr], ...]


@dataclass(frozen=True)
class Branch:
    """What one `jmpi` of a lowered kernel is.  `lets` are the let definitions its expressions
    use (directly or through one another), in an order that defines each before its use."""

    kind: str  # "loop" (back edge), "guard" (skips a loop), "if" (skips the then-part), "else"
    var: Var | None = None  # loop: its variable
    init: Expr | None = None  # loop: first value
    bound: Expr | None = None  # loop: the variable runs up to, not including, this
    cond: Expr | None = None  # if: the then-part runs when this is true
    lets: Lets = ()

    def free_names(self) -> frozenset[str]:
        """Names of the variables the expressions read that no let here defines."""
        defined = {var.name for var, _ in self.lets}
        names = set()
        for e in (self.init, self.bound, self.cond, *(value for _, value in self.lets)):
            if e is not None:
                names |= {v.name for v in free_vars(e)}
        return frozenset(names - defined)


@dataclass(frozen=True)
class ControlFlow:
    """A lowered kernel's branches (one per `jmpi`, in order) and the names of its ids."""

    branches: tuple[Branch, ...]
    thread_ids: tuple[str, str, str]
    group_ids: tuple[str, str, str]
    thread_group: tuple[int, int, int]


# --- the region tree -------------------------------------------------------------------------


@dataclass
class _Region:
    """Instructions [start, end] run under a branch: a loop body, or an `if` whose then-part is
    [start, split - 1] and else-part [split, end] (split = end + 1 without an else)."""

    start: int
    end: int
    branch: Branch
    split: int = 0
    children: list[_Region] = field(default_factory=list)


def _regions(instructions: Sequence[Instruction], branches: Sequence[Branch]) -> list[_Region]:
    count = len(instructions)
    jumps = [i for i, inst in enumerate(instructions) if inst.is_branch]
    other = [instructions[i].opcode for i in jumps if instructions[i].opcode != "jmpi"]
    if other:
        raise UnsupportedError(f"static execution counts need scalar jmpi branches only, not '{other[0]}'")
    if len(jumps) != len(branches):
        raise UnsupportedError(f"the kernel has {len(jumps)} branches but lowering recorded {len(branches)}")
    regions = []
    kind_at = {i: b.kind for i, b in zip(jumps, branches, strict=True)}
    for i, branch in zip(jumps, branches, strict=True):
        target = branch_targets(instructions[i], i, count)[0]
        if branch.kind == "loop":
            regions.append(_Region(target, i, branch))
        elif branch.kind == "if":
            end = target - 1
            if kind_at.get(target - 1) == "else":  # the then-part ends jumping over the else-part
                end = branch_targets(instructions[target - 1], target - 1, count)[0] - 1
            regions.append(_Region(i + 1, end, branch, split=target))
    return _nest(regions)


def _nest(regions: list[_Region]) -> list[_Region]:
    """The regions as a tree (they nest, never overlap partially); the top level in order."""
    top: list[_Region] = []
    stack: list[_Region] = []
    for region in sorted(regions, key=lambda r: (r.start, -r.end)):
        while stack and stack[-1].end < region.start:
            stack.pop()
        (stack[-1].children if stack else top).append(region)
        stack.append(region)
    return top


# --- walking it --------------------------------------------------------------------------------


@dataclass
class Points:
    """Threads (or thread-iterations) that share a path: variable values and, per point, how
    many threads it stands for (0 once they have ended)."""

    env: dict[str, np.ndarray]
    weights: np.ndarray

    def evaluate(self, e: Expr, lets: Lets) -> np.ndarray:
        env = dict(self.env)
        try:
            for var, value in lets:
                env[var.name] = Evaluator(env).evaluate(value)
            result = Evaluator(env).evaluate(e)
        except EvaluationError as error:
            raise UnsupportedError(
                f"a branch of the kernel depends on a value the launch does not fix "
                f"({error}); count its executions in the simulator"
            ) from None
        return np.broadcast_to(result, self.weights.shape)


class _Walk:
    def __init__(self, instructions: Sequence[Instruction]):
        self.instructions = instructions
        self.counts = np.zeros(len(instructions), dtype=np.int64)

    def run(self, start: int, end: int, children: list[_Region], points: Points) -> np.ndarray:
        """Execute [start, end] for `points`; the weights of those still running after it."""
        weights = points.weights
        at = start
        for child in children:
            weights = self._straight(at, child.start - 1, weights)
            weights = self._region(child, Points(points.env, weights))
            at = child.end + 1
        return self._straight(at, end, weights)

    def _straight(self, start: int, end: int, weights: np.ndarray) -> np.ndarray:
        total = int(weights.sum())
        for i in range(start, end + 1):
            self.counts[i] += total
            if total and is_terminating(self.instructions[i]):
                weights, total = np.zeros_like(weights), 0
        return weights

    def _region(self, region: _Region, points: Points) -> np.ndarray:
        branch = region.branch
        if branch.kind == "if":
            assert branch.cond is not None  # (an if's)
            taken = points.evaluate(branch.cond, branch.lets).astype(bool)
            then_part = [c for c in region.children if c.start < region.split]
            else_part = [c for c in region.children if c.start >= region.split]
            after_then = self.run(region.start, region.split - 1, then_part, Points(points.env, points.weights * taken))
            after_else = self.run(region.split, region.end, else_part, Points(points.env, points.weights * ~taken))
            return after_then + after_else
        assert branch.var is not None and branch.init is not None and branch.bound is not None  # (a loop's)
        first = points.evaluate(branch.init, branch.lets).astype(np.int64)
        trips = np.maximum(points.evaluate(branch.bound, branch.lets).astype(np.int64) - first, 0)
        if branch.var.name in _names_read(region.children):
            body = _iterations(points, branch.var, first, trips)
        else:
            body = Points(points.env, points.weights * trips)
        if not np.array_equal(self.run(region.start, region.end, region.children, body), body.weights):
            raise UnsupportedError("a thread ends inside a loop: count its executions in the simulator")
        return points.weights


def _names_read(regions: list[_Region]) -> frozenset[str]:
    names: set[str] = set()
    pending = list(regions)
    while pending:
        region = pending.pop()
        names |= region.branch.free_names()
        pending += region.children
    return frozenset(names)


def _iterations(points: Points, var: Var, first: np.ndarray, trips: np.ndarray) -> Points:
    """One point per thread and iteration, the loop variable bound to the iteration's value."""
    owner = np.repeat(np.arange(trips.size), trips)
    starts = np.cumsum(trips) - trips
    values = first[owner] + np.arange(owner.size) - starts[owner]
    env = {name: value[owner] for name, value in points.env.items()}
    env[var.name] = values.astype(numpy_dtype(var.type))
    return Points(env, points.weights[owner])


def static_executions(
    instructions: Sequence[Instruction],
    control: ControlFlow,
    grid: Sequence[int],
    scalars: Mapping[str, int | float] | None = None,
) -> tuple[int, ...]:
    """Thread-executions of each instruction when `grid` thread groups run (scalar kernel
    arguments as in `scalars`), the same numbers a simulator run gives."""
    branches = control.branches
    tree = _regions(instructions, branches)
    read = _names_read(tree)
    dims = [
        (name, size)
        for names, shape in ((control.thread_ids, control.thread_group), (control.group_ids, tuple(grid)))
        for name, size in zip(names, shape, strict=True)
    ]
    enumerated = [(name, size) for name, size in dims if name in read]
    axes = np.indices([size for _, size in enumerated]).reshape(len(enumerated), -1) if enumerated else None
    env = {} if axes is None else {name: axes[k].astype(np.int32) for k, (name, _) in enumerate(enumerated)}
    points = 1 if axes is None else axes.shape[1]
    for name, value in (scalars or {}).items():
        env[name] = np.full(points, value)
    others = math.prod(size for name, size in dims if name not in read)
    walk = _Walk(instructions)
    walk.run(0, len(instructions) - 1, tree, Points(env, np.full(points, others, dtype=np.int64)))
    return tuple(int(n) for n in walk.counts)
