"""Memory messages: IR `send` calls, loads and stores of memory, per platform.

Message families (facts: docs/messages.md):

- LSC (platforms with `hw.has_lsc`): global memory through `ugm`, a buffer with a
  binding-table surface (`GlobalBuffer.bti`, where the platform has no 64-bit add) by A32 byte
  offsets through its binding table index, otherwise (and for atomics and 2D blocks) by flat A64
  addresses; SLM through `slm` with A32 offsets.  A block is one or more *transposed* d32 loads/stores
  (`d32x64t` ... `d32x1t`: one address, the data in consecutive register bytes); scattered
  slots are SIMT messages with one address per lane (at most `hw.max_message_simd` lanes),
  data component-major; atomics are SIMT messages, with a response when they return the old
  values (copied over the first operand's slots).
- Legacy HDC (XeLP): a global buffer with a binding-table surface (`GlobalBuffer.bti`) is
  read in blocks with the A32 unaligned oword block read (16..128 bytes, the byte offset in the
  header) and otherwise with A32 SIMT messages through its binding table index: untyped
  (dwords, up to four consecutive per lane) or byte scattered (8/16-bit elements); an offset is
  then one dword, where a 64-bit address costs two to four instructions without a 64-bit add.
  Qwords and atomics, and buffers without a surface, use A64 messages on the buffer's address
  (A64 unaligned oword block reads, untyped, scattered).  SLM is the same as a surface through
  binding table index 0xFE; atomics A64 (SIMD8) or A32 on SLM.

Blocks assume their start is dword aligned (what the convolution builder guarantees); blocks
whose size is not a whole number of dwords go element by element as scattered messages.

Register data that does not sit where the message wants it (a layout that is not the
message's component-major one, or a start that is not on a GRF boundary) goes through a
temporary and moves.  Masks become predicates: flag bits per lane (scattered) or bit 0
(a block is one SIMD1 message).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..emit.instruction import Flag, Predicate, Reg
from ..errors import UnsupportedError
from ..ir import expr as E
from ..ir.funcs import Send
from ..ir.types import S32, S64, U8, U32, U64, Type
from ..ir.visitor import walk
from .builder import Builder, PhysicalOperand, accumulator_runs
from .convert import convert, halves
from .expressions import Expressions, GlobalBuffer, GrfBuffer, SlmBuffer
from .program import Label, Op, Span
from .values import Constant, Region, Value, VReg

# LSC descriptor fields
LSC_LOAD, LSC_STORE = 0x00, 0x04
LSC_LOAD_BLOCK2D = 0x03
LSC_BLOCK2D_DATA = {1: 0, 2: 1, 4: 2, 8: 3}  # element bytes -> d8, d16, d32, d64
LSC_A32, LSC_A64 = 2, 3
LSC_DATA = {1: 4, 2: 5, 4: 2, 8: 3}  # element bytes -> d8u32, d16u32, d32, d64
LSC_VECTOR = {1: 0, 2: 1, 3: 2, 4: 3, 8: 4, 16: 5, 32: 6, 64: 7}
LSC_ATOMICS_INT = {
    "add": 0x0C,
    "sub": 0x0D,
    "inc": 0x08,
    "dec": 0x09,
    "xchg": 0x0B,
    "cmpxchg": 0x12,
    "and": 0x18,
    "or": 0x19,
    "xor": 0x1A,
}
LSC_ATOMICS_FLOAT = {
    "fadd": 0x13,
    "add": 0x13,
    "fsub": 0x14,
    "sub": 0x14,
    "fmin": 0x15,
    "min": 0x15,
    "fmax": 0x16,
    "max": 0x16,
    "cmpxchg": 0x17,
    "xchg": 0x0B,
}

# HDC
HDC_SLM, HDC_STATELESS = 0xFE, 0xFF
HDC_ATOMICS_INT = {
    "and": 0x1,
    "or": 0x2,
    "xor": 0x3,
    "xchg": 0x4,
    "inc": 0x5,
    "dec": 0x6,
    "add": 0x7,
    "sub": 0x8,
    "cmpxchg": 0xE,
}
HDC_ATOMICS_FLOAT = {
    "fmax": 0x1,
    "max": 0x1,
    "fmin": 0x2,
    "min": 0x2,
    "cmpxchg": 0x3,
    "fadd": 0x4,
    "add": 0x4,
    "fsub": 0x5,
    "sub": 0x5,
}
OWORD_BLOCKS = {16: 0, 32: 2, 64: 3, 128: 4}  # bytes -> block size code


def lsc_descriptor(
    opcode: int, address_size: int, data: int, vector: int, transpose: bool, rlen: int, mlen: int
) -> int:
    return (
        opcode
        | address_size << 7
        | data << 9
        | LSC_VECTOR[vector] << 12
        | int(transpose) << 15
        | rlen << 20
        | mlen << 25
    )


def hdc_descriptor(bti: int, control: int, kind: int, header: bool, rlen: int, mlen: int) -> int:
    return bti | control << 8 | kind << 14 | int(header) << 19 | rlen << 20 | mlen << 25


@dataclass(frozen=True)
class Address:
    """A memory operand: `space` "global" (64-bit `base` register + byte offset) or "slm"
    (constant `base` + byte offset); `offset` is an s32 value.  A global buffer with a surface
    in the binding table has its index in `bti`: the messages with an A32 form reach the byte
    offset (`offset` + `displacement`) through it, the others the 64-bit address (`_flat`)."""

    space: str
    base: Region | int
    offset: Value
    bti: int | None = None
    displacement: int = 0  # (with `bti`) a constant the message's offset adds to `offset`

    @property
    def pointer(self) -> Region:
        """A global address's 64-bit base."""
        assert isinstance(self.base, Region), self
        return self.base

    @property
    def slm_base(self) -> int:
        """An SLM address's constant base."""
        assert isinstance(self.base, int), self
        return self.base


