"""transpose: dst[c][r] = src[r][c] over a 2-D range that overshoots both edges."""

from __future__ import annotations

import numpy as np

from .spec import DEVICES, Argument, Case, CorpusKernel, Launch, Variant

ROWS, COLS = 37, 50


def make_case(rng: np.random.Generator) -> Case:
    return Case(
        launch=Launch(global_size=(64, 40, 1), local_size=(16, 4, 1)),
        values={
            "src": rng.standard_normal((ROWS, COLS)).astype(np.float32),
            "dst": np.zeros((COLS, ROWS), dtype=np.float32),
            "rows": np.int32(ROWS),
            "cols": np.int32(COLS),
        },
    )


def reference(values) -> dict[str, np.ndarray]:
    return {"dst": np.ascontiguousarray(values["src"].T)}


KERNEL = CorpusKernel(
    name="transpose",
    kernel_name="transpose",
    arguments=(
        Argument("src", "buffer", "float32", "in"),
        Argument("dst", "buffer", "float32", "out"),
        Argument("rows", "scalar", "int32"),
        Argument("cols", "scalar", "int32"),
    ),
    variants=tuple(Variant(d) for d in DEVICES),
    make_case=make_case,
    reference=reference,
)
