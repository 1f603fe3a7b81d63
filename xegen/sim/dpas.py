"""dpas: the systolic matrix multiply-add, dst = src0 + A * B per thread.

For exec size N (8 on XeHPG, 16 on XeHPC), repeat count RC and systolic depth D (8):
- src1 holds B, VNNI packed: dword (s, n) at byte 4*(s*N + n) carries OPS consecutive K
  values of column n (k = s*OPS .. s*OPS + OPS - 1, lowest bits first);
- src2 holds A: row r is D dwords at byte offset 32*r, dword s carrying k = s*OPS ..;
- dst and src0 are RC rows of N elements, row r at element offset r*N (src0 null = 0).
OPS = 32 / element bits (hf, bf: 2; int8: 4; int4: 8; int2: 16; tf32: 1).

Integer products are exact (int64, wrapped to the destination); float products are
accumulated in float64 and rounded once to the destination type, so results may differ
from the hardware's internal order of rounding by an ulp or so (stated in docs/sim.md).
The exec mask selects columns.

dpasw (XeHPG's EU fusion, IGC's vISA DPASW documentation): the threads of a work-group run
in fused pairs, threads 2i and 2i+1 (EU0 and EU1).  Both compute with one shared A: its
first ceil(RC/2) rows come from EU0's src2 registers, the rest from EU1's (starting at its
own src2), while B, src0 and dst stay each thread's own.  Both threads of a pair must
execute the instruction together, and work-groups must have an even number of threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..emit.instruction import Instruction
from . import datatypes as dt
from .compile_alu import exec_mask_function
from .errors import SimulationError
from .operands import convert, registers

if TYPE_CHECKING:
    from .machine import Machine

ELEMENT_BITS = {"hf": 16, "bf": 16, "tf32": 32, "bf8": 8, "b": 8, "ub": 8, "s4": 4, "u4": 4, "s2": 2, "u2": 2}
FLOATS = ("hf", "bf", "tf32", "bf8")


def unpack(dwords: np.ndarray, type_name: str) -> np.ndarray:
    """(..., n) uint32 -> (..., n, OPS) values (float64 or int64)."""
    bits = ELEMENT_BITS[type_name]
    ops = 32 // bits
    if type_name == "hf":
        return dwords.view(np.float16).reshape(*dwords.shape, 2).astype(np.float64)
    if type_name == "bf":
        halves = dwords.view(np.uint16).reshape(*dwords.shape, 2)
        return dt.bf16_to_f32(halves).astype(np.float64)
    if type_name == "tf32":
        return dt.tf32_to_f32(dwords).astype(np.float64)[..., None]
    if type_name == "bf8":
        quarter = dwords.view(np.uint8).reshape(*dwords.shape, 4)
        return dt.bf8_to_f32(quarter).astype(np.float64)
    shifts = (np.arange(ops) * bits).astype(np.uint32)
    raw = ((dwords[..., None] >> shifts) & np.uint32((1 << bits) - 1)).astype(np.int64)
    if type_name in ("b", "s4", "s2"):
        raw = np.where(raw >= 1 << (bits - 1), raw - (1 << bits), raw)
    return raw


def fused_partner(group_of_thread: np.ndarray) -> np.ndarray:
    """Each thread's EU-fusion partner: threads 2i and 2i+1 of its work-group (the batch lays a
    group's threads out consecutively)."""
    counts = np.bincount(group_of_thread)
    if np.any(counts % 2):
        raise SimulationError("dpasw needs an even number of threads in every work-group (fused EU pairs)")
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    index = np.arange(group_of_thread.size)
    local = index - first[group_of_thread]
    return index + 1 - 2 * (local % 2)


