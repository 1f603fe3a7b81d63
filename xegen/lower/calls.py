"""Instruction selection for hardware calls other than memory messages: dpas, mad, dp4a,
reorder, barriers and fences.  Operand layouts are the ones `xegen/ir/funcs.py` defines.

- `mad`: one 3-source `mad` per legal chunk; the factor with an odd stride goes to src2 (which
  takes strides 1, 2, 4), a null src0 is a zero register (so -0 products become +0, as
  0 + b*c does); sources of another type than the destination are used directly where the
  hardware mixes them (f16/bf16 into f32) and converted first otherwise.
- `dp4a`: `dp4a` with :d/:ud sources for s8/u8 bytes.
- `dpas`: `dpas.8xR`; every operand must start on a GRF boundary, and the destination may be
  src0 exactly but overlap no other source (hard rules; GRF banks are `banks.py`'s).  An IR
  `dpasw` is the `dpasw.8xR` instruction (XeHPG): the same operands, but its src2 is this
  thread's ceil(R/2) rows of the fused pair's shared A.
- `reorder`: a 2-D block of conversions, one strided move per row (or per column, whichever
  takes fewer instructions, `emit.regions.move_instructions`: strides both operands can encode;
  one move when rows are contiguous).
- `barrier` = gateway signal + `sync.bar`; `signal` and `wait` are its halves.  The signal's
  header holds the thread count the hardware waits for (r0.2[31:24] on COMPUTE_WALKER
  platforms, the barrier id bits r0.2[30:24] on XeLP).
- `fence`: an LSC fence (or a legacy data-port fence on XeLP) whose reply is waited for.
"""

from __future__ import annotations

from ..emit import tables as T
from ..emit.instruction import Instruction, Reg
from ..emit.regions import move_instructions
from ..errors import UnsupportedError
from ..ir import funcs as F
from ..ir.types import F32, S32, U32, Type
from . import arith
from .builder import Builder, RowsOperand
from .convert import convert
from .values import TYPE_BYTES, VIRTUAL, Constant, Region, xe_type


