"""gemm_f16_dpas: f16 GEMM with dpas on XeHPG, sub-group size 8, one 8x8 tile of C per sub-group."""

from __future__ import annotations

import numpy as np

from .spec import DPAS_OPTIONS, Argument, Case, CorpusKernel, Launch, Variant

M, N, K = 16, 24, 32  # M multiple of 8 (tile rows), N of 8 (tile columns), K of 16 (dpas depth)
TILE_N = 8


def make_case(rng: np.random.Generator) -> Case:
    return Case(
        launch=Launch(global_size=(N, M // 8, 1), local_size=(TILE_N, 1, 1)),
        values={
            "a": rng.standard_normal((M, K)).astype(np.float16),
            "b": rng.standard_normal((K, N)).astype(np.float16),
            "c": np.zeros((M, N), dtype=np.float32),
            "n": np.int32(N),
            "k": np.int32(K),
        },
    )


def reference(values) -> dict[str, np.ndarray]:
    return {"c": (values["a"].astype(np.float64) @ values["b"].astype(np.float64)).astype(np.float32)}


KERNEL = CorpusKernel(
    name="gemm_dpas_sg8",
    kernel_name="gemm_f16_dpas",
    arguments=(
        Argument("a", "buffer", "float16", "in"),
        Argument("b", "buffer", "float16", "in"),
        Argument("c", "buffer", "float32", "out"),
        Argument("n", "scalar", "int32"),
        Argument("k", "scalar", "int32"),
    ),
    variants=(Variant("dg2", DPAS_OPTIONS, "dpas"),),
    make_case=make_case,
    reference=reference,
    sub_group_size=8,
    required_mnemonics=("dpas",),
    rtol=1e-4,  # f16 products are exact in f32; the hardware's summation order is its own
    atol=1e-4,
)
