"""LSC messages (sfid ugm, ugml, slm): loads, stores, transposed block loads, atomics, fences.

Descriptor (see docs/messages.md): [5:0] opcode, [8:7] address size, [11:9] data size, [14:12]
vector size (the component mask of quad ops), [15] transpose, [30:29] address type;
exDesc[31:24] is the binding table index of BTI messages.

SIMT data is component-major: component k of lane i sits at register byte k*R + i*S, where
S is the slot size (4 bytes, 8 for d64) and R = the bytes of one component for the whole
message, rounded up to whole GRFs — computed from the exec size, never from rlen (IGC pads
some SIMD8 rlen values).  Transposed messages move `vector` consecutive elements between
memory and consecutive register bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ...emit.instruction import Instruction
from ..errors import SimulationError
from ..memory import UNSIGNED
from . import atomics
from .block2d import LOAD_BLOCK2D, STORE_BLOCK2D, compile_block2d
from .payload import Lanes, Payload, active, as_unsigned, gather, message, scatter
from .spaces import FlatSpace, ScratchSpace, SlmSpace, Space, SurfaceSpace

if TYPE_CHECKING:
    from ..machine import Machine

FENCE = 0x1F  # LSC opcode
VECTOR_SIZES = (1, 2, 3, 4, 8, 16, 32, 64)
# data size code -> (bytes in memory, slot bytes in registers, upper half of the slot)
DATA_SIZES = {
    0: (1, 4, False),
    1: (2, 4, False),
    2: (4, 4, False),
    3: (8, 8, False),
    4: (1, 4, False),
    5: (2, 4, False),
    6: (2, 4, True),
}
DATA_NAMES = {0: "d8", 1: "d16", 2: "d32", 3: "d64", 4: "d8u32", 5: "d16u32", 6: "d16u32h"}
ADDRESS_BYTES = {1: 2, 2: 4, 3: 8}


@dataclass(frozen=True)
class LscDescriptor:
    opcode: int
    address_size: int  # bytes per address: 2, 4 or 8
    data_code: int
    vector_code: int
    transpose: bool
    address_type: int  # 0 flat, 1 bss, 2 ss, 3 bti
    bti: int

    @staticmethod
    def decode(desc: int, exdesc: int) -> LscDescriptor:
        size = ADDRESS_BYTES.get((desc >> 7) & 3)
        if size is None:
            raise SimulationError(f"LSC descriptor 0x{desc:08x}: invalid address size")
        return LscDescriptor(
            desc & 0x3F,
            size,
            (desc >> 9) & 7,
            (desc >> 12) & 7,
            bool(desc >> 15 & 1),
            (desc >> 29) & 3,
            (exdesc >> 24) & 0xFF,
        )

    @property
    def memory_bytes(self) -> int:
        return DATA_SIZES[self.data_code][0]

    @property
    def vector(self) -> int:
        return VECTOR_SIZES[self.vector_code]


def space_for(inst: Instruction, d: LscDescriptor, m: Machine) -> Space:
    sfid = message(inst).sfid
    if sfid == "slm":
        return SlmSpace(m.slm, m.group_of_thread)
    if sfid not in ("ugm", "ugml"):
        raise SimulationError(f"LSC messages to '{sfid}' are not simulated")
    if d.address_type == 0:
        return FlatSpace(m.memory)
    if d.address_type == 3:
        if d.bti == 0xFF:  # stateless A32: relative to General State Base
            return FlatSpace(m.memory, m.general_state_base)
        return SurfaceSpace(m.memory, m.surface(d.bti))
    return _scratch_space(inst, m)


def _scratch_space(inst: Instruction, m: Machine) -> ScratchSpace:
    """Surface-state (SS/BSS) messages: the only surface state the runtime sets up for a
    kernel of ours is its scratch surface (r0.5 on XeHPG/XeHPC).  Each sending thread's
    extended descriptor (a0.N) must name it."""
    scratch = m.scratch
    if scratch is None or scratch.surface_state is None:
        raise SimulationError(
            "surface-state (SS/BSS) addressing without a scratch space: bindless surfaces are not simulated"
        )
    register = message(inst).exdesc_a0
    if register is None:
        raise SimulationError(
            "surface-state message with an immediate extended descriptor: only scratch "
            "messages (surface state offset in a0, ExBSO) are simulated"
        )
    expected = scratch.surface_state & ~0x3F

    def check(threads: np.ndarray) -> None:
        named = m.files.a0.view(np.uint32)[threads, register] & ~np.uint32(0x3F)
        if np.any(named != expected):
            bad = int(named[np.argmax(named != expected)])
            raise SimulationError(
                f"surface-state offset 0x{bad:x} in a0.{register} is not the scratch surface "
                f"(0x{expected:x}); bindless surfaces are not simulated"
            )

    return ScratchSpace(m.memory, scratch, check)


def compile_lsc(inst: Instruction, m: Machine, mask_of) -> Callable[[], None]:
    msg = message(inst)
    if msg.desc & 0x3F == FENCE:  # completes at once; a fence has no address size
        return lambda: None
    if msg.desc & 0x3F in (LOAD_BLOCK2D, STORE_BLOCK2D):  # their descriptors have no address size
        if msg.sfid != "ugm":
            raise SimulationError(f"2D block messages to '{msg.sfid}' (ugm only)")
        return compile_block2d(inst, m, mask_of)
    d = LscDescriptor.decode(msg.desc, msg.exdesc)
    payload = Payload(inst, m.files)
    space = space_for(inst, d, m)
    if d.opcode in atomics.LSC_ATOMICS:
        return _atomic(inst, d, m, payload, space, mask_of)
    if d.opcode in (0, 1, 2):
        if payload.lengths.dst == 0:
            return lambda: None  # prefetch
        transposed = d.transpose and d.opcode != 2  # bit 15 is a component enable of quad ops
        return (_load_transposed if transposed else _load)(inst, d, m, payload, space, mask_of)
    if d.opcode in (4, 5, 6):
        transposed = d.transpose and d.opcode != 6
        return (_store_transposed if transposed else _store)(inst, d, m, payload, space, mask_of)
    raise SimulationError(f"LSC opcode 0x{d.opcode:02x} is not simulated")


def _components(d: LscDescriptor) -> list[int]:
    """Memory component indices, in register order."""
    if d.opcode in (2, 6):  # quad: [15:12] is a component mask X..W
        mask = d.vector_code | (int(d.transpose) << 3)
        return [c for c in range(4) if mask >> c & 1]
    return list(range(d.vector))


def _slot(d: LscDescriptor, m: Machine, exec_size: int) -> tuple[int, int, bool]:
    """(slot bytes S, component pitch R, upper-half) of SIMT data."""
    size, slot, high = DATA_SIZES[d.data_code]
    grf = m.files.grf_bytes
    pitch = grf * max(1, -(-exec_size * slot // grf))
    return slot, pitch, high


def _simt_addresses(d: LscDescriptor, payload: Payload, lanes: Lanes, exec_size: int) -> np.ndarray:
    """The enabled lanes' addresses (int64)."""
    if d.opcode in (1, 5):  # strided: one base address and a pitch (in DW2) for all lanes
        base = payload.source_field(0, 1, d.address_size).astype(np.int64)
        pitch = payload.source_field(8, 1, 4).astype(np.int64)
        return lanes.select(base + np.arange(exec_size)[None, :] * pitch)
    return lanes.select(payload.source_field(0, exec_size, d.address_size)).astype(np.int64)


