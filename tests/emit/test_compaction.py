"""Compacted-instruction expansion (and compaction) against iga64.

The oracle for a compacted word: iga64 disassembles it, and `iga64 -a -Xforce-no-compact`
assembles that text back into the 16-byte native form.  Our `expand_compacted` must give
the same bytes, and `compact` must turn those bytes back into the original word.
"""

from __future__ import annotations

import re
import struct

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.emit.corpus import BUILDS
from xegen import hw as hwlib
from xegen import oracles
from xegen.emit import compaction, elf
from xegen.errors import DecodeError

PLATFORMS = [p.name for p in hwlib.PLATFORMS]


# --- Helpers around iga64 ----------------------------------------------------------------


def split_instructions(code: bytes) -> list[tuple[int, bytes]]:
    """(offset, bytes) of each instruction; a trailing partial instruction is left out (as iga64 does)."""
    out, offset = [], 0
    while offset < len(code):
        size = 8 if compaction.is_compacted(code[offset : offset + 4]) else 16
        if offset + size > len(code):
            break
        out.append((offset, code[offset : offset + size]))
        offset += size
    return out


def instruction_lines(text: str) -> list[str]:
    """The instruction lines of iga64's disassembly (labels and blank lines dropped)."""
    return [line for line in text.splitlines() if line.strip() and not re.match(r"^\s*L\d+:\s*$", line)]


def normalize(line: str) -> str:
    """An instruction line without column padding and without the Compacted option."""
    line = re.sub(r",\s*Compacted\b|\bCompacted\s*,?\s*", "", line).replace("{}", "")
    return " ".join(line.split())


def iga64_native(code: bytes, platform: hwlib.Platform) -> list[bytes]:
    """Disassemble, then assemble with -Xforce-no-compact: one 16-byte word per instruction."""
    native = oracles.iga64_assemble(oracles.iga64_disassemble(code, platform), platform)
    return [native[i : i + 16] for i in range(0, len(native), 16)]


