"""What a statement reads and writes: buffers and byte ranges (footprints).

Each `Access` names a buffer, whether it writes, and the bytes it may touch: `offset + low` to
`offset + low + size`, or, for gathers and scatters, one `lane_bytes`-wide element at
`offset + lanes[i]` per lane.  A strided region with gaps (a mad operand with stride 2, a reorder
of a tile's columns) also lists its `elements` (byte offsets from `offset`, each `lane_bytes`
wide), so the gaps do not count as touched.  `static_span` turns an access into a constant byte
range when the offset is a constant (register operands always are), else None: the whole buffer,
as far as a dependence test can tell; `static_bytes` gives the exact bytes.

The register ranges of calls follow the layouts documented in `xegen/ir/funcs.py`, which the
interpreter implements.  Synchronization calls (barrier, signal, wait, fence) have no footprint
here; the graph builder orders them (`sync_kind`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import UnsupportedError
from ..ir import (
    Alloc,
    Barrier,
    Broadcast,
    Call,
    Dp4a,
    Dpas,
    EndOfThread,
    Expr,
    Fence,
    For,
    IfThenElse,
    IntImm,
    Let,
    Load,
    Mad,
    Ptr,
    Reorder,
    Send,
    Seq,
    Shuffle,
    Signal,
    Stmt,
    Store,
    Var,
    Wait,
    pointer_arg,
    walk,
)


@dataclass(frozen=True)
class Access:
    buffer: Var
    write: bool
    offset: Expr  # scalar byte offset
    low: int  # first byte touched, relative to offset
    size: int  # bytes spanned (dense accesses)
    lanes: Expr | None = None  # per-lane byte offsets added to `offset` (gathers and scatters)
    lane_bytes: int = 0  # bytes per lane (gathers, scatters) or per element (`elements`)
    definite: bool = False  # a write of every byte it touches (no mask)
    elements: tuple[int, ...] | None = None  # byte offsets of the elements of a region with gaps

    def with_write(self, write: bool, definite: bool | None = None) -> Access:
        return Access(
            self.buffer,
            write,
            self.offset,
            self.low,
            self.size,
            self.lanes,
            self.lane_bytes,
            self.definite if definite is None else definite,
            self.elements,
        )


def static_span(access: Access) -> tuple[int, int] | None:
    """[start, end) bytes when the offset is known at compile time, else None."""
    if not isinstance(access.offset, IntImm):
        return None
    base = access.offset.value
    if access.lanes is None:
        return base + access.low, base + access.low + access.size
    lanes = constant_lanes(access.lanes)
    if lanes is None:
        return None
    return base + min(lanes), base + max(lanes) + access.lane_bytes


def static_bytes(access: Access) -> np.ndarray | None:
    """The exact bytes touched (sorted), when the offset is a compile-time constant."""
    span = static_span(access)
    if span is None:
        return None
    if access.elements is None and access.lanes is None:
        return np.arange(span[0], span[1], dtype=np.int64)
    assert isinstance(access.offset, IntImm)  # (static_span found a constant offset)
    base = access.offset.value
    if access.elements is not None:
        starts = np.asarray(access.elements, dtype=np.int64) + base
    else:
        assert access.lanes is not None  # (an access with neither returned above)
        starts = np.asarray(constant_lanes(access.lanes), dtype=np.int64) + base
    return np.unique((starts[:, None] + np.arange(access.lane_bytes, dtype=np.int64)[None, :]).reshape(-1))


def constant_lanes(e: Expr) -> list[int] | None:
    if isinstance(e, IntImm):
        return [e.value]
    if isinstance(e, Broadcast) and isinstance(e.value, IntImm):
        return [e.value.value]
    if isinstance(e, Shuffle) and all(isinstance(v, IntImm) for v in e.vectors):
        values = [v.value for v in e.vectors if isinstance(v, IntImm)]
        return [values[i] for i in e.indices]
    return None


# Expressions -----------------------------------------------------------------------------------


def _strided(
    buffer: Var, offset: Expr, lanes: int, element: int, stride: int | None, write: bool, definite: bool
) -> Access:
    """`lanes` elements of `element` bytes, `stride` bytes apart (None: dense) from `offset`."""
    step = element if stride is None else stride
    first, last = 0, (lanes - 1) * step
    low, high = min(first, last), max(first, last) + element
    gaps = abs(step) > element and lanes > 1
    elements = tuple(i * step for i in range(lanes)) if gaps else None
    return Access(
        buffer, write, offset, low, high - low, lane_bytes=element if gaps else 0, definite=definite, elements=elements
    )


def _vector_access(buffer: Var, offset: Expr, t, stride: int | None, write: bool, definite: bool) -> Access:
    if offset.type.lanes > 1:  # gather / scatter: one byte offset per lane
        return Access(buffer, write, IntImm(0), 0, 0, lanes=offset, lane_bytes=t.scalar.size)
    return _strided(buffer, offset, t.lanes, t.scalar.size, stride, write, definite)


def expression_reads(e: Expr | None) -> list[Access]:
    """Loads anywhere inside an expression."""
    if e is None:
        return []
    return [_vector_access(n.buffer, n.offset, n.type, n.stride, False, False) for n in walk(e) if isinstance(n, Load)]


# Statements ------------------------------------------------------------------------------------

SYNC_FUNCS = (Barrier, Signal, Wait, Fence)


def sync_kind(stmt: Stmt) -> str | None:
    """'barrier', 'signal', 'wait', 'fence' for those calls; 'compound' for a compound statement
    containing any of them; None otherwise."""
    if isinstance(stmt, Call):
        f = stmt.func
        if isinstance(f, EndOfThread):
            raise UnsupportedError("an end-of-thread inside a loop cannot be scheduled")
        return f.name if isinstance(f, SYNC_FUNCS) else None
    if isinstance(stmt, (Store,)):
        return None
    for node in walk(stmt):
        if isinstance(node, Call):
            if isinstance(node.func, EndOfThread):
                raise UnsupportedError("an end-of-thread inside a loop cannot be scheduled")
            if isinstance(node.func, SYNC_FUNCS):
                return "compound"
    return None


def accesses(stmt: Stmt) -> list[Access]:
    """Every buffer access of `stmt` (reads before writes for one call)."""
    if isinstance(stmt, Store):
        reads = expression_reads(stmt.offset) + expression_reads(stmt.value) + expression_reads(stmt.mask)
        write = _vector_access(stmt.buffer, stmt.offset, stmt.value.type, stmt.stride, True, stmt.mask is None)
        return reads + [write]
    if isinstance(stmt, Call):
        return _call_accesses(stmt)
    return _compound_accesses(stmt)


def _compound_accesses(stmt: Stmt) -> list[Access]:
    """Everything the statements inside an if/loop/let/alloc touch, none counted as definite;
    buffers allocated inside are private to it."""
    local: set[Var] = set()
    found: list[Access] = []

    def visit(s: Stmt) -> None:
        if isinstance(s, Seq):
            for item in s.stmts:
                visit(item)
        elif isinstance(s, Let):
            found.extend(expression_reads(s.value))
            visit(s.body)
        elif isinstance(s, Alloc):
            local.add(s.buffer)
            visit(s.body)
        elif isinstance(s, For):
            found.extend(expression_reads(s.init) + expression_reads(s.bound))
            visit(s.body)
        elif isinstance(s, IfThenElse):
            found.extend(expression_reads(s.cond))
            visit(s.then_case)
            if s.else_case is not None:
                visit(s.else_case)
        else:
            found.extend(accesses(s))

    visit(stmt)
    return [a.with_write(a.write, definite=False) for a in found if a.buffer not in local]


def _pointer(arg: Expr | None, size: int, write: bool, definite: bool = True) -> Access:
    p = pointer_arg(arg)
    return Access(p.buffer, write, p.offset, 0, size, definite=definite)


def _operand(arg: Expr | None, count: int, stride: int, unit: int, write: bool) -> Access:
    """`count` elements of `unit` bytes, `stride` elements apart (0: one element, broadcast)."""
    p = pointer_arg(arg)
    return _strided(p.buffer, p.offset, count if stride else 1, unit, stride * unit if stride else None, write, True)


def _lattice(
    arg: Expr | None, rows: int, cols: int, row_stride: int, col_stride: int, unit: int, write: bool
) -> Access:
    """The elements r*row_stride + c*col_stride (r < rows, c < cols) of `unit` bytes from pointer `arg`."""
    p = pointer_arg(arg)
    indices = sorted({r * row_stride + c * col_stride for r in range(rows) for c in range(cols)})
    low, high = indices[0] * unit, (indices[-1] + 1) * unit
    dense = len(indices) == indices[-1] - indices[0] + 1
    elements = None if dense else tuple(i * unit for i in indices)
    return Access(
        p.buffer, write, p.offset, low, high - low, lane_bytes=0 if dense else unit, definite=True, elements=elements
    )


def _call_accesses(call: Call) -> list[Access]:
    f = call.func
    args = call.args
    reads: list[Access] = []
    for arg in args:  # loads hidden in offsets, masks and pointer offsets
        if arg is not None:
            reads += expression_reads(arg.offset if isinstance(arg, Ptr) else arg)
    if isinstance(f, Send):
        return reads + _send_accesses(f, args)
    if isinstance(f, Dpas):
        dst, src0, src1, src2 = args
        c_bytes = f.rcount * f.exec_size * f.dst_type.size
        found = [_pointer(src1, f.sdepth * f.exec_size * 4, False), _pointer(src2, f.own_rows * f.sdepth * 4, False)]
        if src0 is not None:
            found.append(_pointer(src0, c_bytes, False))
        return reads + found + [_pointer(dst, c_bytes, True)]
    if isinstance(f, (Mad, Dp4a)):
        dst, src0, src1, src2 = args
        dst_size = f.dst_type.size
        unit1 = 4 if isinstance(f, Dp4a) else f.src1_type.size
        unit2 = 4 if isinstance(f, Dp4a) else f.src2_type.size
        found = [
            _operand(src1, f.exec_size, f.src1_stride, unit1, False),
            _operand(src2, f.exec_size, f.src2_stride, unit2, False),
        ]
        if src0 is not None:
            found.append(_pointer(src0, f.exec_size * dst_size, False))
        return reads + found + [_pointer(dst, f.exec_size * dst_size, True)]
    if isinstance(f, Reorder):
        dst, src = args
        source = _lattice(src, f.rows, f.cols, f.src_row_stride, f.src_col_stride, f.src_type.size, False)
        target = _lattice(dst, f.rows, f.cols, f.dst_row_stride, f.dst_col_stride, f.dst_type.size, True)
        return reads + [source, target]
    return reads  # synchronization: ordered by the graph builder


def _send_accesses(f: Send, args: tuple) -> list[Access]:
    if f.kind == "block2d":
        mem, _, _, reg, _ = args
        if f.op == "prefetch":
            return []
        # the block lies somewhere in its surface (x and y are values of the run): all of it
        surface = (f.height - 1) * f.pitch + f.width
        return [
            Access(mem.buffer, False, mem.offset, 0, surface),
            _pointer(reg, f.register_bytes, True, args[4] is None),
        ]
    if f.kind == "block":
        mem, reg, mask = args
        offsets = None
    else:
        mem, offsets, reg, mask = args
    if f.op == "prefetch":
        return []  # a hint: no value moves
    element = f.type.size
    unmasked = mask is None
    if f.kind == "block":
        memory = [Access(mem.buffer, False, mem.offset, 0, f.count * element)]
    else:
        assert offsets is not None  # (a scattered message)
        lanes = offsets if offsets.type.lanes > 1 else Broadcast(offsets, f.count) if f.count > 1 else offsets
        memory = [Access(mem.buffer, False, mem.offset, 0, 0, lanes=lanes, lane_bytes=f.elems * element)]
    register_bytes = f.register_bytes
    if f.op == "load":
        return memory + [_pointer(reg, register_bytes, True, unmasked)]
    if f.op == "store":
        return [_pointer(reg, register_bytes, False)] + [a.with_write(True) for a in memory]
    # atomic: read-modify-write of memory, reads its register operands (inc and dec have none);
    # a returning one then writes the old values over component 0 (all of it when unmasked)
    operands = reg is not None and f.atomic not in ("inc", "dec")
    found = [_pointer(reg, register_bytes, False)] if operands else []
    if f.returns:
        found.append(_pointer(reg, f.count * f.elems * element, True, unmasked))
    return found + memory + [a.with_write(True) for a in memory]