class Calls:
    def __init__(self, lowering):
        self.x = lowering
        self.b: Builder = lowering.b
        self.hw = self.b.hw
        self.grf = self.b.grf

    # --- operands -----------------------------------------------------------------------------
    def _region(self, ptr, t: Type, lanes: int, stride: int, what: str) -> Region:
        reg, offset, size = self.x.messages.register(ptr, what)
        end = offset + ((lanes - 1) * stride + 1) * t.size
        if offset < 0 or end > size:
            raise UnsupportedError(f"the {what} operand '{ptr}' runs outside its GRF buffer")
        if offset % t.size:
            raise UnsupportedError(f"the {what} operand '{ptr}' is not aligned to {t}")
        return Region(reg, offset, t, lanes, stride if lanes > 1 else 1)

    def _source(self, ptr, t: Type, lanes: int, stride: int, what: str) -> Region:
        if stride == 0:
            return self._region(ptr, t, 1, 1, what).broadcast(lanes)
        return self._region(ptr, t, lanes, stride, what)

    def _as(self, value: Region, t: Type) -> Region:
        """`value` converted to `t` in a temporary (unless it already is `t`)."""
        if value.type == t:
            return value
        out = self.b.temp(t, value.lanes if value.stride else 1)
        convert(self.b, out, value if value.stride or value.lanes == 1 else Region(value.reg, value.offset, value.type))
        return out if value.stride or value.lanes == 1 else out.broadcast(value.lanes)

    def _zero(self, t: Type, lanes: int) -> Region:
        zero = self.b.temp(t)
        self.b.mov(zero, Constant(0.0 if t.is_float else 0, t))
        return zero.broadcast(lanes) if lanes > 1 else zero

    # --- mad / dp4a ---------------------------------------------------------------------------
    def mad(self, f: F.Mad, args: tuple) -> None:
        dst_ptr, src0_ptr, src1_ptr, src2_ptr = args
        n, t = f.exec_size, f.dst_type
        dst = self._region(dst_ptr, t, n, 1, "mad destination")
        src1 = self._source(src1_ptr, f.src1_type, n, f.src1_stride, "mad src1")
        src2 = self._source(src2_ptr, f.src2_type, n, f.src2_stride, "mad src2")
        if t.is_int:
            src0 = None if src0_ptr is None else self._region(src0_ptr, t, n, 1, "mad src0")
            product = self.b.temp(t, n)
            arith.multiply(self.b, product, self._as(src1, t), self._as(src2, t))
            if src0 is None:
                self.b.mov(dst, product)
            else:
                self.b.alu("add", dst, [src0, product])
            return
        src1, src2 = self._mixed(src1, t), self._mixed(src2, t)
        if not _fits_src1(src1) and _fits_src1(src2):
            src1, src2 = src2, src1
        if not _fits_src1(src1):
            src1 = self._dense(src1)
        if not _fits_src2(src2):
            src2 = self._dense(src2)
        src0 = self._zero(t, n) if src0_ptr is None else self._region(src0_ptr, t, n, 1, "mad src0")
        types = (xe_type(t), xe_type(t), _operand_type(src1), _operand_type(src2))
        self.b.alu("mad", dst, [src0, src1, src2], types=types)

    def _mixed(self, value: Region, t: Type) -> Region:
        """A float source the mad takes as it is (f32, or f16/bf16 into f32), else converted."""
        if value.type == t:
            return value
        if t == F32 and value.type.kind == "f16":
            return value
        if t == F32 and value.type.kind == "bf16" and T.has_bfloat16(self.hw):
            return value
        return self._as(value, t)

    def _dense(self, value: Region) -> Region:
        out = self.b.temp(value.type, value.lanes)
        self.b.alu("mov", out, [value], types=(_operand_type(value), _operand_type(value)))
        return out

    def dp4a(self, f: F.Dp4a, args: tuple) -> None:
        dst_ptr, src0_ptr, src1_ptr, src2_ptr = args
        n, t = f.exec_size, f.dst_type
        dword = {"s8": S32, "u8": U32}
        dst = self._region(dst_ptr, t, n, 1, "dp4a destination")
        src1 = self._source(src1_ptr, dword[f.src1_type.kind], n, f.src1_stride, "dp4a src1")
        src2 = self._source(src2_ptr, dword[f.src2_type.kind], n, f.src2_stride, "dp4a src2")
        if not _fits_src1(src1) and _fits_src1(src2):
            src1, src2 = src2, src1
        if not _fits_src1(src1):
            src1 = self._dense(src1)
        if not _fits_src2(src2):
            src2 = self._dense(src2)
        src0 = self._zero(t, n) if src0_ptr is None else self._region(src0_ptr, t, n, 1, "dp4a src0")
        self.b.alu("dp4a", dst, [src0, src1, src2])

    # --- dpas ---------------------------------------------------------------------------------
    def dpas(self, f: F.Dpas, args: tuple) -> None:
        if not self.hw.has_dpas:
            raise UnsupportedError(f"{self.hw.display_name} has no dpas")
        if f.dpasw and not self.hw.has_dpasw:
            raise UnsupportedError(f"{self.hw.display_name} has no dpasw (XeHPG's fused-pair dpas)")
        if f.exec_size != self.hw.dpas_exec_size:
            raise UnsupportedError(
                f"dpas on {self.hw.display_name} runs {self.hw.dpas_exec_size} columns, not {f.exec_size}"
            )
        dst_ptr, src0_ptr, src1_ptr, src2_ptr = args
        rows, columns, depth = f.rcount, f.exec_size, f.sdepth
        operands = []
        spans: list[tuple[int, int, int] | None] = []  # (register id, first byte, end byte) of dst, src0-2
        for ptr, t, size, what in (
            (dst_ptr, f.dst_type, rows * columns * f.dst_type.size, "dpas destination"),
            (src0_ptr, f.dst_type, rows * columns * f.dst_type.size, "dpas src0"),
            (src1_ptr, f.src1_type, depth * columns * 4, "dpas src1"),
            (src2_ptr, f.src2_type, f.own_rows * depth * 4, "dpas src2"),
        ):
            if ptr is None:
                operands.append(Reg("null", 0, 0, _dpas_type(t)))
                spans.append(None)
                continue
            reg, offset, limit = self.x.messages.register(ptr, what)
            if offset % self.grf:
                raise UnsupportedError(f"the {what} operand '{ptr}' must start on a GRF boundary")
            if offset + size > limit:
                raise UnsupportedError(f"the {what} operand '{ptr}' runs outside its GRF buffer")
            xe = _dpas_type(t)
            operands.append(Reg(VIRTUAL, reg.id, offset // _bytes(xe), xe))
            spans.append((reg.id, offset, offset + size))
        _check_dpas_overlap(spans, args)
        dst, src0, src1, src2 = operands
        opcode = "dpasw" if f.dpasw else "dpas"
        self.b.emit(
            Instruction(
                opcode,
                columns,
                dst=dst.stride(1),
                srcs=(src0.region(1, None, 0), src1.region(1, None, 0), src2.stride(1)),
                no_mask=True,
                systolic_depth=depth,
                repeat_count=rows,
            )
        )

    # --- reorder ------------------------------------------------------------------------------
    def reorder(self, f: F.Reorder, args: tuple) -> None:
        dst_ptr, src_ptr = args
        rows, cols = f.rows, f.cols
        src_reg, src_offset, src_size = self.x.messages.register(src_ptr, "reorder source")
        dst_reg, dst_offset, dst_size = self.x.messages.register(dst_ptr, "reorder destination")
        for offset, size, t, rs, cs, what in (
            (src_offset, src_size, f.src_type, f.src_row_stride, f.src_col_stride, "source"),
            (dst_offset, dst_size, f.dst_type, f.dst_row_stride, f.dst_col_stride, "destination"),
        ):
            last = offset + ((rows - 1) * rs + (cols - 1) * cs) * t.size
            first = offset + min(0, (rows - 1) * rs) * t.size + min(0, (cols - 1) * cs) * t.size
            if first < 0 or last + t.size > size or rs < 0 or cs < 0:
                raise UnsupportedError(f"the reorder {what} runs outside its GRF buffer")

        def line(count, d_start, d_stride, s_start, s_stride):
            dst = Region(
                dst_reg, dst_offset + d_start * f.dst_type.size, f.dst_type, count, d_stride if count > 1 else 1
            )
            src = Region(
                src_reg, src_offset + s_start * f.src_type.size, f.src_type, count, s_stride if count > 1 else 1
            )
            if s_stride == 0 and count > 1:
                src = Region(src_reg, src_offset + s_start * f.src_type.size, f.src_type).broadcast(count)
            convert(self.b, dst, src, saturate=f.saturate)

        if rows == 1 or (f.dst_row_stride == cols * f.dst_col_stride and f.src_row_stride == cols * f.src_col_stride):
            line(rows * cols, 0, f.dst_col_stride, 0, f.src_col_stride)
            return
        if self._reorder_as_rows(f, dst_reg, dst_offset, src_reg, src_offset):
            return
        sizes = (f.dst_type.size, f.src_type.size)
        by_rows = rows * move_instructions(cols, f.dst_col_stride, sizes[0], f.src_col_stride, sizes[1], self.grf)
        by_cols = cols * move_instructions(rows, f.dst_row_stride, sizes[0], f.src_row_stride, sizes[1], self.grf)
        if by_rows <= by_cols:
            for r in range(rows):
                line(cols, r * f.dst_row_stride, f.dst_col_stride, r * f.src_row_stride, f.src_col_stride)
        else:
            for c in range(cols):
                line(rows, c * f.dst_col_stride, f.dst_row_stride, c * f.src_col_stride, f.src_row_stride)

    def _reorder_as_rows(self, f: F.Reorder, dst_reg, dst_offset: int, src_reg, src_offset: int) -> bool:
        """A reorder into consecutive destination rows whose source is a 2-D region
        (`RowsOperand`, e.g. each value repeated across a row), as one line of instructions when
        the conversion is a single one: a move, or bf16's widening shift.  False if not."""
        to, frm = f.dst_type, f.src_type
        if f.dst_col_stride != 1 or f.dst_row_stride != f.cols or f.saturate:
            return False
        if frm.size < 2 or max(frm.bits, to.bits) > 32:
            return False
        if not RowsOperand.encodable(f.cols, f.src_row_stride, f.src_col_stride):
            return False
        dst = Region(dst_reg, dst_offset, to, f.rows * f.cols)
        if (frm.kind == "bf16") == (to.kind == "bf16"):  # a move converts (or copies bf16's bits)
            xe = "uw" if frm.kind == "bf16" else xe_type(frm)
            src = RowsOperand(src_reg, src_offset, xe, f.cols, f.src_row_stride, f.src_col_stride)
            self.b.alu("mov", dst, [src], types=("uw", "uw") if to.kind == "bf16" else None)
        elif frm.kind == "bf16" and to == F32:
            src = RowsOperand(src_reg, src_offset, "uw", f.cols, f.src_row_stride, f.src_col_stride)
            self.b.alu("shl", dst, [src, Constant(16, U32)], types=("ud", "uw", "ud"))
        else:
            return False
        return True

    # --- barriers and fences ------------------------------------------------------------------
    def signal(self) -> None:
        header = self.b.grfs(1, "barrier")
        r0 = self.x.r0
        dwords = self.grf // 4
        if self.hw.compute_walker:
            count = self.b.temp(U32)
            self.b.alu("mov", Region(header, 0, U32, dwords), [Constant(0, U32)])
            self.b.alu("and", count, [Region(r0, 8, U32), Constant(0xFF000000, U32)])
            self.b.alu("shr", Region(header, 8, U32), [count, Constant(8, U32)])
            self.b.alu("or", Region(header, 8, U32), [Region(header, 8, U32), count])
        else:
            self.b.alu(
                "and", Region(header, 0, U32, dwords), [Region(r0, 8, U32).broadcast(dwords), Constant(0x7F000000, U32)]
            )
        self.b.send("gtwy", None, header, None, 0x02000004, 0, 0, 1)

    def wait(self) -> None:
        self.b.emit(
            Instruction("sync", 1, srcs=(Reg("null", 0, 0, "ud").region(0, 1, 0),), no_mask=True, function="bar")
        )

    def fence(self, f: F.Fence) -> None:
        reply = self.b.grfs(1, "fence")
        r0 = self.x.r0
        if self.hw.has_lsc:
            # fence.slm.none.group, fence.ugm.none.gpu (scope [11:9]: 0 group, 3 gpu)
            sfid, desc = ("slm", 0x0210011F) if f.space == "slm" else ("ugm", 0x0214071F)
        else:
            sfid, desc = "dc0", (0x0219E0FE if f.space == "slm" else 0x0219E000)
        self.b.send(sfid, reply, r0, None, desc, 0, 0, 1, filled=((0, self.grf),))
        # reading the reply makes the thread wait until the fence has completed
        self.b.alu("mov", Reg("null", 0, 0, "ud"), [Region(reply, 0, U32)], lanes=1, types=("ud", "ud"))


def _check_dpas_overlap(spans, args) -> None:
    """The systolic array writes its destination while it still reads the sources: the
    destination may be src0 exactly (accumulating in place) but overlap no other source."""
    dst = spans[0]
    if dst is None:
        return
    for index, (span, ptr) in enumerate(zip(spans[1:], args[1:], strict=True)):
        if span is None or span[0] != dst[0] or span[2] <= dst[1] or dst[2] <= span[1]:
            continue
        if index == 0 and span == dst:
            continue
        raise UnsupportedError(f"the dpas destination '{args[0]}' overlaps src{index} '{ptr}'")


def _bytes(xe: str) -> int:
    return TYPE_BYTES[xe]


def _dpas_type(t: Type) -> str:
    return xe_type(t)


def _operand_type(value: Region) -> str:
    return xe_type(value.type)


def _fits_src1(value: Region) -> bool:
    return value.lanes == 1 or value.stride in (0, 1)


def _fits_src2(value: Region) -> bool:
    return value.lanes == 1 or value.stride in (0, 1, 2, 4)
