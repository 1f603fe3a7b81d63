"""Kernel configuration: how the GEMM of a convolution is blocked and multiplied.

Keys (override any with `--config key=value`):

| key        | meaning                                                                  |
|------------|--------------------------------------------------------------------------|
| fma        | multiply instruction: `dpas` (systolic), `dpasw` (XeHPG: dpas whose fused |
|            | thread pairs share A, `dpasw.py`), `mad` or `dp4a` (int8)                 |
| simd       | SIMD width: the dpas exec size, or the lanes of each mad/dp4a            |
| tg_m, tg_n | threads per thread group along M and N (group shape tg_n x tg_m x 1)      |
| m_tile     | rows of C per thread (dpas: a multiple of 8, or at most 8)               |
| n_tile     | columns of C per thread (a multiple of simd)                             |
| k_block    | K elements per loop iteration (dpas: a multiple of 8 dwords)             |
| k_split    | thread groups sharing one C tile, each taking a slice of K (atomic adds) |
| slm        | 1: stage A and B through shared local memory per group; 0: load direct   |
| slm_bufs   | SLM buffers: 1, 2 (double) or 3 (triple buffering with split barriers)   |
| gmem_bufs  | register copies of the global loads in flight: 1 or 2                    |
| grf        | GRF registers per thread (128 or 256 where the platform has large GRF)   |

`choose_config` picks each key from the platform's facts (`xegen.hw`) and the problem unless it
is overridden, then checks the result: a configuration that cannot work raises `ConfigError`
naming the key and why.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Iterator, Mapping

from ..errors import ConfigError
from ..hw import Platform
from ..ir.types import Type
from .dpasw import check_fused_pairs, fused_pairs_fit
from .gemm import Gemm

if TYPE_CHECKING:
    from .builder import KernelPlan

FMA_KINDS = ("dpas", "dpasw", "mad", "dp4a")
SYSTOLIC = ("dpas", "dpasw")
MAD_OPERAND_BYTES = 64  # a mad operand region spans at most two 32-byte GRFs
RESERVED_GRFS = 16  # r0, thread ids, message headers and address/mask temporaries
SPLIT_ITERATIONS = 32  # K iterations per group below which splitting K is not worth atomics
BUFFER_COUNTS = {"slm_bufs": (1, 2, 3), "gmem_bufs": (1, 2)}


@dataclass(frozen=True)
class Config:
    fma: str
    simd: int
    tg_m: int
    tg_n: int
    m_tile: int
    n_tile: int
    k_block: int
    k_split: int = 1
    slm: int = 0
    slm_bufs: int = 1
    gmem_bufs: int = 1
    grf: int = 128

    @property
    def threads_per_group(self) -> int:
        return self.tg_m * self.tg_n

    @property
    def systolic(self) -> bool:
        """Whether the multiply is dpas (or dpasw)."""
        return self.fma in SYSTOLIC

    @property
    def dpas_rows(self) -> int:
        """dpas repeat count: rows of C each dpas computes."""
        return min(self.m_tile, 8)

    @property
    def a_rows(self) -> int:
        """Rows of A each thread loads and holds: its M tile, or with dpasw half of it (the fused
        partner holds the other half)."""
        return self.m_tile // 2 if self.fma == "dpasw" else self.m_tile

    def __str__(self) -> str:
        return " ".join(f"{k}={v}" for k, v in asdict(self).items())


KEYS = tuple(f.name for f in fields(Config))


def parse_overrides(items: list[str] | tuple[str, ...]) -> dict[str, object]:
    """`key=value` strings (also several per item, separated by spaces or commas)."""
    overrides: dict[str, object] = {}
    for item in items:
        for part in item.replace(",", " ").split():
            key, sep, raw = part.partition("=")
            key = key.strip()
            if not sep or not raw.strip():
                raise ConfigError(f"--config '{part}' is not key=value (keys: {', '.join(KEYS)})")
            if key not in KEYS:
                raise ConfigError(f"unknown config key '{key}' (keys: {', '.join(KEYS)})")
            overrides[key] = _parse_value(key, raw.strip())
    return overrides


def _parse_value(key: str, raw: str) -> object:
    if key == "fma":
        if raw.lower() not in FMA_KINDS:
            raise ConfigError(f"fma={raw}: expected one of {', '.join(FMA_KINDS)}")
        return raw.lower()
    if key == "slm" and raw.lower() in ("on", "off", "true", "false", "yes", "no"):
        return int(raw.lower() in ("on", "true", "yes"))
    try:
        value = int(raw, 0)
    except ValueError:
        raise ConfigError(f"{key}={raw}: expected an integer") from None
    if value < (0 if key == "slm" else 1):
        raise ConfigError(f"{key}={raw}: must be at least {0 if key == 'slm' else 1}")
    if key == "slm" and value > 1:
        raise ConfigError(f"slm={raw}: expected 0 (off) or 1 (on)")
    if key in BUFFER_COUNTS and value not in BUFFER_COUNTS[key]:
        raise ConfigError(f"{key}={raw}: expected {_choices(BUFFER_COUNTS[key])}")
    return value


def _choices(values: tuple[int, ...]) -> str:
    """'1, 2 or 3'"""
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


# Checks --------------------------------------------------------------------------------------

def multiply_types(gemm: Gemm) -> tuple[Type, Type]:
    return gemm.a.type, gemm.b.type


def k_step(config: Config, gemm: Gemm) -> int:
    """K elements one multiply instruction consumes (dpas: 8 dwords; dp4a: one dword; mad: 1)."""
    if config.systolic:
        return 8 * max(1, 4 // gemm.a.type.size)
    if config.fma == "dp4a":
        return 4
    return 1


def prefetches(config: Config, hw: Platform) -> bool:
    """Whether the scheduler prefetches the global loads one iteration ahead: on platforms with
    LSC prefetch messages, when the K loop is multi-buffered."""
    return hw.has_lsc and (config.slm_bufs > 1 or config.gmem_bufs > 1)


def k_iterations(config: Config, gemm: Gemm) -> int:
    """K loop iterations per thread group (after splitting K)."""
    total = -(-gemm.k.size // config.k_block)
    return -(-total // config.k_split)


def check_config(config: Config, gemm: Gemm, hw: Platform) -> None:
    """Raise ConfigError if the configuration cannot run this GEMM on `hw` (GRF and SLM budgets
    are checked when the kernel is planned)."""
    a, b = multiply_types(gemm)
    is_int8 = a.kind in ("s8", "u8")
    if config.systolic:
        if not hw.has_dpas:
            raise ConfigError(f"fma={config.fma}: {hw} has no dpas (use mad, or dp4a for int8)")
        if config.fma == "dpasw":
            check_fused_pairs(config, hw)
        if a.size != b.size or a.size not in (1, 2):
            raise ConfigError(f"fma={config.fma} needs 16-bit float or int8 operands, not {a}/{b} (xegen has no tf32)")
        if config.simd != hw.dpas_exec_size:
            raise ConfigError(f"simd={config.simd}: dpas on {hw} runs at exec size {hw.dpas_exec_size}")
        if config.m_tile > 8 and config.m_tile % 8:
            raise ConfigError(f"m_tile={config.m_tile}: dpas computes up to 8 rows at once, so use at most 8 "
                              "or a multiple of 8")
    elif config.fma == "dp4a":
        if not is_int8:
            raise ConfigError(f"fma=dp4a multiplies int8 values, not {a}")
    if config.simd not in hw.simd_widths:
        raise ConfigError(f"simd={config.simd}: {hw} runs SIMD {', '.join(map(str, hw.simd_widths))}")
    if config.fma in ("mad", "dp4a") and config.simd * 4 > MAD_OPERAND_BYTES:
        raise ConfigError(f"simd={config.simd}: {config.fma} operands of {config.simd} dwords exceed "
                          f"{MAD_OPERAND_BYTES} bytes; use simd ≤ {MAD_OPERAND_BYTES // 4}")
    if config.n_tile % config.simd:
        raise ConfigError(f"n_tile={config.n_tile} is not a multiple of simd={config.simd}")
    step = k_step(config, gemm)
    if config.k_block % step:
        raise ConfigError(f"k_block={config.k_block} is not a multiple of {step} (the K one {config.fma} consumes)")
    if config.threads_per_group * config.simd > hw.max_work_group_size:
        raise ConfigError(f"tg_m*tg_n={config.threads_per_group} threads of SIMD {config.simd} exceed {hw}'s "
                          f"{hw.max_work_group_size} work items per group")
    for key, allowed in BUFFER_COUNTS.items():
        if getattr(config, key) not in allowed:
            raise ConfigError(f"{key}={getattr(config, key)}: expected {_choices(allowed)}")
    if config.slm_bufs > 1 and not config.slm:
        raise ConfigError(f"slm_bufs={config.slm_bufs} buffers the SLM copies of A and B: it needs slm=1")
    if config.grf not in hw.grf_counts:
        raise ConfigError(f"grf={config.grf}: {hw} kernels use {' or '.join(map(str, hw.grf_counts))} GRFs")
    if config.k_split > 1:
        c = gemm.c.type
        if c.kind not in ("f32", "s32"):
            raise ConfigError(f"k_split={config.k_split} adds partial results with atomics, which needs an f32 or "
                              f"s32 output, not {c}")
        if gemm.problem.relu:
            raise ConfigError(f"k_split={config.k_split}: relu cannot be applied to partial sums")
        if is_int8 and (c.kind != "s32" or gemm.bias_mode):
            # f32 partial sums (or a rounded bias) would not add up to int8's exact result
            raise ConfigError(f"k_split={config.k_split}: int8 partial results add exactly only into an s32 "
                              "output without bias")
        total = -(-gemm.k.size // config.k_block)
        if config.k_split > total:
            raise ConfigError(f"k_split={config.k_split} exceeds the {total} K blocks of k_block={config.k_block}")


# Heuristic -----------------------------------------------------------------------------------

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


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


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
    from .builder import BUDGET_KEYS, check_budgets, plan_layout  # the plan knows the register and SLM footprint

    given = dict(overrides or {})
    unknown = set(given) - set(KEYS)
    if unknown:
        raise ConfigError(f"unknown config key '{sorted(unknown)[0]}' (keys: {', '.join(KEYS)})")
    last_error: ConfigError | None = None
    found = False
    layouts: dict[tuple, KernelPlan | ConfigError] = {}  # candidates differing only in budgets share one
    for candidate in _candidates(gemm, hw, given):
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
    fitting_n = max(_round_up(n, simd), simd)
    if fma in SYSTOLIC:
        # big tiles and two K steps per iteration: every iteration's loads, SLM traffic and
        # synchronization are then shared by more dpas (as many as the registers allow)
        # 32 rows only where they are K-contiguous in memory, so that vector messages gather them
        # (backward weights reads A along M)
        rows_are_lines = gemm.a.unit.get(gemm.k.inner.name) is not None
        m_tiles = [32, 16, 8] if m >= 128 and rows_are_lines else [16, 8] if m >= 32 else [min(8, m)]
        if fma == "dpasw":  # each thread of a pair holds half of the rows
            m_tiles = [_round_up(t, 2) for t in m_tiles]
        n_tiles = [t for t in (4 * simd, 2 * simd, simd) if t <= fitting_n] or [simd]
        step = 8 * max(1, 4 // gemm.a.type.size)
        return m_tiles, n_tiles, [2 * step, step]
    m_tiles = [8, 4] if m >= 8 else [m]
    widest = 2 * simd if n >= 4 * simd else simd
    n_tiles = [t for t in (widest, simd) if t <= fitting_n]
    return m_tiles, n_tiles, [32, 16] if fma == "dp4a" else [8, 4]


def _candidates(gemm: Gemm, hw: Platform, given: dict[str, object]) -> list[Config]:
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
            tg_n = _round_up(tg_n, 2)  # fused pairs are neighbours along N
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


def _buffering_options(config: Config, slm: int, given: dict[str, object]) -> list[tuple[int, int]]:
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
    if gemm.c.type.kind not in ("f32", "s32") or gemm.problem.relu or gemm.problem.kind != "bwd_w":
        return 1
    total = -(-gemm.k.size // config.k_block)
    if total < 2 * SPLIT_ITERATIONS:
        return 1
    return min(16, total // SPLIT_ITERATIONS)
