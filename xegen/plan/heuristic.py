"""The configuration heuristic: the configurations worth trying for a GEMM on a platform, best first.

`config_space` lists the `Config`s worth trying: tile shapes from the platform's facts, for each
the thread group the problem's tiles fill and, for problems that would leave the device idle,
smaller groups and threads splitting K (`tg_k`); SLM staging, register modes and buffer counts.
It ranks them by the model's cycles as `estimate.py` estimates them from the configuration
alone (close estimates keep the plain order: largest tiles first).  `config_candidates` keeps
those whose kernel plan fits the registers, SLM and instruction cache (`plan_layout`,
`check_budgets`, `check_code_size`), and keeps the plain order's first choice ahead unless the
estimate's best is clearly faster; `choose_config` takes the first.  Where a row plan applies
(`strategies.py`), its fitting configurations come first, ranked the same way by
`row_estimate.py`, then its fallbacks (smaller blocks, unranked), which lowering reaches only
when every one before has run out of registers, before it gives up on the plan.  A key given in
`overrides` is fixed; every other is the heuristic's.  For first layers the estimates cannot
choose between plan=first and the GEMM plan: `model_decides` names the two, and the compiler
compiles both and keeps the kernel the model prices lower.  Nor can they rank the GEMM plan's
dpas configurations within ESTIMATE_MARGIN of each other: `model_choices` names the lead and up
to three other shapes that close, and the compiler keeps the kernel the model prices lowest.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace

from ..errors import ConfigError
from ..hw import Platform
from .config import (
    GEMM_PLANS,
    KEYS,
    SYSTOLIC,
    Config,
    Given,
    a_rows_per_grf,
    check_config,
    k_iterations,
    mad_operand_bytes,
    multiply_types,
)
from .dpasw import fused_pairs_fit
from .estimate import Estimate, Estimator, pipeline_shape
from .gemm import Gemm, swap_unsuited
from .kernel import KernelPlan, check_budgets, check_code_size, layout_key, plan_layout, unpacks_k_rows
from .row_estimate import row_estimate
from .strategies import first_unsuited, plan_for, strategy_configs, strategy_fallbacks
from .tiles import round_up

SPLIT_ITERATIONS = 32  # K iterations per group below which splitting K is not worth atomics


def _pick_fma(gemm: Gemm, hw: Platform) -> str:
    a, _ = multiply_types(gemm)
    if a.kind in ("s8", "u8"):
        return "dpas" if hw.has_dpas else "dp4a"
    if a.kind in ("f16", "bf16") and hw.has_dpas:
        return "dpas"
    return "mad"


def _pick_simd(fma: str, gemm: Gemm, hw: Platform) -> int:
    """dpas's exec size; for mad and dp4a the widest lanes whose operands fit two GRFs (SIMD32 on
    XeHPC, 16 elsewhere), but SIMD32 only where N fills it, a narrower N would pad every mad (an
    8-channel layer's backward data on XeHPC: 4,706 -> 7,178 modeled cycles at SIMD32), and not
    for backward weights, whose SIMD32 tiles the estimate ranks poorly (resnet_50 on XeHPC:
    res5a_branch1 0.86x the cycles, res3a_branch1 1.12x, res4a_branch2b 1.04x)."""
    if fma in SYSTOLIC and hw.has_dpas:
        return hw.dpas_exec_size
    widest = 16 if gemm.problem.kind == "bwd_w" else max(gemm.n.size, 16)
    return max(w for w in hw.simd_widths if w * 4 <= mad_operand_bytes(hw) and w <= widest)


def choose_config(gemm: Gemm, hw: Platform, overrides: Mapping[str, object] | None = None) -> Config:
    """The configuration for `gemm` on `hw`: the heuristic's choice for every key not in
    `overrides` -- the first of `config_candidates`."""
    return next(config_candidates(gemm, hw, overrides))


def model_decides(gemm: Gemm, hw: Platform, overrides: Mapping[str, object] | None = None) -> tuple[str, ...]:
    """The plans whose kernels the model, not the estimate, chooses between (`pipeline.compile_problem`
    compiles the first fitting configuration of each and keeps the kernel the model prices lower):
    plan=first and the GEMM plan wherever plan=first applies (a first layer: at most 4 input
    channels, `strategies.first_unsuited`) and no plan is given; () elsewhere.  Not int8, whose
    first layers keep the GEMM plan's dpas/dp4a (`first_layer_configs`).

    Neither estimate ranks these two plans: over 167 first-layer kernels (bench/e2e/first_choice.py,
    docs/conv.md) the GEMM plan's dpas estimate was down to a seventh of the model (resnet_50's
    conv1 FWD_B bf16 on XeHPC: 3,504 estimated, 24,281 modeled) and plan=first's strided backward
    data a fifth (alexnet's 11x11 stride-4 conv1 f32 on XeHPG: 49,177 against 244,306), and the
    heuristic's plan (the row plan wherever it was offered and fit) was the slower one on 23 of
    them, by up to 3x.  A first layer is one layer of a network: compiling it twice costs little."""
    if (overrides and "plan" in overrides) or gemm.problem.types.is_int8 or first_unsuited(gemm.problem, hw):
        return ()
    return ("first", "gemm")


def swaps(gemm: Gemm, hw: Platform) -> bool:
    """Whether the model chooses between the plain GEMM product and the swapped one
    (`gemm.swap_unsuited`, `pipeline.compile_problem`): forward and stride-1 backward-data dpas
    convolutions with a spatial kernel (not a first layer, which has its own plan), whose pixels the
    plain product gathers and moves into A's rows and the swapped one gathers straight into B. The
    estimate does not price that difference: resnet_50's 3x3 layers (bf16, mb1) modeled 0.69-0.99x
    the plain product's cycles on XeHPC and 0.77-0.78x on XeHPG (res2a, res4a) with the swapped
    product's first configuration; a 1x1 layer (2D blocks, nothing moved) 2.2x. Not int8: the model
    kept the plain product on all 20 of resnet_50's u8:s8:f32 layers on XeHPG, and the lowering
    refuses some swapped int8 kernels (a predicated vector operation on lanes that do not start at a
    multiple of 4)."""
    problem = gemm.problem
    spatial = any(problem.desc.field("k", d) > 1 for d in problem.desc.used)
    if problem.types.is_int8 or not spatial or not first_unsuited(problem, hw):
        return False
    return swap_unsuited(problem) is None and _pick_fma(gemm, hw) in SYSTOLIC


def model_choices(gemm: Gemm, hw: Platform, overrides: Mapping[str, object] | None = None) -> tuple[Config, ...]:
    """The GEMM plan's configurations whose kernels the model, not the estimate, chooses
    between (`pipeline.compile_problem` compiles each and keeps the kernel the model prices
    lowest, the first on a tie): the first of `config_candidates` (the lead) and the next ones
    that the estimate puts within ESTIMATE_MARGIN of its best, for dpas of other shapes
    (`_shape`: tiles, group, tg_k, slm), up to MODEL_CHOICES in all, for mad and dp4a of other
    M tiles, up to MAD_MODEL_CHOICES (none when m_tile is given); () where nothing else is that
    close or the estimate cannot rank the lead.  Where a row plan fits it leads: ().

    Within the margin the estimate's order of dpas kernels is noise against the model: on
    resnet_50's forward f16 layers on XeHPG (mb1) the estimate tied the lead of res3a_branch2a
    (4x4 threads, 7053 estimated, 8661 modeled) with tg_k=2 (7020, 7028 modeled), and put
    res4b_branch2a's lead (tg_k=4, 5388 estimated, 7709 modeled) 16 % ahead of tg_k=8 (6400
    estimated, 6080 modeled); the tuner's kernels were 1.27x faster in geomean (docs/conv.md).
    The model prices the lead too, so no kernel it chooses is slower than the lead's."""
    given = dict(overrides or {})
    fma = given.get("fma") or _pick_fma(gemm, hw)
    if given.get("plan", "gemm") not in GEMM_PLANS or _fitting_strategies(gemm, hw, given):
        return ()
    if fma not in SYSTOLIC and "m_tile" in given:
        return ()
    found = _gemm_candidates(gemm, hw, given, none_fit_ok=False)
    assert found is not None  # none_fit_ok=False raises instead
    best, ordered = found
    lead = next(ordered)
    if not _estimated_well(lead[1], gemm):
        return ()
    bound = best.device / (1 - ESTIMATE_MARGIN)
    # dpas: the best of each shape; mad and dp4a: of each M tile (the rows a thread computes,
    # which set how evenly the threads fill the EUs, see MAD_MODEL_CHOICES)
    kind, most = (_shape, MODEL_CHOICES) if fma in SYSTOLIC else (_m_tile, MAD_MODEL_CHOICES)
    choices = {kind(lead[1]): lead[1]}
    for _, config, estimated in ordered:
        if len(choices) == most or not _estimated_well(config, gemm) or estimated.device > bound:
            break  # ranked by the estimate: the rest are further from its best
        choices.setdefault(kind(config), config)
    return tuple(choices.values()) if len(choices) > 1 else ()


