"""Buffers the interpreter reads and writes: global memory, per-thread GRF, per-group SLM.

All threads of a dispatch run as one numpy batch, so a buffer access takes byte addresses for
every thread at once (batch axis first, lanes last).  SLM buffers also keep, for each byte,
which thread last wrote and read it and in which barrier phase, to report races: an access that
conflicts with another thread's access since the last barrier.  As with LSC on the hardware, an
SLM write reaches other threads only through an SLM fence: a barrier (or signal) publishes the
writes the thread fenced before it, and an access by another thread to a byte written but not
fenced before the barrier it waited on is reported too (`UnfencedSlmWriteError`).
"""

from __future__ import annotations

import numpy as np

from ..errors import EvaluationError
from . import semantics
from .types import Type

POISON = 0xFF  # fill for fresh GRF/SLM allocations: reading before writing gives NaN or -1


class SlmRaceError(EvaluationError):
    """Two threads of a group access one SLM byte, at least one writing, with no barrier between."""


class UnfencedSlmWriteError(SlmRaceError):
    """A thread accesses an SLM byte another thread wrote and did not fence before the barrier
    (or signal) between them: the write may not have reached SLM yet."""


NOT_FENCED = np.iinfo(np.int64).max  # the fence phase of a write no fence has covered yet


def to_bytes(values: np.ndarray, t: Type) -> np.ndarray:
    """Values of scalar type `t` as little-endian bytes in a trailing axis."""
    values = np.ascontiguousarray(values)
    if t.kind == "bf16":
        raw = (values.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    else:
        raw = values.astype(semantics.numpy_dtype(t), copy=False)
    raw = np.ascontiguousarray(raw)
    return raw.view(np.uint8).reshape(raw.shape + (t.size,))


def from_bytes(raw: np.ndarray, t: Type) -> np.ndarray:
    """Inverse of to_bytes: a trailing axis of `t.size` bytes to values."""
    raw = np.ascontiguousarray(raw)
    if t.kind == "bf16":
        bits = raw.view(np.uint16)[..., 0].astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32)
    if t.is_bool:
        return raw[..., 0] != 0
    return raw.view(semantics.numpy_dtype(t))[..., 0]


