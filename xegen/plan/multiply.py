"""The register layouts the multiply of one K block reads (`xegen.build.multiply` emits the calls).

- dpas (XeHPG/XeHPC): A rows of 8 dwords per K step (`dpas_a_layout`), B in VNNI form per K step
  and block of exec-size columns, C in row-major blocks of repeat-count x exec-size; one dpas per
  (K step, row block, column block).
- dpasw (XeHPG): the same, but the thread holds half of A's rows and each C block pairs rows of
  the two halves (`dpasw.py`); one dpasw per (K step, half row block, column block).
- mad: C[m][n0:n0+simd] += A[m][k] (broadcast) * B[k][n0:n0+simd]; A and B row-major.  bf16 and
  int8 operands are widened to f32/s32 when reordered (f16 stays: mixed-mode mad).
- dp4a (int8 without dpas): C[m][n0:n0+simd] += dot4(A[m][4s:4s+4], B[4s:4s+4][n]), B in VNNI
  form over the whole tile width.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Var
from ..ir.types import F16, Type
from .config import Config, k_step
from .dpasw import paired_c_layout
from .gemm import Gemm
from .tiles import TileLayout, blocked_c_layout, dense_layout, dpas_a_layout, vnni_layout


@dataclass(frozen=True)
class MultiplyLayouts:
    a: TileLayout  # a_rows x k_block (m_tile, or half of it with dpasw)
    b: TileLayout  # k_block x n_tile
    c: TileLayout  # m_tile x n_tile accumulators


def operand_type(config: Config, memory: Type, acc: Type) -> Type:
    """The type an operand has in the registers the multiply reads."""
    if config.systolic or config.fma == "dp4a":
        return memory
    return F16 if memory == F16 else acc


def multiply_layouts(
    config: Config, gemm: Gemm, a_buffer: Var, b_buffer: Var, c_buffer: Var, exec_size: int
) -> MultiplyLayouts:
    acc = gemm.acc_type
    m, n, k = config.m_tile, config.n_tile, config.k_block
    a = operand_layout(config, gemm, "a", a_buffer, config.a_rows, k, operand_type(config, gemm.a.type, acc))
    b = operand_layout(config, gemm, "b", b_buffer, k, n, operand_type(config, gemm.b.type, acc))
    if config.fma == "dpasw":
        return MultiplyLayouts(a, b, paired_c_layout(c_buffer, acc, m, n, config.dpas_rows, exec_size))
    if config.fma == "dpas":
        return MultiplyLayouts(a, b, blocked_c_layout(c_buffer, acc, m, n, config.dpas_rows, exec_size))
    return MultiplyLayouts(a, b, dense_layout(c_buffer, acc, m, n))


def operand_layout(
    config: Config, gemm: Gemm, operand: str, buffer: Var, rows: int, cols: int, type: Type
) -> TileLayout:
    """How the multiply reads a `rows x cols` tile of operand "a" (M x K) or "b" (K x N): the
    thread's own tile, or, for dpas, a whole group tile in SLM laid out the same way, so that
    every thread's tile in it is a contiguous dpas-ready block."""
    if config.systolic:
        step = k_step(config, gemm)
        if operand == "a":
            return dpas_a_layout(buffer, type, rows, cols, step)
        return vnni_layout(buffer, type, rows, cols, step, config.simd)
    if config.fma == "dp4a" and operand == "b":
        return vnni_layout(buffer, type, rows, cols, rows, cols)
    return dense_layout(buffer, type, rows, cols)
