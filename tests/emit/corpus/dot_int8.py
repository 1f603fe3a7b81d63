"""dot_int8: signed 8-bit dot products accumulated in 32-bit ints (dp4a on every platform here)."""

from __future__ import annotations

import numpy as np

from .spec import DEVICES, Argument, Case, CorpusKernel, Launch, Variant

ROWS, LENGTH = 100, 64  # LENGTH must be a multiple of 4 (the kernel reads char4)


def make_case(rng: np.random.Generator) -> Case:
    return Case(
        launch=Launch(global_size=(128, 1, 1), local_size=(32, 1, 1)),
        values={
            "a": rng.integers(-128, 128, size=(ROWS, LENGTH), dtype=np.int8),
            "b": rng.integers(-128, 128, size=LENGTH, dtype=np.int8),
            "out": np.zeros(ROWS, dtype=np.int32),
            "rows": np.int32(ROWS),
            "length": np.int32(LENGTH),
        },
    )


def reference(values) -> dict[str, np.ndarray]:
    return {"out": (values["a"].astype(np.int32) @ values["b"].astype(np.int32)).astype(np.int32)}


KERNEL = CorpusKernel(
    name="dot_int8",
    kernel_name="dot_int8",
    arguments=(
        Argument("a", "buffer", "int8", "in"),
        Argument("b", "buffer", "int8", "in"),
        Argument("out", "buffer", "int32", "out"),
        Argument("rows", "scalar", "int32"),
        Argument("length", "scalar", "int32"),
    ),
    variants=tuple(Variant(d) for d in DEVICES),
    make_case=make_case,
    reference=reference,
    required_mnemonics=("dp4a",),
)