class Buffer:
    """Bytes with one row per owner: one row for global memory, a row per thread (GRF) or per
    thread group (SLM).  `rows` maps each thread of the batch to its row."""

    kind = "global"

    def __init__(self, name: str, data: np.ndarray, rows: np.ndarray | None):
        self.name = name
        self.data = data  # uint8, shape (owners, size)
        self.rows = rows  # (threads,) row of each thread, or None for a single shared row

    @property
    def size(self) -> int:
        return self.data.shape[1]

    def _locate(
        self,
        addresses: np.ndarray,
        width: int,
        lane_dims: int,
        active: np.ndarray | None,
        lane_mask: np.ndarray | None = None,
    ):
        """Row and byte indices of every byte accessed; checks bounds of the enabled accesses
        (active threads, lanes not masked off).

        Returns (rows, bytes, enabled): bytes shaped batch + lanes + (width,), enabled batch + lanes."""
        addresses = np.asarray(addresses, dtype=np.int64)
        threads = None if self.rows is None else self.rows.shape[0]
        if threads is None and active is not None:
            threads = active.shape[0]
        batch_shape = addresses.shape[: addresses.ndim - lane_dims]
        if threads is not None and batch_shape != (threads,):
            addresses = np.broadcast_to(addresses, (threads,) + addresses.shape[addresses.ndim - lane_dims :])
        enabled = np.ones(addresses.shape, dtype=bool)
        if active is not None and threads is not None:
            enabled &= active.reshape((threads,) + (1,) * lane_dims)
        if lane_mask is not None:
            enabled &= np.broadcast_to(lane_mask, enabled.shape)
        bad = enabled & ((addresses < 0) | (addresses + width > self.size))
        if np.any(bad):
            index = tuple(int(i) for i in np.argwhere(bad)[0])
            thread = f" in thread {index[0]}" if threads is not None else ""
            raise EvaluationError(
                f"access of {width} bytes at offset {int(addresses[index])} of '{self.name}' "
                f"(size {self.size}){thread} is out of bounds"
            )
        addresses = np.where(enabled, addresses, 0)
        byte_index = addresses[..., None] + np.arange(width, dtype=np.int64)
        if self.rows is None:
            rows = np.zeros((1,) * byte_index.ndim, dtype=np.int64)
        else:
            rows = self.rows.reshape(self.rows.shape + (1,) * (byte_index.ndim - 1))  # (threads, 1, ...)
        return rows, byte_index, enabled

    def read(
        self,
        addresses: np.ndarray,
        t: Type,
        lane_dims: int,
        active: np.ndarray | None,
        thread_state=None,
        lane_mask: np.ndarray | None = None,
    ) -> np.ndarray:
        """Values at `addresses`; lanes off in `lane_mask` are neither bounds-checked nor tracked
        (their values are unspecified: callers do not use them)."""
        rows, byte_index, enabled = self._locate(addresses, t.size, lane_dims, active, lane_mask)
        self._track(rows, byte_index, enabled, thread_state, write=False)
        return from_bytes(self.data[rows, byte_index], t)

    def write(
        self,
        addresses: np.ndarray,
        values: np.ndarray,
        t: Type,
        lane_dims: int,
        enabled_lanes: np.ndarray | None,
        active: np.ndarray | None,
        thread_state=None,
    ) -> None:
        rows, byte_index, enabled = self._locate(addresses, t.size, lane_dims, active, enabled_lanes)
        raw = np.broadcast_to(to_bytes(values, t), byte_index.shape)
        rows = np.broadcast_to(rows, byte_index.shape)
        self._track(rows, byte_index, enabled, thread_state, write=True)
        keep = np.broadcast_to(enabled[..., None], byte_index.shape)
        self.data[rows[keep], byte_index[keep]] = raw[keep]

    def _track(self, rows, byte_index, enabled, thread_state, write: bool) -> None:
        """Race tracking hook (SLM only)."""


class GlobalBuffer(Buffer):
    """A user array, read and written in place."""

    kind = "global"

    def __init__(self, name: str, array: np.ndarray):
        if not array.flags.c_contiguous:
            raise EvaluationError(f"buffer '{name}' must be a contiguous array")
        super().__init__(name, array.reshape(-1).view(np.uint8).reshape(1, -1), None)


class RegisterBuffer(Buffer):
    """A GRF allocation: one private copy per thread."""

    kind = "grf"

    def __init__(self, name: str, size: int, threads: int):
        super().__init__(name, np.full((threads, size), POISON, dtype=np.uint8), np.arange(threads))


