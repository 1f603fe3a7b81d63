"""Where a message's lane addresses point: flat memory, a surface, stateless A32, or SLM.

Every space takes the accesses as flat arrays: `addresses[i]` is the address as the message
gives it and `threads[i]` the thread making access i (only SLM needs it, for the
work-group; `needs_threads` says so).  Atomics run in rounds, one access per address per round in lane order,
so lanes of one instruction that hit the same address see each other's updates exactly as
if the hardware had serialized them.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..memory import UNSIGNED, DeviceMemory, SharedLocalMemory, Surface


class Space:
    """Interface: read/write `size`-byte elements (unsigned integers) at per-access addresses."""

    needs_threads = False

    def read(self, threads: np.ndarray | None, addresses: np.ndarray, size: int) -> np.ndarray:
        raise NotImplementedError

    def write(self, threads: np.ndarray | None, addresses: np.ndarray, values: np.ndarray) -> None:
        raise NotImplementedError

    def keys(self, threads: np.ndarray | None, addresses: np.ndarray) -> np.ndarray:
        """A number that is equal exactly when two accesses touch the same location."""
        return np.asarray(addresses, dtype=np.int64)

    def atomic(self, threads: np.ndarray, addresses: np.ndarray, size: int,
               update: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
        """Read-modify-write: update(old values, access indices) -> new values.  Returns the
        old value of every access."""
        count = addresses.size
        old = np.zeros(count, dtype=UNSIGNED[size])
        keys = self.keys(threads, addresses)
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
        return self.group_of_thread[threads].astype(np.int64) * self.slm.stride + np.asarray(addresses, np.int64)

    def read(self, threads, addresses, size):
        return self.slm.read(self.group_of_thread[threads], addresses, size)

    def write(self, threads, addresses, data):
        self.slm.write(self.group_of_thread[threads], addresses, data)
