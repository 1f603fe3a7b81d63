"""Intel's offline tools as oracles and peers: iga64 (assembler), ocloc (IGC and NEO's validator),
GenX_IR (IGC's vISA finalizer, the second back end's code generator).

Each call runs the tool in a fresh temporary directory (ocloc litters the current directory)
and returns bytes or text; a failure raises `ToolError` with the tool's own message.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import hw as hwlib
from .errors import Error


class ToolError(Error):
    """An Intel tool is missing or rejected its input."""


def find_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ToolError(
            f"'{name}' is not installed: install Debian's libigc-tools and intel-opencl-icd "
            "(scripts/test does this when run as root)"
        )
    return path


def have_tool(name: str) -> bool:
    return shutil.which(name) is not None


def _run(argv: list[str], cwd: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def iga64_assemble(text: str, hw: str | hwlib.Platform, *, compact: bool = False, extra: tuple[str, ...] = ()) -> bytes:
    """Assemble IGA text; 16-byte forms only unless `compact`."""
    platform = hwlib.platform(hw)
    with tempfile.TemporaryDirectory(prefix="xegen-iga-") as tmp:
        source = Path(tmp, "in.asm")
        source.write_text(text)
        output = Path(tmp, "out.bin")
        argv = [find_tool("iga64"), "-a", f"-p={platform.iga_platform}", str(source), "-o", str(output)]
        argv += ["-Xautocompact"] if compact else ["-Xforce-no-compact"]
        argv += list(extra)
        result = _run(argv, tmp)
        if result.returncode != 0 or not output.exists():
            raise ToolError(f"iga64 -a failed: {(result.stderr or result.stdout).strip()}")
        return output.read_bytes()


def iga64_disassemble(data: bytes, hw: str | hwlib.Platform, *, extra: tuple[str, ...] = ()) -> str:
    """Disassemble kernel bytes; raises when iga64 reports any error."""
    platform = hwlib.platform(hw)
    with tempfile.TemporaryDirectory(prefix="xegen-iga-") as tmp:
        binary = Path(tmp, "in.bin")
        binary.write_bytes(data)
        result = _run([find_tool("iga64"), "-d", f"-p={platform.iga_platform}", str(binary), *extra], tmp)
        if result.returncode != 0:
            raise ToolError(f"iga64 -d failed: {(result.stderr or result.stdout).strip()}")
        return result.stdout


def ocloc_compile(source: str, hw: str | hwlib.Platform, *, options: str = "", internal_options: str = "") -> bytes:
    """Compile OpenCL C with IGC for the platform; return the zebin."""
    platform = hwlib.platform(hw)
    with tempfile.TemporaryDirectory(prefix="xegen-ocloc-") as tmp:
        Path(tmp, "kernel.cl").write_text(source)
        argv = [
            find_tool("ocloc"),
            "compile",
            "-file",
            "kernel.cl",
            "-device",
            platform.ocloc_device,
            "-output",
            "kernel",
            "-output_no_suffix",
            "--format",
            "zebin",
        ]
        if options:
            argv += ["-options", options]
        if internal_options:
            argv += ["-internal_options", internal_options]
        result = _run(argv, tmp)
        output = Path(tmp, "kernel")
        if result.returncode != 0 or not output.exists():
            raise ToolError(f"ocloc compile failed: {(result.stdout + result.stderr).strip()}")
        return output.read_bytes()


def ocloc_validate(zebin: bytes) -> tuple[bool, str]:
    """Run NEO's zebin decoder on the binary: (valid, ocloc's report)."""
    with tempfile.TemporaryDirectory(prefix="xegen-ocloc-") as tmp:
        Path(tmp, "kernel.bin").write_bytes(zebin)
        result = _run([find_tool("ocloc"), "validate", "-file", "kernel.bin"], tmp)
        report = (result.stdout + result.stderr).strip()
        return result.returncode == 0 and "Binary is VALID" in report, report


@dataclass(frozen=True)
class Finalized:
    """What GenX_IR made of a vISA kernel: the native code and its assembly listing (whose
    `//.` header lines report instruction count, GRFs and spills)."""

    code: bytes
    listing: str


def genx_ir_platform(hw: str | hwlib.Platform) -> str:
    """GenX_IR's -platform name (TGLLP, DG2, PVCXT)."""
    return hwlib.platform(hw).genx_ir_platform


def genx_ir_finalize(text: str, hw: str | hwlib.Platform, grf_count: int, options: tuple[str, ...] = ()) -> Finalized:
    """Finalize vISA assembly into native code for the platform with `grf_count` GRFs
    (`options`: more of GenX_IR's, e.g. -keepScalarJmp)."""
    with tempfile.TemporaryDirectory(prefix="xegen-genx-") as tmp:
        Path(tmp, "kernel.visaasm").write_text(text)
        argv = [
            find_tool("GenX_IR"),
            "kernel.visaasm",
            "-platform",
            genx_ir_platform(hw),
            "-output",
            "-binary",
            "-TotalGRFNum",
            str(grf_count),
            *options,
        ]
        result = _run(argv, tmp)
        code, listing = Path(tmp, "kernel.dat"), Path(tmp, "kernel.asm")
        if result.returncode != 0 or not code.exists() or not listing.exists():
            errors = Path(tmp, "kernel.errors.txt")
            detail = errors.read_text() if errors.exists() else ""
            message = " ".join((result.stdout + result.stderr + detail).split())
            raise ToolError(f"GenX_IR failed: {message[:2000]}")
        return Finalized(code.read_bytes(), listing.read_text())


def environment_can_install_tools() -> bool:
    """True when scripts/test could have installed Intel's tools (root on Debian)."""
    return os.geteuid() == 0 and Path("/etc/debian_version").exists()
