"""Flag registers: predicates read them, condition modifiers write them.

fN is 32 bits; fN.0 is its low half and fN.1 its high half.  Channel c of an instruction
using fN.s is bit 16*s + c (the channel offset M16 of a SIMD16 half moves to bit 16).
"""

from __future__ import annotations

import numpy as np

from ..emit.instruction import Flag, Predicate
from .errors import SimulationError


def _shifts(first: int, count: int) -> np.ndarray:
    if first + count > 32:
        raise SimulationError(f"channels {first}..{first + count - 1} do not fit a 32-bit flag register")
    return np.arange(first, first + count, dtype=np.uint32)


class FlagReader:
    """Per-channel predicate values (threads, exec_size) of a `Predicate`."""

    def __init__(self, flag_bytes: np.ndarray, predicate: Predicate, exec_size: int, channel_offset: int):
        self.bytes = flag_bytes[:, 4 * predicate.flag.reg : 4 * predicate.flag.reg + 4]
        self.words = flag_bytes.view(np.uint32)
        self.reg = predicate.flag.reg
        self.invert = predicate.invert
        self.mode = predicate.mode
        self.exec_size = exec_size
        base = 16 * predicate.flag.subreg
        self.base = base
        self.shifts = _shifts(base + channel_offset, exec_size)
        self.bits = slice(base + channel_offset, base + channel_offset + exec_size)
        if self.mode.startswith(("any", "all")) and self.mode not in ("anyv", "allv", "any", "all"):
            group = int(self.mode[3:-1])
            channels = np.arange(channel_offset, channel_offset + exec_size)
            starts = (channels // group) * group
            # bits of the group each channel belongs to: (exec_size, group)
            if base + starts.max() + group > 32:
                raise SimulationError(f"predicate .{self.mode} reaches past bit 31 of f{self.reg}")
            self.group_shifts = (base + starts[:, None] + np.arange(group)[None, :]).astype(np.uint32)

    def __call__(self) -> np.ndarray:
        if self.mode == "":
            bits = np.unpackbits(self.bytes, axis=1, bitorder="little")[:, self.bits].view(bool)
            return ~bits if self.invert else bits
        word = self.words[:, self.reg]
        if self.mode in ("anyv", "any"):
            bits = (((word[:, None] >> self.shifts) & 1) != 0).any(axis=1, keepdims=True)
        elif self.mode in ("allv", "all"):
            bits = (((word[:, None] >> self.shifts) & 1) != 0).all(axis=1, keepdims=True)
        else:
            grouped = ((word[:, None, None] >> self.group_shifts[None]) & 1) != 0
            bits = grouped.any(axis=2) if self.mode.startswith("any") else grouped.all(axis=2)
        return ~bits if self.invert else bits


class FlagWriter:
    """Writes one bit per channel of fN.s under an execution mask."""

    def __init__(self, flag_bytes: np.ndarray, flag: Flag, exec_size: int, channel_offset: int):
        self.words = flag_bytes.view(np.uint32)
        self.reg = flag.reg
        first = 16 * flag.subreg + channel_offset
        self.shifts = _shifts(first, exec_size)
        self.field = np.uint32(int(sum(1 << int(s) for s in self.shifts)))
        # whole bytes of the flag register: written directly with packbits
        self.bytes = None
        if first % 8 == 0 and exec_size % 8 == 0:
            start = 4 * flag.reg + first // 8
            self.bytes = flag_bytes[:, start : start + exec_size // 8]
        self.exec_size = exec_size

    def __call__(self, values: np.ndarray, mask: np.ndarray | None) -> None:
        threads = self.words.shape[0]
        if self.bytes is not None:
            packed = _pack(values, threads, self.exec_size)
            if mask is None:
                self.bytes[...] = packed
            else:
                enabled = _pack(mask, threads, self.exec_size)
                self.bytes[...] = (self.bytes & ~enabled) | (packed & enabled)
            return
        values = np.broadcast_to(values, (threads, len(self.shifts)))
        packed = np.bitwise_or.reduce(values.astype(np.uint32) << self.shifts, axis=1)
        word = self.words[:, self.reg]
        if mask is None:
            self.words[:, self.reg] = (word & ~self.field) | packed
        else:
            mask = np.broadcast_to(mask, (threads, len(self.shifts)))
            enabled = np.bitwise_or.reduce(mask.astype(np.uint32) << self.shifts, axis=1)
            self.words[:, self.reg] = (word & ~enabled) | (packed & enabled)


def _pack(bits: np.ndarray, threads: int, width: int) -> np.ndarray:
    """(threads, width) bools -> (threads, width/8) bytes, channel 0 in bit 0.  Packing the
    flattened array is much faster than packbits along an axis."""
    flat = np.ascontiguousarray(np.broadcast_to(bits, (threads, width))).reshape(-1)
    return np.packbits(flat, bitorder="little").reshape(threads, width // 8)
