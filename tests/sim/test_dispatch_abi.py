"""NEO's side of the dispatch ABI (docs/sim.md, "Dispatch"): who generates the local ids and in
which walk order, where per-thread data sits, the zebin relocations NEO patches, and the
hardware thread ids in sr0.0 that private memory is indexed by.  Expected values are worked
out by hand from NEO's and IGC's rules (cited at each test)."""

from __future__ import annotations

import struct
from dataclasses import replace

import numpy as np
import pytest

from tests.conftest import require_tool
from tests.sim.test_dispatch import expected_ids, ids_zebin
from xegen import Error, UnsupportedError, sim
from xegen import hw as hwlib
from xegen.emit import assemble
from xegen.emit.zebin import (
    R_PER_THREAD_PAYLOAD_OFFSET,
    R_ZE_SYM_ADDR,
    R_ZE_SYM_ADDR_32,
    R_ZE_SYM_ADDR_32_HI,
    ExecutionEnv,
    PayloadArgument,
    PerThreadPayloadArgument,
    Relocation,
    ZebinKernel,
    read_zebin,
    write_zebin,
)
from xegen.sim import dispatch
from xegen.sim.program import Program
from xegen.sim.relocations import IMPLICIT_ARGS_SYMBOL, PER_THREAD_OFFSET_SYMBOL, relocate


def _kernel(
    platform,
    *,
    ptd: int = 0,
    inline: int = 0,
    walk=None,
    simd: int = 16,
    ctd_end: int = 64,
    code: bytes = b"",
    relocations=(),
    stack_calls: bool = False,
) -> ZebinKernel:
    env = ExecutionEnv(
        grf_count=128,
        simd_size=simd,
        inline_data_payload_size=inline,
        work_group_walk_order_dimensions=walk,
        has_stack_calls=stack_calls,
    )
    payload = (PayloadArgument("arg_byvalue", ctd_end - 4, 4, arg_index=0),)
    per_thread = (PerThreadPayloadArgument("local_id", 0, ptd),) if ptd else ()
    return ZebinKernel("k", code, env, payload, per_thread, relocations=tuple(relocations))


def _launch(kernel, platform, local):
    return dispatch.prepare(kernel, platform, [0], local, local, sim.memory.DeviceMemory())


# --- who makes the local ids ------------------------------------------------------------------------

# NEO's EncodeDispatchKernel::isRuntimeLocalIdsGenerationRequired (xehp_and_later), by hand:
# 3 channels: the first of xyz, xzy, yxz, zxy, yzx, zyx whose two leading sizes are powers of two.
WALKS = [
    ((8, 3, 2), 3, None, (0, 2, 1)),  # x=8, z=2
    ((4, 4, 1), 3, None, (0, 1, 2)),
    ((3, 4, 1), 3, None, (1, 2, 0)),  # y=4, z=1 (the runtime's documented walk-order example: yzx)
    ((9, 7, 1), 3, None, None),  # no order fits: the runtime makes them
    ((6, 1, 1), 1, None, None),  # one channel: x must be a power of two
    ((16, 1, 1), 1, None, (0, 1, 2)),
    ((4, 2, 2), 2, None, None),  # z > 1 without a z channel
    ((8, 4, 1), 3, (1, 0, 2), (1, 0, 2)),  # a required walk order is kept when it fits
    ((3, 4, 1), 3, (0, 1, 2), None),  # ... and refused when it does not (x = 3)
    ((5, 5, 1), 0, None, (0, 1, 2)),  # no ids at all: the hardware path (nothing to make)
]


@pytest.mark.parametrize("local, channels, walk, expected", WALKS, ids=[str(w[:3]) for w in WALKS])
def test_neo_lets_the_hardware_make_local_ids_when_a_walk_order_fits(local, channels, walk, expected):
    for platform in (hwlib.XEHPG, hwlib.XEHPC):
        row = dispatch.local_id_channel_bytes(16, platform.grf_bytes)
        launch = _launch(_kernel(platform, ptd=channels * row, walk=walk), platform, local)
        assert launch.hardware_ids[local] == expected, platform.name
        # PTD goes to the indirect object heap only when the runtime makes the ids
        assert dispatch.ioh_ptd_bytes(launch, local) == (0 if expected is not None else channels * row)
    launch = _launch(_kernel(hwlib.XELP, ptd=3 * 32), hwlib.XELP, local)
    assert launch.hardware_ids[local] is None  # XeLP: always the runtime