def _m_tile(config: Config) -> tuple[int, ...]:
    return (config.m_tile,)


def row_model_choices(gemm: Gemm, hw: Platform, overrides: Mapping[str, object] | None = None) -> tuple[Config, ...]:
    """The depthwise plan's configurations whose kernels the model, not the estimate, chooses
    between (as `model_choices` for dpas): the lead and the estimate's best of each other shape
    (`_shape`), up to MODEL_CHOICES in all, among the configurations the planner offers (not its
    fallbacks); () where another plan leads or no other shape fits.

    The row estimate ranks a latency-bound depthwise layer's blocks by up to twice the model's
    cycles, and not in the model's order: mobilenet_v2 block16_dw in bf16 on XeHPC, 2 outputs of
    16 channels per thread estimated 585 and modeled 328 cycles, 2 of 32 channels 754 and 293.
    Its kernels are short (about half a second to compile), and a kernel the model prices at
    the memory floor keeps the others from being compiled (`pipeline._cheapest`)."""
    given = dict(overrides or {})
    if given.get("plan", "depthwise") != "depthwise":
        return ()
    ranked, _ = _strategy_candidates(gemm, hw, given)
    if not ranked or ranked[0].plan != "depthwise":
        return ()
    choices: dict[tuple[int, ...], Config] = {}
    for config in ranked:
        choices.setdefault(_shape(config), config)
        if len(choices) == MODEL_CHOICES:
            break
    return tuple(choices.values()) if len(choices) > 1 else ()


