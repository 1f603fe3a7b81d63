"""XeHPC's 2D block loads (`send<kind=block2d>`): the interpreter against a plain numpy model
written here, the simulator against the interpreter byte for byte, Intel's tools on the code,
and the IR's checks of the hardware's limits."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from xegen import ir
from xegen.errors import EvaluationError, UnsupportedError
from xegen.ir.expr import IRTypeError
from xegen.lower import compile_kernel
from xegen.oracles import find_tool, ocloc_validate

from .harness import hand_spec, iga_report, run_both

SURFACE = 64  # byte offset of the surface in `x` (the simulator's buffers start 64 KiB aligned)

KERNEL = """
alloc r[{reg_bytes}] grf;
send<op=load, kind=block2d, space=global, type={t}, count={width}, elems={rows}, width={sw}, height={sh},
    pitch={pitch}, transform={transform}>(&x[{surface}], {x}, {y}, &r[0], {mask});
send<op=store, kind=block, space=global, type=u8, count={reg_bytes}>(&out[group_id0 * {reg_bytes}], &r[0], null);
"""


def expected(
    memory: np.ndarray, t: str, width: int, rows: int, sw: int, sh: int, pitch: int, transform: str, x: int, y: int
) -> bytes:
    """The register bytes by hand: element (r, c) of the block is memory row y + r, column x + c
    of the surface (0 outside); then the transform; rows padded to a power of two bytes."""
    size = {"u8": 1, "u16": 2, "bf16": 2, "u32": 4, "u64": 8}[t]
    raw = np.dtype(f"u{size}")

    def element(r: int, c: int) -> int:
        row, col = y + r, x + c
        if 0 <= row < sh and 0 <= col and (col + 1) * size <= sw:
            at = SURFACE + row * pitch + col * size
            return int(memory[at : at + size].view(raw)[0])
        return 0

    if transform == "vnni":
        group = 4 // size
        lines = [
            [sum(element(k * group + j, c) << (8 * size * j) for j in range(group)) for c in range(width)]
            for k in range(rows // group)
        ]
        cell = np.dtype("u4")
    elif transform == "transpose":
        lines = [[element(r, c) for r in range(rows)] for c in range(width)]
        cell = raw
    else:
        lines = [[element(r, c) for c in range(width)] for r in range(rows)]
        cell = raw
    out = b""
    for line in lines:
        data = np.array(line, dtype=cell).tobytes()
        padded = 1 << (len(data) - 1).bit_length()
        out += data + bytes(padded - len(data))
    return out


CASES = [  # type, block width, rows, surface width bytes, height, pitch, transform, x, y
    ("u16", 16, 8, 96, 20, 128, "none", 2, 3),  # dpas A of bf16: rows of 16 elements
    ("u16", 16, 8, 96, 20, 128, "none", 40, -2),  # partly outside: right and above
    ("bf16", 16, 16, 128, 12, 192, "vnni", 8, 4),  # dpas B of 16-bit data, rows beyond the bottom
    ("u8", 16, 32, 64, 40, 64, "vnni", -4, 10),  # dpas B of int8 (groups of four rows), left edge
    ("u32", 8, 16, 80, 30, 96, "transpose", 17, 5),  # 16 rows of 8 dwords, column 20 on out of bounds
    ("u64", 4, 8, 64, 16, 64, "transpose", 6, 1),
    ("u32", 16, 4, 64, 6, 64, "none", -3, 4),
    ("u8", 64, 2, 128, 4, 128, "none", 96, 3),  # half outside on the right, the last row below
]


def _kernel(t, width, rows, sw, sh, pitch, transform, x, y, mask="null"):
    reg_bytes = max(
        64,
        -(
            -ir.Send(
                "load",
                "block2d",
                "global",
                ir.parse_type(t),
                width,
                rows,
                width=sw,
                height=sh,
                pitch=pitch,
                transform=transform,
            ).register_bytes
            // 64
        )
        * 64,
    )
    text = KERNEL.format(
        t=t,
        width=width,
        rows=rows,
        sw=sw,
        sh=sh,
        pitch=pitch,
        transform=transform,
        x=x,
        y=y,
        surface=SURFACE,
        reg_bytes=reg_bytes,
        mask=mask,
    )
    return hand_spec("block2d", text, [("x", "ptr"), ("out", "ptr")], simd=16), reg_bytes


def _memory() -> np.ndarray:
    return (np.arange(8192, dtype=np.uint64) * 2654435761 % 2**32).astype(np.uint32).view(np.uint8).copy()


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}-{c[6]}-at{c[7]},{c[8]}")
def test_block2d_loads_match_numpy_and_the_simulator_matches_the_interpreter(case):
    t, width, rows, sw, sh, pitch, transform, x, y = case
    spec, reg_bytes = _kernel(*case)
    memory = _memory()
    simulated, interpreted, _ = run_both(spec, "xehpc", {"x": memory, "out": np.full(reg_bytes, 0xAB, np.uint8)})
    want = expected(memory, t, width, rows, sw, sh, pitch, transform, x, y)
    assert interpreted["out"].tobytes()[: len(want)] == want
    assert simulated["out"].tobytes() == interpreted["out"].tobytes()


RUN_TIME = """
alloc r[512] grf;
send<op=prefetch, kind=block2d, space=global, type=u16, count=16, elems=16, width=128, height=33, pitch=128,
    transform=vnni>(&x[64], group_id0 * 8 - 4, group_id0 * 16 - 8, null, null);
