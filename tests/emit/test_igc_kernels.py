"""IGC's own kernels: every instruction decodes and prints exactly as iga64 prints it, and
re-encodes to iga64's uncompacted bytes.

Kernels are compiled with ocloc for tgllp (XeLP), dg2 (XeHPG) and pvc (XeHPC).  IGC emits
compacted 8-byte instructions; `iga64 -a -Xforce-no-compact` on iga64's listing gives the
16-byte forms we decode and must reproduce.  When `xegen.emit.compaction` exists, the
original compacted bytes are checked too.
"""

from __future__ import annotations

import importlib.util
from functools import cache

import pytest

from xegen import hw as hwlib
from xegen import oracles
from xegen.emit import assemble, decode, disassemble, encode_kernel
from xegen.emit.zebin import read_zebin

from .iga_compare import (
    IGC_DOUBLE_KERNEL,
    IGC_DPAS_KERNEL,
    IGC_DPAS_OPTIONS,
    IGC_KERNELS,
    assert_same_listing,
    kernel_code,
)

HAVE_COMPACTION = importlib.util.find_spec("xegen.emit.compaction") is not None
PLATFORMS = [hwlib.XELP, hwlib.XEHPG, hwlib.XEHPC]


@cache
def compiled_kernels(platform_name: str) -> dict[str, bytes]:
    """Kernel name -> IGC's (compacted) instruction bytes for one platform, read by our zebin
    reader and checked against a plain ELF section walk."""
    platform = hwlib.platform(platform_name)
    zebins = [oracles.ocloc_compile(source, platform) for source in IGC_KERNELS.values()]
    if platform.name == "xehpc":
        zebins.append(oracles.ocloc_compile(IGC_DOUBLE_KERNEL, platform))
    if platform.has_dpasw:  # dg2: the dpas GEMM tile
        zebins.append(oracles.ocloc_compile(IGC_DPAS_KERNEL, platform, options=IGC_DPAS_OPTIONS))
    out = {}
    for data in zebins:
        kernels = {kernel.name: kernel.code for kernel in read_zebin(data).kernels}
        assert kernels == kernel_code(data)
        out.update(kernels)
    return out


def same_code(ours: bytes, igc: bytes) -> bool:
    """Equal up to the zero padding IGC puts after a kernel (a trailing 8-byte fragment is not
    an instruction, so neither iga64 nor our decoder lists it)."""
    return igc.startswith(ours) and not igc[len(ours) :].strip(b"\0")


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_igc_kernels_decode_print_and_reencode_like_iga64(platform, ocloc, iga64):
    kernels = compiled_kernels(platform.name)
    assert {"elementwise", "reduce", "conv", "transpose", "idot", "mathk"} <= set(kernels)
    total = 0
    opcodes = set()
    for name, code in sorted(kernels.items()):
        listing = oracles.iga64_disassemble(code, platform)  # IGC's compacted kernel
        uncompacted = oracles.iga64_assemble(listing, platform)
        reference = oracles.iga64_disassemble(uncompacted, platform)
        instructions = decode(uncompacted, platform)
        total += len(instructions)
        opcodes.update(i.opcode for i in instructions)
        assert_same_listing(disassemble(uncompacted, platform), reference, f"{platform.name} {name}: ")
        with_pcs = oracles.iga64_disassemble(uncompacted, platform, extra=("-Xprint-pc",))
        assert_same_listing(disassemble(uncompacted, platform, pcs=True), with_pcs, f"{platform.name} {name} --pcs: ")
        assert encode_kernel(instructions, platform) == uncompacted, f"{name}: re-encoding differs"
        assert same_code(assemble(listing, platform), code), (
            f"{name}: assembling iga64's listing differs from IGC's bytes"
        )
        assert assemble(reference, platform) == uncompacted, f"{name}: assembling the uncompacted listing differs"
        if HAVE_COMPACTION:
            assert_same_listing(disassemble(code, platform), listing, f"{platform.name} {name} (compacted): ")
            assert same_code(encode_kernel(decode(code, platform), platform), code), f"{name}: IGC's bytes differ"
    assert total > 1000
    expected = {"send", "sync", "mad", "math", "mul", "add", "mach", "shl", "cmp", "sel", "and"}
    expected |= {"goto", "join"} if platform.has_lsc else {"if", "else", "endif"}  # IGC's SIMD control flow
    if platform.has_dpasw:
        expected |= {"dpas", "add3", "bfn"}
    if platform.name == "xehpc":
        expected |= {"madm", "macl"}
    assert expected <= opcodes, f"kernels no longer exercise {expected - opcodes}"