def _thread_addresses(d: LscDescriptor, payload: Payload, t: np.ndarray) -> np.ndarray:
    """Transposed messages: one address (the first dword/qword of src0) per thread."""
    return payload.source_field(0, 1, d.address_size)[t, 0].astype(np.int64)


def _load(inst, d: LscDescriptor, m: Machine, payload: Payload, space: Space, mask_of):
    size, _, _ = DATA_SIZES[d.data_code]
    slot, pitch, high = _slot(d, m, inst.exec_size)
    components = _components(d)
    threads, exec_size = m.files.threads, inst.exec_size
    shift = np.uint32(8 * (slot - size)) if high else None
    fields = [payload.destination_field(k * pitch, exec_size, slot) for k in range(len(components))]

    def run():
        lanes = Lanes(mask_of(), threads, exec_size)
        if lanes.count == 0:
            return
        address = _simt_addresses(d, payload, lanes, exec_size)
        who = lanes.threads() if space.needs_threads else None
        for field, c in zip(fields, components, strict=True):
            data = space.read(who, address + c * size, size)
            if slot > size:  # zero-extended into a dword slot (the high half for d16u32h)
                data = as_unsigned(data, slot)
                if shift is not None:
                    data <<= shift
            lanes.place(field, data)

    return run


def _store(inst, d: LscDescriptor, m: Machine, payload: Payload, space: Space, mask_of):
    size, _, _ = DATA_SIZES[d.data_code]
    slot, pitch, high = _slot(d, m, inst.exec_size)
    components = _components(d)
    threads, exec_size = m.files.threads, inst.exec_size
    shift = np.uint32(8 * (slot - size)) if high else np.uint32(0)
    data_start = payload.lengths.src0 * m.files.grf_bytes  # the data is src1

    def run():
        lanes = Lanes(mask_of(), threads, exec_size)
        if lanes.count == 0:
            return
        address = _simt_addresses(d, payload, lanes, exec_size)
        who = lanes.threads() if space.needs_threads else None
        for k, c in enumerate(components):
            values = lanes.select(payload.source_field(data_start + k * pitch, exec_size, slot))
            if slot > size:
                values = (values >> shift).astype(UNSIGNED[size])
            space.write(who, address + c * size, values)

    return run


