"""Send messages on device memory: LSC (XeHPG, XeHPC) and legacy HDC (XeLP) loads, stores,
block and transposed accesses, atomics, SLM, surfaces with bounds checks, and faults.
Descriptors are built here from the field layout in docs/messages.md; expected memory and
register contents are computed with numpy."""

from __future__ import annotations

import numpy as np
import pytest

from xegen.sim import MemoryFault
from xegen.sim.memory import DeviceMemory, Surface

from .harness import execute

THREADS = 4


def lsc_desc(
    op: int,
    *,
    data: int = 2,
    vector: int = 0,
    transpose: bool = False,
    address: int = 3,
    address_type: int = 0,
    mlen: int,
    rlen: int,
) -> int:
    return (
        op
        | address << 7
        | data << 9
        | vector << 12
        | int(transpose) << 15
        | rlen << 20
        | mlen << 25
        | address_type << 29
    )


def hdc_desc(kind: int, control: int, bti: int, *, mlen: int, rlen: int, header: bool = False) -> int:
    return bti | control << 8 | kind << 14 | int(header) << 19 | rlen << 20 | mlen << 25


def mapped(memory: DeviceMemory, array: np.ndarray) -> int:
    return memory.map("test buffer", array.reshape(-1).view(np.uint8))


# --- LSC ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("hw, lanes", [("dg2", 16), ("pvc", 16), ("pvc", 32)])
def test_lsc_a64_gather_and_scatter(hw, lanes):
    memory = DeviceMemory()
    source = np.arange(1000, dtype=np.int32) * 7
    target = np.zeros(1000, dtype=np.int32)
    src, dst = mapped(memory, source), mapped(memory, target)
    rng = np.random.default_rng(1)
    index = rng.permutation(1000)[: THREADS * lanes].reshape(THREADS, lanes)
    grf = 64 if hw == "pvc" else 32
    address_grfs = lanes * 8 // grf
    data_grfs = max(1, lanes * 4 // grf)
    load = lsc_desc(0, mlen=address_grfs, rlen=data_grfs)
    store = lsc_desc(4, mlen=address_grfs, rlen=0)
    run = execute(
        f"""
        send.ugm ({lanes}|M0) r40 r10 null:0 0x0 0x{load:08X} {{$1}}
        send.ugm ({lanes}|M0) null r20 r40:{data_grfs} 0x0 0x{store:08X} {{$1.dst,$2}}
        sync.allwr null
    """,
        hw,
        inputs={10: (src + 4 * index).astype(np.uint64), 20: (dst + 4 * index).astype(np.uint64)},
        memory=memory,
        simd=lanes,
    )
    np.testing.assert_array_equal(run.read(40, np.int32, lanes), source[index])
    expected = np.zeros_like(target)
    expected[index] = source[index]
    np.testing.assert_array_equal(target, expected)


def test_lsc_vector_load_is_component_major_and_masked_lanes_keep_their_registers():
    memory = DeviceMemory()
    table = np.arange(400, dtype=np.uint32)
    base = mapped(memory, table)
    rows = np.random.default_rng(2).integers(0, 99, size=(THREADS, 16))
    live = np.ones((THREADS, 16), dtype=bool)
    live[1, 5:] = False
    desc = lsc_desc(0, vector=3, mlen=4, rlen=8)  # d32x4, 4 components x 2 GRFs
    run = execute(
        f"send.ugm (16|M0) r40 r10 null:0 0x0 0x{desc:08X} {{$1}}\nsync.allwr null",
        "dg2",
        inputs={10: (base + 16 * rows).astype(np.uint64), 40: np.full(64, 0xDEAD, np.uint32)},
        memory=memory,
        live=live,
    )
    for k in range(4):
        got = run.read(40 + 2 * k, np.uint32, 16)
        expected = np.where(live, table[4 * rows + k], 0xDEAD)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("hw", ["dg2", "pvc"])
def test_lsc_transposed_block_load_and_store(hw):
    memory = DeviceMemory()
    data = np.arange(4 * 64, dtype=np.float32)
    out = np.zeros(4 * 64, dtype=np.float32)
    src, dst = mapped(memory, data), mapped(memory, out)
    grf = 64 if hw == "pvc" else 32
    vector = 6 if hw == "pvc" else 5  # d32x32t (pvc: 2 GRFs) / d32x16t (dg2: 2 GRFs)
    count = 32 if hw == "pvc" else 16
    load = lsc_desc(0, vector=vector, transpose=True, mlen=1, rlen=count * 4 // grf)
    store = lsc_desc(4, vector=vector, transpose=True, mlen=1, rlen=0)
    offsets = np.arange(THREADS, dtype=np.uint64) * (count * 4)
    run = execute(
        f"""
        (W) send.ugm (1|M0) r40 r10 null:0 0x0 0x{load:08X} {{$1}}
        (W) send.ugm (1|M0) null r12 r40:{count * 4 // grf} 0x0 0x{store:08X} {{$1.dst,$2}}
        sync.allwr null
    """,
        hw,
        inputs={10: (src + offsets)[:, None], 12: (dst + offsets)[:, None]},
        memory=memory,
    )
    for t in range(THREADS):
        np.testing.assert_array_equal(run.read(40, np.float32, count)[t], data[t * count : (t + 1) * count])
    np.testing.assert_array_equal(out[: THREADS * count], data[: THREADS * count])


@pytest.mark.parametrize("hw", ["dg2", "pvc"])
def test_lsc_transposed_load_keeps_the_rest_of_its_last_register(hw):
    # d32x3t fills 12 bytes; the register's other bytes keep their values (IGC relies on it:
    # tests/sim/kernels/local_atomics.cl on pvc loads one dword into r4.0, then reads r4.5:q)
    memory = DeviceMemory()
    data = np.arange(64, dtype=np.uint32) + 100
    src = mapped(memory, data)
    grf = 64 if hw == "pvc" else 32
    load = lsc_desc(0, vector=2, transpose=True, mlen=1, rlen=1)
    offsets = np.arange(THREADS, dtype=np.uint64) * 12
    run = execute(
        f"(W) send.ugm (1|M0) r40 r10 null:0 0x0 0x{load:08X} {{$1}}\nsync.allwr null",
        hw,
        inputs={10: (src + offsets)[:, None], 40: np.full(grf // 4, 7, np.uint32)},
        memory=memory,
    )
    words = run.read(40, np.uint32, grf // 4)
    for t in range(THREADS):
        assert words[t, :3].tolist() == data[3 * t : 3 * t + 3].tolist()
    assert (words[:, 3:] == 7).all()


def test_lsc_d16u32_loads_zero_extend_into_dwords():
    memory = DeviceMemory()
    halves = np.arange(0x8000, 0x8000 + 256, dtype=np.uint16)
    base = mapped(memory, halves)
    index = np.random.default_rng(3).integers(0, 256, size=(THREADS, 16))
    desc = lsc_desc(0, data=5, mlen=4, rlen=2)
    run = execute(
        f"send.ugm (16|M0) r40 r10 null:0 0x0 0x{desc:08X} {{$1}}\nsync.allwr null",
        "dg2",
        inputs={10: (base + 2 * index).astype(np.uint64)},
        memory=memory,
    )
    np.testing.assert_array_equal(run.read(40, np.uint32, 16), halves[index].astype(np.uint32))


@pytest.mark.parametrize("hw", ["dg2", "pvc"])
def test_lsc_atomics_serialize_lanes_and_return_old_values(hw):
    memory = DeviceMemory()
    counters = np.zeros(4, dtype=np.uint32)
    base = mapped(memory, counters)
    grf = 64 if hw == "pvc" else 32
    address_grfs = 16 * 8 // grf
    data_grfs = max(1, 16 * 4 // grf)
    add = lsc_desc(0x0C, mlen=address_grfs, rlen=data_grfs)
    inc = lsc_desc(0x08, mlen=address_grfs, rlen=data_grfs)
    cas = lsc_desc(0x12, mlen=address_grfs, rlen=data_grfs)
    slot = np.tile(np.arange(16) % 2, (THREADS, 1))  # lanes alternate between counters 0 and 1
    amounts = np.arange(THREADS * 16, dtype=np.uint32).reshape(THREADS, 16) + 1
    compare = np.zeros((THREADS, 16), np.uint32)
    swap = np.full((THREADS, 16), 77, np.uint32)
    run = execute(
        f"""
        send.ugm (16|M0) r40 r10 r30:{data_grfs} 0x0 0x{add:08X} {{$1}}
        send.ugm (16|M0) r50 r14 null:0 0x0 0x{inc:08X} {{$2}}
        send.ugm (16|M0) r60 r18 r34:{2 * data_grfs} 0x0 0x{cas:08X} {{$3}}
        sync.allwr null
    """,
        hw,
        inputs={
            10: (base + 4 * slot).astype(np.uint64),
            14: np.full(16, base + 8, np.uint64),
            18: np.full(16, base + 12, np.uint64),
            30: amounts,
            34: np.concatenate([compare, swap], axis=1),
        },  # compare values, then the new ones
        memory=memory,
    )
    # lanes are serialized thread by thread, lane by lane
    order = amounts.reshape(-1)
    for counter in (0, 1):
        lanes = order[slot.reshape(-1) == counter]
        olds = np.concatenate([[0], np.cumsum(lanes)[:-1]]).astype(np.uint32)
        assert counters[counter] == lanes.sum()
        np.testing.assert_array_equal(run.read(40, np.uint32, 16).reshape(-1)[slot.reshape(-1) == counter], olds)
    np.testing.assert_array_equal(run.read(50, np.uint32, 16).reshape(-1), np.arange(THREADS * 16))
    assert counters[2] == THREADS * 16
    old_cas = run.read(60, np.uint32, 16).reshape(-1)
    assert old_cas[0] == 0 and (old_cas[1:] == 77).all() and counters[3] == 77


def test_lsc_bti_surface_reads_zero_out_of_bounds():
    memory = DeviceMemory()
    data = np.arange(10, dtype=np.int32) + 1
    surface = Surface(mapped(memory, data), data.nbytes)
    offsets = (np.arange(16, dtype=np.uint32) * 4)[None, :].repeat(THREADS, 0)
    desc = lsc_desc(0, address=2, address_type=3, mlen=2, rlen=2)
    run = execute(
        f"send.ugm (16|M0) r40 r10 null:0 0x3000000 0x{desc:08X} {{$1}}\nsync.allwr null",
        "dg2",
        inputs={10: offsets},
        memory=memory,
        surfaces={3: surface},
    )
    np.testing.assert_array_equal(run.read(40, np.int32, 16)[0], np.concatenate([data, np.zeros(6, np.int32)]))


def test_slm_store_load_through_lsc():
    offsets = (np.arange(16, dtype=np.uint32) * 4)[None, :] + (np.arange(THREADS, dtype=np.uint32) * 64)[:, None]
    values = np.random.default_rng(4).integers(0, 1000, size=(THREADS, 16)).astype(np.int32)
    reversed_offsets = offsets[::-1].copy()
    store = lsc_desc(4, address=2, mlen=2, rlen=0)
    load = lsc_desc(0, address=2, mlen=2, rlen=2)
    run = execute(
        f"""
        send.slm (16|M0) null r10 r20:2 0x0 0x{store:08X} {{$1}}
        send.slm (16|M0) r40 r12 null:0 0x0 0x{load:08X} {{$2}}
        sync.allwr null
    """,
        "dg2",
        inputs={10: offsets, 12: reversed_offsets, 20: values},
        slm_bytes=64 * THREADS,
    )
    np.testing.assert_array_equal(run.read(40, np.int32, 16), values[::-1])


def test_flat_access_outside_every_buffer_faults():
    # past the buffer's last 4 KiB page (the rest of that page is mapped, as NEO allocates pages)
    memory = DeviceMemory()
    data = np.zeros(16, dtype=np.int32)
    base = mapped(memory, data)
    desc = lsc_desc(0, mlen=4, rlen=2)
    with pytest.raises(MemoryFault, match="outside every buffer"):
        execute(
            f"send.ugm (16|M0) r40 r10 null:0 0x0 0x{desc:08X} {{$1}}\nsync.allwr null",
            "dg2",
            inputs={10: np.full(16, base + 4096, np.uint64)},
            memory=memory,
        )


# --- HDC (XeLP) ------------------------------------------------------------------------------------------


def test_hdc_untyped_surface_read_write_channels():
    memory = DeviceMemory()
    data = np.arange(3 * 64, dtype=np.float32)
    out = np.zeros(3 * 64, dtype=np.float32)
    surfaces = {0: Surface(mapped(memory, data), data.nbytes), 1: Surface(mapped(memory, out), out.nbytes)}
    element = np.random.default_rng(5).permutation(64)[: THREADS * 16].reshape(THREADS, 16)
    offsets = (element * 12).astype(np.uint32)  # xyz structs of three floats
    read_xyz = hdc_desc(0x01, 0x18, 0, mlen=2, rlen=6)  # SIMD16, channels X Y Z (disable W)
    write_xz = hdc_desc(0x09, 0x1A, 1, mlen=2, rlen=0)  # SIMD16, channels X Z
    run = execute(
        f"""
        send.dc1 (16|M0) r40 r10 null 0x0 0x{read_xyz:08X} {{$1}}
        send.dc1 (16|M0) null r10 r40 0x100 0x{write_xz:08X} {{$1.dst,$2}}
        sync.allwr null
    """,
        "tgllp",
        inputs={10: offsets},
        memory=memory,
        surfaces=surfaces,
    )
    for c in range(3):
        np.testing.assert_array_equal(run.read(40 + 2 * c, np.float32, 16), data[3 * element + c])
    expected = np.zeros_like(out)
    expected[3 * element] = data[3 * element]  # X from r40-41
    expected[3 * element + 2] = data[3 * element + 1]  # Z from the next two GRFs (r42-43: Y's data)
    np.testing.assert_array_equal(out, expected)


def test_hdc_byte_scattered_and_out_of_bounds():
    memory = DeviceMemory()
    data = np.arange(40, dtype=np.uint8) + 100
    out = np.zeros(40, dtype=np.uint8)
    surfaces = {0: Surface(mapped(memory, data), 40), 1: Surface(mapped(memory, out), 40)}
    offsets = np.array([[0, 1, 2, 3, 38, 39, 40, 1000]] * THREADS, dtype=np.uint32)
    read_2 = hdc_desc(0x04, 0x04, 0, mlen=1, rlen=1)  # SIMD8, 2 bytes per lane
    write_1 = hdc_desc(0x0C, 0x00, 1, mlen=1, rlen=0)  # SIMD8, 1 byte per lane
    run = execute(
        f"""
        send.dc0 (8|M0) r40 r10 null 0x0 0x{read_2:08X} {{$1}}
        send.dc0 (8|M0) null r10 r40 0x40 0x{write_1:08X} {{$1.dst,$2}}
        sync.allwr null
    """,
        "tgllp",
        inputs={10: offsets},
        memory=memory,
        surfaces=surfaces,
        simd=8,
    )
    got = run.read(40, np.uint32, 8)[0]
    padded = np.concatenate([data, np.zeros(2000, np.uint8)]).astype(np.uint32)
    inside = offsets[0] + 2 <= 40
    expected = np.where(inside, padded[offsets[0]] | padded[offsets[0] + 1] << 8, 0)
    np.testing.assert_array_equal(got, expected)
    written = np.zeros(40, np.uint8)
    for o, value in zip(offsets[0], expected, strict=True):
        if o < 40:
            written[o] = value & 0xFF
    np.testing.assert_array_equal(out, written)


def test_hdc_oword_block_reads_relative_to_general_state():
    memory = DeviceMemory()
    heap = np.arange(512, dtype=np.uint8)
    base = mapped(memory, heap)
    header = np.zeros((THREADS, 8), np.uint32)
    header[:, 2] = np.arange(THREADS) * 64 + 4  # byte offset (unaligned read)
    aligned = np.zeros((THREADS, 8), np.uint32)
    aligned[:, 2] = np.arange(THREADS) * 2  # offset in owords
    unaligned = hdc_desc(0x01, 0x03, 0xFD, mlen=1, rlen=2, header=True)  # 4 owords
    oword = hdc_desc(0x00, 0x02, 0xFD, mlen=1, rlen=1, header=True)  # 2 owords
    run = execute(
        f"""
        (W) send.dc0 (8|M0) r40 r10 null 0x0 0x{unaligned:08X} {{$1}}
        (W) send.dc0 (8|M0) r50 r11 null 0x0 0x{oword:08X} {{$2}}
        sync.allwr null
    """,
        "tgllp",
        inputs={10: header, 11: aligned},
        memory=memory,
        general_state_base=base,
    )
    for t in range(THREADS):
        np.testing.assert_array_equal(run.read(40, np.uint8, 64)[t], heap[t * 64 + 4 : t * 64 + 68])
        np.testing.assert_array_equal(run.read(50, np.uint8, 32)[t], heap[t * 32 : t * 32 + 32])


def test_hdc_a64_scattered_and_atomics():
    memory = DeviceMemory()
    data = np.arange(200, dtype=np.int32) * -3
    counters = np.zeros(2, dtype=np.int32)
    slots = np.zeros(THREADS * 8, dtype=np.int32)
    d, c, s = mapped(memory, data), mapped(memory, counters), mapped(memory, slots)
    index = np.random.default_rng(6).permutation(200)[: THREADS * 16].reshape(THREADS, 16)
    gather = hdc_desc(0x10, 0x11, 0xFF, mlen=4, rlen=2)  # A64 dword scattered read, SIMD16
    add = hdc_desc(0x12, 0x27, 0xFF, mlen=2, rlen=1)  # A64 atomic add with return, SIMD8
    cmpxchg = hdc_desc(0x12, 0x2E, 0xFF, mlen=2, rlen=1)  # A64 cmpxchg with return, SIMD8
    thread_slot = (s + 4 * (np.arange(THREADS)[:, None] * 8 + np.arange(8)[None, :])).astype(np.uint64)
    run = execute(
        f"""
        send.dc1 (16|M0) r40 r10 null 0x0 0x{gather:08X} {{$1}}
        send.dc1 (8|M0) r50 r20 r30 0x40 0x{add:08X} {{$2}}
        send.dc1 (8|M0) r52 r22 r31 0x80 0x{cmpxchg:08X} {{$3}}
        sync.allwr null
    """,
        "tgllp",
        inputs={
            10: (d + 4 * index).astype(np.uint64),
            20: np.full(8, c, np.uint64),
            22: thread_slot,
            30: np.full(8, 2, np.int32),
            31: np.concatenate([np.zeros(8, np.int32), np.full(8, 9, np.int32)]),
        },
        memory=memory,
    )
    np.testing.assert_array_equal(run.read(40, np.int32, 16), data[index])
    assert counters[0] == 2 * 8 * THREADS
    np.testing.assert_array_equal(np.sort(run.read(50, np.int32, 8).reshape(-1)), np.arange(0, 64, 2))
    np.testing.assert_array_equal(slots, 9)
    np.testing.assert_array_equal(run.read(52, np.int32, 8), 0)


@pytest.mark.parametrize("hw", ["tgllp", "dg2", "pvc"])
def test_hdc_a64_atomics_at_simd1_take_their_data_from_src1(hw):
    """IGC's uniform atomics: `(W) send.dc1 (1|M0) dst rA rB:n 0x040487FF` with a SIMD8 (XeHPC:
    SIMD16) address block of mlen = 2 GRFs, whose second GRF is padding, and the data in src1."""
    memory = DeviceMemory()
    counters = np.array([5, -7, 3, 10], dtype=np.int32)
    base = mapped(memory, counters)
    add = hdc_desc(0x12, 0x27, 0xFF, mlen=2, rlen=1)  # add, returns the old value
    inc = hdc_desc(0x12, 0x05, 0xFF, mlen=2, rlen=0)  # inc: no operand, no src1
    smax = hdc_desc(0x12, 0x0A, 0xFF, mlen=2, rlen=0)
    cmpxchg = hdc_desc(0x12, 0x2E, 0xFF, mlen=2, rlen=1)  # compare value, then the new one

    def src1(register: int, length: int) -> str:
        return f"r{register} 0x{length << 6:X}" if hw == "tgllp" else f"r{register}:{length} 0x0"

    addresses = {20 + 2 * k: np.array([base + 4 * k], np.uint64) for k in range(4)}
    padding = {21 + 2 * k: np.full(8, 1000 + k, np.int32) for k in range(4)}  # what the bug read
    thread = np.arange(THREADS)[:, None]
    run = execute(
        f"""
        (W) send.dc1 (1|M0) r50 r20 {src1(30, 1)} 0x{add:08X} {{$1}}
        (W) send.dc1 (1|M0) null r22 {"null 0x0" if hw == "tgllp" else "null:0 0x0"} 0x{inc:08X} {{$2}}
        (W) send.dc1 (1|M0) null r24 {src1(32, 1)} 0x{smax:08X} {{$3}}
        (W) send.dc1 (1|M0) r52 r26 {src1(34, 2)} 0x{cmpxchg:08X} {{$4}}
        sync.allwr null
    """,
        hw,
        memory=memory,
        inputs={
            **addresses,
            **padding,
            30: np.array([4], np.int32),
            32: (100 * thread - 150).astype(np.int32),
            34: np.array([10], np.int32),
            35: np.array([42], np.int32),
        },
    )
    np.testing.assert_array_equal(counters, [5 + 4 * THREADS, -7 + THREADS, 100 * (THREADS - 1) - 150, 42])
    np.testing.assert_array_equal(np.sort(run.read(50, np.int32, 1).reshape(-1)), 5 + 4 * np.arange(THREADS))
    np.testing.assert_array_equal(np.sort(run.read(52, np.int32, 1).reshape(-1)), [10] + [42] * (THREADS - 1))


def test_atomic_decrements_wrap_and_stay_in_lane_order():
    memory = DeviceMemory()
    counter = np.array([3], dtype=np.uint32)
    base = mapped(memory, counter)
    dec = lsc_desc(0x09, mlen=4, rlen=2)
    sub = lsc_desc(0x0D, mlen=4, rlen=2)
    run = execute(
        f"""
        send.ugm (16|M0) r40 r10 null:0 0x0 0x{dec:08X} {{$1}}
        send.ugm (16|M0) r44 r10 r30:2 0x0 0x{sub:08X} {{$2}}
        sync.allwr null
    """,
        "dg2",
        inputs={10: np.full(16, base, np.uint64), 30: np.full(16, 2, np.uint32)},
        memory=memory,
    )
    n = THREADS * 16
    after_dec = (3 - np.arange(n)) % 2**32
    np.testing.assert_array_equal(run.read(40, np.uint32, 16).reshape(-1), after_dec)
    start = (3 - n) % 2**32
    np.testing.assert_array_equal(run.read(44, np.uint32, 16).reshape(-1), (start - 2 * np.arange(n)) % 2**32)
    assert counter[0] == (3 - n - 2 * n) % 2**32
