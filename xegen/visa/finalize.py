"""The vISA back end's driver: select, translate, finalize with GenX_IR, wrap in xegen's zebin.

The finalizer's code replaces ours; everything the runtime sees stays xegen's: the kernel
name, the `.ze_info` (payload arguments at the dispatch ABI's offsets, SIMD width, required
group size, SLM, barriers, dpas) and the GRF count the kernel was planned for, which GenX_IR
is told (`-TotalGRFNum`).  The finalizer reports spills in its listing's header
(`//.spill size N`); xegen's zebin declares no scratch space, so a kernel that spills is
finalized again from a selection that keeps no message payloads for reuse and, if it still
spills, refused with `SpillError`, a `RegisterAllocationError`: the pipeline then compiles the
next configuration, as when xegen's own allocation fails.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from .. import hw as hwlib
from ..emit.asm_printer import format_kernel
from ..emit.decoder import decode_with_sizes
from ..emit.footprint import GRF_UNITS, instruction_facts
from ..errors import ConfigError
from ..lower import (
    CompiledKernel,
    KernelSpec,
    RegisterAllocationError,
    check_kernel_spec,
    select_instructions,
    statistics,
)
from ..lower.abi import plan_payload
from ..oracles import genx_ir_finalize
from .text import translate

Trace = Callable[[str, Callable[[], str]], None]
# Every xegen branch is a uniform NoMask jump: keep it a jmpi (without the option the finalizer
# makes each predicated jump SIMD control flow, goto and join over the dispatch width).
FINALIZER_OPTIONS = ("-keepScalarJmp",)
_HEADER = re.compile(r"^//\.(instCount|spill size|private memory size)\s+(\d+)", re.MULTILINE)


class SpillError(RegisterAllocationError):
    """IGC's finalizer spilled registers; xegen's zebins have no scratch space.  As when xegen's
    own allocation fails, the pipeline then tries the next configuration (a smaller tile)."""

    def __init__(self, message: str, spill_bytes: int):
        super().__init__(message, spill_bytes, 0)


@dataclass(frozen=True)
class FinalizerReport:
    """What GenX_IR's listing says of the kernel it wrote."""

    instructions: int
    spill_bytes: int
    private_bytes: int

    @staticmethod
    def parse(listing: str) -> FinalizerReport:
        found = {key: int(value) for key, value in _HEADER.findall(listing)}
        return FinalizerReport(
            found.get("instCount", 0), found.get("spill size", 0), found.get("private memory size", 0)
        )


@dataclass(frozen=True)
class VisaCompiledKernel(CompiledKernel):
    """A `CompiledKernel` whose code IGC's finalizer wrote, with the vISA it started from."""

    visa: str = ""
    finalizer: FinalizerReport | None = None


def compile_visa(spec: KernelSpec, hw: str | hwlib.Platform, trace: Trace | None = None) -> VisaCompiledKernel:
    """Lower `spec` through vISA and GenX_IR (passes: isel, visa, finalize)."""
    platform = hwlib.platform(hw)
    check_kernel_spec(spec, platform)
    # the finalizer gives r1 to its own variables: the arguments are loaded, never taken inline
    payload = replace(plan_payload(spec, platform), inline_bytes=0)
    for reuse_payloads in (True, False):  # (a second attempt shows its passes again)
        builder, abi, lowering = select_instructions(spec, platform, payload, reuse_payloads)
        if trace:
            trace("isel", functools.partial(builder.program.listing, platform))
        visa = translate(builder.program, spec.name, platform, payload.simd)
        if trace:
            trace("visa", functools.partial(str, visa))
        finalized = genx_ir_finalize(visa, platform, spec.grf_count, FINALIZER_OPTIONS)
        report = FinalizerReport.parse(finalized.listing)
        if not report.spill_bytes and not report.private_bytes:
            break
    else:
        raise SpillError(
            f"kernel {spec.name}: IGC's finalizer spilled {report.spill_bytes} bytes "
            f"({report.private_bytes} bytes of private memory) with {spec.grf_count} GRFs; the vISA "
            "back end writes zebins without scratch space",
            report.spill_bytes + report.private_bytes,
        )
    instructions, sizes = decode_with_sizes(finalized.code, platform)  # the finalizer compacts
    if trace:
        trace("finalize", lambda: format_kernel(instructions, platform, sizes=sizes))
    slm = max(spec.slm_bytes, lowering.slm_bytes)
    if slm > platform.max_slm_bytes:
        raise ConfigError(f"kernel {spec.name}: {slm} bytes of SLM exceed {platform.max_slm_bytes}")
    stats = statistics(instructions, grfs_touched(instructions, platform), slm)
    zebin_kernel = abi.zebin_kernel(
        finalized.code, spec.grf_count, slm, lowering.uses_barriers, lowering.uses_dpas, lowering.uses_atomics
    )
    return VisaCompiledKernel(
        spec.name,
        platform,
        tuple(instructions),
        finalized.code,
        zebin_kernel,
        stats,
        payload.simd,
        payload.local_size,
        tuple(v.name for v in spec.arguments),
        None,
        visa=visa,
        finalizer=report,
    )


def grfs_touched(instructions, platform: hwlib.Platform) -> int:
    """How many GRFs the code reads or writes (the finalizer's allocation, as our `grfs_used`)."""
    units = 0
    for inst in instructions:
        facts = instruction_facts(inst, platform)
        units |= facts.reads.units | facts.writes.units
    return bin(units & ((1 << GRF_UNITS) - 1)).count("1")


__all__ = ["FinalizerReport", "SpillError", "VisaCompiledKernel", "compile_visa", "grfs_touched"]