def unstaged_alternative(gemm: Gemm, hw: Platform, overrides: Mapping[str, object] | None = None) -> Given | None:
    """The overrides (`slm=0` added) under which the model also prices the GEMM plan's kernels
    without SLM staging beside the heuristic's (`pipeline.compile_problem` keeps the cheaper),
    where the heuristic's lead stages A and B through SLM and B's columns are gathered
    (`columns_gathered`: the transposed phases of a first layer's strided backward data) or
    neither operand is contiguous along K (`k_strided`: backward weights); None elsewhere.

    There the estimate prices the unstaged kernels at up to four times the model and the staged
    ones at the model's cycles, so it never ranks an unstaged one within the margin, though they
    are the faster: resnet_50's conv1 BWD_D bf16 (mb1) on XeHPG, the staged lead (tg_k=4)
    87,546 cycles estimated and 87,308 modeled, m_tile=3 n_tile=32 k_block=16 tg_k=4 slm=0
    123,396 estimated and 30,316 modeled (staged, SLM moves each gathered column twice more);
    on XeHPC 24,402 modeled against the unstaged 6,458.  Backward weights bf16 of res2a_branch2b
    on XeHPG: the staged lead (16 x 8 tiles, tg_k=2) 22,560 modeled, the unstaged kernel
    (16 x 32, tg_k=16) 11,976."""
    given = dict(overrides or {})
    if "slm" in given or given.get("plan", "gemm") != "gemm" or not (columns_gathered(gemm) or k_strided(gemm)):
        return None
    if _fitting_strategies(gemm, hw, given) or not choose_config(gemm, hw, given).slm:
        return None
    return {**given, "slm": 0}


# The kernels compiled where the model chooses among dpas configurations (`model_choices`): each
# costs a compilation (about a second and a half on XeHPG), and on resnet_50's f16 forward
# layers the model's choice came from the first four shapes within the margin.
MODEL_CHOICES = 4


# Likewise the mad (and dp4a) kernels of different M tiles.  A thread's rows set the number of
# threads, and where that number leaves some EUs one thread more than others, a smaller tile can
# be the faster although each thread does less per load: res2a_branch2b f32 (mb1), 8 rows a thread
# make 784 threads on XeLP's 96 EUs (9 on the busiest EU for 8.2 on average), 6 rows 1,046 (11
# for 10.9), 179,442 cycles modeled against 168,322; on XeHPG 7 rows, 32,198 against 36,295.  The
# estimate priced those two 1 % and 4 % apart.  Where the lead spreads its threads evenly, another
# tile can still win: res3a_branch2b's lead on XeLP (8 rows, 1,568 threads, 17 on the busiest EU
# for 16.3) 176,889 cycles, 6 rows with two threads along K 169,494.  Each other choice is one
# more compilation: the acceptance matrix's 260 kernels took 732 instead of 583.
MAD_MODEL_CHOICES = 3