def compile_dpas(inst: Instruction, m: Machine):
    files = m.files
    grf = files.grf
    n = inst.exec_size
    rows = inst.repeat_count
    depth = inst.systolic_depth
    dst_reg, src0, src1, src2 = registers(inst, 3)
    a_type, b_type = src2.type, src1.type
    if a_type not in ELEMENT_BITS or b_type not in ELEMENT_BITS:
        raise SimulationError(f"dpas with :{b_type} x :{a_type} operands is not simulated")
    float_math = a_type in FLOATS or b_type in FLOATS
    if float_math and a_type != b_type:
        raise SimulationError("dpas with different float source types is not simulated")
    ops_a, ops_b = 32 // ELEMENT_BITS[a_type], 32 // ELEMENT_BITS[b_type]
    if ops_a != ops_b:
        raise SimulationError(f"dpas mixing :{a_type} and :{b_type} precisions is not simulated")
    ops = ops_a
    dst_type = dt.TYPES[dst_reg.type]
    acc_type = dt.TYPES[src0.type] if src0.file != "null" else None
    row_bytes = grf.shape[1]
    threads = files.threads

    def block(reg, size):
        start = (
            reg.number * files.grf_bytes + reg.subreg * dt.TYPES[reg.type].size
            if reg.type in dt.TYPES
            else reg.number * files.grf_bytes
        )
        if start + size > row_bytes:
            raise SimulationError(f"dpas operand r{reg.number} runs past the register file")
        return start

    wide = inst.opcode == "dpasw"
    own_rows = -(-rows // 2) if wide else rows  # A rows read from this thread's src2
    partner = fused_partner(m.group_of_thread) if wide else None
    b_start = block(src1, depth * n * 4)
    a_start = block(src2, (own_rows - 1) * 32 + depth * 4)
    d_start = block(dst_reg, rows * n * dst_type.size)
    c_start = block(src0, rows * n * acc_type.size) if acc_type else None
    dwords = grf.view(np.uint32)
    mask_of = exec_mask_function(inst, m)
    if b_start % 4 or a_start % 4:
        raise SimulationError("dpas sources must be dword aligned")

    def a_rows() -> np.ndarray:
        """(threads, rows, depth) dwords of A: the thread's own src2, or for dpasw the pair's."""
        own = np.stack(
            [dwords[:, a_start // 4 + 8 * r : a_start // 4 + 8 * r + depth] for r in range(own_rows)], axis=1
        )
        if partner is None:
            return own
        participating = m.participating()
        if np.any(participating != participating[partner]):
            raise SimulationError("dpasw: the two threads of a fused pair must execute it together")
        first = np.minimum(np.arange(threads), partner)  # EU0 of each pair
        return np.concatenate([own[first], own[first + 1][:, : rows - own_rows]], axis=1)

    def run():
        b = dwords[:, b_start // 4 : b_start // 4 + depth * n].reshape(threads, depth, n)
        b_values = unpack(np.ascontiguousarray(b), b_type)  # (T, depth, n, ops)
        b_matrix = b_values.transpose(0, 1, 3, 2).reshape(threads, depth * ops, n)
        a_matrix = unpack(np.ascontiguousarray(a_rows()), a_type).reshape(threads, rows, depth * ops)
        product = np.matmul(a_matrix, b_matrix)  # (T, rows, n)
        if c_start is not None and acc_type is not None:
            c_raw = (
                grf[:, c_start : c_start + rows * n * acc_type.size].view(acc_type.storage).reshape(threads, rows, n)
            )
            product = product + dt.to_value(c_raw, acc_type).astype(product.dtype)
        if not float_math:
            product = product.astype(np.int64)
        mask = mask_of()
        result = convert(
            product.astype(np.float32) if float_math and dst_type.name != "df" else product, dst_type, False, m.mode
        )
        target = grf[:, d_start : d_start + rows * n * dst_type.size].view(dst_type.storage).reshape(threads, rows, n)
        if mask is None:
            target[...] = result
        else:
            np.copyto(target, result, where=np.broadcast_to(mask, (threads, n))[:, None, :])

    return run
