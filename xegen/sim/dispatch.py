"""Dispatch a kernel the way Intel's runtime (NEO) does for a zebin: payload and threads.

What each thread finds at entry (see docs/dispatch.md):
- r0: group ids in r0.1/r0.6/r0.7; on COMPUTE_WALKER platforms r0.0 = offset of the group's
  indirect data from General State Base (64-byte aligned), r0.2[7:0] = thread index in the
  group and r0.2[31:24] = threads in the group.
- cross-thread data (CTD) laid out by `.ze_info` payload_arguments (padded to 32 bytes), and
  per-thread data (PTD): one row of 16-bit local ids per channel (x, y, z; 16 ids, 32 for
  SIMD32, a row rounded up to a GRF).
- GPGPU_WALKER (XeLP): the runtime generates the local ids and the hardware pushes PTD into
  r1.. and CTD after it.
- COMPUTE_WALKER (XeHPG, XeHPC), as NEO's EncodeDispatchKernel (xehp_and_later) does it:
  when the kernel declares `inline_data_payload_size`, the first min(32, CTD) bytes of CTD
  are the walker's inline data.  NEO then decides who generates the local ids
  (`hardware_walk_order`): the hardware, when the group's shape allows one of its walk
  orders, or the runtime.  Hardware ids arrive in r1.. (one row per channel, as PTD), the
  inline data in the GRF after them, and the thread starts at
  `offset_to_skip_per_thread_data_load` (past the kernel's own loading of the ids).
  Runtime ids are per-thread data in the indirect object heap (IOH), the inline data
  arrives in r1 and the thread starts at 0.  The IOH block of a group is [the rest of
  CTD][PTD of every thread]: r0.0 points at it, PTD starts at CTD - inline bytes (the value
  NEO patches into R_PER_THREAD_PAYLOAD_OFFSET relocations, `per_thread_data_offset`).
- Memory for threads: private memory (`per_thread_memory_buffers` global/private_space,
  times SIMD when `is_simt_thread`) indexed by the hardware thread id in sr0.0, scratch
  (type scratch: at least 1 KiB, rounded up to a power of two) at r0.5: a General-State-
  relative offset on XeLP, the scratch surface on XeHPG/XeHPC.  Threads of a batch occupy
  hardware thread slots 0.., encoded in sr0.0 the way IGC decodes them (`sr0_thread_ids`).
- The last thread of a group whose size is not a multiple of SIMD gets a partial dispatch
  mask.  Ranges that are not a multiple of the group size are split like NEO's walkers: the
  edge groups get a smaller `local_size` (enqueued_local_size keeps the requested one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import hw as hwlib
from ..emit.zebin import ZebinKernel
from ..errors import Error, UnsupportedError
from .memory import DeviceMemory, Surface

CTD_ALIGNMENT = 32
IOH_ALIGNMENT = 64
WALKER_INLINE_BYTES = 32  # COMPUTE_WALKER's inline data on XeHPG/XeHPC (NEO: WalkerType::getInlineDataSize)
MAX_HW_LOCAL_ID_ITEMS = 1024  # NEO generates ids itself for larger groups
# NEO's HwWalkOrderHelper::compatibleDimensionOrders: the walk orders the hardware generates ids in
HW_WALK_ORDERS = ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))
MIN_SCRATCH_BYTES = 1024  # NEO: per-thread scratch at least 1 KiB, then the next power of two
# r0.5 on COMPUTE_WALKER platforms: the scratch surface's offset in the surface state heap
# (bits 31:10); kernels pass r0.5 >> 4 as the extended descriptor of their scratch messages.
SCRATCH_SURFACE_STATE = 0x400
DEFAULT_MAX_THREADS = 1 << 20  # hardware threads one run may dispatch (see `prepare`)
MAX_PRIVATE_BYTES = 1 << 30  # private memory of all threads together
SIZE_LIMIT = 1 << 32  # global sizes and offsets: NEO's walkers count in 32 bits


@dataclass(frozen=True)
class LocalBuffer:
    """A `__local` pointer argument: the runtime reserves `size` bytes of SLM for it."""

    size: int


def local(size: int) -> LocalBuffer:
    """A `__local` pointer argument of `size` bytes (at least one, as OpenCL requires)."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size <= 0:
        raise Error(f"a __local buffer needs a positive number of bytes, not {size!r}")
    return LocalBuffer(int(size))


