"""Operands as numpy: register regions become strided views of every thread's register file.

A direct source `r12.2<8;4,2>:d` of an exec-size-16 instruction is a view of shape
(threads, 4, 4) with byte strides (row, 8*4, 2*4) starting at byte 12*GRF + 8, reshaped to
(threads, 16); a scalar `<0;1,0>` is a (threads, 1) view that broadcasts.  The views are
built once per batch, so reading an operand costs almost nothing.  Indirect operands
(`r[a0.2, 16]`) gather their bytes per thread from the a0 values at run time.

Readers return values ready for the ALU (bf widened to float32, source modifiers applied);
a `Destination` converts results to its type (rounding, saturation) and stores them under
an execution mask.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..emit.instruction import Imm, Instruction, Operand, Reg
from . import datatypes as dt
from . import fpround
from .errors import SimulationError
from .state import RegisterFiles

Reader = Callable[[], np.ndarray]


def registers(inst: Instruction, sources: int) -> list[Reg]:
    """The destination and the `sources` sources of a send or dpas, which are registers (or null)
    in every such instruction the decoder reads."""
    operands: tuple[Operand | None, ...] = (inst.dst, *inst.srcs)
    found = [operand for operand in operands if type(operand) is Reg]
    if len(operands) != sources + 1 or len(found) != sources + 1:
        raise SimulationError(f"{inst.opcode} needs a destination register and {sources} register sources")
    return found


def region_elements(exec_size: int, vstride: int, width: int, hstride: int) -> np.ndarray:
    """Element offsets (in elements) of a <v;w,h> region."""
    i = np.arange(exec_size)
    return (i // width) * vstride + (i % width) * hstride


def strided_view(
    base: np.ndarray, offset: int, dtype: np.dtype, exec_size: int, vstride: int, width: int, hstride: int, where: str
) -> tuple[np.ndarray, bool]:
    """A view of region <v;w,h> at byte `offset` of every row of `base`; the flag says whether
    the view must be reshaped (copied) to (threads, exec_size)."""
    threads, row = base.shape
    size = dtype.itemsize
    last = offset + (int(region_elements(exec_size, vstride, width, hstride).max()) + 1) * size
    if offset < 0 or last > row:
        raise SimulationError(f"{where} reaches byte {last} of a {row}-byte register file")
    if offset % size:
        raise SimulationError(f"{where} is not aligned to its {size}-byte type")
    if exec_size == 1 or (vstride == 0 and hstride == 0) or (width == 1 and vstride == 0):
        return np.ndarray((threads, 1), dtype, buffer=base, offset=offset, strides=(row, size)), False
    if width >= exec_size or vstride == width * hstride:
        return np.ndarray((threads, exec_size), dtype, buffer=base, offset=offset, strides=(row, hstride * size)), False
    rows = exec_size // width
    return np.ndarray(
        (threads, rows, width), dtype, buffer=base, offset=offset, strides=(row, vstride * size, hstride * size)
    ), True


def _apply_modifiers(reader: Reader, reg: Reg, etype: dt.ElementType, bitwise: bool) -> Reader:
    if bitwise:
        if reg.neg:
            return lambda: np.invert(reader())
        return reader
    if (reg.neg or reg.abs) and not etype.is_float and etype.size < 8:
        # Integer modifiers act on the value, not at the source's width: -x:ud is -x, not 2^32 - x
        # (IGC computes (ulong)a - (ulong)b as `add r:q a:ud -b:ud`), and -(-2^31):d is 2^31 (so
        # `add.sat` saturates).  Results still wrap at the destination's width.
        narrow = reader

        def reader():
            return narrow().astype(np.int64)

    if reg.abs and reg.neg:
        return lambda: np.negative(np.abs(reader()))
    if reg.abs:
        return lambda: np.abs(reader())
    if reg.neg:
        return lambda: np.negative(reader())
    return reader


def source(
    op,
    exec_size: int,
    files: RegisterFiles,
    *,
    region: tuple[int, int, int] | None = None,
    bitwise: bool = False,
    where: str = "src",
) -> tuple[Reader, dt.ElementType]:
    """A reader of operand `op` for `exec_size` channels, and the operand's element type."""
    if isinstance(op, Imm):
        values, type_name = dt.immediate_values(op.value, op.type, exec_size)
        etype = dt.TYPES[type_name]
        values = dt.to_value(values, etype)
        if op.type in ("uv", "v", "vf"):
            constant = values.reshape(1, exec_size)
        else:
            constant = values.reshape(1, 1)
        constant.setflags(write=False)
        return (lambda: constant), etype
    reg: Reg = op
    etype = dt.TYPES[reg.type]
    if reg.file == "null":
        zeros = np.zeros((1, 1), dtype=etype.storage)
        return (lambda: zeros), etype
    if reg.indirect:  # a None vertical stride is the VxH form
        indirect_region = region if region is not None else (reg.vstride, reg.width or 1, reg.hstride or 0)
        reader = _indirect_reader(reg, exec_size, files, etype, indirect_region, where)
    else:
        vstride, width, hstride = region if region is not None else (reg.vstride or 0, reg.width or 1, reg.hstride or 0)
        base, _ = files.file(reg.file)
        offset = files.register_base(reg.file, reg.number) + reg.subreg * etype.size
        view, reshape = strided_view(base, offset, etype.storage, exec_size, vstride, width, hstride, where=where)
        threads = files.threads

        def bits():  # reshaped at each read: a reshape of a strided view may be a copy
            return view.reshape(threads, exec_size) if reshape else view

        if etype.name in ("bf", "tf32", "bf8"):

            def reader():
                return dt.to_value(bits(), etype)
        else:
            reader = bits
    return _apply_modifiers(reader, reg, etype, bitwise), etype


