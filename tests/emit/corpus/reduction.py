"""reduce_sum: per-group sums of 64 floats through local memory and barriers."""

from __future__ import annotations

import numpy as np

from .spec import DEVICES, LSC_OPTIONS, Argument, Case, CorpusKernel, Launch, Variant

GROUP = 64  # must match GROUP in reduction.cl (reqd_work_group_size)


def make_case(rng: np.random.Generator) -> Case:
    n = 1000
    groups = -(-n // GROUP)
    return Case(
        launch=Launch(global_size=(groups * GROUP, 1, 1), local_size=(GROUP, 1, 1)),
        values={
            "in": rng.standard_normal(n).astype(np.float32),
            "partial": np.zeros(groups, dtype=np.float32),
            "n": np.int32(n),
        },
    )


def reference(values) -> dict[str, np.ndarray]:
    data = values["in"]
    groups = values["partial"].shape[0]
    padded = np.zeros(groups * GROUP, dtype=np.float64)
    padded[: data.shape[0]] = data
    return {"partial": padded.reshape(groups, GROUP).sum(axis=1).astype(np.float32)}


KERNEL = CorpusKernel(
    name="reduction",
    kernel_name="reduce_sum",
    arguments=(
        Argument("in", "buffer", "float32", "in"),
        Argument("partial", "buffer", "float32", "out"),
        Argument("n", "scalar", "int32"),
    ),
    variants=tuple(Variant(d) for d in DEVICES) + (Variant("dg2", LSC_OPTIONS, "lsc"),),
    make_case=make_case,
    reference=reference,
    rtol=1e-5,  # tree order of float additions differs from numpy's
    atol=1e-5,
)
