"""The translation of selected instructions into vISA text, the finalizer's report, and the
`--backend visa` command line.  Expected texts follow the vISA specification's operand order
(IGC's documentation/visa), written out by hand here."""

from __future__ import annotations

import pytest

from xegen import hw as hwlib
from xegen import oracles
from xegen.cli import main
from xegen.emit.instruction import CondModifier, Flag, Imm, Instruction, Predicate, Reg, SendDescriptor
from xegen.lower.program import Program
from xegen.lower.values import VIRTUAL, VRegTable
from xegen.visa import compile_visa, finalize, translate
from xegen.visa.finalize import FinalizerReport, SpillError
from xegen.visa.text import immediate

XEHPG = hwlib.platform("xehpg")
DESC = "g1mb1ic8ih4oc8oh4kh3ph1"


def program_of(*instructions, registers: int = 4, size: int = 64) -> Program:
    vregs = VRegTable(XEHPG.grf_bytes)
    for index in range(registers):
        vregs.new(size, f"x{index}")
    program = Program(vregs)
    for inst in instructions:
        if isinstance(inst, str):
            program.label(inst)
        else:
            target = None
            if isinstance(inst, tuple):
                inst, target = inst
            program.add(inst, target)
    return program


def body(program: Program) -> list[str]:
    text = translate(program, "k", XEHPG, 16)
    lines = text.splitlines()
    return [line.strip() for line in lines[lines.index("k_0:") + 1 :]]


def v(number: int, subreg: int = 0, type_: str = "f") -> Reg:
    return Reg(VIRTUAL, number, subreg, type_)


@pytest.mark.parametrize(
    "imm, text",
    [
        (Imm(0xFFFF, "w"), "-1:w"),  # signed types as their value
        (Imm(0x8000_0000, "d"), "-2147483648:d"),
        (Imm(0xFFFF_FFC0, "ud"), "0xffffffc0:ud"),
        (Imm(0x3F80_0000, "f"), "0x3f800000:f"),  # floats as their bits
        (Imm(0x3C00, "hf"), "0x3c00:hf"),
    ],
)
def test_immediates(imm, text):
    assert immediate(imm) == text


def test_mad_puts_the_addend_last():
    # native mad: dst = src0 + src1 * src2; vISA mad: dst = src0 * src1 + src2
    mad = Instruction("mad", 16, dst=v(0), srcs=(v(0), v(1), v(2, 3).region(0, None, 0)), no_mask=True)
    assert body(program_of(mad)) == [
        "mad (M1_NM, 16) VR0_f(0,0)<1> VR1_f(0,0)<1;1,0> VR2_f(0,3)<0;1,0> VR0_f(0,0)<1;1,0>"
    ]


def test_subb_names_its_borrow_and_the_high_half_subtracts_it():
    # XeLP's address at a negative distance: low = base - c, borrow into acc0; high -= borrow
    low = Instruction(
        "subb",
        1,
        dst=v(0, 0, "ud"),
        srcs=(v(1, 0, "ud").region(0, 1, 0), Imm(0x3A00, "ud")),
        options=("AccWrEn",),
        no_mask=True,
    )
    acc = Reg("acc", 0, 0, "d", neg=True).region(0, 1, 0)
    high = Instruction("add", 1, dst=v(0, 1, "ud"), srcs=(v(1, 1, "ud").region(0, 1, 0), acc), no_mask=True)
    lines = body(program_of(low, high))
    assert lines[:2] == [
        "subb (M1_NM, 1) VR0(0,0)<1> CARRY(0,0)<1> VR1(0,0)<0;1,0> 0x3a00:ud",
        "add (M1_NM, 1) VR0(0,1)<1> VR1(0,1)<0;1,0> (-)CARRY_d(0,0)<0;1,0>",
    ]


def test_operands_past_the_first_grf_name_their_row():
    mov = Instruction("mov", 8, dst=v(0, 8, "d"), srcs=(v(1, 9, "d").region(8, 8, 1),), no_mask=True)
    # element 8 of :d is byte 32 = row 1 of a 32-byte GRF; element 9 is row 1, column 1
    assert body(program_of(mov)) == ["mov (M1_NM, 8) VR0_d(1,0)<1> VR1_d(1,1)<8;8,1>"]


