"""A modeled cycle count for a kernel's instructions on a platform (one model for every binary).

Each executed instruction costs, on the EU that runs it:
- an issue slot (one instruction per clock);
- ALU time: operand bytes / `alu_bytes_per_clock` (extended math `math_cycles_per_alu_cycle`
  times that);
- systolic (XMX) time for dpas: its multiply-adds / `fma_per_clock_per_eu` of its data type;
- load/store time for sends: the bytes the message moves / `load_store_bytes_per_clock`.
The pipes overlap perfectly, so an EU is busy for its busiest resource.  A thread runs on one EU
and the threads of a thread group on the EUs of one subslice (`hw.eus_per_subslice`), groups
spread evenly over the subslices; the device is done when the EU with the most threads is, so
the device time is the busiest resource summed over all threads, times the share of the threads
that EU runs.  With threads enough to fill the device that is the sum over all EUs; a kernel of
two threads takes as long as one thread's work.  It is a resource bound — the fastest the code
could go — not a simulation of latencies (which few threads per EU do not hide); the same model
applied to two binaries says which one asks less of the hardware.  All rates come from
`xegen/hw.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .. import hw as hwlib
from . import tables as T
from .analysis import is_send
from .instruction import Instruction

_DPAS_KIND = {"hf": "f16", "bf": "bf16", "b": "int8", "ub": "int8", "tf32": "f32"}
_DPAS_OPS = {"hf": 2, "bf": 2, "b": 4, "ub": 4, "tf32": 1}


@dataclass(frozen=True)
class Cycles:
    issue: float
    alu: float
    xmx: float
    load_store: float
    parallel_eus: float  # threads / the most threads one EU runs: how many EUs' worth the work spreads over

    @property
    def bound(self) -> str:
        """The busiest resource."""
        return max(("issue", "alu", "xmx", "load_store"), key=lambda name: getattr(self, name))

    @property
    def device(self) -> float:
        """Modeled device cycles: the busiest resource of the busiest EU."""
        return max(self.issue, self.alu, self.xmx, self.load_store) / self.parallel_eus

    def as_dict(self) -> dict:
        return {"issue": self.issue, "alu": self.alu, "xmx": self.xmx, "load_store": self.load_store,
                "device_cycles": self.device, "bound": self.bound}


def _operand_bytes(inst: Instruction) -> int:
    types = [op.type for op in (inst.dst, *inst.srcs) if op is not None and getattr(op, "type", None)]
    return max((T.type_bytes(t) for t in types if t in T.TYPES), default=4)


def instruction_cost(inst: Instruction, hw: hwlib.Platform) -> tuple[float, float, float]:
    """(alu, xmx, load/store) cycles of one execution of `inst` on one EU."""
    if inst.opcode in ("dpas", "dpasw"):
        src = inst.srcs[1].type if len(inst.srcs) > 1 else "hf"
        kind = _DPAS_KIND.get(src, "f16")
        fmas = inst.repeat_count * inst.exec_size * inst.systolic_depth * _DPAS_OPS.get(src, 2)
        return 0.0, fmas / hw.fma_per_clock_per_eu[kind], 0.0
    if is_send(inst):
        send = inst.send
        grfs = 0
        if send is not None:
            grfs = (send.response_length or 0) + (send.src1_length or ((send.exdesc >> 6) & 0x1F))
        return 0.0, 0.0, grfs * hw.grf_bytes / hw.load_store_bytes_per_clock
    if inst.opcode in ("sync", "nop", "illegal") or T.OPCODES[inst.opcode].format in T.BRANCH_FORMATS:
        return 0.0, 0.0, 0.0
    alu = max(1.0, inst.exec_size * _operand_bytes(inst) / hw.alu_bytes_per_clock)
    if inst.opcode == "math":
        alu *= hw.math_cycles_per_alu_cycle
    return alu, 0.0, 0.0


def busiest_eu_threads(threads: int, group_threads: int, hw: hwlib.Platform) -> int:
    """The most threads one EU runs when `threads` threads in groups of `group_threads` spread
    over the device: groups evenly over the subslices, a group's threads over its subslice's EUs."""
    group_threads = max(1, min(group_threads, threads))
    groups = _ceil_div(threads, group_threads)
    groups_per_subslice = _ceil_div(groups, hw.eu_count // hw.eus_per_subslice)
    return max(1, _ceil_div(groups_per_subslice * group_threads, hw.eus_per_subslice))


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def kernel_cycles(instructions: Sequence[Instruction], executions: Sequence[int],
                  hw: str | hwlib.Platform, threads: int | None = None, group_threads: int = 1) -> Cycles:
    """Modeled cycles of a run in which instruction i executed `executions[i]` times (threads).
    `threads` ran in all (default: the executions of the entry instruction, which every thread
    runs once), in thread groups of `group_threads`."""
    platform = hwlib.platform(hw)
    if threads is None:
        threads = executions[0] if len(executions) else 0
    issue = alu = xmx = load_store = 0.0
    for inst, n in zip(instructions, executions):
        if n == 0:
            continue
        a, x, m = instruction_cost(inst, platform)
        issue += n
        alu += a * n
        xmx += x * n
        load_store += m * n
    parallel = threads / busiest_eu_threads(threads, group_threads, platform) if threads else platform.eu_count
    return Cycles(issue, alu, xmx, load_store, parallel)
