"""The memory side of the modeled cycles: what a problem must move, what a kernel moves, the roofline.

Three byte counts, from the problem down to the kernel:

- compulsory: each tensor read once and each output written once (`Workload.compulsory_bytes`),
  whatever the kernel;
- L3 (last-level cache) traffic: what the thread groups ask of the shared cache once each group's
  own reuse is taken out (threads of a group share loads through the subslice's L1 or SLM);
- DRAM traffic: what the last-level cache misses.

Both traffic counts come from the kernel's `Tiling`: how its groups divide the GEMM
C[M x N] += A[M x K] . B[K x N] that a convolution is (`xegen.conv.gemm`).  Groups are dispatched
N fastest, then M, then the rest (the order of the ids in the grid), so:

- every group of a column of N reads all of A's rows it covers: the L3 sees A `n_groups` times,
  B `m_groups` times and C `k_groups` times (each K slice adds its part into C);
- consecutive groups share their A panel, which therefore comes from DRAM once; B comes from DRAM
  once if it stays in the cache while a row of groups runs (B + an A panel + a row of C fit in the
  cache), else once for each pass of the groups resident at once over M; C once, or, when K
  slices add into a C that does not fit, once read and once written per slice;
- when everything fits in the cache, DRAM traffic is the compulsory bytes.

A kernel whose tiling is unknown (a foreign binary with no `Tiling` given) is priced without
any reuse credited: its L3 traffic is what its global messages request (from the instructions
and their execution counts), and its DRAM traffic the same unless all its tensors fit the cache.
For a foreign kernel whose work split is known (oneDNN's kernels: global and local sizes and the
blocking macros), pass the `Tiling` that split describes.

The roofline is the problem's own bound: the larger of its multiply-adds at the platform's peak
rate for the data type and its compulsory bytes at DRAM bandwidth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import hw as hwlib


@dataclass(frozen=True)
class Workload:
    """What a problem asks of any kernel computing it, in the GEMM's terms.  `a_bytes` etc. are
    the tensors behind A, B and C (for a forward convolution: src, weights, dst); `other_*` are
    the rest (a bias)."""

    fmas: int  # multiply-adds
    kind: str  # data type of the multiplies: "f32", "f16", "bf16", "int8"
    a_bytes: int
    b_bytes: int
    c_bytes: int
    other_read_bytes: int = 0
    other_written_bytes: int = 0

    @property
    def compulsory_bytes(self) -> int:
        """Every tensor read or written once."""
        return self.a_bytes + self.b_bytes + self.c_bytes + self.other_read_bytes + self.other_written_bytes


@dataclass(frozen=True)
class Tiling:
    """How the thread groups of a launch divide the GEMM: groups along M, along N, along K (each
    adding its slice of the sum into C), and independent GEMMs (convolution groups).  Dispatch
    order is N fastest, then M, then K slices and batches; with `n_outer` > 1 the N groups form
    that many slices, of n_groups / n_outer groups each, and only a slice's groups are dispatched
    before M, the slices after it."""

    m_groups: int
    n_groups: int
    k_groups: int = 1
    batches: int = 1
    n_outer: int = 1

    def __post_init__(self):
        if self.n_groups % self.n_outer:
            raise ValueError(f"{self.n_groups} N groups do not form {self.n_outer} slices")

    @property
    def groups(self) -> int:
        return self.m_groups * self.n_groups * self.k_groups * self.batches


@dataclass(frozen=True)
class Traffic:
    compulsory: int  # each tensor once
    requested: int  # bytes the kernel's global messages move
    l3: float  # bytes the groups ask of the last-level cache
    dram: float  # bytes the last-level cache misses

    def as_dict(self) -> dict:
        return {
            "compulsory": self.compulsory,
            "requested": self.requested,
            "l3": round(self.l3),
            "dram": round(self.dram),
        }


def traffic(
    workload: Workload, requested: int, hw: hwlib.Platform, tiling: Tiling | None = None, resident_groups: int = 1
) -> Traffic:
    """Bytes at each level for a kernel computing `workload` whose global messages move
    `requested` bytes, with `resident_groups` thread groups running at once on the device."""
    compulsory = workload.compulsory_bytes
    cache = hw.memory.last_level_cache_bytes
    others = workload.other_read_bytes + workload.other_written_bytes
    if tiling is None:
        l3 = float(max(requested, compulsory))
        dram = float(compulsory) if compulsory <= cache else l3
        return Traffic(compulsory, requested, l3, dram)
    t = tiling
    a, b, c = (x / t.batches for x in (workload.a_bytes, workload.b_bytes, workload.c_bytes))
    l3 = t.batches * (t.n_groups * a + t.m_groups * b + t.k_groups * c) + others
    l3 = max(min(l3, float(requested)), float(compulsory))
    if compulsory <= cache:
        return Traffic(compulsory, requested, l3, float(compulsory))
    # one slice of N (all of N unless n_outer > 1): its columns of B and C, its groups along N
    b_slice, c_slice, n_slice = b / t.n_outer, c / t.n_outer, t.n_groups // t.n_outer
    a_panel, c_row = a / t.m_groups, c_slice / t.m_groups
    rows_at_once = max(1, resident_groups // n_slice)
    b_dram = b_slice if b_slice + a_panel + c_row <= cache else b_slice * math.ceil(t.m_groups / rows_at_once)
    a_dram = a if a_panel <= cache else a * n_slice
    c_dram = c_slice if t.k_groups == 1 or c_slice <= cache else c_slice * (2 * t.k_groups - 1)
    a_again = t.n_outer if a + b_slice + c_slice > cache else 1  # A read anew for each slice
    dram = t.batches * (a_again * a_dram + t.n_outer * (b_dram + c_dram)) + others
    return Traffic(compulsory, requested, l3, max(float(compulsory), min(dram, l3)))


@dataclass(frozen=True)
class Roofline:
    compute: float  # cycles of the problem's multiply-adds at the platform's peak rate
    memory: float  # cycles of its compulsory bytes at DRAM bandwidth

    @property
    def cycles(self) -> float:
        return max(self.compute, self.memory)

    @property
    def bound(self) -> str:
        return "memory" if self.memory > self.compute else "compute"


def roofline(workload: Workload, hw: hwlib.Platform) -> Roofline:
    return Roofline(
        workload.fmas / hw.peak_fma_per_clock(workload.kind), workload.compulsory_bytes / hw.dram_bytes_per_clock
    )