@dataclass(slots=True)
class Group:
    """One work-group: its id, local size, and its threads' channels."""

    id: tuple[int, int, int]
    local_size: tuple[int, int, int]
    threads: int
    block_offset: int = 0  # IOH offset of its [CTD rest][PTD...] block


@dataclass
class Launch:
    """Everything about a dispatch that does not depend on which batch runs it."""

    kernel: ZebinKernel
    platform: hwlib.Platform
    simd: int
    global_size: tuple[int, int, int]
    local_size: tuple[int, int, int]
    dimensions: int
    global_offset: tuple[int, int, int]
    groups: list[Group]
    ctd_size: int
    inline_size: int
    ptd_size: int
    ptd_channel_bytes: int
    packed_local_ids: bool
    thread_slots: int = 1  # hardware threads one batch may use (sr0 ids, private and scratch slots)
    ioh_base: int = 0
    blocks: dict = field(default_factory=dict)  # local size -> IOH offset
    surfaces: dict = field(default_factory=dict)
    slm_bytes: int = 0
    arg_addresses: dict = field(default_factory=dict)
    private_base: int = 0
    private_per_thread: int = 0
    scratch_per_thread: int = 0
    scratch_offset: int = 0  # General-State-relative start of thread slot 0's scratch
    hardware_ids: dict = field(default_factory=dict)  # local size -> walk order, when the hardware makes the ids
    arg_info: dict = field(default_factory=dict)  # index -> (name, OpenCL type) when the zebin says


def _triple(values: Sequence[int] | int, name: str, minimum: int = 1) -> tuple[tuple[int, int, int], int]:
    """Three sizes from 1 to 3 given ones (the rest 1), each >= `minimum` and below 2^32."""
    if isinstance(values, (int, np.integer)):
        values = (int(values),)
    values = tuple(int(v) for v in values)
    if not 1 <= len(values) <= 3:
        raise Error(f"{name} must have 1 to 3 dimensions, got {len(values)}")
    if any(v < minimum for v in values):
        raise Error(f"{name} {values} must be {'positive' if minimum else 'zero or more'} in every dimension")
    if any(v >= SIZE_LIMIT for v in values):
        raise Error(f"{name} {values} is too large: each dimension must be below 2^32")
    x, y, z = values + (1,) * (3 - len(values))
    return (x, y, z), len(values)