r[0] = broadcast(-1, 128);
send<op=load, kind=block2d, space=global, type=u16, count=16, elems=16, width=128, height=33, pitch=128,
    transform=vnni>(&x[64], group_id0 * 8 - 4, group_id0 * 16 - 8, &r[0], group_id0 != 2);
send<op=store, kind=block, space=global, type=u8, count=512>(&out[group_id0 * 512], &r[0], null);
"""


def test_block2d_coordinates_of_the_run_a_mask_and_a_prefetch():
    """x and y from the group id, a prefetch first; the masked-off group keeps its registers."""
    spec = hand_spec("block2d_run", RUN_TIME, [("x", "ptr"), ("out", "ptr")], simd=16)
    memory = _memory()
    simulated, interpreted, _ = run_both(
        spec, "xehpc", {"x": memory, "out": np.zeros(4 * 512, np.uint8)}, grid=(4, 1, 1)
    )
    assert simulated["out"].tobytes() == interpreted["out"].tobytes()
    for g in range(4):
        got = interpreted["out"][g * 512 : (g + 1) * 512].tobytes()
        if g == 2:
            assert got == b"\xff" * 512
        else:
            assert got == expected(memory, "u16", 16, 16, 128, 33, 128, "vnni", g * 8 - 4, g * 16 - 8)


@pytest.mark.parametrize(
    "transform, t, name",
    [
        ("none", "u16", "load_block2d.ugm.d16.a64"),
        ("vnni", "u16", "load_block2d.ugm.d16v.a64"),
        ("transpose", "u32", "load_block2d.ugm.d32t.a64"),
    ],
)
def test_intel_tools_decode_block2d_loads_as_meant(transform, t, name, iga64, ocloc):
    width, rows = (8, 8) if transform == "transpose" else (16, 8)
    spec, _ = _kernel(t, width, rows, 64, 8, 64, transform, 0, 0)
    compiled = compile_kernel(spec, "xehpc")
    assert iga_report(compiled.code, "xehpc") == ""
    valid, report = ocloc_validate(compiled.zebin())
    assert valid, report
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "k.bin").write_bytes(compiled.code)
        text = subprocess.run(
            [find_tool("iga64"), "-d", "-p=12p72", "k.bin"], capture_output=True, text=True, cwd=tmp, check=True
        ).stdout
    # iga64 names each send's message after its descriptor: `// wr:1+0, rd:4; load_block2d.ugm.d16v.a64`
    blocks = [line.rsplit(";", 1)[-1].strip() for line in text.splitlines() if "load_block2d" in line]
    assert blocks == [name], text


@pytest.mark.parametrize("hw", ["xelp", "xehpg"])
def test_block2d_only_where_the_platform_has_it(hw):
    spec, _ = _kernel(*CASES[0])
    with pytest.raises(UnsupportedError, match="no 2D block messages"):
        compile_kernel(spec, hw)


@pytest.mark.parametrize(
    "attributes, message",
    [
        (dict(type="u16", count=16, elems=8, width=32, height=4, pitch=64), "surface width 32"),
        (dict(type="u16", count=16, elems=8, width=64, height=4, pitch=60), "pitch 60"),
        (dict(type="u16", count=16, elems=8, width=128, height=4, pitch=64), "pitch 64"),
        (dict(type="u16", count=12, elems=8, width=64, height=4, pitch=64), "power of two"),
        (dict(type="u16", count=16, elems=33, width=64, height=4, pitch=64), "1 to 32 rows"),
        (dict(type="u16", count=16, elems=7, width=64, height=4, pitch=64, transform="vnni"), "multiple of 2"),
        (dict(type="u32", count=16, elems=8, width=64, height=4, pitch=64, transform="vnni"), "d8 or d16"),
        (dict(type="u16", count=8, elems=8, width=64, height=4, pitch=64, transform="transpose"), "d32 or d64"),
        (dict(type="u32", count=16, elems=8, width=64, height=4, pitch=64, transform="transpose"), "up to 8 columns"),
        (dict(type="u32", count=8, elems=6, width=64, height=4, pitch=64, transform="transpose"), "power-of-two rows"),
    ],
)
def test_block2d_limits_are_checked_in_the_ir(attributes, message):
    t = ir.parse_type(attributes.pop("type"))
    with pytest.raises(IRTypeError, match=message):
        ir.Send("load", "block2d", "global", t, **attributes)


def test_block2d_stores_and_slm_are_not_block2d_messages():
    t = ir.parse_type("u32")
    for op, space in (("store", "global"), ("load", "slm")):
        with pytest.raises(IRTypeError, match="load global memory"):
            ir.Send(op, "block2d", space, t, 16, 4, width=64, height=4, pitch=64)
    with pytest.raises(IRTypeError, match="block2d messages only"):
        ir.Send("load", "block", "global", t, 16, width=64)


def test_interpreter_refuses_a_misaligned_surface_or_column():
    spec, reg_bytes = _kernel("u16", 16, 8, 96, 20, 128, "none", 3, 0)  # column 3 of 16-bit data
    env = {name: np.zeros(1, np.int32) for name in spec.thread_ids + spec.group_ids}
    buffers = {"x": _memory(), "out": np.zeros(reg_bytes, np.uint8)}
    with pytest.raises(EvaluationError, match="multiple of 2"):
        ir.execute(spec.body, buffers=buffers, env=env, threads=1)
    text = KERNEL.format(
        t="u16",
        width=16,
        rows=8,
        sw=96,
        sh=20,
        pitch=128,
        transform="none",
        x=0,
        y=0,
        surface=32,
        reg_bytes=reg_bytes,
        mask="null",
    )
    body = hand_spec("b", text, [("x", "ptr"), ("out", "ptr")]).body
    with pytest.raises(EvaluationError, match="64-byte boundary"):
        ir.execute(body, buffers=buffers, env=env, threads=1)


REPEATED = """
alloc r[1024] grf;
send<op=load, kind=block2d, space=global, type=u16, count=16, elems=8, width=96, height=20, pitch=128,
    transform=none>(&x[64], 2, 3, &r[0], null);
{more}send<op=store, kind=block, space=global, type=u8, count=1024>(&out[group_id0 * 1024], &r[0], null);
"""
MORE = """send<op=load, kind=block2d, space=global, type=u16, count=16, elems=8, width=96, height=20, pitch=128,
    transform=none>(&x[64], 2, group_id0 + 5, &r[256], null);
