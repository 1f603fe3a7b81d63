"""What each message does with addresses it must not touch (docs/sim.md, "Messages"):
masked-off channels never access memory, whatever their address — predicated or outside the
execution mask, SIMT or block messages; enabled accesses out of bounds behave as each kind
does (flat A64: a fault, surfaces: zeros and dropped writes, SLM: the address's bits above
the platform's SLM window are not part of it, 2D blocks: zeros and dropped writes); LSC
store_block2d writes its block.  Message texts are assembled here and encoded as iga64
does (checked once)."""

from __future__ import annotations

import numpy as np
import pytest

from xegen import hw as hwlib
from xegen import oracles
from xegen.emit import assemble
from xegen.sim import MemoryFault
from xegen.sim.memory import DeviceMemory, Surface

from .harness import execute
from .test_messages import hdc_desc, lsc_desc, mapped

THREADS = 2
ODD_LANES = 0xAAAAAAAA  # f0.0: channels 1, 3, 5, ... enabled


def _pointers_past_the_end(base: int, size: int, lanes: int, element: int = 4) -> np.ndarray:
    """Even lanes point at the buffer's elements, odd lanes far past its end (unmapped)."""
    inside = base + element * (np.arange(lanes) % (size // element))
    outside = base + (1 << 30) + 64 * np.arange(lanes)
    return np.where(np.arange(lanes) % 2 == 0, inside, outside).astype(np.uint64)


HDC_A64_GATHER = hdc_desc(0x11, 0x1E, 0xFF, mlen=4, rlen=2)  # untyped A64 read, SIMD16, X only
MASKED_LOADS = [
    # (platform, lanes, send text with {flag} and {desc}, descriptor): A64 dword gathers
    ("tgllp", 16, "({flag}) send.dc1 (16|M0) r40 r10 null 0x0 0x{desc:08X}", HDC_A64_GATHER),
    ("dg2", 16, "({flag}) send.dc1 (16|M0) r40 r10 null:0 0x0 0x{desc:08X}", HDC_A64_GATHER),
    ("dg2", 16, "({flag}) send.ugm (16|M0) r40 r10 null:0 0x0 0x{desc:08X}", lsc_desc(0, mlen=4, rlen=2)),
    ("pvc", 32, "({flag}) send.ugm (32|M0) r40 r10 null:0 0x0 0x{desc:08X}", lsc_desc(0, mlen=4, rlen=2)),
]


@pytest.mark.parametrize("hw, lanes, text, desc", MASKED_LOADS, ids=[f"{c[0]}-{c[2].split()[1]}" for c in MASKED_LOADS])
def test_predicated_off_lanes_never_touch_memory(hw, lanes, text, desc):
    """A SIMT load whose odd lanes point past the end of the only buffer: predicated off (or
    outside the execution mask) they neither fault nor change their registers; enabled, the
    flat access faults."""
    memory = DeviceMemory()
    data = np.arange(64, dtype=np.int32) * 3
    base = mapped(memory, data)
    addresses = _pointers_past_the_end(base, data.nbytes, lanes)
    send = text.format(flag="f0.0", desc=desc)
    sentinel = np.full((THREADS, lanes), -7, np.int32)
    even = np.zeros(32, dtype=bool)
    even[0::2] = True
    run = execute(
        send,
        hw,
        inputs={10: addresses, 40: sentinel},
        memory=memory,
        simd=lanes,
        threads=THREADS,
        flags={0: ODD_LANES ^ 0xFFFFFFFF},
    )
    got = run.read(40, np.int32, lanes)
    np.testing.assert_array_equal(got[:, 0::2], np.tile(data[np.arange(lanes) % data.size][0::2], (THREADS, 1)))
    np.testing.assert_array_equal(got[:, 1::2], -7)
    # the same lanes outside the dispatch mask instead of predicated off
    live = np.tile(even[:lanes], (THREADS, 1))
    execute(
        text.format(flag="f0.0", desc=desc).replace("(f0.0) ", ""),
        hw,
        inputs={10: addresses},
        memory=memory,
        simd=lanes,
        threads=THREADS,
        live=live,
    )
    with pytest.raises(MemoryFault):
        execute(
            text.format(flag="f0.0", desc=desc),
            hw,
            inputs={10: addresses},
            memory=memory,
            simd=lanes,
            threads=THREADS,
            flags={0: ODD_LANES},
        )


def test_predicated_off_block_and_store_messages_never_touch_memory():
    """An A64 oword block read, an untyped A64 write and an LSC transposed store whose address is
    unmapped: with their predicate off in every channel nothing happens."""
    memory = DeviceMemory()
    base = mapped(memory, np.zeros(16, np.int32))
    nowhere = np.uint64(base + (1 << 30))
    block_read = hdc_desc(0x14, 0x03, 0xFF, mlen=1, rlen=1, header=True)  # A64 oword block, two owords
    scatter = hdc_desc(0x19, 0x2E, 0xFF, mlen=2, rlen=0)
    execute(
        f"(f0.0) send.dc1 (8|M0) r40 r10 null 0x0 0x{block_read:08X}\n"
        f"(f0.0) send.dc1 (8|M0) null r10 r20 0x40 0x{scatter:08X}",
        "tgllp",
        inputs={10: np.full(4, nowhere)},
        memory=memory,
        simd=8,
        threads=THREADS,
        flags={0: 0},
    )
    store = lsc_desc(4, vector=3, transpose=True, mlen=1, rlen=0)
    execute(
        f"(f0.0) send.ugm (1|M0) null r10 r20:1 0x0 0x{store:08X}",
        "pvc",
        inputs={10: np.full(8, nowhere)},
        memory=memory,
        simd=16,
        threads=THREADS,
        flags={0: 0},
    )


def test_out_of_bounds_surface_accesses_read_zero_and_drop_writes_per_element():
    """A surface of 10 bytes: a dword at offset 8 is partly outside, so it is out of bounds too."""
    memory = DeviceMemory()
    buffer = np.arange(4, dtype=np.int32) + 100
    surface = Surface(mapped(memory, buffer), 10)
    offsets = np.array([0, 4, 8, 12, 2**32 - 4, 1 << 20, 0, 4], np.uint32)
    read = hdc_desc(0x01, 0x2E, 0x05, mlen=1, rlen=1)  # untyped read, SIMD8, X
    write = hdc_desc(0x09, 0x2E, 0x05, mlen=1, rlen=0)
    run = execute(
        f"send.dc1 (8|M0) r40 r10 null 0x0 0x{read:08X}\nsend.dc1 (8|M0) null r10 r20 0x40 0x{write:08X}",
        "tgllp",
        inputs={10: offsets, 20: np.full(8, -1, np.int32)},
        memory=memory,
        surfaces={5: surface},
        simd=8,
        threads=1,
    )
    np.testing.assert_array_equal(run.read(40, np.int32, 8)[0], [100, 101, 0, 0, 0, 0, 100, 101])
    np.testing.assert_array_equal(buffer, [-1, -1, 102, 103])


@pytest.mark.parametrize("hw", ["dg2", "pvc"])
def test_slm_address_bits_above_the_window_are_ignored(hw):
    """IGC's local-atomics kernels set bit 28 in every SLM address: 0x10000000 + 4k names k."""
    platform = hwlib.platform(hw)
    lanes = 16
    tagged = (0x10000000 + 4 * np.arange(lanes)).astype(np.uint32)
    plain = (4 * np.arange(lanes)).astype(np.uint32)
    mlen = lanes * 4 // platform.grf_bytes
    store, load = lsc_desc(4, address=2, mlen=mlen, rlen=0), lsc_desc(0, address=2, mlen=mlen, rlen=mlen)
    run = execute(
        f"send.slm ({lanes}|M0) null r10 r20:{mlen} 0x0 0x{store:08X}\n"
        f"send.slm ({lanes}|M0) r40 r12 null:0 0x0 0x{load:08X}",
        hw,
        inputs={10: tagged, 12: plain, 20: np.arange(lanes, dtype=np.int32) + 50},
        simd=lanes,
        slm_bytes=4 * lanes,
        threads=1,
    )
    np.testing.assert_array_equal(run.read(40, np.int32, lanes)[0], np.arange(lanes) + 50)
    with pytest.raises(MemoryFault, match="SLM"):  # inside the window but past the group's SLM: a fault
        execute(
            f"send.slm ({lanes}|M0) r40 r12 null:0 0x0 0x{load:08X}",
            hw,
            inputs={12: plain + 4 * lanes},
            simd=lanes,
            slm_bytes=4 * lanes,
            threads=1,
        )


def _block2d_header(
    base: int, width: int, height: int, pitch: int, x: int, y: int, bw: int, bh: int, count: int = 1
) -> np.ndarray:
    header = np.zeros(16, np.uint32)
    header[0:2] = np.array([base], np.uint64).view(np.uint32)
    header[2:8] = [width - 1, height - 1, pitch - 1, x % 2**32, y % 2**32, (bw - 1) | (bh - 1) << 8 | (count - 1) << 16]
    return header


def test_store_block2d_writes_rows_and_drops_what_falls_outside():
    """A 16x4 block of dwords at (X, Y) = (-2, 6) into an 12x8 surface of pitch 64 bytes: the
    register rows are 64 bytes (16 dwords), elements left of column 0 and below row 7 vanish."""
    memory = DeviceMemory()
    surface = np.zeros((8, 16), np.uint32)  # pitch 64 bytes; width 48 bytes = 12 columns
    base = mapped(memory, surface)
    header = _block2d_header(base, 48, 8, 64, -2, 6, 16, 4)
    data = (np.arange(64, dtype=np.uint32) + 1000).reshape(4, 16)
    desc = 7 | 2 << 9 | 1 << 25  # store_block2d d32, mlen 1
    execute(
        f"(W) send.ugm (16|M0) null r10 r20:4 0x0 0x{desc:08X}",
        "pvc",
        inputs={10: header, 20: data.reshape(-1)},
        memory=memory,
        simd=16,
        threads=1,
    )
    expected = np.zeros((8, 16), np.uint32)
    expected[6:8, 0:12] = data[0:2, 2:14]
    np.testing.assert_array_equal(surface, expected)


def test_load_block2d_pads_rows_to_a_power_of_two_and_blocks_to_registers():
    """Two 6-wide blocks of 16-bit data: rows of 12 bytes take 16 in the register; each block of
    3 rows (48 bytes) starts a new 64-byte register.  Padding bytes are zero here."""
    memory = DeviceMemory()
    surface = (np.arange(32 * 8, dtype=np.uint16) + 1).reshape(8, 32)
    base = mapped(memory, surface)
    header = _block2d_header(base, 64, 8, 64, 4, 2, 6, 3, count=2)
    desc = 3 | 1 << 9 | 2 << 20 | 1 << 25  # load_block2d d16, rlen 2
    run = execute(
        f"(W) send.ugm (16|M0) r40 r10 null:0 0x0 0x{desc:08X}",
        "pvc",
        inputs={10: header},
        memory=memory,
        simd=16,
        threads=1,
    )
    got = run.read(40, np.uint16, 64)[0].reshape(2, 4, 8)  # (block, row slot of 16 bytes, 8 halves)
    for block in range(2):
        np.testing.assert_array_equal(got[block, :3, :6], surface[2:5, 4 + 6 * block : 10 + 6 * block])
        assert not got[block, :3, 6:].any() and not got[block, 3].any()


def test_these_message_texts_encode_as_iga64_encodes_them(iga64):
    for hw in ("tgllp", "dg2", "pvc"):
        texts = [c[2].format(flag="f0.0", desc=c[3]) for c in MASKED_LOADS if c[0] == hw]
        if hw == "pvc":
            texts += [
                "(W) send.ugm (16|M0) null r10 r20:4 0x0 0x%08X" % (7 | 2 << 9 | 1 << 25),
                "(W) send.ugm (16|M0) r40 r10 null:0 0x0 0x%08X" % (3 | 1 << 9 | 2 << 20 | 1 << 25),
            ]
        source = "\n".join(texts) + "\n"
        assert assemble(source, hwlib.platform(hw)) == oracles.iga64_assemble(source, hw), hw


def test_flat_accesses_past_a_buffer_reach_the_rest_of_its_page_then_fault():
    """NEO allocates whole 4 KiB pages: the bytes after a 40-byte buffer up to its page's end
    read as zero and keep what is stored there (the array itself is unchanged); the next page
    is not mapped."""
    memory = DeviceMemory()
    data = np.arange(10, dtype=np.int32) + 1
    base = mapped(memory, data)
    desc_load, desc_store = lsc_desc(0, mlen=4, rlen=2), lsc_desc(4, mlen=4, rlen=0)
    addresses = (base + np.array([36, 40, 44, 4092] + [0] * 12)).astype(np.uint64)
    run = execute(
        f"send.ugm (16|M0) null r10 r20:2 0x0 0x{desc_store:08X}\n"
        f"send.ugm (16|M0) r40 r10 null:0 0x0 0x{desc_load:08X}",
        "dg2",
        inputs={10: addresses, 20: np.arange(16, dtype=np.int32) + 500},
        memory=memory,
        simd=16,
        threads=1,
    )
    np.testing.assert_array_equal(run.read(40, np.int32, 4)[0], [500, 501, 502, 503])
    np.testing.assert_array_equal(data, [515] + list(range(2, 10)) + [500])  # lanes 4-15 stored at 0: the last wins
    with pytest.raises(MemoryFault, match="outside every buffer"):
        execute(
            f"send.ugm (16|M0) r40 r10 null:0 0x0 0x{desc_load:08X}",
            "dg2",
            inputs={10: np.full(16, base + 4096, np.uint64)},
            memory=memory,
            simd=16,
            threads=1,
        )


def test_the_issue_descriptor_0x02480403_loads_a_d32_block():
    """load_block2d d32 with rlen 4 (nGEN's forward convolutions): a 16x4 block of dwords is
    four 64-byte GRFs, one memory row each."""
    memory = DeviceMemory()
    surface = (np.arange(32 * 8, dtype=np.uint32) * 3).reshape(8, 32)
    base = mapped(memory, surface)
    header = _block2d_header(base, 128, 8, 128, 5, 2, 16, 4)
    run = execute(
        "(W) send.ugm (16|M0) r40 r10 null:0 0x0 0x02480403",
        "pvc",
        inputs={10: header},
        memory=memory,
        simd=16,
        threads=1,
    )
    np.testing.assert_array_equal(run.read(40, np.uint32, 64)[0].reshape(4, 16), surface[2:6, 5:21])
