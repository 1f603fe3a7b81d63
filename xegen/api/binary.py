"""Xe machine code from Python: assemble IGA text, disassemble bytes, read a zebin, run one.

data = xegen.assemble("add (8|M0) r10.0<1>:d r11.0<8;8,1>:d 1:d", hw="xehpg")
print(xegen.disassemble(data, hw="xehpg"))
zebin = xegen.read_zebin(kernel.zebin)          # kernels, their code and .ze_info records
xegen.run_zebin(data, "saxpy", [y, x, 1.5, 1000], (1024,), (64,))   # `xegen run`: in the simulator
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import hw as hwlib
from .. import sim
from ..emit import assemble as assemble_text
from ..emit import disassemble as disassemble_bytes
from ..emit.zebin import Zebin
from ..emit.zebin import read_zebin as read_zebin_bytes


def assemble(text: str, hw: str | hwlib.Platform = "xehpg") -> bytes:
    """Instructions in IGA's syntax to native bytes (16-byte forms, as `iga64 -a -Xforce-no-compact`)."""
    return assemble_text(text, hw)


def disassemble(data: bytes, hw: str | hwlib.Platform = "xehpg", pcs: bool = False) -> str:
    """Native instruction bytes to IGA's syntax (as `iga64 -d`); `pcs` prefixes byte addresses."""
    return disassemble_bytes(data, hw, pcs=pcs)


def read_zebin(data: bytes | str | Path) -> Zebin:
    """A zebin (bytes, or a file name): `.kernels` (each with `.name`, `.code`, `.execution_env`,
    `.payload_arguments`) and `.platform`."""
    return read_zebin_bytes(data if isinstance(data, bytes) else Path(data).read_bytes())


def run_zebin(
    zebin: bytes | str | Path,
    kernel: str,
    arguments: Sequence[Any],
    global_size: Sequence[int],
    local_size: Sequence[int],
    hw: str | hwlib.Platform | None = None,
    check_hazards: bool | str = True,
) -> sim.RunResult:
    """Run kernel `kernel` of a zebin in xegen's simulator, as `xegen run` does: `arguments` in
    order (numpy arrays for buffers, changed in place; numbers by value; `xegen.sim.local(bytes)`
    for __local pointers).  SWSB hazards raise `xegen.sim.HazardError` (`check_hazards="report"`
    lists them in the result instead, False skips the checks)."""
    data = zebin if isinstance(zebin, bytes) else Path(zebin).read_bytes()
    return sim.run(
        data, kernel, list(arguments), tuple(global_size), tuple(local_size), hw, check_hazards=check_hazards
    )
