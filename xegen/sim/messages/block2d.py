"""LSC 2D block messages (XeHPC, sfid ugm): load_block2d (opcode 3) and store_block2d (7).

Descriptor: [5:0] opcode, [7] VNNI transform (loads), [11:9] data size (d8, d16, d32, d64),
[15] transpose (loads), [24:20] rlen, [28:25] mlen (1: the header).  The address is flat.

Header (src0, one GRF; layouts after IGC's vISA builder and the tiny-tensor-compiler's
native 2D block code): qword 0 the surface base address, dword 2 its width in bytes - 1,
dword 3 its height in rows - 1, dword 4 its pitch in bytes - 1, dword 5 the block's first
column X (in elements, signed), dword 6 its first row Y (signed), dword 7 the block shape:
[7:0] width - 1 (elements), [15:8] height - 1 (rows), [19:16] array length - 1 (blocks side
by side, X, X + width, ...).

Register layout (cl_intel_subgroup_2d_block_io / SPV_INTEL_2d_block_io describe the same
data per work-item): each block is row-major, one row after another, a row taking the
block width in bytes rounded up to a power of two; each block of an array starts at a GRF
boundary.  VNNI transform packs 32 / (element bits) consecutive rows into each dword (a
"row" of dwords per group of rows: row pair k, column c -> dword (k, c) with the earlier
row in the low bits).  Transpose (d32, d64) writes memory column c as register row c.

Bounds: elements outside the surface (X < 0, X >= width, Y < 0, Y >= height) read as zero
and are not written.  The message runs once per thread when any of its channels is enabled.
A load with response length 0 is a prefetch: it changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...emit.instruction import Instruction
from ..errors import SimulationError
from ..memory import UNSIGNED
from .payload import Payload, gather, message

if TYPE_CHECKING:
    from ..machine import Machine

LOAD_BLOCK2D, STORE_BLOCK2D = 3, 7
ELEMENT_BYTES = {0: 1, 1: 2, 2: 4, 3: 8}


def _power_of_two_at_least(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def compile_block2d(inst: Instruction, m: Machine, mask_of):
    desc = message(inst).desc
    opcode = desc & 0x3F
    size = ELEMENT_BYTES.get((desc >> 9) & 7)
    if size is None:
        raise SimulationError(f"2D block message with data size code {(desc >> 9) & 7} (d8, d16, d32 or d64 only)")
    vnni, transpose = bool(desc >> 7 & 1), bool(desc >> 15 & 1)
    if opcode == STORE_BLOCK2D and (vnni or transpose):
        raise SimulationError("store_block2d with a transform or transpose")
    if vnni and transpose:
        raise SimulationError("load_block2d with both VNNI transform and transpose")
    if vnni and size > 2:
        raise SimulationError("load_block2d VNNI transform of d32/d64 data")
    if transpose and size < 4:
        raise SimulationError("load_block2d transpose of d8/d16 data (only d32 and d64)")
    payload = Payload(inst, m.files)
    grf = m.files.grf_bytes
    threads = m.files.threads

    if opcode == LOAD_BLOCK2D and (desc >> 20) & 0x1F == 0:
        return lambda: None  # a prefetch (response length 0): no register or memory value changes

    def run():
        mask = mask_of()
        active = np.arange(threads) if mask is None else np.nonzero(np.asarray(mask).any(axis=1))[0]
        header = payload.source()
        for t in active:
            fields = Header.read(header, int(t))
            if opcode == LOAD_BLOCK2D:
                _load(m, payload, int(t), fields, size, vnni, transpose, grf)
            else:
                _store(m, payload, int(t), fields, size, grf)

    return run


class Header:
    """The decoded 2D block header of one thread."""

    def __init__(self, base, width, height, pitch, x, y, block_width, block_height, count):
        self.base, self.width, self.height, self.pitch = base, width, height, pitch
        self.x, self.y = x, y
        self.block_width, self.block_height, self.count = block_width, block_height, count

    @staticmethod
    def read(rows: np.ndarray, t: int) -> Header:
        words = np.ascontiguousarray(rows[t, :32]).view(np.uint32)
        signed = words.view(np.int32)
        shape = int(words[7])
        return Header(
            int(np.ascontiguousarray(rows[t, :8]).view(np.uint64)[0]),
            int(words[2]) + 1,
            int(words[3]) + 1,
            int(words[4]) + 1,
            int(signed[5]),
            int(signed[6]),
            (shape & 0xFF) + 1,
            ((shape >> 8) & 0xFF) + 1,
            ((shape >> 16) & 0xF) + 1,
        )

    def elements(self, size: int, block: int):
        """(rows, columns) memory coordinates of block `block` and whether each is inside."""
        rows = self.y + np.arange(self.block_height)[:, None]
        columns = self.x + block * self.block_width + np.arange(self.block_width)[None, :]
        inside = (rows >= 0) & (rows < self.height) & (columns >= 0) & (columns * size + size <= self.width)
        return rows, columns, inside

    def addresses(self, rows, columns, size: int) -> np.ndarray:
        return (self.base + rows.astype(np.int64) * self.pitch + columns.astype(np.int64) * size).astype(np.uint64)


def _block_bytes(rows: int, row_bytes: int, grf: int) -> int:
    return -(-rows * row_bytes // grf) * grf


def _load(m: Machine, payload: Payload, t: int, h: Header, size: int, vnni: bool, transpose: bool, grf: int):
    out = bytearray()
    for block in range(h.count):
        rows, columns, inside = h.elements(size, block)
        data = np.zeros(inside.shape, dtype=UNSIGNED[size])
        if inside.any():
            data[inside] = m.memory.read(h.addresses(rows, columns, size)[inside], size)
        if vnni:  # groups of 32 / bits rows packed into dwords
            group = 4 // size
            padded = np.zeros((-(-h.block_height // group) * group, h.block_width), dtype=UNSIGNED[size])
            padded[: h.block_height] = data
            data = (
                np.ascontiguousarray(padded.reshape(-1, group, h.block_width).transpose(0, 2, 1))
                .view(np.uint32)
                .reshape(-1, h.block_width)
            )
        elif transpose:
            data = np.ascontiguousarray(data.T)
        row_bytes = data.shape[1] * data.dtype.itemsize
        pitch = _power_of_two_at_least(row_bytes)
        block_bytes = bytearray(_block_bytes(data.shape[0], pitch, grf))
        raw = data.view(np.uint8).reshape(data.shape[0], row_bytes)
        for r in range(data.shape[0]):
            block_bytes[r * pitch : r * pitch + row_bytes] = raw[r].tobytes()
        out += block_bytes
    registers = len(out) // grf
    destination = payload.destination(registers)
    if destination.shape[1] < len(out):
        raise SimulationError(
            f"load_block2d returns {registers} GRFs but the message's destination holds {destination.shape[1] // grf}"
        )
    destination[t, : len(out)] = np.frombuffer(bytes(out), dtype=np.uint8)


def _store(m: Machine, payload: Payload, t: int, h: Header, size: int, grf: int):
    if h.count != 1:
        raise SimulationError("store_block2d with an array length above 1")
    rows, columns, inside = h.elements(size, 0)
    row_bytes = h.block_width * size
    pitch = _power_of_two_at_least(row_bytes)
    source = payload.src1_rows()
    need = _block_bytes(h.block_height, pitch, grf)
    if source.shape[1] < need:
        raise SimulationError(
            f"store_block2d of {h.block_width}x{h.block_height} needs {need // grf} GRFs of data, "
            f"src1 has {source.shape[1] // grf}"
        )
    offsets = np.arange(h.block_height)[:, None] * pitch + np.arange(h.block_width)[None, :] * size
    values = gather(source, np.full(offsets.size, t), offsets.reshape(-1), size).reshape(inside.shape)
    if inside.any():
        m.memory.write(h.addresses(rows, columns, size)[inside], values[inside])
