"""Intel's OpenCL runtime (NEO) through ctypes: a zebin in, a kernel the runtime created, a launch.

Only the calls a native kernel needs: find an Intel GPU device, build a program from a binary
(`clCreateProgramWithBinary`, which for a zebin decodes its ELF and `.ze_info` and builds
nothing), create the kernel, ask the runtime what it made of it (argument count, required and
maximum work-group size, sub-group size, SLM), set buffer arguments, enqueue an NDRange, read
the buffers back.  The ICD loader `libOpenCL.so.1` is all it needs (no pyopencl): Debian's
`ocl-icd-libopencl1` with `intel-opencl-icd`.

Every failing call raises `OpenCLError` naming the call and the runtime's error code.  Handles
are released when their Python owner is closed (`with DeviceKernel(...) as kernel:`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import Error

INTEL_VENDOR_ID = 0x8086

# Parameter names and error codes from the OpenCL 3.0 headers (CL/cl.h).
CL_DEVICE_TYPE_GPU = 1 << 2
CL_DEVICE_VENDOR_ID = 0x1001
CL_DEVICE_MAX_COMPUTE_UNITS = 0x1002
CL_DEVICE_MAX_WORK_GROUP_SIZE = 0x1004
CL_DEVICE_NAME = 0x102B
CL_PROGRAM_BUILD_LOG = 0x1183
CL_KERNEL_NUM_ARGS = 0x1191
CL_KERNEL_WORK_GROUP_SIZE = 0x11B0
CL_KERNEL_COMPILE_WORK_GROUP_SIZE = 0x11B1
CL_KERNEL_LOCAL_MEM_SIZE = 0x11B2
CL_KERNEL_PRIVATE_MEM_SIZE = 0x11B4
CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE = 0x2033
CL_MEM_READ_WRITE = 1 << 0
CL_MEM_COPY_HOST_PTR = 1 << 5

ERROR_NAMES = {
    -1: "CL_DEVICE_NOT_FOUND",
    -2: "CL_DEVICE_NOT_AVAILABLE",
    -4: "CL_MEM_OBJECT_ALLOCATION_FAILURE",
    -5: "CL_OUT_OF_RESOURCES",
    -6: "CL_OUT_OF_HOST_MEMORY",
    -11: "CL_BUILD_PROGRAM_FAILURE",
    -30: "CL_INVALID_VALUE",
    -33: "CL_INVALID_DEVICE",
    -34: "CL_INVALID_CONTEXT",
    -36: "CL_INVALID_COMMAND_QUEUE",
    -38: "CL_INVALID_MEM_OBJECT",
    -42: "CL_INVALID_BINARY",
    -44: "CL_INVALID_PROGRAM",
    -45: "CL_INVALID_PROGRAM_EXECUTABLE",
    -46: "CL_INVALID_KERNEL_NAME",
    -48: "CL_INVALID_KERNEL",
    -49: "CL_INVALID_ARG_INDEX",
    -50: "CL_INVALID_ARG_VALUE",
    -51: "CL_INVALID_ARG_SIZE",
    -52: "CL_INVALID_KERNEL_ARGS",
    -53: "CL_INVALID_WORK_DIMENSION",
    -54: "CL_INVALID_WORK_GROUP_SIZE",
    -55: "CL_INVALID_WORK_ITEM_SIZE",
    -56: "CL_INVALID_GLOBAL_OFFSET",
    -61: "CL_INVALID_BUFFER_SIZE",
    -63: "CL_INVALID_GLOBAL_WORK_SIZE",
    -1001: "CL_PLATFORM_NOT_FOUND_KHR",
}

_handle = ctypes.c_void_p
_size = ctypes.c_size_t


class OpenCLError(Error):
    """An OpenCL call failed (or the runtime cannot be loaded); `code` is its error code."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.code = code


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"error {code}")


_library: ctypes.CDLL | None = None


def library() -> ctypes.CDLL:
    """The ICD loader, loaded once, with the signatures of the calls used here."""
    global _library
    if _library is None:
        name = ctypes.util.find_library("OpenCL") or "libOpenCL.so.1"
        try:
            lib = ctypes.CDLL(name)
        except OSError as error:
            raise OpenCLError(
                f"cannot load the OpenCL runtime ({name}: {error}); on Debian: "
                "apt-get install ocl-icd-libopencl1 intel-opencl-icd"
            ) from None
        for function, result in (
            ("clCreateContext", _handle),
            ("clCreateProgramWithBinary", _handle),
            ("clCreateKernel", _handle),
            ("clCreateBuffer", _handle),
            ("clCreateCommandQueueWithProperties", _handle),
        ):
            getattr(lib, function).restype = result
        _library = lib
    return _library


def check(code: int, call: str) -> None:
    if code != 0:
        raise OpenCLError(f"{call} failed: {error_name(code)}", code)


def _created(call: str, make) -> _handle:
    """Run a clCreate* call that reports through its last argument."""
    status = ctypes.c_int(0)
    handle = make(ctypes.byref(status))
    check(status.value, call)
    return _handle(handle)


