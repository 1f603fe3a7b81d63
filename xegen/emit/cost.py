"""A modeled cycle count for a kernel on a platform (one model for every binary).

Inputs: the kernel's instructions and how often each ran (`executions`, thread-executions of each
instruction: from `xegen.lower.counts` for xegen's kernels, from a simulator run for any binary),
its launch (threads, threads per group, GRF mode, SLM per group), and optionally the problem's
`Workload` and the kernel's `Tiling` (`xegen.emit.roofline`).  All rates come from `xegen/hw.py`.
docs/model.md has the formulas with their sources; in short, the device is done at the largest of

- compute: each instruction's ALU time (operand bytes / `alu_bytes_per_clock`, extended math
  `math_cycles_per_alu_cycle` times that) or XMX time (dpas multiply-adds /
  `fma_per_clock_per_eu` of its type);
- issue: one instruction per clock;
- load/store: the register bytes each send moves / `load_store_bytes_per_clock`;

each summed over the threads of the EU that runs the most of them (a thread runs on one EU, a
group's threads on one subslice's EUs, groups spread evenly over the subslices);

- memory: the DRAM bytes the tiling leaves (`roofline.traffic`) at DRAM bandwidth;
- latency: the resource time of the busiest EU plus the clocks it stalls, wave by wave, when its
  resident threads cannot cover one thread's waits for its loads (`latency`).

`bound` names the largest: "compute", "issue", "load/store", "memory" or "latency".  The
roofline (`roofline.roofline`) is the problem's own lower bound, whatever the kernel; the
roofline fraction is roofline cycles / device cycles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .. import hw as hwlib
from ..launch import Occupancy, busiest_eu_threads, occupancy, stall
from . import tables as T
from .analysis import is_send, message_target, payload_bytes, reads_dispatch_payload
from .instruction import Instruction
from .latency import barriers_used, exposed_latency
from .roofline import Roofline, Tiling, Traffic, Workload, roofline, traffic

_DPAS_KIND = {"hf": "f16", "bf": "bf16", "b": "int8", "ub": "int8", "tf32": "f32"}
_DPAS_OPS = {"hf": 2, "bf": 2, "b": 4, "ub": 4, "tf32": 1}
BOUNDS = ("compute", "issue", "load/store", "memory", "latency")  # a tie goes to the earlier


@dataclass(frozen=True)
class Cycles:
    issue: float  # instructions of all threads (EU clocks, summed over the threads)
    alu: float  # ALU clocks of all threads
    xmx: float  # systolic clocks of all threads
    load_store: float  # load/store clocks of all threads
    parallel_eus: float  # threads / the most threads one EU runs: how many EUs' worth the work spreads over
    memory: float = 0.0  # device clocks DRAM needs for the kernel's traffic
    stall: float = 0.0  # clocks the busiest EU waits with no thread to issue
    exposed_latency: float = 0.0  # clocks one thread waits for its loads, in all
    occupancy: Occupancy | None = None
    traffic: Traffic | None = None
    roofline: Roofline | None = None

    @property
    def terms(self) -> dict[str, float]:
        """Device clocks each resource needs, by bound name."""
        compute, issue, load_store = (
            x / self.parallel_eus for x in (max(self.alu, self.xmx), self.issue, self.load_store)
        )
        return {
            "compute": compute,
            "issue": issue,
            "load/store": load_store,
            "memory": self.memory,
            "latency": max(compute, issue, load_store) + self.stall,
        }

    @property
    def bound(self) -> str:
        """What the device waits for: the largest term."""
        terms = self.terms
        return max(BOUNDS, key=lambda name: (terms[name], -BOUNDS.index(name)))

    @property
    def device(self) -> float:
        """Modeled device cycles."""
        return max(self.terms.values())

    @property
    def roofline_fraction(self) -> float | None:
        if self.roofline is None:
            return None
        return self.roofline.cycles / self.device if self.device else 0.0

    def as_dict(self) -> dict:
        result = {
            "device_cycles": self.device,
            "bound": self.bound,
            "terms": {name: round(value, 1) for name, value in self.terms.items()},
            "issue": self.issue,
            "alu": self.alu,
            "xmx": self.xmx,
            "load_store": self.load_store,
            "exposed_latency_per_thread": round(self.exposed_latency, 1),
        }
        if self.occupancy is not None:
            result["occupancy"] = self.occupancy.as_dict()
        if self.traffic is not None:
            result["bytes"] = self.traffic.as_dict()
        fraction = self.roofline_fraction  # None exactly when there is no roofline
        if self.roofline is not None and fraction is not None:
            result.update(
                roofline_cycles=self.roofline.cycles,
                roofline_bound=self.roofline.bound,
                roofline_fraction=round(fraction, 4),
                roofline_terms={"compute": self.roofline.compute, "memory": self.roofline.memory},
            )
        return result


def instruction_cost(inst: Instruction, hw: hwlib.Platform) -> tuple[float, float, float]:
    """(alu, xmx, load/store) cycles of one execution of `inst` on one EU."""
    if inst.opcode in ("dpas", "dpasw"):
        src = inst.srcs[1].type if len(inst.srcs) > 1 else "hf"
        kind = _DPAS_KIND.get(src, "f16")
        fmas = inst.repeat_count * inst.exec_size * inst.systolic_depth * _DPAS_OPS.get(src, 2)
        return 0.0, fmas / hw.fma_per_clock_per_eu[kind], 0.0
    if is_send(inst):
        return 0.0, 0.0, payload_bytes(inst, hw.grf_bytes) / hw.load_store_bytes_per_clock
    if inst.opcode in ("sync", "nop", "illegal") or T.OPCODES[inst.opcode].format in T.BRANCH_FORMATS:
        return 0.0, 0.0, 0.0
    alu = max(1.0, inst.exec_size * _operand_bytes(inst) / hw.alu_bytes_per_clock)
    if inst.opcode == "math":
        alu *= hw.math_cycles_per_alu_cycle
    return alu, 0.0, 0.0


def _operand_bytes(inst: Instruction) -> int:
    types = [op.type for op in (inst.dst, *inst.srcs) if op is not None and getattr(op, "type", None)]
    return max((T.type_bytes(t) for t in types if t in T.TYPES), default=4)


def requested_global_bytes(instructions: Sequence[Instruction], executions: Sequence[int], hw: hwlib.Platform) -> int:
    """Bytes the kernel's global-memory messages move, over all their executions."""
    return sum(
        n * payload_bytes(inst, hw.grf_bytes)
        for inst, n in zip(instructions, executions, strict=False)
        if n and is_send(inst) and message_target(inst) == "global"
    )


