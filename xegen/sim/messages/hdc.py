"""Legacy data-cache (HDC) messages as IGC emits them on XeLP and XeHPG (sfid dc0, dc1).

Descriptor: [7:0] binding table index, [13:8] message control, [18:14] message type,
[19] header present.  BTI 0xFE is SLM, 0xFF/0xFD stateless (A32 relative to General State
Base; A64 messages use flat addresses), others are surfaces of the binding table.

The payload is src0 followed by src1 (split sends put the data in src1): an optional
one-GRF header, the addresses (one dword per lane, a qword for A64), then the data.  SIMT
data is channel-major: each enabled channel (X, Y, Z, W) or element occupies
max(1, SIMD*slot/GRF) GRFs, one slot per lane.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ...emit.instruction import Instruction
from ..errors import MemoryFault, SimulationError
from ..memory import UNSIGNED
from . import atomics
from .payload import Lanes, Payload, active, as_unsigned, gather, message, scatter
from .spaces import FlatSpace, SlmSpace, Space, SurfaceSpace

if TYPE_CHECKING:
    from ..machine import Machine

SLM_BTI = 0xFE
STATELESS_BTIS = (0xFF, 0xFD)
OWORD_BLOCKS = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 16}
SCRATCH_BLOCK_REGISTERS = {0: 1, 1: 2, 3: 4}  # desc[13:12] of a scratch block message
SCRATCH_HEADER_DWORD = 5  # the header's r0.5: the thread's scratch pointer / scratch surface


def _space(bti: int, m: Machine, a64: bool) -> Space:
    if bti == SLM_BTI:
        return SlmSpace(m.slm, m.group_of_thread)
    if bti in STATELESS_BTIS:
        return FlatSpace(m.memory) if a64 else FlatSpace(m.memory, m.general_state_base)
    if a64:
        raise SimulationError(f"A64 message with binding table index {bti} (expected 0xFF or 0xFD)")
    if bti == 0xFC:
        raise SimulationError("surface-state-offset (BTI 0xFC) messages are not simulated")
    return SurfaceSpace(m.memory, m.surface(bti))


def compile_hdc(inst: Instruction, m: Machine, mask_of) -> Callable[[], None]:
    msg = message(inst)
    desc = msg.desc
    bti = desc & 0xFF
    control = (desc >> 8) & 0x3F
    kind = (desc >> 14) & 0x1F
    header = bool(desc >> 19 & 1)
    sfid = msg.sfid
    payload = Payload(inst, m.files)
    h = Hdc(inst, m, payload, mask_of, header)
    if sfid == "dc0" and desc >> 18 & 1:
        return h.scratch_block(
            write=bool(desc >> 17 & 1),
            dword_mode=bool(desc >> 16 & 1),
            registers=SCRATCH_BLOCK_REGISTERS.get((desc >> 12) & 3),
            offset=desc & 0xFFF,
        )
    if sfid in ("dc0", "dcro"):
        if kind == 0x07:
            return lambda: None  # memory fence
        if kind in (0x00, 0x01):
            return h.oword_block_read(_space(bti, m, False), (control & 7), unaligned=kind == 0x01)
        if kind == 0x08:
            return h.oword_block_write(_space(bti, m, False), control & 7)
        if kind in (0x04, 0x0C):
            size = {0: 1, 1: 2, 2: 4}.get((control >> 2) & 3)
            if size is None:
                raise SimulationError("byte scattered message with an invalid data size")
            simd = 16 if control & 1 else 8
            return h.scattered(_space(bti, m, False), simd, size, write=kind == 0x0C)
    elif sfid == "dc1":
        if kind in (0x01, 0x09, 0x11, 0x19):
            untyped_simd = {1: 16, 2: 8}.get((control >> 4) & 3)
            if untyped_simd is None:
                raise SimulationError("untyped surface message in SIMD4x2 mode is not simulated")
            channels = [c for c in range(4) if not (control >> c) & 1]
            a64 = kind in (0x11, 0x19)
            return h.untyped(_space(bti, m, a64), untyped_simd, channels, a64, write=kind in (0x09, 0x19))
        if kind in (0x10, 0x1A):
            subtype = control & 3
            count_code = (control >> 2) & 3
            simd = 16 if control >> 4 & 1 else 8
            space = _space(bti, m, True)
            if subtype == 0:
                size = {0: 1, 1: 2, 2: 4}[count_code]
                return h.scattered(space, simd, size, write=kind == 0x1A, a64=True)
            element = 4 if subtype == 1 else 8
            return h.untyped(space, simd, list(range(1 << count_code)), True, write=kind == 0x1A, element=element)
        if kind in (0x14, 0x15):
            return h.a64_block(_space(bti, m, True), control, write=kind == 0x15)
        if kind in (0x02, 0x12, 0x1B, 0x1D):
            a64 = kind in (0x12, 0x1D)
            table = atomics.HDC_FLOAT_ATOMICS if kind in (0x1B, 0x1D) else atomics.HDC_ATOMICS
            op = table.get(control & 0xF)
            if op is None:
                raise SimulationError(f"HDC atomic operation {control & 0xF} is not simulated")
            size = 8 if a64 and kind == 0x12 and control >> 4 & 1 else 4
            simd = h.a64_atomic_simd(atomics.OPERAND_COUNT[op], size) if a64 else (8 if control >> 4 & 1 else 16)
            return h.atomic(_space(bti, m, a64), simd, op, a64, size, returns=bool(control >> 5 & 1))
    raise SimulationError(f"{sfid} message type 0x{kind:02x} (descriptor 0x{desc:08x}) is not simulated")


class Hdc:
    """Builders of the HDC message closures of one send."""

    def __init__(self, inst: Instruction, m: Machine, payload: Payload, mask_of, header: bool):
        self.inst = inst
        self.m = m
        self.payload = payload
        self.mask_of = mask_of
        self.header = header
        self.grf = m.files.grf_bytes
        self.threads = m.files.threads

    def _pitch(self, simd: int, slot: int) -> int:
        return self.grf * max(1, -(-simd * slot // self.grf))

    def _lanes(self, simd: int) -> Lanes:
        return Lanes(self.mask_of(), self.threads, min(simd, self.inst.exec_size))

    def _addresses(self, lanes: Lanes, simd: int, a64: bool) -> np.ndarray:
        start = self.grf if self.header else 0
        field = self.payload.source_field(start, lanes.shape[1], 8 if a64 else 4)
        return lanes.select(field).astype(np.int64)

    def _data_start(self, simd: int, a64: bool) -> int:
        """Byte offset of the data in src0 followed by src1: a split send carries it in src1;
        otherwise it follows the header and the address block."""
        if self.payload.lengths.src1 > 0:
            return self.payload.lengths.src0 * self.grf
        return (self.grf if self.header else 0) + self._pitch(simd, 8 if a64 else 4)

    def a64_atomic_simd(self, operands: int, size: int) -> int:
        """The lanes of an A64 atomic message's payload.  The descriptor has no SIMD mode bit:
        the message is as wide as its address block (one qword per lane), whatever the
        instruction's execution size (IGC's uniform atomics are `send.dc1 (1|M0)` with a
        SIMD8 payload on XeLP/XeHPG, SIMD16 on XeHPC).  A split send's src0 is the address
        block; otherwise mlen = header + addresses + data decides between SIMD8 and SIMD16."""
        lengths = self.payload.lengths
        header = 1 if self.header else 0
        if lengths.src1 > 0:
            return max(1, (lengths.src0 - header) * self.grf // 8)
        for simd in (8, 16):
            if header + (self._pitch(simd, 8) + operands * self._pitch(simd, size)) // self.grf == lengths.src0:
                return simd
        raise SimulationError(f"A64 atomic with message length {lengths.src0} fits neither SIMD8 nor SIMD16")

    def _who(self, lanes: Lanes, space: Space):
        return lanes.threads() if space.needs_threads else None

    # --- SIMT -------------------------------------------------------------------------------------

    def untyped(self, space: Space, simd: int, channels: list[int], a64: bool, write: bool, element: int = 4):
        pitch = self._pitch(simd, element)
        payload = self.payload
        width = min(simd, self.inst.exec_size)
        if not write:
            fields = [payload.destination_field(k * pitch, width, element) for k in range(len(channels))]

        def run():
            lanes = self._lanes(simd)
            if lanes.count == 0:
                return
            address = self._addresses(lanes, simd, a64)
            who = self._who(lanes, space)
            if write:
                start = self._data_start(simd, a64)
                for k, c in enumerate(channels):
                    data = lanes.select(payload.source_field(start + k * pitch, width, element))
                    space.write(who, address + c * element, data)
            else:
                for field, c in zip(fields, channels, strict=True):
                    lanes.place(field, space.read(who, address + c * element, element))

        return run

    def scattered(self, space: Space, simd: int, size: int, write: bool, a64: bool = False):
        """Byte scattered: `size` bytes per lane in the low bytes of a dword slot."""
        payload = self.payload
        width = min(simd, self.inst.exec_size)
        field = None if write else payload.destination_field(0, width, 4)

        def run():
            lanes = self._lanes(simd)
            if lanes.count == 0:
                return
            address = self._addresses(lanes, simd, a64)
            who = self._who(lanes, space)
            if field is None:  # a write
                data = lanes.select(payload.source_field(self._data_start(simd, a64), width, 4))
                space.write(who, address, data.astype(UNSIGNED[size]))
            else:
                lanes.place(field, as_unsigned(space.read(who, address, size), 4))

        return run

    # --- blocks ---------------------------------------------------------------------------------

    def _block_geometry(self, size_code: int) -> tuple[int, int]:
        """(bytes, byte offset in the first register) of an oword block."""
        owords = OWORD_BLOCKS.get(size_code)
        if owords is None:
            raise SimulationError(f"invalid oword block size code {size_code}")
        at = 16 if size_code == 1 else 0
        return owords * 16, at

    def oword_block_read(self, space: Space, size_code: int, unaligned: bool):
        total, at = self._block_geometry(size_code)
        payload = self.payload
        unit = 1 if unaligned else 16

        def run():
            t, _ = active(self.mask_of_thread(), self.threads, 1)
            if t.size == 0:
                return
            offset = gather(payload.source(), t, np.full_like(t, 8), 4).astype(np.int64) * unit
            rows = payload.destination(max(1, -(-(total + at) // self.grf)))
            n = total // 4
            all_t = np.repeat(t, n)
            within = np.tile(np.arange(n) * 4, t.size)
            scatter(rows, all_t, at + within, space.read(all_t, np.repeat(offset, n) + within, 4))

        return run

    def oword_block_write(self, space: Space, size_code: int):
        total, at = self._block_geometry(size_code)
        payload = self.payload

        def run():
            t, _ = active(self.mask_of_thread(), self.threads, 1)
            if t.size == 0:
                return
            source = payload.source()
            offset = gather(source, t, np.full_like(t, 8), 4).astype(np.int64) * 16
            n = total // 4
            all_t = np.repeat(t, n)
            within = np.tile(np.arange(n) * 4, t.size)
            space.write(all_t, np.repeat(offset, n) + within, gather(source, all_t, self.grf + at + within, 4))

        return run

    def a64_block(self, space: Space, control: int, write: bool):
        subtype = (control >> 3) & 3
        size_code = control & 7
        if subtype == 3:  # hwords (32 bytes)
            total = {0: 32, 1: 32, 2: 64, 3: 128, 4: 256}.get(size_code)
            at = 0
            if total is None:
                raise SimulationError("invalid A64 hword block size")
        else:
            total, at = self._block_geometry(size_code)
        payload = self.payload

        def run():
            t, _ = active(self.mask_of_thread(), self.threads, 1)
            if t.size == 0:
                return
            source = payload.source()
            address = gather(source, t, np.zeros_like(t), 8).astype(np.int64)
            n = total // 4
            all_t = np.repeat(t, n)
            within = np.tile(np.arange(n) * 4, t.size)
            if write:
                space.write(all_t, np.repeat(address, n) + within, gather(source, all_t, self.grf + at + within, 4))
            else:
                rows = payload.destination(max(1, -(-(total + at) // self.grf)))
                scatter(rows, all_t, at + within, space.read(all_t, np.repeat(address, n) + within, 4))

        return run

    def scratch_block(self, write: bool, dword_mode: bool, registers: int | None, offset: int):
        """Scratch block read/write (dc0, desc[18]): `registers` GRFs at `offset` x 32 bytes
        into the thread's scratch space, which the header's DW5 names (r0.5 as the thread
        got it: XeLP a General-State-relative pointer in bits 31:10, XeHPG the scratch
        surface).  Reads fill whole registers; a DWord-mode write (desc[16]) writes dword i of
        each register only where channel i is enabled, an OWord-mode write all of them."""
        if registers is None:
            raise SimulationError("scratch block message with block size code 2 (reserved)")
        scratch = self.m.scratch
        if scratch is None:
            raise SimulationError("scratch block message in a kernel without scratch space")
        payload, grf = self.payload, self.grf
        dwords = grf // 4
        start = offset * 32
        if start + registers * grf > scratch.per_thread:
            raise MemoryFault(
                f"scratch block at bytes {start}..{start + registers * grf - 1} is outside the "
                f"thread's {scratch.per_thread} bytes of scratch space"
            )

        def run():
            mask = self.mask_of()
            t = np.arange(self.threads) if mask is None else np.nonzero(mask.any(axis=1))[0]
            if t.size == 0:
                return
            pointer = gather(payload.source(), t, np.full_like(t, 4 * SCRATCH_HEADER_DWORD), 4).astype(np.int64)
            if scratch.surface_state is None:
                base = self.m.general_state_base + (pointer & ~0x3FF)
            else:
                if np.any((pointer & ~0x3FF) != (scratch.surface_state << 4)):
                    raise SimulationError(
                        f"scratch block message whose header names surface state "
                        f"0x{int(pointer[0]):x}, not the scratch surface"
                    )
                base = scratch.base + t.astype(np.int64) * scratch.per_thread
            n = registers * dwords
            all_t = np.repeat(t, n)
            within = np.tile(np.arange(n) * 4, t.size)
            address = (np.repeat(base, n) + start + within).astype(np.uint64)
            if write:
                data = gather(payload.src1_rows(), all_t, within, 4)
                if dword_mode and mask is not None:
                    lanes = np.tile(np.arange(n) % dwords, t.size)
                    keep = np.zeros(all_t.size, dtype=bool)
                    inside = lanes < mask.shape[1]
                    keep[inside] = mask[all_t[inside], lanes[inside]]
                    all_t, address, data = all_t[keep], address[keep], data[keep]
                self.m.memory.write(address, data)
            else:
                scatter(payload.destination(registers), all_t, within, self.m.memory.read(address, 4))

        return run

    def mask_of_thread(self):
        """Block messages act once per thread: on its first (usually only) channel."""
        mask = self.mask_of()
        return None if mask is None else mask[:, :1]

    # --- atomics --------------------------------------------------------------------------------

    def atomic(self, space: Space, simd: int, op: str, a64: bool, size: int, returns: bool):
        pitch = self._pitch(simd, size)
        count = atomics.OPERAND_COUNT[op]
        payload = self.payload
        width = min(simd, self.inst.exec_size)
        result = payload.destination_field(0, width, size) if returns else None

        def run():
            lanes = self._lanes(simd)
            if lanes.count == 0:
                return
            address = self._addresses(lanes, simd, a64)
            start = self._data_start(simd, a64)
            operands = [lanes.select(payload.source_field(start + j * pitch, width, size)) for j in range(count)]

            def update(old, which):
                return atomics.new_value(op, old, [o[which] for o in operands], size)

            old = space.atomic(
                self._who(lanes, space), address, size, update, atomics.increments(op, operands, address.size, size)
            )
            if result is not None:
                lanes.place(result, old)

        return run