@dataclass(frozen=True)
class Device:
    """An OpenCL GPU device of Intel's runtime."""

    handle: int
    name: str
    compute_units: int
    max_work_group_size: int

    def __str__(self) -> str:
        return self.name


def _device_info(device: _handle, parameter: int, value) -> None:
    check(
        library().clGetDeviceInfo(
            device, ctypes.c_uint(parameter), _size(ctypes.sizeof(value)), ctypes.byref(value), None
        ),
        "clGetDeviceInfo",
    )


def intel_gpus() -> list[Device]:
    """Every Intel GPU the OpenCL runtime offers (none is no error: an empty list)."""
    lib = library()
    count = ctypes.c_uint(0)
    status = lib.clGetPlatformIDs(0, None, ctypes.byref(count))
    if status == -1001 or count.value == 0:  # no ICD installed: no platform
        return []
    check(status, "clGetPlatformIDs")
    platforms = (_handle * count.value)()
    check(lib.clGetPlatformIDs(count, platforms, None), "clGetPlatformIDs")
    found = []
    for platform in platforms:
        devices = ctypes.c_uint(0)
        if (
            lib.clGetDeviceIDs(_handle(platform), ctypes.c_uint64(CL_DEVICE_TYPE_GPU), 0, None, ctypes.byref(devices))
            != 0
        ):
            continue  # CL_DEVICE_NOT_FOUND: a platform without GPUs
        handles = (_handle * devices.value)()
        check(
            lib.clGetDeviceIDs(_handle(platform), ctypes.c_uint64(CL_DEVICE_TYPE_GPU), devices, handles, None),
            "clGetDeviceIDs",
        )
        for handle in handles:
            assert handle is not None  # clGetDeviceIDs filled every slot
            vendor, units, group = ctypes.c_uint(), ctypes.c_uint(), _size()
            name = ctypes.create_string_buffer(256)
            _device_info(_handle(handle), CL_DEVICE_VENDOR_ID, vendor)
            if vendor.value != INTEL_VENDOR_ID:
                continue
            _device_info(_handle(handle), CL_DEVICE_NAME, name)
            _device_info(_handle(handle), CL_DEVICE_MAX_COMPUTE_UNITS, units)
            _device_info(_handle(handle), CL_DEVICE_MAX_WORK_GROUP_SIZE, group)
            found.append(Device(handle, name.value.decode(errors="replace"), units.value, group.value))
    return found


def first_intel_gpu() -> Device:
    devices = intel_gpus()
    if not devices:
        raise OpenCLError(
            "no Intel GPU found by the OpenCL runtime (is intel-opencl-icd installed, and may this "
            "user open /dev/dri/renderD*?)"
        )
    return devices[0]


@dataclass(frozen=True)
class KernelFacts:
    """What the runtime made of a kernel: the numbers a launch must respect."""

    argument_count: int
    compile_work_group_size: tuple[int, int, int]  # the zebin's required work-group size (0s: none)
    max_work_group_size: int  # work-items per group the runtime allows for this kernel
    max_sub_group_size: int  # lanes of a sub-group for the required work-group size (the SIMD width)
    local_memory_bytes: int  # SLM the kernel declares
    private_memory_bytes: int


