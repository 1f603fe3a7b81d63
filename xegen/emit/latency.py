"""Occupancy and latency: how many threads an EU holds, and how long one waits for its loads.

Occupancy.  A subslice (Xe-core) holds whole thread groups, as many as the least of: its thread
slots (`threads_per_eu` for the kernel's GRF mode, times its EUs, over the group's threads), its
SLM over the group's SLM, its group limit and, for groups that synchronize, its barriers.  The
groups a subslice runs (the grid spread evenly over the subslices) go in waves of that many; in
each wave the busiest EU holds the wave's threads over the subslice's EUs, rounded up.

Latency.  `exposed_latency` follows one thread through its instructions in program order, one
issue per clock, and adds the clocks it waits: an instruction that waits on a send's SBID token
(`$n.dst`, or `sync.allwr` for all of them) waits until the send's latency has passed since it
issued.  The instructions between a load and the first wait on it are the thread's own
independent work that hides the latency.  A loop runs two iterations (the second sees the
loads the first left in flight, as every later one does) and the rest are taken to repeat the
second.  dpas and math results are not waited for (their pipes are in the resource terms).

Latency hiding (`stall`): while one thread waits, the others on its EU issue.  A wave whose
busiest EU holds t threads, each busy B cycles (its busiest resource) and waiting E, takes
max(t * B, B + E): t threads hide the latency when t * B >= B + E.  The stall of a wave is
what B + E exceeds t * B by.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from .. import hw as hwlib
from .analysis import Loop, is_send, loops
from .instruction import Instruction


@dataclass(frozen=True)
class Occupancy:
    threads_per_eu: int  # slots the kernel's GRF mode leaves each EU
    groups_per_subslice: int  # groups a subslice holds at once
    limit: str  # what limits it: "threads", "slm", "groups", "barriers"
    waves: int  # waves of resident groups on the busiest subslice
    wave_threads: int  # threads on the busiest EU in a full wave
    last_wave_threads: int  # ... and in the last wave

    def as_dict(self) -> dict:
        return {"threads_per_eu": self.threads_per_eu, "groups_per_subslice": self.groups_per_subslice,
                "limit": self.limit, "waves": self.waves, "wave_threads_per_eu": self.wave_threads,
                "last_wave_threads_per_eu": self.last_wave_threads}


def occupancy(threads: int, group_threads: int, hw: hwlib.Platform, grf_count: int, slm_bytes: int = 0,
              barriers: bool = False) -> Occupancy:
    group_threads = max(1, min(group_threads, threads))
    eus = hw.eus_per_subslice
    per_eu = hw.threads_per_eu(grf_count)
    limits = {"threads": per_eu * eus // group_threads, "groups": hw.memory.max_groups_per_subslice}
    if slm_bytes:
        limits["slm"] = hw.memory.slm_bytes_per_subslice // slm_bytes
    if barriers:
        limits["barriers"] = hw.memory.barriers_per_subslice
    limit = min(limits, key=lambda name: limits[name])
    resident = max(1, limits[limit])
    groups = -(-threads // group_threads)
    on_busiest = -(-groups // hw.subslices)
    waves = -(-on_busiest // resident)
    last = on_busiest - (waves - 1) * resident

    def busiest_eu(groups_in_wave: int) -> int:
        return min(per_eu, -(-groups_in_wave * group_threads // eus))

    return Occupancy(per_eu, resident, limit, waves, busiest_eu(min(resident, on_busiest)), busiest_eu(last))


def stall(occupancy: Occupancy, busy: float, exposed: float) -> float:
    """Cycles the busiest EU waits in all: per wave, what one thread's busy time plus its exposed
    latency exceeds the busy time of the wave's threads."""
    def wave(threads: int) -> float:
        return max(0.0, busy + exposed - threads * busy)

    return (occupancy.waves - 1) * wave(occupancy.wave_threads) + wave(occupancy.last_wave_threads)


# --- one thread's waits ------------------------------------------------------------------------

class _Timeline:
    def __init__(self, instructions: Sequence[Instruction], per_thread: Sequence[float],
                 latency: Callable[[Instruction], float]):
        self.instructions = instructions
        self.per_thread = per_thread
        self.latency = latency
        self.time = 0.0
        self.waited = 0.0
        self.ready: dict[int, float] = {}  # SBID token -> when its send's result is there
        self.loops_at: dict[int, list[Loop]] = {}
        for loop in loops(instructions):
            self.loops_at.setdefault(loop.start, []).append(loop)

    def run(self, start: int, end: int, entered: frozenset[Loop] = frozenset()) -> None:
        """Instructions [start, end], entering the loops there but those in `entered` (being
        iterated by a caller)."""
        i = start
        while i <= end:
            loop = max((lp for lp in self.loops_at.get(i, ()) if lp.end <= end and lp not in entered),
                       key=lambda lp: lp.end, default=None)
            if loop is not None:
                self._loop(loop, entered | {loop})
                i = loop.end + 1
                continue
            if self.per_thread[i] > 0:
                self._issue(self.instructions[i])
            i += 1

    def _loop(self, loop: Loop, entered: frozenset[Loop]) -> None:
        """Two iterations run, the rest repeat the second: its clocks, its waits, and the
        results it leaves in flight, later by as much."""
        after = loop.end + 1
        exits = self.per_thread[after] if after < len(self.per_thread) else 0.0
        trips = round(self.per_thread[loop.start] / (exits if exits > 0 else 1.0))
        for _ in range(min(trips, 2)):
            began, waited = self.time, self.waited
            self.run(loop.start, loop.end, entered)
        if trips > 2:
            shift = (trips - 2) * (self.time - began)
            self.waited += (trips - 2) * (self.waited - waited)
            self.time += shift
            self.ready = {token: when + shift for token, when in self.ready.items()}

    def _wait(self, until: float) -> None:
        if until > self.time:
            self.waited += until - self.time
            self.time = until

    def _issue(self, inst: Instruction) -> None:
        swsb = inst.swsb
        if inst.opcode == "sync" and inst.function == "allwr":
            self._wait(max(self.ready.values(), default=0.0))
            self.ready.clear()
        out_of_order = is_send(inst) or inst.opcode in ("dpas", "dpasw", "math")
        waits = swsb.token_mode == "dst" or (swsb.token_mode == "set" and not out_of_order)
        if swsb.token is not None and waits:
            self._wait(self.ready.pop(swsb.token, 0.0))
        self.time += 1
        if out_of_order and swsb.token is not None and swsb.token_mode == "set":
            self.ready[swsb.token] = self.time + (self.latency(inst) if is_send(inst) else 0.0)


def exposed_latency(instructions: Sequence[Instruction], executions: Sequence[int], threads: int,
                    latency: Callable[[Instruction], float]) -> float:
    """Clocks an average thread waits for send results (`latency(send)` after issue) that its own
    instructions in between do not cover."""
    if not threads or not instructions:
        return 0.0
    timeline = _Timeline(instructions, [n / threads for n in executions], latency)
    timeline.run(0, len(instructions) - 1)
    return timeline.waited


def barriers_used(instructions: Sequence[Instruction]) -> bool:
    """Whether the kernel synchronizes its group (waits on a barrier)."""
    return any(inst.opcode == "sync" and inst.function == "bar" for inst in instructions)