def _shape(config: Config) -> tuple[int, ...]:
    """What sets a kernel's work and its threads: tiles, group, threads and groups along K, SLM
    staging.
    Configurations that differ only in fma, buffer counts and registers count as one (the
    first of them in the ranking), so that the few compiled kernels differ in shape."""
    c = config
    return (c.m_tile, c.n_tile, c.k_block, c.tg_m, c.tg_n, c.tg_k, c.k_split, c.slm)


def config_candidates(gemm: Gemm, hw: Platform, overrides: Mapping[str, object] | None = None) -> Iterator[Config]:
    """Every configuration whose kernel plan fits the GRF and SLM budgets, best first: the
    order of `config_space`, except that the first fitting configuration of the plain order
    (largest tiles, the plain group, no threads along K) comes first unless the estimate's best
    is at most 1 - ESTIMATE_MARGIN of it (the estimate is not precise enough to trust a smaller
    gain).  Lowering takes the next one when a kernel's registers do not fit after all.  When
    none fits, raises the error of the least demanding candidate (the last one of the space
    before ranking: the smallest tiles and buffers), so its message says what even that lacks."""
    given = dict(overrides or {})
    unknown = set(given) - set(KEYS)
    if unknown:
        raise ConfigError(f"unknown config key '{sorted(unknown)[0]}' (keys: {', '.join(KEYS)})")
    strategies = _fitting_strategies(gemm, hw, given)
    yield from strategies
    if given.get("plan", "gemm") not in GEMM_PLANS:
        return
    found = _gemm_candidates(gemm, hw, given, none_fit_ok=bool(strategies))
    if found is not None:
        yield from (config for _, config, _ in found[1])


def _gemm_candidates(
    gemm: Gemm, hw: Platform, given: Given, none_fit_ok: bool
) -> tuple[Estimate, Iterator[tuple[int, Config, Estimate]]] | None:
    """The GEMM plan's fitting configurations, lead first (`config_candidates`), each with its
    plain-order index and estimate, and the estimate's best; checked for fit as they are read.
    When none fits: None if `none_fit_ok` (a row plan fits), else the least demanding one's error."""
    ranked = _ranked(gemm, hw, given)
    fits = _Fits(gemm, hw)
    best = next((item for item in ranked if fits(item)), None)
    if best is None:
        if none_fit_ok:
            return None
        raise max(fits.errors, key=lambda item: item[0])[1]
    plain = next(item for item in sorted(ranked, key=lambda item: item[0]) if fits(item))
    first = _lead(best, plain)

    def ordered() -> Iterator[tuple[int, Config, Estimate]]:
        yield first
        yield from (item for item in ranked if item is not first and fits(item))

    return best[2], ordered()


def _fitting_strategies(gemm: Gemm, hw: Platform, given: Given) -> list[Config]:
    """The other strategies' configurations whose plans fit (their planners check them), best
    first: ranked by the estimate of the model (`row_estimate.py`), the planner's first kept
    ahead unless the estimate's best is clearly faster (ESTIMATE_MARGIN, as for the GEMM plan);
    then their fallbacks, in order; when `given` asks for such a plan and none fits, the last
    planner's error."""
    ranked, fallbacks = _strategy_candidates(gemm, hw, given)
    return ranked + fallbacks


def _strategy_candidates(gemm: Gemm, hw: Platform, given: Given) -> tuple[list[Config], list[Config]]:
    """`_fitting_strategies` in two parts: the offered configurations, ranked, and the fallbacks."""
    fitting: list[tuple[int, Config, Estimate]] = []
    fallbacks: list[Config] = []
    last_error = None
    offered = strategy_configs(gemm, hw, given)
    for index, candidate in enumerate(offered + strategy_fallbacks(gemm, hw, given)):
        try:
            plan = plan_for(gemm, candidate, hw)
        except ConfigError as error:
            last_error = error
            continue
        assert not isinstance(plan, KernelPlan)  # the strategies list the row plans' configurations only
        if index < len(offered):
            fitting.append((len(fitting), candidate, row_estimate(plan)))
        else:
            fallbacks.append(candidate)
    if not fitting:
        if not fallbacks and given.get("plan", "gemm") not in GEMM_PLANS:
            raise last_error or ConfigError(f"plan={given['plan']}: no configuration applies")
        return [], fallbacks
    ranked = sorted(fitting, key=lambda item: (_bucket(item[2].device), item[0]))
    first = _lead(ranked[0], fitting[0])
    return [first[1]] + [config for _, config, _ in ranked if config is not first[1]], fallbacks