def iga64_decodable(words: list[bytes], platform: hwlib.Platform) -> dict[int, str]:
    """Disassemble 8-byte words in one call, dropping those iga64 rejects; text by word index."""
    alive = list(range(len(words)))
    while alive:
        try:
            text = oracles.iga64_disassemble(b"".join(words[i] for i in alive), platform)
        except oracles.ToolError as error:
            match = re.search(r"byte offset 0x([0-9a-fA-F]+)", str(error))
            if not match:
                raise
            del alive[int(match.group(1), 16) // 8]
            continue
        lines = instruction_lines(text)
        assert len(lines) == len(alive), text
        return dict(zip(alive, lines, strict=True))
    return {}


def iga64_assemble_each(lines: dict[int, str], platform: hwlib.Platform, compact: bool = False) -> dict[int, bytes]:
    """Assemble lines in one call, dropping lines iga64 rejects; 16-byte encodings by key."""
    keys = list(lines)
    while keys:
        try:
            native = oracles.iga64_assemble("\n".join(lines[k] for k in keys) + "\n", platform, compact=compact)
        except oracles.ToolError as error:
            match = re.search(r"line (\d+)", str(error))
            if not match:
                raise
            del keys[int(match.group(1)) - 1]
            continue
        if not compact:
            return {k: native[16 * i : 16 * i + 16] for i, k in enumerate(keys)}
        return dict(zip(keys, (code for _, code in split_instructions(native)), strict=True))
    return {}


# --- The corpus: every compacted instruction IGC emitted -----------------------------------


def kernel_code(zebin: bytes, kernel_name: str) -> bytes:
    section = elf.read_elf(zebin).section(f".text.{kernel_name}")
    assert section is not None, f"no .text.{kernel_name}"
    return section.data


@pytest.mark.parametrize("build", BUILDS, ids=str)
def test_corpus_compacted_instructions_expand_like_iga64(iga64, corpus, build):
    platform = hwlib.platform(build.variant.device)
    code = kernel_code(corpus.zebin(build), build.kernel.kernel_name)
    instructions = split_instructions(code)
    native = iga64_native(code, platform)
    assert len(native) == len(instructions), "instruction counts of iga64 and of our splitter differ"

    compacted = [
        (offset, word, expected)
        for (offset, word), expected in zip(instructions, native, strict=True)
        if len(word) == 8
    ]
    assert compacted, "IGC compacts most kernels heavily; none found"
    for offset, word, expected in compacted:
        assert compaction.expand_compacted(word, platform, offset).hex() == expected.hex(), f"at 0x{offset:x}"
        assert compaction.compact(expected, platform) == word, f"compacting the expansion at 0x{offset:x}"
    for _, word in instructions:
        if len(word) == 16 and word != bytes(16):
            # IGC left it 16 bytes: either it has no compacted form or IGC chose not to; ours must
            # at least round-trip whatever compact() proposes.
            proposal = compaction.compact(word, platform)
            if proposal is not None:
                assert compaction.expand_compacted(proposal, platform) == word


# --- Every table entry, one at a time --------------------------------------------------------

# One compactable instruction per platform and format; the probe varies one index at a time.
PROBE_BASES = {
    "xelp": {
        "two-source": "add (16|M0) r10.0<1>:f r11.0<8;8,1>:f r12.0<8;8,1>:f",
        "three-source": "mad (16|M0) r10.0<1>:f r11.0<8;1>:f r12.0<8;1>:f r13.0<1>:f",
    },
    "xehpg": {
        "two-source": "add (16|M0) r10.0<1>:f r11.0<1;1,0>:f r12.0<1;1,0>:f",
        "three-source": "mad (16|M0) r10.0<1>:f r11.0<1;0>:f r12.0<1;0>:f r13.0<1>:f",
        "dpas": "dpas.8x1 (8|M0) r10:d r10:d r20:ub r30.0:ub",  # only depth 1 compacts here
    },
    "xehpc": {
        "two-source": "add (16|M0) r10.0<1>:f r11.0<1;1,0>:f r12.0<1;1,0>:f",
        "three-source": "mad (16|M0) r10.0<1>:f r11.0<1;0>:f r12.0<1;0>:f r13.0<1>:f",
        "dpas": "dpas.8x8 (16|M0) r10:f r10:f r20:hf r30.0:hf",
    },
}
PROBES = [(p, f) for p, formats in PROBE_BASES.items() for f in formats]


@pytest.mark.parametrize("platform_name, form", PROBES, ids=[f"{p}-{f}" for p, f in PROBES])
def test_every_table_entry_expands_like_iga64(iga64, platform_name, form):
    platform = hwlib.platform(platform_name)
    base = oracles.iga64_assemble(PROBE_BASES[platform_name][form] + "\n", platform, compact=True)
    assert len(base) == 8, f"iga64 did not compact the probe base {PROBE_BASES[platform_name][form]!r}"
    base_word = int.from_bytes(base, "little")
    layout = compaction.scheme(platform).format_for(base[0] & 0x7F)
    assert layout is not None

    words, labels = [], []
    for field in layout.indexed:
        for index in range(len(field.table)):
            words.append(compaction.place_bits(base_word, field.index, index).to_bytes(8, "little"))
            labels.append(f"{field.name} {index}")
    texts = iga64_decodable(words, platform)
    natives = iga64_assemble_each(texts, platform)
    # Invalid combinations (e.g. a sync-only function in a control entry) are rejected by
    # iga64 and skipped; most entries must still be checked.
    assert len(natives) >= len(words) // 2, f"only {len(natives)} of {len(words)} probes decoded"
    ours = {i: compaction.expand_compacted(words[i], platform) for i in natives}
    differing = [i for i in natives if ours[i] != natives[i]]
    if differing:
        # Some entries set bits the text cannot show (a byte subregister of a :f operand
        # prints as .0), so iga64's text round trip drops them.  Such a probe proves
        # nothing either way: accept it only if iga64 prints our expansion exactly as it
        # printed the compacted word.
        ours_text = instruction_lines(oracles.iga64_disassemble(b"".join(ours[i] for i in differing), platform))
        for i, text in zip(differing, ours_text, strict=True):
            assert normalize(text) == normalize(texts[i]), (
                f"{labels[i]}: iga64 prints the compacted word as\n  {texts[i]}\nand our expansion as\n  {text}"
            )
    assert len(natives) - len(differing) >= len(words) // 2


# --- Random instructions, assembled compacted and not ----------------------------------------

# Operation: (number of sources, element types it takes).
OPERATIONS = {
    "mov": (1, ("f", "d", "ud")),
    "not": (1, ("d", "ud")),
    "frc": (1, ("f",)),
    "rndd": (1, ("f",)),
    "rnde": (1, ("f",)),
    "lzd": (1, ("ud",)),
    "cbit": (1, ("ud",)),
    "fbl": (1, ("ud",)),
    "fbh": (1, ("ud",)),
    "bfrev": (1, ("ud",)),
    "add": (2, ("f", "d", "ud")),
    "mul": (2, ("f", "d", "ud")),
    "sel": (2, ("f", "d", "ud")),
    "and": (2, ("d", "ud")),
    "or": (2, ("d", "ud")),
    "xor": (2, ("d", "ud")),
    "shl": (2, ("d", "ud")),
    "shr": (2, ("ud",)),
    "asr": (2, ("d",)),
    "avg": (2, ("d", "ud")),
    "mad": (3, ("f",)),
}
SWSB = {"xelp": ["", "", "{@1}", "{@3}"], "xehpg": ["", "", "{I@1}", "{F@2}", "{A@1}", "{$3.dst}"]}
SWSB["xehpc"] = SWSB["xehpg"]


@st.composite
def simple_instruction(draw, platform: hwlib.Platform) -> str:
    """A valid one-, two- or three-source instruction in IGA syntax, often compactable."""
    op = draw(st.sampled_from(sorted(OPERATIONS)))
    sources, types = OPERATIONS[op]
    type_ = draw(st.sampled_from(types))
    exec_size = draw(st.sampled_from([1, 8, 16]))
    elements_per_grf = platform.grf_bytes // 4
    channel = draw(st.sampled_from([c for c in (0, 8, 16) if c % exec_size == 0 and c + exec_size <= 32]))
    if platform.name == "xehpc" and exec_size == 16:
        channel = 0
    mask = "(W) " if draw(st.booleans()) else ""
    predicate = ""
    if not mask and draw(st.integers(0, 4)) == 0:
        predicate = f"({draw(st.sampled_from(['', '~']))}f{draw(st.integers(0, 1))}.{draw(st.integers(0, 1))}) "
    condition = ""
    if op == "sel" and not predicate:
        condition = f"({draw(st.sampled_from(['ge', 'lt']))})f0.0 "
    elif op in ("add", "and", "or") and not predicate and draw(st.integers(0, 5)) == 0:
        condition = f"({draw(st.sampled_from(['eq', 'ne', 'gt', 'lt', 'ge', 'le']))})f{draw(st.integers(0, 1))}.0 "
    saturate = "(sat)" if type_ == "f" and op != "sel" and draw(st.integers(0, 5)) == 0 else ""
    dst_subregister = draw(st.integers(0, elements_per_grf - 1)) if exec_size == 1 else 0
    dst = f"{saturate}r{draw(st.integers(2, 100))}.{dst_subregister}<1>:{type_}"

    def register(position: int) -> str:
        scalar = exec_size == 1 or draw(st.integers(0, 3)) == 0
        subregister = draw(st.integers(0, elements_per_grf - 1)) if scalar else 0
        if sources == 3:  # three-source regions: <v;h> for src0/src1, <h> for src2
            region = (
                ("<0>" if scalar else "<1>")
                if position == 2
                else ("<0;0>" if scalar else ("<8;1>" if platform.name == "xelp" else "<1;0>"))
            )
        elif scalar:
            region = "<0;1,0>"
        elif platform.name != "xelp" and draw(st.booleans()):
            region = "<1;1,0>"
        else:
            region = (
                f"<{min(exec_size, 8) if platform.grf_bytes == 32 else exec_size};"
                f"{min(exec_size, 8) if platform.grf_bytes == 32 else exec_size},1>"
            )
        negate = (
            "-"
            if type_ in ("f", "d") and op in ("add", "mul", "mad", "mov", "sel") and draw(st.integers(0, 5)) == 0
            else ""
        )
        return f"{negate}r{draw(st.integers(1, 120))}.{subregister}{region}:{type_}"

    def immediate() -> str:
        if op in ("shl", "shr", "asr"):
            return f"{draw(st.integers(0, 31))}:{type_}"
        if type_ == "f":
            return f"{draw(st.sampled_from([0.0, 1.0, -2.0, 0.5, 3.25, 1e-3, 65504.0]))!r}:f"
        if type_ == "d":
            return f"{draw(st.one_of(st.integers(-2048, 2047), st.integers(-(2**31), 2**31 - 1)))}:d"
        return f"0x{draw(st.one_of(st.integers(0, 4095), st.integers(0, 2**32 - 1))):X}:ud"

    operands = [register(i) for i in range(sources)]
    if sources == 2 and draw(st.integers(0, 2)) == 0 or op == "mov" and draw(st.integers(0, 3)) == 0:
        operands[-1] = immediate()
    swsb = draw(st.sampled_from(SWSB[platform.name]))
    return f"{mask}{predicate}{op} ({exec_size}|M{channel}) {condition}{dst} {' '.join(operands)} {swsb}".rstrip()


def check_random_batch(platform: hwlib.Platform, lines: list[str]) -> None:
    """Assemble with and without -Xautocompact; pair the results and check both directions."""
    native = iga64_assemble_each(dict(enumerate(lines)), platform)
    compacted = iga64_assemble_each({k: lines[k] for k in native}, platform, compact=True)
    assert len(native) >= len(lines) // 2, "most generated instructions should be valid"
    checked = 0
    for key, word in compacted.items():
        if len(word) == 8:
            checked += 1
            assert compaction.expand_compacted(word, platform).hex() == native[key].hex(), lines[key]
            assert compaction.compact(native[key], platform) == word, lines[key]
        else:
            assert word == native[key]
            assert compaction.compact(native[key], platform) is None, f"iga64 left this 16 bytes: {lines[key]}"
    event(f"{checked} of {len(compacted)} compacted")


BATCH = 40


@pytest.mark.parametrize("platform_name", PLATFORMS)
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_random_instructions_compact_like_iga64(iga64, platform_name, data):
    platform = hwlib.platform(platform_name)
    check_random_batch(platform, data.draw(st.lists(simple_instruction(platform), min_size=BATCH, max_size=BATCH)))


@pytest.mark.slow
@pytest.mark.parametrize("platform_name", PLATFORMS)
@settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_random_instructions_compact_like_iga64_exhaustive(iga64, platform_name, data):
    platform = hwlib.platform(platform_name)
    check_random_batch(platform, data.draw(st.lists(simple_instruction(platform), min_size=BATCH, max_size=BATCH)))


# --- Malformed compacted words ---------------------------------------------------------------


@pytest.mark.parametrize("platform_name", PLATFORMS)
def test_rejects_opcodes_without_a_compacted_form(platform_name):
    # send (0x31), math (0x38), nop (0x60), jmpi (0x20) with the compacted bit set.
    for opcode in (0x31, 0x38, 0x60, 0x20, 0x7F):
        word = struct.pack("<Q", (1 << 29) | opcode)
        with pytest.raises(DecodeError, match=f"opcode 0x{opcode:02x} has no compacted form"):
            compaction.expand_compacted(word, platform_name, offset=0x40)


def test_error_names_the_offset_and_size():
    with pytest.raises(DecodeError, match=r"at byte offset 96 \(0x60\).*8 bytes, got 5"):
        compaction.expand_compacted(b"\x61\0\0\x20\0", "xehpg", offset=96)
    with pytest.raises(DecodeError, match="bit 29"):
        compaction.expand_compacted(bytes(8), "xehpg")


@pytest.mark.parametrize("platform_name", PLATFORMS)
def test_immediates_of_64_bit_types_are_rejected(platform_name):
    # A two-source add whose datatype entry says "src1 immediate" with the type field forced
    # to q (7): no 12-bit form exists for 64-bit immediates.
    scheme = compaction.scheme(platform_name)
    layout, binary = scheme.two_source, scheme.native.binary
    datatype = next(f for f in layout.indexed if f.name == "datatype index")
    with_immediate = [
        i
        for i, entry in enumerate(datatype.table)
        if binary.src1_is_immediate.get(compaction.place_bits(0, datatype.native, entry))
    ]
    assert with_immediate
    word = compaction.place_bits((1 << 29) | 0x40, datatype.index, with_immediate[0])
    native = int.from_bytes(compaction.expand_compacted(word.to_bytes(8, "little"), platform_name), "little")
    assert binary.src1_is_immediate.get(native)
    forced = native & ~binary.src1.type.positions | binary.src1.type.put(7)
    assert compaction.compact(forced.to_bytes(16, "little"), platform_name) is None


@pytest.mark.parametrize(
    "type_code, compact_value, expanded",
    [
        (10, 0x3F8, 0x3F800000),  # f 1.0: the top 12 bits
        (9, 0x3C0, 0x3C003C00),  # hf 1.0, replicated into both halves
        (6, 0xFFF, 0xFFFFFFFF),  # d -1: sign-extended
        (6, 0x7FF, 0x000007FF),  # d 2047
        (2, 0xFFF, 0x00000FFF),  # ud 4095: zero-extended
        (5, 0x800, 0xF800F800),  # w -2048, replicated
        (1, 0x123, 0x01230123),  # uw, replicated
    ],
)
def test_immediate_expansion_by_type(type_code, compact_value, expanded):
    # Hand-computed from the rules: floats keep their high bits, integers their low bits.
    assert compaction.expand_immediate(type_code, compact_value) == expanded
    assert compaction.compact_immediate(type_code, expanded) == compact_value


def test_immediate_without_a_compacted_form():
    assert compaction.compact_immediate(10, 0x3F800001) is None  # f with low mantissa bits
    assert compaction.compact_immediate(6, 0x00000800) is None  # d 2048 needs 13 bits
    assert compaction.compact_immediate(1, 0x00010002) is None  # uw halves differ
    assert compaction.expand_immediate(7, 0) is None  # q


@given(st.binary(min_size=8, max_size=8))
@settings(max_examples=300)
def test_random_words_expand_or_raise_decode_error(word):
    for platform in PLATFORMS:
        try:
            native = compaction.expand_compacted(word, platform)
        except DecodeError:
            continue
        assert len(native) == 16 and not int.from_bytes(native, "little") >> 29 & 1
