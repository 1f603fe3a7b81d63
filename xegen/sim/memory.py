"""Device memory: one flat 64-bit address space of buffers, surfaces over it, and SLM.

Every buffer (a user's numpy array, the indirect object heap, private memory) gets an
address; buffers are 64 KiB aligned with an unmapped 64 KiB gap after each, so a kernel
that runs off the end of one buffer faults instead of silently touching the next.  User
arrays are mapped in place: stores write straight into them.  Like NEO's allocations, a
buffer occupies whole 4 KiB pages: the bytes between its end and the end of its last page
are mapped too (zeros; stores there stay there), so a kernel reading a little past the end
of a buffer gets what the hardware gives it instead of a fault.

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
PAGE = 1 << 12  # NEO allocates buffers in whole pages (MemoryConstants::pageSize)


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
        if flat.size % PAGE:  # the rest of the last page
            self.regions.append(
                Region(
                    f"{name} (end of its last page)",
                    base + flat.size,
                    np.zeros(PAGE - flat.size % PAGE, dtype=np.uint8),
                )
            )
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

    def _locate(self, addresses: np.ndarray, size: int) -> list[tuple[Region, np.ndarray | slice, np.ndarray]]:
        """(region, access indices, offsets) groups; faults on an address outside every buffer."""
        addresses = np.asarray(addresses, dtype=np.uint64)
        if addresses.size == 0:
            return []
        low, high = addresses.min(), addresses.max()
        r = int(np.searchsorted(self._bases, low, side="right")) - 1
        if r >= 0 and high <= np.uint64(self.regions[r].end) - np.uint64(size):  # (no wrap-around near 2^64)
            # the usual case: every access falls in one buffer
            return [(self.regions[r], slice(None), (addresses - np.uint64(self.regions[r].base)).astype(np.int64))]
        index = np.searchsorted(self._bases, addresses, side="right").astype(np.int64) - 1
        first, last = int(index.min()), int(index.max())
        if first < 0:
            self._fault(int(addresses[np.argmin(index)]), size)
        groups: list[tuple[Region, np.ndarray | slice, np.ndarray]] = []
        for r in range(first, last + 1):
            which = np.arange(addresses.size) if first == last else np.nonzero(index == r)[0]
            if which.size == 0:
                continue
            region = self.regions[r]
            offsets = (addresses[which] - np.uint64(region.base)).astype(np.int64)
            bad = (offsets < 0) | (offsets + size > region.data.size)
            if np.any(bad):
                self._fault(int(addresses[which[np.argmax(bad)]]), size)
            groups.append((region, which, offsets))
        return groups

    def _fault(self, address: int, size: int) -> None:
        buffers = [r for r in self.regions if not r.name.endswith("(end of its last page)")]
        near = ", ".join(f"{r.name} [0x{r.base:x}, 0x{r.end:x})" for r in buffers[:8])
        raise MemoryFault(f"{size}-byte access at address 0x{address:x} is outside every buffer ({near})")

    def read(self, addresses: np.ndarray, size: int) -> np.ndarray:
        """The `size`-byte element (as an unsigned integer) at each address."""
        out = np.zeros(np.asarray(addresses).size, dtype=UNSIGNED[size])
        for region, which, offsets in self._locate(addresses, size):
            out[which] = element_read(region.data, offsets, size)
        return out

    def write(self, addresses: np.ndarray, values: np.ndarray) -> None:
        """Store values[i] at addresses[i]; a later access wins where two overlap."""
        size = values.dtype.itemsize
        for region, which, offsets in self._locate(addresses, size):
            element_write(region.data, offsets, values[which])


UNSIGNED: dict[int, np.dtype] = {
    1: np.dtype(np.uint8),
    2: np.dtype(np.uint16),
    4: np.dtype(np.uint32),
    8: np.dtype(np.uint64),
}


def element_read(data: np.ndarray, offsets: np.ndarray, size: int) -> np.ndarray:
    """Elements of `size` bytes at byte offsets of a uint8 array (aligned ones through a typed view)."""
    dtype = UNSIGNED[size]
    if size == 1:
        return data[offsets]
    if data.size % size == 0 and not np.any(offsets % size):
        return data.view(dtype)[offsets // size]
    return np.ascontiguousarray(data[offsets[:, None] + np.arange(size)]).view(dtype).reshape(-1)


def element_write(data: np.ndarray, offsets: np.ndarray, values: np.ndarray) -> None:
    size = values.dtype.itemsize
    if size == 1:
        data[offsets] = values
    elif data.size % size == 0 and not np.any(offsets % size):
        data.view(values.dtype)[offsets // size] = values
    else:
        data[offsets[:, None] + np.arange(size)] = np.ascontiguousarray(values).view(np.uint8).reshape(-1, size)


@dataclass(frozen=True)
class Scratch:
    """Every hardware thread slot's scratch space: slot t at `base + t * per_thread`.
    `surface_state` is the extended descriptor (r0.5 >> 4) that names the scratch surface in
    surface-state messages on XeHPG/XeHPC, None where scratch is General-State-relative."""

    base: int
    per_thread: int
    surface_state: int | None = None


@dataclass(frozen=True)
class Surface:
    """A buffer surface of the binding table."""

    base: int
    size: int


class SharedLocalMemory:
    """SLM of every work-group of a batch: `size` bytes per group.

    `window` is the platform's SLM address space (64 KiB on XeLP and XeHPG, 128 KiB on XeHPC):
    an SLM address is an offset within it, address bits from log2(window) up are not part of
    it.  IGC relies on that: in a kernel with `__local` atomics every SLM address it sends has
    bit 28 set (0x10000000, its tag for local memory)."""

    def __init__(self, groups: int, size: int, window: int | None = None):
        if window is not None and window & (window - 1):
            raise ValueError(f"the SLM address window must be a power of two, not {window}")
        self.size = size
        self.window = window
        self.stride = max(-(-size // 64) * 64, 64)  # keeps every group's SLM 8-byte aligned
        self.data = np.zeros(groups * self.stride, dtype=np.uint8)

    def offsets(self, addresses: np.ndarray) -> np.ndarray:
        """The SLM offsets that message addresses name (bits above the window dropped)."""
        offsets = np.asarray(addresses, dtype=np.int64)
        return offsets if self.window is None else offsets & (self.window - 1)

    def _flat(self, groups: np.ndarray, offsets: np.ndarray, size: int) -> np.ndarray:
        offsets = self.offsets(offsets)
        bad = (offsets < 0) | (offsets + size > self.size)
        if np.any(bad):
            where = int(offsets[np.argmax(bad)])
            raise MemoryFault(
                f"{size}-byte SLM access at offset {where} is outside the group's {self.size} bytes of SLM"
            )
        return np.asarray(groups, dtype=np.int64) * self.stride + offsets

    def read(self, groups: np.ndarray, offsets: np.ndarray, size: int) -> np.ndarray:
        return element_read(self.data, self._flat(groups, offsets, size), size)

    def write(self, groups: np.ndarray, offsets: np.ndarray, values: np.ndarray) -> None:
        element_write(self.data, self._flat(groups, offsets, values.dtype.itemsize), values)