def test_per_thread_data_follows_the_cross_thread_data_left_in_the_heap():
    """NEO's KernelDescriptor::getPerThreadDataOffset: CTD size - min(CTD, inline bytes); the
    walker's inline data is 32 bytes, used only when the kernel declares inline data."""
    assert dispatch.per_thread_data_offset(_kernel(hwlib.XEHPG, inline=32, ctd_end=60)) == 32
    assert dispatch.per_thread_data_offset(_kernel(hwlib.XEHPG, inline=0, ctd_end=60)) == 64
    assert dispatch.per_thread_data_offset(_kernel(hwlib.XEHPG, inline=32, ctd_end=20)) == 0
    launch = _launch(_kernel(hwlib.XEHPC, inline=32, ctd_end=100), hwlib.XEHPC, (4, 1, 1))
    assert (launch.ctd_size, launch.inline_size) == (128, 32)


# --- relocations ------------------------------------------------------------------------------------

ADD = "(W) add (1|M0) r10.0<1>:ud r10.0<0;1,0>:ud 0x12345678:ud"


def test_relocations_round_trip_through_the_zebin_writer_and_reader():
    relocations = (
        Relocation(12, R_PER_THREAD_PAYLOAD_OFFSET),
        Relocation(28, R_ZE_SYM_ADDR_32, IMPLICIT_ARGS_SYMBOL),
        Relocation(16, R_ZE_SYM_ADDR, "global_table", 8),
    )
    code = assemble(f"{ADD}\n{ADD}\n{ADD}", hwlib.XEHPG)
    data = write_zebin([_kernel(hwlib.XEHPG, code=code, relocations=relocations)], "dg2")
    assert read_zebin(data).kernel("k").relocations == relocations


def _immediate(code: bytes, index: int) -> int:
    return struct.unpack_from("<I", code, 16 * index + 12)[0]


def test_neo_patches_the_per_thread_offset_and_leaves_the_implicit_args_offset():
    code = assemble(f"{ADD}\n{ADD}\n{ADD}\n{ADD}", hwlib.XEHPG)
    kernel = _kernel(
        hwlib.XEHPG,
        inline=32,
        ctd_end=96,
        code=code,
        relocations=(
            Relocation(12, R_PER_THREAD_PAYLOAD_OFFSET),
            Relocation(28, R_ZE_SYM_ADDR_32, PER_THREAD_OFFSET_SYMBOL),
            Relocation(44, R_ZE_SYM_ADDR_32, IMPLICIT_ARGS_SYMBOL),
            Relocation(60, R_ZE_SYM_ADDR_32_HI, ""),
        ),
    )
    patched = relocate(kernel)
    assert [_immediate(patched, i) for i in range(4)] == [64, 64, 0x12345678, 0]  # 96 - 32; untouched; 0 >> 32
    assert patched[:12] == code[:12] and len(patched) == len(code)


def test_a_by_value_payload_argument_without_an_argument_index_is_an_error():
    """A zebin's arg_byvalue payload argument must name its kernel argument (arg_index); one
    without it was looked up as args[None], a TypeError, before this was checked."""
    kernel = replace(_kernel(hwlib.XEHPG), payload_arguments=(PayloadArgument("arg_byvalue", 60, 4),))
    launch = dispatch.prepare(kernel, hwlib.XEHPG, [], (16, 1, 1), (16, 1, 1), sim.memory.DeviceMemory())
    with pytest.raises(Error, match="arg_byvalue at offset 60 names no argument"):
        dispatch.cross_thread_data(launch, [], (16, 1, 1))