def global_load_latency(hw: hwlib.Platform, moved: Traffic | None) -> float:
    """Expected clocks of a global load: the share of requested bytes that the group's own
    reuse serves from L1, the share the last-level cache serves, the share DRAM serves."""
    if moved is None or not moved.requested:
        return hw.send_latency("l3")
    from_l1 = max(0.0, 1.0 - moved.l3 / moved.requested)
    from_memory = min(1.0 - from_l1, moved.dram / moved.requested)
    from_l3 = max(0.0, 1.0 - from_l1 - from_memory)
    return from_l1 * hw.send_latency("l1") + from_l3 * hw.send_latency("l3") + from_memory * hw.send_latency("memory")


def kernel_cycles(
    instructions: Sequence[Instruction],
    executions: Sequence[int],
    hw: str | hwlib.Platform,
    threads: int | None = None,
    group_threads: int = 1,
    *,
    grf_count: int | None = None,
    slm_bytes: int = 0,
    workload: Workload | None = None,
    tiling: Tiling | None = None,
) -> Cycles:
    """Modeled cycles of a run in which instruction i executed `executions[i]` times (threads).
    `threads` ran in all (default: the executions of the entry instruction, which every thread
    runs once), in thread groups of `group_threads`, each holding `slm_bytes` of SLM, with
    `grf_count` registers (default: the platform's smallest GRF mode).  Without a `workload`
    there is no memory term and no roofline."""
    platform = hwlib.platform(hw)
    if threads is None:
        threads = executions[0] if len(executions) else 0
    issue = alu = xmx = load_store = 0.0
    for inst, n in zip(instructions, executions, strict=False):
        if n == 0:
            continue
        a, x, m = instruction_cost(inst, platform)
        issue += n
        alu += a * n
        xmx += x * n
        load_store += m * n
    if not threads:
        return Cycles(issue, alu, xmx, load_store, platform.eu_count)
    parallel = threads / busiest_eu_threads(threads, group_threads, platform)
    resident = occupancy(
        threads, group_threads, platform, grf_count or min(platform.grf_counts), slm_bytes, barriers_used(instructions)
    )
    moved = rooftop = None
    memory = 0.0
    if workload is not None:
        groups_at_once = resident.groups_per_subslice * platform.subslices
        moved = traffic(
            workload, requested_global_bytes(instructions, executions, platform), platform, tiling, groups_at_once
        )
        memory = moved.dram / platform.dram_bytes_per_clock
        rooftop = roofline(workload, platform)
    load_latency = global_load_latency(platform, moved)
    slm_latency = platform.send_latency("slm")
    # the arguments every thread reads: never farther than the last-level cache, and no farther
    # than the kernel's own data on average (no byte of it is reused more)
    payload_latency = min(load_latency, platform.send_latency("l3"))

    def latency(inst: Instruction) -> float:
        if reads_dispatch_payload(inst):
            return payload_latency
        target = message_target(inst)
        if target == "fence":
            return slm_latency if inst.send is not None and inst.send.sfid == "slm" else load_latency
        return {"slm": slm_latency, "global": load_latency}.get(target, 0.0)

    waits = exposed_latency(instructions, executions, threads, latency)
    busy = max(issue, alu, xmx, load_store) / threads
    waiting = stall(resident, busy, waits, issue / threads)
    return Cycles(issue, alu, xmx, load_store, parallel, memory, waiting, waits, resident, moved, rooftop)