def test_a_vector_immediate_of_fewer_than_eight_lanes_goes_through_eight():
    lanes = Instruction("mov", 4, dst=v(0, 0, "uw"), srcs=(Imm(0x76543210, "uv"),), no_mask=True)
    assert body(program_of(lanes)) == [
        "mov (M1_NM, 8) VECTOR_uw(0,0)<1> 0x76543210:uv",
        "mov (M1_NM, 4) VR0_uw(0,0)<1> VECTOR_uw(0,0)<4;4,1>",
    ]
    whole = Instruction("mov", 8, dst=v(0, 0, "w"), srcs=(Imm(0xF1, "v"),), no_mask=True)
    assert body(program_of(whole)) == ["mov (M1_NM, 8) VR0_w(0,0)<1> 0xf1:v"]


def test_a_chain_of_predicated_compares_is_an_and_of_predicates():
    f0 = Flag(0, 0)
    first = Instruction(
        "cmp",
        1,
        dst=Reg("null", 0, 0, "d"),
        srcs=(v(0, 0, "d"), Imm(3, "d")),
        cond_modifier=CondModifier("lt", f0),
        no_mask=True,
    )
    second = Instruction(
        "cmp",
        1,
        dst=Reg("null", 0, 0, "d"),
        srcs=(v(1, 0, "d"), Imm(1, "d")),
        cond_modifier=CondModifier("ge", f0),
        predicate=Predicate(f0),
        no_mask=True,
    )
    jump = Instruction("jmpi", 1, predicate=Predicate(f0, invert=True), no_mask=True)
    assert body(program_of("top", first, second, (jump, "top"))) == [
        "top:",
        "cmp.lt (M1_NM, 1) P0_0_1 VR0_d(0,0)<0;1,0> 3:d",
        "cmp.ge (M1_NM, 1) T0_0_1 VR1_d(0,0)<0;1,0> 1:d",
        "and (M1_NM, 1) P0_0_1 P0_0_1 T0_0_1",
        "(!P0_0_1) jmp (M1_NM, 1) top",
    ]


def test_one_flag_at_two_widths_is_two_predicates():
    f0 = Flag(0, 0)
    wide = Instruction(
        "cmp",
        16,
        dst=Reg("null", 0, 0, "d"),
        srcs=(v(0, 0, "d"), Imm(3, "d")),
        cond_modifier=CondModifier("lt", f0),
        no_mask=True,
    )
    narrow = Instruction(
        "cmp",
        1,
        dst=Reg("null", 0, 0, "d"),
        srcs=(v(1, 0, "d"), Imm(3, "d")),
        cond_modifier=CondModifier("lt", f0),
        no_mask=True,
    )
    text = translate(program_of(wide, narrow), "k", XEHPG, 16)
    assert ".decl P0_0_16 v_type=P num_elts=16" in text and ".decl P0_0_1 v_type=P num_elts=1" in text


def test_sends_keep_their_descriptors_and_lengths():
    load = Instruction(
        "send",
        1,
        dst=v(0, 0, "ud"),
        srcs=(v(1, 0, "ud"), Reg("null", 0, 0, "ud")),
        send=SendDescriptor("ugm", 0x0220C580, 0, src1_length=0),
        no_mask=True,
    )
    # LSC load: mlen desc[28:25] = 1, rlen desc[24:20] = 2; ugm is SFID 0xF
    assert body(program_of(load)) == ["raw_sends.15.1.0.2 (M1_NM, 1) 0x0:ud 0x220c580:ud VR1.0 %null.0 VR0.0"]


def test_end_of_thread_is_ret():
    eot = Instruction(
        "send",
        1,
        srcs=(v(3, 0, "ud"), Reg("null", 0, 0, "ud")),
        send=SendDescriptor("gtwy", 0x02000010, 0, src1_length=0),
        options=("EOT",),
        no_mask=True,
    )
    copy = Instruction("mov", 8, dst=v(3, 0, "ud"), srcs=(v(0, 0, "ud").region(8, 8, 1),), no_mask=True)
    assert body(program_of(copy, eot)) == ["ret (M1_NM, 1)"]


def test_an_instruction_without_a_visa_form_is_a_clear_error():
    with pytest.raises(Exception, match="has no vISA form"):
        body(
            program_of(Instruction("bfn", 8, dst=v(0, 0, "ud"), srcs=(v(1, 0, "ud"),) * 3, function=0x96, no_mask=True))
        )


def test_finalizer_report_reads_the_listing_header():
    listing = "//.kernel k\n//.instCount 231\n//.spill size 192\n//.private memory size 64\n"
    assert FinalizerReport.parse(listing) == FinalizerReport(231, 192, 64)
    assert FinalizerReport.parse("//.instCount 5\n") == FinalizerReport(5, 0, 0)


