"""The architectural state of a batch of hardware threads, as numpy arrays.

Every register file is a 2-D uint8 array of shape (threads, bytes): row t is thread t's
copy of the file.  Operands become numpy views into these rows (see `operands`), so one
instruction reads and writes all threads of the batch at once.

Files: GRF (`grf`), accumulators (`acc`, with the math-macro registers mme0-7 stored as
acc8-15), flags (`flags`, 4 bytes per fN), the address register a0 (16 words), sr0, cr0,
ce0, n0, tm0, and `null` (reads zero; writes land in a scratch row nobody reads).

`acc_wide` keeps the exact 64-bit value of integer products written to the accumulator
(`mul acc0:d ...`) for the `mach`/`macl` that follows, as the hardware keeps more than 32
bits per channel there.
"""

from __future__ import annotations

import numpy as np

from .. import hw as hwlib
from .errors import SimulationError

ACC_REGISTERS = 16  # acc0-7 (acc0-15 on XeHPC) plus mme0-7 stored as acc8-15
MAX_CHANNELS = 32


class RegisterFiles:
    """Registers of `threads` threads of one platform."""

    def __init__(self, platform: hwlib.Platform, threads: int, grf_count: int):
        self.platform = platform
        self.threads = threads
        self.grf_bytes = platform.grf_bytes
        self.grf_count = grf_count
        t = threads
        self.grf = np.zeros((t, grf_count * self.grf_bytes), dtype=np.uint8)
        self.acc = np.zeros((t, ACC_REGISTERS * self.grf_bytes), dtype=np.uint8)
        self.acc_wide = np.zeros((t, ACC_REGISTERS * self.grf_bytes // 4), dtype=np.int64)
        self.flags = np.zeros((t, 4 * max(platform.flag_registers, 4)), dtype=np.uint8)
        self.a0 = np.zeros((t, 32), dtype=np.uint8)
        self.sr = np.zeros((t, 32), dtype=np.uint8)
        self.cr = np.zeros((t, 16), dtype=np.uint8)
        self.ce = np.zeros((t, 4), dtype=np.uint8)
        self.n = np.zeros((t, 16), dtype=np.uint8)
        self.tm = np.zeros((t, 32), dtype=np.uint8)
        self.null_read = np.zeros((t, 2 * 64 * 4), dtype=np.uint8)
        self.null_write = np.zeros((t, 2 * 64 * 4), dtype=np.uint8)

    def file(self, name: str, for_write: bool = False) -> tuple[np.ndarray, int]:
        """The array holding register file `name` and the bytes per register in it."""
        if name == "r":
            return self.grf, self.grf_bytes
        if name in ("acc", "mme"):
            return self.acc, self.grf_bytes
        if name == "f":
            return self.flags, 4
        if name == "a":
            return self.a0, 32
        if name == "sr":
            return self.sr, 16
        if name == "cr":
            return self.cr, 16
        if name == "ce":
            return self.ce, 4
        if name == "n":
            return self.n, 16
        if name == "tm":
            return self.tm, 32
        if name == "null":
            return (self.null_write if for_write else self.null_read), 0
        raise SimulationError(f"register file '{name}' is not simulated")

    def register_base(self, name: str, number: int) -> int:
        """Byte offset of register `number` of file `name` within its array."""
        if name == "mme":
            return (8 + number) * self.grf_bytes
        _, size = self.file(name)
        return number * size
