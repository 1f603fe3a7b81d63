"""`xegen conv`: canonical descriptors, configs, IR printing and --check-ir from the command line."""

from __future__ import annotations

import subprocess
import sys

from xegen import ir
from xegen.cli import main
from xegen.conv.check import Comparison

from .shapes import RESNET_LINES, SHAPES


def run(capsys, *args: str) -> tuple[int, str, str]:
    status = main(["conv", *args])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_canonical(capsys):
    status, out, _ = run(capsys, RESNET_LINES[0], "--canonical")
    assert status == 0
    assert out == 'g1mb50_ic3ih224iw224_oc64oh112ow112_kh7kw7_sh2sw2_ph3pw3_dh0dw0_n"resnet_50:conv1"\n'


def test_batch_file_with_minibatch_override(capsys):
    status, out, _ = run(capsys, "--batch", str(SHAPES), "--canonical", "--mb", "1")
    lines = out.splitlines()
    assert status == 0 and len(lines) == 20
    assert all(line.startswith("g1mb1_") for line in lines)


def test_default_prints_problem_and_config(capsys):
    status, out, _ = run(capsys, "mb1ic16ih8oc32oh8kh3ph1", "--dt=f16", "--hw=xehpg", "--config", "tg_m=2 plan=gemm")
    lines = out.splitlines()
    assert status == 0
    assert lines[0] == "--dir=FWD_B --dt=f16 g1mb1_ic16ih8iw8_oc32oh8ow8_kh3kw3_sh1sw1_ph1pw1_dh0dw0"
    assert lines[1].startswith("config: fma=dpas simd=8 tg_m=2 ")  # (the plain product: `plan` not shown)
    assert lines[2].startswith("kernel conv_fwd_b_f16_xehpg: grid ")


def test_print_ir_reads_back(capsys):
    status, out, _ = run(capsys, "mb1ic8ih5oc8kh3ph1", "--dir=BWD_D", "--dt=bf16", "--hw=xelp", "--print-ir")
    assert status == 0
    body = ir.parse_stmt(out)
    assert "let thread_id0;" in out and "for (k_iter = 0;" in out
    assert body is not None


def test_check_ir_passes_and_prints_the_error(capsys):
    status, out, _ = run(capsys, 'mb1ic8ih5oc16kh3ph1n"tiny"', "--dir=BWD_WB", "--dt=f16", "--check-ir")
    assert status == 0
    assert out.splitlines()[0].startswith("tiny: wei: max error ")
    assert out.splitlines()[1].startswith("tiny: bias: max error ")
    assert all(line.endswith(" ok") for line in out.splitlines())


def test_check_ir_mismatch_exits_1(capsys, monkeypatch):
    import xegen.build  # (the command imports check_ir from here when it runs)

    monkeypatch.setattr(xegen.build, "check_ir", lambda kernel, seed: [Comparison("dst", 1.5, 40.0, 3, 100)])
    status, out, _ = run(capsys, "mb1ic8ih5oc16kh3ph1", "--check-ir")
    assert status == 1
    assert "MISMATCH in 3 of 100 elements" in out


def test_user_mistakes_are_one_line_errors_with_status_2(capsys):
    for args, message in [
        (("ic3ih5oc4kh9",), "output size would be"),
        (("ic3ih5oc4kh3", "--dt=u8:s8:f32", "--dir=BWD_D"), "forward only"),
        (("ic3ih5oc4kh3", "--config", "slm_bufs=4"), "slm_bufs=4: expected 1, 2 or 3"),
        (("ic3ih5oc4kh3", "--config", "warp=2"), "unknown config key"),
        (("ic3ih5oc4kh3", "--stag=nchw16"), "layout tag"),
        (("ic3ih5oc4kh3", "--hw=h100"), "unknown hardware"),
        (("ic3ih5oc4kh3", "--dir=FWD"), "unknown direction"),
        ((), "give a descriptor"),
        (("--batch", "/nonexistent/shapes"), "No such file"),
    ]:
        status, out, err = run(capsys, *args)
        assert status == 2, (args, err)
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("xegen: error: ") and message in lines[0], (args, lines)


