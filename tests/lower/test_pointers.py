"""Messages at constant distances from one let-bound offset share a 64-bit pointer: `buffer +
v` is computed once where `v` is bound, and each message adds only its constant (or uses the
pointer as it is at distance 0).  Compared byte for byte with the interpreter, including
negative distances and a let inside a loop, on every platform."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from xegen.lower import compile_kernel

from .harness import hand_spec, iga_report, run_both

PLATFORMS = ("xelp", "xehpg", "xehpc")

KERNEL = """
for (k = 0; k < 3) {
  let v = (group_id0 * 3 + k) * 256 + 128;
  send<op=load, kind=block, space=global, type=s32, count=8>(&x[v], &r[0], null);
  send<op=load, kind=block, space=global, type=s32, count=8>(&x[v + -128], &r[32], null);
  send<op=load, kind=block, space=global, type=s32, count=8>(&x[v + 64], &r[64], null);
  r[96] = r.s32x8[0] + r.s32x8[32] * 2 + r.s32x8[64] * 3;
  send<op=store, kind=block, space=global, type=s32, count=8>(&out[v], &r[96], null);
  send<op=store, kind=block, space=global, type=s32, count=8>(&out[v + 32], &r[0], null);
}
"""


def kernel(text: str = KERNEL):
    """The kernel with stateless buffers (XeLP's surfaces take A32 offsets, no pointer)."""
    spec = hand_spec("pointers", "alloc r[128] grf;\n" + text, [("x", "ptr"), ("out", "ptr")])
    return dataclasses.replace(spec, stateless=True)


@pytest.mark.parametrize("hw", PLATFORMS)
def test_shared_pointer_messages_match_the_interpreter(hw):
    groups = 4
    x = np.random.default_rng(1).integers(-(2**31), 2**31, groups * 3 * 64, dtype=np.int64).astype(np.int32)
    out = np.zeros(groups * 3 * 64, np.int32)
    simulated, interpreted, compiled = run_both(kernel(), hw, {"x": x, "out": out}, grid=(groups, 1, 1))
    assert simulated["out"].tobytes() == interpreted["out"].tobytes()
    assert simulated["out"].any()
    # the same kernel with offsets the lowering does not split (v - c): every message builds its
    # own 64-bit address from v
    apart = compile_kernel(
        kernel(KERNEL.replace("v + -128", "v - 128").replace("v + 64", "v - -64").replace("v + 32", "v - -32")), hw
    )
    assert len(compiled.instructions) < len(apart.instructions)
    if compiled.hw.has_lsc and not compiled.hw.has_int64_arithmetic:  # block messages: one sign
        # extension per pointer, not per message
        assert sum(i.opcode == "asr" for i in compiled.instructions) == 2, compiled.assembly()
        assert sum(i.opcode == "asr" for i in apart.instructions) == 5


def test_a_negative_distance_across_4_gib_borrows_from_the_high_dword(monkeypatch, iga64):
    """XeLP has no 64-bit adds: a message at a negative constant distance from a shared pointer
    subtracts the distance from the low dword and the borrow from the high one.  Here `x` starts
    320 bytes below 4 GiB, so the pointer `x + v` of v = 384 (the second iteration; offsets in
    bytes) lies above the boundary and its message at v - 128 below it: a wrong borrow would read
    4 GiB away (and fault)."""
    from xegen.sim import memory

    start = 2**32 - 320
    monkeypatch.setattr(memory, "FIRST_ADDRESS", start)
    pointer, message = start + 384, start + 384 - 128
    assert pointer >> 32 == 1 and message >> 32 == 0  # the case the test is about
    x = np.random.default_rng(2).integers(-(2**31), 2**31, 3 * 64, dtype=np.int64).astype(np.int32)
    out = np.zeros(3 * 64, np.int32)
    simulated, interpreted, compiled = run_both(kernel(), "xelp", {"x": x, "out": out})
    assert simulated["out"].tobytes() == interpreted["out"].tobytes()
    assert any(i.opcode == "subb" for i in compiled.instructions), compiled.assembly()
    assert iga_report(compiled.code, "xelp") == ""
