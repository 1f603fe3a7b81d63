"""The dispatch ABI: how the runtime starts our threads, what they find, and the `.ze_info`
that tells it so (facts: docs/dispatch.md; the simulator follows NEO).

Geometry.  One IR thread is one hardware thread.  The kernel is dispatched at SIMD `simd`
(the spec's, if the platform runs it) with a work-group of (tg0 * simd, tg1, tg2) work-items,
required in `.ze_info` so the runtime cannot pick another: then thread t of a group has
lanes t*simd .. t*simd+simd-1, and (walk order x, y, z) its ids in the group are
t % tg0, t / tg0 % tg1, t / (tg0 * tg1).  Every instruction is NoMask, so the dispatch mask
never matters.

Payload.  Cross-thread data (CTD) holds the kernel arguments in order, pointers as 8-byte
stateless addresses (`arg_bypointer`) and values (`arg_byvalue`) at their natural alignment,
padded to 32 bytes.
- COMPUTE_WALKER platforms (XeHPG, XeHPC): the prologue loads the CTD from the indirect object
  heap, at r0.0 & ~63 relative to General State Base, with a transposed LSC load through
  `bti[255]`; with `inline_arguments` the first 32 bytes come as the walker's inline data in r1
  instead, and the heap holds only the rest, so a kernel whose arguments fit 32 bytes starts
  without waiting for a load.  Where a GRF holds 64 bytes (XeHPC) the inline data fill half of
  r1 and the rest is loaded from r2 on (a load lands at a GRF's start).  The thread index in the
  group is r0.2[7:0].
- GPGPU_WALKER (XeLP): the hardware pushes the local ids (when the group has more than one
  thread: 3 channels of 16-bit ids, one row per channel) from r1 and the CTD after them;
  thread ids come from lane 0's local ids.
Group ids are r0.1, r0.6, r0.7 everywhere.

The prologue also sets cr0 to keep denormals (the IR computes with IEEE denormals) with
round-to-nearest-even.  The end of thread copies r0 into the last GRF and sends it with EOT.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..emit.instruction import Instruction, Reg, imm
from ..emit.zebin import BindingTableIndex, ExecutionEnv, PayloadArgument, PerThreadPayloadArgument, ZebinKernel
from ..errors import ConfigError, UnsupportedError
from ..ir import expr as E
from ..ir.types import PTR, S32, U16, U32, Type
from .builder import Builder
from .expressions import Binding, GlobalBuffer
from .messages import LSC_A32, LSC_DATA, LSC_LOAD, lsc_descriptor
from .values import Constant, Region, VReg

CTD_ALIGNMENT = 32
INLINE_BYTES = 32  # COMPUTE_WALKER's inline data (NEO: getInlineDataSize)
CR0_DENORMALS = 0x4C0  # keep f64, f32 and f16 denormals; round to nearest even


@dataclass(frozen=True)
class ArgumentSlot:
    name: str
    index: int
    offset: int
    size: int
    type: Type


@dataclass(frozen=True)
class Payload:
    """Where everything a thread needs arrives."""

    simd: int
    local_size: tuple[int, int, int]
    arguments: tuple[ArgumentSlot, ...]
    ctd_bytes: int
    local_ids: bool  # XeLP: pushed per-thread local ids
    ptd_bytes: int
    inline_bytes: int = 0  # the CTD's first bytes, delivered by the walker in r1 (`inline_arguments`)
    surfaces: tuple[int, ...] = ()  # the buffer arguments with a surface, binding table index i for the i-th

    def surface(self, index: int) -> int | None:
        """The binding table index of buffer argument `index`'s surface, if it has one."""
        return self.surfaces.index(index) if index in self.surfaces else None

    @property
    def threads_per_group(self) -> int:
        return self.local_size[1] * self.local_size[2] * (self.local_size[0] // self.simd)


def plan_payload(spec, hw) -> Payload:
    simd = (
        spec.simd
        if spec.simd in hw.simd_widths
        else next((w for w in sorted(hw.simd_widths) if w >= spec.simd), max(hw.simd_widths))
    )
    tg = spec.thread_group
    local = (tg[0] * simd, tg[1], tg[2])
    items = local[0] * local[1] * local[2]
    if items > hw.max_work_group_size:
        raise ConfigError(
            f"kernel {spec.name}: a group of {tg[0] * tg[1] * tg[2]} threads at SIMD{simd} is {items} "
            f"work-items; {hw.display_name} allows {hw.max_work_group_size}"
        )
    if tg[0] * tg[1] * tg[2] > 255:
        raise ConfigError(f"kernel {spec.name}: at most 255 threads per group")
    slots, offset = [], 0
    for index, var in enumerate(spec.arguments):
        size = 8 if var.type.is_ptr else var.type.size
        if var.type.lanes != 1 or var.type.is_bool:
            raise UnsupportedError(f"argument '{var.name}' of type {var.type} is not supported")
        offset = -(-offset // size) * size
        slots.append(ArgumentSlot(var.name, index, offset, size, var.type))
        offset += size
    ctd = -(-offset // CTD_ALIGNMENT) * CTD_ALIGNMENT
    local_ids = not hw.compute_walker and tg[0] * tg[1] * tg[2] > 1
    ptd = 3 * -(-(simd * 2) // hw.grf_bytes) * hw.grf_bytes if local_ids else 0
    inline = INLINE_BYTES if hw.inline_arguments and slots else 0
    # Without a 64-bit add (XeLP, XeHPG) every buffer is also a surface of the binding table, as
    # IGC makes them by default: its A32 messages take a dword offset where an A64 address costs
    # two to four instructions of 32-bit arithmetic.  The runtime sets each surface's base to the
    # pointer passed (4-byte aligned, as a buffer's start is) when the kernel declares no buffer
    # offset.
    stateful = not (hw.has_int64_arithmetic or spec.stateless)
    surfaces = tuple(slot.index for slot in slots if slot.type.is_ptr) if stateful else ()
    return Payload(simd, local, tuple(slots), ctd, local_ids, ptd, inline, surfaces)


class Abi:
    """Emits the prologue and end of thread of a kernel; binds the external names."""

    def __init__(self, builder: Builder, spec, payload: Payload, grf_count: int):
        self.b = builder
        self.hw = builder.hw
        self.spec = spec
        self.payload = payload
        self.grf_count = grf_count
        g = self.hw.grf_bytes
        self.r0 = builder.vregs.new(g, "r0", g, fixed=0, whole_grfs=True)
        self.ptd: VReg | None = None
        if payload.local_ids:
            self.ptd = builder.vregs.new(payload.ptd_bytes, "ids", g, fixed=g, whole_grfs=True)

    def prologue(self, names_used: set[str]) -> dict[str, Binding | Deferred]:
        """Emit the prologue; returns bindings for the kernel's external names (plus the
        internal thread-index names the id expressions use)."""
        b = self.b
        b.emit(_cr0_denormals())
        bindings: dict[str, Binding | Deferred] = {}
        ctd = self._cross_thread_data() if self.payload.arguments else None
        for slot in self.payload.arguments:
            if slot.name not in names_used:
                continue
            assert ctd is not None  # (there are arguments)
            at = self._ctd_position(slot.offset)  # (an argument is aligned: never split by the inline data's end)
            if slot.type.is_ptr:
                bindings[slot.name] = GlobalBuffer(Region(ctd, at, PTR), self.payload.surface(slot.index))
            else:
                bindings[slot.name] = Region(ctd, at, slot.type)
        for dim, name in enumerate(self.spec.group_ids):
            bindings[name] = Region(self.r0, (1, 6, 7)[dim] * 4, S32)
        bindings.update(self._thread_ids(names_used))
        return bindings

    def _cross_thread_data(self) -> VReg:
        g = self.hw.grf_bytes
        size = self.payload.ctd_bytes
        if not self.hw.compute_walker:
            first = (1 + max(1, -(-self.payload.ptd_bytes // g))) * g
            if first + size > self.grf_count * g:
                raise ConfigError("the kernel arguments do not fit the GRF")
            return self.b.vregs.new(size, "args", g, fixed=first, whole_grfs=True)
        if not self.hw.has_lsc:
            raise UnsupportedError("loading kernel arguments needs LSC messages on this platform")
        inline = self.payload.inline_bytes  # CTD[0:inline] is in r1 already
        if inline:
            grfs = -(-inline // g) + -(-max(0, size - inline) // g)
            ctd = self.b.vregs.new(grfs * g, "args", g, fixed=g, whole_grfs=True)
        else:
            ctd = self.b.grfs(-(-size // g), "args")
        loaded = inline
        if loaded >= size:
            return ctd
        address = self.b.grfs(1, "ioh")
        self.b.alu("and", Region(address, 0, U32), [Region(self.r0, 0, U32), Constant(0xFFFFFFC0, U32)])
        while loaded < size:
            dwords = next(v for v in (64, 32, 16, 8) if v * 4 <= size - loaded)
            if loaded > inline:  # (the heap holds CTD[inline:])
                step = self.b.grfs(1, "ioh")
                self.b.alu("add", Region(step, 0, U32), [Region(address, 0, U32), Constant(loaded - inline, U32)])
                source = step
            else:
                source = address
            grfs = -(-dwords * 4 // g)
            desc = lsc_descriptor(LSC_LOAD, LSC_A32, LSC_DATA[4], dwords, True, grfs, 1) | 3 << 29
            self.b.send(
                "ugm",
                ctd,
                source,
                None,
                desc,
                0xFF000000,
                0,
                1,
                dst_offset=self._ctd_position(loaded),
                filled=((self._ctd_position(loaded), self._ctd_position(loaded) + dwords * 4),),
            )
            loaded += dwords * 4
        return ctd

    def _ctd_position(self, offset: int) -> int:
        """Where byte `offset` of the cross-thread data is in the arguments' registers: the
        inline bytes first, the loaded rest from the next GRF boundary on."""
        inline, g = self.payload.inline_bytes, self.hw.grf_bytes
        if offset < inline:
            return offset
        return -(-inline // g) * g + offset - inline

    def _thread_ids(self, names_used: set[str]) -> dict[str, Binding | Deferred]:
        """Thread ids in the group: constants where the group has one thread along a
        dimension, else `Deferred` expressions over the hardware's thread index."""
        tg = self.spec.thread_group
        used = [(dim, name) for dim, name in enumerate(self.spec.thread_ids) if name in names_used]
        bindings: dict[str, Binding | Deferred] = {}
        if all(tg[dim] == 1 for dim, _ in used):
            return {name: Constant(0, S32) for _, name in used}
        if self.hw.compute_walker:
            index = self.b.temp(U32, name="tid")
            self.b.alu("and", index, [Region(self.r0, 8, U32), Constant(0xFF, U32)])
            bindings["__thread"] = index
            t = E.Var("__thread", U32)  # unsigned: divisions by the group shape are shifts and masks
            parts = (t % tg[0], t / tg[0] % tg[1], t / (tg[0] * tg[1]))
            exprs = tuple(E.Cast(S32, p) for p in parts)
        else:  # lane 0's local ids: x = thread_id0 * simd, y, z
            row = self.payload.ptd_bytes // 3
            assert self.ptd is not None  # (the payload has local ids without a compute walker)
            for dim in range(3):
                bindings[f"__local{dim}"] = Region(self.ptd, dim * row, U16)
            ids = tuple(E.Cast(U32, E.Var(f"__local{dim}", U16)) for dim in range(3))
            exprs = tuple(E.Cast(S32, p) for p in (ids[0] / self.payload.simd, ids[1], ids[2]))
        for dim, name in used:
            bindings[name] = Constant(0, S32) if tg[dim] == 1 else Deferred(exprs[dim])
        return bindings

    def end_of_thread(self) -> None:
        g = self.hw.grf_bytes
        last = self.b.vregs.new(g, "eot", g, fixed=(self.grf_count - 1) * g, whole_grfs=True)
        self.b.alu("mov", Region(last, 0, U32, g // 4), [Region(self.r0, 0, U32, g // 4)])
        self.b.send(self.hw.eot_sfid, None, last, None, 0x02000010, 0, 0, 1, eot=True)

    def zebin_kernel(
        self, code: bytes, grf_count: int, slm_bytes: int, uses_barriers: bool, uses_dpas: bool, uses_atomics: bool
    ) -> ZebinKernel:
        payload = self.payload
        env = ExecutionEnv(
            grf_count=grf_count,
            simd_size=payload.simd,
            required_work_group_size=payload.local_size,
            barrier_count=1 if uses_barriers else 0,
            slm_size=slm_bytes,
            has_dpas=uses_dpas,
            has_global_atomics=uses_atomics,
            inline_data_payload_size=payload.inline_bytes,
        )
        arguments = []
        for slot in payload.arguments:
            if payload.surface(slot.index) is not None:
                # a surface of the binding table, and its address for the A64 messages
                arguments.append(
                    PayloadArgument(
                        "arg_bypointer",
                        0,
                        0,
                        arg_index=slot.index,
                        addrmode="stateful",
                        addrspace="global",
                        access_type="readwrite",
                    )
                )
                arguments.append(PayloadArgument("buffer_address", slot.offset, 8, arg_index=slot.index))
            elif slot.type.is_ptr:
                arguments.append(
                    PayloadArgument(
                        "arg_bypointer",
                        slot.offset,
                        8,
                        arg_index=slot.index,
                        addrmode="stateless",
                        addrspace="global",
                        access_type="readwrite",
                    )
                )
            else:
                arguments.append(PayloadArgument("arg_byvalue", slot.offset, slot.size, arg_index=slot.index))
        per_thread: tuple[PerThreadPayloadArgument, ...] = ()
        if payload.local_ids:
            per_thread = (PerThreadPayloadArgument("local_id", 0, payload.ptd_bytes),)
        table = tuple(BindingTableIndex(bti, index) for bti, index in enumerate(payload.surfaces))
        return ZebinKernel(self.spec.name, code, env, tuple(arguments), per_thread, table)


@dataclass(frozen=True)
class Deferred:
    """A thread id computed from the hardware's thread index by an IR expression."""

    expr: E.Expr


def _cr0_denormals():
    cr0 = Reg("cr", 0, 0, "ud")
    return Instruction("or", 1, dst=cr0.stride(1), srcs=(cr0.region(0, 1, 0), imm(CR0_DENORMALS, "ud")), no_mask=True)


__all__ = ["Abi", "Payload", "plan_payload", "BindingTableIndex"]