def indirect_addresses(reg: Reg, exec_size: int, size: int, region: tuple) -> Callable[[np.ndarray], np.ndarray]:
    """A function of a0 (threads, 16 words) giving the GRF byte address of every element of the
    indirect operand `reg` (r[a0.n, off]) with region `region`: (threads, exec_size) int64.
    A `None` vertical stride is the VxH form: row k of the region takes its address from
    a0.(n + k).  Destinations pass (exec_size * h, exec_size, h)."""
    v, w, h = region
    i = np.arange(exec_size)
    if v is None:
        subregs = reg.addr_subreg + i // w
        if subregs.max() >= 16:
            raise SimulationError(f"a VxH region of {exec_size // w} rows from a0.{reg.addr_subreg} runs past a0.15")
        within = (i % w) * h * size + reg.addr_offset
        return lambda a0: a0[:, subregs].astype(np.int64) + within
    offsets = region_elements(exec_size, v, w, h) * size + reg.addr_offset
    first = slice(reg.addr_subreg, reg.addr_subreg + 1)
    return lambda a0: a0[:, first].astype(np.int64) + offsets


def _indirect_reader(
    reg: Reg, exec_size: int, files: RegisterFiles, etype: dt.ElementType, region: tuple, where: str
) -> Reader:
    """r[a0.n, off]: per-thread byte addresses from a0 words."""
    size = etype.size
    threads = files.threads
    row = files.grf.shape[1]
    flat = files.grf.reshape(-1)
    a0 = files.a0.view(np.uint16)
    row_base = (np.arange(threads, dtype=np.int64) * row)[:, None]
    try:
        addresses = indirect_addresses(reg, exec_size, size, region)
    except SimulationError as error:
        raise SimulationError(f"{where}: {error}") from None
    byte = np.arange(size)

    def read():
        addr = addresses(a0)
        if addr.min() < 0 or addr.max() + size > row:
            raise SimulationError(f"{where}: indirect address {int(addr.max())} outside the register file")
        index = (row_base + addr)[..., None] + byte
        return dt.to_value(flat[index].view(etype.storage).reshape(threads, exec_size), etype)

    return read


class Destination:
    """Stores results into a destination region under an execution mask."""

    def __init__(self, reg: Reg, exec_size: int, files: RegisterFiles, *, saturate: bool = False, where: str = "dst"):
        self.reg = reg
        self.etype = dt.TYPES[reg.type]
        self.exec_size = exec_size
        self.saturate = saturate
        self.files = files
        self.is_null = reg.file == "null"
        size = self.etype.size
        hstride = reg.hstride or 1
        self.view = None
        if reg.indirect:
            self._indirect = _indirect_writer(reg, exec_size, files, self.etype, hstride, where)
        elif not self.is_null:
            base, _ = files.file(reg.file, for_write=True)
            offset = files.register_base(reg.file, reg.number) + reg.subreg * size
            self.view, _ = strided_view(
                base,
                offset,
                self.etype.storage,
                exec_size,
                hstride * exec_size if exec_size > 1 else 0,
                exec_size,
                hstride,
                where=where,
            )

    def convert(self, values: np.ndarray, mode: fpround.FloatMode) -> np.ndarray:
        return convert(values, self.etype, self.saturate, mode)

    def store(self, values: np.ndarray, mask: np.ndarray | None, mode: fpround.FloatMode) -> None:
        if self.is_null:
            return
        data = convert(values, self.etype, self.saturate, mode)
        if self.view is None:
            self._indirect(data, mask)
        elif mask is None:
            self.view[...] = data
        else:
            np.copyto(self.view, data, where=mask)

    def store_raw(self, data: np.ndarray, mask: np.ndarray | None) -> None:
        """Store values already in the destination's storage dtype."""
        if self.is_null:
            return
        if self.view is None:
            self._indirect(data, mask)
        elif mask is None:
            self.view[...] = data
        else:
            np.copyto(self.view, data, where=mask)


