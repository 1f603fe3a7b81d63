"""Instructions the simulator does not model, run through `xegen run`: each is one error line
naming the pc, the instruction and what is missing, with exit status 2 and no traceback; an
instruction the kernel never reaches does not matter."""

from __future__ import annotations

import pytest

from xegen import hw as hwlib
from xegen.cli import main
from xegen.emit import assemble
from xegen.emit.zebin import ExecutionEnv, ZebinKernel, write_zebin

from .harness import end_of_thread

CASES = [
    # (platform, assembly, words the message must contain)
    ("dg2", "brd (16|M0) END", "(brd (16|M0) L16): brd is not simulated: how it diverges and reconverges"),
    ("dg2", "brc (16|M0) END END", "brc is not simulated"),
    ("tgllp", "brd (16|M0) END", "brd is not simulated"),
    ("dg2", "call (16|M0) r4.0:d END", "call (16) is not simulated: only the scalar form (1|M0) is"),
    ("pvc", "ret (16|M0) r4.0<0;1,0>:d", "ret (16) is not simulated: only the scalar form"),
    ("dg2", "calla (16|M0) r4.0:d 0x20", "calla (16) is not simulated"),
    ("dg2", "(W) jmpi r10.0<0;1,0>:d", "jmpi through a register is not simulated"),
    ("dg2", "movi (8|M0) r10.0<1>:ud r[a0.0]<1,0>:ud null<0;1,0>:ud", "movi is not simulated: what its second"),
    (
        "pvc",
        "madm (16|M0) r10.mme0:hf r20.mme1:hf r30.mme2:hf r40.nomme:hf",
        "madm operands must be registers of one type, :f or :df",
    ),
    ("tgllp", "illegal", "(illegal): executed an illegal instruction"),
    ("pvc", "illegal", "executed an illegal instruction"),
]


def zebin_of(asm: str, hw: str) -> bytes:
    """A kernel without arguments: `asm` at pc 0, then `nop`s (branch targets) and EOT."""
    platform = hwlib.platform(hw)
    code = assemble(f"{asm}\nEND:\nnop\nnop\n{end_of_thread(platform)}", platform)
    kernel = ZebinKernel("k", code, ExecutionEnv(grf_count=128, simd_size=16))
    return write_zebin([kernel], platform)


def run_cli(capsys, tmp_path, asm: str, hw: str) -> tuple[int, str, str]:
    path = tmp_path / "k.zebin"
    path.write_bytes(zebin_of(asm, hw))
    code = main(["run", str(path), "--kernel", "k", "--global", "32", "--local", "16"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _case_id(case) -> str:
    hw, asm, _ = case
    return f"{hw}-{asm.removeprefix('(W) ').split()[0]}"


@pytest.mark.parametrize("hw, asm, words", CASES, ids=[_case_id(c) for c in CASES])
def test_unmodeled_instruction_is_one_error_line(capsys, tmp_path, hw, asm, words):
    code, out, err = run_cli(capsys, tmp_path, asm, hw)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xegen: error: pc 0x0000 ("), err
    assert words in lines[0]
    assert "Traceback" not in err + out


def test_unmodeled_instruction_the_kernel_jumps_over_is_harmless(capsys, tmp_path):
    code, out, err = run_cli(
        capsys,
        tmp_path,
        "(W) jmpi END\nbrd (16|M0) END\nmadm (16|M0) r10.mme0:f r20.mme1:f r30.mme2:f r40.nomme:f\nillegal",
        "dg2",
    )
    assert code == 0, err
    assert "k on XeHPG: SIMD16, 2 group(s), 2 thread(s)" in out
