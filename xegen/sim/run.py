"""`run`: dispatch a zebin kernel over an NDRange in the simulator, as Intel's runtime would."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import hw as hwlib
from ..emit.zebin import Zebin, read_zebin
from ..errors import Error
from . import dispatch
from .errors import HazardError
from .hazards import Hazard, HazardChecker
from .machine import Machine
from .memory import DeviceMemory, Scratch, SharedLocalMemory
from .program import Program
from .relocations import relocate

DEFAULT_BATCH_THREADS = 4096


@dataclass
class RunResult:
    """What a run did (the buffers themselves were updated in place)."""

    kernel: str
    platform: str
    simd: int
    groups: int
    threads: int
    instructions: int  # instructions executed, summed over threads
    lane_instructions: int  # the same weighted by each instruction's execution size
    seconds: float
    hazards: list[Hazard] = field(default_factory=list)
    # thread-executions of each instruction, in program order (the kernel's decoded instructions)
    executions: tuple[int, ...] = ()

    @property
    def lane_instructions_per_second(self) -> float:
        return self.lane_instructions / self.seconds if self.seconds > 0 else 0.0


def platform_of(zebin: Zebin, hw: str | hwlib.Platform | None) -> hwlib.Platform:
    """The platform to run on: `hw`, which must match the zebin's target when it names one."""
    built_for = zebin.platform
    if hw is None:
        if built_for is None:
            raise Error(
                f"the zebin names product family {zebin.product_family} and gfx core {zebin.gfx_core}, "
                "no platform xegen knows; pass hw= to choose a platform"
            )
        return built_for
    platform = hwlib.platform(hw)
    if built_for is not None and built_for is not platform:
        raise Error(f"the zebin was built for {built_for.display_name}, not {platform.display_name}")
    return platform


def run(
    zebin: bytes | Zebin,
    kernel_name: str,
    args: Sequence[Any],
    global_size,
    local_size,
    hw: str | hwlib.Platform | None = None,
    *,
    check_hazards: bool | str = True,
    global_offset=(0, 0, 0),
    batch_threads: int = DEFAULT_BATCH_THREADS,
    max_threads: int = dispatch.DEFAULT_MAX_THREADS,
) -> RunResult:
    """Run kernel `kernel_name` of a zebin over `global_size` work-items in groups of `local_size`.

    `args` are the kernel's arguments in order: numpy arrays for global pointers (read and
    written in place, like device buffers), numbers (or numpy scalars, or bytes) for values,
    `xegen.sim.local(size)` for `__local` pointers.  `check_hazards`: True (or "raise") raises
    `HazardError` listing every SWSB hazard after the run, "report" only returns them in the
    result, False skips the checks.  Threads run in batches of whole work-groups of at most
    `batch_threads` threads; a dispatch of more than `max_threads` hardware threads is an
    error (every work-group is listed up front)."""
    if check_hazards not in (True, False, "raise", "report"):
        raise Error(f"check_hazards must be True, False, 'raise' or 'report', not {check_hazards!r}")
    parsed = zebin if isinstance(zebin, Zebin) else read_zebin(bytes(zebin))
    try:
        kernel = parsed.kernel(kernel_name)
    except KeyError:
        names = ", ".join(k.name for k in parsed.kernels)
        raise Error(f"the zebin has no kernel '{kernel_name}' (it has: {names})") from None
    platform = platform_of(parsed, hw)
    env = kernel.execution_env
    if env.simd_size not in platform.simd_widths and env.simd_size != 1:
        raise Error(f"kernel {kernel_name} is SIMD{env.simd_size}, which {platform.display_name} does not run")
    memory = DeviceMemory()
    launch = dispatch.prepare(
        kernel,
        platform,
        args,
        global_size,
        local_size,
        memory,
        global_offset,
        dispatch.argument_info(dict(parsed.raw), kernel_name),
        max_threads,
        max(1, batch_threads),
    )
    total_threads = dispatch.thread_count(launch)
    if launch.private_per_thread:  # one slot per hardware thread of a batch, as sr0.0 numbers them
        launch.private_base = memory.allocate("private memory", launch.private_per_thread * launch.thread_slots)
    ctd_by_size = dispatch.fill_ioh(launch, memory, args)
    program = Program(relocate(kernel), platform)
    scratch = None
    if launch.scratch_per_thread:
        scratch = Scratch(
            launch.ioh_base + launch.scratch_offset,
            launch.scratch_per_thread,
            dispatch.SCRATCH_SURFACE_STATE >> 4 if platform.compute_walker else None,
        )
    checker = HazardChecker(program, platform) if check_hazards else None

    started = time.perf_counter()
    instructions = lanes = 0
    executions = np.zeros(len(program.instructions), dtype=np.int64)
    for batch in dispatch.group_batches(launch, launch.thread_slots):
        threads = sum(launch.groups[i].threads for i in batch)
        live, group_of_thread = dispatch.batch_layout(launch, batch, threads)
        slm = SharedLocalMemory(len(batch), launch.slm_bytes, platform.max_slm_bytes)
        machine = Machine(
            program,
            platform,
            env.grf_count,
            live,
            memory=memory,
            surfaces=launch.surfaces,
            general_state_base=launch.ioh_base,
            slm=slm,
            group_of_thread=group_of_thread,
            hazards=checker.start_batch(threads) if checker else None,
            scratch=scratch,
            start=program.start_index(dispatch.start_offset(launch, launch.groups[batch[0]].local_size)),
        )
        dispatch.fill_registers(launch, batch, machine.files.grf, machine.files.sr, machine.files.ce, ctd_by_size)
        machine.run()
        instructions += machine.instruction_count
        lanes += machine.lane_instructions
        executions += machine.executions()
    seconds = time.perf_counter() - started
    hazards = checker.hazards if checker else []
    result = RunResult(
        kernel_name,
        platform.name,
        env.simd_size,
        len(launch.groups),
        total_threads,
        instructions,
        lanes,
        seconds,
        hazards,
        tuple(int(n) for n in executions),
    )
    if hazards and check_hazards in (True, "raise"):
        raise HazardError(hazards)
    return result
