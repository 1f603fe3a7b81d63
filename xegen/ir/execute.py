"""Execute IR statements over numpy buffers, all threads of a dispatch at once.

`execute(stmt, buffers=..., env=..., threads=N, groups=...)` runs a kernel for N threads as one
numpy batch: a variable may hold one value per thread, control flow that differs between
threads runs under a mask (as SIMT hardware does), GRF allocations are private per thread and
SLM allocations shared per thread group.  Threads run in lock step, so barriers are points where
every thread of a group arrives together; SLM accesses are checked for races between barriers
(`SlmRaceError`).  Fresh GRF and SLM allocations hold 0xFF bytes, so a read before a write shows
up as NaN or -1 instead of a plausible zero.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..errors import EvaluationError
from . import semantics
from .expr import Expr, Ptr, Var
from .funcs import Barrier, Dp4a, Dpas, EndOfThread, Fence, Func, Mad, Reorder, Send, Signal, Wait, block2d_row_bytes
from .interpret import Evaluator, to_value
from .memory import Buffer, GlobalBuffer, RegisterBuffer, SharedLocalBuffer, from_bytes, to_bytes
from .stmt import Alloc, Call, For, IfThenElse, Let, Seq, Stmt, Store
from .types import Type

_ATOMIC_UFUNCS = {
    "add": np.add,
    "fadd": np.add,
    "sub": np.subtract,
    "fsub": np.subtract,
    "min": np.minimum,
    "max": np.maximum,
    "fmin": np.fmin,
    "fmax": np.fmax,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


class ThreadState:
    """Per-thread barrier phase counters, for SLM race checks."""

    def __init__(self, threads: int):
        self.signals = np.zeros(threads, dtype=np.int64)
        self.waits = np.zeros(threads, dtype=np.int64)


class Machine:
    def __init__(self, threads: int, groups: np.ndarray | None, env: Mapping[str, object]):
        self.threads = threads
        self.group_of_thread = np.zeros(threads, dtype=np.int64) if groups is None else np.asarray(groups, np.int64)
        if self.group_of_thread.shape != (threads,):
            raise EvaluationError(f"groups must give one group index per thread ({threads})")
        self.group_count = int(self.group_of_thread.max()) + 1 if threads else 0
        self.active = np.ones(threads, dtype=bool)
        self.finished = np.zeros(threads, dtype=bool)  # threads past their end-of-thread
        self.state = ThreadState(threads)
        self.evaluator = Evaluator(env, load=self._load)

    # -- values ----------------------------------------------------------------------------
    def value(self, e: Expr) -> np.ndarray:
        return self.evaluator.evaluate(e)

    def lanes(self, e: Expr, lanes: int) -> np.ndarray:
        """The value of `e` as shape (threads, lanes); a scalar is repeated across lanes."""
        value = self.value(e)
        if e.type.lanes == 1:
            value = value[..., None]
        return np.broadcast_to(self.per_thread(value, 1), (self.threads, lanes))

    def per_thread(self, x: np.ndarray, lane_dims: int = 0) -> np.ndarray:
        """`x` with the thread axis made explicit."""
        x = np.asarray(x)
        if x.ndim - lane_dims == 0:
            return np.broadcast_to(x, (self.threads,) + x.shape)
        return x

    def _load(self, buffer: Buffer, addresses: np.ndarray, t: Type) -> np.ndarray:
        return buffer.read(addresses, t.scalar, 1 if t.lanes > 1 else 0, self.active, self.state)

    def _buffer(self, var: Var) -> Buffer:
        buffer = self.evaluator.env.get(var.name)
        if not isinstance(buffer, Buffer):
            raise EvaluationError(f"'{var.name}' is not a buffer here")
        return buffer

    def pointer(self, p: Ptr) -> tuple[Buffer, np.ndarray]:
        return self._buffer(p.buffer), self.per_thread(self.value(p.offset)).astype(np.int64)

    # -- statements ------------------------------------------------------------------------
    def run(self, s: Stmt) -> None:
        if not self.active.any():
            return
        getattr(self, "_" + type(s).__name__)(s)

    def _Seq(self, s: Seq) -> None:
        for item in s.stmts:
            self.run(item)

    def _scoped(self, name: str, value, body: Stmt) -> None:
        env = self.evaluator.env
        saved = env.get(name, _MISSING)
        self.evaluator.bind(name, value)
        try:
            self.run(body)
        finally:
            if saved is _MISSING:
                env.pop(name, None)
            else:
                env[name] = saved

    def _Let(self, s: Let) -> None:
        if s.value is None:
            if s.var.name not in self.evaluator.env:
                raise EvaluationError(f"external variable '{s.var.name}' has no value")
            self.run(s.body)
            return
        self._scoped(s.var.name, self.value(s.value), s.body)

    def _Alloc(self, s: Alloc) -> None:
        name = s.buffer.name
        if s.kind == "grf":
            buffer: Buffer = RegisterBuffer(name, s.size, self.threads)
        elif s.kind == "slm":
            buffer = SharedLocalBuffer(name, s.size, self.group_of_thread, self.group_count)
        else:
            buffer = GlobalBuffer(name, np.zeros(s.size, dtype=np.uint8))
        self._scoped(name, buffer, s.body)

    def _For(self, s: For) -> None:
        init, bound = self.value(s.init), self.value(s.bound)
        dtype = semantics.numpy_dtype(s.var.type)
        if init.ndim == 0 and bound.ndim == 0:
            for i in range(int(init), int(bound)):
                self._scoped(s.var.name, np.asarray(i, dtype=dtype), s.body)
            return
        init, bound = self.per_thread(init), self.per_thread(bound)
        outer = self.active
        low, high = int(init[outer].min()), int(bound[outer].max())
        try:
            for i in range(low, high):
                self.active = outer & (init <= i) & (i < bound)
                self._scoped(s.var.name, np.asarray(i, dtype=dtype), s.body)
        finally:
            self.active = outer & ~self.finished

    def _IfThenElse(self, s: IfThenElse) -> None:
        cond = self.value(s.cond)
        if cond.ndim == 0:
            branch = s.then_case if bool(cond) else s.else_case
            if branch is not None:
                self.run(branch)
            return
        outer = self.active
        try:
            self.active = outer & cond
            self.run(s.then_case)
            if s.else_case is not None:
                self.active = outer & ~cond & ~self.finished
                self.run(s.else_case)
        finally:
            self.active = outer & ~self.finished

    def _Store(self, s: Store) -> None:
        buffer = self._buffer(s.buffer)
        t = s.value.type
        lane_dims = 1 if t.lanes > 1 else 0
        offset = self.value(s.offset).astype(np.int64)
        if t.lanes > 1 and s.offset.type.lanes == 1:
            stride = s.stride if s.stride is not None else t.scalar.size
            offset = offset[..., None] + np.arange(t.lanes, dtype=np.int64) * stride
        offset = self.per_thread(offset, lane_dims)
        values = self.per_thread(self.value(s.value), lane_dims)
        mask = None
        if s.mask is not None:
            mask = self.value(s.mask)
            if lane_dims and s.mask.type.lanes == 1:
                mask = mask[..., None]
            mask = np.broadcast_to(mask, offset.shape)
        buffer.write(offset, np.broadcast_to(values, offset.shape), t.scalar, lane_dims, mask, self.active, self.state)

    def _Call(self, s: Call) -> None:
        handler = _CALLS.get(type(s.func))
        if handler is None:
            raise EvaluationError(f"the interpreter cannot run {s.func.name}")
        handler(self, s.func, s.args)

    # -- register helpers for calls --------------------------------------------------------
    def read_elements(self, p: Ptr, t: Type, count: int, stride: int = 1) -> np.ndarray:
        """`count` elements of `t`, `stride` elements apart, from a pointer: shape (threads, count)."""
        buffer, base = self.pointer(p)
        addresses = base[:, None] + np.arange(count, dtype=np.int64) * stride * t.size
        return buffer.read(addresses, t, 1, self.active, self.state)

    def write_elements(
        self, p: Ptr, values: np.ndarray, t: Type, stride: int = 1, mask: np.ndarray | None = None
    ) -> None:
        buffer, base = self.pointer(p)
        count = values.shape[-1]
        addresses = base[:, None] + np.arange(count, dtype=np.int64) * stride * t.size
        values = np.broadcast_to(values, addresses.shape)
        buffer.write(addresses, values, t, 1, mask, self.active, self.state)


_MISSING = object()


# Calls ------------------------------------------------------------------------------------


def _send(machine: Machine, f: Send, args: tuple) -> None:
    t = f.type
    if f.kind == "block2d":
        _block2d(machine, f, args)
        return
    if f.kind == "block":
        mem, reg, mask_arg = args
        memory, base = machine.pointer(mem)
        addresses = base[:, None] + np.arange(f.count, dtype=np.int64) * t.size
        register_index = np.arange(f.count)
    else:
        mem, offsets_arg, reg, mask_arg = args
        memory, base = machine.pointer(mem)
        offsets = machine.lanes(offsets_arg, f.count).astype(np.int64)
        # slot s, element e: memory base + offsets[s] + e*size, register (e*count + s)*size
        element = np.arange(f.elems, dtype=np.int64)
        addresses = base[:, None, None] + offsets[:, None, :] + element[None, :, None] * t.size
        addresses = addresses.reshape(machine.threads, -1)
        register_index = (element[:, None] * f.count + np.arange(f.count)[None, :]).reshape(-1)
    mask = None if mask_arg is None else machine.lanes(mask_arg, f.count)
    if mask is not None and f.kind == "scattered":
        mask = np.tile(mask, (1, f.elems))
    if f.op == "prefetch":
        return
    if f.op == "atomic":
        _atomic(machine, f, memory, addresses, reg, mask)
        return
    register, register_base = machine.pointer(reg)
    register_addresses = register_base[:, None] + register_index[None, :] * t.size
    if f.op == "load":
        values = memory.read(addresses, t, 1, _masked_active(machine, mask), machine.state, lane_mask=mask)
        register.write(register_addresses, values, t, 1, mask, machine.active, machine.state)
    else:
        values = register.read(register_addresses, t, 1, machine.active, machine.state)
        memory.write(addresses, values, t, 1, mask, machine.active, machine.state)


def _block2d(machine: Machine, f: Send, args: tuple) -> None:
    """A 2D block load (`Send`'s docstring): the surface's elements, 0 outside it, into the
    register rows; the bytes of a row beyond its data are 0."""
    mem, x_arg, y_arg, reg, mask_arg = args
    size = f.type.size
    active = machine.active.copy()
    if mask_arg is not None:
        active &= machine.lanes(mask_arg, 1)[:, 0].astype(bool)
    memory, base = machine.pointer(mem)
    x = machine.lanes(x_arg, 1)[:, 0].astype(np.int64)
    y = machine.lanes(y_arg, 1)[:, 0].astype(np.int64)
    if np.any(base[active] % 64):
        raise EvaluationError("block2d: the surface must start on a 64-byte boundary")
    if size < 4 and np.any(x[active] % (4 // size)):
        raise EvaluationError(f"block2d: the first column of a d{8 * size} block must be a multiple of {4 // size}")
    if f.op == "prefetch" or not active.any():
        return
    rows = y[:, None, None] + np.arange(f.elems)[None, :, None]
    columns = x[:, None, None] + np.arange(f.count)[None, None, :]
    inside = (rows >= 0) & (rows < f.height) & (columns >= 0) & ((columns + 1) * size <= f.width)
    inside &= active[:, None, None]
    raw = Type(f"u{8 * size}")
    addresses = base[:, None, None] + rows * f.pitch + columns * size
    values = memory.read(np.where(inside, addresses, 0), raw, 2, active, machine.state, lane_mask=inside)
    data = np.where(inside, values, 0).astype(semantics.numpy_dtype(raw))
    if f.transform == "vnni":
        group = 4 // size
        data = data.reshape(machine.threads, f.elems // group, group, f.count).transpose(0, 1, 3, 2)
    elif f.transform == "transpose":
        data = data.transpose(0, 2, 1)
    data = np.ascontiguousarray(data)
    register_rows = data.shape[1]
    row_bytes = data[0, 0].nbytes
    pitch = block2d_row_bytes(f)
    out = np.zeros((machine.threads, register_rows, pitch), dtype=np.uint8)
    out[:, :, :row_bytes] = data.view(np.uint8).reshape(machine.threads, register_rows, row_bytes)
    register, register_base = machine.pointer(reg)
    addresses = register_base[:, None] + np.arange(register_rows * pitch, dtype=np.int64)
    register.write(addresses, out.reshape(machine.threads, -1), Type("u8"), 1, None, active, machine.state)


def _masked_active(machine: Machine, mask: np.ndarray | None) -> np.ndarray:
    """Threads that touch memory at all: lanes masked off read nothing (and are not bounds-checked)."""
    if mask is None:
        return machine.active
    return machine.active & mask.any(axis=1)


def _atomic(
    machine: Machine, f: Send, memory: Buffer, addresses: np.ndarray, reg: Ptr | None, mask: np.ndarray | None
) -> None:
    """Read-modify-write per slot, in thread order (so the result does not depend on numpy);
    with `f.returns`, the old values then go into component 0 of the enabled slots."""
    t = f.type
    enabled = np.broadcast_to(machine.active[:, None], addresses.shape).copy()
    if mask is not None:
        enabled &= mask
    operands = None
    if reg is not None and f.atomic not in ("inc", "dec"):
        register, base = machine.pointer(reg)
        count = 2 * f.count if f.atomic == "cmpxchg" else f.count
        operand_addresses = base[:, None] + np.arange(count, dtype=np.int64) * t.size
        operands = register.read(operand_addresses, t, 1, machine.active, machine.state)
    olds = np.zeros(addresses.shape + (t.size,), np.uint8) if f.returns else None  # bit for bit
    # bounds and races are checked by a read of every enabled slot
    memory.read(np.where(enabled, addresses, 0), t, 1, np.any(enabled, axis=1), machine.state)
    rows = memory.rows
    flat_threads, flat_slots = np.nonzero(enabled)
    data = memory.data
    for thread, slot in zip(flat_threads.tolist(), flat_slots.tolist(), strict=True):
        row = 0 if rows is None else int(rows[thread])
        address = int(addresses[thread, slot])
        raw = data[row, address : address + t.size]
        old = from_bytes(raw[None, :], t)[0]
        if olds is not None:
            olds[thread, slot] = raw
        if f.atomic in ("inc", "dec"):
            one = np.asarray(1, dtype=old.dtype)
            new = old + one if f.atomic == "inc" else old - one
        else:
            assert operands is not None  # Send.expected_args: the other atomics have a register operand
            if f.atomic == "xchg":
                new = operands[thread, slot]
            elif f.atomic == "cmpxchg":
                compare, value = operands[thread, slot], operands[thread, f.count + slot]
                new = value if old == compare else old
            else:
                with np.errstate(over="ignore", invalid="ignore"):
                    new = _ATOMIC_UFUNCS[f.atomic](old, operands[thread, slot])
        new = (
            semantics.round_array(np.asarray(new, np.float64), t)
            if t.kind == "bf16"
            else np.asarray(new, dtype=old.dtype)
        )
        data[row, address : address + t.size] = to_bytes(np.asarray(new)[None], t)[0]
    if olds is not None:
        assert reg is not None  # Send.expected_args: a returning atomic has a register operand
        register, base = machine.pointer(reg)
        slots = base[:, None] + np.arange(addresses.shape[1], dtype=np.int64) * t.size
        raw_type = Type(f"u{8 * t.size}")
        register.write(slots, from_bytes(olds, raw_type), raw_type, 1, enabled, machine.active, machine.state)


def _mad(machine: Machine, f: Mad, args: tuple) -> None:
    dst, src0, src1, src2 = args
    t = f.dst_type
    a = (
        np.zeros((machine.threads, f.exec_size), semantics.numpy_dtype(t))
        if src0 is None
        else machine.read_elements(src0, t, f.exec_size)
    )
    b = semantics.convert(machine.read_elements(src1, f.src1_type, f.exec_size, f.src1_stride), f.src1_type, t)
    c = semantics.convert(machine.read_elements(src2, f.src2_type, f.exec_size, f.src2_stride), f.src2_type, t)
    machine.write_elements(dst, semantics.ternary("mad", a, b, c, t), t)


def _signed_bytes(dwords: np.ndarray, t: Type) -> np.ndarray:
    raw = np.ascontiguousarray(dwords.astype(np.uint32)).view(np.uint8).reshape(dwords.shape + (4,))
    return (raw.view(np.int8) if t.kind == "s8" else raw).astype(np.int64)


def _dp4a(machine: Machine, f: Dp4a, args: tuple) -> None:
    dst, src0, src1, src2 = args
    t = f.dst_type
    u32 = Type("u32")
    a = (
        np.zeros((machine.threads, f.exec_size), np.int64)
        if src0 is None
        else machine.read_elements(src0, t, f.exec_size).astype(np.int64)
    )
    b = _signed_bytes(machine.read_elements(src1, u32, f.exec_size, f.src1_stride), f.src1_type)
    c = _signed_bytes(machine.read_elements(src2, u32, f.exec_size, f.src2_stride), f.src2_type)
    total = a + (b * c).sum(axis=-1)
    machine.write_elements(dst, semantics.convert(total, Type("s64"), t), t)


def _dpas(machine: Machine, f: Dpas, args: tuple) -> None:
    dst, src0, src1, src2 = args
    rows, columns, ops = f.rcount, f.exec_size, f.ops_per_channel
    depth = f.sdepth * ops
    acc_type = f.dst_type
    is_int = f.src1_type.is_int
    work = np.int64 if is_int else np.float64
    own_rows = f.own_rows
    a = machine.read_elements(src2, f.src2_type, own_rows * depth).reshape(-1, own_rows, depth).astype(work)
    if f.dpasw:
        a = _fused_a(machine, a, rows)
    # B in VNNI: dword (s, n) holds k = s*ops + j at element index (s*N + n)*ops + j
    b_flat = machine.read_elements(src1, f.src1_type, f.sdepth * columns * ops).astype(work)
    b = b_flat.reshape(-1, f.sdepth, columns, ops).transpose(0, 1, 3, 2).reshape(-1, depth, columns)
    product = np.einsum("trk,tkn->trn", a, b)
    if src0 is None:
        accumulator = np.zeros_like(product)
    else:
        accumulator = machine.read_elements(src0, acc_type, rows * columns).reshape(-1, rows, columns).astype(work)
    result = accumulator + product
    result = semantics.convert(result, Type("s64"), acc_type) if is_int else semantics.round_array(result, acc_type)
    machine.write_elements(dst, result.reshape(machine.threads, -1), acc_type)


def _fused_a(machine: Machine, own: np.ndarray, rows: int) -> np.ndarray:
    """dpasw's A for every thread: the first ceil(rows/2) rows from the src2 of its fused pair's
    even thread, the rest from the odd thread's (threads 2i and 2i+1 of a group, as the
    hardware pairs them)."""
    even = _fused_pair_heads(machine.group_of_thread)
    active = machine.active
    if np.any(active[even] != active[even + 1]):
        thread = int(np.argmax(active[even] != active[even + 1]))
        raise EvaluationError(
            f"dpasw reached by only one thread of the fused pair {int(even[thread])}, "
            f"{int(even[thread]) + 1} (both threads must execute it together)"
        )
    head = np.repeat(even, 2)  # each thread's even partner
    return np.concatenate([own[head], own[head + 1][:, : rows - own.shape[1]]], axis=1)


def _fused_pair_heads(group_of_thread: np.ndarray) -> np.ndarray:
    """The even thread of every fused pair (threads 2i and 2i+1 of a group); the batch holds each
    group's threads consecutively, in order."""
    counts = np.bincount(group_of_thread)
    odd = np.flatnonzero(counts % 2)
    if odd.size:
        raise EvaluationError(
            f"dpasw needs an even number of threads in every group (fused pairs), but group "
            f"{int(odd[0])} has {int(counts[odd[0]])}"
        )
    if np.any(np.diff(group_of_thread) < 0):
        raise EvaluationError("dpasw needs each group's threads consecutive in the batch")
    return np.arange(0, group_of_thread.size, 2)


