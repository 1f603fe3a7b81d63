"""The configuration heuristic: the configurations worth trying for a GEMM on a platform, best first.

`config_candidates` orders the space of `Config`s from the largest tiles down and keeps those
whose kernel plan fits the registers and SLM (`plan_layout`, `check_budgets`); `choose_config`
takes the first.  A key given in `overrides` is fixed; every other is the heuristic's.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Iterator, Mapping

from ..errors import ConfigError
from ..hw import Platform
from .config import KEYS, MAD_OPERAND_BYTES, SYSTOLIC, Config, check_config, multiply_types, prefetches
from .dpasw import fused_pairs_fit
from .gemm import Gemm
from .kernel import BUDGET_KEYS, KernelPlan, check_budgets, plan_layout
from .tiles import round_up

SPLIT_ITERATIONS = 32  # K iterations per group below which splitting K is not worth atomics


def _pick_fma(gemm: Gemm, hw: Platform) -> str:
    a, _ = multiply_types(gemm)
    if a.kind in ("s8", "u8"):
        return "dpas" if hw.has_dpas else "dp4a"
    if a.kind in ("f16", "bf16") and hw.has_dpas:
        return "dpas"
    return "mad"


def _pick_simd(fma: str, hw: Platform) -> int:
    if fma in SYSTOLIC and hw.has_dpas:
        return hw.dpas_exec_size
    fitting = [w for w in hw.simd_widths if w * 4 <= MAD_OPERAND_BYTES]
    return max(fitting)


def choose_config(gemm: Gemm, hw: Platform, overrides: Mapping[str, object] | None = None) -> Config:
    """The configuration for `gemm` on `hw`: the heuristic's choice for every key not in
    `overrides` -- the first of `config_candidates`."""
    return next(config_candidates(gemm, hw, overrides))


def config_candidates(gemm: Gemm, hw: Platform, overrides: Mapping[str, object] | None = None) -> Iterator[Config]:
    """Every configuration whose kernel plan fits the GRF and SLM budgets, best first: from the
    largest tiles down (for dpas m_tile first, then n_tile, then k_block), dpasw before dpas where
    the platform and the tiles allow it, SLM on before off, more buffers before fewer.  Lowering
    takes the next one when a kernel's registers do not fit after all.  When none fits, raises the error of the last
    candidate: the least demanding one, so its message says what even that lacks."""
    given = dict(overrides or {})
    unknown = set(given) - set(KEYS)
    if unknown:
        raise ConfigError(f"unknown config key '{sorted(unknown)[0]}' (keys: {', '.join(KEYS)})")
    last_error: ConfigError | None = None
    found = False
    layouts: dict[tuple, KernelPlan | ConfigError] = {}  # candidates differing only in budgets share one
    for candidate in config_space(gemm, hw, given):
        try:
            check_config(candidate, gemm, hw)
            key = (replace(candidate, **{k: 0 for k in BUDGET_KEYS}), prefetches(candidate, hw))
            if key not in layouts:
                try:
                    layouts[key] = plan_layout(gemm, candidate, hw)
                except ConfigError as error:
                    layouts[key] = error
            layout = layouts[key]
            if isinstance(layout, ConfigError):
                raise layout
            check_budgets(replace(layout, config=candidate))
        except ConfigError as error:
            last_error = error
            continue
        found = True
        yield candidate
    if not found:
        assert last_error is not None
        raise last_error


def _tile_options(fma: str, simd: int, gemm: Gemm) -> tuple[list[int], list[int], list[int]]:
    """Tile sizes to try, largest first: (m_tile, n_tile, k_block) options."""
    m, n = gemm.m.size, gemm.n.size
    fitting_n = max(round_up(n, simd), simd)
    if fma in SYSTOLIC:
        # big tiles and two K steps per iteration: every iteration's loads, SLM traffic and
        # synchronization are then shared by more dpas (as many as the registers allow)
        # 32 rows only where they are K-contiguous in memory, so that vector messages gather them
        # (backward weights reads A along M)
        rows_are_lines = gemm.a.unit.get(gemm.k.inner.name) is not None
        m_tiles = [32, 16, 8] if m >= 128 and rows_are_lines else [16, 8] if m >= 32 else [min(8, m)]
        if fma == "dpasw":  # each thread of a pair holds half of the rows
            m_tiles = [round_up(t, 2) for t in m_tiles]
        n_tiles = [t for t in (4 * simd, 2 * simd, simd) if t <= fitting_n] or [simd]
        step = 8 * max(1, 4 // gemm.a.type.size)
        return m_tiles, n_tiles, [2 * step, step]
    m_tiles = [8, 4] if m >= 8 else [m]
    widest = 2 * simd if n >= 4 * simd else simd
    n_tiles = [t for t in (widest, simd) if t <= fitting_n]
    return m_tiles, n_tiles, [32, 16] if fma == "dp4a" else [8, 4]


def config_space(gemm: Gemm, hw: Platform, given: Mapping[str, object]) -> list[Config]:
    """Every configuration the heuristic considers for `gemm` on `hw` with the keys of `given`
    fixed, best first, before any check (`config_candidates` keeps those whose plan fits)."""
    fma = given.get("fma") or _pick_fma(gemm, hw)
    simd = given.get("simd") or _pick_simd(fma, hw)
    m_tiles, n_tiles, k_blocks = _tile_options(fma, simd, gemm)

    def options(key: str, choices: list[int]) -> list[int]:
        return [given[key]] if key in given else list(dict.fromkeys(choices))

    tiles = itertools.product(options("k_block", k_blocks), options("n_tile", n_tiles), options("m_tile", m_tiles))
    if fma in SYSTOLIC:
        # each K block's B is interleaved once per group; more rows per thread share that work
        tiles = sorted(tiles, key=lambda t: (-t[2], -t[1], -t[0]))
    configs: list[Config] = []
    for k_block, n_tile, m_tile in tiles:
        # as many threads as the problem has tiles, up to 4 per dimension
        tg_n = given.get("tg_n") or max(1, min(4, -(-gemm.n.size // n_tile)))
        if fma == "dpasw" and "tg_n" not in given:
            tg_n = round_up(tg_n, 2)  # fused pairs are neighbours along N
        tg_m = given.get("tg_m") or max(1, min(4, -(-gemm.m.size // m_tile)))
        while tg_m * tg_n * simd > hw.max_work_group_size and "tg_m" not in given and tg_m > 1:
            tg_m //= 2
        base = Config(fma, simd, tg_m, tg_n, m_tile, n_tile, k_block,
                      k_split=given.get("k_split", 1), slm=given.get("slm", 0),
                      slm_bufs=given.get("slm_bufs", 1), gmem_bufs=given.get("gmem_bufs", 1),
                      grf=given.get("grf", min(hw.grf_counts)))
        if "k_split" not in given:
            base = replace(base, k_split=_pick_k_split(base, gemm))
        staged = fma in SYSTOLIC and base.threads_per_group >= 4
        wants_slm = given.get("slm_bufs", 1) > 1  # SLM buffering asked for: stage through SLM
        slm_options = options("slm", [1] if wants_slm else [1, 0] if staged else [0])
        grf_options = options("grf", sorted(hw.grf_counts))
        # on XeHPG a fused pair shares its A: half the A loads and registers (`dpasw.py`)
        fmas = ["dpasw", fma] if "fma" not in given and fma == "dpas" and fused_pairs_fit(base, hw) else [fma]
        configs += [replace(base, fma=f, slm=s, grf=g, slm_bufs=slm_bufs, gmem_bufs=gmem_bufs)
                    for f in fmas for s in slm_options for g in grf_options
                    for gmem_bufs, slm_bufs in _buffering_options(base, s, given)]
    return list(dict.fromkeys(configs))


def _buffering_options(config: Config, slm: int, given: Mapping[str, object]) -> list[tuple[int, int]]:
    """(gmem_bufs, slm_bufs) to try, best first (oneDNN's, docs/design.md): SLM double buffering with at
    most 8 threads per group, else triple; two register copies of the global loads for dpas.  When
    the registers do not fit, gmem_bufs drops to 1 first; when SLM does not, slm_bufs goes 3 -> 2 -> 1."""
    slm_bufs = (2 if config.threads_per_group <= 8 else 3) if slm else 1
    gmem_bufs = 2 if config.systolic else 1
    gmem_choices = [given["gmem_bufs"]] if "gmem_bufs" in given else list(range(gmem_bufs, 0, -1))
    slm_choices = [given["slm_bufs"]] if "slm_bufs" in given else list(range(slm_bufs, 0, -1))
    return [(g, s) for s in slm_choices for g in gmem_choices]


def _pick_k_split(config: Config, gemm: Gemm) -> int:
    """Split K across groups when the loop is long and C can take atomic adds (backward weights)."""
    if gemm.c.type.kind not in ("f32", "s32") or gemm.problem.post_ops or gemm.problem.kind != "bwd_w":
        return 1
    total = -(-gemm.k.size // config.k_block)
    if total < 2 * SPLIT_ITERATIONS:
        return 1
    return min(16, total // SPLIT_ITERATIONS)
