"""XeLP and XeHPG (no 64-bit add) reach buffers as binding-table surfaces: blocks by one A32 byte
offset (XeLP's unaligned oword block read takes it in its header), SIMT messages by a dword offset
per lane, each through the buffer's binding table index; qwords and atomics keep A64 messages on
the buffer's address, which the kernel also receives (`buffer_address`).  Compared byte for byte
with the interpreter, and read back from the binary: the descriptors, the `.ze_info` and what
iga64 and ocloc say."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from xegen.emit.decoder import decode
from xegen.lower import compile_kernel
from xegen.lower.messages import HDC_STATELESS
from xegen.oracles import ocloc_validate

from .harness import hand_spec, iga_report, run_both

GROUPS = 4


def _lanes(step: int) -> str:
    return "shuffle<0,1,2,3,4,5,6,7>(" + ", ".join(str(i * step) for i in range(8)) + ")"


# x: blocks at constant distances (one negative) from v, a byte gather and a qword gather;
# out: what they read (SIMT dword stores on XeLP), then an atomic add of every group into one place
KERNEL = f"""
alloc r[256] grf;
let v = group_id0 * 512 + 256;
let o = group_id0 * 256;
send<op=load, kind=block, space=global, type=s32, count=8>(&x[v], &r[0], null);
send<op=load, kind=block, space=global, type=s32, count=8>(&x[v + -256], &r[32], null);
send<op=load, kind=block, space=global, type=s32, count=4>(&x[v + 112], &r[64], null);
send<op=load, kind=scattered, space=global, type=s8, count=8>(&x[v], {_lanes(3)}, &r[96], null);
send<op=load, kind=scattered, space=global, type=s64, count=8>(&x[v], {_lanes(16)}, &r[128], null);
send<op=store, kind=block, space=global, type=s32, count=8>(&out[o], &r[0], null);
send<op=store, kind=block, space=global, type=s32, count=8>(&out[o + 32], &r[32], null);
send<op=store, kind=block, space=global, type=s32, count=4>(&out[o + 64], &r[64], null);
send<op=store, kind=block, space=global, type=s8, count=8>(&out[o + 80], &r[96], null);
send<op=store, kind=block, space=global, type=s64, count=8>(&out[o + 96], &r[128], null);
send<op=atomic, kind=scattered, space=global, type=s32, count=8, atomic=add>(
    &out[{GROUPS * 256}], {_lanes(4)}, &r[0], null);
"""


def spec(stateless: bool = False):
    kernel = hand_spec("surfaces", KERNEL, [("x", "ptr"), ("out", "ptr")])
    return dataclasses.replace(kernel, stateless=stateless)


def message_addressing(compiled) -> list[int | str]:
    """How each memory message reaches memory, from the decoded binary: the binding table index
    of its surface, or "flat" (A64)."""
    found: list[int | str] = []
    for inst in decode(compiled.code, compiled.hw):
        message = inst.send
        if message is None or message.sfid not in ("dc0", "dc1", "ugm"):
            continue
        if message.sfid == "ugm":  # LSC: address type desc[30:29] (3: BTI), the index in exDesc[31:24]
            found.append(message.exdesc >> 24 if message.desc >> 29 & 3 == 3 else "flat")
        else:  # HDC: the index in desc[7:0]; 0xFF is stateless (A64 here)
            bti = message.desc & 0xFF
            found.append("flat" if bti == HDC_STATELESS else bti)
    return found


@pytest.mark.parametrize("hw", ["xelp", "xehpg"])
def test_surface_messages_match_the_interpreter_and_intel_tools_accept_them(hw, iga64, ocloc):
    x = np.random.default_rng(3).integers(0, 256, GROUPS * 512 + 256, dtype=np.uint8)
    out = np.zeros(GROUPS * 256 + 32, np.uint8)
    simulated, interpreted, compiled = run_both(spec(), hw, {"x": x, "out": out}, grid=(GROUPS, 1, 1))
    assert simulated["out"].tobytes() == interpreted["out"].tobytes()
    assert simulated["out"][:160].any() and simulated["out"][-32:].any()
    env = compiled.zebin_kernel
    assert [(b.bti_value, b.arg_index) for b in env.binding_table_indices] == [(0, 0), (1, 1)]
    modes = {(p.arg_type, p.arg_index): (p.addrmode, p.size) for p in env.payload_arguments}
    assert modes[("arg_bypointer", 0)] == ("stateful", 0) and modes[("buffer_address", 0)][1] == 8
    reached = message_addressing(compiled)
    # x's blocks and byte gather through its surface, the stores through out's; the qword gather
    # and the atomic by address
    assert reached.count(0) >= 4 and reached.count(1) >= 1, reached
    assert reached.count("flat") == 2, reached
    assert iga_report(compiled.code, hw) == ""
    valid, report = ocloc_validate(compiled.zebin())
    assert valid, report


def test_stateless_kernels_keep_64_bit_addresses_and_fewer_instructions_do_not_change_the_result():
    x = (np.arange(GROUPS * 512 + 256) * 151 % 256).astype(np.uint8)
    out = np.zeros(GROUPS * 256 + 32, np.uint8)
    simulated, interpreted, flat = run_both(spec(stateless=True), "xelp", {"x": x, "out": out}, grid=(GROUPS, 1, 1))
    assert simulated["out"].tobytes() == interpreted["out"].tobytes()
    assert flat.zebin_kernel.binding_table_indices == ()
    assert set(message_addressing(flat)) == {"flat"}
    surfaces = compile_kernel(spec(), "xelp")
    assert len(surfaces.instructions) < len(flat.instructions)
