"""`xegen asm` and `xegen disasm`: round trip through files, one-line errors, status 2."""

from __future__ import annotations

import pytest

from xegen import oracles
from xegen.cli import main
from xegen.emit import disassemble, parse_asm

from .iga_compare import kernel_code

SOURCE = """\
// a small kernel with labels, a send and a loop
L0:
(W)     mov (8|M0)               r10.0<1>:ud   0x0:ud
        add (16|M0)   (lt)f0.0   r12.0<1>:d    r12.0<1;1,0>:d    -1:w               {I@1}
(f0.0)  goto (16|M0)                           L64              L96
L64:
        send.ugm (16|M0)         r22      r16     null:0  0x0   0x64280900   {A@2,$4}
        join (16|M0)                           L96
L96:
        math.inv (8|M0)          r30.0<1>:f    r22.0<1;1,0>:f   {$4.dst}
(W)     send.gtwy (8|M0)         null     r127    null:0  0x0   0x02000010   {EOT,A@1}
"""


def test_asm_then_disasm_round_trips_through_files(tmp_path, capsys):
    source = tmp_path / "kernel.asm"
    source.write_text(SOURCE)
    binary = tmp_path / "kernel.bin"
    assert main(["asm", str(source), "--hw", "xehpg", "-o", str(binary)]) == 0
    assert len(binary.read_bytes()) == 16 * 7
    if oracles.have_tool("iga64"):
        assert binary.read_bytes() == oracles.iga64_assemble(SOURCE, "xehpg")
    listing = tmp_path / "kernel.out.asm"
    assert main(["disasm", str(binary), "--hw", "dg2", "-o", str(listing)]) == 0
    assert parse_asm(listing.read_text(), "xehpg") == parse_asm(SOURCE, "xehpg")
    assert main(["disasm", str(binary), "--hw", "xehpg", "--pcs"]) == 0
    out = capsys.readouterr().out
    assert "/* [0010] */" in out and "L48:" in out and "L80:" in out


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("xegen: error: "), err
    return err[0]


def test_bad_assembly_exits_2_with_one_error_line(tmp_path, capsys):
    source = tmp_path / "bad.asm"
    source.write_text("nop\nmov (8|M0) r1.0<1>:d r2.0<8;8,1:d\n")
    assert main(["asm", str(source), "-o", str(tmp_path / "x.bin")]) == 2
    line = _one_error_line(capsys)
    assert "bad.asm" in line and "line 2, column 32" in line
    assert not (tmp_path / "x.bin").exists()


def test_binary_input_to_asm_exits_2_with_one_error_line(tmp_path, capsys):
    source = tmp_path / "kernel.bin"
    source.write_bytes(b"nop\n\xff\xfe")
    assert main(["asm", str(source), "-o", str(tmp_path / "x.bin")]) == 2
    line = _one_error_line(capsys)
    assert "kernel.bin: line 2 is not UTF-8 text (byte 0xff)" in line  # (b"\xff" starts line 2)


def test_bad_bytes_exit_2_with_one_error_line(tmp_path, capsys):
    binary = tmp_path / "cut.bin"
    binary.write_bytes(bytes([0x60]) + bytes(15) + bytes([0x61]) + bytes(7))
    assert main(["disasm", str(binary), "--hw", "xehpc"]) == 2
    line = _one_error_line(capsys)
    assert "cut.bin" in line and "byte offset 16" in line


def _status(argv: list[str]) -> int:
    """The exit status of `xegen ARGV`, whether main returns it or argparse exits."""
    try:
        return main(argv)
    except SystemExit as exit:
        return int(exit.code)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["disasm", "/nonexistent/kernel.bin"], "No such file"),
        (["asm", "x.asm", "--hw", "gen5", "-o", "y.bin"], "unknown hardware 'gen5'"),
        (["asm", "x.asm"], "required: -o"),
    ],
)
def test_usage_errors_exit_2_with_one_error_line(argv, fragment, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.asm").write_text("nop\n")
    assert _status(argv) == 2
    assert fragment in _one_error_line(capsys)


def test_a_broken_zebin_is_one_error_line(tmp_path, capsys):
    zebin = tmp_path / "k.zebin"
    zebin.write_bytes(b"\x7fELF" + bytes(60))
    assert main(["disasm", str(zebin)]) == 2
    assert "k.zebin" in _one_error_line(capsys)


def test_disasm_prints_every_kernel_of_a_zebin(tmp_path, capsys, ocloc):
    source = "__kernel void a(__global int* p) { p[0] = 1; }\n__kernel void b(__global int* p) { p[1] = 2; }"
    zebin = tmp_path / "k.zebin"
    zebin.write_bytes(oracles.ocloc_compile(source, "dg2"))
    assert main(["disasm", str(zebin), "--hw", "dg2"]) == 0
    out = capsys.readouterr().out
    assert "// kernel a" in out and "// kernel b" in out and "send" in out


def test_disasm_takes_the_platform_a_zebin_names(tmp_path, capsys, ocloc):
    zebin = tmp_path / "k.zebin"
    zebin.write_bytes(oracles.ocloc_compile("__kernel void a(__global int* p) { p[get_global_id(0)] *= 3; }", "tgllp"))
    assert main(["disasm", str(zebin)]) == 0  # no --hw: XeLP, from the zebin's note
    (code,) = kernel_code(zebin.read_bytes()).values()
    assert capsys.readouterr().out == "// kernel a\n" + disassemble(code, "xelp")
    assert main(["disasm", str(zebin), "--hw", "dg2"]) == 2  # decoding as XeHPG would mislead
    line = _one_error_line(capsys)
    assert "k.zebin" in line and "XeLP" in line and "--hw xelp" in line
