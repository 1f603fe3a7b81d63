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

from ..ir import Call, Dp4a, Dpas, Func, Mad, Stmt, const, store
from ..ir.expr import Broadcast, Expr, IntImm, Ptr
from ..ir.types import S32, Type
from ..plan.config import Config, k_step
from ..plan.gemm import Gemm
from ..plan.kernel import SUM_ROW_BYTES
from ..plan.multiply import MultiplyLayouts
from ..plan.tiles import TileLayout
from .messages import repeated_byte


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


def reduce_columns(config: Config, gemm: Gemm, b: TileLayout, sums: TileLayout, row: Ptr, row_type: Type) -> list[Stmt]:
    """sums[n] += f * B[k][n] for every k of the block, where `row` points to the factor f as
    `sum_row` says: BWD_WB's bias gradient (f = 1) or forward's source zero-point compensation
    (f = the zero point).  With dpas, one dpas of repeat count 1 per K step and column block
    multiplies the row (`row_type` values) by B as it already lies in VNNI form: a K step of
    simd columns in one instruction.  With dp4a, one dp4a per 4 K rows and column block by a
    dword of four factors; with mad, a mad per K row by the factor."""
    func: Func
    if config.systolic:
        step = k_step(config, gemm)
        func = Dpas(config.simd, 8, 1, sums.type, b.type, row_type)
        return [
            Call(func, (sums.pointer(0, n0), sums.pointer(0, n0), b.pointer(s, n0), row))
            for s in range(0, config.k_block, step)
            for n0 in range(0, config.n_tile, config.simd)
        ]
    simd = config.simd
    if config.fma == "dp4a":
        func = Dp4a(simd, sums.type, b.type, row_type, 1, 0)
        return [
            Call(func, (sums.pointer(0, n0), sums.pointer(0, n0), b.pointer(s, n0), row))
            for s in range(0, config.k_block, 4)
            for n0 in range(0, config.n_tile, simd)
        ]
    calls: list[Stmt] = []
    for piece in b.pieces:
        for i in range(piece.rows.count):
            k = piece.rows.start + i * piece.rows.step
            for first in range(0, piece.cols.count, simd):
                count = min(simd, piece.cols.count - first)
                n = piece.cols.start + first * piece.cols.step
                func = Mad(count, sums.type, b.type, sums.type, piece.col_stride, 0)
                target = sums.pointer(0, n)
                calls.append(Call(func, (target, target, b.pointer(k, n), row)))
    return calls


def sum_row(row: Ptr, config: Config, element: Type, factor: int) -> list[Stmt]:
    """Stores filling the registers at `row` with what `reduce_columns` multiplies B by,
    `factor` as `element` values: for dpas a row of `SUM_ROW_BYTES` (BWD_WB's 16-bit ones, or
    the src type's zero point forward), for dp4a a dword of four, for mad one value."""
    value: Expr
    if element.size == 1:  # int8 dpas or dp4a: the factor in every byte of the dwords
        value = Broadcast(repeated_byte(factor), SUM_ROW_BYTES // 4)
    elif element.is_float:
        value = const(float(factor), element)
    else:
        value = IntImm(factor)
    if config.systolic and element.size > 1:
        value = Broadcast(value, SUM_ROW_BYTES // element.size)
    return [store(row.buffer, row.offset, value)]