def test_relocations_the_simulator_cannot_resolve_are_refused():
    code = assemble(ADD, hwlib.XEHPG)
    with pytest.raises(UnsupportedError, match="symbol 'some_global'"):
        relocate(_kernel(hwlib.XEHPG, code=code, relocations=(Relocation(12, R_ZE_SYM_ADDR_32, "some_global"),)))
    with pytest.raises(UnsupportedError, match="implicit-arguments"):
        relocate(
            _kernel(
                hwlib.XEHPG,
                code=code,
                stack_calls=True,
                relocations=(Relocation(12, R_ZE_SYM_ADDR_32, IMPLICIT_ARGS_SYMBOL),),
            )
        )
    with pytest.raises(UnsupportedError, match="outside the code"):
        relocate(_kernel(hwlib.XEHPG, code=code, relocations=(Relocation(14, R_PER_THREAD_PAYLOAD_OFFSET),)))


def test_igc_prologue_reaches_its_local_ids_through_a_patched_relocation():
    """IGC's pvc prologue adds CTD - inline (here as an immediate) to r0.0 to find the local
    ids.  With that immediate zeroed and an R_PER_THREAD_PAYLOAD_OFFSET relocation on it, as
    newer IGCs emit, the ids still arrive right: the simulator patches it as NEO does.  A
    group of 9x7 makes NEO generate the ids itself, so the prologue's load runs."""
    require_tool("ocloc")
    zebin = read_zebin(ids_zebin("pvc", None))
    kernel = zebin.kernel("ids")
    offset = dispatch.per_thread_data_offset(kernel)
    program = Program(kernel.code, hwlib.XEHPC)
    index = next(
        i
        for i, inst in enumerate(program.instructions)
        if inst.opcode == "add" and inst.dst.number == 127 and getattr(inst.srcs[1], "value", None) == offset
    )
    at = program.pcs[index] + 12
    assert struct.unpack_from("<H", kernel.code, at)[0] == offset  # a 16-byte add with the offset as immediate
    code = bytearray(kernel.code)
    code[at : at + 2] = b"\0\0"
    global_size, local_size = (9, 7, 2), (9, 7, 1)

    simd = kernel.execution_env.simd_size
    expected = expected_ids(global_size, local_size, 5, simd, "pvc")

    def run(k):
        out = np.full((*global_size[::-1], 8), -1, dtype=np.int32)
        sim.run(write_zebin([k], "pvc"), "ids", [out, sim.local(4 * 63), 5], global_size, local_size)
        return out

    fixed = replace(kernel, code=bytes(code), relocations=(Relocation(at, R_PER_THREAD_PAYLOAD_OFFSET),))
    np.testing.assert_array_equal(run(fixed), expected)
    with pytest.raises(sim.MemoryFault):  # unpatched, the ids are garbage: the SLM index runs off the end
        run(replace(kernel, code=bytes(code)))


# --- hardware thread ids ----------------------------------------------------------------------------


def _igc_hardware_thread_id(platform: hwlib.Platform, sr0: int) -> int:
    """IGC's CShader::GetHWTID, by hand: XeHPG keeps sr0.0[13:0] and removes bits 6 and 3;
    XeHPC keeps [14:0] and removes bits 7:6 and 3."""

    def remove(value, bit, count):
        return (value & ((1 << bit) - 1)) | ((value >> (bit + count)) << bit)

    if platform is hwlib.XEHPG:
        return remove(remove(sr0 & 0x3FFF, 6, 1), 3, 1)
    return remove(remove(sr0 & 0x7FFF, 6, 2), 3, 1)


@pytest.mark.parametrize("platform", [hwlib.XEHPG, hwlib.XEHPC], ids=lambda p: p.name)
def test_sr0_thread_ids_decode_to_distinct_slots_the_way_igc_reads_them(platform):
    slots = np.arange(dispatch.thread_slot_count(platform))
    ids = dispatch.sr0_thread_ids(platform, slots)
    assert [_igc_hardware_thread_id(platform, int(i)) for i in ids] == slots.tolist()
    assert not np.any(ids & (1 << 3))
