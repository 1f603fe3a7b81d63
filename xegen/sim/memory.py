"""Device memory: one flat 64-bit address space of buffers, surfaces over it, and SLM.

Every buffer (a user's numpy array, the indirect object heap, private memory) gets an
address; buffers are 64 KiB aligned with an unmapped 64 KiB gap after each, so a kernel
that runs off the end of one buffer faults instead of silently touching the next.  User
arrays are mapped in place: stores write straight into them.

Surfaces (binding-table entries) are a base address and a size: an out-of-bounds surface
access reads zero and drops writes, as the hardware's bounds checking does.  Flat (A64)
accesses are not bounds checked by the hardware, so an access that hits no buffer is a
`MemoryFault` here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import MemoryFault

FIRST_ADDRESS = 0x1_0000_0000  # above 4 GiB: a truncated 32-bit pointer faults
ALIGNMENT = 1 << 16
GUARD = 1 << 16


@dataclass
class Region:
    name: str
    base: int
    data: np.ndarray  # uint8, one dimension, possibly a view of a user array

    @property
    def end(self) -> int:
        return self.base + self.data.size


class DeviceMemory:
    """The flat address space."""

    def __init__(self) -> None:
        self.regions: list[Region] = []
        self._next = FIRST_ADDRESS
        self._bases = np.zeros(0, dtype=np.uint64)

    def map(self, name: str, data: np.ndarray) -> int:
        """Map a uint8 view (writes go to its owner) and return its address."""
        flat = data.reshape(-1)
        if flat.dtype != np.uint8:
            raise TypeError("map() takes a uint8 view")
        base = self._next
        self.regions.append(Region(name, base, flat))
        size = max(flat.size, 1)
        self._next = base + (size + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT + GUARD
        self._bases = np.array([r.base for r in self.regions], dtype=np.uint64)
        return base

    def allocate(self, name: str, size: int) -> int:
        return self.map(name, np.zeros(size, dtype=np.uint8))

    def region_named(self, name: str) -> Region:
        for region in self.regions:
            if region.name == name:
                return region
        raise KeyError(name)

    # --- access --------------------------------------------------------------------------------

    def _locate(self, addresses: np.ndarray, size: int) -> list[tuple[Region, np.ndarray, np.ndarray]]:
        """(region, lane indices, offsets) groups; faults on an address outside every buffer."""
        addresses = np.asarray(addresses, dtype=np.uint64)
        if addresses.size == 0:
            return []
        lo, hi = int(addresses.min()), int(addresses.max())
        index = np.searchsorted(self._bases, addresses, side="right").astype(np.int64) - 1
        first, last = int(index.min()), int(index.max())
        groups = []
        for r in range(first, last + 1) if first >= 0 else [-1]:
            lanes = np.nonzero(index == r)[0] if first != last else np.arange(addresses.size)
            if lanes.size == 0:
                continue
            if r < 0:
                self._fault(int(addresses[lanes[0]]), size)
            region = self.regions[r]
            offsets = (addresses[lanes] - np.uint64(region.base)).astype(np.int64)
            bad = offsets + size > region.data.size
            if np.any(bad):
                self._fault(int(addresses[lanes[np.argmax(bad)]]), size)
            groups.append((region, lanes, offsets))
        del lo, hi
        return groups

    def _fault(self, address: int, size: int) -> None:
        near = ", ".join(f"{r.name} [0x{r.base:x}, 0x{r.end:x})" for r in self.regions[:8])
        raise MemoryFault(f"{size}-byte access at address 0x{address:x} is outside every buffer ({near})")

    def read(self, addresses: np.ndarray, size: int) -> np.ndarray:
        """(lanes, size) bytes at each address."""
        out = np.zeros((np.asarray(addresses).size, size), dtype=np.uint8)
        span = np.arange(size)
        for region, lanes, offsets in self._locate(addresses, size):
            out[lanes] = region.data[offsets[:, None] + span]
        return out

    def write(self, addresses: np.ndarray, data: np.ndarray) -> None:
        """Store data[i] (size bytes) at addresses[i]; later lanes win on overlap."""
        size = data.shape[1]
        span = np.arange(size)
        for region, lanes, offsets in self._locate(addresses, size):
            region.data[offsets[:, None] + span] = data[lanes]


@dataclass(frozen=True)
class Surface:
    """A buffer surface of the binding table."""

    base: int
    size: int


class SharedLocalMemory:
    """SLM of every work-group of a batch: `size` bytes per group."""

    def __init__(self, groups: int, size: int):
        self.size = size
        self.data = np.zeros(groups * max(size, 1), dtype=np.uint8)
        self.stride = max(size, 1)

    def _flat(self, groups: np.ndarray, offsets: np.ndarray, size: int) -> np.ndarray:
        offsets = np.asarray(offsets, dtype=np.int64)
        bad = (offsets < 0) | (offsets + size > self.size)
        if np.any(bad):
            where = int(offsets[np.argmax(bad)])
            raise MemoryFault(f"{size}-byte SLM access at offset {where} is outside the group's {self.size} bytes of SLM")
        return np.asarray(groups, dtype=np.int64) * self.stride + offsets

    def read(self, groups: np.ndarray, offsets: np.ndarray, size: int) -> np.ndarray:
        flat = self._flat(groups, offsets, size)
        return self.data[flat[:, None] + np.arange(size)]

    def write(self, groups: np.ndarray, offsets: np.ndarray, data: np.ndarray) -> None:
        size = data.shape[1]
        flat = self._flat(groups, offsets, size)
        self.data[flat[:, None] + np.arange(size)] = data
