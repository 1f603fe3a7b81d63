"""Atomics that return the old values (`send<op=atomic, returns=true>`): lowered for every
platform, run in the simulator and compared byte for byte with the IR interpreter, and the
messages' response lengths as Intel's iga64 decodes them."""

from __future__ import annotations

import re

import numpy as np
import pytest

from xegen import oracles
from xegen.ir import Type
from xegen.lower import compile_kernel
from xegen.oracles import ocloc_validate

from .harness import hand_spec, iga_report, run_both

PLATFORMS = ("xelp", "xehpg", "xehpc")
LSC_PLATFORMS = ("xehpg", "xehpc")
THREADS = 8  # a group of 4, two groups
ME = "(group_id0 * 4 + thread_id0)"


def vec(values) -> str:
    values = list(values)
    if len(values) == 1:
        return str(values[0])
    return f"shuffle<{','.join(map(str, range(len(values))))}>({', '.join(map(str, values))})"


def lanes(n: int, per_thread: str, per_lane) -> str:
    """An s32 vector: `per_thread` in every lane plus a constant per lane."""
    return f"broadcast({per_thread}, {n}) + {vec(per_lane)}"


def global_kernel(t: str, op: str, count: int, private: bool, mask: str, at: int = 0) -> tuple[str, int]:
    """One returning atomic on `mem` whose register operand starts `at` bytes into `r`, then `r`
    stored to `out`; slots share addresses within a thread, and across threads unless `private`
    (a message of 8 lanes or fewer on every platform keeps the order the interpreter defines).
    Returns the text and the elements each thread stores."""
    size = Type.parse(t).size
    operands = 2 if op == "cmpxchg" else 1
    total = at // size + operands * count
    words = [(3 * s) % 5 for s in range(count)]  # addresses, some shared within the thread
    offsets = lanes(count, f"{ME} * {5 * size}" if private else "0", [w * size for w in words])
    # compare values: the memory's initial value (its word index) in every other slot
    first = (
        lanes(count, f"{ME} * 5" if private else "0", [w + s % 2 for s, w in enumerate(words)])
        if op == "cmpxchg"
        else lanes(count, f"{ME} * 16", range(1, count + 1))
    )
    text = f"alloc r[{total * size}] grf;\n"
    if at:
        text += f"r[0] = ({t}x{at // size})broadcast(0, {at // size});\n"
    text += f"r[{at}] = ({t}x{count})({first});\n"
    if op == "cmpxchg":
        text += f"r[{at + count * size}] = ({t}x{count})({lanes(count, f'{ME} * 100', range(count))});\n"
    text += f"""
send<op=atomic, kind=scattered, space=global, type={t}, count={count}, atomic={op}, returns=true>(
    &mem[0], {offsets}, &r[{at}], {mask});
send<op=store, kind=block, space=global, type={t}, count={total}>(&out[{ME} * {total * size}], &r[0], null);
"""
    return text, total


def vector_mask(count: int) -> str:
    """Slots on and off, differently in each thread."""
    return f"(({lanes(count, ME, range(count))}) & broadcast(3, {count})) != broadcast(0, {count})"


CASES = {  # name: (type, operation, count, private addresses, mask, register offset)
    "inc_s32": ("s32", "inc", 8, False, "vector", 0),
    "inc_u32": ("u32", "inc", 8, False, "scalar", 8),  # not on a GRF boundary
    "xchg_f32": ("f32", "xchg", 16, True, "vector", 0),
    "fadd_f32": ("f32", "fadd", 8, False, "null", 0),
    "add_s32": ("s32", "add", 12, True, "vector", 0),  # a padded message; two on XeLP
    "cmpxchg_s32": ("s32", "cmpxchg", 8, True, "null", 8),
    "add_u64": ("u64", "add", 8, False, "vector", 0),
    "add_s16": ("s16", "add", 8, False, "vector", 0),  # LSC's d16u32
}


def case_kernel(name: str):
    t, op, count, private, mask, at = CASES[name]
    mask_text = {"null": "null", "scalar": "thread_id0 != 2", "vector": vector_mask(count)}[mask]
    text, total = global_kernel(t, op, count, private, mask_text, at)
    spec = hand_spec(f"ret_{name}", text, [("mem", "ptr"), ("out", "ptr")], thread_group=(4, 1, 1))
    dtype = np.dtype({"s32": np.int32, "u32": np.uint32, "f32": np.float32, "u64": np.uint64, "s16": np.int16}[t])
    memory = (np.arange(5 * THREADS) * (0.5 if t == "f32" else 1)).astype(dtype)
    return spec, {"mem": memory, "out": np.zeros(THREADS * total, dtype)}


def platforms_of(name: str) -> tuple[str, ...]:
    return LSC_PLATFORMS if CASES[name][0] == "s16" else PLATFORMS  # (no 16-bit atomics on XeLP)


