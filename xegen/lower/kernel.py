"""The interface of lowering: what it takes (`KernelSpec`) and what it gives (`CompiledKernel`).

`KernelSpec` is platform-neutral and knows nothing of convolutions: a name, the IR body,
the kernel arguments in order (buffers as `ptr` variables, values as scalar variables), the
names of the id variables (thread index in the group and group index, per dimension), the
thread-group shape, the SIMD width to dispatch at, SLM bytes and the GRF count.  The body
declares each argument and id as an external `let` (`let src:ptr;`).

`compile_kernel(spec, hw)` (in `__init__.py`) returns a `CompiledKernel`: the final
instructions (registers allocated, SWSB assigned), the `ZebinKernel` record, statistics, and
how to launch it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import hw as hwlib
from ..emit.asm_printer import format_kernel
from ..emit.instruction import Instruction
from ..emit.zebin import ZebinKernel, write_zebin
from ..errors import UnsupportedError
from ..ir import Stmt, Var
from .counts import ControlFlow, static_executions


@dataclass(frozen=True)
class KernelSpec:
    name: str
    body: Stmt
    arguments: tuple[Var, ...]  # in kernel-argument order: ptr variables are buffers
    thread_ids: tuple[str, str, str]  # thread index in the group, per dimension
    group_ids: tuple[str, str, str]  # group index, per dimension
    thread_group: tuple[int, int, int]  # threads per group, per dimension
    simd: int  # dispatch SIMD width (lanes of the runtime's view; every instruction is NoMask)
    slm_bytes: int = 0
    grf_count: int = 128
    # buffers only by their 64-bit addresses, never as binding-table surfaces (IGC's
    # -cl-intel-greater-than-4GB-buffer-required); without it XeLP reads and writes them by A32 offsets
    stateless: bool = False

    def launch(self, grid: tuple[int, int, int], simd: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(global size, local size) in work-items that run `grid` groups."""
        local = (self.thread_group[0] * simd, self.thread_group[1], self.thread_group[2])
        return (grid[0] * local[0], grid[1] * local[1], grid[2] * local[2]), local


@dataclass(frozen=True)
class KernelStats:
    instructions: int
    inner_loop_instructions: int  # in the innermost loop with multiply-adds (0: none), as emit.analysis finds it
    inner_loop_sends: int
    inner_loop_fma: int
    sends: int
    fma_instructions: int  # mad, dp4a, dpas (dpasw) instructions
    syncs: int  # sync.nop/allrd/allwr the SWSB pass added
    grfs_used: int
    slm_bytes: int

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CompiledKernel:
    name: str
    hw: hwlib.Platform
    instructions: tuple[Instruction, ...]
    code: bytes
    zebin_kernel: ZebinKernel
    stats: KernelStats
    simd: int
    local_size: tuple[int, int, int]
    argument_names: tuple[str, ...] = field(default=())
    control: ControlFlow | None = None  # the branches, for static execution counts (xegen.lower.counts)

    def zebin(self) -> bytes:
        return write_zebin([self.zebin_kernel], self.hw)

    def assembly(self) -> str:
        return format_kernel(list(self.instructions), self.hw)

    def global_size(self, grid: tuple[int, int, int]) -> tuple[int, int, int]:
        local = self.local_size
        return grid[0] * local[0], grid[1] * local[1], grid[2] * local[2]

    def executions(self, grid: tuple[int, int, int], scalars=None) -> tuple[int, ...]:
        """Thread-executions of each instruction when `grid` groups run, counted from the
        kernel's loops and branches (`xegen.lower.counts`), as a simulator run would give them."""
        if self.control is None:
            raise UnsupportedError(f"kernel {self.name} carries no record of its branches")
        return static_executions(self.instructions, self.control, grid, scalars)
