"""The zebin writer and reader, checked with NEO's validator and ocloc's own dump of IGC zebins."""

from __future__ import annotations

import struct
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.emit.corpus import BUILDS, KERNELS, Build, kernel
from xegen import hw as hwlib
from xegen import oracles
from xegen.emit import elf, zebin
from xegen.emit.zebin import (
    BindingTableIndex,
    ExecutionEnv,
    PayloadArgument,
    PerThreadPayloadArgument,
    ZebinKernel,
)
from xegen.errors import DecodeError, Error

PLATFORMS = [p.name for p in hwlib.PLATFORMS]


def ocloc_dump(data: bytes, device: str, directory: Path) -> dict[str, str]:
    """`ocloc disasm -dump`: the files ocloc writes for a zebin (.ze_info, .text.<k>.asm, ...)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "in.bin").write_bytes(data)
    dump = directory / "dump"
    dump.mkdir(exist_ok=True)
    result = subprocess.run(
        [oracles.find_tool("ocloc"), "disasm", "-file", "in.bin", "-device", device, "-dump", str(dump)],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return {p.name: p.read_text(errors="replace") for p in dump.iterdir() if p.is_file()}


def instruction_lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def assert_valid(data: bytes) -> str:
    valid, report = oracles.ocloc_validate(data)
    assert valid, report
    return report


# --- IGC's zebins ------------------------------------------------------------------------------


@pytest.mark.parametrize("build", BUILDS, ids=str)
def test_reads_igc_zebins_like_ocloc_dump(iga64, corpus, build, tmp_path):
    data = corpus.zebin(build)
    parsed = zebin.read_zebin(data)
    platform = hwlib.platform(build.variant.device)
    assert [k.name for k in parsed.kernels] == [build.kernel.kernel_name]
    ours = parsed.kernels[0]

    dump = ocloc_dump(data, build.variant.device, tmp_path)
    # Code: iga64 on the bytes we extracted prints what ocloc printed from the ELF itself.
    # (ocloc prints bfn functions as hex; ask iga64 for the same.)
    assert instruction_lines(
        oracles.iga64_disassemble(ours.code, platform, extra=("-Xno-print-bfnexprs",))
    ) == instruction_lines(dump[f".text.{ours.name}.asm"])
    # .ze_info: ocloc's copy, parsed by PyYAML alone, against our typed model.
    theirs = yaml.safe_load(dump[".ze_info"])["kernels"][0]
    env = theirs["execution_env"]
    assert ours.execution_env.simd_size == env["simd_size"]
    assert ours.execution_env.grf_count == env["grf_count"]
    assert ours.execution_env.slm_size == env.get("slm_size", 0)
    assert ours.execution_env.barrier_count == env.get("barrier_count", 0)
    assert ours.execution_env.has_dpas == env.get("has_dpas", False)
    assert ours.execution_env.inline_data_payload_size == env.get("inline_data_payload_size", 0)
    assert ours.execution_env.offset_to_skip_per_thread_data_load == env.get("offset_to_skip_per_thread_data_load", 0)
    assert ours.execution_env.required_work_group_size == (
        tuple(env["required_work_group_size"]) if "required_work_group_size" in env else None
    )
    assert [
        (a.arg_type, a.offset, a.size, a.arg_index, a.addrmode, a.addrspace, a.access_type)
        for a in ours.payload_arguments
    ] == [
        (
            a["arg_type"],
            a["offset"],
            a["size"],
            a.get("arg_index"),
            a.get("addrmode"),
            a.get("addrspace"),
            a.get("access_type"),
        )
        for a in theirs.get("payload_arguments", [])
    ]
    assert [(a.arg_type, a.offset, a.size) for a in ours.per_thread_payload_arguments] == [
        (a["arg_type"], a["offset"], a["size"]) for a in theirs.get("per_thread_payload_arguments", [])
    ]
    assert [(b.bti_value, b.arg_index) for b in ours.binding_table_indices] == [
        (b["bti_value"], b["arg_index"]) for b in theirs.get("binding_table_indices", [])
    ]
    # The notes: IGC names the product family, leaves the GFX core 0 and marks itself as generator 1.
    assert parsed.gfx_core == 0
    assert parsed.target_metadata is not None and parsed.target_metadata >> 21 & 7 == 1
    assert parsed.zeinfo_version == yaml.safe_load(dump[".ze_info"])["version"]


@pytest.mark.parametrize("device", ["tgllp", "dg2", "pvc"])
def test_igc_reduction_metadata(corpus, device):
    # Hand calculation: one barrier, a 64-float __local array = 256 bytes of SLM.
    build = Build(kernel("reduction"), kernel("reduction").variant(device))
    env = zebin.read_zebin(corpus.zebin(build)).kernels[0].execution_env
    assert env.barrier_count == 1
    assert env.slm_size == 64 * 4
    assert env.required_work_group_size == (64, 1, 1)


@pytest.mark.parametrize("name", ["gemm_dpas_sg8", "gemm_dpas_sg16"])
def test_igc_dpas_kernels_keep_dpas(iga64, corpus, name):
    k = kernel(name)
    build = Build(k, k.variants[0])
    parsed = zebin.read_zebin(corpus.zebin(build)).kernels[0]
    assert parsed.execution_env.has_dpas
    assert parsed.execution_env.simd_size == k.sub_group_size
    text = oracles.iga64_disassemble(parsed.code, build.variant.device)
    assert any(line.split()[0].startswith("dpas") for line in instruction_lines(text))


@pytest.mark.parametrize("build", [b for b in BUILDS if b.kernel.required_mnemonics], ids=str)
def test_corpus_builds_contain_their_required_instructions(iga64, corpus, build):
    code = zebin.read_zebin(corpus.zebin(build)).kernels[0].code
    mnemonics = {
        line.split()[0].split(".")[0]
        for line in instruction_lines(oracles.iga64_disassemble(code, build.variant.device))
        if not line.startswith(("(", "L"))
    }
    for required in build.kernel.required_mnemonics:
        assert required in mnemonics, f"{build}: IGC dropped {required}"


C_TYPES = {"float32": "float", "float16": "half", "int8": "char", "int32": "int"}


@pytest.mark.parametrize("name", [k.name for k in KERNELS])
def test_corpus_descriptions_match_what_igc_compiled(corpus, name):
    """Each kernel's Python description (arguments, launch) agrees with IGC's .ze_info."""
    k = kernel(name)
    parsed = zebin.read_zebin(corpus.zebin(Build(k, k.variants[0])))
    info = parsed.kernels[0]
    args_info = next(m for m in parsed.raw["kernels_misc_info"] if m["name"] == k.kernel_name)["args_info"]
    assert [a["name"] for a in args_info] == [a.name for a in k.arguments]
    for index, argument in enumerate(k.arguments):
        type_name = args_info[index]["type_name"]
        entries = [p for p in info.payload_arguments if p.arg_index == index]
        if argument.kind == "buffer":
            assert type_name.startswith(C_TYPES[argument.dtype] + "*"), type_name
            assert any(p.arg_type == "arg_bypointer" and p.addrspace == "global" for p in entries)
        else:
            assert type_name.startswith(C_TYPES[argument.dtype] + ";"), type_name
            assert sum(p.size for p in entries if p.arg_type == "arg_byvalue") == np.dtype(argument.dtype).itemsize

    case = k.make_case(np.random.default_rng(0))
    assert set(case.values) == {a.name for a in k.arguments}
    for argument in k.arguments:
        assert np.asarray(case.values[argument.name]).dtype == np.dtype(argument.dtype), argument.name
    required = info.execution_env.required_work_group_size
    if required is not None:
        assert case.launch.local_size == required
    if k.sub_group_size is not None:
        assert info.execution_env.simd_size == k.sub_group_size
    expected = k.expected(case)
    for argument in k.arguments:
        if argument.kind == "buffer":
            assert expected[argument.name].shape == np.shape(case.values[argument.name])
            assert expected[argument.name].dtype == np.dtype(argument.dtype)


def test_lsc_variant_uses_lsc_messages(iga64, corpus):
    k = kernel("elementwise")
    legacy, lsc = (
        oracles.iga64_disassemble(zebin.read_zebin(corpus.zebin(Build(k, k.variant(v)))).kernels[0].code, "dg2")
        for v in ("dg2", "dg2-lsc")
    )
    # Both fence through ugm; only the LSC build loads through it.
    assert "load.ugm" in lsc and "load.ugm" not in legacy


# --- Writing: IGC's kernels rewrapped by our writer ----------------------------------------------


@pytest.mark.parametrize("build", BUILDS, ids=str)
def test_rewrapped_igc_kernels_validate_and_read_back(ocloc, corpus, build):
    original = zebin.read_zebin(corpus.zebin(build))
    ours = zebin.write_zebin(original.kernels, build.variant.device)
    assert_valid(ours)
    again = zebin.read_zebin(ours)
    assert again.kernels == original.kernels
    assert [k.raw for k in again.kernels] == [k.raw for k in original.kernels]
    assert zebin.write_zebin(again.kernels, build.variant.device) == ours


# --- Writing: kernels described from scratch ----------------------------------------------------

# End of thread: copy r0 to r127 and send it to the thread spawner / gateway.
EOT = {
    "xelp": "(W) mov (8|M0) r127.0<1>:ud r0.0<8;8,1>:ud\n(W) send.ts (8|M0) null r127 null 0x0 0x02000010 {EOT,@1}\n",
    "xehpg": "(W) mov (8|M0) r127.0<1>:ud r0.0<1;1,0>:ud\n"
    "(W) send.gtwy (8|M0) null r127 null:0 0x0 0x02000010 {EOT,A@1}\n",
    "xehpc": "(W) mov (16|M0) r127.0<1>:ud r0.0<1;1,0>:ud\n"
    "(W) send.gtwy (8|M0) null r127 null:0 0x0 0x02000010 {EOT,A@1}\n",
}


def eot_program(platform: str) -> bytes:
    return oracles.iga64_assemble(EOT[platform], platform)


def synthetic_kernels(platform: str) -> list[ZebinKernel]:
    """Kernels of several shapes: pointers, values, local ids, SLM, barriers, dpas."""
    p = hwlib.platform(platform)
    code = eot_program(platform)
    simd = 16 if p.name == "xehpc" else 8
    # NEO wants 3 channels x (SIMD x 2 bytes, padded to 32), whatever the GRF size.
    local_ids = PerThreadPayloadArgument("local_id", 0, 3 * max(simd * 2, 32))
    base = (PayloadArgument("global_id_offset", 0, 12), PayloadArgument("local_size", 12, 12))
    return [
        ZebinKernel(
            "pointers_and_values",
            code,
            ExecutionEnv(grf_count=128, simd_size=simd),
            payload_arguments=base
            + (
                PayloadArgument(
                    "arg_bypointer",
                    24,
                    8,
                    arg_index=0,
                    addrmode="stateless",
                    addrspace="global",
                    access_type="readwrite",
                ),
                PayloadArgument(
                    "arg_bypointer",
                    32,
                    8,
                    arg_index=1,
                    addrmode="stateless",
                    addrspace="constant",
                    access_type="readonly",
                ),
                PayloadArgument("arg_byvalue", 40, 4, arg_index=2),
                PayloadArgument("arg_byvalue", 44, 4, arg_index=3),
                PayloadArgument("group_count", 48, 12),
                PayloadArgument("global_size", 64, 12),
                PayloadArgument("enqueued_local_size", 76, 12),
                PayloadArgument("work_dimensions", 88, 4),
            ),
            per_thread_payload_arguments=(local_ids,),
        ),
        ZebinKernel(
            "slm_and_barrier",
            code,
            ExecutionEnv(
                grf_count=128, simd_size=simd, barrier_count=1, slm_size=4096, required_work_group_size=(64, 1, 1)
            ),
            payload_arguments=base
            + (
                PayloadArgument(
                    "arg_bypointer",
                    24,
                    8,
                    arg_index=0,
                    addrmode="stateless",
                    addrspace="global",
                    access_type="writeonly",
                ),
                PayloadArgument(
                    "arg_bypointer",
                    32,
                    4,
                    arg_index=1,
                    addrmode="slm",
                    addrspace="local",
                    access_type="readwrite",
                    slm_alignment=16,
                ),
            ),
            per_thread_payload_arguments=(local_ids,),
        ),
        ZebinKernel(
            "stateful_buffers",
            code,
            ExecutionEnv(grf_count=128, simd_size=simd),
            payload_arguments=base
            + (
                PayloadArgument(
                    "arg_bypointer", 0, 0, arg_index=0, addrmode="stateful", addrspace="global", access_type="readonly"
                ),
                PayloadArgument("buffer_address", 24, 8, arg_index=0),
                PayloadArgument("buffer_offset", 32, 4, arg_index=0),
            ),
            binding_table_indices=(BindingTableIndex(0, 0),),
        ),
        ZebinKernel("no_arguments", code, ExecutionEnv(grf_count=128, simd_size=1)),
    ] + (
        [
            ZebinKernel(
                "dpas_user",
                code,
                ExecutionEnv(grf_count=256, simd_size=simd, required_sub_group_size=simd, has_dpas=True),
                payload_arguments=base,
            )
        ]
        if p.has_dpas
        else []
    )


@pytest.mark.parametrize("platform", PLATFORMS)
def test_written_zebins_validate_and_read_back(iga64, ocloc, platform, tmp_path):
    kernels = synthetic_kernels(platform)
    data = zebin.write_zebin(kernels, platform)
    report = assert_valid(data)
    assert f"Binary contains {len(kernels)} kernels" in report
    parsed = zebin.read_zebin(data)
    assert parsed.kernels == tuple(kernels)
    p = hwlib.platform(platform)
    assert (parsed.product_family, parsed.gfx_core) == (p.product_family, p.gfx_core)
    assert parsed.zebin_version == zebin.ZEINFO_VERSION == parsed.zeinfo_version
    # And ocloc's own reading of our .ze_info agrees on a few fields.
    dumped = yaml.safe_load(ocloc_dump(data, p.ocloc_device, tmp_path)[".ze_info"])
    by_name = {k["name"]: k for k in dumped["kernels"]}
    assert by_name["slm_and_barrier"]["execution_env"]["slm_size"] == 4096
    assert by_name["slm_and_barrier"]["execution_env"]["required_work_group_size"] == [64, 1, 1]
    assert by_name["pointers_and_values"]["payload_arguments"][2]["addrmode"] == "stateless"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_elf_layout(iga64, platform):
    data = zebin.write_zebin(synthetic_kernels(platform)[:2], platform)
    # Fixed header fields, read with struct (independently of our ELF reader).
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1  # ELF64, little-endian
    assert data[8] == 1  # EI_ABIVERSION
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    assert (e_type, e_machine) == (1, 205)  # ET_REL, EM_INTELGT
    parsed = elf.read_elf(data)
    assert [(s.name, s.type) for s in parsed.sections] == [
        ("", 0),
        (".text.pointers_and_values", 1),
        (".text.slm_and_barrier", 1),
        (".ze_info", 0xFF000011),
        (".note.intelgt.compat", 7),
        (".symtab", 2),
        (".strtab", 3),
        (".shstrtab", 3),
    ]
    assert parsed.sections[1].flags == elf.SHF_ALLOC | elf.SHF_EXECINSTR
    assert parsed.sections[1].offset % 64 == 0
    symbols = elf.read_symbols(parsed, parsed.section(".symtab"))
    assert [(s.name, s.section_index, s.type) for s in symbols[1:]] == [
        ("pointers_and_values", 1, elf.STT_FUNC),
        ("slm_and_barrier", 2, elf.STT_FUNC),
    ]
    notes = elf.read_notes(parsed.section(".note.intelgt.compat"))
    p = hwlib.platform(platform)
    assert [(n.owner, n.type, n.descriptor) for n in notes] == [
        ("IntelGT", 1, struct.pack("<I", p.product_family)),
        ("IntelGT", 2, struct.pack("<I", p.gfx_core)),
        ("IntelGT", 4, b"1.15\0"),
    ]


@pytest.mark.parametrize("device", ["tgllp", "dg2", "pvc"])
def test_product_family_matches_igc(corpus, device):
    k = kernel("transpose")
    igc = zebin.read_zebin(corpus.zebin(Build(k, k.variant(device))))
    assert hwlib.platform(device).product_family == igc.product_family


def test_output_is_deterministic(iga64):
    kernels = synthetic_kernels("xehpg")
    first = zebin.write_zebin(kernels, "xehpg")
    again = zebin.write_zebin([replace(k) for k in kernels], "xehpg")
    assert first == again


def test_yaml_emitter_quotes_what_must_stay_a_string():
    text = zebin.emit_yaml(
        {
            "version": zebin.Quoted("1.15"),
            "a": "true",
            "b": "x: y",
            "c": "it's",
            "d": [1, 2, 3],
            "e": [{"k": 1}, {"k": 2}],
            "f": False,
            "g": "plain_name",
        }
    )
    assert yaml.safe_load(text) == {
        "version": "1.15",
        "a": "true",
        "b": "x: y",
        "c": "it's",
        "d": [1, 2, 3],
        "e": [{"k": 1}, {"k": 2}],
        "f": False,
        "g": "plain_name",
    }
    assert "version: '1.15'" in text and "d: [ 1, 2, 3 ]" in text and "g: plain_name" in text


def test_writer_rejects_bad_kernel_lists(iga64):
    k = synthetic_kernels("xehpg")[0]
    with pytest.raises(Error, match="unique"):
        zebin.write_zebin([k, k], "xehpg")
    with pytest.raises(Error, match="identifier"):
        zebin.write_zebin([replace(k, name="bad name")], "xehpg")
    with pytest.raises(Error, match="at least one"):
        zebin.write_zebin([], "xehpg")


# --- Reading bad input -------------------------------------------------------------------------


def small_zebin() -> bytes:
    code = bytes(range(32))
    return zebin.write_zebin(
        [
            ZebinKernel(
                "k",
                code,
                ExecutionEnv(grf_count=128, simd_size=16),
                payload_arguments=(PayloadArgument("arg_byvalue", 0, 4, arg_index=0),),
            )
        ],
        "xehpg",
    )


def with_zeinfo(data: bytes, text: str) -> bytes:
    parsed = elf.read_elf(data)
    sections = [
        replace(s, data=text.encode()) if s.name == ".ze_info" else s for s in parsed.sections if s.name != ".shstrtab"
    ]
    sections, names = elf.with_section_names(sections)
    return elf.write_elf(replace(parsed, sections=sections, section_names_index=names))


def zeinfo_text(data: bytes) -> str:
    return elf.read_elf(data).section(".ze_info").data.decode()


def test_rejects_non_elf_and_truncated_files():
    with pytest.raises(DecodeError, match="not an ELF file"):
        zebin.read_zebin(b"\x7fELG" + bytes(100))
    with pytest.raises(DecodeError, match="truncated ELF header"):
        zebin.read_zebin(b"\x7fELF\x02\x01")
    data = small_zebin()
    with pytest.raises(DecodeError, match="byte offset") as caught:
        zebin.read_zebin(data[: len(data) - 10])
    assert caught.value.offset <= len(data)
    with pytest.raises(DecodeError, match="ELFCLASS64"):
        zebin.read_zebin(data[:4] + b"\x01" + data[5:])


def test_rejects_zebins_without_ze_info():
    data = small_zebin()
    parsed = elf.read_elf(data)
    sections = [s for s in parsed.sections if s.name not in (".ze_info", ".shstrtab")]
    sections, names = elf.with_section_names(sections)
    with pytest.raises(DecodeError, match=r"no \.ze_info section"):
        zebin.read_zebin(elf.write_elf(replace(parsed, sections=sections, section_names_index=names)))


def test_rejects_malformed_yaml_naming_its_offset():
    data = small_zebin()
    bad = with_zeinfo(data, zeinfo_text(data).replace("kernels:", "kernels: [", 1))
    with pytest.raises(DecodeError, match=r"\.ze_info is not valid YAML") as caught:
        zebin.read_zebin(bad)
    zeinfo = elf.read_elf(bad).section(".ze_info")
    assert zeinfo.offset <= caught.value.offset <= zeinfo.offset + len(zeinfo.data)


def test_rejects_a_kernel_without_its_text_section():
    data = small_zebin()
    with pytest.raises(DecodeError, match=r"no \.text\.other section"):
        zebin.read_zebin(with_zeinfo(data, zeinfo_text(data).replace("name: k", "name: other")))


@pytest.mark.parametrize(
    "edit, message",
    [
        (("simd_size: 16", "simd_size: sixteen"), "simd_size should be an integer, not 'sixteen'"),
        (("      simd_size: 16\n", ""), "execution_env has no simd_size"),
        (("    execution_env:", "    environment:"), "has no execution_env"),
        (("arg_index: 0", "arg_index: [ 0 ]"), "arg_index should be a string"),
    ],
)
def test_rejects_ill_typed_ze_info(edit, message):
    data = small_zebin()
    text = zeinfo_text(data)
    assert edit[0] in text
    with pytest.raises(DecodeError, match=message):
        zebin.read_zebin(with_zeinfo(data, text.replace(*edit, 1)))


def test_rejects_a_ze_info_whose_kernels_are_not_a_list():
    with pytest.raises(DecodeError, match="kernels should be a list"):
        zebin.read_zebin(with_zeinfo(small_zebin(), "version: '1.15'\nkernels: 3\n"))
    with pytest.raises(DecodeError, match=r"\.ze_info should be a mapping"):
        zebin.read_zebin(with_zeinfo(small_zebin(), "- just\n- a list\n"))


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=512))
def test_random_bytes_raise_decode_error(data):
    with pytest.raises(DecodeError):
        zebin.read_zebin(data)


@settings(max_examples=300, deadline=None)
@given(
    cut=st.integers(0, 10_000),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 7)), max_size=4),
    which=st.sampled_from(["small", "elf-header"]),
)
def test_truncated_and_bit_flipped_zebins_never_crash(cut, flips, which):
    data = bytearray(small_zebin())
    for position, bit in flips:
        data[position % len(data)] ^= 1 << bit
    if which == "small":
        data = data[: cut % (len(data) + 1)]
    try:
        zebin.read_zebin(bytes(data))
    except DecodeError:
        pass


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    build=st.sampled_from(BUILDS),
    cut=st.integers(0, 1 << 20),
    flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 7)), min_size=1, max_size=6),
)
def test_damaged_igc_zebins_never_crash(corpus, build, cut, flips):
    data = bytearray(corpus.zebin(build))
    for position, bit in flips:
        data[position % len(data)] ^= 1 << bit
    data = data[: len(data) - cut % (len(data) + 1) // 8]
    try:
        zebin.read_zebin(bytes(data))
    except DecodeError:
        pass