def _reorder(machine: Machine, f: Reorder, args: tuple) -> None:
    dst, src = args
    r, c = np.meshgrid(np.arange(f.rows), np.arange(f.cols), indexing="ij")
    src_index = (r * f.src_row_stride + c * f.src_col_stride).reshape(-1)
    dst_index = (r * f.dst_row_stride + c * f.dst_col_stride).reshape(-1)
    source, base = machine.pointer(src)
    values = source.read(base[:, None] + src_index * f.src_type.size, f.src_type, 1, machine.active, machine.state)
    converted = semantics.convert(values, f.src_type, f.dst_type, f.saturate)
    target, target_base = machine.pointer(dst)
    target.write(
        target_base[:, None] + dst_index * f.dst_type.size,
        converted,
        f.dst_type,
        1,
        None,
        machine.active,
        machine.state,
    )


def _require_whole_groups(machine: Machine, what: str) -> None:
    groups_with_active = np.unique(machine.group_of_thread[machine.active])
    partial = machine.active != np.isin(machine.group_of_thread, groups_with_active)
    if np.any(partial):
        thread = int(np.argmax(partial))
        raise EvaluationError(
            f"{what} reached by only some threads of group "
            f"{int(machine.group_of_thread[thread])} (divergent control flow)"
        )


def _barrier(machine: Machine, f, args: tuple) -> None:
    _require_whole_groups(machine, "barrier")
    machine.state.signals[machine.active] += 1
    machine.state.waits[machine.active] += 1