def _lead(best: tuple[int, Config, Estimate], plain: tuple[int, Config, Estimate]) -> tuple[int, Config, Estimate]:
    """The configuration to try first: the estimate's best if it is at most 1 - the margin
    (ESTIMATE_MARGIN for dpas, MAD_ESTIMATE_MARGIN otherwise) of the plain order's first, else
    that one."""
    margin = ESTIMATE_MARGIN if best[1].systolic else MAD_ESTIMATE_MARGIN
    return best if best[2].device <= (1 - margin) * plain[2].device else plain


# The estimate's best must be this much faster than the plain choice to replace it.  On
# resnet_50's forward layers (mb1) the estimate of the chosen kernel was 0.81 to 1.12 of the
# model for f32 on XeHPG and XeLP, but 0.14 to 0.91 (median 0.59) for bf16 on XeHPC (latency-
# bound dpas kernels), and a 12 % estimated gain (conv1 f32 on XeHPG, k_block=16 tg_k=2) was a
# 3 % loss under the model.  Without dpas (mad, dp4a) the estimate is close enough for half
# that margin.  Measured on resnet_50's 20 distinct layers (mb1), forward: no kernel slower; f32
# faster on 4 XeLP layers (res3a_branch2b 0.75), 1 XeHPG and 3 XeHPC (1x1 layers to 0.17: the
# plain order's large groups left most EUs idle), int8 on XeLP on 1 (conv1 0.85); backward
# (bench/e2e/backward.py, 24 layers): f32 and XeLP bf16 geomean 0.81 to 1.0 per platform and
# direction, none slower but mobilenet_v2's depthwise BWD_WB (1.06 XeLP, 1.21 XeHPG), then a GEMM,
# since given its own row plan.
ESTIMATE_MARGIN = 0.2
MAD_ESTIMATE_MARGIN = 0.1


class _Fits:
    """Whether a ranked configuration's plan fits the budgets, each layout planned once for the
    configurations that differ only in budgets; the errors with the plain-order index."""

    def __init__(self, gemm: Gemm, hw: Platform):
        self.gemm, self.hw = gemm, hw
        self.errors: list[tuple[int, ConfigError]] = []
        self._layouts: dict[tuple, KernelPlan | ConfigError] = {}
        self._verdicts: dict[Config, bool] = {}

    def __call__(self, item: tuple[int, Config, Estimate]) -> bool:
        demand, candidate, estimated = item
        if candidate not in self._verdicts:
            try:
                self._check(candidate, estimated)
                self._verdicts[candidate] = True
            except ConfigError as error:
                self.errors.append((demand, error))
                self._verdicts[candidate] = False
        return self._verdicts[candidate]

    def _check(self, candidate: Config, estimated: Estimate) -> None:
        gemm, hw = self.gemm, self.hw
        check_config(candidate, gemm, hw)
        key = layout_key(candidate, hw)
        if key not in self._layouts:
            try:
                self._layouts[key] = plan_layout(gemm, candidate, hw)
            except ConfigError as error:
                self._layouts[key] = error
        layout = self._layouts[key]
        if isinstance(layout, ConfigError):
            raise layout
        check_budgets(replace(layout, config=candidate))
        check_code_size(estimated.instructions, hw, "estimated ")  # after the registers: their message first


