"""Write the seed corpus of the fuzz harnesses (tests/fuzz/seeds/TARGET/NAME), from xegen itself:
expressions and statements, descriptors and a shapes file, two shipped rule files, the listing,
bytes and zebin of a small compiled kernel (for each platform), and numpy arrays.

    python tests/fuzz/make_seeds.py      (the result is committed; run it again when a format changes)
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np

from xegen.conv import make_problem
from xegen.emit import disassemble
from xegen.pipeline import compile_problem

HERE = Path(__file__).parent
SEEDS = HERE / "seeds"
ROOT = HERE.parent.parent
PLATFORMS = ("xelp", "xehpg", "xehpc")  # as targets.py numbers them

EXPRESSIONS = [
    "2*(a+b) - a",
    "x:u16 * 3",
    "(u32)x >> 3",
    "a ? b : c - 1",
    "min(a, b) + add3(a, b, c)",
    "(sat u8)(x:f32 * 0.5)",
    "-x % 7 == 3 && y != 0",
    "mad(a, b, 2) << (n & 31)",
    "let t = a + 1 in t * t",
    "for (i, 0, 8) { out[i] = i * 2 }",
    "0xffffffff:u32 + 1e-3:f32",
]
DESCRIPTORS = [
    'mb1ic16ih8oc32oh8kh3ph1',
    'g1mb1ic64ih56oc64oh56kh3ph1n"res2a"',
    'mb2ic32id8ih8iw8oc32od8oh8ow8kd3kh3kw3pd1ph1pw1',
    'g32mb1ic32ih112oc32oh112kh3ph1n"dw"',
    'mb1ic3ih224iw224oc64oh112ow112kh7kw7sh2sw2ph3pw3',
    'mb1_ic16oc16_iw32ow16kw3sw2pw0dw1',
]


def write(target: str, name: str, data: bytes) -> None:
    folder = SEEDS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def main() -> None:
    shutil.rmtree(SEEDS, ignore_errors=True)
    for i, text in enumerate(EXPRESSIONS):
        write("expression", f"{i:02d}", text.encode())
    for i, text in enumerate(DESCRIPTORS):
        write("descriptor", f"{i:02d}", text.encode())
    shapes = (ROOT / "tests" / "data" / "shapes_resnet_50").read_text().splitlines()
    write("batch", "resnet_50_head", ("\n".join(shapes[:12]) + "\n").encode())
    write("batch", "mixed", ("# a comment\n\n" + "\n".join(DESCRIPTORS) + "\n").encode())
    for name in ("peephole.egg", "select.egg", "strength.egg"):
        write("rules", name, (ROOT / "xegen" / "rules" / name).read_bytes())
    problem = make_problem("mb1ic16ih4oc16oh4kh1ph0")
    for index, platform in enumerate(PLATFORMS):
        compilation = compile_problem(problem, platform, {})
        code, binary = compilation.compiled.code, compilation.zebin()
        listing = disassemble(code, platform).splitlines()
        write("assembler", platform, bytes([index]) + "\n".join(listing[:60]).encode())
        write("decoder", platform, bytes([index]) + code[: 16 * 256])
        write("zebin", platform, binary)
    for i, array in enumerate(
        [
            np.arange(6, dtype=np.float32).reshape(2, 3),
            np.array([1, -2, 3], np.int8),
            np.zeros((2, 2), np.uint16),
            np.asfortranarray(np.eye(3)),
        ]
    ):
        write("npy", f"{i:02d}", npy(array))


if __name__ == "__main__":
    main()
