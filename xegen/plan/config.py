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
| tg_k       | threads per group sharing one C tile, each taking every tg_k-th K block; |
|            | their partial sums are added through SLM before the epilogue            |
| k_split    | thread groups sharing one C tile, each taking a slice of K (atomic adds) |
| slm        | 1: stage A and B through shared local memory per group; 0: load direct   |
| slm_bufs   | SLM buffers: 1, 2 (double) or 3 (triple buffering with split barriers)   |
| gmem_bufs  | register copies of the global loads in flight: 1, 2 or 3                 |
| grf        | GRF registers per thread (128 or 256 where the platform has large GRF)   |
| plan       | kernel strategy: `gemm` (the GEMM of `kernel.py`), `depthwise`            |
|            | (`depthwise.py`; backward weights `depthwise_weights.py`) or `first`      |
|            | (`first_layer.py`; backward weights `first_layer_weights.py`, backward    |
|            | data `first_layer_data.py`)                                               |

The heuristic (`heuristic.py`) picks each key from the platform's facts (`xegen.hw`) and the
problem unless it is overridden; `check_config` checks the result: a configuration that cannot
work raises `ConfigError` naming the key and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ..errors import ConfigError
from ..hw import Platform
from ..ir.types import Type
from .dpasw import check_fused_pairs
from .gemm import Gemm

FMA_KINDS = ("dpas", "dpasw", "mad", "dp4a")
PLANS = ("gemm", "depthwise", "first", "swapped")  # kernel strategies: which planner and builder a config selects
GEMM_PLANS = ("gemm", "swapped")  # the GEMM planner's: the plain product and the swapped one (`gemm.formulate`)
SYSTOLIC = ("dpas", "dpasw")
RESERVED_GRFS = 16  # r0, thread ids, message headers and address/mask temporaries
BUFFER_COUNTS = {"slm_bufs": (1, 2, 3), "gmem_bufs": (1, 2, 3)}


@dataclass(frozen=True)
class Config:
    fma: str
    simd: int
    tg_m: int
    tg_n: int
    m_tile: int
    n_tile: int
    k_block: int
    tg_k: int = 1
    k_split: int = 1
    slm: int = 0
    slm_bufs: int = 1
    gmem_bufs: int = 1
    grf: int = 128
    plan: str = "gemm"

    @property
    def threads_per_group(self) -> int:
        return self.tg_m * self.tg_n * self.tg_k

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
        """`key=value` for every key (`plan` only when it is not the GEMM plan, first then)."""
        items = asdict(self)
        plan = items.pop("plan")
        words = [f"{k}={v}" for k, v in items.items()]
        return " ".join(([f"plan={plan}"] if plan != "gemm" else []) + words)


KEYS = tuple(f.name for f in fields(Config))