def check(spec, hw, buffers, grid=(2, 1, 1)):
    simulated, interpreted, compiled = run_both(spec, hw, buffers, grid=grid)
    for name in buffers:
        assert simulated[name].tobytes() == interpreted[name].tobytes(), (
            f"{name}: simulator {simulated[name][:24]} vs interpreter {interpreted[name][:24]}"
        )
        assert simulated[name].tobytes() != buffers[name].tobytes(), f"{name} was not written"
    return compiled, interpreted


@pytest.mark.parametrize("name, hw", [(name, hw) for name in CASES for hw in platforms_of(name)], ids=str)
def test_returning_atomics_match_the_interpreter(name, hw):
    spec, buffers = case_kernel(name)
    check(spec, hw, buffers)


def test_returning_inc_counts_in_thread_order_on_the_simulator():
    spec, buffers = case_kernel("inc_s32")
    _, interpreted = check(spec, "xehpg", buffers)
    out = interpreted["out"].reshape(THREADS, 8)
    counts = list(range(5))  # word w of `mem` starts at w
    for me in range(THREADS):
        for s in range(8):
            word = (3 * s) % 5
            if (me + s) % 4 != 0:
                assert out[me, s] == counts[word]
                counts[word] += 1
            else:  # masked off: the register keeps its operand
                assert out[me, s] == me * 16 + s + 1


SLM_KERNEL = """
alloc counts[32] slm;
alloc init[32] grf;
alloc r[32] grf;
init[0] = broadcast(10, 8);
if (thread_id0 == 0) {
  send<op=store, kind=block, space=slm, type=u32, count=8>(&counts[0], &init[0], null);
}
fence<space=slm>();
barrier();
r[0] = broadcast(thread_id0 + 1, 8);
send<op=atomic, kind=scattered, space=slm, type={t}, count=8, atomic={op}, returns=true>(
    &counts[0], shuffle<0,1,2,3,4,5,6,7>(0, 4, 4, 8, 8, 8, 12, 28), &r[0], {mask});
barrier();
send<op=store, kind=block, space=global, type=u32, count=8>(&out[(group_id0 * 4 + thread_id0) * 64], &r[0], null);
if (thread_id0 == 0) {
  send<op=load, kind=block, space=slm, type=u32, count=8>(&counts[0], &init[0], null);
  send<op=store, kind=block, space=global, type=u32, count=8>(&out[group_id0 * 256 + 32], &init[0], null);
}
"""


def slm_spec(t: str, op: str, mask: str):
    text = SLM_KERNEL.replace("{t}", t).replace("{op}", op).replace("{mask}", mask)
    return hand_spec("ret_slm", text, [("out", "ptr")], thread_group=(4, 1, 1))


@pytest.mark.parametrize("hw", PLATFORMS)
@pytest.mark.parametrize("t, op, mask", [("u32", "inc", "thread_id0 != 1"), ("s32", "add", "null")])
def test_returning_slm_atomics_match_the_interpreter(hw, t, op, mask):
    check(slm_spec(t, op, mask), hw, {"out": np.zeros(THREADS * 16, np.uint32)})


# (case, platform): the response length of each atomic message, in GRFs
RESPONSES = {
    ("add_s32", "xelp"): [1, 1],  # SIMD8 A64 d32: two messages
    ("add_s32", "xehpg"): [2],  # SIMD16 d32, 32-byte GRFs
    ("add_s32", "xehpc"): [1],  # SIMD16 d32, 64-byte GRFs
    ("add_u64", "xelp"): [2],
    ("add_u64", "xehpg"): [2],
    ("add_u64", "xehpc"): [1],
    ("xchg_f32", "xelp"): [1, 1],
    ("xchg_f32", "xehpg"): [2],
    ("xchg_f32", "xehpc"): [1],
    ("add_s16", "xehpg"): [1],  # d16u32: a dword per lane
    ("add_s16", "xehpc"): [1],
    ("slm", "xelp"): [1],  # A32 SIMD8 d32
    ("slm", "xehpg"): [1],
    ("slm", "xehpc"): [1],
}


@pytest.mark.parametrize("hw", PLATFORMS)
def test_iga64_decodes_the_response_lengths(hw, iga64, ocloc):
    for (name, platform), expected in RESPONSES.items():
        if platform != hw:
            continue
        spec = slm_spec("u32", "inc", "thread_id0 != 1") if name == "slm" else case_kernel(name)[0]
        compiled = compile_kernel(spec, hw)
        assert iga_report(compiled.code, hw) == "", name
        valid, report = ocloc_validate(compiled.zebin())
        assert valid, f"{name}: {report}"
        text = oracles.iga64_disassemble(compiled.code, hw)
        # iga64's comment on a send: "wr:<src0>+<src1>, rd:<response>; <message>"
        found = [int(m.group(1)) for m in re.finditer(r"rd:(\d+); [^\n]*atomic", text)]
        assert found == expected, f"{name}: {text}"
        # the destination is a register, not null
        assert all("null" not in line.split()[3] for line in text.splitlines() if "atomic" in line), text
