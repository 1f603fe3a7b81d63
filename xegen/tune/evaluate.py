"""What a worker does with one candidate: compile and model it, or verify it at a reduced size.

`run_job(job)` is the function every backend runs (in the driver's process, in a pool worker, or
as a Ray task); its arguments and result are small picklable records.  The first job a worker
runs loads the rewrite rules (`warm_up`), and they stay loaded for the worker's life.

A model job compiles the problem with every key of the configuration given (no fall-back to
another configuration) and prices the kernel with `xegen.modeling.modeled_cycles` over its
static execution counts: no simulator run.  The heuristic's job gives no configuration and
compiles what `xegen conv` would, fall-backs included.

A verify job runs the candidate in the simulator, at a reduced problem (`reduced_problem`): the
same channels, kernel, stride, padding and dilation, so the GEMM's N and K and every tile of
the configuration are as in the full problem, with the outermost spatial dimension (and the
minibatch) cut down to the fewest outputs that keep every axis of the grid at two or more
thread groups where the full problem has them (so group-to-group addressing and the edges of
the first and last groups are exercised), and two outputs or more along a padded dimension (a
first and a last row, each with its padding), and the K loop at least three
iterations long or as long as the full one (its prologue, steady state and epilogue).  The
result must match numpy, have no SWSB hazard, and the static execution counts must equal the
simulator's (those counts are what the model priced).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace

from ..conv.descriptor import Descriptor
from ..conv.problem import Problem
from ..egraph.rules import load_rules
from ..errors import ConfigError, Error, UnsupportedError
from ..hw import platform
from ..modeling import modeled_cycles
from ..pipeline import compile_problem
from ..plan import formulate
from ..plan.config import Config
from ..plan.kernel import KernelPlan, plan_kernel
from ..verify import verify

MIN_ITERATIONS = 3  # K loop iterations a reduced problem keeps (prologue, steady state, epilogue)


@dataclass(frozen=True)
class Job:
    kind: str  # "model" or "verify"
    problem: Problem
    hw: str
    overrides: tuple[tuple[str, object], ...]  # config keys given (all of them for a candidate)
    seed: int = 0  # random data of a verify job


@dataclass(frozen=True)
class Outcome:
    config: tuple[tuple[str, object], ...] | None  # the configuration compiled (None: none could be)
    cycles: float | None = None
    bound: str | None = None
    instructions: int | None = None
    error: str | None = None
    fallbacks: tuple[str, ...] = ()
    reduced: str | None = None  # verify: the problem run
    verified: bool | None = None
    seconds: float = 0.0  # wall time of the job (informational)

    @property
    def ok(self) -> bool:
        return self.error is None


def as_items(config: Config) -> tuple[tuple[str, object], ...]:
    return tuple(asdict(config).items())


def as_config(items) -> Config:
    return Config(**dict(items))


_warm = False


def warm_up() -> None:
    """Load the rewrite rules once per process (every compile's optimize pass needs them)."""
    global _warm
    if not _warm:
        load_rules()
        _warm = True


def run_job(job: Job) -> Outcome:
    """Run one job; a configuration that cannot be compiled or checked is an Outcome with an error."""
    warm_up()
    started = time.perf_counter()
    try:
        outcome = _model(job) if job.kind == "model" else _verify(job)
    except Error as error:
        outcome = Outcome(None, error=str(error))
    except Exception as error:  # a compiler bug on a configuration the heuristic never picks: report it
        outcome = Outcome(None, error=f"internal error: {type(error).__name__}: {error}")
    return replace(outcome, seconds=time.perf_counter() - started)


def _model(job: Job) -> Outcome:
    compilation = compile_problem(job.problem, job.hw, dict(job.overrides))
    cycles = modeled_cycles(compilation)
    return Outcome(
        as_items(compilation.config),
        cycles.device,
        cycles.bound,
        len(compilation.compiled.instructions),
        fallbacks=compilation.fallbacks,
    )


def _verify(job: Job) -> Outcome:
    config = as_config(job.overrides)
    reduced = reduced_problem(job.problem, config, platform(job.hw))
    compilation = compile_problem(reduced, job.hw, dict(job.overrides))
    checked = verify(compilation, job.seed)
    counts_match = compilation.compiled.executions(compilation.kernel.grid) == checked.run.executions
    problems = [str(c) for c in checked.comparisons if not c.ok] + [str(h) for h in checked.run.hazards[:3]]
    if not counts_match:
        problems.append("the static execution counts differ from the simulator's")
    return Outcome(
        as_items(compilation.config),
        reduced=str(reduced.desc),
        verified=not problems,
        error="; ".join(problems) or None,
    )


# The reduced problem -------------------------------------------------------------------------


def _resized(desc: Descriptor, mb: int, outputs: int) -> Descriptor:
    """`desc` with `mb` and `outputs` along its outermost spatial dimension, the input sized so that
    the same kernel, stride and padding give that many outputs and the right padding keeps its sign."""
    dim = desc.used[0]
    s, p = desc.field("s", dim), desc.field("p", dim)
    size = (outputs - 1) * s + desc.effective_kernel(dim) - 2 * p + (s - 1)
    return replace(desc, mb=mb, name="", **{f"o{dim}": outputs, f"i{dim}": max(size, 1)})


def _keeps_shape(plan: KernelPlan, full: KernelPlan) -> bool:
    return all(g >= min(f, 2) for g, f in zip(plan.grid, full.grid, strict=True)) and plan.iterations >= min(
        full.iterations, MIN_ITERATIONS
    )


def reduced_problem(problem: Problem, config: Config, hw) -> Problem:
    """The smallest cut of `problem` on which `config` runs the same tiles over a grid of the same
    kind (see the module's docstring); the problem itself when no cut does."""
    full = plan_kernel(formulate(problem, config.plan), config, hw)
    desc = problem.desc
    outer = desc.field("o", desc.used[0])
    fewest = min(outer, 2 if desc.field("p", desc.used[0]) else 1)  # padded: a first and a last row
    sizes = [(1, out) for out in range(fewest, outer + 1)] if desc.mb > 1 else []
    sizes += [(desc.mb, out) for out in range(fewest, outer)]
    for mb, out in sizes:
        try:
            candidate = problem.with_desc(_resized(desc, mb, out))
            if candidate.desc.field("i", desc.used[0]) < 1:
                continue
            if _keeps_shape(plan_kernel(formulate(candidate, config.plan), config, hw), full):
                return candidate
        except (ConfigError, UnsupportedError):
            continue
    return problem
