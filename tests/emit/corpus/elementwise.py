"""saxpy: y = alpha * x + y, one work-item per element, guarded by n (the range overshoots n)."""

from __future__ import annotations

import numpy as np

from .spec import DEVICES, LSC_OPTIONS, Argument, Case, CorpusKernel, Launch, Variant


def make_case(rng: np.random.Generator) -> Case:
    n = 1000  # not a multiple of the group size: the last group has idle work-items
    return Case(
        launch=Launch(global_size=(1024, 1, 1), local_size=(64, 1, 1)),
        values={
            "y": rng.standard_normal(n).astype(np.float32),
            "x": rng.standard_normal(n).astype(np.float32),
            "alpha": np.float32(1.75),
            "n": np.int32(n),
        },
    )


def reference(values) -> dict[str, np.ndarray]:
    return {"y": (values["alpha"] * values["x"] + values["y"]).astype(np.float32)}


KERNEL = CorpusKernel(
    name="elementwise",
    kernel_name="saxpy",
    arguments=(
        Argument("y", "buffer", "float32", "inout"),
        Argument("x", "buffer", "float32", "in"),
        Argument("alpha", "scalar", "float32"),
        Argument("n", "scalar", "int32"),
    ),
    variants=tuple(Variant(d) for d in DEVICES) + (Variant("dg2", LSC_OPTIONS, "lsc"),),
    make_case=make_case,
    reference=reference,
    rtol=1e-6,  # IGC fuses the multiply-add
    atol=1e-6,
)
