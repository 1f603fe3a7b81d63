"""gemm_f16_dpas: f16 GEMM with dpas on XeHPG, sub-group size 8, one 8x8 tile of C per sub-group.

`dpas_gemm` also describes the sub-group-16 XeHPC variant (gemm_dpas_sg16)."""

from __future__ import annotations

import numpy as np

from .spec import DPAS_OPTIONS, Argument, Case, CorpusKernel, Launch, Variant

M, K = 16, 32  # M a multiple of 8 (tile rows), K of 16 (dpas depth)


def case_maker(n: int, tile_n: int):
    """Random inputs for an M x n x K problem, one tile_n-wide sub-group per C tile."""

    def make_case(rng: np.random.Generator) -> Case:
        return Case(
            launch=Launch(global_size=(n, M // 8, 1), local_size=(tile_n, 1, 1)),
            values={
                "a": rng.standard_normal((M, K)).astype(np.float16),
                "b": rng.standard_normal((K, n)).astype(np.float16),
                "c": np.zeros((M, n), dtype=np.float32),
                "n": np.int32(n),
                "k": np.int32(K),
            },
        )

    return make_case


def reference(values) -> dict[str, np.ndarray]:
    return {"c": (values["a"].astype(np.float64) @ values["b"].astype(np.float64)).astype(np.float32)}


def dpas_gemm(name: str, kernel_name: str, device: str, tile_n: int, n: int) -> CorpusKernel:
    return CorpusKernel(
        name=name,
        kernel_name=kernel_name,
        arguments=(
            Argument("a", "buffer", "float16", "in"),
            Argument("b", "buffer", "float16", "in"),
            Argument("c", "buffer", "float32", "out"),
            Argument("n", "scalar", "int32"),
            Argument("k", "scalar", "int32"),
        ),
        variants=(Variant(device, DPAS_OPTIONS, "dpas"),),
        make_case=case_maker(n, tile_n),
        reference=reference,
        sub_group_size=tile_n,
        required_mnemonics=("dpas",),
        rtol=1e-4,  # f16 products are exact in f32; the hardware's summation order is its own
        atol=1e-4,
    )


KERNEL = dpas_gemm("gemm_dpas_sg8", "gemm_f16_dpas", "dg2", tile_n=8, n=24)