def _load_transposed(inst, d: LscDescriptor, m: Machine, payload: Payload, space: Space, mask_of):
    size = d.memory_bytes
    total = d.vector * size
    threads = m.files.threads
    offsets = np.arange(d.vector) * size
    payload.destination_field(0, d.vector, size)  # validates the register range

    def run():
        t, _ = active(mask_of(), threads, 1)
        if t.size == 0:
            return
        base = _thread_addresses(d, payload, t)
        # Only the loaded bytes change: IGC keeps live data in the rest of the register (its
        # pvc code for __local atomics loads one dword into r4.0 and later reads r4.5:q).
        rows = payload.destination(-(-total // m.files.grf_bytes))
        # one access per element keeps the bounds checks per element, as the hardware's
        all_t = np.repeat(t, d.vector)
        within = np.tile(offsets, t.size)
        scatter(rows, all_t, within, space.read(all_t, np.repeat(base, d.vector) + within, size))

    return run


def _store_transposed(inst, d: LscDescriptor, m: Machine, payload: Payload, space: Space, mask_of):
    size = d.memory_bytes
    threads = m.files.threads
    offsets = np.arange(d.vector) * size

    def run():
        t, _ = active(mask_of(), threads, 1)
        if t.size == 0:
            return
        base = _thread_addresses(d, payload, t)
        all_t = np.repeat(t, d.vector)
        within = np.tile(offsets, t.size)
        space.write(all_t, np.repeat(base, d.vector) + within, gather(payload.src1_rows(), all_t, within, size))

    return run


def _atomic(inst, d: LscDescriptor, m: Machine, payload: Payload, space: Space, mask_of):
    op = atomics.LSC_ATOMICS[d.opcode]
    size, slot, high = DATA_SIZES[d.data_code]
    if d.data_code not in (2, 3, 5):
        raise SimulationError(f"LSC atomic on {DATA_NAMES[d.data_code]} data is not simulated")
    _, pitch, _ = _slot(d, m, inst.exec_size)
    count = atomics.OPERAND_COUNT[op]
    threads, exec_size = m.files.threads, inst.exec_size
    data_start = payload.lengths.src0 * m.files.grf_bytes
    result = payload.destination_field(0, exec_size, slot) if payload.lengths.dst > 0 else None

    def run():
        lanes = Lanes(mask_of(), threads, exec_size)
        if lanes.count == 0:
            return
        address = _simt_addresses(d, payload, lanes, exec_size)
        operands = [
            lanes.select(payload.source_field(data_start + j * pitch, exec_size, slot)).astype(UNSIGNED[size])
            for j in range(count)
        ]

        def update(old: np.ndarray, which: np.ndarray) -> np.ndarray:
            return atomics.new_value(op, old, [o[which] for o in operands], size)

        old = space.atomic(
            lanes.threads() if space.needs_threads else None,
            address,
            size,
            update,
            atomics.increments(op, operands, address.size, size),
        )
        if result is not None:
            lanes.place(result, as_unsigned(old, slot))

    return run
