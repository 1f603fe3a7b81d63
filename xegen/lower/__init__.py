"""Lowering IR kernels to Xe: instruction selection, register allocation, SWSB, zebin.

    from xegen.lower import KernelSpec, compile_kernel
    compiled = compile_kernel(spec, "xehpg")
    open("k.zebin", "wb").write(compiled.zebin())
    print(compiled.assembly(), compiled.stats)

Passes (docs/lowering.md):
    isel.py / expressions.py / conditions.py / arith.py / convert.py / messages.py / calls.py
        IR -> instructions on virtual registers (`program.py`), with the prologue and end of
        thread of the dispatch ABI (`abi.py`), looking through deep let chains without
        recursion (`ir.walk`, `ir.substitute_stmt`); a block message reuses the address payload an earlier message
        of the same block built (a prefetch, then the load) unless that makes the kernel
        not fit, when selection runs again building every payload; a loop's affine index
        arithmetic is stepped in registers (`inductions.py`)
    flags.py                     a mask computed again while its flag still holds it is dropped,
                                 a loop's invariant masks move in front of it
    deadcode.py                  instructions whose results nobody reads are dropped
    sink.py                      moves out of message temporaries placed where their data is
                                 first needed, so a run of loads is in flight together (not
                                 where the kernel would then not fit)
    liveness.py / regalloc.py    virtual -> physical registers (RegisterAllocationError when
                                 the kernel does not fit: the caller tries a smaller config)
    banks.py                     registers moved so that dpas and three-source reads avoid
                                 GRF bank conflicts where free registers allow
    link (here)                  labels -> branch offsets
    xegen.emit.scoreboard        SWSB annotations and syncs
    xegen.emit.encoder           bytes; `abi.zebin_kernel` the .ze_info record
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .. import hw as hwlib
from ..emit.analysis import Counts, kernel_counts
from ..emit.asm_printer import format_kernel
from ..emit.encoder import encode_kernel
from ..emit.instruction import Instruction
from ..emit.scoreboard import assign_swsb, count_syncs
from ..errors import ConfigError, UnsupportedError
from .abi import Abi, plan_payload
from .builder import Builder
from .counts import ControlFlow
from .deadcode import eliminate_dead_code
from .flags import drop_repeated_flags, hoist_invariant_flags
from .isel import StatementLowering
from .kernel import CompiledKernel, KernelSpec, KernelStats
from .liveness import flatten
from .program import Label, Program
from .regalloc import RegisterAllocationError, allocate, registers_used, rewrite
from .sink import sink_copies

INSTRUCTION_BYTES = 16


def check_kernel_spec(spec: KernelSpec, hw: hwlib.Platform) -> None:
    """Refuse a spec the platform cannot run (GRF count, group shape, SLM)."""
    if spec.grf_count not in hw.grf_counts:
        raise ConfigError(
            f"kernel {spec.name}: {hw.display_name} runs {' or '.join(map(str, hw.grf_counts))} GRFs, "
            f"not {spec.grf_count}"
        )
    if len(spec.thread_group) != 3 or any(t < 1 for t in spec.thread_group):
        raise ConfigError(f"kernel {spec.name}: thread group {spec.thread_group} must be three positive sizes")
    if spec.slm_bytes > hw.max_slm_bytes:
        raise ConfigError(f"kernel {spec.name}: {spec.slm_bytes} bytes of SLM exceed {hw.max_slm_bytes}")


def link(program: Program, instructions: list[Instruction]) -> list[Instruction]:
    """Branch offsets from labels (instructions are 16 bytes; markers take no space)."""
    positions: dict[str, int] = {}
    jumps: list[tuple[int, str]] = []
    at = 0
    for item in program.items:
        if isinstance(item, Label):
            positions[item.name] = at
        elif item.inst is not None:
            if item.target is not None:
                jumps.append((at, item.target))
            at += 1
    out = list(instructions)
    for index, target in jumps:
        out[index] = replace(out[index], jip=(positions[target] - index) * INSTRUCTION_BYTES)
    return out


def statistics(instructions: list[Instruction], grfs: int, slm: int) -> KernelStats:
    """Counts as `xegen.emit.analysis` takes them for any binary, so ours compare with IGC's."""
    counts = kernel_counts(instructions)
    inner = counts.inner or Counts(0, 0, 0, 0)
    return KernelStats(
        instructions=counts.total.instructions,
        inner_loop_instructions=inner.instructions,
        inner_loop_sends=inner.sends,
        inner_loop_fma=inner.fmas,
        sends=counts.total.sends,
        fma_instructions=counts.total.fmas,
        syncs=count_syncs(instructions),
        grfs_used=grfs,
        slm_bytes=slm,
    )