def test_the_installed_command_reports_errors_without_a_traceback():
    result = subprocess.run(
        [sys.executable, "-m", "xegen", "conv", "ic3ih5oc4kh3qq", "--check-ir"], capture_output=True, text=True
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (
        result.stderr == "xegen: error: column 13: unknown descriptor field at 'qq' (fields: g, mb, ic, id, ih, "
        "iw, oc, od, oh, ow, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, then n and the name)\n"
    )


def test_batch_canonical_reports_each_bad_line_and_goes_on(capsys, tmp_path):
    shapes = tmp_path / "shapes"
    shapes.write_text("ic3ih5oc4kh3\nic3ih5oc4kh9\nic3ih5oc4kh3qq\nic1ih2oc1kh3sh2\n")
    status, out, err = run(capsys, "--batch", str(shapes), "--canonical")
    assert status == 1 and err == ""
    assert out.splitlines() == [
        "g1mb2_ic3ih5iw5_oc4oh3ow3_kh3kw3_sh1sw1_ph0pw0_dh0dw0",
        f"{shapes}:2: error: column 10: the h output size would be -3: input ih=5 with padding 0 is smaller than "
        "the effective kernel 9",
        f"{shapes}:3: error: column 13: unknown descriptor field at 'qq' (fields: g, mb, ic, id, ih, iw, oc, od, "
        "oh, ow, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, then n and the name)",
        "g1mb2_ic1ih2iw2_oc1oh1ow1_kh3kw3_sh2sw2_ph0pw0_dh0dw0",  # (2-3)/2 + 1 = 1, as C divides
    ]


def test_a_failing_check_in_a_batch_is_reported_and_the_batch_goes_on(capsys, tmp_path):
    shapes = tmp_path / "shapes"
    shapes.write_text('mb1ic8ih5oc16kh3ph1n"a"\nmb1ic8ih5oc16kh3ph1n"b"\n')
    status, out, _ = run(capsys, "--batch", str(shapes), "--check-ir", "--config", "k_split=99")
    assert status == 1
    assert [line.split(": error: ")[0] for line in out.splitlines()] == [f"{shapes}:1: a", f"{shapes}:2: b"]


def test_batch_lines_carry_their_own_attributes(capsys, tmp_path, monkeypatch):
    """As in benchdnn, an --attr-* option in a batch file holds for the lines after it, until --reset."""
    import xegen.build  # (the command imports check_ir from here when it runs)

    seen = []
    monkeypatch.setattr(xegen.build, "check_ir", lambda kernel, seed=0: seen.append(kernel.problem) or [])
    shapes = tmp_path / "shapes"
    shapes.write_text(
        "--attr-post-ops=sum+relu mb1ic8ih4oc8oh4kh1\n--attr-scales=wei:per_oc\n"
        "--attr-post-ops=clip:0:6 mb1ic8ih4oc8oh4kh1\n--reset\nmb1ic8ih4oc8oh4kh1\n"
    )
    status, _, _ = run(capsys, "--batch", str(shapes), "--check-ir", "--dt=u8:s8:u8", "--attr-post-ops=relu")
    assert status == 0
    assert [str(p).split(" g1")[0] for p in seen] == [
        "--dir=FWD_B --dt=u8:s8:u8 --attr-post-ops=sum+relu",
        "--dir=FWD_B --dt=u8:s8:u8 --attr-post-ops=clip:0:6 --attr-scales=wei:per_oc",
        "--dir=FWD_B --dt=u8:s8:u8 --attr-post-ops=relu",
    ]
    shapes.write_text("--stag=nchw mb1ic8ih4oc8oh4kh1\n")
    status, _, err = run(capsys, "--batch", str(shapes), "--check-ir")
    assert status == 2 and "'--stag=nchw' is not an option a batch line may set" in err
