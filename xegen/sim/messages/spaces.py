"""Where a message's lane addresses point: flat memory, a surface, stateless A32, or SLM.

Every space takes the accesses as flat arrays: `addresses[i]` is the address as the message
gives it and `threads[i]` the thread making access i (only SLM needs it, for the
work-group; `needs_threads` says so).  Atomics run in rounds, one access per address per
round in lane order, so lanes of one instruction that hit the same address see each
other's updates exactly as if the hardware had serialized them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from ..memory import UNSIGNED, DeviceMemory, Scratch, SharedLocalMemory, Surface


class Space(ABC):
    """Read/write `size`-byte elements (unsigned integers) at per-access addresses."""

    needs_threads = False

    @abstractmethod
    def read(self, threads: np.ndarray | None, addresses: np.ndarray, size: int) -> np.ndarray:
        """The element at each address."""

    @abstractmethod
    def write(self, threads: np.ndarray | None, addresses: np.ndarray, values: np.ndarray) -> None:
        """Store values[i] at addresses[i]."""

    def keys(self, threads: np.ndarray | None, addresses: np.ndarray) -> np.ndarray:
        """A number that is equal exactly when two accesses touch the same location."""
        return np.asarray(addresses, dtype=np.int64)

    def atomic(
        self,
        threads: np.ndarray | None,
        addresses: np.ndarray,
        size: int,
        update: Callable[[np.ndarray, np.ndarray], np.ndarray],
        increments: np.ndarray | None = None,
    ) -> np.ndarray:
        """Read-modify-write: update(old values, access indices) -> new values.  Returns the
        old value of every access.  When the operation only adds (add, sub, inc, dec), the
        per-access `increments` let all accesses to one address be applied at once."""
        keys = self.keys(threads, addresses)
        if increments is not None:
            return self._add_all(threads, addresses, size, keys, increments)
        count = addresses.size
        old = np.zeros(count, dtype=UNSIGNED[size])
        pending = np.arange(count)
        while pending.size:
            _, first = np.unique(keys[pending], return_index=True)
            batch = pending[np.sort(first)]
            who = None if threads is None else threads[batch]
            current = self.read(who, addresses[batch], size)
            self.write(who, addresses[batch], update(current, batch))
            old[batch] = current
            keep = np.ones(pending.size, dtype=bool)
            keep[np.sort(first)] = False
            pending = pending[keep]
        return old

    def _add_all(self, threads, addresses, size, keys, increments) -> np.ndarray:
        """Serialized additions in one pass: each access sees the old value plus the increments
        of the earlier accesses (in lane order) to its address."""
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        steps = increments.astype(np.uint64)[order]
        first = np.ones(order.size, dtype=bool)
        first[1:] = sorted_keys[1:] != sorted_keys[:-1]
        running = np.cumsum(steps)  # wraps modulo 2^64, like the element arithmetic
        group = np.cumsum(first) - 1
        starts = np.nonzero(first)[0]
        before = running[starts] - steps[starts]
        exclusive = running - steps - before[group]
        unique = order[first]
        who = None if threads is None else threads[unique]
        current = self.read(who, addresses[unique], size).astype(np.uint64)
        ends = np.r_[starts[1:], order.size] - 1
        mask = np.uint64((1 << (8 * size)) - 1) if size < 8 else np.uint64(0xFFFFFFFFFFFFFFFF)
        self.write(who, addresses[unique], ((current + running[ends] - before) & mask).astype(UNSIGNED[size]))
        old = np.empty(order.size, dtype=UNSIGNED[size])
        old[order] = ((current[group] + exclusive) & mask).astype(UNSIGNED[size])
        return old


class FlatSpace(Space):
    """A64 (or zero-extended A32) virtual addresses."""

    def __init__(self, memory: DeviceMemory, base: int = 0):
        self.memory = memory
        self.base = base

    def read(self, threads, addresses, size):
        return self.memory.read(np.asarray(addresses, dtype=np.uint64) + np.uint64(self.base), size)

    def write(self, threads, addresses, data):
        self.memory.write(np.asarray(addresses, dtype=np.uint64) + np.uint64(self.base), data)


class SurfaceSpace(Space):
    """Byte offsets into a buffer surface; out of bounds reads give 0 and writes are dropped."""

    def __init__(self, memory: DeviceMemory, surface: Surface):
        self.memory = memory
        self.surface = surface

    def _inside(self, addresses, size):
        offsets = np.asarray(addresses, dtype=np.int64)
        return (offsets >= 0) & (offsets + size <= self.surface.size), offsets

    def read(self, threads, addresses, size):
        inside, offsets = self._inside(addresses, size)
        base = np.uint64(self.surface.base)
        if inside.all():
            return self.memory.read(offsets.astype(np.uint64) + base, size)
        out = np.zeros(offsets.size, dtype=UNSIGNED[size])
        if np.any(inside):
            out[inside] = self.memory.read(offsets[inside].astype(np.uint64) + base, size)
        return out

    def write(self, threads, addresses, values):
        inside, offsets = self._inside(addresses, values.dtype.itemsize)
        base = np.uint64(self.surface.base)
        if inside.all():
            self.memory.write(offsets.astype(np.uint64) + base, values)
        elif np.any(inside):
            self.memory.write(offsets[inside].astype(np.uint64) + base, values[inside])


class SlmSpace(Space):
    """Byte offsets into the work-group's shared local memory."""

    needs_threads = True

    def __init__(self, slm: SharedLocalMemory, group_of_thread: np.ndarray):
        self.slm = slm
        self.group_of_thread = group_of_thread

    def keys(self, threads, addresses):
        return self.group_of_thread[threads].astype(np.int64) * self.slm.stride + self.slm.offsets(addresses)

    def read(self, threads, addresses, size):
        return self.slm.read(self.group_of_thread[threads], addresses, size)

    def write(self, threads, addresses, data):
        self.slm.write(self.group_of_thread[threads], addresses, data)


class ScratchSpace(Space):
    """A32 offsets into the sending thread's own scratch space (XeHPG/XeHPC scratch surface:
    the hardware adds the thread's slot).  The surface is `per_thread` bytes: reads past it
    give 0 and writes are dropped, as for any surface.  `check(threads)` verifies that the
    message names the scratch surface."""

    needs_threads = True

    def __init__(self, memory: DeviceMemory, scratch: Scratch, check: Callable[[np.ndarray], None]):
        self.memory = memory
        self.scratch = scratch
        self.check = check

    def keys(self, threads, addresses):
        return threads.astype(np.int64) * self.scratch.per_thread + np.asarray(addresses, np.int64)

    def _resolve(self, threads, addresses, size):
        self.check(threads)
        offsets = np.asarray(addresses, dtype=np.int64)
        inside = (offsets >= 0) & (offsets + size <= self.scratch.per_thread)
        flat = (self.scratch.base + threads.astype(np.int64) * self.scratch.per_thread + offsets).astype(np.uint64)
        return inside, flat

    def read(self, threads, addresses, size):
        inside, flat = self._resolve(threads, addresses, size)
        out = np.zeros(flat.size, dtype=UNSIGNED[size])
        if np.any(inside):
            out[inside] = self.memory.read(flat[inside], size)
        return out

    def write(self, threads, addresses, values):
        inside, flat = self._resolve(threads, addresses, values.dtype.itemsize)
        if np.any(inside):
            self.memory.write(flat[inside], values[inside])