#: the config keys a user fixed, as `parse_overrides` reads them: an int for every key but fma and
#: plan (a str); the planners read each key as its type, which the values of a Mapping cannot say
Given = Mapping[str, Any]


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
    if key == "plan":
        if raw.lower() not in PLANS:
            raise ConfigError(f"plan={raw}: expected one of {', '.join(PLANS)}")
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
    """K loop iterations per thread (after splitting K across groups and across the group's
    threads along K)."""
    total = -(-gemm.k.size // config.k_block)
    return -(-total // (config.k_split * config.tg_k))


@dataclass(frozen=True)
class TapLoop:
    """K as two loops: `outer` kernel taps, each `inner` iterations over the tap's channels."""

    outer: int
    inner: int


def tap_loop(config: Config, gemm: Gemm) -> TapLoop | None:
    """The two loops when K's channels (its innermost component) take several iterations and the
    K loop is one the builder can nest: K not split across groups, nothing staged through SLM or
    multi-buffered (the scheduler pipelines only the inner loop, and would ramp up and down once
    per tap)."""
    k = gemm.k
    if config.k_split != 1 or config.slm or config.gmem_bufs != 1 or len(k.components) < 2:
        return None
    k_group = config.tg_k * config.k_block
    channels, iterations = k.inner.size, k_iterations(config, gemm)
    if channels % k_group or channels == k_group or iterations * k_group != k.size:
        return None
    return TapLoop(iterations // (channels // k_group), channels // k_group)


def may_guard_tile(config: Config, gemm: Gemm) -> bool:
    """Whether the K loop may skip an iteration whose A tile every mask drops (the builder's tile
    guard): not where the loop has a barrier or dpasw (the threads of a group, or a pair, would
    run different iterations), is multi-buffered (the scheduler pipelines a loop of plain
    statements, not one `if`), or also sums B's columns (the skipped iterations' sums would be
    lost)."""
    return not config.slm and config.fma != "dpasw" and config.gmem_bufs == 1 and not gemm.sums_b_columns


def a_rows_per_grf(hw: Platform) -> int:
    """dpas A rows (8 dwords each) in one GRF: a dpas's A starts on a GRF boundary."""
    return max(1, hw.grf_bytes // 32)


def mad_operand_bytes(hw: Platform) -> int:
    """The widest operand of a mad or dp4a: a register region spans at most two GRFs."""
    return 2 * hw.grf_bytes


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
            raise ConfigError(
                f"m_tile={config.m_tile}: dpas computes up to 8 rows at once, so use at most 8 or a multiple of 8"
            )
        whole = a_rows_per_grf(hw)
        # (the first-layer plan lays its A rows out in whole GRFs itself: `tiles.dpas_a_layout`)
        if config.a_rows % whole and config.plan != "first":
            raise ConfigError(
                f"m_tile={config.m_tile}: dpas reads A (rows of 8 dwords) from whole GRFs, "
                f"{whole} rows each on {hw}: use a multiple of {whole}"
            )
    elif config.fma == "dp4a":
        if not is_int8:
            raise ConfigError(f"fma=dp4a multiplies int8 values, not {a}")
    if config.simd not in hw.simd_widths:
        raise ConfigError(f"simd={config.simd}: {hw} runs SIMD {', '.join(map(str, hw.simd_widths))}")
    if config.fma in ("mad", "dp4a") and config.simd * 4 > mad_operand_bytes(hw):
        raise ConfigError(
            f"simd={config.simd}: {config.fma} operands of {config.simd} dwords exceed {mad_operand_bytes(hw)} "
            f"bytes (two GRFs) on {hw}; use simd ≤ {mad_operand_bytes(hw) // 4}"
        )
    if config.n_tile % config.simd:
        raise ConfigError(f"n_tile={config.n_tile} is not a multiple of simd={config.simd}")
    step = k_step(config, gemm)
    if config.k_block % step:
        raise ConfigError(f"k_block={config.k_block} is not a multiple of {step} (the K one {config.fma} consumes)")
    if config.threads_per_group * config.simd > hw.max_work_group_size:
        raise ConfigError(
            f"tg_m*tg_n*tg_k={config.threads_per_group} threads of SIMD {config.simd} exceed {hw}'s "
            f"{hw.max_work_group_size} work items per group"
        )
    for key, allowed in BUFFER_COUNTS.items():
        if getattr(config, key) not in allowed:
            raise ConfigError(f"{key}={getattr(config, key)}: expected {_choices(allowed)}")
    if config.slm_bufs > 1 and not config.slm:
        raise ConfigError(f"slm_bufs={config.slm_bufs} buffers the SLM copies of A and B: it needs slm=1")
    if config.grf not in hw.grf_counts:
        raise ConfigError(f"grf={config.grf}: {hw} kernels use {' or '.join(map(str, hw.grf_counts))} GRFs")
    if config.k_split > 1:
        c = gemm.c.type
        # backward weights sum 16-bit outputs in an f32 scratch buffer (`scratch.py`)
        in_scratch = c.is_float and gemm.problem.kind == "bwd_w"
        if c.kind not in ("f32", "s32") and not in_scratch:
            raise ConfigError(
                f"k_split={config.k_split} adds partial results with atomics, which needs an f32 or s32 output, not {c}"
            )
        if gemm.problem.post_ops:
            raise ConfigError(f"k_split={config.k_split}: post-ops cannot be applied to partial sums")
        if replace(gemm.problem.quantization, src_zero_point=0):
            # (a source zero point's compensation is linear: each slice subtracts its own share)
            raise ConfigError(f"k_split={config.k_split}: scales and dst zero points cannot be applied to partial sums")
        if is_int8 and (c.kind != "s32" or gemm.bias_mode):
            # f32 partial sums (or a rounded bias) would not add up to int8's exact result
            raise ConfigError(
                f"k_split={config.k_split}: int8 partial results add exactly only into an s32 output without bias"
            )
    total = -(-gemm.k.size // config.k_block)
    if config.k_split * config.tg_k > total:
        raise ConfigError(
            f"k_split={config.k_split} x tg_k={config.tg_k} slices of K exceed the {total} K blocks "
            f"of k_block={config.k_block}"
        )
