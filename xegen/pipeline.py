"""The compiler: a convolution problem in, a native Xe kernel out, through named passes.

    build      the kernel plan as IR: loop nest, messages, multiply (build)    (ir.Stmt)
    schedule   K loop multi-buffered, pipelined, unrolled (xegen.schedule)     (ir.Stmt)
    optimize   every expression in one e-graph, CSE and hoisting (egraph)     (ir.Stmt)
    isel       instruction selection on virtual registers (lower)            (listing)
    regalloc   registers allocated, branches linked                          (assembly)
    swsb       scoreboard tokens and distances (emit.scoreboard)             (assembly)

With `backend="visa"` the program `isel` selected is written as vISA assembly (`visa`) and
IGC's finalizer GenX_IR allocates, schedules and assigns SWSB (`finalize`) instead of
regalloc and swsb; the zebin's `.ze_info` is the same (xegen.visa, docs/visa.md).

`compile_problem(problem, hw)` runs them and returns a `Compilation`; `show(pass, text)` sees
each pass's output (the CLI's `--print-after`).  When a configuration's kernel does not fit
the register file after allocation, or its code the instruction cache, the next configuration
of `plan.config_candidates` is tried (a smaller tile, fewer buffers, a row plan's fallbacks
before the GEMM plan); the ones given up are
listed in `Compilation.fallbacks` (and their `dump_graph` pictures removed).
Where a first layer's row plan and the GEMM plan both apply (`plan.heuristic.model_decides`),
the first fitting configuration of each is compiled and the model (`xegen.modeling`) keeps the
faster kernel: the estimates that rank configurations within a plan cannot rank those two.
Likewise the GEMM plan's dpas configurations the estimate cannot tell apart
(`plan.heuristic.model_choices`): each is compiled and the model keeps the fastest -- but one
whose floor (`plan.estimate.systolic_floor`, `modeling.memory_floor`) is no lower than the
cheapest kernel compiled before it, which could not be kept; and where the estimate misprices
staging through SLM (`plan.heuristic.unstaged_alternative`), the kernel chosen so without SLM
against the one chosen with it.  The
weights' `any` of a dpas problem is resolved the same way: the kernel the model chose with
`any`'s default layout, against its configuration with the weights in dpas's VNNI rows
(`plan.gemm.weights_choices`), the faster kept; `Compilation.problem` names the layouts the
kernel reads.  And where the product can be swapped (`plan.heuristic.swaps`: forward or stride-1
backward data, channels along M, pixels along N), the plain product's kernel against the swapped
one's (on XeHPC the swapped one's with `any`'s default weights and with the weights as rows of
output channels, `plan.gemm.swapped_weights`).
`compile_problem(..., choose=False)` compiles the heuristic's lead configuration alone.
`build_kernel(problem, hw)` stops after `schedule` (the IR the interpreter checks; `build_lead`
the lead's IR, nothing compiled).  The functions at the end hand one stage's output to the next:
this module is where the stages meet, and the only one that knows their order.
Nothing here depends on time or on the order of a hash: the same problem gives the same bytes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from . import hw as hwlib
from .build.kernel import Kernel, kernel_name, kernel_record
from .build.strategies import build_plan
from .conv.problem import Problem
from .deep import deeply
from .egraph.engine import Limits
from .egraph.kernel import optimize_stmt_report
from .errors import ConfigError, UnsupportedError
from .ir import Expr, Stmt, Var, const, format_stmt, substitute_stmt
from .lower import CompiledKernel, RegisterAllocationError, compile_kernel
from .lower.kernel import KernelSpec
from .modeling import memory_floor, modeled_cycles
from .passnames import BACKENDS, PASSES, check_pass_names  # noqa: F401 (named here by the API and the tests)
from .plan.config import KEYS, RESERVED_GRFS, Config, prefetches
from .plan.estimate import systolic_floor
from .plan.gemm import formulate, grouped_row_weights, swapped_weights, weights_choices
from .plan.heuristic import (
    choose_config,
    config_candidates,
    model_choices,
    model_decides,
    row_model_choices,
    swaps,
    unstaged_alternative,
)
from .plan.kernel import CodeSizeError, check_code_size
from .plan.strategies import AnyPlan, plan_for
from .schedule import GraphDump, ScheduleOptions, schedule
from .visa import compile_visa

# Saturation stops on iterations and e-graph size only, so that the result does not depend on the
# machine's speed; the time bound is a safety net far above what conv kernels take (about a second).
OPTIMIZE_LIMITS = Limits(iterations=10, nodes=20_000, seconds=600.0)

Show = Callable[[str, str], None]


@dataclass(frozen=True)
class Compilation:
    problem: Problem
    kernel: Kernel  # the conv kernel record; its body is the optimized IR
    compiled: CompiledKernel
    config: Config
    fallbacks: tuple[str, ...] = ()  # why earlier configurations were given up
    seconds: Mapping[str, float] = field(default_factory=dict)  # per pass

    def zebin(self) -> bytes:
        return self.compiled.zebin()


def compile_problem(
    problem: Problem,
    hw: str | hwlib.Platform = "xehpg",
    overrides: Mapping[str, object] | None = None,
    *,
    optimize: bool = True,
    show: Show | None = None,
    dump_graph: str | Path | None = None,
    backend: str = "native",
    choose: bool = True,
) -> Compilation:
    """Compile `problem` for `hw` with the heuristic configuration (`overrides` fix keys of it);
    `backend` "visa" finalizes xegen's instruction selection with IGC's GenX_IR.  `choose=False`
    compiles the heuristic's lead configuration alone (`build_lead`'s, with its fall-backs), none
    of the kernels the model would price against it: a fraction of the time, where which
    configuration it is does not matter (a post-op chain's arithmetic).  Runs with room for deep
    recursion (`deep.deeply`, as the CLI runs), so that which of the heuristic's kernels compiles
    -- the model compares several, and one may hold a chain of lets deeper than Python's default
    limit -- does not depend on the caller."""
    return deeply(
        _compile_problem,
        problem,
        hw,
        overrides,
        optimize=optimize,
        show=show,
        dump_graph=dump_graph,
        backend=backend,
        choose=choose,
    )


def _compile_problem(problem, hw, overrides, *, optimize, show, dump_graph, backend, choose) -> Compilation:
    """The plain product's kernel (`_plain_kernel`), or where the model chooses between it and
    the swapped product (`plan.heuristic.swaps`), the faster of the two."""
    if backend not in BACKENDS:
        raise ConfigError(f"unknown back end '{backend}' (back ends: {', '.join(BACKENDS)})")
    platform = hwlib.platform(hw)
    given = dict(overrides or {})
    if not choose:
        gemm = formulate(problem, str(given.get("plan", "gemm")))
        return _first_fitting(problem, gemm, platform, overrides, optimize, show, dump_graph, backend)
    if "plan" in given or not _priced(backend) or not swaps(formulate(problem), platform):
        return _plain_kernel(problem, platform, overrides, optimize, show, dump_graph, backend)
    # the swapped product with `any`'s default weights and, where 2D blocks load them, as rows of
    # output channels, each with its own heuristic's configuration: neither layout is the faster
    # on every layer (XeHPC bf16 res4a_branch2b, mb1: 3,166 modeled cycles against 3,201)
    rows = swapped_weights(problem, platform)
    swapped = [formulate(weights, "swapped") for weights in ([problem, rows] if rows is not problem else [problem])]
    best = _cheapest(
        [
            partial(_plain_kernel, problem, platform, {**given, "plan": "gemm"}, optimize, None, None, backend),
            *(
                partial(_heuristic_kernel, gemm, platform, {**given, "plan": "swapped"}, optimize, None, None, backend)
                for gemm in swapped
            ),
        ],
        [0.0, *(memory_floor(problem, platform) for _ in swapped)],  # a plain kernel at the memory bound is kept
    )
    return _shown(best, platform, optimize, show, dump_graph, backend)


def _plain_kernel(problem, platform, overrides, optimize, show, dump_graph, backend) -> Compilation:
    """The kernel of `any`'s default weights layout; where `weights_choices` offers others, the
    faster of it and its configuration with each of them (the configuration fixed: the model
    already chose it among several, `model_choices`, and choosing again per layout would compile
    twice as many kernels), and the estimate's lead with each of them where the model chose
    another configuration."""
    default, *others = weights_choices(problem, platform, str((overrides or {}).get("plan", "gemm")))
    if not _priced(backend):
        return _compile_gemm(formulate(default), platform, overrides, optimize, show, dump_graph, backend)
    first = _compile_gemm(formulate(default), platform, overrides, optimize, None, None, backend)
    grouped = grouped_row_weights(problem)
    if first.config.plan == "depthwise" and grouped is not problem:
        # the row plan's lanes run over groups: its weights' `any` as `k… i g o` too, each
        # layout with the heuristic's configuration for it
        given = {**(overrides or {}), "plan": "depthwise"}
        first = _cheapest(
            [lambda: first, partial(_compile_gemm, formulate(grouped), platform, given, optimize, None, None, backend)]
        )
    if not others:
        return _shown(first, platform, optimize, show, dump_graph, backend)
    chosen = {key: getattr(first.config, key) for key in KEYS}
    attempts = [
        partial(_compile_gemm, formulate(other), platform, chosen, optimize, None, None, backend) for other in others
    ]
    # the same configuration issues the same dpas: its kernel with other weights is priced at
    # least at the first's systolic clocks, so where the first is priced at them (or at the
    # problem's compulsory bytes), it is kept without compiling the others
    try:
        cycles = modeled_cycles(first)
    except UnsupportedError:  # (as in `_cheapest`: the model cannot choose)
        return _shown(first, platform, optimize, show, dump_graph, backend)
    systolic = cycles.xmx / cycles.parallel_eus
    floors = [0.0, *(max(systolic, memory_floor(other, platform)) for other in others)]
    # where the model took another configuration than the estimate's lead (with `any`'s layout),
    # the lead with the other layouts too: a layout can favour the other one of the two (XeHPG
    # s8 res2a_branch2b: the lead is the faster with the blocked weights only)
    lead = next(iter(model_choices(formulate(default), platform, overrides)), None)
    if lead is not None and any(getattr(lead, key) != getattr(first.config, key) for key in KEYS):
        given = {key: getattr(lead, key) for key in KEYS}
        attempts += [
            partial(_compile_gemm, formulate(other), platform, given, optimize, None, None, backend) for other in others
        ]
        floors += [memory_floor(other, platform) for other in others]
    best = _cheapest([lambda: first, *attempts], floors)
    return _shown(best, platform, optimize, show, dump_graph, backend)


def _compile_gemm(gemm, platform, overrides, optimize, show, dump_graph, backend) -> Compilation:
    """The kernel of `gemm`'s problem: the heuristic's (`_heuristic_kernel`), or where the model
    decides between plans, the one of theirs it prices lowest."""
    plans = model_decides(gemm, platform, overrides) if _priced(backend) else ()
    if not plans:
        return _heuristic_kernel(gemm, platform, overrides, optimize, show, dump_graph, backend)
    given = dict(overrides or {})
    best = _cheapest(
        [
            partial(_heuristic_kernel, gemm, platform, {**given, "plan": plan}, optimize, None, None, backend)
            for plan in plans
        ]
    )
    return _shown(best, platform, optimize, show, dump_graph, backend)


def _heuristic_kernel(gemm, platform, overrides, optimize, show, dump_graph, backend) -> Compilation:
    """`_ranked_kernel`, or where the model also prices the kernels without SLM staging
    (`unstaged_alternative`), the cheaper of that and `_ranked_kernel` with `slm=0`."""
    gemm = _formulated(gemm, (overrides or {}).get("plan", "gemm"))
    unstaged = unstaged_alternative(gemm, platform, overrides) if _priced(backend) else None
    if unstaged is None:
        return _ranked_kernel(gemm, platform, overrides, optimize, show, dump_graph, backend)
    best = _cheapest(
        [
            partial(_ranked_kernel, gemm, platform, given, optimize, None, None, backend)
            for given in (overrides, unstaged)
        ]
    )
    return _shown(best, platform, optimize, show, dump_graph, backend)


def _ranked_kernel(gemm, platform, overrides, optimize, show, dump_graph, backend) -> Compilation:
    """The kernel of the first fitting configuration, or where the model chooses among the GEMM
    plan's dpas configurations (`model_choices`), the one it prices lowest of theirs (the first,
    the lead, falls back as it would alone; the others that do not fit are left out)."""
    choices = (
        (model_choices(gemm, platform, overrides) or row_model_choices(gemm, platform, overrides))
        if _priced(backend)
        else ()
    )
    if not choices:
        return _first_fitting(gemm.problem, gemm, platform, overrides, optimize, show, dump_graph, backend)

    def lead() -> Compilation:  # the ranking's first, compiled as it is (not ranked again) unless it does not fit
        try:
            return _compile_config(gemm.problem, gemm, choices[0], platform, optimize, None, None, backend)
        except (RegisterAllocationError, CodeSizeError) as error:
            refused = {choices[0]: error}
            return _first_fitting(gemm.problem, gemm, platform, overrides, optimize, None, None, backend, refused)

    others = [
        partial(_compile_config, gemm.problem, gemm, config, platform, optimize, None, None, backend)
        for config in choices[1:]
    ]
    # a choice the model cannot price below the cheapest kernel compiled before it is not compiled
    memory = memory_floor(gemm.problem, platform)
    floors = [
        0.0,
        *(max(systolic_floor(config, gemm, platform), memory) if config.systolic else memory for config in choices[1:]),
    ]
    return _shown(_cheapest([lead, *others], floors), platform, optimize, show, dump_graph, backend)


def _priced(backend: str) -> bool:
    """Whether the model can choose among kernels of `backend`: it prices the native back end's,
    from their branch records (vISA's kernels have none)."""
    return backend == "native"


def _cheapest(attempts: list[Callable[[], Compilation]], floors: Sequence[float] = ()) -> Compilation:
    """The compilation of `attempts` (each with its own fall-backs) the model prices lowest (the
    first on a tie).  `floors[i]`, where given, is a lower bound of the model's price of attempt
    i known before compiling it: an attempt whose floor is no lower than the cheapest compiled
    before it is not compiled (it could not be kept).  When none compiles, the last one's error;
    when one cannot be priced without running it, the cheapest before it (or it, the first)."""
    best: tuple[float, Compilation] | None = None
    error: ConfigError | None = None
    for index, attempt in enumerate(attempts):
        if best is not None and index < len(floors) and floors[index] >= best[0]:
            continue
        try:
            compilation = attempt()
        except ConfigError as failed:
            error = failed
            continue
        try:
            cycles = modeled_cycles(compilation).device
        except UnsupportedError:  # its static counts cannot count it (a branch on loaded data):
            return best[1] if best is not None else compilation  # the model cannot choose
        if best is None or cycles < best[0]:
            best = (cycles, compilation)
    if best is None:
        assert error is not None
        raise error
    return best[1]


def _formulated(gemm, plan: str):
    """`gemm`, or its problem's other product where `plan` asks for the other (plan=swapped)."""
    return gemm if gemm.swapped == (plan == "swapped") else formulate(gemm.problem, plan)


def _shown(best: Compilation, platform, optimize, show, dump_graph, backend) -> Compilation:
    """`best` as the model chose it, compiled again for `show` and `dump_graph` when given (the
    same bytes: compilation is deterministic)."""
    if show is None and dump_graph is None:
        return best
    gemm = formulate(best.problem, best.config.plan)
    again = _compile_config(best.problem, gemm, best.config, platform, optimize, show, dump_graph, backend)
    return replace(again, fallbacks=best.fallbacks)


def _first_fitting(
    problem, gemm, platform, overrides, optimize, show, dump_graph, backend, refused=None
) -> Compilation:
    """The kernel of the first of `config_candidates` whose registers and code fit (those in
    `refused` already did not: listed as fall-backs, not compiled again)."""
    refused = refused or {}
    fallbacks = [f"{config}: {error}" for config, error in refused.items()]
    for config in config_candidates(gemm, platform, overrides):
        if config in refused:
            continue
        try:
            result = _compile_config(problem, gemm, config, platform, optimize, show, dump_graph, backend)
        except (RegisterAllocationError, CodeSizeError) as error:
            fallbacks.append(f"{config}: {error}")
            continue
        return replace(result, fallbacks=tuple(fallbacks))
    raise ConfigError(
        f"no configuration of {problem.desc} fits {platform.display_name}'s registers and "
        f"instruction cache; the last: {fallbacks[-1] if fallbacks else 'none'}"
    )


def _compile_config(problem, gemm, config, platform, optimize, show, dump_graph, backend) -> Compilation:
    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    def done(name: str, render: Callable[[], str]) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[name] = now - clock
        if show is not None:
            show(name, render())
        clock = time.perf_counter()

    plan = plan_for(_formulated(gemm, config.plan), config, platform)
    body = build_plan(plan)
    done("build", lambda: format_stmt(body))
    dump = graph_dump(plan, dump_graph)
    body = schedule_body(plan, body, dump)
    done("schedule", lambda: format_stmt(body))
    kernel = without_unit_ids(kernel_record(plan, body))  # type: ignore[arg-type]  # takes any plan; build/ annotates KernelPlan
    body = kernel.body
    if optimize:
        report = optimize_stmt_report(body, platform, ranges=index_ranges(kernel), limits=OPTIMIZE_LIMITS)
        body = report.stmt
        kernel = replace(kernel, body=body)
        done(
            "optimize",
            lambda: (
                f"// e-graph: {report.saturation.describe()}, cost {report.cost_before} -> "
                f"{report.cost_after}, {report.lets} shared lets\n" + format_stmt(body)
            ),
        )
    try:
        lower = compile_visa if backend == "visa" else compile_kernel
        compiled = lower(kernel_spec(kernel), platform, trace=done)
        check_code_size(len(compiled.instructions), platform)
    except (RegisterAllocationError, CodeSizeError):
        if dump is not None:
            dump.discard()  # only the configuration finally compiled leaves its graphs
        raise
    return Compilation(problem, kernel, compiled, config, seconds=seconds)


# Where the stages meet -------------------------------------------------------------------------


def build_kernel(
    problem: Problem,
    hw: str | hwlib.Platform = "xehpg",
    overrides: Mapping[str, object] | None = None,
    dump_graph: str | Path | None = None,
) -> Kernel:
    """The kernel IR of `problem` on `hw` as built and scheduled (the passes before `optimize`),
    configured by the heuristic and `overrides`.  With `dump_graph`, the K loop's dataflow graph
    before and after each scheduling transform is written there as DOT (and SVG when Graphviz is
    installed)."""
    platform = hwlib.platform(hw)
    gemm = formulate(problem, str((overrides or {}).get("plan", "gemm")))
    if (
        model_decides(gemm, platform, overrides)
        or model_choices(gemm, platform, overrides)
        or row_model_choices(gemm, platform, overrides)
        or ("plan" not in (overrides or {}) and swaps(gemm, platform))
        or unstaged_alternative(gemm, platform, overrides)
        or len(weights_choices(problem, platform)) > 1
    ):  # the layouts and configuration compile_problem would compile, as the model chose them
        compilation = compile_problem(problem, platform, overrides)
        return build_config(compilation.problem, compilation.config, platform, dump_graph)
    return build_lead(problem, platform, overrides, dump_graph)


def build_lead(
    problem: Problem,
    hw: str | hwlib.Platform = "xehpg",
    overrides: Mapping[str, object] | None = None,
    dump_graph: str | Path | None = None,
) -> Kernel:
    """The kernel IR of the heuristic's lead configuration for `problem` (`choose_config`), the
    product unswapped and the weights as `problem` states them: `build_kernel` without compiling
    the kernels the model would choose among.  For checking what a configuration builds where
    which configuration it is does not matter (a post-op chain, a layer's arithmetic): a tenth of
    `build_kernel`'s time where the model chooses among three mad kernels."""
    platform = hwlib.platform(hw)
    gemm = formulate(problem, str((overrides or {}).get("plan", "gemm")))
    return build_config(problem, choose_config(gemm, platform, overrides), platform, dump_graph)


def build_config(
    problem: Problem, config: Config, hw: str | hwlib.Platform = "xehpg", dump_graph: str | Path | None = None
) -> Kernel:
    """The kernel IR of `problem` (its weights' layout as it states it: nothing chosen again) with
    exactly `config`, built and scheduled as `build_kernel` builds it."""
    plan = plan_for(formulate(problem, config.plan), config, hwlib.platform(hw))
    body = schedule_body(plan, build_plan(plan), graph_dump(plan, dump_graph))
    return kernel_record(plan, body)  # type: ignore[arg-type]  # takes any plan; build/ annotates KernelPlan


def schedule_options(plan: AnyPlan) -> ScheduleOptions:
    """How the scheduler treats this kernel's K loop: the configuration's buffer counts, a prefetch
    one iteration ahead of the global loads where the platform has LSC prefetch and the loop is
    multi-buffered, and the register budget left after the reserved GRFs."""
    config, hw = plan.config, plan.hw
    return ScheduleOptions(
        slm_bufs=config.slm_bufs,
        gmem_bufs=config.gmem_bufs,
        prefetch=1 if prefetches(config, hw) and getattr(plan, "prefetch", True) else 0,
        grf_budget=(config.grf - RESERVED_GRFS) * hw.grf_bytes,
    )


def graph_dump(plan: AnyPlan, directory: str | Path | None) -> GraphDump | None:
    """Where the scheduler draws the K loop's graphs (`<kernel>-NN-<transform>-before.dot`, ...)."""
    return None if directory is None else GraphDump(directory, f"{kernel_name(plan.gemm.problem, plan.hw)}-")


def schedule_body(plan: AnyPlan, body: Stmt, dump: GraphDump | None = None) -> Stmt:
    """The builder's `body` with its K loop scheduled as the plan's configuration says."""
    return schedule(body, plan.hw, schedule_options(plan), dump)


def without_unit_ids(kernel: Kernel) -> Kernel:
    """`kernel` with each thread or group id of a dimension of one (always 0) read as 0 in its
    body, so that the optimizer folds what it multiplies.  (Merging such a variable with its
    constant in the e-graph, by a rule, made the extraction of some kernels worse.)"""
    sizes = zip(kernel.thread_ids + kernel.group_ids, kernel.thread_group + kernel.grid, strict=True)
    zeros: dict[Var, Expr] = {v: const(0, v.type) for v, size in sizes if size == 1}
    return replace(kernel, body=substitute_stmt(kernel.body, zeros)) if zeros else kernel


def index_ranges(kernel: Kernel) -> dict[str, range]:
    """Ranges of the id variables, for the e-graph optimizer (`xegen.egraph.kernel.optimize_stmt`)."""
    ranges = {v.name: range(0, size) for v, size in zip(kernel.thread_ids, kernel.thread_group, strict=True)}
    ranges.update({v.name: range(0, size) for v, size in zip(kernel.group_ids, kernel.grid, strict=True)})
    return ranges


def kernel_spec(kernel: Kernel, body: Stmt | None = None) -> KernelSpec:
    """`kernel`'s IR (or `body`, e.g. the optimized IR) with its arguments, ids and shape, as the
    lowering takes it."""
    tx, ty, tz = (v.name for v in kernel.thread_ids)
    gx, gy, gz = (v.name for v in kernel.group_ids)
    return KernelSpec(
        name=kernel.name,
        body=kernel.body if body is None else body,
        arguments=kernel.arguments,
        thread_ids=(tx, ty, tz),
        group_ids=(gx, gy, gz),
        thread_group=kernel.thread_group,
        simd=kernel.simd,
        slm_bytes=kernel.slm_bytes,
        grf_count=kernel.grf_count,
    )
