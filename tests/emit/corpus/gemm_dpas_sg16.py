"""gemm_f16_dpas16: f16 GEMM with dpas on XeHPC, sub-group size 16, one 8x16 tile of C per sub-group."""

from .gemm_dpas_sg8 import dpas_gemm

KERNEL = dpas_gemm("gemm_dpas_sg16", "gemm_f16_dpas16", "pvc", tile_n=16, n=32)