def thread_total(global_size: tuple[int, int, int], local_size: tuple[int, int, int], simd: int) -> int:
    """Hardware threads of a dispatch, edge groups included, without listing the groups."""
    sizes = []  # per dimension: [(group size, how many groups have it)]
    for total, local in zip(global_size, local_size, strict=True):
        full, edge = divmod(total, local)
        sizes.append([(local, full)] + ([(edge, 1)] if edge else []))
    return sum(
        count_x * count_y * count_z * -(-(x * y * z) // simd)
        for x, count_x in sizes[0]
        for y, count_y in sizes[1]
        for z, count_z in sizes[2]
    )


def walk_order(kernel: ZebinKernel) -> tuple[int, int, int]:
    order = kernel.execution_env.work_group_walk_order_dimensions
    return order if order else (0, 1, 2)


def local_ids(
    local_size: tuple[int, int, int], simd: int, threads: int, order: tuple[int, int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """(threads, simd, 3) 16-bit local ids and (threads, simd) live lanes of one group."""
    i = np.arange(threads * simd).reshape(threads, simd)
    items = local_size[0] * local_size[1] * local_size[2]
    d0, d1, d2 = order
    ids = np.zeros((threads, simd, 3), dtype=np.int64)
    ids[..., d0] = i % local_size[d0]
    ids[..., d1] = (i // local_size[d0]) % local_size[d1]
    ids[..., d2] = i // (local_size[d0] * local_size[d1])
    return ids.astype(np.uint16), i < items


def prepare(
    kernel: ZebinKernel,
    platform: hwlib.Platform,
    args: Sequence[Any],
    global_size,
    local_size,
    memory: DeviceMemory,
    global_offset=(0, 0, 0),
    arg_info: dict | None = None,
    max_threads: int = DEFAULT_MAX_THREADS,
    batch_threads: int = 4096,
) -> Launch:
    """Check a dispatch and lay out its groups, arguments and indirect object heap.  At most
    `max_threads` hardware threads: every group is listed, so a runaway NDRange is an error
    instead of a memory explosion.  Batches use at most `batch_threads` hardware threads."""
    env = kernel.execution_env
    simd = env.simd_size
    g, dims = _triple(global_size, "global size")
    local, local_dims = _triple(local_size, "local size")
    if local_dims != dims:
        raise Error(f"the local size has {local_dims} dimension(s) but the global size has {dims}")
    if env.required_work_group_size and tuple(env.required_work_group_size) != local:
        raise Error(f"kernel {kernel.name} requires local size {tuple(env.required_work_group_size)}, got {local}")
    items = local[0] * local[1] * local[2]
    if items > platform.max_work_group_size:
        raise Error(
            f"local size {local} has {items} work-items; {platform.display_name} allows at most "
            f"{platform.max_work_group_size}"
        )
    offset, _ = _triple(global_offset, "global offset", minimum=0)
    threads = thread_total(g, local, simd)
    if threads > max_threads:
        raise Error(
            f"global size {g} in groups of {local} needs {threads} SIMD{simd} threads; the simulator runs "
            f"at most {max_threads} in one run"
        )

    ctd_end = max((p.offset + p.size for p in kernel.payload_arguments), default=0)
    ctd_size = -(-ctd_end // CTD_ALIGNMENT) * CTD_ALIGNMENT
    ptd_size, packed = 0, False
    for p in kernel.per_thread_payload_arguments:
        if p.arg_type == "local_id":
            ptd_size = p.size
        elif p.arg_type == "packed_local_ids":
            ptd_size, packed = p.size, True
        else:
            raise UnsupportedError(f"per-thread payload '{p.arg_type}' is not supported")
    channel_bytes = 0
    if ptd_size and not packed:
        channel_bytes = local_id_channel_bytes(simd, platform.grf_bytes)
        if ptd_size % channel_bytes or not 1 <= ptd_size // channel_bytes <= 3:
            raise UnsupportedError(
                f"local_id payload of {ptd_size} bytes for SIMD{simd} is not understood "
                f"(NEO takes 1 to 3 rows of {channel_bytes} bytes)"
            )

    counts = tuple(-(-g[d] // local[d]) for d in range(3))
    groups = []
    for gz in range(counts[2]):
        for gy in range(counts[1]):
            for gx in range(counts[0]):
                gid = (gx, gy, gz)
                x, y, z = (min(local[d], g[d] - gid[d] * local[d]) for d in range(3))
                groups.append(Group(gid, (x, y, z), max(1, -(-(x * y * z) // simd))))
    inline = min(WALKER_INLINE_BYTES, ctd_size) if platform.compute_walker and env.inline_data_payload_size else 0
    launch = Launch(
        kernel,
        platform,
        simd,
        g,
        local,
        dims,
        offset,
        groups,
        ctd_size,
        inline,
        ptd_size,
        channel_bytes,
        packed,
        arg_info=dict(arg_info or {}),
    )
    # a batch holds whole groups, so at least the largest (at most 1024 threads: fewer than the slots)
    launch.thread_slots = max(
        min(threads, batch_threads, thread_slot_count(platform)), max(grp.threads for grp in groups)
    )
    for grp in groups:
        if grp.local_size not in launch.hardware_ids:
            launch.hardware_ids[grp.local_size] = hardware_walk_order(launch, grp.local_size)
    _map_arguments(launch, args, memory)
    if (launch.private_per_thread + launch.scratch_per_thread) * launch.thread_slots > MAX_PRIVATE_BYTES:
        raise Error(
            f"{launch.thread_slots} threads with {launch.private_per_thread + launch.scratch_per_thread} "
            f"bytes of private memory and scratch each need more than {MAX_PRIVATE_BYTES >> 30} GiB; "
            "use a smaller batch"
        )
    _build_ioh(launch, memory)
    return launch


def local_id_channel_bytes(simd: int, grf_bytes: int) -> int:
    """Bytes of one row of local ids (NEO's zebin decoder: 16 ids, 32 for SIMD32, GRF-aligned)."""
    return -(-(32 if simd == 32 else 16) * 2 // grf_bytes) * grf_bytes


def local_id_channels(launch: Launch) -> int:
    if launch.packed_local_ids:
        return launch.ptd_size // 2
    return launch.ptd_size // launch.ptd_channel_bytes if launch.ptd_size else 0


def hardware_walk_order(launch: Launch, size: tuple[int, int, int]) -> tuple[int, int, int] | None:
    """The walk order the hardware generates the local ids of a `size` group in, or None when
    the runtime must generate them (NEO: isRuntimeLocalIdsGenerationRequired, xehp_and_later;
    XeLP always leaves them to the runtime).  The hardware walks its orders with the first two
    dimensions powers of two; the kernel's required walk order is kept."""
    if not launch.platform.compute_walker or launch.simd == 1 or launch.packed_local_ids:
        return None
    channels = local_id_channels(launch)
    if channels == 0:
        return (0, 1, 2)  # no ids to make: the hardware path, which skips the kernel's id loading
    if any(size[d] > 1 and d >= channels for d in range(3)) or size[0] * size[1] * size[2] > MAX_HW_LOCAL_ID_ITEMS:
        return None
    power_of_two = [n & (n - 1) == 0 for n in size]
    if channels == 1:
        return HW_WALK_ORDERS[0] if power_of_two[0] else None
    required = launch.kernel.execution_env.work_group_walk_order_dimensions
    if required and channels == 3:
        order = tuple(required)
        return order if power_of_two[order[0]] and power_of_two[order[1]] and order in HW_WALK_ORDERS else None
    unused = required[2] if required else 2  # with two channels, the dimension without ids may lead
    for order in HW_WALK_ORDERS:
        if all(power_of_two[d] or (channels == 2 and d == unused) for d in order[:2]):
            if required and channels == 2 and order.index(required[0]) > order.index(required[1]):
                continue
            return order
    return None


def per_thread_data_offset(kernel: ZebinKernel) -> int:
    """Where PTD starts in the IOH block: CTD size minus the inline bytes (NEO's
    KernelDescriptor::getPerThreadDataOffset, patched into R_PER_THREAD_PAYLOAD_OFFSET)."""
    ctd_end = max((p.offset + p.size for p in kernel.payload_arguments), default=0)
    ctd = -(-ctd_end // CTD_ALIGNMENT) * CTD_ALIGNMENT
    return ctd - min(ctd, kernel.execution_env.inline_data_payload_size)


def thread_slot_count(platform: hwlib.Platform) -> int:
    """Distinct hardware thread ids sr0.0 can name the way IGC decodes them."""
    return 1 << (platform.sr0_thread_id_bits - len(platform.sr0_reserved_bits))


def sr0_thread_ids(platform: hwlib.Platform, slots: np.ndarray) -> np.ndarray:
    """sr0.0 of hardware thread slots: the slot number with a zero inserted at each reserved bit
    (XeHPG bits 3 and 6, XeHPC bits 3, 6 and 7), so that IGC's GetHWTID, which removes those
    bits, gets the slot back and private memory of different threads never overlaps."""
    ids = np.asarray(slots, dtype=np.uint32)
    for bit in sorted(platform.sr0_reserved_bits):
        ids = (ids & np.uint32((1 << bit) - 1)) | ((ids >> np.uint32(bit)) << np.uint32(bit + 1))
    return ids


# --- arguments -----------------------------------------------------------------------------------


def _argument_count(kernel: ZebinKernel) -> int:
    indices = [p.arg_index for p in kernel.payload_arguments if p.arg_index is not None]
    indices += [b.arg_index for b in kernel.binding_table_indices]
    return max(indices) + 1 if indices else 0


def _map_arguments(launch: Launch, args: Sequence[Any], memory: DeviceMemory) -> None:
    kernel = launch.kernel
    count = _argument_count(kernel)
    if len(args) != count:
        raise Error(f"kernel {kernel.name} takes {count} argument(s), got {len(args)}")
    slm_static = kernel.execution_env.slm_size
    slm_next = slm_static
    kinds: dict[int, set[str | None]] = {}
    for p in kernel.payload_arguments:
        if p.arg_type == "arg_bypointer" and p.arg_index is not None:
            kinds.setdefault(p.arg_index, set()).add(p.addrmode)
    for index, value in enumerate(args):
        modes = kinds.get(index, set())
        if "slm" in modes:
            if not isinstance(value, LocalBuffer):
                raise Error(f"argument {index} is a __local pointer: pass xegen.sim.local(size)")
            alignment = (
                next(
                    (p.slm_alignment for p in kernel.payload_arguments if p.arg_index == index and p.slm_alignment), 16
                )
                or 16
            )
            slm_next = -(-slm_next // alignment) * alignment
            launch.arg_addresses[index] = slm_next
            slm_next += value.size
            continue
        if modes:
            if not isinstance(value, np.ndarray):
                raise Error(f"argument {index} is a buffer: pass a numpy array, not {type(value).__name__}")
            if not value.flags.c_contiguous:
                raise Error(f"argument {index}: the array must be C-contiguous (use np.ascontiguousarray)")
            if not value.flags.writeable:
                raise Error(f"argument {index}: the array is read-only")
            if not value.dtype.isnative:
                raise Error(
                    f"argument {index}: the array is {value.dtype} in the other byte order; the device is "
                    "little-endian (use .astype(a.dtype.newbyteorder('=')))"
                )
            _check_element_type(value, index, launch.arg_info.get(index))
            launch.arg_addresses[index] = memory.map(f"argument {index}", value.reshape(-1).view(np.uint8))
    if slm_next > launch.platform.max_slm_bytes:
        raise Error(
            f"kernel {kernel.name} needs {slm_next} bytes of shared local memory ({slm_static} its own, "
            f"the rest __local arguments); {launch.platform.display_name} has "
            f"{launch.platform.max_slm_bytes} per work-group"
        )
    launch.slm_bytes = slm_next
    for b in kernel.binding_table_indices:
        if b.arg_index not in launch.arg_addresses or not isinstance(args[b.arg_index], np.ndarray):
            raise Error(f"binding table index {b.bti_value} names argument {b.arg_index}, which is not a buffer")
        array = args[b.arg_index]
        launch.surfaces[b.bti_value] = Surface(launch.arg_addresses[b.arg_index], -(-array.nbytes // 4) * 4)
    for buffer in kernel.per_thread_memory_buffers:
        if not buffer.size:
            continue
        if buffer.type == "scratch":
            if buffer.slot:
                raise UnsupportedError("a second scratch space (slot 1, separate private scratch) is not supported")
            launch.scratch_per_thread = 1 << (max(buffer.size, MIN_SCRATCH_BYTES) - 1).bit_length()
        else:  # global private memory, per work-item when is_simt_thread (NEO multiplies by SIMD)
            launch.private_per_thread += buffer.size * (launch.simd if buffer.is_simt_thread else 1)


# OpenCL scalar type names (as IGC writes them in kernels_misc_info) -> numpy dtypes
SCALAR_TYPES = {
    "char": np.int8,
    "uchar": np.uint8,
    "short": np.int16,
    "ushort": np.uint16,
    "int": np.int32,
    "uint": np.uint32,
    "long": np.int64,
    "ulong": np.uint64,
    "half": np.float16,
    "float": np.float32,
    "double": np.float64,
    "bool": np.uint8,
    "size_t": np.uint64,
}


VECTOR_SUFFIXES = ("16", "8", "4", "3", "2")


def pointee_type(type_name: str) -> np.dtype | None:
    """The element dtype of an OpenCL pointer type as IGC names it ("float*", "const uchar4*"), or
    None when it is not a pointer to a scalar or vector of a known type (a struct, void*)."""
    name = type_name.strip()
    if not name.endswith("*"):
        return None
    words = [w for w in name[:-1].replace("*", " * ").split() if w not in ("const", "volatile", "restrict")]
    if len(words) != 1:
        return None  # pointer to pointer, struct, unsigned char spelled in two words ...
    base = words[0]
    for suffix in VECTOR_SUFFIXES:
        if base.endswith(suffix) and base[: -len(suffix)] in SCALAR_TYPES:
            base = base[: -len(suffix)]
            break
    if base == "bool" or base not in SCALAR_TYPES:
        return None
    return np.dtype(SCALAR_TYPES[base])


def _check_element_type(array: np.ndarray, index: int, declared: tuple[str, str] | None) -> None:
    """A buffer's elements must be the kernel's pointee type.  Integers of the other signedness
    (same size) are the same bytes and pass; anything else would be read as garbage."""
    if declared is None:
        return
    name, type_name = declared
    wanted = pointee_type(type_name)
    if wanted is None:
        return
    got = array.dtype
    same_integer = wanted.kind in "iu" and got.kind in "iu" and got.itemsize == wanted.itemsize
    if got != wanted and not same_integer:
        label = f"argument {index}" + (f" ({name})" if name else "")
        raise Error(f"{label} is {type_name}: pass a {wanted} array, not {got}")


def argument_info(zebin_raw: dict, kernel_name: str) -> dict[int, tuple[str, str]]:
    """index -> (argument name, OpenCL type name) from the zebin's kernels_misc_info, if present."""
    info = {}
    for entry in zebin_raw.get("kernels_misc_info", []) or []:
        if not isinstance(entry, dict) or entry.get("name") != kernel_name:
            continue
        for arg in entry.get("args_info", []) or []:
            try:
                info[int(arg["index"])] = (str(arg.get("name", "")), str(arg.get("type_name", "")).split(";")[0])
            except (KeyError, TypeError, ValueError):
                continue
    return info


def _value_bytes(value: Any, size: int, index: int, declared: tuple[str, str] | None = None) -> bytes:
    """The bytes of a by-value argument: numbers convert to the declared OpenCL type when the
    zebin names it (so 2 for a float argument is 2.0), else by their Python kind and size."""
    label = f"argument {index}" + (f" ({declared[0]})" if declared and declared[0] else "")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return np.ascontiguousarray(value).tobytes()
    dtype: np.dtype | None = np.dtype(SCALAR_TYPES[declared[1]]) if declared and declared[1] in SCALAR_TYPES else None
    if isinstance(value, (np.generic, np.ndarray)):
        value = value.item()
    if not isinstance(value, (bool, int, float)):
        raise Error(f"{label}: cannot pass a {type(value).__name__} by value")
    if dtype is None:  # no type information: integers as two's complement, floats by size
        dtype = (
            np.dtype({2: np.float16, 4: np.float32, 8: np.float64}.get(size))
            if isinstance(value, float)
            else np.dtype({1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}.get(size, np.int64))
        )
    if dtype.kind == "f":
        with np.errstate(over="ignore"):
            converted = np.array(float(value), dtype=dtype)
        if np.isfinite(float(value)) and not np.isfinite(converted):
            raise Error(f"{label}: {value} is too large for {declared[1] if declared else dtype}")
        return converted.tobytes()
    if isinstance(value, float) and not value.is_integer():
        raise Error(f"{label} is an integer ({declared[1] if declared else f'{size} bytes'}), got {value}")
    v = int(value)
    bits = 8 * dtype.itemsize
    if declared and declared[1] in SCALAR_TYPES:  # the declared type's own range
        low, high = (0, 1) if declared[1] == "bool" else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
    else:  # unknown signedness: anything the bytes can hold
        low, high = -(1 << (bits - 1)), (1 << bits) - 1
    if not low <= v <= high:
        kind = declared[1] if declared and declared[1] in SCALAR_TYPES else f"{dtype.itemsize} bytes"
        raise Error(f"{label}: {v} is outside the range of {kind} ({low} to {high})")
    return (v % (1 << bits)).to_bytes(dtype.itemsize, "little")


def cross_thread_data(launch: Launch, args: Sequence[Any], group_local_size: tuple[int, int, int]) -> bytes:
    """The CTD block of a walker whose groups have `group_local_size`."""
    data = bytearray(launch.ctd_size)
    counts = tuple(-(-launch.global_size[d] // launch.local_size[d]) for d in range(3))

    def put(offset: int, size: int, raw: bytes) -> None:
        data[offset : offset + size] = raw[:size].ljust(size, b"\0")

    def triple(offset: int, size: int, values) -> None:
        put(offset, size, b"".join(int(v).to_bytes(4, "little") for v in values))

    for p in launch.kernel.payload_arguments:
        kind = p.arg_type
        if kind == "global_id_offset":
            triple(p.offset, p.size, launch.global_offset)
        elif kind == "local_size":
            triple(p.offset, p.size, group_local_size)
        elif kind == "enqueued_local_size":
            triple(p.offset, p.size, launch.local_size)
        elif kind == "global_size":
            triple(p.offset, p.size, launch.global_size)
        elif kind == "group_count":
            triple(p.offset, p.size, counts)
        elif kind == "work_dimensions":
            put(p.offset, p.size, launch.dimensions.to_bytes(4, "little"))
        elif kind in ("arg_bypointer", "buffer_address"):
            if p.size == 0:
                continue  # stateful: reaches the buffer through the binding table
            address = launch.arg_addresses.get(p.arg_index)
            if address is None:
                raise Error(f"payload argument {kind} names argument {p.arg_index}, which is not a pointer")
            put(p.offset, p.size, int(address).to_bytes(8, "little"))
        elif kind == "buffer_offset":
            put(p.offset, p.size, bytes(4))  # buffers are mapped 4-byte aligned: no offset
        elif kind == "arg_byvalue":
            if p.arg_index is None:
                raise Error(f"payload argument arg_byvalue at offset {p.offset} names no argument (arg_index)")
            declared = launch.arg_info.get(p.arg_index)
            value = _value_bytes(args[p.arg_index], p.size, p.arg_index, declared)
            start = p.source_offset or 0
            # IGC gives char and short arguments a 4-byte slot; the runtime fills the rest with zeros
            padded = (
                declared is not None
                and declared[1] in SCALAR_TYPES
                and np.dtype(SCALAR_TYPES[declared[1]]).itemsize == len(value) < p.size
            )
            if p.source_offset is None and len(value) != p.size and not padded:
                raise Error(f"argument {p.arg_index} is {p.size} bytes by value, got {len(value)} bytes")
            put(p.offset, p.size, value[start : start + p.size])
        elif kind == "private_base_stateless":
            put(p.offset, p.size, int(launch.private_base).to_bytes(8, "little"))
        else:
            raise UnsupportedError(f"payload argument '{kind}' is not supported")
    return bytes(data)


def _build_ioh(launch: Launch, memory: DeviceMemory) -> None:
    """Reserve the General State heap: one IOH block ([CTD rest][PTD per thread], PTD only when
    the runtime generates the ids) per distinct work-group size (groups of the same size share
    it), then the scratch space of every thread slot (General-State-relative on XeLP)."""
    sizes = sorted({grp.local_size for grp in launch.groups})
    offset = IOH_ALIGNMENT  # keep offset 0 unused: r0.0 == 0 would look like "no payload"
    rest = launch.ctd_size - launch.inline_size
    for size in sizes:
        launch.blocks[size] = offset
        offset += -(-(rest + _threads_of(launch, size) * ioh_ptd_bytes(launch, size)) // IOH_ALIGNMENT) * IOH_ALIGNMENT
    for grp in launch.groups:
        grp.block_offset = launch.blocks[grp.local_size]
    if launch.scratch_per_thread:
        offset = -(-offset // launch.scratch_per_thread) * launch.scratch_per_thread
        launch.scratch_offset = offset
        offset += launch.thread_slots * launch.scratch_per_thread
    launch.ioh_base = memory.allocate("indirect object heap", offset)


def _threads_of(launch: Launch, size: tuple[int, int, int]) -> int:
    return max(1, -(-size[0] * size[1] * size[2] // launch.simd))


def ioh_ptd_bytes(launch: Launch, size: tuple[int, int, int]) -> int:
    """PTD bytes per thread the runtime writes to the IOH for groups of `size`."""
    return launch.ptd_size if launch.platform.compute_walker and launch.hardware_ids[size] is None else 0


def fill_ioh(launch: Launch, memory: DeviceMemory, args: Sequence[Any]) -> dict:
    """Write each block's CTD and PTD; returns CTD bytes per group size."""
    region = memory.region_named("indirect object heap")
    ctd_by_size = {}
    order = walk_order(launch.kernel)
    for size, offset in launch.blocks.items():
        ctd = cross_thread_data(launch, args, size)
        ctd_by_size[size] = ctd
        rest = ctd[launch.inline_size :]
        region.data[offset : offset + len(rest)] = np.frombuffer(rest, dtype=np.uint8)
        if ioh_ptd_bytes(launch, size):
            ptd = per_thread_data(launch, size, _threads_of(launch, size), order)
            start = offset + len(rest)
            region.data[start : start + ptd.size] = ptd.reshape(-1)
    return ctd_by_size


def per_thread_data(launch: Launch, size: tuple[int, int, int], threads: int, order) -> np.ndarray:
    """(threads, ptd_size) bytes of local ids."""
    ids, _ = local_ids(size, launch.simd, threads, order)
    out = np.zeros((threads, launch.ptd_size), dtype=np.uint8)
    if launch.packed_local_ids:
        packed = ids[:, 0, :].astype(np.uint16)  # SIMD1: x, y, z of the thread's one item
        out[:, : launch.ptd_size] = packed.view(np.uint8).reshape(threads, 6)[:, : launch.ptd_size]
        return out
    for channel in range(local_id_channels(launch)):
        row = ids[:, :, channel].astype(np.uint16).view(np.uint8).reshape(threads, 2 * launch.simd)
        out[:, channel * launch.ptd_channel_bytes : channel * launch.ptd_channel_bytes + 2 * launch.simd] = row
    return out


def thread_count(launch: Launch) -> int:
    return sum(g.threads for g in launch.groups)


def group_batches(launch: Launch, max_threads: int) -> list[list[int]]:
    """Indices of groups, in batches of whole groups with at most `max_threads` threads that
    all start at the same instruction (edge groups may leave the ids to the runtime)."""
    batches: list[list[int]] = []
    current: list[int] = []
    count, start = 0, None
    for index, grp in enumerate(launch.groups):
        begins = start_offset(launch, grp.local_size)
        if current and (count + grp.threads > max_threads or begins != start):
            batches.append(current)
            current, count = [], 0
        current.append(index)
        count += grp.threads
        start = begins
    if current:
        batches.append(current)
    return batches


def batch_layout(launch: Launch, group_indices: list[int], threads: int) -> tuple[np.ndarray, np.ndarray]:
    """(threads, simd) live lanes and the batch-local group index of each thread of a batch."""
    order = walk_order(launch.kernel)
    live = np.zeros((threads, launch.simd), dtype=bool)
    group_of_thread = np.zeros(threads, dtype=np.int64)
    t0 = 0
    for batch_group, index in enumerate(group_indices):
        grp = launch.groups[index]
        _, lanes = local_ids(grp.local_size, launch.simd, grp.threads, order)
        live[t0 : t0 + grp.threads] = lanes
        group_of_thread[t0 : t0 + grp.threads] = batch_group
        t0 += grp.threads
    return live, group_of_thread


def start_offset(launch: Launch, size: tuple[int, int, int]) -> int:
    """Byte offset in the kernel where threads of `size` groups start: past the kernel's own
    loading of the local ids when the hardware generated them (NEO's KernelStartPointer)."""
    if launch.platform.compute_walker and launch.hardware_ids[size] is not None:
        return launch.kernel.execution_env.offset_to_skip_per_thread_data_load
    return 0


def fill_registers(
    launch: Launch, group_indices: list[int], grf: np.ndarray, sr: np.ndarray, ce: np.ndarray, ctd_by_size: dict
) -> None:
    """Initial r0, pushed payload and status registers of a batch's threads."""
    platform = launch.platform
    simd = launch.simd
    grf_bytes = platform.grf_bytes
    order = walk_order(launch.kernel)
    threads = grf.shape[0]
    live, _ = batch_layout(launch, group_indices, threads)
    r0 = grf[:, :grf_bytes].view(np.uint32)
    ptd_grfs = -(-launch.ptd_size // grf_bytes)
    t0 = 0
    for index in group_indices:
        grp = launch.groups[index]
        n = grp.threads
        rows = slice(t0, t0 + n)
        r0[rows, 1] = grp.id[0]
        r0[rows, 6] = grp.id[1]
        r0[rows, 7] = grp.id[2]
        ctd = np.frombuffer(ctd_by_size[grp.local_size], dtype=np.uint8)
        if platform.compute_walker:
            r0[rows, 0] = grp.block_offset
            r0[rows, 2] = np.arange(n, dtype=np.uint32) | np.uint32((n & 0xFF) << 24)
            hardware_order = launch.hardware_ids[grp.local_size]
            inline_at = grf_bytes
            if hardware_order is not None and launch.ptd_size:
                grf[rows, grf_bytes : grf_bytes + launch.ptd_size] = per_thread_data(
                    launch, grp.local_size, n, hardware_order
                )
                inline_at = (1 + ptd_grfs) * grf_bytes
            if launch.inline_size:
                grf[rows, inline_at : inline_at + launch.inline_size] = ctd[: launch.inline_size]
        else:
            if launch.ptd_size:
                grf[rows, grf_bytes : grf_bytes + launch.ptd_size] = per_thread_data(launch, grp.local_size, n, order)
            start = (1 + max(1, ptd_grfs)) * grf_bytes
            if start + len(ctd) > grf.shape[1]:
                raise UnsupportedError("cross-thread data does not fit the GRF")
            grf[rows, start : start + len(ctd)] = ctd
        t0 += n
    slots = np.arange(threads, dtype=np.uint32)
    if launch.scratch_per_thread:
        r0[:, 5] = (
            np.uint32(SCRATCH_SURFACE_STATE)
            if platform.compute_walker
            else np.uint32(launch.scratch_offset) + slots * np.uint32(launch.scratch_per_thread)
        )
    masks = np.zeros(threads, dtype=np.uint32)
    for bit in range(simd):
        masks |= live[:, bit].astype(np.uint32) << np.uint32(bit)
    sr_words = sr.view(np.uint32)
    sr_words[:, 0] = sr0_thread_ids(platform, slots)
    sr_words[:, 2] = masks
    sr_words[:, 3] = masks
    ce.view(np.uint32)[:, 0] = masks