def _indirect_writer(reg: Reg, exec_size: int, files: RegisterFiles, etype: dt.ElementType, hstride: int, where: str):
    size = etype.size
    threads = files.threads
    row = files.grf.shape[1]
    flat = files.grf.reshape(-1)
    a0 = files.a0.view(np.uint16)
    row_base = (np.arange(threads, dtype=np.int64) * row)[:, None]
    addresses = indirect_addresses(reg, exec_size, size, (exec_size * hstride, exec_size, hstride))
    byte = np.arange(size)

    def write(data: np.ndarray, mask: np.ndarray | None) -> None:
        addr = addresses(a0)
        if addr.min() < 0 or addr.max() + size > row:
            raise SimulationError(f"{where}: indirect address {int(addr.max())} outside the register file")
        full = np.broadcast_to(np.asarray(data, dtype=etype.storage), (threads, exec_size))
        enabled = np.ones((threads, exec_size), bool) if mask is None else np.broadcast_to(mask, (threads, exec_size))
        index = (row_base + addr)[enabled][:, None] + byte
        flat[index] = np.ascontiguousarray(full[enabled]).view(np.uint8).reshape(-1, size)

    return write


# --- value conversion -------------------------------------------------------------------------


def convert(values: np.ndarray, to: dt.ElementType, saturate: bool, mode: fpround.FloatMode) -> np.ndarray:
    """Computed values -> storage of type `to` (see the module docstring of `datatypes`)."""
    values = np.asarray(values)
    src = values.dtype
    if src == to.storage and not saturate and not to.is_float:
        return values
    kind = src.kind
    with np.errstate(over="ignore", invalid="ignore"):
        if to.is_float:
            return _to_float(values, to, saturate, mode)
        if kind == "f":
            return float_to_int(values, to)
        if kind == "b":
            return values.astype(to.storage)
        if saturate:
            return saturate_int(values, to)
        return values.astype(to.storage)


def _to_float(values: np.ndarray, to: dt.ElementType, saturate: bool, mode: fpround.FloatMode) -> np.ndarray:
    src = values.dtype
    target = np.dtype(np.float32) if to.name in ("bf", "tf32", "bf8") else to.storage
    if src.kind == "f":
        if src == target or src.itemsize < target.itemsize:
            result = values.astype(target, copy=False)
        elif mode.rounding == fpround.RNE:
            result = values.astype(target)
        else:
            result = fpround.from_float64(values, target, mode.rounding)
    elif src.kind == "b":
        result = values.astype(target)
    elif mode.rounding == fpround.RNE and src.itemsize <= 4 and target != np.float16:
        result = values.astype(target)
    else:
        result = fpround.from_int(values, target, mode.rounding)
    if not mode.keeps(target) and target.kind == "f":
        result = fpround.flush_denormals(result)
    if saturate:
        result = np.where(np.isnan(result), 0, np.clip(result, 0, 1)).astype(target)
    if to.name == "bf":
        return dt.f32_to_bf16(result)
    if to.name == "tf32":
        return result.view(np.uint32) & np.uint32(0xFFFFE000)
    if to.name == "bf8":
        return (result.astype(np.float16).view(np.uint16) >> np.uint16(8)).astype(np.uint8)
    return result


def float_to_int(values: np.ndarray, to: dt.ElementType) -> np.ndarray:
    """Truncate toward zero, clamp to the range of `to`, NaN -> 0."""
    x = np.trunc(np.nan_to_num(values.astype(np.float64), nan=0.0))
    if to.bits < 64:
        return np.clip(x, to.min, to.max).astype(np.int64).astype(to.storage)
    limit = 2.0**63 if to.is_signed else 2.0**64
    big = x >= limit
    safe = np.clip(x, float(to.min), np.nextafter(limit, 0))
    return np.where(big, np.array(to.max, dtype=to.storage), safe.astype(to.storage))


def saturate_int(values: np.ndarray, to: dt.ElementType) -> np.ndarray:
    src = values.dtype
    if src == np.uint64:
        return np.minimum(values, np.uint64(min(to.max, (1 << 64) - 1))).astype(to.storage)
    wide = values.astype(np.int64)
    clipped = np.maximum(wide, max(to.min, -(1 << 63)))
    if to.max < (1 << 63):
        clipped = np.minimum(clipped, to.max)
    return clipped.astype(to.storage)
