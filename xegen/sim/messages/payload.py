"""Message payloads: the GRF bytes a send reads (src0 then src1) and the rows it writes.

Lanes: a send of exec size E at channel offset c covers channels c..c+E-1; payload lane i
is channel c+i.  A payload field (the addresses, one data component) is a (threads, lanes)
view of the registers; `Lanes` selects the enabled entries of such views as the flat
arrays every memory access in `spaces` takes, and puts results back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...emit.instruction import Instruction, SendDescriptor
from ..errors import SimulationError
from ..memory import UNSIGNED
from ..operands import registers
from ..state import RegisterFiles


@dataclass
class Lengths:
    src0: int  # GRFs of src0 (mlen)
    src1: int  # GRFs of src1
    dst: int  # GRFs written (rlen)


def message(inst: Instruction) -> SendDescriptor:
    """The message descriptor of a send (the decoder gives every send one)."""
    if inst.send is None:
        raise SimulationError(f"{inst.opcode} without a message descriptor")
    return inst.send


def lengths(inst: Instruction, files: RegisterFiles) -> Lengths:
    msg = message(inst)
    mlen, rlen = msg.message_length, msg.response_length
    if mlen is None or rlen is None:  # they are the descriptor's fields
        raise SimulationError("send with its descriptor in a0 is not simulated")
    dst, _, src1_reg = registers(inst, 2)
    if msg.src1_length is not None:
        src1 = msg.src1_length
    else:
        src1 = (msg.exdesc >> 6) & 0x1F
    if src1_reg.file != "r":
        src1 = 0
    return Lengths(mlen, src1, rlen if dst.file == "r" else 0)


class Payload:
    """Byte access to a send's source and destination registers for every thread."""

    def __init__(self, inst: Instruction, files: RegisterFiles):
        self.files = files
        self.grf_bytes = files.grf_bytes
        self.lengths = lengths(inst, files)
        dst, src0, src1 = registers(inst, 2)
        self.src0 = src0.number if src0.file == "r" else None
        self.src1 = src1.number if src1.file == "r" else None
        self.dst = dst.number if dst.file == "r" else None
        for name, start, count in (
            ("src0", self.src0, self.lengths.src0),
            ("src1", self.src1, self.lengths.src1),
            ("dst", self.dst, self.lengths.dst),
        ):
            if start is not None and start + count > files.grf_count:
                raise SimulationError(f"{name} r{start}..r{start + count - 1} runs past r{files.grf_count - 1}")
        self.exec_size = inst.exec_size
        self.channel_offset = inst.channel_offset

    def rows(self, start: int | None, count: int) -> np.ndarray:
        b = self.grf_bytes
        if start is None or count == 0:
            return np.zeros((self.files.threads, 0), dtype=np.uint8)
        return self.files.grf[:, start * b : (start + count) * b]

    def source(self) -> np.ndarray:
        """src0 followed by src1, (threads, bytes) — a copy when src1 is present."""
        first = self.rows(self.src0, self.lengths.src0)
        if self.src1 is None or self.lengths.src1 == 0:
            return first
        return np.concatenate([first, self.rows(self.src1, self.lengths.src1)], axis=1)

    def source_field(self, start: int, count: int, size: int) -> np.ndarray:
        """(threads, count) unsigned view of `count` `size`-byte elements at byte `start` of
        src0 followed by src1 (copied only when the field straddles the two)."""
        first = self.lengths.src0 * self.grf_bytes
        end = start + count * size
        if end <= first:
            rows, offset = self.rows(self.src0, self.lengths.src0), start
        elif start >= first:
            rows, offset = self.src1_rows(), start - first
        else:
            rows, offset = self.source(), start
        if offset + count * size > rows.shape[1]:
            raise SimulationError(f"the message reads {end} payload bytes but src0/src1 hold fewer")
        return rows[:, offset : offset + count * size].view(UNSIGNED[size])

    def destination_field(self, start: int, count: int, size: int) -> np.ndarray:
        """(threads, count) unsigned view of destination elements at byte `start`."""
        b = self.grf_bytes
        end = start + count * size
        if self.dst is None:
            raise SimulationError("the message returns data but its destination is null")
        if self.dst * b + end > self.files.grf.shape[1]:
            raise SimulationError(f"the message writes past the last GRF (r{self.dst} + {end} bytes)")
        return self.files.grf[:, self.dst * b + start : self.dst * b + end].view(UNSIGNED[size])

    def src1_rows(self) -> np.ndarray:
        return self.rows(self.src1, self.lengths.src1)

    def destination(self, count: int | None = None) -> np.ndarray:
        count = self.lengths.dst if count is None else count
        if self.dst is None or count == 0:
            return np.zeros((self.files.threads, 0), dtype=np.uint8)
        if self.dst + count > self.files.grf_count:
            raise SimulationError(f"dst r{self.dst}..r{self.dst + count - 1} runs past the GRF")
        return self.rows(self.dst, count)


class Lanes:
    """The enabled lanes of one execution of a message: a (threads, lanes) bool mask, or all."""

    def __init__(self, mask: np.ndarray | None, threads: int, lanes: int):
        self.shape = (threads, lanes)
        if mask is not None and mask.shape[1] > lanes:
            mask = mask[:, :lanes]
        self.full = None if mask is None else np.broadcast_to(mask, self.shape)
        self.count = threads * lanes if self.full is None else int(np.count_nonzero(self.full))

    def select(self, view: np.ndarray) -> np.ndarray:
        """(threads, lanes) -> the enabled entries, thread-major."""
        view = np.broadcast_to(view, self.shape)
        return view.reshape(-1) if self.full is None else view[self.full]

    def place(self, view: np.ndarray, values: np.ndarray) -> None:
        if self.full is None:
            view[...] = values.reshape(self.shape)
        else:
            view[self.full] = values

    def threads(self) -> np.ndarray:
        return self.select(np.arange(self.shape[0])[:, None])

    def lanes(self) -> np.ndarray:
        return self.select(np.arange(self.shape[1])[None, :])


def active(mask: np.ndarray | None, threads: int, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """(thread, lane) index arrays of the enabled accesses, thread-major."""
    if mask is None:
        t = np.repeat(np.arange(threads), lanes)
        return t, np.tile(np.arange(lanes), threads)
    t, lane = np.nonzero(np.broadcast_to(mask, (threads, lanes)))
    return t, lane


def gather(rows: np.ndarray, t: np.ndarray, offsets: np.ndarray, size: int) -> np.ndarray:
    """(n,) unsigned `size`-byte elements: access i reads thread t[i]'s payload at offsets[i]."""
    dtype = UNSIGNED[size]
    if size == 1:
        return rows[t, offsets]
    if rows.shape[1] % size == 0 and not np.any(offsets % size):
        return rows.view(dtype)[t, offsets // size]
    return np.ascontiguousarray(rows[t[:, None], offsets[:, None] + np.arange(size)]).view(dtype).reshape(-1)


def scatter(rows: np.ndarray, t: np.ndarray, offsets: np.ndarray, values: np.ndarray) -> None:
    size = values.dtype.itemsize
    if size == 1:
        rows[t, offsets] = values
    elif rows.shape[1] % size == 0 and not np.any(offsets % size):
        rows.view(values.dtype)[t, offsets // size] = values
    else:
        rows[t[:, None], offsets[:, None] + np.arange(size)] = (
            np.ascontiguousarray(values).view(np.uint8).reshape(-1, size)
        )


def as_unsigned(values: np.ndarray, size: int) -> np.ndarray:
    return np.asarray(values).astype(UNSIGNED[size])