def _tile_options(fma: str, simd: int, gemm: Gemm, hw: Platform) -> tuple[list[int], list[int], list[int]]:
    """Tile sizes to try, largest first: (m_tile, n_tile, k_block) options."""
    m, n = gemm.m.size, gemm.n.size
    fitting_n = max(round_up(n, simd), simd)
    if fma in SYSTOLIC:
        # big tiles and two K steps per iteration: every iteration's loads, SLM traffic and
        # synchronization are then shared by more dpas (as many as the registers allow)
        # 32 rows only where they are K-contiguous in memory, so that vector messages gather them
        # (backward weights reads A along M)
        rows_are_lines = gemm.a.unit.get(gemm.k.inner.name) is not None
        few = [min(8, round_up(m, a_rows_per_grf(hw)))]  # A rows in whole GRFs
        m_tiles = [32, 16, 8] if m >= 128 and rows_are_lines else [16, 8] if m >= 32 else few
        if fma == "dpasw":  # each thread of a pair holds half of the rows
            m_tiles = [round_up(t, 2) for t in m_tiles]
        n_tiles = [t for t in (4 * simd, 2 * simd, simd) if t <= fitting_n] or [simd]
        step = 8 * max(1, 4 // gemm.a.type.size)
        return m_tiles, n_tiles, [2 * step, step]
    # 7, 6 and 5 rows: tiles of whole output rows where 8 would straddle them (widths 7, 14,
    # 28), elsewhere threads spread more evenly over the EUs (MAD_MODEL_CHOICES)
    m_tiles = [8, 7, 6, 5, 4] if m >= 8 else [m]
    if fma == "mad" and columns_gathered(gemm):
        # one vector message of simd lanes, a K-contiguous column each, is B in mad's layout
        return m_tiles, [simd], [16, 8]
    # two registers' worth of columns where N leaves two such tiles; at SIMD32 (XeHPC) also where
    # it leaves one: a 64-channel layer's mads then read each pixel's value once for 64 columns
    widest = 2 * simd if n >= 4 * simd or (simd > 16 and n >= 2 * simd) else simd
    n_tiles = [t for t in (widest, simd) if t <= fitting_n]
    # longer K blocks share each iteration's address arithmetic among more multiplies
    if fma == "dp4a":
        return m_tiles, n_tiles, [32, 16, 64]
    k_blocks = [8, 4, 16]
    # a block of whole rows of K's innermost component where 8 would straddle them and the
    # kernel unpacks K row by row (bf16 backward weights' pixels in rows of 7, 14, 28): its rows
    # share one unpacking (estimate.py); elsewhere an odd block only costs messages
    inner = gemm.k.inner.size
    whole = next((d for d in range(7, 4, -1) if inner % 8 and inner % d == 0), None)
    if whole is not None and unpacks_k_rows(Config(fma, simd, 1, 1, 1, 1, 1), gemm):  # (tiles do not matter)
        k_blocks.insert(1, whole)
    return m_tiles, n_tiles, k_blocks


def k_strided(gemm: Gemm) -> bool:
    """Neither A nor B reads K's innermost component with stride 1 (backward weights: K is the
    pixels, the slow dimension of src and diff_dst in channels-last layouts), so both come into
    dpas's layouts by gathers and moves, which the estimate prices only roughly without SLM."""
    k = gemm.k.inner.name
    return not any(
        dim is not None and view.layout.unit_stride_run(dim) > 1
        for view in (gemm.a, gemm.b)
        for dim in [view.unit.get(k)]
    )


def columns_gathered(gemm: Gemm) -> bool:
    """B is contiguous along K but not along N (the transposed backward data of a first layer),
    so its columns are gathered, not its rows loaded."""
    return gemm.b.unit.get(gemm.n.inner.name) is None and gemm.b.unit.get(gemm.k.inner.name) is not None


def config_space(gemm: Gemm, hw: Platform, given: Given) -> list[Config]:
    """Every configuration the heuristic considers for `gemm` on `hw` with the keys of `given`
    fixed, before any check (`config_candidates` keeps those whose plan fits): the other
    strategies' configurations (`strategies.py`) first where they apply, and their fallbacks,
    then the GEMM plan's, best first by the estimate of the model (`estimate.py`)."""
    strategies = strategy_configs(gemm, hw, given) + strategy_fallbacks(gemm, hw, given)
    if given.get("plan", "gemm") not in GEMM_PLANS:
        return strategies
    return strategies + [config for _, config, _ in _ranked(gemm, hw, given)]


def _ranked(gemm: Gemm, hw: Platform, given: Given) -> list[tuple[int, Config, Estimate]]:
    """The space with each configuration's place in the plain order (largest tiles first, the
    heuristic's own group shape, no split of K, SLM on, more buffers first) and its estimate,
    ranked by the estimated cycles; configurations within RANK_TOLERANCE of each other keep the
    plain order."""
    estimator = Estimator(gemm, hw)
    scored = [(index, config, estimator.estimate(config)) for index, config in enumerate(_plain_space(gemm, hw, given))]
    return sorted(
        scored,
        key=lambda item: (
            not _estimated_well(item[1], gemm),
            _bucket(item[2].device) if _estimated_well(item[1], gemm) else 0,
            item[0],
        ),
    )


def _estimated_well(config: Config, gemm: Gemm) -> bool:
    """Whether the estimate may rank `config`: not int8 loaded straight into dpas's layout, whose
    byte reorders and the waits between them it does not model (on res5a_branch2a u8:s8:f32 on
    XeHPG it gave 3095 clocks where the model gives 81995); those follow the others in plain order."""
    return not (config.systolic and not config.slm and gemm.a.type.size == 1)


RANK_TOLERANCE = 0.02  # estimates closer than this are a tie (the estimate is not that precise)


def _bucket(cycles: float) -> int:
    return int(math.log(max(cycles, 1.0)) / math.log1p(RANK_TOLERANCE))


def _plain_space(gemm: Gemm, hw: Platform, given: Given) -> list[Config]:
    fma = given.get("fma") or _pick_fma(gemm, hw)
    simd = given.get("simd") or _pick_simd(fma, gemm, hw)
    m_tiles, n_tiles, k_blocks = _tile_options(fma, simd, gemm, hw)

    def options(key: str, choices: list[int]) -> list[int]:
        return [given[key]] if key in given else list(dict.fromkeys(choices))

    tiles: Iterable[tuple[int, int, int]] = itertools.product(
        options("k_block", k_blocks), options("n_tile", n_tiles), options("m_tile", m_tiles)
    )
    if fma in SYSTOLIC:
        # each K block's B is interleaved once per group; more rows per thread share that work
        tiles = sorted(tiles, key=lambda t: (-t[2], -t[1], -t[0]))
    configs: list[Config] = []
    for k_block, n_tile, m_tile in tiles:
        for tg_m, tg_n, tg_k in _thread_groups(gemm, hw, given, fma, simd, m_tile, n_tile, k_block):
            base = Config(
                fma,
                simd,
                tg_m,
                tg_n,
                m_tile,
                n_tile,
                k_block,
                tg_k=tg_k,
                k_split=given.get("k_split", 1),
                slm=given.get("slm", 0),
                slm_bufs=given.get("slm_bufs", 1),
                gmem_bufs=given.get("gmem_bufs", 1),
                grf=given.get("grf", min(hw.grf_counts)),
                # (a plan given for the other product is refused by the planner, `plan_kernel`)
                plan=given.get("plan") or ("swapped" if gemm.swapped else "gemm"),
            )
            for k_split in [base.k_split] if "k_split" in given else _k_splits(base, gemm):
                configs += _variants(replace(base, k_split=k_split), gemm, hw, given, fma, options)
    return list(dict.fromkeys(configs))


def _variants(
    base: Config, gemm: Gemm, hw: Platform, given: Given, fma: str, options: Callable[[str, list[int]], list[int]]
) -> list[Config]:
    """`base` with each fma (dpasw too), SLM staging, register count and buffering to try."""
    staged = fma in SYSTOLIC and base.threads_per_group >= 4
    wants_slm = given.get("slm_bufs", 1) > 1  # SLM buffering asked for: stage through SLM
    # the swapped product gathers B straight into dpas's layout: staged too, it modeled slower
    slm_options = options("slm", [1] if wants_slm else [1, 0] if staged and not gemm.swapped else [0])
    grf_options = options("grf", sorted(hw.grf_counts))
    # on XeHPG a fused pair shares its A: half the A loads and registers (`dpasw.py`)
    fmas = ["dpasw", fma] if "fma" not in given and fma == "dpas" and fused_pairs_fit(base, hw) else [fma]
    return [
        replace(base, fma=f, slm=s, grf=g, slm_bufs=slm_bufs, gmem_bufs=gmem_bufs)
        for f in fmas
        for s in slm_options
        for g in grf_options
        for gmem_bufs, slm_bufs in _buffering_options(base, s, given, gemm, hw)
    ]


K_THREADS = (1, 2, 4, 8)  # threads of a group along K (tg_k) the heuristic tries


def _thread_groups(
    gemm: Gemm, hw: Platform, given: Given, fma: str, simd: int, m_tile: int, n_tile: int, k_block: int
) -> list[tuple[int, int, int]]:
    """(tg_m, tg_n, tg_k) to try for one tile shape: as many threads along M and N as the
    problem has tiles, up to 4 each (the plain shape, first); then, to fill a device the plain
    shape would leave idle, fewer along M and N (more, smaller groups) and more along K (each a
    share of the K blocks, their partial sums added through SLM)."""
    tiles_m, tiles_n = -(-gemm.m.size // m_tile), -(-gemm.n.size // n_tile)
    tg_n = given.get("tg_n") or max(1, min(4, tiles_n))
    if fma == "dpasw" and "tg_n" not in given:
        tg_n = round_up(tg_n, 2)  # fused pairs are neighbours along N
    tg_m = given.get("tg_m") or max(1, min(4, tiles_m))
    while tg_m * tg_n * simd > hw.max_work_group_size and "tg_m" not in given and tg_m > 1:
        tg_m //= 2
    shapes = [(tg_m, tg_n)]
    for m, n in ((max(1, tg_m // 2), max(1, tg_n // 2)), (1, 1)):
        m = given.get("tg_m") or m
        n = given.get("tg_n") or (round_up(n, 2) if fma == "dpasw" else n)
        shapes.append((m, n))
    blocks = -(-gemm.k.size // k_block)
    k_threads = (
        [given["tg_k"]]
        if "tg_k" in given
        else [t for t in _k_threads(gemm, hw, simd, tiles_m * tiles_n) if t == 1 or blocks >= 2 * t]
    )
    groups = []
    for m, n in dict.fromkeys(shapes):
        for k in k_threads:
            if m * n * k * simd <= hw.max_work_group_size or "tg_k" in given:
                groups.append((m, n, k))
    return groups or [(tg_m, tg_n, k_threads[0])]


def _k_threads(gemm: Gemm, hw: Platform, simd: int, tiles: int) -> tuple[int, ...]:
    """The tg_k to try for C in `tiles` tiles: K_THREADS, and where 8 threads per tile would still
    leave some of the device's thread slots (EUs x threads per EU) empty -- few tiles and a long
    K, as backward weights at small batches -- also the doublings up to a whole group along K
    (max_work_group_size / simd threads).  Only there: elsewhere the tiles fill the device
    without them, and a larger tg_k costs a longer combine of the partial sums in SLM."""
    slots = hw.eu_count * hw.threads_per_eu(min(hw.grf_counts))
    if tiles * gemm.groups * K_THREADS[-1] >= slots:
        return K_THREADS
    wider, t = [], 2 * K_THREADS[-1]
    while t <= hw.max_work_group_size // simd:
        wider.append(t)
        t *= 2
    return K_THREADS + tuple(wider)


def _buffering_options(config: Config, slm: int, given: Given, gemm: Gemm, hw: Platform) -> list[tuple[int, int]]:
    """(gmem_bufs, slm_bufs) to try, best first (oneDNN's, docs/design.md): SLM double buffering with at
    most 8 threads per group, else triple; two register copies of the global loads for dpas.  When
    the registers do not fit, gmem_bufs drops to 1 first; when SLM does not, slm_bufs goes 3 -> 2 -> 1.
    Buffer counts whose software pipeline would leave the steady loop fewer than two trips are
    left out (unless given): the K loop stays a loop, not a ramp-up and a ramp-down unrolled."""
    slm_bufs = (2 if config.threads_per_group <= 8 else 3) if slm else 1
    gmem_bufs = 2 if config.systolic else 1
    gmem_choices = [given["gmem_bufs"]] if "gmem_bufs" in given else list(range(gmem_bufs, 0, -1))
    slm_choices = [given["slm_bufs"]] if "slm_bufs" in given else list(range(slm_bufs, 0, -1))
    iterations = k_iterations(config, gemm)

    def loops(g: int, s: int) -> bool:
        depth, unroll = pipeline_shape(replace(config, gmem_bufs=g, slm_bufs=s, slm=slm), hw)
        return depth == 0 or iterations - depth >= 2 * unroll or not {"gmem_bufs", "slm_bufs"}.isdisjoint(given)

    return [(g, s) for s in slm_choices for g in gmem_choices if loops(g, s)]


def _k_splits(config: Config, gemm: Gemm) -> list[int]:
    """The k_split values to try: `_pick_k_split`'s, and for bf16 and f16 outputs also 1, the
    three round trips of their scratch buffer against the groups' share of K being the model's
    to weigh (`model_choices`)."""
    split = _pick_k_split(config, gemm)
    return [split, 1] if split > 1 and gemm.c.type.kind not in ("f32", "s32") else [split]


def _pick_k_split(config: Config, gemm: Gemm) -> int:
    """Split K across groups when the loop is long (backward weights: f32 C takes atomic adds,
    bf16 and f16 C meet in an f32 scratch buffer, `scratch.py`)."""
    if gemm.problem.kind != "bwd_w" or gemm.problem.post_ops or not gemm.c.type.is_float:
        return 1
    total = -(-gemm.k.size // config.k_block)
    if total < 2 * SPLIT_ITERATIONS:
        return 1
    return min(16, total // SPLIT_ITERATIONS)