def _signal(machine: Machine, f, args: tuple) -> None:
    _require_whole_groups(machine, "barrier signal")
    machine.state.signals[machine.active] += 1


def _wait(machine: Machine, f, args: tuple) -> None:
    _require_whole_groups(machine, "barrier wait")
    waits = machine.state.waits[machine.active]
    if np.any(waits >= machine.state.signals[machine.active]):
        raise EvaluationError("barrier wait without a matching signal: it would wait forever")
    machine.state.waits[machine.active] += 1


def _fence(machine: Machine, f, args: tuple) -> None:
    """An SLM fence covers the thread's SLM writes so far: its next barrier signal publishes them
    (lock-step execution makes the values visible at once; `memory.py` checks the order)."""
    if f.space != "slm":
        return
    for value in list(machine.evaluator.env.values()):
        if isinstance(value, SharedLocalBuffer):
            value.fence(machine.active, machine.state.signals)


def _end_of_thread(machine: Machine, f, args: tuple) -> None:
    machine.finished |= machine.active
    machine.active = machine.active & False


#: the interpreter of each function: handler(machine, func, args)
_CALLS: dict[type[Func], Callable[[Machine, Any, tuple], None]] = {
    Send: _send,
    Mad: _mad,
    Dp4a: _dp4a,
    Dpas: _dpas,
    Reorder: _reorder,
    Barrier: _barrier,
    Signal: _signal,
    Wait: _wait,
    Fence: _fence,
    EndOfThread: _end_of_thread,
}


def execute(
    stmt: Stmt,
    buffers: Mapping[str, np.ndarray] | None = None,
    env: Mapping[str, object] | None = None,
    threads: int = 1,
    groups: np.ndarray | None = None,
) -> None:
    """Run `stmt` for `threads` threads; `buffers` (global memory) are read and written in place.

    `env` binds external variables (numbers, or arrays with one value per thread); `groups`
    gives each thread's thread-group index (SLM is shared within a group)."""
    values: dict[str, object] = {}
    for name, value in (env or {}).items():
        values[name] = value
    for name, array in (buffers or {}).items():
        values[name] = GlobalBuffer(name, array)
    machine = Machine(threads, groups, values)
    machine.run(stmt)


__all__ = ["execute", "Machine", "to_value"]