class Messages:
    """Lowers memory accesses for one kernel."""

    def __init__(self, lowering: Expressions):
        self.x = lowering
        self.b: Builder = lowering.b
        self.hw = self.b.hw
        self.grf = self.b.grf
        self.payloads = Payloads(self.b.program, self.b.reuse_payloads)
        # per 2D block header kept in `payloads`: the coordinates it holds, each with the
        # checkpoint of the registers it was copied from
        self._coordinates: dict[tuple, list[tuple[tuple, Checkpoint] | None]] = {}
        self.shared_offsets: list[tuple[str, E.Var]] = []  # (buffer, v) of `plan`
        self.pointers: dict[tuple[str, E.Var], Region] = {}  # (buffer, v) in scope -> buffer + v
        self.pointer_registers: set[int] = set()  # whole GRFs holding one address each

    def plan(self, body) -> None:
        """Find the global buffers addressed at several constant distances from one variable
        offset (`buffer[v + c]` for two or more c): those share a 64-bit pointer (`bind_pointers`)."""
        distances: dict[tuple[str, E.Var], set[int]] = {}
        for node in walk(body):
            if not isinstance(node, E.Ptr):
                continue
            split = _variable_plus_constant(node.offset)
            if split is not None:
                distances.setdefault((node.buffer.name, split[0]), set()).add(split[1])
        self.shared_offsets = [key for key, constants in distances.items() if len(constants) > 1]

    # --- operands -----------------------------------------------------------------------------
    def address(self, ptr: E.Ptr) -> Address:
        bound = self.x.buffer(ptr.buffer)
        if isinstance(bound, GlobalBuffer):
            split = _variable_plus_constant(ptr.offset)
            pointer = self.pointers.get((ptr.buffer.name, split[0])) if split is not None else None
            if split is not None and pointer is not None:  # buffer + v + c: buffer + v once for every c
                return Address("global", pointer, Constant(split[1], S32))
            if bound.bti is not None:
                return self._surface(bound, ptr.offset)
            return Address("global", bound.address, self._offset(ptr.offset))
        offset = self._offset(ptr.offset)
        if isinstance(bound, SlmBuffer):
            return Address("slm", bound.base, offset)
        raise UnsupportedError(f"'{ptr.buffer.name}' is a GRF buffer, not memory")

    def _surface(self, bound: GlobalBuffer, offset: E.Expr) -> Address:
        """A surface operand; an offset `x + c` leaves c to the add that writes the payload (an
        s32 add, as the IR's)."""
        if isinstance(offset, E.Binary) and offset.op == "add" and offset.type == S32:
            for x, c in ((offset.a, offset.b), (offset.b, offset.a)):
                if isinstance(c, E.IntImm):
                    return Address("global", bound.address, self._offset(x), bound.bti, int(c.value))
        return Address("global", bound.address, self._offset(offset), bound.bti)

    def _flat(self, address: Address) -> Address:
        """The same operand addressed by its 64-bit address (for messages with no A32 form)."""
        if address.bti is None:
            return address
        return Address(address.space, address.base, _plus(self.b, address.offset, address.displacement))

    def _shifted(self, address: Address, k: int) -> Address:
        if address.bti is not None:
            return replace(address, displacement=address.displacement + k)
        return replace(address, offset=_plus(self.b, address.offset, k))

    def _offset(self, e: E.Expr) -> Value:
        if e.type.scalar.bits > 32:
            raise UnsupportedError(f"memory offsets must be 32-bit integers, not {e.type}")
        v = self.x.value(e)
        if e.type.scalar.bits < 32 or e.type.scalar == U32:
            if isinstance(v, Constant):
                return Constant(int(v.value), S32, v.lanes)
            wide = self.b.temp(S32, e.type.lanes)
            convert(self.b, wide, v)
            return wide
        return v

    def bind_pointers(self, variable: E.Var) -> list[tuple[tuple[str, E.Var], Region | None]]:
        """At `let variable = ...`: the 64-bit address buffer + variable of every global buffer
        `plan` found addressed at several constant distances from it.  Those messages then add
        only their constant (two instructions instead of four, none at distance 0) for as long as
        the let is in scope.  Returns what it replaced, for `unbind_pointers` at the scope's end."""
        replaced = []
        for buffer, shared in self.shared_offsets:
            bound = self.x.env.get(buffer)
            if shared != variable or not isinstance(bound, GlobalBuffer) or bound.bti is not None:
                continue  # (a surface's A32 offset is one add per message anyway)
            pointer = self.b.grfs(1, "pointer")
            address64(self.b, Region(pointer, 0, U64), bound.address, self._offset(variable))
            self.pointer_registers.add(pointer.id)
            replaced.append(((buffer, variable), self.pointers.get((buffer, variable))))
            self.pointers[(buffer, variable)] = Region(pointer, 0, U64)
        return replaced

    def unbind_pointers(self, replaced: list[tuple[tuple[str, E.Var], Region | None]]) -> None:
        for key, old in reversed(replaced):
            if old is None:
                del self.pointers[key]
            else:
                self.pointers[key] = old

    def register(self, ptr: E.Ptr, what: str) -> tuple[VReg, int, int]:
        """(register, byte offset, buffer size) of a pointer into a GRF buffer."""
        bound = self.x.buffer(ptr.buffer)
        if not isinstance(bound, GrfBuffer):
            raise UnsupportedError(f"the {what} operand '{ptr}' must point into a GRF buffer")
        offset = self.x.constant_int(ptr.offset, f"the offset into GRF buffer '{ptr.buffer.name}'")
        return bound.reg, offset, bound.size

    # --- IR send calls ------------------------------------------------------------------------
    def call(self, f: Send, args: tuple) -> None:
        try:
            self._call(f, args)
        except _Skip:
            pass

    def _call(self, f: Send, args: tuple) -> None:
        if f.kind == "block2d":
            self.block2d(f, args)
            return
        if f.kind == "block":
            mem, reg, mask = args
            address = self.address(mem)
            data = None if reg is None else self.register(reg, "register")
            if f.op == "atomic":
                raise UnsupportedError("atomics are scattered messages")
            self._check_register(data, f.count * f.type.size, f)
            self.block(f.op, address, f.type, f.count, data, mask)
            return
        mem, offsets, reg, mask = args
        address = self.address(mem)
        slot_offsets = self._offset(offsets)
        data = None if reg is None else self.register(reg, "register")
        self._check_register(data, f.register_bytes, f)
        if f.op == "atomic":
            self.atomic(f.atomic, address, slot_offsets, f.type, f.count, data, mask, f.returns)
        else:
            self.scattered(f.op, address, slot_offsets, f.type, f.count, f.elems, data, mask)

    def _check_register(self, data, size: int, f: Send) -> None:
        if data is not None and (data[1] < 0 or data[1] + size > data[2]):
            raise UnsupportedError(f"the {f.op} message's {size} register bytes run outside their GRF buffer")

    # --- loads and stores in expressions and statements ---------------------------------------
    def load_expression(self, e: E.Load, bound, dst: Region | None) -> Region:
        """A memory load used as a value: a block (dense lanes) or a gather."""
        t = e.type
        base = self.address(E.Ptr(e.buffer, E.const(0, S32)))
        holder = self.b.grfs(-(-t.size * t.lanes // self.grf), "load")
        data = (holder, 0, holder.reserved)
        if e.offset.type.lanes == 1 and (e.stride is None or e.stride == t.scalar.size or t.lanes == 1):
            self.block("load", self._at(e.buffer, base, e.offset), t.scalar, t.lanes, data, None)
        else:
            offsets = self._element_offsets(e.offset, t, e.stride)
            self.scattered("load", base, offsets, t.scalar, t.lanes, 1, data, None)
        return Region(holder, 0, t.scalar, t.lanes, 1)

    def store_statement(self, buffer: E.Var, offset: E.Expr, value: E.Expr, stride: int | None, mask) -> None:
        t = value.type
        base = self.address(E.Ptr(buffer, E.const(0, S32)))
        v = self.x.value(value)
        holder = self.b.grfs(-(-t.size * t.lanes // self.grf), "store")
        self.x._copy(Region(holder, 0, t.scalar, t.lanes, 1), v)
        data = (holder, 0, holder.reserved)
        try:
            if offset.type.lanes == 1 and (stride is None or stride == t.scalar.size or t.lanes == 1):
                self.block("store", self._at(buffer, base, offset), t.scalar, t.lanes, data, mask)
            else:
                offsets = self._element_offsets(offset, t, stride)
                self.scattered("store", base, offsets, t.scalar, t.lanes, 1, data, mask)
        except _Skip:
            pass

    def _at(self, buffer: E.Var, base: Address, offset: E.Expr) -> Address:
        """`base` (`buffer`'s start) at a scalar offset."""
        bound = self.x.buffer(buffer)
        if isinstance(bound, GlobalBuffer) and bound.bti is not None:
            return self._surface(bound, offset)
        return replace(base, offset=self._offset(offset))

    def _element_offsets(self, offset: E.Expr, t: Type, stride: int | None) -> Value:
        if offset.type.lanes > 1:
            return self._offset(offset)
        step = stride if stride is not None else t.scalar.size
        lanes = E.Shuffle(tuple(E.const(i * step, S32) for i in range(t.lanes)), tuple(range(t.lanes)))
        return self._offset(E.Broadcast(offset, t.lanes) + lanes if t.lanes > 1 else offset)

    def _whole_temp(self, region: Region) -> VReg:
        return self.b.grfs(-(-region.type.size * region.lanes // self.grf), "load")

    # --- blocks -------------------------------------------------------------------------------
    def block(self, op: str, address: Address, t: Type, count: int, data, mask) -> None:
        """`count` contiguous elements.  Whole dwords (the start assumed dword aligned) go in
        transposed LSC messages, or on XeLP as oword block reads and dword SIMT messages;
        anything else element by element."""
        total = count * t.size
        vector_mask = mask is not None and mask.type.lanes > 1
        if total % 4 or vector_mask:
            return self.scattered(op, address, Progression(0, t.size), t, count, 1, data, mask)
        if op == "prefetch" and not self.hw.has_lsc:
            return  # legacy messages have no prefetch; it changes no value
        if not self.hw.has_lsc and (op == "store" or address.space == "slm"):
            return self.scattered(op, address, Progression(0, 4), U32, total // 4, 1, data, mask)
        pieces = self._pieces(total)
        tail = []
        if not self.hw.has_lsc:
            tail = [p for p in pieces if p[1] not in OWORD_BLOCKS]
            pieces = [p for p in pieces if p[1] in OWORD_BLOCKS]
        # payloads first (their arithmetic may use flags), then the mask, then the messages
        plans = [(start, size, self._block_payload(address, start)) for start, size in pieces]
        predicate = self._scalar_predicate(mask) if plans else None
        for start, size, payload in plans:
            self._block_message(op, address, payload, start, size, data, predicate)
        for start, size in tail:
            sub = None if data is None else (data[0], data[1] + start, data[2])
            shifted = self._shifted(address, start)
            self.scattered(op, shifted, Progression(0, 4), U32, size // 4, 1, sub, mask)

    def _pieces(self, total: int) -> list[tuple[int, int]]:
        if self.hw.has_lsc:
            sizes = [s for s in (256, 128, 64, 32, 16, 12, 8, 4) if s <= max(4, self.hw.max_block_message_bytes)]
        else:
            sizes = [s for s in (128, 64, 32, 16, 12, 8, 4) if s <= self.hw.max_block_message_bytes]
        pieces, at = [], 0
        while at < total:
            size = next(s for s in sizes if s <= total - at)
            pieces.append((at, size))
            at += size
        return pieces

    def _block_payload(self, address: Address, start: int) -> VReg:
        """The address payload of a block message, or the one an earlier message of the same
        block still holds (a prefetch and then the load)."""
        key = (
            address.space,
            _value_key(address.base),
            _value_key(address.offset),
            start + address.displacement,
            address.bti,
        )
        payload = self.payloads.find(key)
        if payload is not None:
            return payload
        if (
            self.hw.has_lsc
            and isinstance(address.base, Region)
            and address.base.reg.id in self.pointer_registers
            and isinstance(address.offset, Constant)
            and int(address.offset.value) + start == 0
        ):
            return address.base.reg  # the pointer is the whole address: an LSC payload as it is
        payload = self.b.grfs(1, "addr")
        self._build_block_payload(payload, address, start)
        self.payloads.remember(key, payload, [address.base, address.offset])
        return payload

    def _build_block_payload(self, payload: VReg, address: Address, start: int) -> None:
        if address.bti is not None:
            # an A32 payload is the byte offset: LSC's in dword 0, an HDC block header's in dword 2
            # (the message reads no other dword; IGC's own stateful block reads on tgllp write only it)
            header, k = Region(payload, 0 if self.hw.has_lsc else 8, S32), address.displacement + start
            if isinstance(address.offset, Constant):
                self.b.alu("mov", header, [Constant(int(address.offset.value) + k, S32)])
            else:
                self.b.alu("add" if k else "mov", header, [address.offset] + [Constant(k, S32)] * bool(k))
            return
        offset = _plus(self.b, address.offset, start)
        if address.space == "slm":
            if isinstance(offset, Constant):
                self.b.alu("mov", Region(payload, 0, S32), [Constant(int(offset.value) + address.slm_base, S32)])
            else:
                self.b.alu("add", Region(payload, 0, S32), [offset, Constant(address.slm_base, S32)])
            return
        # (an A64 oword block header is its address in qword 0: the message ignores the other
        # dwords, and IGC's own block reads leave them as they are)
        address64(self.b, Region(payload, 0, U64), address.pointer, offset)

    def _block_message(self, op: str, address: Address, payload: VReg, start: int, size: int, data, predicate) -> None:
        space = address.space
        reg, reg_offset = (None, 0) if data is None else (data[0], data[1] + start)
        temp = None
        # The message needs a GRF-aligned register, and an LSC load leaves the rest of its last
        # GRF undefined: bytes of the buffer there go through a temporary.  (HDC's one-oword reads
        # come in low and high forms that fill half a register each: they keep the other half.)
        end = reg_offset + size
        undefined_tail = self.hw.has_lsc and reg is not None and op == "load" and end % self.grf and end < reg.size
        if reg is not None and (reg_offset % self.grf or undefined_tail):
            temp = self.b.grfs(-(-size // self.grf), "block")
            if op == "store" or predicate is not None:  # a masked-off load keeps the old bytes
                self._copy_bytes(temp, 0, reg, reg_offset, size)
            reg, reg_offset = temp, 0
        grfs = -(-size // self.grf)
        # the response fills `size` bytes (the rest of its last GRF is undefined, and nothing
        # lives there); a masked-off load fills none, so what was copied in above stays live
        filled = ((reg_offset, reg_offset + size),)
        if self.hw.has_lsc:
            sfid = "ugm" if space == "global" else "slm"
            asize, surface, exdesc = _lsc_addressing(address)
            if op == "store":
                desc = lsc_descriptor(LSC_STORE, asize, LSC_DATA[4], size // 4, True, 0, 1) | surface
                self.b.send(
                    sfid, None, payload, reg, desc, exdesc, grfs, 1, predicate, src1_offset=reg_offset, src1_used=size
                )
            else:
                rlen = 0 if op == "prefetch" else grfs
                desc = lsc_descriptor(LSC_LOAD, asize, LSC_DATA[4], size // 4, True, rlen, 1) | surface
                self.b.send(
                    sfid,
                    reg if op != "prefetch" else None,
                    payload,
                    None,
                    desc,
                    exdesc,
                    0,
                    1,
                    predicate,
                    dst_offset=reg_offset,
                    filled=filled,
                )
        elif address.bti is not None:  # A32 unaligned oword block read of a surface
            desc = hdc_descriptor(address.bti, OWORD_BLOCKS[size], 0x01, True, grfs, 1)
            self.b.send("dc0", reg, payload, None, desc, 0, 0, 1, predicate, dst_offset=reg_offset, filled=filled)
        else:  # A64 unaligned oword block read
            control = 1 << 3 | OWORD_BLOCKS[size]
            desc = hdc_descriptor(HDC_STATELESS, control, 0x14, True, grfs, 1)
            self.b.send("dc1", reg, payload, None, desc, 0, 0, 1, predicate, dst_offset=reg_offset, filled=filled)
        if temp is not None and op == "load":
            with self.b.sinkable():
                self._copy_bytes(data[0], data[1] + start, temp, 0, size)

    def _copy_bytes(self, dst: VReg, dst_offset: int, src: VReg, src_offset: int, size: int) -> None:
        t = U32 if size % 4 == 0 and dst_offset % 4 == 0 and src_offset % 4 == 0 else U8
        n = size // t.size
        self.b.alu("mov", Region(dst, dst_offset, t, n), [Region(src, src_offset, t, n)])

    def _scalar_predicate(self, mask) -> Predicate | None:
        if mask is None:
            return None
        v = self.x.value(mask) if isinstance(mask, E.BoolImm) else None
        if isinstance(v, Constant):
            if v.value:
                return None
            raise _Skip()
        return Predicate(self.x.conditions.flag(mask, 1))

    # --- 2D blocks ----------------------------------------------------------------------------
    def block2d(self, f: Send, args: tuple) -> None:
        """An LSC 2D block load (or prefetch): a one-GRF header, exec size 1, the block into
        whole GRFs (docs/messages.md)."""
        mem, x, y, reg, mask = args
        if not self.hw.has_block2d:
            raise UnsupportedError(f"{self.hw} has no 2D block messages")
        data = None if reg is None else self.register(reg, "register")
        size = f.register_bytes
        self._check_register(data, size, f)
        grfs = size // self.grf
        if f.op == "load" and data is not None and (size % self.grf or data[1] % self.grf or not 1 <= grfs <= 31):
            raise UnsupportedError(
                f"a block2d load fills whole GRFs (1 to 31) from a GRF boundary, not {size} "
                f"bytes at byte {data[1]} of its buffer"
            )
        header = self._block2d_header(self._flat(self.address(mem)), f, (self._offset(x), self._offset(y)))
        predicate = self._scalar_predicate(mask)
        rlen = 0 if f.op == "prefetch" else grfs
        desc = (
            LSC_LOAD_BLOCK2D
            | int(f.transform == "vnni") << 7
            | LSC_BLOCK2D_DATA[f.type.size] << 9
            | int(f.transform == "transpose") << 15
            | rlen << 20
            | 1 << 25
        )
        if f.op == "prefetch" or data is None:
            self.b.send("ugm", None, header, None, desc, 0, 0, 1, predicate)
            return
        self.b.send(
            "ugm",
            data[0],
            header,
            None,
            desc,
            0,
            0,
            1,
            predicate,
            dst_offset=data[1],
            filled=((data[1], data[1] + size),),
        )

    def _block2d_header(self, address: Address, f: Send, coordinates: tuple[Value, Value]) -> VReg:
        """The header of a 2D block message: the one an earlier message of the same surface and
        block shape left (in the same basic block, nothing having written it since), with only
        the coordinates it does not hold already written; else a new one.  The loads of one
        operand differ in their coordinates only, so a loop's messages write two dwords each
        instead of eight."""
        assert isinstance(address.base, Region)  # a global buffer's address (the IR allows no other)
        shape = (f.count - 1) | (f.elems - 1) << 8
        key = ("block2d", _value_key(address.base), _value_key(address.offset), f.width, f.height, f.pitch, shape)
        header = self.payloads.find(key)
        if header is None:
            header = self.b.grfs(1, "block2d")
            address64(self.b, Region(header, 0, U64), address.base, address.offset)
            for offset, field in ((8, f.width - 1), (12, f.height - 1), (16, f.pitch - 1), (28, shape)):
                self.b.alu("mov", Region(header, offset, U32), [Constant(field, U32)])
            self._coordinates[key] = [None, None]
        held = self._coordinates[key]
        for index, (offset, value) in enumerate(zip((20, 24), coordinates, strict=True)):
            mark = held[index]
            if mark is None or mark[0] != _value_key(value) or not self.payloads.unchanged(mark[1]):
                self.b.alu("mov", Region(header, offset, S32), [value])
                held[index] = (_value_key(value), self.payloads.checkpoint([value]))
        self.payloads.remember(key, header, [address.base, address.offset])
        return header

    # --- scattered ----------------------------------------------------------------------------
    def scattered(
        self,
        op: str,
        address: Address,
        offsets: Value | Progression,
        t: Type,
        count: int,
        elems: int,
        data,
        mask,
        register_start: int = 0,
    ) -> None:
        size = t.size
        if size not in (1, 2, 4, 8):
            raise UnsupportedError(f"messages on {t} elements are not supported")
        if size == 8:
            address = self._flat(address)  # (no A32 qword scattered message here)
        if op == "prefetch":
            if not self.hw.has_lsc:
                return
            data = None
        # split the element components into messages: d32/d64 vectors of up to 4, or one
        # component per message for 8/16-bit data
        per_message = min(elems, 4) if size >= 4 else 1
        if per_message == 3 and not self.hw.has_lsc:
            per_message = 3
        groups = self._lane_groups(count)
        predicate_of = self._lane_predicate(mask, count, groups)
        components = []
        for first in range(0, elems, per_message):
            components.append((first, min(per_message, elems - first)))
        for first, vec in components:
            element_offset = first * size
            for lane0, lanes, exec_size in groups:
                payload = self._lane_addresses(address, offsets, lane0, lanes, exec_size, element_offset)
                predicate, channel = predicate_of((lane0, lanes, exec_size))
                self._simt_message(
                    op, address, payload, t, count, first, vec, lane0, lanes, exec_size, data, predicate, channel
                )

    def _lane_groups(self, count: int) -> list[tuple[int, int, int]]:
        """(first slot, slots, exec size) of each SIMT message: full messages of the widest
        SIMD, then one padded to a power of two (its extra lanes masked off), so every message
        starts on a channel offset the encoding has."""
        simd = self.hw.max_message_simd
        narrowest = 8 if not self.hw.has_lsc else 1
        groups = []
        for at in range(0, count, simd):
            lanes = min(simd, count - at)
            exec_size = max(narrowest, 1 << (lanes - 1).bit_length())
            groups.append((at, lanes, exec_size))
        return groups

    def _lane_predicate(self, mask, count: int, groups):
        """A function giving, for each message group, (predicate, channel offset): which lanes
        run (the mask's, and never the padding lanes past `count`)."""
        padded = any(lanes < exec_size for _, lanes, exec_size in groups)
        if mask is not None and isinstance(mask, E.BoolImm):
            if not mask.value:
                raise _Skip()
            mask = None
        span = max(lane0 + exec_size for lane0, _, exec_size in groups)
        widest = max(exec_size for _, _, exec_size in groups)
        scratch = self.b.scratch_flag()

        def low_bits(lanes: int, exec_size: int, base: Flag | None) -> Predicate:
            """The first `lanes` bits (of `base`, or all set), in the scratch flag."""
            word = Reg("f", scratch.reg, 0, "ud")
            bits = Constant((1 << lanes) - 1, U32)
            if base is None:
                self.b.alu("mov", word, [bits], lanes=1, types=("ud", "ud"))
            else:
                self.b.alu(
                    "and", word, [PhysicalOperand(Reg("f", base.reg, 0, "ud")), bits], lanes=1, types=("ud",) * 3
                )
            return Predicate(Flag(scratch.reg, 0))

        if mask is None:

            def unmasked(group):
                lane0, lanes, exec_size = group
                return (low_bits(lanes, exec_size, None) if lanes < exec_size else None), 0

            return unmasked
        if mask.type.lanes == 1:  # every lane alike: one flag, read from channel 0 by every group
            flag = self.x.conditions.flag(mask, widest, width=32 if padded else widest)

            def scalar(group):
                lane0, lanes, exec_size = group
                return (low_bits(lanes, exec_size, flag) if lanes < exec_size else Predicate(flag)), 0

            return scalar
        if span > 32:
            raise UnsupportedError(f"a mask of {count} message lanes does not fit a flag register")
        flag = self.x.conditions.flag(mask, count, width=span)
        if padded:
            reg = Reg("f", flag.reg, 0, "ud") if flag.subreg == 0 else Reg("f", flag.reg, flag.subreg, "uw")
            limit = ((1 << count) - 1) & (0xFFFF if reg.type == "uw" else 0xFFFFFFFF)
            self.b.alu("and", reg, [PhysicalOperand(reg), Constant(limit, U32)], lanes=1, types=(reg.type,) * 3)

        def vector(group):
            return Predicate(flag), group[0]

        return vector

    def _lane_addresses(
        self, address: Address, offsets: Value | Progression, lane0: int, lanes: int, exec_size: int, extra: int
    ) -> VReg:
        """The address payload of one SIMT message: one address per lane (padding lanes repeat
        the last slot's address)."""
        a64 = address.space == "global" and address.bti is None
        width = 8 if a64 else 4
        payload = self.b.grfs(-(-exec_size * width // self.grf), "addr")
        part = _lanes_of(offsets, lane0, lanes, self.x)
        if address.bti is not None:  # A32 byte offsets into the surface: the payload is the offsets
            dst, k = Region(payload, 0, S32, lanes), address.displacement + extra
            if isinstance(address.offset, Constant):
                k += int(address.offset.value)
                self.b.alu("add" if k else "mov", dst, [_at(part, lanes)] + [Constant(k, S32)] * bool(k))
                return payload
            uniform = address.offset.broadcast(lanes) if address.offset.lanes == 1 and lanes > 1 else address.offset
            self.b.alu("add", dst, [_at(part, lanes), uniform])
            if k:
                self.b.alu("add", dst, [dst, Constant(k, S32)])
            return payload
        if isinstance(address.offset, Constant):
            shift = int(address.offset.value) + extra
            per_lane = _plus(self.b, part, shift)
        else:
            per_lane = self.b.temp(S32, lanes)
            self.b.alu(
                "add",
                per_lane,
                [
                    _at(part, lanes),
                    address.offset.broadcast(lanes) if address.offset.lanes == 1 and lanes > 1 else address.offset,
                ],
            )
            if extra:
                self.b.alu("add", per_lane, [per_lane, Constant(extra, S32)])
        if a64:
            address64(self.b, Region(payload, 0, U64, lanes), address.pointer, _at(per_lane, lanes))
        else:
            self.b.alu("add", Region(payload, 0, S32, lanes), [_at(per_lane, lanes), Constant(address.slm_base, S32)])
        return payload

    def _simt_message(
        self,
        op: str,
        address: Address,
        payload: VReg,
        t: Type,
        count: int,
        first: int,
        vec: int,
        lane0: int,
        lanes: int,
        exec_size: int,
        data,
        predicate,
        channel: int,
    ) -> None:
        size = t.size
        slot = 8 if size == 8 else 4
        pitch = self.grf * max(1, -(-exec_size * slot // self.grf))
        data_grfs = vec * pitch // self.grf
        # where the IR keeps component e of slot s: data offset + (e * count + s) * size
        direct = None
        if data is not None and slot == size and data[1] % self.grf == 0:
            base = data[1] + (first * count + lane0) * size
            if base % self.grf == 0 and (vec == 1 or count * size == pitch) and lanes == exec_size:
                direct = base
        message = None
        if data is not None and op != "prefetch":
            message = data[0] if direct is not None else self.b.grfs(data_grfs, "data")
        offset = direct if direct is not None else 0
        space = address.space
        mlen = -(-exec_size * (8 if space == "global" and address.bti is None else 4) // self.grf)
        masked_load = op == "load" and predicate is not None
        if (op == "store" or masked_load) and direct is None:  # masked-off lanes keep the old values
            assert message is not None  # (data to store or load)
            for k in range(vec):
                src = self._ir_component(data, t, count, first + k, lane0, lanes)
                self._copy_component(Region(message, k * pitch, t, lanes, slot // size if size < 4 else 1), src)
        # every lane's slot of every component (unless the send is predicated)
        filled = tuple((offset + k * pitch, offset + k * pitch + exec_size * slot) for k in range(vec))
        if self.hw.has_lsc:
            self._lsc_simt(
                op, address, payload, message, offset, t, vec, exec_size, channel, mlen, data_grfs, predicate, filled
            )
        else:
            self._hdc_simt(
                op, address, payload, message, offset, t, vec, exec_size, channel, mlen, data_grfs, predicate, filled
            )
        if op == "load" and direct is None:
            assert message is not None  # (data to load)
            with self.b.sinkable():
                for k in range(vec):
                    dst = self._ir_component(data, t, count, first + k, lane0, lanes)
                    src = Region(message, k * pitch, t, lanes, slot // size if size < 4 else 1)
                    self._copy_component(dst, src)

    def _ir_component(self, data, t: Type, count: int, element: int, lane0: int, lanes: int) -> Region:
        return Region(data[0], data[1] + (element * count + lane0) * t.size, t, lanes, 1)

    def _copy_component(
        self, dst: Region, src: Region, predicate: Predicate | None = None, channel_base: int = 0
    ) -> None:
        """Bits of `src` to `dst` (8-byte elements as dword pairs where there is no :uq)."""
        if src.type.size == 8 and not self.hw.has_int64_arithmetic:
            for part in (0, 1):
                self.b.alu(
                    "mov",
                    halves(dst)[part],
                    [halves(src)[part]],
                    predicate=predicate,
                    channel_base=channel_base,
                    types=("ud", "ud"),
                )
            return
        self.b.alu(
            "mov", dst, [src], predicate=predicate, channel_base=channel_base, types=(_raw(src.type), _raw(src.type))
        )

    def _lsc_simt(
        self, op, address, payload, message, offset, t: Type, vec, exec_size, lane0, mlen, data_grfs, predicate, filled
    ) -> None:
        sfid = "ugm" if address.space == "global" else "slm"
        asize, surface, exdesc = _lsc_addressing(address)
        data = LSC_DATA[t.size]
        if op == "store":
            desc = lsc_descriptor(LSC_STORE, asize, data, vec, False, 0, mlen) | surface
            self.b.send(sfid, None, payload, message, desc, exdesc, data_grfs, exec_size, predicate, src1_offset=offset)
        else:
            rlen = 0 if op == "prefetch" else data_grfs
            desc = lsc_descriptor(LSC_LOAD, asize, data, vec, False, rlen, mlen) | surface
            self.b.send(
                sfid,
                message if op != "prefetch" else None,
                payload,
                None,
                desc,
                exdesc,
                0,
                exec_size,
                predicate,
                dst_offset=offset,
                filled=filled,
            )
        self._with_channel(lane0)

    def _hdc_simt(
        self, op, address, payload, message, offset, t: Type, vec, exec_size, lane0, mlen, data_grfs, predicate, filled
    ) -> None:
        write = op == "store"
        a64 = address.space == "global" and address.bti is None
        bti = HDC_STATELESS if a64 else HDC_SLM if address.bti is None else address.bti
        simd16 = exec_size > 8
        if t.size == 4:
            control = (0xF & ~((1 << vec) - 1)) | (1 if simd16 else 2) << 4
            kind = (0x19 if write else 0x11) if a64 else (0x09 if write else 0x01)
            sfid = "dc1"
        elif t.size == 8 and a64:
            control = 2 | {1: 0, 2: 1, 4: 2}[vec] << 2 | int(simd16) << 4
            kind, sfid = (0x1A if write else 0x10), "dc1"
        elif t.size in (1, 2):
            code = {1: 0, 2: 1}[t.size]
            if a64:
                control = 0 | code << 2 | int(simd16) << 4
                kind, sfid = (0x1A if write else 0x10), "dc1"
            else:
                control = int(simd16) | code << 2
                kind, sfid = (0x0C if write else 0x04), "dc0"
        else:
            raise UnsupportedError(f"{t} messages on SLM are not supported on {self.hw.display_name}")
        if write:
            desc = hdc_descriptor(bti, control, kind, False, 0, mlen)
            self.b.send(sfid, None, payload, message, desc, 0, data_grfs, exec_size, predicate, src1_offset=offset)
        else:
            desc = hdc_descriptor(bti, control, kind, False, data_grfs, mlen)
            self.b.send(
                sfid, message, payload, None, desc, 0, 0, exec_size, predicate, dst_offset=offset, filled=filled
            )
        self._with_channel(lane0)

    def _with_channel(self, lane0: int) -> None:
        """Give the last send its channel offset (which flag bits its lanes read)."""
        if lane0:
            op = self.b.program.items[-1]
            assert isinstance(op, Op) and op.inst is not None  # (the send just emitted)
            op.inst = replace(op.inst, channel_offset=lane0)

    # --- atomics ------------------------------------------------------------------------------
    def atomic(
        self, name: str, address: Address, offsets: Value, t: Type, count: int, data, mask, returns: bool = False
    ) -> None:
        """SIMT atomics, one message per lane group.  With `returns`, each message's response
        (one slot per lane, as its operands) goes back over component 0 of `data`."""
        address = self._flat(address)  # (global atomics are A64 messages here)
        size = t.size
        if size not in (4, 8) and not (size == 2 and t.is_int and self.hw.has_lsc):
            raise UnsupportedError(f"atomics on {t} are not supported")
        # HDC has no float exchange: the integer one moves the same bits
        float_message = t.is_float and (self.hw.has_lsc or name != "xchg")
        if float_message:
            table = LSC_ATOMICS_FLOAT if self.hw.has_lsc else HDC_ATOMICS_FLOAT
            if address.space == "slm" and name in ("fadd", "fsub", "add", "sub"):
                raise UnsupportedError("floating-point add/sub atomics on SLM are not supported")
        else:
            table = dict(LSC_ATOMICS_INT if self.hw.has_lsc else HDC_ATOMICS_INT)
            signed = t.is_signed
            if self.hw.has_lsc:
                table.update({"min": 0x0E if signed else 0x10, "max": 0x0F if signed else 0x11})
            else:
                table.update({"min": 0xB if signed else 0xD, "max": 0xA if signed else 0xC})
        if name not in table:
            raise UnsupportedError(f"atomic {name} on {t} is not supported on {self.hw.display_name}")
        opcode = table[name]
        operands = 0 if name in ("inc", "dec") else 2 if name == "cmpxchg" else 1
        groups = self._lane_groups(count) if self.hw.has_lsc else _groups_of(count, 8)
        predicate_of = self._lane_predicate(mask, count, groups)
        slot = 8 if size == 8 else 4
        for lane0, lanes, exec_size in groups:
            payload = self._lane_addresses(address, offsets, lane0, lanes, exec_size, 0)
            pitch = self.grf * max(1, -(-exec_size * slot // self.grf))
            message = None
            if operands:
                message = self.b.grfs(operands * pitch // self.grf, "data")
                for k in range(operands):
                    src = Region(data[0], data[1] + (k * count + lane0) * size, t, lanes)
                    self._copy_component(Region(message, k * pitch, t, lanes, slot // size if size < 4 else 1), src)
            predicate, channel = predicate_of((lane0, lanes, exec_size))
            mlen = -(-exec_size * (8 if address.space == "global" else 4) // self.grf)
            src1 = operands * pitch // self.grf
            rlen = pitch // self.grf if returns else 0
            if self.hw.has_lsc:
                sfid = "ugm" if address.space == "global" else "slm"
                asize = LSC_A64 if address.space == "global" else LSC_A32
                desc = lsc_descriptor(opcode, asize, LSC_DATA[size], 1, False, rlen, mlen)
            else:
                a64 = address.space == "global"
                kind = (0x1D if float_message else 0x12) if a64 else (0x1B if float_message else 0x02)
                # [4]: A64 64-bit data, A32 SIMD8; [5]: return the old values
                control = opcode | (int(size == 8) << 4 if a64 else 1 << 4) | int(returns) << 5
                desc = hdc_descriptor(HDC_STATELESS if a64 else HDC_SLM, control, kind, False, rlen, mlen)
                sfid = "dc1"
            if not returns:
                self.b.send(sfid, None, payload, message, desc, 0, src1, exec_size, predicate)
                self._with_channel(channel)
                continue
            # the old values: straight into `data` where its slots are the response's, else
            # through a response register, which holds the current values of masked-off slots
            # (its padding lanes are not copied back)
            old = Region(data[0], data[1] + lane0 * size, t, lanes)
            direct = slot == size and old.offset % self.grf == 0 and lanes == exec_size
            response = data[0] if direct else self.b.grfs(rlen, "old")
            at = old.offset if direct else 0
            returned = Region(response, at, t, lanes, slot // size if size < 4 else 1)
            if not direct and mask is not None and predicate is not None:
                self._copy_component(returned, old)
            filled = ((at, at + exec_size * slot),)
            self.b.send(
                sfid, response, payload, message, desc, 0, src1, exec_size, predicate, dst_offset=at, filled=filled
            )
            self._with_channel(channel)
            if not direct:
                with self.b.sinkable():
                    self._copy_component(old, returned)


def _lsc_addressing(address: Address) -> tuple[int, int, int]:
    """(address size, descriptor address-type bits, extended descriptor) of an LSC message: a
    surface is A32 through its binding table index (address type 3, the index in exDesc[31:24]),
    global memory flat A64, SLM flat A32."""
    if address.bti is not None:
        return LSC_A32, 3 << 29, address.bti << 24
    return (LSC_A64 if address.space == "global" else LSC_A32), 0, 0


def _variable_plus_constant(offset: E.Expr) -> tuple[E.Var, int] | None:
    """(v, c) when a memory offset is a variable (c = 0) or an s32 variable plus a constant.
    Computing base + v and then + c in 64 bits equals base + (v + c) for every offset a message
    can validly reach (v + c does not wrap: the conv builder keeps indices within s32)."""
    if isinstance(offset, E.Var):
        return offset, 0
    if not (isinstance(offset, E.Binary) and offset.op == "add" and offset.type == S32):
        return None
    for variable, constant in ((offset.a, offset.b), (offset.b, offset.a)):
        if isinstance(variable, E.Var) and variable.type == S32 and isinstance(constant, E.IntImm):
            return variable, int(constant.value)
    return None


def _value_key(value) -> tuple:
    """What identifies a value: its register bytes (the register by identity) or its constant."""
    if isinstance(value, Region):
        return ("r", value.reg.id, value.offset, value.type, value.lanes, value.stride, value.negate)
    if isinstance(value, Constant):
        return ("c", value.value, value.type, value.lanes)
    return ("i", value)


class Payloads:
    """Message payloads built so far, reusable while nothing can have changed them: in the same
    basic block (no label or jump since), with neither the payload nor the registers it was
    computed from written since."""

    LOOKBACK = 512  # items scanned at most; older payloads are built again

    def __init__(self, program, enabled: bool):
        self.program = program
        self.enabled = enabled
        self.built: dict[tuple, tuple[VReg, Checkpoint]] = {}

    def remember(self, key: tuple, payload: VReg, sources) -> None:
        if not self.enabled:
            return
        watched = self.checkpoint(sources)
        self.built[key] = (payload, replace(watched, spans=(Span(payload.id, 0, payload.reserved), *watched.spans)))

    def find(self, key: tuple) -> VReg | None:
        if key not in self.built:
            return None
        payload, since = self.built[key]
        if not self.unchanged(since):
            del self.built[key]
            return None
        return payload

    def checkpoint(self, sources) -> Checkpoint:
        """The program's end now, with the bytes of the registers among `sources`."""
        spans = tuple(Span(s.reg.id, s.offset, s.end) for s in sources if isinstance(s, Region))
        return Checkpoint(len(self.program.items), spans)

    def unchanged(self, checkpoint: Checkpoint) -> bool:
        """Whether the bytes of `checkpoint` still hold what they held then: nothing has written
        them since, on the only path (no label or jump between)."""
        items = self.program.items
        since = checkpoint.items
        return len(items) - since <= self.LOOKBACK and all(_keeps(item, checkpoint.spans) for item in items[since:])


@dataclass(frozen=True)
class Checkpoint:
    """A point of the program (its item count then) and register bytes to watch from it."""

    items: int
    spans: tuple[Span, ...]


def _keeps(item, spans: tuple[Span, ...]) -> bool:
    """Whether `item` leaves the bytes `spans` as they were, on the only path through it."""
    if isinstance(item, Label) or (item.inst is not None and item.inst.opcode == "jmpi"):
        return False
    return not any(
        w.reg == s.reg and w.start < s.end and s.start < w.end for w in (*item.writes, *item.kills) for s in spans
    )


@dataclass(frozen=True)
class Progression:
    """Slot offsets start + i * step, materialized one message group at a time."""

    start: int
    step: int


class _Skip(Exception):
    """A message whose mask is constant false: nothing to do."""


def _groups_of(count: int, simd: int) -> list[tuple[int, int, int]]:
    return [(at, min(simd, count - at), simd) for at in range(0, count, simd)]


def _raw(t: Type) -> str:
    """The Xe type moving `t` bit for bit."""
    return {1: "ub", 2: "uw", 4: "ud", 8: "uq"}[t.size]


def _lanes_of(offsets, lane0: int, lanes: int, lowering=None) -> Value:
    if isinstance(offsets, Progression):
        first = offsets.start + lane0 * offsets.step
        if lanes == 1:
            return Constant(first, S32)
        return lowering.value(
            E.Shuffle(tuple(E.const(first + i * offsets.step, S32) for i in range(lanes)), tuple(range(lanes)))
        )
    if isinstance(offsets, Constant):
        return offsets.broadcast(lanes) if lanes > 1 else Constant(offsets.value, offsets.type)
    if offsets.lanes == 1 or offsets.stride == 0:
        return offsets.broadcast(lanes) if lanes > 1 else Region(offsets.reg, offsets.offset, offsets.type)
    return offsets.slice(lane0, lanes)


def _at(v: Value, lanes: int) -> Value:
    if isinstance(v, Constant):
        return v.broadcast(lanes)
    if v.lanes == 1 and lanes > 1:
        return v.broadcast(lanes)
    return v


def _plus(b: Builder, v: Value, k: int) -> Value:
    """v + k (s32)."""
    if k == 0:
        return v
    if isinstance(v, Constant):
        return Constant(int(v.value) + k, S32, v.lanes)
    out = b.temp(S32, v.lanes if v.stride else 1)
    b.alu("add", out, [v if v.stride or v.lanes == 1 else Region(v.reg, v.offset, v.type), Constant(k, S32)])
    return out if v.stride or v.lanes == 1 else out.broadcast(v.lanes)


def address64(b: Builder, dst: Region, base: Region, offsets: Value) -> None:
    """dst (64-bit lanes) = base (a 64-bit scalar) + sign-extended s32 offsets."""
    lanes = dst.lanes
    if lanes == 1 and isinstance(offsets, Constant) and int(offsets.value) == 0:  # a copy: both dwords at once
        b.alu("mov", Region(dst.reg, dst.offset, U32, 2, 1), [Region(base.reg, base.offset, U32, 2, 1)])
        return
    if b.hw.has_int64_arithmetic:
        base64 = Region(base.reg, base.offset, S64)
        b.alu(
            "add",
            Region(dst.reg, dst.offset, S64, lanes, dst.stride),
            [base64.broadcast(lanes) if lanes > 1 else base64, _at(offsets, lanes)],
        )
        return
    base_low, base_high = halves(Region(base.reg, base.offset, U64))

    def fits(start: int, n: int) -> bool:  # the run's addc (or subb) is one instruction
        low = halves(Region(dst.reg, dst.slice(start, n).offset, U64, n, 1))[0]
        off = Constant(0, U32, n) if isinstance(offsets, Constant) else _lanes_of(offsets, start, n)
        return b.one_instruction("addc", low, [base_low.broadcast(n), off], n, ("ud",) * 3)

    # acc0 holds one register of carries, from each addc's channel 0 (see accumulator_runs)
    for start, n in accumulator_runs(lanes, b.grf // 4, fits):
        part = dst.slice(start, n) if lanes > 1 else dst
        low, high = halves(Region(part.reg, part.offset, U64, n, 1))
        bh = base_high.broadcast(n) if n > 1 else base_high
        if isinstance(offsets, Constant) and int(offsets.value) < 0 and not b.hw.has_add3:
            # base - |c|, and the borrow from the high half: two instructions, where a carry
            # and a sign of -1 take three
            b.alu(
                "subb",
                low,
                [base_low.broadcast(n) if n > 1 else base_low, Constant(-int(offsets.value), U32, n)],
                options=("AccWrEn",),
                types=("ud", "ud", "ud"),
            )
            borrow = PhysicalOperand(Reg("acc", 0, 0, "d", neg=True), vector=n > 1)
            b.alu("add", high, [bh, borrow], types=("ud", "ud", "d"))
            continue
        if isinstance(offsets, Constant):
            off: Value = Constant(int(offsets.value) & 0xFFFFFFFF, U32, n)
            sign: Value = Constant(-1 if int(offsets.value) < 0 else 0, S32, n)
        else:
            off = _lanes_of(offsets, start, n)
            sign = b.temp(S32, n)
            b.alu("asr", sign, [off, Constant(31, U32)], types=("d", "d", "ud"))
        b.alu(
            "addc",
            low,
            [base_low.broadcast(n) if n > 1 else base_low, off],
            options=("AccWrEn",),
            types=("ud", "ud", "ud"),
        )
        carry = PhysicalOperand(Reg("acc", 0, 0, "ud"), vector=n > 1)
        if b.hw.has_add3:
            b.alu("add3", high, [bh, carry, sign], types=("ud", "ud", "ud", "d"))
        else:
            b.alu("add", high, [bh, carry], types=("ud", "ud", "ud"))
            if not (isinstance(sign, Constant) and sign.value == 0):
                b.alu("add", high, [high, sign], types=("ud", "ud", "d"))
