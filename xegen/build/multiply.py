"""The multiply of one K block: the calls, over the layouts of `xegen.plan.multiply`.

- dpas (XeHPG/XeHPC): A rows of 8 dwords per K step (`dpas_a_layout`), B in VNNI form per K step
  and block of exec-size columns, C in row-major blocks of repeat-count x exec-size; one dpas per
  (K step, row block, column block).
- dpasw (XeHPG): the same, but the thread holds half of A's rows and each C block pairs rows of
  the two halves (`xegen/plan/dpasw.py`); one dpasw per (K step, half row block, column block).
- mad: C[m][n0:n0+simd] += A[m][k] (broadcast) * B[k][n0:n0+simd]; A and B row-major.  bf16 and
  int8 operands are widened to f32/s32 when reordered (f16 stays: mixed-mode mad).
- dp4a (int8 without dpas): C[m][n0:n0+simd] += dot4(A[m][4s:4s+4], B[4s:4s+4][n]), B in VNNI
  form over the whole tile width.
"""

from __future__ import annotations

from ..ir import Call, Dp4a, Dpas, Func, Mad, Stmt, Var, ptr
from ..ir.types import F32, S32
from ..plan.config import Config, k_step
from ..plan.gemm import Gemm
from ..plan.multiply import MultiplyLayouts
from ..plan.tiles import TileLayout


def multiply(config: Config, gemm: Gemm, layouts: MultiplyLayouts, exec_size: int) -> list[Stmt]:
    """The multiply-add calls for one K block: C += A x B."""
    a, b, c = layouts.a, layouts.b, layouts.c
    acc = gemm.acc_type
    calls: list[Stmt] = []
    func: Func
    if config.systolic:
        step, rows = k_step(config, gemm), config.dpas_rows
        shared = config.fma == "dpasw"
        a_rows = rows // 2 if shared else rows  # rows of A each instruction reads from the thread
        for s in range(0, config.k_block, step):
            for m0 in range(0, a.rows, a_rows):
                for n0 in range(0, config.n_tile, exec_size):
                    func = Dpas(exec_size, 8, rows, acc, b.type, a.type, dpasw=shared)
                    target = c.pointer(m0, n0)  # dpasw: the block whose first rows are m0 ..
                    calls.append(Call(func, (target, target, b.pointer(s, n0), a.pointer(m0, s))))
        return calls
    simd = config.simd
    if config.fma == "dp4a":
        for s in range(0, config.k_block, 4):
            for m in range(config.m_tile):
                for n0 in range(0, config.n_tile, simd):
                    func = Dp4a(simd, S32, b.type, a.type, 1, 0)
                    target = c.pointer(m, n0)
                    calls.append(Call(func, (target, target, b.pointer(s, n0), a.pointer(m, s))))
        return calls
    for kk in range(config.k_block):
        for m in range(config.m_tile):
            for n0 in range(0, config.n_tile, simd):
                func = Mad(simd, acc, b.type, a.type, 1, 0)
                target = c.pointer(m, n0)
                calls.append(Call(func, (target, target, b.pointer(kk, n0), a.pointer(m, kk))))
    return calls


def reduce_columns(config: Config, gemm: Gemm, b: TileLayout, sums: TileLayout, one: Var) -> list[Stmt]:
    """sums[n] += B[k][n] for every k of the block (the bias gradient).  With dpas, one dpas of
    repeat count 1 per K step and column block multiplies a row of ones (`plan.kernel.ONES`
    elements of B's type at `one`) by B as it already lies in VNNI form: a K step of simd
    columns in one instruction instead of a mad per K row.  Otherwise mads by a constant 1."""
    func: Func
    if config.systolic:
        step = k_step(config, gemm)
        func = Dpas(config.simd, 8, 1, F32, b.type, b.type)
        return [Call(func, (sums.pointer(0, n0), sums.pointer(0, n0), b.pointer(s, n0), ptr(one, 0)))
                for s in range(0, config.k_block, step) for n0 in range(0, config.n_tile, config.simd)]
    simd = config.simd
    calls: list[Stmt] = []
    for piece in b.pieces:
        for i in range(piece.rows.count):
            k = piece.rows.start + i * piece.rows.step
            for first in range(0, piece.cols.count, simd):
                count = min(simd, piece.cols.count - first)
                n = piece.cols.start + first * piece.cols.step
                func = Mad(count, F32, b.type, F32, piece.col_stride, 0)
                target = sums.pointer(0, n)
                calls.append(Call(func, (target, target, b.pointer(k, n), ptr(one, 0))))
    return calls

