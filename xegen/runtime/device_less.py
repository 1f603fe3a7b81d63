"""NEO without a GPU: Intel's runtime pretending to be a platform, to check that it accepts a zebin.

Debian's intel-opencl-icd reads debug keys from the environment when `NEOReadDebugKeys=1`:
`SetCommandStreamReceiver=1` replaces the hardware by an AUB-file writer (written to /dev/null
here), `ProductFamilyOverride` names the platform (tgllp, dg2, pvc) and `HardwareInfoOverride`
its slices x subslices x EUs per subslice (without it, this runtime version gives dg2 and pvc a
configuration whose largest work-group is 0 work-items, so no launch would be accepted).  The
runtime then decodes zebins, builds programs, creates kernels, checks arguments and enqueues
launches; nothing executes.  A launch is submitted (clFlush) but not waited for: nothing runs, and
on pvc this runtime version never reports such a launch complete (clFinish would spin forever).

The keys are read once, when the runtime loads, so each platform needs its own process:
`accept(hw, launches)` starts `python -m xegen.runtime.device_less` with the keys set, and the
child reports what the runtime said about each launch (`Acceptance`).
"""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .. import hw as hwlib
from ..errors import Error
from . import Launch
from .opencl import DeviceKernel, KernelFacts, first_intel_gpu

POINTER_BYTES = 8  # a buffer argument is a 64-bit address (stateless access)
INTEL_ICD = Path("/etc/OpenCL/vendors/intel.icd")  # where Debian's intel-opencl-icd registers NEO


def installed() -> bool:
    """Whether the ICD loader and NEO are installed (Debian: ocl-icd-libopencl1, intel-opencl-icd)."""
    return INTEL_ICD.is_file() and ctypes.util.find_library("OpenCL") is not None


def environment(hw: str | hwlib.Platform) -> dict[str, str]:
    """The debug keys that make NEO pretend to be `hw` (the whole product xegen's model knows)."""
    platform = hwlib.platform(hw)
    return {
        "NEOReadDebugKeys": "1",
        "SetCommandStreamReceiver": "1",
        "ProductFamilyOverride": platform.ocloc_device,
        "HardwareInfoOverride": f"1x{platform.subslices}x{platform.eus_per_subslice}",
        "AUBDumpCaptureFileName": os.devnull,
    }


@dataclass(frozen=True)
class Acceptance:
    """What NEO said about one launch: the kernel it created (`facts`), whether it refused a
    wrong size for each buffer argument (it must: a buffer takes a pointer's size), and whether
    the launch was enqueued.  `error` is the first call that failed ("" when none did)."""

    kernel: str
    device: str = ""
    facts: KernelFacts | None = None
    wrong_size_refused: tuple[bool, ...] = ()
    enqueued: bool = False
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and self.enqueued and all(self.wrong_size_refused)


def accept(hw: str | hwlib.Platform, launches: Sequence[Launch]) -> list[Acceptance]:
    """Load, check and enqueue each launch in NEO pretending to be `hw` (one child process)."""
    platform = hwlib.platform(hw)
    with tempfile.TemporaryDirectory(prefix="xegen-neo-") as folder:
        jobs = []
        for index, launch in enumerate(launches):
            path = Path(folder) / f"{index:04d}.zebin"
            path.write_bytes(launch.zebin)
            jobs.append(
                {
                    "zebin": str(path),
                    "kernel": launch.kernel,
                    "buffer_bytes": list(launch.buffer_bytes),
                    "global_size": list(launch.global_size),
                    "local_size": list(launch.local_size),
                }
            )
        child = subprocess.run(
            [sys.executable, "-m", "xegen.runtime.device_less"],
            input=json.dumps(jobs),
            capture_output=True,
            text=True,
            cwd=folder,
            env={**os.environ, **environment(platform)},
        )
    if child.returncode != 0:
        last = (child.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise Error(f"NEO without hardware ({platform.ocloc_device}) failed: {last}")
    return [_acceptance(record) for record in json.loads(child.stdout)]


def _acceptance(record: dict) -> Acceptance:
    facts = record["facts"]
    if facts is not None:  # JSON made the work-group size a list
        facts = KernelFacts(**{**facts, "compile_work_group_size": tuple(facts["compile_work_group_size"])})
    return Acceptance(
        record["kernel"],
        record["device"],
        facts,
        tuple(record["wrong_size_refused"]),
        record["enqueued"],
        record["error"],
    )


def _accept_one(job: dict) -> Acceptance:
    device = first_intel_gpu()
    facts, refused = None, []
    try:
        with DeviceKernel(device, Path(job["zebin"]).read_bytes(), job["kernel"]) as kernel:
            facts = kernel.facts()
            for index, size in enumerate(job["buffer_bytes"]):
                refused.append(kernel.refuses_argument_size(index, POINTER_BYTES // 2))
                kernel.set_buffer(index, np.zeros(size, np.uint8))
            kernel.launch(job["global_size"], job["local_size"], wait=False)
    except Error as error:
        return Acceptance(job["kernel"], device.name, facts, tuple(refused), False, str(error))
    return Acceptance(job["kernel"], device.name, facts, tuple(refused), enqueued=True)


def main() -> int:
    """The child: jobs (JSON) on standard input, one Acceptance each (JSON) on standard output."""
    results = [asdict(_accept_one(job)) for job in json.load(sys.stdin)]
    json.dump(results, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