send<op=load, kind=block2d, space=global, type=u16, count=16, elems=8, width=96, height=20, pitch=128,
    transform=none>(&x[64], 10, 3, &r[512], null);
send<op=load, kind=block2d, space=global, type=u16, count=16, elems=8, width=96, height=20, pitch=128,
    transform=none>(&x[64], 10, 3, &r[768], null);
"""


def test_loads_of_one_surface_and_shape_share_a_header():
    """Four loads of one surface and block shape: the later ones write only the coordinates the
    header does not hold (y; then x and y; then nothing), so the three add their sends, those three
    movs and y's add -- not a header each (eight instructions) -- and each block is still right.
    The output's stores are the same in both kernels (its pointer adds)."""
    one = compile_kernel(
        hand_spec("block2d_one", REPEATED.format(more=""), [("x", "ptr"), ("out", "ptr")], simd=16), "xehpc"
    )
    spec = hand_spec("block2d_four", REPEATED.format(more=MORE), [("x", "ptr"), ("out", "ptr")], simd=16)
    four = compile_kernel(spec, "xehpc")

    def issued(kernel) -> int:  # sync instructions (SWSB's waits) aside
        return sum(inst.opcode != "sync" for inst in kernel.instructions)

    assert issued(four) - issued(one) == 3 + 3 + 1
    memory = _memory()
    simulated, interpreted, _ = run_both(
        spec, "xehpc", {"x": memory, "out": np.zeros(2 * 1024, np.uint8)}, grid=(2, 1, 1)
    )
    assert simulated["out"].tobytes() == interpreted["out"].tobytes()
    for g in range(2):
        blocks = [(2, 3), (2, g + 5), (10, 3), (10, 3)]
        got = interpreted["out"][g * 1024 : (g + 1) * 1024].tobytes()
        for index, (x, y) in enumerate(blocks):
            assert got[index * 256 : index * 256 + 256] == expected(memory, "u16", 16, 8, 96, 20, 128, "none", x, y)