Trace = Callable[[str, Callable[[], str]], None]


def select_instructions(
    spec: KernelSpec, platform: hwlib.Platform, payload, reuse_payloads: bool, sink: bool = True
) -> tuple[Builder, Abi, StatementLowering]:
    """Instruction selection and the passes on its virtual registers (the program is
    `builder.program`); the vISA back end (`xegen.visa`) starts from here too."""
    builder = Builder(platform, reuse_payloads)
    abi = Abi(builder, spec, payload, spec.grf_count)
    lowering = StatementLowering(builder, abi)
    lowering.kernel(spec.body)
    drop_repeated_flags(builder.program)
    hoist_invariant_flags(builder.program)
    eliminate_dead_code(builder.program)
    if sink:
        sink_copies(builder.program, platform.grf_bytes)
    return builder, abi, lowering


# (reuse payloads, sink copies): each later attempt keeps fewer registers live, for a kernel
# the earlier one could not fit
ATTEMPTS = ((True, True), (True, False), (False, False))


def _select_and_allocate(spec: KernelSpec, platform: hwlib.Platform, payload, reuse_payloads: bool, sink: bool):
    """Instruction selection and the passes on its virtual registers, then allocation."""
    builder, abi, lowering = select_instructions(spec, platform, payload, reuse_payloads, sink)
    ops, labels = flatten(builder.program)
    placed = allocate(
        ops, labels, builder.vregs, spec.grf_count, platform.grf_bytes, spec.name, bank_bit=platform.grf_bank_bit
    )
    return builder, abi, lowering, ops, placed


def compile_kernel(spec: KernelSpec, hw: str | hwlib.Platform, trace: Trace | None = None) -> CompiledKernel:
    """Lower `spec` to a native kernel for `hw` (see the module documentation).  `trace(pass,
    render)` is called after each pass (isel, regalloc, swsb) with a function that renders its
    output as text, for `--print-after`."""
    platform = hwlib.platform(hw)
    check_kernel_spec(spec, platform)
    payload = plan_payload(spec, platform)
    for attempt, (reuse_payloads, sink) in enumerate(ATTEMPTS):
        try:
            builder, abi, lowering, ops, placed = _select_and_allocate(spec, platform, payload, reuse_payloads, sink)
            break
        except RegisterAllocationError:
            if attempt == len(ATTEMPTS) - 1:
                raise
    if trace:
        trace("isel", lambda: builder.program.listing(platform))
    instructions = link(builder.program, rewrite(ops, placed, platform.grf_bytes))
    if trace:
        trace("regalloc", lambda: format_kernel(instructions, platform))
    instructions = assign_swsb(instructions, platform)
    if trace:
        trace("swsb", lambda: format_kernel(instructions, platform))
    code = encode_kernel(instructions, platform)
    slm = max(spec.slm_bytes, lowering.slm_bytes)
    if slm > platform.max_slm_bytes:
        raise ConfigError(f"kernel {spec.name}: {slm} bytes of SLM exceed {platform.max_slm_bytes}")
    stats = statistics(instructions, registers_used(placed, builder.vregs, platform.grf_bytes), slm)
    zebin_kernel = abi.zebin_kernel(
        code, spec.grf_count, slm, lowering.uses_barriers, lowering.uses_dpas, lowering.uses_atomics
    )
    control = ControlFlow(tuple(lowering.branches), spec.thread_ids, spec.group_ids, spec.thread_group)
    return CompiledKernel(
        spec.name,
        platform,
        tuple(instructions),
        code,
        zebin_kernel,
        stats,
        payload.simd,
        payload.local_size,
        tuple(v.name for v in spec.arguments),
        control,
    )


__all__ = [
    "CompiledKernel",
    "KernelSpec",
    "KernelStats",
    "RegisterAllocationError",
    "UnsupportedError",
    "compile_kernel",
    "select_instructions",
    "statistics",
    "check_kernel_spec",
]