class DeviceKernel:
    """One kernel of a zebin, loaded on `device`: context, program, kernel and queue."""

    def __init__(self, device: Device, zebin: bytes, name: str):
        self.device = device
        self._device = _handle(device.handle)
        self._buffers: dict[int, tuple[_handle, np.ndarray]] = {}  # argument index -> buffer, host copy
        self._handles: list[tuple[str, _handle]] = []
        try:
            self._create(zebin, name)
        except Error:
            self.close()
            raise

    def _create(self, zebin: bytes, name: str) -> None:
        lib = library()
        self._context = self._own(
            "clReleaseContext",
            _created(
                "clCreateContext", lambda s: lib.clCreateContext(None, 1, ctypes.byref(self._device), None, None, s)
            ),
        )
        data = ctypes.create_string_buffer(zebin, len(zebin))
        lengths = (_size * 1)(len(zebin))
        binaries = (ctypes.c_char_p * 1)(ctypes.cast(data, ctypes.c_char_p))
        binary_status = ctypes.c_int(0)
        self._program = self._own(
            "clReleaseProgram",
            _created(
                "clCreateProgramWithBinary",
                lambda s: lib.clCreateProgramWithBinary(
                    self._context, 1, ctypes.byref(self._device), lengths, binaries, ctypes.byref(binary_status), s
                ),
            ),
        )
        check(binary_status.value, "clCreateProgramWithBinary (the binary's status)")
        status = lib.clBuildProgram(self._program, 1, ctypes.byref(self._device), b"", None, None)
        if status != 0:
            raise OpenCLError(f"clBuildProgram failed: {error_name(status)}: {self.build_log()}", status)
        self._kernel = self._own(
            "clReleaseKernel",
            _created(f"clCreateKernel({name})", lambda s: lib.clCreateKernel(self._program, name.encode(), s)),
        )
        self._queue = self._own(
            "clReleaseCommandQueue",
            _created(
                "clCreateCommandQueueWithProperties",
                lambda s: lib.clCreateCommandQueueWithProperties(self._context, self._device, None, s),
            ),
        )

    def _own(self, release: str, handle: _handle) -> _handle:
        self._handles.append((release, handle))
        return handle

    def build_log(self) -> str:
        log = ctypes.create_string_buffer(4096)
        library().clGetProgramBuildInfo(
            self._program, self._device, ctypes.c_uint(CL_PROGRAM_BUILD_LOG), _size(len(log)), log, None
        )
        return log.value.decode(errors="replace").strip() or "(no build log)"

    def _work_group_info(self, parameter: int, value) -> None:
        check(
            library().clGetKernelWorkGroupInfo(
                self._kernel,
                self._device,
                ctypes.c_uint(parameter),
                _size(ctypes.sizeof(value)),
                ctypes.byref(value),
                None,
            ),
            "clGetKernelWorkGroupInfo",
        )

    def facts(self) -> KernelFacts:
        lib = library()
        count = ctypes.c_uint()
        check(
            lib.clGetKernelInfo(self._kernel, ctypes.c_uint(CL_KERNEL_NUM_ARGS), _size(4), ctypes.byref(count), None),
            "clGetKernelInfo",
        )
        required, largest = (_size * 3)(), _size()
        local, private = ctypes.c_uint64(), ctypes.c_uint64()
        self._work_group_info(CL_KERNEL_COMPILE_WORK_GROUP_SIZE, required)
        self._work_group_info(CL_KERNEL_WORK_GROUP_SIZE, largest)
        self._work_group_info(CL_KERNEL_LOCAL_MEM_SIZE, local)
        self._work_group_info(CL_KERNEL_PRIVATE_MEM_SIZE, private)
        sub_group = _size()
        check(
            lib.clGetKernelSubGroupInfo(
                self._kernel,
                self._device,
                ctypes.c_uint(CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE),
                _size(ctypes.sizeof(required)),
                required,
                _size(ctypes.sizeof(sub_group)),
                ctypes.byref(sub_group),
                None,
            ),
            "clGetKernelSubGroupInfo",
        )
        return KernelFacts(count.value, tuple(required), largest.value, sub_group.value, local.value, private.value)

    def set_buffer(self, index: int, array: np.ndarray) -> None:
        """Argument `index` becomes a new device buffer holding a copy of `array`."""
        lib = library()
        array = np.ascontiguousarray(array)
        memory = _created(
            f"clCreateBuffer(argument {index})",
            lambda s: lib.clCreateBuffer(
                self._context,
                ctypes.c_uint64(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR),
                _size(max(array.nbytes, 1)),
                array.ctypes.data_as(_handle),
                s,
            ),
        )
        old = self._buffers.pop(index, None)
        if old is not None:
            lib.clReleaseMemObject(old[0])
        self._buffers[index] = (memory, array)
        check(
            lib.clSetKernelArg(self._kernel, ctypes.c_uint(index), _size(ctypes.sizeof(memory)), ctypes.byref(memory)),
            f"clSetKernelArg({index})",
        )

    def refuses_argument_size(self, index: int, size: int) -> bool:
        """Whether the runtime refuses `size` bytes for argument `index` (CL_INVALID_ARG_SIZE): a
        buffer argument takes exactly a pointer's size."""
        value = (ctypes.c_uint8 * max(size, 1))()
        status = library().clSetKernelArg(self._kernel, ctypes.c_uint(index), _size(size), value)
        return status == -51

    def launch(self, global_size: Sequence[int], local_size: Sequence[int], wait: bool = True) -> None:
        """Enqueue the kernel over `global_size` work-items in groups of `local_size` and submit it;
        with `wait`, wait until it is done."""
        lib = library()
        dims = len(global_size)
        check(
            lib.clEnqueueNDRangeKernel(
                self._queue,
                self._kernel,
                ctypes.c_uint(dims),
                None,
                (_size * dims)(*global_size),
                (_size * dims)(*local_size),
                0,
                None,
                None,
            ),
            "clEnqueueNDRangeKernel",
        )
        check(lib.clFlush(self._queue), "clFlush")
        if wait:
            check(lib.clFinish(self._queue), "clFinish")

    def read_buffer(self, index: int) -> np.ndarray:
        """Argument `index`'s buffer as the device left it (an array like the one given)."""
        memory, array = self._buffers[index]
        result = np.empty_like(array)
        check(
            library().clEnqueueReadBuffer(
                self._queue,
                memory,
                ctypes.c_uint(1),
                _size(0),
                _size(result.nbytes),
                result.ctypes.data_as(_handle),
                0,
                None,
                None,
            ),
            "clEnqueueReadBuffer",
        )
        return result

    def close(self) -> None:
        lib = library()
        for memory, _ in self._buffers.values():
            lib.clReleaseMemObject(memory)
        self._buffers = {}
        for release, handle in reversed(self._handles):
            getattr(lib, release)(handle)
        self._handles = []

    def __enter__(self) -> DeviceKernel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