class SharedLocalBuffer(Buffer):
    """An SLM allocation: one copy per thread group, with race tracking."""

    kind = "slm"

    def __init__(self, name: str, size: int, group_of_thread: np.ndarray, groups: int):
        super().__init__(name, np.full((groups, size), POISON, dtype=np.uint8), group_of_thread)
        self.writer = np.full((groups, size), -1, dtype=np.int64)
        self.writer_phase = np.zeros((groups, size), dtype=np.int64)
        # signals the writer had sent when an SLM fence covered the write: the next one publishes it
        self.fence_phase = np.full((groups, size), NOT_FENCED, dtype=np.int64)
        self.reader = np.full((groups, size), -1, dtype=np.int64)  # -1 none, -2 several threads
        self.reader_phase = np.zeros((groups, size), dtype=np.int64)

    def _track(self, rows, byte_index, enabled, thread_state, write: bool) -> None:
        if thread_state is None:
            return
        shape = byte_index.shape
        keep = np.broadcast_to(enabled[..., None], shape)
        thread_of = np.broadcast_to(np.arange(shape[0]).reshape((-1,) + (1,) * (len(shape) - 1)), shape)
        threads, groups, offsets = thread_of[keep], np.broadcast_to(rows, shape)[keep], byte_index[keep]
        if threads.size:
            self._check(groups, offsets, threads, thread_state.waits[threads], write)
            self._record(groups * self.size + offsets, threads, thread_state.signals, write)

    def fence(self, fencing: np.ndarray, signals: np.ndarray) -> None:
        """An SLM fence by the threads `fencing` (a mask over threads): their writes so far are
        published by their next signal."""
        pending = (self.writer >= 0) & (self.fence_phase == NOT_FENCED)
        pending &= fencing[np.maximum(self.writer, 0)]
        self.fence_phase[pending] = signals[self.writer[pending]]

    def _check(self, groups, offsets, threads, waits, write: bool) -> None:
        """An earlier access by another thread must precede a barrier this thread has waited on
        (and an earlier write must be fenced before that barrier's signal)."""
        writer = self.writer[groups, offsets]
        by_other = (writer >= 0) & (writer != threads)
        conflict = by_other & ~(waits > self.writer_phase[groups, offsets])
        if write:
            reader = self.reader[groups, offsets]
            other_reader = (reader == -2) | ((reader >= 0) & (reader != threads))
            conflict |= other_reader & ~(waits > self.reader_phase[groups, offsets])
        if np.any(conflict):
            i = int(np.argmax(conflict))
            earlier = "written" if writer[i] >= 0 and writer[i] != threads[i] else "read"
            by = f"thread {int(writer[i])}" if earlier == "written" else "another thread"
            raise SlmRaceError(
                f"SLM race: thread {int(threads[i])} {'writes' if write else 'reads'} byte {int(offsets[i])} of "
                f"'{self.name}' (group {int(groups[i])}), {earlier} by {by} since the last barrier"
            )
        unfenced = by_other & ~(waits > self.fence_phase[groups, offsets])
        if np.any(unfenced):
            i = int(np.argmax(unfenced))
            raise UnfencedSlmWriteError(
                f"unfenced SLM write: thread {int(threads[i])} {'writes' if write else 'reads'} byte "
                f"{int(offsets[i])} of '{self.name}' (group {int(groups[i])}), which thread {int(writer[i])} "
                "wrote without an SLM fence before the barrier signal between them"
            )

    def _record(self, flat, threads, signals, write: bool) -> None:
        order = np.lexsort((threads, flat))
        flat, threads = flat[order], threads[order]
        first = np.r_[True, flat[1:] != flat[:-1]]  # first access of each byte
        second_thread = np.r_[False, ~first[1:] & (threads[1:] != threads[:-1])]
        if write:
            if np.any(second_thread):
                i = int(np.argmax(second_thread))
                raise SlmRaceError(
                    f"SLM race: threads {int(threads[i - 1])} and {int(threads[i])} write byte "
                    f"{int(flat[i] % self.size)} of '{self.name}' at once"
                )
            self.writer.reshape(-1)[flat] = threads
            self.writer_phase.reshape(-1)[flat] = signals[threads]
            self.fence_phase.reshape(-1)[flat] = NOT_FENCED
            self.reader.reshape(-1)[flat] = -1
            return
        byte = np.cumsum(first) - 1
        several = np.zeros(int(byte[-1]) + 1, dtype=bool)
        np.logical_or.at(several, byte, second_thread)
        unique, thread = flat[first], threads[first]
        previous = self.reader.reshape(-1)[unique]
        shared = several | (previous == -2) | ((previous >= 0) & (previous != thread))
        self.reader.reshape(-1)[unique] = np.where(shared, -2, thread)
        phase = np.zeros(several.shape, dtype=np.int64)
        np.maximum.at(phase, byte, signals[threads])
        self.reader_phase.reshape(-1)[unique] = np.maximum(self.reader_phase.reshape(-1)[unique], phase)
