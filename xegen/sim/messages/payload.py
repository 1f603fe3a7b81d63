"""Message payloads: the GRF bytes a send reads (src0 then src1) and the rows it writes.

Lanes: a send of exec size E at channel offset c covers channels c..c+E-1; payload lane i
is channel c+i.  `active(mask)` flattens the enabled (thread, lane) pairs, which is the
shape every memory access in `spaces` takes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...emit.instruction import Instruction
from ..errors import SimulationError
from ..state import RegisterFiles


@dataclass
class Lengths:
    src0: int  # GRFs of src0 (mlen)
    src1: int  # GRFs of src1
    dst: int  # GRFs written (rlen)


def lengths(inst: Instruction, files: RegisterFiles) -> Lengths:
    msg = inst.send
    if msg.desc_in_a0:
        raise SimulationError("send with its descriptor in a0 is not simulated")
    if msg.src1_length is not None:
        src1 = msg.src1_length
    else:
        src1 = (msg.exdesc >> 6) & 0x1F
    if inst.srcs[1].file != "r":
        src1 = 0
    dst = msg.response_length if inst.dst.file == "r" else 0
    return Lengths(msg.message_length, src1, dst)


class Payload:
    """Byte access to a send's source and destination registers for every thread."""

    def __init__(self, inst: Instruction, files: RegisterFiles):
        self.files = files
        self.grf_bytes = files.grf_bytes
        self.lengths = lengths(inst, files)
        self.src0 = inst.srcs[0].number if inst.srcs[0].file == "r" else None
        self.src1 = inst.srcs[1].number if inst.srcs[1].file == "r" else None
        self.dst = inst.dst.number if inst.dst.file == "r" else None
        for name, start, count in (("src0", self.src0, self.lengths.src0), ("src1", self.src1, self.lengths.src1),
                                   ("dst", self.dst, self.lengths.dst)):
            if start is not None and start + count > files.grf_count:
                raise SimulationError(f"{name} r{start}..r{start + count - 1} runs past r{files.grf_count - 1}")
        self.exec_size = inst.exec_size
        self.channel_offset = inst.channel_offset

    def rows(self, start: int | None, count: int) -> np.ndarray:
        b = self.grf_bytes
        if start is None or count == 0:
            return np.zeros((self.files.threads, 0), dtype=np.uint8)
        return self.files.grf[:, start * b:(start + count) * b]

    def source(self) -> np.ndarray:
        """src0 followed by src1, (threads, bytes) — a copy when src1 is present."""
        first = self.rows(self.src0, self.lengths.src0)
        if self.src1 is None or self.lengths.src1 == 0:
            return first
        return np.concatenate([first, self.rows(self.src1, self.lengths.src1)], axis=1)

    def src1_rows(self) -> np.ndarray:
        return self.rows(self.src1, self.lengths.src1)

    def destination(self, count: int | None = None) -> np.ndarray:
        count = self.lengths.dst if count is None else count
        if self.dst is None or count == 0:
            return np.zeros((self.files.threads, 0), dtype=np.uint8)
        if self.dst + count > self.files.grf_count:
            raise SimulationError(f"dst r{self.dst}..r{self.dst + count - 1} runs past the GRF")
        return self.rows(self.dst, count)


def active(mask: np.ndarray | None, threads: int, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """(thread, lane) index arrays of the enabled accesses, thread-major."""
    if mask is None:
        t = np.repeat(np.arange(threads), lanes)
        return t, np.tile(np.arange(lanes), threads)
    full = np.broadcast_to(mask, (threads, lanes))
    return np.nonzero(full)


def gather_elements(data: np.ndarray, t: np.ndarray, offsets: np.ndarray, size: int) -> np.ndarray:
    """(n, size) bytes: for access i, `size` bytes of thread t[i]'s payload at offsets[i]."""
    return data[t[:, None], offsets[:, None] + np.arange(size)]


def scatter_elements(rows: np.ndarray, t: np.ndarray, offsets: np.ndarray, values: np.ndarray) -> None:
    size = values.shape[1]
    rows[t[:, None], offsets[:, None] + np.arange(size)] = values


def little_endian(values: np.ndarray) -> np.ndarray:
    """(n, k) bytes -> (n,) unsigned integers."""
    size = values.shape[1]
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[size]
    return np.ascontiguousarray(values).view(dtype).reshape(-1)


def to_bytes(values: np.ndarray, size: int) -> np.ndarray:
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[size]
    return np.ascontiguousarray(np.asarray(values).astype(dtype)).view(np.uint8).reshape(-1, size)
