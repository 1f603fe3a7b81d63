"""Launching xegen's zebins through Intel's OpenCL runtime (NEO), on a real GPU or without one.

    from xegen.runtime import Launch, run
    outputs = run(launch, buffers)          # the buffers after the kernel ran on the first Intel GPU

`Launch` is everything the runtime needs to know about a kernel: its zebin, name, argument
buffer sizes and NDRange (`xegen.Kernel.launch` makes one).  `run` loads it with
`clCreateProgramWithBinary`, sets the buffers as arguments in order, enqueues the NDRange and
reads every buffer back.  `device_less` runs NEO without hardware (its debug keys make it
pretend to be a given platform): programs are built and kernels created, launches are enqueued,
but nothing executes, so the outputs are not the kernel's; the tests use it to check that the
runtime accepts every zebin.  Execution itself is checked only in xegen's simulator.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import Error
from .opencl import Device, DeviceKernel, KernelFacts, OpenCLError, first_intel_gpu, intel_gpus


@dataclass(frozen=True)
class Launch:
    """A kernel as the runtime takes it: which kernel of which zebin, the bytes of each buffer
    argument in order, and the NDRange in work-items."""

    zebin: bytes
    kernel: str
    buffer_bytes: tuple[int, ...]
    global_size: tuple[int, int, int]
    local_size: tuple[int, int, int]


def without_hardware() -> bool:
    """Whether NEO is told (by its debug keys in the environment) to pretend a device: then a
    launch executes nothing."""
    return os.environ.get("NEOReadDebugKeys") == "1" and os.environ.get("SetCommandStreamReceiver", "0") != "0"


def run(launch: Launch, buffers: Sequence[np.ndarray], device: Device | None = None) -> list[np.ndarray]:
    """Run `launch` on `device` (default: the first Intel GPU) with `buffers` as its arguments
    (copied to the device); returns every buffer as the device left it.  Without hardware
    (`without_hardware`) the launch is submitted and the buffers come back as they were given."""
    if len(buffers) != len(launch.buffer_bytes):
        raise Error(f"kernel {launch.kernel} takes {len(launch.buffer_bytes)} buffers, not {len(buffers)}")
    for index, (array, size) in enumerate(zip(buffers, launch.buffer_bytes, strict=True)):
        if np.asarray(array).nbytes != size:
            raise Error(
                f"kernel {launch.kernel}: buffer {index} has {np.asarray(array).nbytes} bytes, the kernel reads {size}"
            )
    with DeviceKernel(device or first_intel_gpu(), launch.zebin, launch.kernel) as kernel:
        for index, array in enumerate(buffers):
            kernel.set_buffer(index, array)
        if without_hardware():  # nothing runs, and NEO on pvc would never report the launch done
            kernel.launch(launch.global_size, launch.local_size, wait=False)
            return [np.array(array, copy=True) for array in buffers]
        kernel.launch(launch.global_size, launch.local_size)
        return [kernel.read_buffer(index) for index in range(len(buffers))]


__all__ = [
    "Device",
    "DeviceKernel",
    "KernelFacts",
    "Launch",
    "OpenCLError",
    "first_intel_gpu",
    "intel_gpus",
    "run",
    "without_hardware",
]