def fake_spills(monkeypatch, spills: int, times: int) -> list[int]:
    """GenX_IR as it is, but its listing reports `spills` bytes spilled on the first `times`
    calls; returns the GRF counts of the calls made."""
    real = finalize.genx_ir_finalize
    calls: list[int] = []

    def finalizing(text, hw, grf_count, options=()):
        calls.append(grf_count)
        result = real(text, hw, grf_count, options)
        header = f"//.spill size {spills}\n" if len(calls) <= times else ""
        return oracles.Finalized(result.code, header + result.listing)

    monkeypatch.setattr(finalize, "genx_ir_finalize", finalizing)
    return calls


def test_a_kernel_the_finalizer_spills_is_refused(monkeypatch, genx_ir):
    from xegen.conv import make_problem, parse_descriptor
    from xegen.pipeline import build_kernel, kernel_spec

    calls = fake_spills(monkeypatch, 256, times=2)
    spec = kernel_spec(build_kernel(make_problem(parse_descriptor(DESC), "FWD_B", "f32", mb=1), "xehpg"))
    with pytest.raises(SpillError, match="spilled 256 bytes"):
        compile_visa(spec, "xehpg")
    assert calls == [128, 128]  # again without payloads kept for reuse, then refused


def test_the_pipeline_falls_back_from_a_configuration_the_finalizer_spills(monkeypatch, genx_ir):
    from xegen.conv import make_problem, parse_descriptor
    from xegen.pipeline import compile_problem

    calls = fake_spills(monkeypatch, 64, times=2)
    compilation = compile_problem(make_problem(parse_descriptor(DESC), "FWD_B", "f32", mb=1), "xehpg", backend="visa")
    assert len(calls) == 3 and len(compilation.fallbacks) == 1 and "spilled 64 bytes" in compilation.fallbacks[0]
    assert str(compilation.config) not in compilation.fallbacks[0].split(":")[0]


def test_missing_genx_ir_names_the_package(monkeypatch):
    monkeypatch.setattr(oracles.shutil, "which", lambda name: None)
    with pytest.raises(oracles.ToolError, match="'GenX_IR' is not installed: install Debian's libigc-tools"):
        oracles.genx_ir_finalize(".version 4.1\n", "xehpg", 128)


def test_cli_asm_shows_the_visa(capsys, genx_ir):
    assert main(["conv", DESC, "--backend", "visa", "--asm", "--no-model"]) == 0
    out = capsys.readouterr().out
    assert ".version 4.1" in out and 'kernel "conv_fwd_b_f32_xehpg"' in out and "raw_sends" in out


@pytest.mark.parametrize(
    "args, words",
    [
        (
            ["--backend", "visa", "--print-after", "regalloc"],
            "--print-after=regalloc: that pass does not run with --backend visa",
        ),
        (["--print-after", "visa"], "--print-after=visa: that pass does not run with --backend native"),
        (["--backend", "llvm"], "invalid choice: 'llvm'"),
    ],
)
def test_cli_backend_mistakes(capsys, args, words):
    with pytest.raises(SystemExit) as exit_:
        raise SystemExit(main(["conv", DESC, *args]))
    assert exit_.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("xegen: error:") and words in err[0]


def test_cli_without_genx_ir_is_one_error_naming_the_package(capsys, monkeypatch):
    real = oracles.shutil.which
    monkeypatch.setattr(oracles.shutil, "which", lambda name: None if name == "GenX_IR" else real(name))
    with pytest.raises(SystemExit) as exit_:
        raise SystemExit(main(["conv", DESC, "--backend", "visa", "--no-model"]))
    assert exit_.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "xegen: error: 'GenX_IR' is not installed: install Debian's libigc-tools and intel-opencl-icd "
        "(scripts/test does this when run as root)"
    ]


def test_cli_print_after_all_shows_the_visa_passes_in_order(capsys, genx_ir):
    assert main(["conv", DESC, "--backend", "visa", "--print-after-all", "--no-model"]) == 0
    headers = [line for line in capsys.readouterr().out.splitlines() if line.startswith("// ----- after ")]
    assert headers == [
        f"// ----- after {name} -----" for name in ("build", "schedule", "optimize", "isel", "visa", "finalize")
    ]


def test_the_kernel_cache_keeps_the_back_ends_apart(capsys, tmp_path, genx_ir):
    import json

    def summary(*args: str) -> dict:
        assert main(["conv", DESC, "--no-model", "--json", "--cache-dir", str(tmp_path), *args]) == 0
        return json.loads(capsys.readouterr().out)

    native, visa = summary(), summary("--backend", "visa")
    assert "cache" not in visa and visa["backend"] == "visa" and "backend" not in native
    again = summary("--backend", "visa")
    assert again["cache"] == "hit" and again["instructions"] == visa["instructions"]
    assert summary()["cache"] == "hit"
