"""How a launch spreads over the device: the busiest EU, occupancy, waves, latency hiding.

A thread runs on one EU, a group's threads on one subslice (Xe-core), groups spread evenly over
the subslices.  These formulas depend on the launch (threads, threads per group, GRF mode, SLM
per group, barriers) and the platform's facts only, so both the performance model
(`xegen.emit.cost`, which prices a compiled kernel) and the configuration heuristic
(`xegen.plan.estimate`, which ranks configurations before any is compiled) use them.

Occupancy.  A subslice holds whole thread groups, as many as the least of: its thread slots
(`threads_per_eu` for the kernel's GRF mode, times its EUs, over the group's threads), its SLM
over the group's SLM, its group limit and, for groups that synchronize, its barriers.  The
groups a subslice runs go in waves of that many; in each wave the busiest EU holds the wave's
threads over the subslice's EUs, rounded up.

Latency hiding (`stall`): while one thread waits, the others on its EU issue.  A wave whose
busiest EU holds t threads, each busy B cycles (its busiest resource) and waiting E, takes
max(t * B, B + E): t threads hide the latency when t * B >= B + E.  The stall of a wave is
what B + E exceeds t * B by.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import hw as hwlib


def busiest_eu_threads(threads: int, group_threads: int, hw: hwlib.Platform) -> int:
    """The most threads one EU runs when `threads` threads in groups of `group_threads` spread
    over the device: groups evenly over the subslices, a group's threads over its subslice's EUs."""
    group_threads = max(1, min(group_threads, threads))
    groups = _ceil_div(threads, group_threads)
    groups_per_subslice = _ceil_div(groups, hw.subslices)
    return max(1, _ceil_div(groups_per_subslice * group_threads, hw.eus_per_subslice))


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Occupancy:
    threads_per_eu: int  # slots the kernel's GRF mode leaves each EU
    groups_per_subslice: int  # groups a subslice holds at once
    limit: str  # what limits it: "threads", "slm", "groups", "barriers"
    waves: int  # waves of resident groups on the busiest subslice
    wave_threads: int  # threads on the busiest EU in a full wave
    last_wave_threads: int  # ... and in the last wave

    def as_dict(self) -> dict:
        return {
            "threads_per_eu": self.threads_per_eu,
            "groups_per_subslice": self.groups_per_subslice,
            "limit": self.limit,
            "waves": self.waves,
            "wave_threads_per_eu": self.wave_threads,
            "last_wave_threads_per_eu": self.last_wave_threads,
        }


def occupancy(
    threads: int, group_threads: int, hw: hwlib.Platform, grf_count: int, slm_bytes: int = 0, barriers: bool = False
) -> Occupancy:
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


def stall(occupancy: Occupancy, busy: float, exposed: float, issued: float) -> float:
    """Cycles the busiest EU waits in all: per wave, what one thread's own time exceeds the busy
    time of the wave's threads.  A thread's own time is its instructions, one issued a clock,
    and the waits for its loads they leave (`exposed`, measured along that same issue order):
    not its `busy` share of the busiest pipe plus the waits, which counts a wait again where the
    pipe works through it, and so priced a kernel lower for independent instructions added
    between a load and its use (a dpas or load/store-bound thread's waits grew by exactly the
    instructions taken away)."""

    def wave(threads: int) -> float:
        return max(0.0, issued + exposed - threads * busy)

    return (occupancy.waves - 1) * wave(occupancy.wave_threads) + wave(occupancy.last_wave_threads)
