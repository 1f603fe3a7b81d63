"""The SWSB pass (`xegen.emit.scoreboard.assign_swsb`).

- IGC's own kernels (the corpus, every device): decoded, stripped of every SWSB annotation and
  sync, re-annotated by us, put back into the zebin and run in the simulator, which checks
  the scoreboard (hazards raise) and the numbers against numpy; iga64 -d -Wall decodes them
  and ocloc validates the zebins.  With our waits removed the same kernels are reported, so
  the check has teeth.
- Against `iga64 -Xauto-deps` on the same stripped code: never more sync instructions and
  never more instructions.
- Hand-written assembly for each rule, with the expected annotations worked out by hand, and
  each run in the simulator with and without them.
- Random programs (hypothesis): straight-line and looping mixes of ALU ops, math, flags and
  SLM messages run clean in the simulator on every platform.
- Footprints (what an instruction reads and writes) against hand calculations.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.emit.corpus import BUILDS
from tests.emit.iga_compare import assert_same_listing
from tests.sim.harness import end_of_thread, execute
from xegen import hw as hwlib
from xegen import oracles, sim
from xegen.emit import decode, disassemble, encode_kernel, format_kernel, parse_asm
from xegen.emit.decoder import decode_with_sizes
from xegen.emit.flow import build_control_flow, relayout
from xegen.emit.footprint import FLAG_UNIT, UNIT_BYTES, Footprint, instruction_facts
from xegen.emit.instruction import Instruction, Swsb
from xegen.emit.scoreboard import SWSB_SYNCS, assign_swsb, count_syncs, strip_swsb
from xegen.emit.zebin import read_zebin, write_zebin
from xegen.errors import Error

XELP, XEHPG, XEHPC = hwlib.XELP, hwlib.XEHPG, hwlib.XEHPC


# --- helpers ---------------------------------------------------------------------------------------


def annotate(asm: str, platform: hwlib.Platform, eot: bool = True) -> list[Instruction]:
    text = asm + ("\n" + end_of_thread(platform) if eot else "")
    return assign_swsb(parse_asm(text, platform), platform)


def lines(instructions: list[Instruction], platform: hwlib.Platform) -> list[str]:
    """One whitespace-normalised IGA line per instruction (labels dropped)."""
    text = format_kernel(instructions, platform)
    return [" ".join(line.split()) for line in text.splitlines() if line.strip() and not line.strip().endswith(":")]


def hazards(instructions: list[Instruction], platform: hwlib.Platform, **kwargs) -> list:
    code = encode_kernel(instructions, platform)
    return execute("", platform.name, code=code, check_hazards=True, **kwargs).hazards


def _is_sync(inst: Instruction) -> bool:
    return inst.opcode == "sync" and inst.function in SWSB_SYNCS


def without_waits(instructions: list[Instruction]) -> list[Instruction]:
    """The kernel with every wait removed (distances, token waits, syncs) but the tokens still
    set, so that the simulator sees the producers and reports the consumers."""
    kept = [
        inst.with_swsb(Swsb(token=inst.swsb.token) if inst.swsb.token_mode == "set" else Swsb())
        for inst in instructions
    ]
    return relayout(kept, keep=lambda i, inst: not _is_sync(inst))


def iga64_wall_clean(code: bytes, platform: hwlib.Platform) -> str:
    """iga64 -d -Wall on the code: fails on any error or warning; returns the listing."""
    with tempfile.TemporaryDirectory(prefix="xegen-swsb-") as tmp:
        path = Path(tmp, "kernel.bin")
        path.write_bytes(code)
        result = subprocess.run(
            [oracles.find_tool("iga64"), "-d", "-Wall", f"-p={platform.iga_platform}", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr
    return result.stdout


# --- IGC's kernels, re-annotated by us ----------------------------------------------------------


def _stripped(corpus, build):
    platform = hwlib.platform(build.variant.device)
    parsed = read_zebin(corpus.zebin(build))
    kernel = parsed.kernel(build.kernel.kernel_name)
    instructions, sizes = decode_with_sizes(kernel.code, platform)
    return platform, parsed, kernel, instructions, sizes, strip_swsb(instructions, sizes)


def _new_start(old_offset: int, sizes: list[int], original: list[Instruction], ours: list[Instruction]) -> int:
    """Where an entry point at byte `old_offset` of IGC's kernel lands in ours: our kernel keeps
    IGC's instructions but its syncs, in order, so the k-th kept one is the k-th non-sync of
    ours; the entry lands on the syncs we put in front of it."""
    kept = pc = 0
    for inst, size in zip(original, sizes, strict=True):
        if pc >= old_offset:
            break
        pc += size
        kept += not _is_sync(inst)
    position = [n for n, inst in enumerate(ours) if not _is_sync(inst)][kept]
    while position > 0 and _is_sync(ours[position - 1]):
        position -= 1
    return 16 * position


def _rebuilt_zebin(parsed, kernel, code: bytes, platform, instructions, sizes, ours) -> bytes:
    env = kernel.execution_env
    skip = _new_start(env.offset_to_skip_per_thread_data_load, sizes, instructions, ours)
    new_kernel = replace(kernel, code=code, execution_env=replace(env, offset_to_skip_per_thread_data_load=skip))
    return write_zebin([new_kernel], platform, extra_zeinfo=dict(parsed.raw))


def _run_case(zebin: bytes, build, check):
    case = build.kernel.make_case(np.random.default_rng(0))
    values = {k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else v) for k, v in case.values.items()}
    args = [values[a.name] for a in build.kernel.arguments]
    result = sim.run(
        zebin, build.kernel.kernel_name, args, case.launch.global_size, case.launch.local_size, check_hazards=check
    )
    return values, result, build.kernel.expected(case)


@pytest.mark.parametrize("build", BUILDS, ids=str)
def test_igc_kernel_with_our_swsb_runs_clean_and_right(corpus, build, iga64):
    platform, parsed, kernel, instructions, sizes, stripped = _stripped(corpus, build)
    assert count_syncs(stripped) == 0 and all(i.swsb.empty and "Compacted" not in i.options for i in stripped)
    ours = assign_swsb(stripped, platform)
    code = encode_kernel(ours, platform)
    zebin = _rebuilt_zebin(parsed, kernel, code, platform, instructions, sizes, ours)
    assert oracles.ocloc_validate(zebin)[0]
    assert_same_listing(disassemble(code, platform), iga64_wall_clean(code, platform), f"{build}: ")

    values, result, expected = _run_case(zebin, build, check=True)  # raises HazardError on a missed wait
    assert result.hazards == [] and result.threads > 0
    for name, want in expected.items():
        if want.dtype.kind == "f":
            np.testing.assert_allclose(values[name], want, rtol=build.kernel.rtol, atol=build.kernel.atol)
        else:
            np.testing.assert_array_equal(values[name], want)

    # our kernel with its waits removed (tokens still set) is reported: the check has teeth
    unsynced = without_waits(ours)
    bare_zebin = _rebuilt_zebin(
        parsed, kernel, encode_kernel(unsynced, platform), platform, instructions, sizes, unsynced
    )
    assert _run_case(bare_zebin, build, check="report")[1].hazards


@pytest.mark.parametrize("build", BUILDS, ids=str)
def test_no_more_syncs_or_instructions_than_iga64_auto_deps(corpus, build, iga64):
    platform, _, _, instructions, _, stripped = _stripped(corpus, build)
    ours = assign_swsb(stripped, platform)
    theirs = decode(
        oracles.iga64_assemble(format_kernel(stripped, platform), platform, extra=("-Xauto-deps",)), platform
    )
    assert count_syncs(ours) <= count_syncs(theirs), f"ours {count_syncs(ours)}, iga64 {count_syncs(theirs)}"
    assert len(ours) <= len(theirs)
    # every instruction of the program is still there, in order
    assert [i.opcode for i in ours if not _is_sync(i)] == [i.opcode for i in stripped]


def test_output_is_deterministic_and_a_second_pass_changes_nothing(corpus):
    build = next(b for b in BUILDS if str(b) == "gemm_dpas_sg8-dg2-dpas")
    platform, *_, stripped = _stripped(corpus, build)
    first = assign_swsb(stripped, platform)
    assert assign_swsb(list(stripped), platform) == first
    assert assign_swsb(first, platform) == first  # its own syncs and annotations are recomputed the same


# --- in-order distances -----------------------------------------------------------------------------


def test_distance_counts_the_producers_own_pipe():
    ours = annotate(
        """
        add (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        mov (16|M0) r40.0<1>:f r50.0<1;1,0>:f
        add (16|M0) r12.0<1>:d r10.0<1;1,0>:d 1:w
    """,
        XEHPG,
    )
    assert str(ours[2].swsb) == "I@1"  # the float mov went down the F pipe
    assert hazards(ours, XEHPG) == []
    assert hazards(without_waits(ours), XEHPG)


def test_xelp_has_one_pipe():
    ours = annotate(
        """
        add (16|M0) r10.0<1>:d r20.0<8;8,1>:d r30.0<8;8,1>:d
        mov (16|M0) r40.0<1>:f r50.0<8;8,1>:f
        add (16|M0) r12.0<1>:d r10.0<8;8,1>:d 1:w
    """,
        XELP,
    )
    assert str(ours[2].swsb) == "@2"
    assert hazards(ours, XELP) == [] and hazards(without_waits(ours), XELP)


def test_dependencies_in_two_pipes_wait_on_all_pipes_at_the_smaller_distance():
    ours = annotate(
        """
        add (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        add (16|M0) r14.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        mov (16|M0) r40.0<1>:f r50.0<1;1,0>:f
        mov (16|M0) r44.0<1>:f r50.0<1;1,0>:f
        add (16|M0) r60.0<1>:f r10.0<1;1,0>:f r44.0<1;1,0>:f
    """,
        XEHPG,
    )
    # r10 is 2 back in the I pipe, r44 1 back in the F pipe: A@1
    assert str(ours[4].swsb) == "A@1"
    assert hazards(ours, XEHPG) == []


def test_a_dependency_more_than_seven_back_waits_at_seven_and_one_past_the_timeout_not_at_all():
    filler = "\n".join(f"add (16|M0) r{60 + 2 * i}.0<1>:d r20.0<1;1,0>:d 1:w" for i in range(8))
    ours = annotate(
        f"""
        add (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        {filler}
        add (16|M0) r12.0<1>:d r10.0<1;1,0>:d 1:w
    """,
        XEHPG,
    )
    assert str(ours[9].swsb) == "I@7"  # 9 back in the I pipe
    assert hazards(ours, XEHPG) == []
    far = "\n".join(f"add (16|M0) r{60 + 2 * i}.0<1>:d r20.0<1;1,0>:d 1:w" for i in range(11))
    ours = annotate(
        f"""
        add (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        {far}
        add (16|M0) r12.0<1>:d r10.0<1;1,0>:d 1:w
    """,
        XEHPG,
    )
    assert ours[12].swsb.empty  # 12 back: landed (hw.swsb_pipe_timeout)
    # instructions of another pipe do not age it
    other = "\n".join(f"mov (16|M0) r{60 + 2 * i}.0<1>:f r20.0<1;1,0>:f" for i in range(12))
    ours = annotate(
        f"""
        add (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        {other}
        add (16|M0) r12.0<1>:d r10.0<1;1,0>:d 1:w
    """,
        XEHPG,
    )
    assert str(ours[13].swsb) == "I@1"


def test_write_after_read_and_write_after_write_across_pipes():
    ours = annotate(
        """
        add (16|M0) r12.0<1>:d r10.0<1;1,0>:d 1:w
        mov (16|M0) r10.0<1>:f r50.0<1;1,0>:f
        add (16|M0) r14.0<1>:d r20.0<1;1,0>:d 1:w
        mov (16|M0) r14.0<1>:f r50.0<1;1,0>:f
        add (16|M0) r16.0<1>:d r18.0<1;1,0>:d 1:w
        add (16|M0) r16.0<1>:d r22.0<1;1,0>:d 1:w
        add (16|M0) r18.0<1>:d r24.0<1;1,0>:d 1:w
    """,
        XEHPG,
    )
    # write-after-read and write-after-write from the F pipe on I results wait; inside one pipe not
    assert [str(i.swsb) for i in ours[:7]] == ["", "I@1", "", "I@1", "", "", ""]
    assert hazards(ours, XEHPG) == []
    assert [h.kind for h in hazards(without_waits(ours), XEHPG)] == ["WAW"]  # (the simulator skips WAR)


def test_flag_and_accumulator_dependencies_inside_one_pipe_need_nothing():
    ours = annotate(
        """
        cmp (16|M0) (lt)f0.0 null<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        (f0.0) sel (16|M0) r12.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        (W) mul (1|M0) acc0.0<1>:d r20.0<0;1,0>:d r30.0<0;1,0>:uw
        (W) mach (1|M0) r14.0<1>:d r20.0<0;1,0>:d r30.0<0;1,0>:d
        (f0.0) sel (16|M0) r40.0<1>:f r50.0<1;1,0>:f r52.0<1;1,0>:f
    """,
        XEHPG,
    )
    assert [str(i.swsb) for i in ours[:4]] == ["", "", "", ""]
    assert str(ours[4].swsb) == "I@4"  # the float pipe reading the flag waits for the cmp
    assert hazards(ours, XEHPG) == []


# --- tokens -----------------------------------------------------------------------------------------

_SLM_LOADS = {
    "xehpg": "send.slm (16|M0) r{dst} r10 null:0 0x0 0x04200500",
    "xehpc": "send.slm (16|M0) r{dst} r10 null:0 0x0 0x02100500",
    "xelp": "send.dc1 (16|M0) r{dst} r10 null 0x0 0x04205EFE",
}
_SLM_STORES = {
    "xehpg": "send.slm (16|M0) null r10 r{src}:2 0x0 0x04000504",
    "xehpc": "send.slm (16|M0) null r10 r{src}:1 0x0 0x02000504",
    "xelp": "send.dc1 (16|M0) null r10 r{src} 0x80 0x04025EFE",
}


def slm_load(platform: hwlib.Platform, dst: int) -> str:
    """A SIMD16 dword load from shared local memory at the addresses in r10 (zeros)."""
    return _SLM_LOADS[platform.name].format(dst=dst)


def slm_store(platform: hwlib.Platform, src: int) -> str:
    return _SLM_STORES[platform.name].format(src=src)


def slm_hazards(instructions, platform, **kwargs):
    return hazards(instructions, platform, slm_bytes=4096, **kwargs)


@pytest.mark.parametrize("platform", [XELP, XEHPG, XEHPC], ids=str)
def test_read_after_write_and_write_after_read_on_a_send(platform):
    ours = annotate(
        f"""
        {slm_load(platform, 40)}
        mov (16|M0) r10.0<1>:d 0:w
        add (16|M0) r12.0<1>:d r40.0<1;1,0>:d 1:w
    """,
        platform,
    )
    token = ours[0].swsb.token
    assert ours[0].swsb.token_mode == "set"
    assert ours[1].swsb == Swsb(token=token, token_mode="src")  # overwrites the address being read
    assert ours[2].swsb.token == token and ours[2].swsb.token_mode == "dst"
    assert slm_hazards(ours, platform) == []
    assert {h.kind for h in slm_hazards(without_waits(ours), platform)} == {"RAW", "WAR"}


def test_two_and_three_tokens_on_one_consumer():
    ours = annotate(
        f"""
        {slm_load(XEHPG, 40)}
        {slm_load(XEHPG, 44)}
        add (16|M0) r50.0<1>:d r40.0<1;1,0>:d r44.0<1;1,0>:d
    """,
        XEHPG,
    )
    sync, add = ours[2], ours[3]
    assert (sync.opcode, sync.function) == ("sync", "nop")
    assert {sync.swsb.token, add.swsb.token} == {ours[0].swsb.token, ours[1].swsb.token}
    assert sync.swsb.token_mode == add.swsb.token_mode == "dst"
    assert slm_hazards(ours, XEHPG) == []

    ours = annotate(
        f"""
        {slm_load(XEHPG, 40)}
        {slm_load(XEHPG, 44)}
        {slm_load(XEHPG, 48)}
        add3 (16|M0) r50.0<1>:d r40.0<1;0>:d r44.0<1;0>:d r48.0<1>:d
    """,
        XEHPG,
    )
    sync, add = ours[3], ours[4]
    tokens = {i.swsb.token for i in ours[:3]}
    assert (sync.opcode, sync.function) == ("sync", "allwr")
    waited = {t for t in range(16) if sync.srcs[0].value >> t & 1}
    assert len(waited) == 2 and waited | {add.swsb.token} == tokens
    assert slm_hazards(ours, XEHPG) == []


def test_a_send_that_depends_on_a_token_takes_that_token():
    ours = annotate(
        f"""
        {slm_load(XEHPG, 40)}
        {slm_store(XEHPG, 40)}
    """,
        XEHPG,
    )
    # the store reads the load's result: re-setting the load's token waits for it, no sync
    assert count_syncs(ours) == 0
    assert ours[1].swsb.token == ours[0].swsb.token and ours[1].swsb.token_mode == "set"
    assert slm_hazards(ours, XEHPG) == []
    other = ours[1].with_swsb(Swsb(token=(ours[0].swsb.token + 1) % 16))  # another token: a hazard
    assert [h.kind for h in slm_hazards([ours[0], other, *ours[2:]], XEHPG)] == ["RAW"]


def test_a_wait_retires_a_dependency_only_where_it_surely_happened():
    ours = annotate(
        f"""
        {slm_load(XEHPG, 40)}
        (f0.0) add (16|M0) r50.0<1>:d r40.0<1;1,0>:d 1:w
        add (8|M0) r52.0<1>:d r40.0<1;1,0>:d 1:w
        add (8|M8) r53.0<1>:d r41.0<1;1,0>:d 1:w
        add (8|M0) r54.0<1>:d r40.0<1;1,0>:d 1:w
        (W) add (1|M0) r55.0<1>:d r40.0<0;1,0>:d 1:w
        add (16|M0) r56.0<1>:d r40.0<1;1,0>:d 1:w
    """,
        XEHPG,
    )
    token = f"${ours[0].swsb.token}.dst"
    # predicated: may be shot down; channels 0-7: may be off while 8-15 ran the load; channels 8-15
    # are not inside 0-7; channels 0-7 again: only run if the earlier 0-7 wait ran; NoMask: always
    # runs, so it retires the load for everything after it
    assert [str(i.swsb) for i in ours[1:7]] == [token, token, token, "", token, ""]
    assert slm_hazards(ours, XEHPG) == []


@pytest.mark.parametrize("platform", [XEHPG, XEHPC], ids=str)
def test_tokens_are_reused_least_recently_used_first_once_all_are_taken(platform):
    count = platform.swsb_tokens + 1
    step = 64 // platform.grf_bytes
    loads = "\n".join(slm_load(platform, 20 + step * i) for i in range(count))
    reads = "\n".join(
        f"add (16|M0) r{120 + step * (i % 2)}.0<1>:d r{20 + step * i}.0<1;1,0>:d 1:w" for i in range(count)
    )
    ours = annotate(f"{loads}\n{reads}", platform)
    tokens = [i.swsb.token for i in ours[:count]]
    assert tokens == list(range(platform.swsb_tokens)) + [0]  # the last load takes the least recently used
    # setting $0 again waited for the first load: its reader needs nothing, the others their token
    assert [str(i.swsb) for i in ours[count : 2 * count]] == [""] + [f"${t}.dst" for t in tokens[1:]]
    assert slm_hazards(ours, platform) == []


# --- control registers, math, dpas, end of thread ------------------------------------------------------


@pytest.mark.parametrize("platform", [XELP, XEHPG, XEHPC], ids=str)
def test_control_register_access_waits_on_all_pipes_and_so_does_the_next_instruction(platform):
    ours = annotate(
        """
        add (16|M0) r12.0<1>:d r20.0<1;1,0>:d 1:w
        (W) and (1|M0) cr0.0<1>:ud cr0.0<0;1,0>:ud 0xFFFFFFFF:ud
        mov (16|M0) r40.0<1>:f r50.0<1;1,0>:f
        (W) mov (1|M0) r14.0<1>:ud sr0.1<0;1,0>:ud
        mov (16|M0) r44.0<1>:f r50.0<1;1,0>:f
    """,
        platform,
    )
    everything = "@1" if platform is XELP else "A@1"
    assert [str(i.swsb) for i in ours[1:5]] == [everything] * 4
    assert hazards(ours, platform) == []
    assert "arch" in {h.kind for h in hazards(without_waits(ours), platform)}


def test_after_a_control_register_write_a_needed_sync_carries_the_all_pipes_wait():
    ours = annotate(
        f"""
        {slm_load(XEHPG, 40)}
        (W) and (1|M0) cr0.0<1>:ud cr0.0<0;1,0>:ud 0xFFFFFFFF:ud
        add (16|M0) r12.0<1>:d r40.0<1;1,0>:d 1:w
    """,
        XEHPG,
    )
    # XeHPG cannot write A@1 and a token wait on one instruction: A@1 goes on the sync right after
    assert lines(ours, XEHPG)[2] == "sync.nop null {A@1}"
    assert ours[3].swsb.token_mode == "dst"
    assert slm_hazards(ours, XEHPG) == []


def test_math_is_token_tracked_on_xelp_and_xehpg_and_an_in_order_pipe_on_xehpc():
    asm = """
        math.inv (16|M0) r10.0<1>:f r20.0<1;1,0>:f
        add (16|M0) r12.0<1>:f r10.0<1;1,0>:f 1.0:f
    """
    for platform in (XELP, XEHPG):
        ours = annotate(asm, platform)
        assert ours[0].swsb.token_mode == "set" and ours[1].swsb == Swsb(token=ours[0].swsb.token, token_mode="dst")
        assert hazards(ours, platform) == []
    ours = annotate(asm, XEHPC)
    assert ours[0].swsb.empty and str(ours[1].swsb) == "M@1"
    assert hazards(ours, XEHPC) == [] and hazards(without_waits(ours), XEHPC)


def test_dpas_atomic_chain_keeps_together_and_sets_one_token():
    ours = annotate(
        """
        mov (8|M0) r30.0<1>:ud r31.0<1;1,0>:ud
        dpas.8x8 (8|M0) r80:f r80:f r30:hf r40.0:hf {Atomic}
        dpas.8x8 (8|M0) r88:f r88:f r30:hf r48.0:hf
        mov (8|M0) r100.0<1>:f r88.0<1;1,0>:f
        dpas.8x8 (8|M0) r80:f r80:f r30:hf r40.0:hf
        dpas.8x8 (8|M0) r80:f r80:f r30:hf r40.0:hf
    """,
        XEHPG,
    )
    names = lines(ours, XEHPG)
    first = names.index(next(n for n in names if n.startswith("dpas")))
    chain = ours[first : first + 2]
    assert chain[0].options == ("Atomic",) and chain[0].swsb.token is None
    assert chain[1].swsb.token_mode == "set"
    assert str(chain[0].swsb) == "I@1" and count_syncs(ours) == 0  # the mov's result, waited for by the chain
    mov = ours[first + 2]
    assert mov.swsb == Swsb(token=chain[1].swsb.token, token_mode="dst")  # which also retires the chain
    # a dpas accumulating into the previous dpas's result takes its token: the set waits for it
    third, fourth = ours[first + 3], ours[first + 4]
    assert third.swsb.token != chain[1].swsb.token and fourth.swsb == third.swsb
    assert hazards(ours, XEHPG) == []
    assert hazards(without_waits(ours), XEHPG)


def test_end_of_thread_sets_no_token_and_nothing_follows_it():
    ours = annotate(
        """
        (W) mov (8|M0) r127.0<1>:ud r0.0<1;1,0>:ud
    """,
        XEHPG,
    )
    eot = ours[-1]
    assert eot.eot and eot.swsb.token is None and str(eot.swsb) == "I@1"
    assert count_syncs(ours) == 0


@pytest.mark.parametrize("platform", [XELP, XEHPG, XEHPC], ids=str)
def test_the_syncs_we_write_are_what_iga64_reads(platform, iga64):
    region = "<8;8,1>" if platform is XELP else "<1;1,0>"
    ours = annotate(
        "\n".join(slm_load(platform, r) for r in (40, 44, 48))
        + f"""
        (W) and (1|M0) cr0.0<1>:ud cr0.0<0;1,0>:ud 0xFFFFFFFF:ud
        add (16|M0) r50.0<1>:d r40.0{region}:d r44.0{region}:d
        add (16|M0) r52.0<1>:d r48.0{region}:d r50.0{region}:d
        (W) jmpi r12.0
    """,
        platform,
    )
    syncs = [i for i in ours if i.opcode == "sync"]
    # the sync right after the control-register write carries the all-pipes wait and a token wait:
    # on one sync.nop where the encoding allows it (XeLP @1,$n.dst; XeHPC A@1,$n.dst), else a
    # sync.allwr naming the token in its mask (XeHPG)
    first = syncs[0]
    assert first.swsb.distance == 1 and (first.swsb.token is not None or first.function == "allwr")
    assert first.function == ("allwr" if platform is XEHPG else "nop")
    code = encode_kernel(ours, platform)
    assert_same_listing(disassemble(code, platform), iga64_wall_clean(code, platform), f"{platform}: ")


# --- control flow -------------------------------------------------------------------------------------


def test_a_loop_carries_its_tokens_around_the_back_edge():
    ours = annotate(
        f"""
        (W) mov (1|M0) r2.0<1>:d 0:w
    LOOP:
        {slm_load(XEHPG, 40)}
        add (16|M0) r50.0<1>:d r50.0<1;1,0>:d r40.0<1;1,0>:d
        {slm_store(XEHPG, 50)}
        (W) add (1|M0) r2.0<1>:d r2.0<0;1,0>:d 1:w
        (W) cmp (16|M0) (lt)f1.0 null<1>:d r2.0<0;1,0>:d 4:w
        (W&f1.0) jmpi LOOP
    """,
        XEHPG,
    )
    load, store = ours[1], next(i for i in ours if i.opcode == "send" and i.dst.file == "null" and not i.eot)
    add_index = next(n for n, i in enumerate(ours) if i.opcode == "add" and i.exec_size == 16)
    waits = {(i.swsb.token, i.swsb.token_mode) for i in ours[2 : add_index + 1] if i.swsb.token is not None}
    # the add reads the load's result and overwrites what the previous iteration's store reads
    assert (load.swsb.token, "dst") in waits and (store.swsb.token, "src") in waits | {(t, "dst") for t, _ in waits}
    assert slm_hazards(ours, XEHPG) == []
    assert {h.kind for h in slm_hazards(without_waits(ours), XEHPG)} >= {"RAW", "WAR"}


def test_branches_land_on_the_syncs_inserted_before_their_target():
    ours = annotate(
        f"""
        (W) mov (1|M0) r2.0<1>:d 0:w
        {slm_load(XEHPG, 40)}
        {slm_load(XEHPG, 44)}
    LOOP:
        add (16|M0) r50.0<1>:d r40.0<1;1,0>:d r44.0<1;1,0>:d
        (W) add (1|M0) r2.0<1>:d r2.0<0;1,0>:d 1:w
        (W) cmp (16|M0) (lt)f1.0 null<1>:d r2.0<0;1,0>:d 3:w
        (W&f1.0) jmpi LOOP
    """,
        XEHPG,
    )
    jump = next(n for n, i in enumerate(ours) if i.opcode == "jmpi")
    target = jump + ours[jump].jip // 16
    assert (ours[target].opcode, ours[target].function) == ("sync", "nop")
    assert ours[target + 1].opcode == "add" and ours[target + 1].exec_size == 16
    assert slm_hazards(ours, XEHPG) == []


def test_dependencies_cross_if_else_endif():
    ours = annotate(
        f"""
        cmp (16|M0) (lt)f0.0 null<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        (f0.0) if (16|M0) ELSE ENDIF
        {slm_load(XEHPG, 40)}
    ELSE:
        else (16|M0) ENDIF ENDIF
        mov (16|M0) r40.0<1>:d 7:w
    ENDIF:
        endif (16|M0) NEXT
    NEXT:
        add (16|M0) r50.0<1>:d r40.0<1;1,0>:d 1:w
    """,
        XEHPG,
    )
    load = next(i for i in ours if i.opcode == "send" and not i.eot)
    mov = next(i for i in ours if i.opcode == "mov")
    add = next(i for i in ours if i.opcode == "add")
    assert mov.swsb == Swsb(token=load.swsb.token, token_mode="dst")  # WAW: the load may still be writing r40
    assert add.swsb.token == load.swsb.token and add.swsb.token_mode == "dst"  # it may come from either side
    flags = {20: np.array([[0] * 8 + [5] * 8], dtype=np.int32), 30: np.array([[3] * 16], dtype=np.int32)}
    assert slm_hazards(ours, XEHPG, inputs=flags) == []


def _divergent_loop(platform: hwlib.Platform) -> str:
    """A while loop whose trip count differs per channel, with break and cont, a load at its
    top whose result is used in the body and after the loop, and a store of a value the next
    iteration overwrites."""
    region = "<8;8,1>" if platform is XELP else "<1;1,0>"
    return f"""
        mov (16|M0) r60.0<1>:d 0:w
        mov (16|M0) r30.0<1>:d 0:w
    LOOP:
        {slm_load(platform, 40)}
        add (16|M0) r60.0<1>:d r60.0{region}:d 1:w
        add (16|M0) r30.0<1>:d r30.0{region}:d r40.0{region}:d
        cmp (16|M0) (lt)f0.0 null<1>:d r60.0{region}:d r20.0{region}:d
        cmp (16|M0) (eq)f1.0 null<1>:d r60.0{region}:d r22.0{region}:d
        (f1.0) break (16|M0) BODY WHILE
    BODY:
        {slm_store(platform, 30)}
        cmp (16|M0) (eq)f1.1 null<1>:d r60.0{region}:d r24.0{region}:d
        (f1.1) cont (16|M0) WHILE WHILE
        add (16|M0) r30.0<1>:d r30.0{region}:d 1:w
    WHILE:
        (f0.0) while (16|M0) LOOP
        add (16|M0) r32.0<1>:d r30.0{region}:d r40.0{region}:d
    """


@pytest.mark.parametrize("platform", [XELP, XEHPG, XEHPC], ids=str)
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_divergent_while_break_cont_loop_runs_clean(platform, seed):
    rng = np.random.default_rng(seed)
    lanes = {20: rng.integers(0, 8, (4, 16)), 22: rng.integers(1, 9, (4, 16)), 24: rng.integers(1, 4, (4, 16))}
    inputs = {r: v.astype(np.int32) for r, v in lanes.items()}
    ours = annotate(_divergent_loop(platform), platform)
    assert slm_hazards(ours, platform, threads=4, inputs=inputs) == []
    counter = np.zeros((4, 16), dtype=np.int32)
    for t, lane in np.ndindex(4, 16):
        c = 0
        while True:
            c += 1
            if c == inputs[22][t, lane] or not c < inputs[20][t, lane]:
                break
        counter[t, lane] = c
    result = execute("", platform.name, code=encode_kernel(ours, platform), inputs=inputs, slm_bytes=4096)
    np.testing.assert_array_equal(result.read(60, np.int32, 16), counter)


def test_goto_join_loop_runs_clean():
    ours = annotate(
        f"""
        mov (16|M0) r12.0<1>:d 0:w
        cmp (16|M0) (lt)f0.0 null<1>:d r20.0<1;1,0>:d 0:w
        (f0.0) goto (16|M0) JOIN JOIN
    HEAD:
        {slm_load(XEHPG, 40)}
        add (16|M0) r12.0<1>:d r12.0<1;1,0>:d r40.0<1;1,0>:d
        {slm_store(XEHPG, 12)}
        add (16|M0) r20.0<1>:d r20.0<1;1,0>:d -1:w
        cmp (16|M0) (gt)f1.0 null<1>:d r20.0<1;1,0>:d 0:w
        (f1.0) goto.b (16|M0) JOIN HEAD
    JOIN:
        join (16|M0) AFTER
    AFTER:
        add (16|M0) r14.0<1>:d r12.0<1;1,0>:d r40.0<1;1,0>:d
    """,
        XEHPG,
    )
    x = np.random.default_rng(3).integers(-3, 6, (4, 16)).astype(np.int32)
    assert slm_hazards(ours, XEHPG, threads=4, inputs={20: x}) == []


def test_control_flow_successors():
    program = parse_asm(
        """
        (W) mov (1|M0) r2.0<1>:d 0:w
        call (16|M0) r4.0 SUB
        (W) jmpi END
    SUB:
        add (16|M0) r10.0<1>:d r10.0<1;1,0>:d 1:w
        ret (16|M0) r4.0
    END:
        nop
    """,
        XEHPG,
    )
    control = build_control_flow(program)

    def successors(index: int) -> list[int]:  # first instructions of the blocks after instruction `index`
        return [control.blocks[s].start for s in control.blocks[control.block_of[index]].successors]

    assert successors(1) == [2, 3]  # call: the callee, and (through its ret) the next instruction
    assert successors(4) == [2]  # ret: back after the call
    assert successors(2) == [5]  # jmpi without predicate: the jump only
    ours = assign_swsb(program, XEHPG)
    assert [i.opcode for i in ours if i.opcode != "sync"] == [i.opcode for i in program]
    # a branch through a register: nothing may be left in flight before it
    ours = assign_swsb(
        parse_asm(f"{slm_load(XEHPG, 40)}\nadd (16|M0) r10.0<1>:d r20.0<1;1,0>:d 1:w\n(W) jmpi r12.0", XEHPG), XEHPG
    )
    assert [" ".join(line.split()) for line in format_kernel(ours[2:3], XEHPG).splitlines()[1:]] == [
        "sync.allwr ($0) {A@1}"
    ]


# --- bad input ------------------------------------------------------------------------------------------


def test_bad_input_is_an_error_naming_the_instruction():
    compacted = replace(parse_asm("add (16|M0) r10.0<1>:d r20.0<1;1,0>:d 1:w", XEHPG)[0], options=("Compacted",))
    with pytest.raises(Error, match="instruction 0 .*compacted"):
        assign_swsb([compacted], XEHPG)
    jump = replace(parse_asm("L:\n(W) jmpi L", XEHPG)[0], jip=8)
    with pytest.raises(Error, match="branch target byte 0x8 is not an instruction"):
        assign_swsb([jump], XEHPG)
    dangling = parse_asm("dpas.8x8 (8|M0) r80:f r80:f r30:hf r40.0:hf {Atomic}", XEHPG)
    with pytest.raises(Error, match="Atomic"):
        assign_swsb(dangling, XEHPG)
    mixed = parse_asm(f"add (16|M0) r12.0<1>:d r20.0<1;1,0>:d 1:w {{Atomic}}\n{slm_load(XEHPG, 40)}", XEHPG)
    with pytest.raises(Error, match="Atomic"):
        assign_swsb(mixed, XEHPG)
    with pytest.raises(Error, match="not an Instruction"):
        assign_swsb(["add"], XEHPG)  # type: ignore[list-item]
    with pytest.raises(Error, match="sizes"):
        strip_swsb(parse_asm("nop", XEHPG), [16, 16])
    assert assign_swsb([], XEHPG) == []


# --- random programs ----------------------------------------------------------------------------------


def _random_op(draw, platform: hwlib.Platform, slot: int) -> str:
    """One instruction on 64-byte slots (16 dwords) of r20..; r10/r11 hold SLM addresses (0)."""

    def reg(s: int) -> int:
        return 20 + s * (64 // platform.grf_bytes)

    dst, a, b = (reg(draw(st.integers(0, slot - 1))) for _ in range(3))
    kind = draw(
        st.sampled_from(["addd", "addf", "cvt", "half", "upper", "math", "load", "store", "cmp", "sel", "nomask"])
    )
    if kind == "addd":
        return f"add (16|M0) r{dst}.0<1>:d r{a}.0<1;1,0>:d r{b}.0<1;1,0>:d"
    if kind == "addf":
        return f"add (16|M0) r{dst}.0<1>:f r{a}.0<1;1,0>:f r{b}.0<1;1,0>:f"
    if kind == "cvt":
        return f"mov (16|M0) r{dst}.0<1>:f r{a}.0<1;1,0>:d"
    if kind == "half":
        return f"mov (8|M0) r{dst}.0<1>:d r{a}.0<1;1,0>:d"
    if kind == "upper":  # channels 8..15: the second 32 bytes of each slot

        def upper(r: int) -> str:
            return f"r{r + 32 // platform.grf_bytes}.{32 % platform.grf_bytes // 4}"

        return f"add (8|M8) {upper(dst)}<1>:d {upper(a)}<1;1,0>:d {upper(b)}<1;1,0>:d"
    if kind == "math":
        return f"math.inv (16|M0) r{dst}.0<1>:f r{a}.0<1;1,0>:f"
    if kind == "load":
        return slm_load(platform, dst)
    if kind == "store":
        return slm_store(platform, a)
    if kind == "cmp":
        return f"cmp (16|M0) (lt)f0.0 null<1>:d r{a}.0<1;1,0>:d r{b}.0<1;1,0>:d"
    if kind == "sel":
        return f"(f0.0) sel (16|M0) r{dst}.0<1>:f r{a}.0<1;1,0>:f r{b}.0<1;1,0>:f"
    return f"(W) add (8|M0) r{dst}.0<1>:d r{a}.0<1;1,0>:d 3:w"


@st.composite
def random_programs(draw, platform: hwlib.Platform) -> str:
    slots = draw(st.integers(2, 6))
    body = [_random_op(draw, platform, slots) for _ in range(draw(st.integers(1, 40)))]
    if draw(st.booleans()):  # run the body three times around a back edge
        body = (
            ["(W) mov (1|M0) r2.0<1>:d 0:w", "LOOP:"]
            + body
            + [
                "(W) add (1|M0) r2.0<1>:d r2.0<0;1,0>:d 1:w",
                "(W) cmp (16|M0) (lt)f1.0 null<1>:d r2.0<0;1,0>:d 3:w",
                "(W&f1.0) jmpi LOOP",
            ]
        )
    return "\n".join(body)


def _check_random_program(platform: hwlib.Platform, data) -> None:
    asm = data.draw(random_programs(platform))
    if platform is XELP:
        asm = asm.replace("<1;1,0>", "<8;8,1>")
    ours = annotate(asm, platform)
    assert slm_hazards(ours, platform, threads=2) == []
    assert assign_swsb(ours, platform) == ours


@pytest.mark.parametrize("platform", [XELP, XEHPG, XEHPC], ids=str)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_programs_run_clean(platform, data):
    _check_random_program(platform, data)


@pytest.mark.slow
@pytest.mark.parametrize("platform", [XELP, XEHPG, XEHPC], ids=str)
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_many_random_programs_run_clean(platform, data):
    _check_random_program(platform, data)


# --- footprints -------------------------------------------------------------------------------------


def grf_bytes(footprint: Footprint, platform: hwlib.Platform) -> set[tuple[int, int]]:
    """(register, byte) pairs of the GRF part of a footprint."""
    out = set()
    for reg in range(256):
        row = footprint.bytes >> (reg * UNIT_BYTES) & ((1 << platform.grf_bytes) - 1)
        out |= {(reg, byte) for byte in range(platform.grf_bytes) if row >> byte & 1}
    return out


def rows(first: int, count: int, platform: hwlib.Platform) -> set[tuple[int, int]]:
    return {(r, b) for r in range(first, first + count) for b in range(platform.grf_bytes)}


def facts_of(text: str, platform: hwlib.Platform):
    return instruction_facts(parse_asm(text, platform)[0], platform)


def test_region_footprints_are_byte_exact():
    f = facts_of("add (8|M0) r10.2<1>:d r20.1<2;1,0>:w r30.0<0;1,0>:d", XEHPG)
    assert grf_bytes(f.writes, XEHPG) == {(10, b) for b in range(8, 32)} | {(11, b) for b in range(0, 8)}
    # eight words two apart from byte 2: bytes 2,3, 6,7, ..., 30,31; and one dword of r30
    assert grf_bytes(f.reads, XEHPG) == (
        {(20, 2 + 4 * i) for i in range(8)} | {(20, 3 + 4 * i) for i in range(8)} | {(30, b) for b in range(4)}
    )
    f = facts_of("mov (16|M0) r10.0<1>:d r20.0<8;4,2>:d", XEHPG)  # four rows (one GRF apart) of 4 dwords two apart
    assert grf_bytes(f.reads, XEHPG) == {(20 + row, 8 * i + b) for row in range(4) for i in range(4) for b in range(4)}


def test_send_footprints_come_from_the_descriptors():
    f = facts_of("send.dc1 (16|M0) r24 r12 null:0 0x0 0x04205E00", XEHPG)
    assert grf_bytes(f.reads, XEHPG) == rows(12, 2, XEHPG) and grf_bytes(f.writes, XEHPG) == rows(24, 2, XEHPG)
    f = facts_of("send.dc1 (16|M0) null r12 r24:2 0x0 0x04025E00", XEHPG)
    assert grf_bytes(f.reads, XEHPG) == rows(12, 2, XEHPG) | rows(24, 2, XEHPG) and not f.writes
    f = facts_of("send.dc1 (16|M0) null r27 r23 0x80 0x04025EFE", XELP)  # XeLP: src1 length in exdesc[10:6]
    assert grf_bytes(f.reads, XELP) == rows(27, 2, XELP) | rows(23, 2, XELP)


def test_dpas_footprints_follow_repeat_count_depth_and_types():
    f = facts_of("dpas.8x8 (8|M0) r80:f r80:f r30:hf r40.0:hf", XEHPG)
    assert grf_bytes(f.writes, XEHPG) == rows(80, 8, XEHPG)
    assert grf_bytes(f.reads, XEHPG) == rows(80, 8, XEHPG) | rows(30, 8, XEHPG) | rows(40, 8, XEHPG)
    f = facts_of("dpas.8x4 (16|M0) r80:f null:f r30:bf r40.0:bf", XEHPC)
    # dst 4 rows x 16 floats = 4 GRFs of 64 bytes; src1 16 dwords x 8 = 8 GRFs; src2 3 x 32 + 32 bytes = 2 GRFs
    assert grf_bytes(f.writes, XEHPC) == rows(80, 4, XEHPC)
    assert grf_bytes(f.reads, XEHPC) == rows(30, 8, XEHPC) | rows(40, 2, XEHPC)
    f = facts_of("dpas.8x2 (8|M0) r80:d r80:d r30:b r40.0:b", XEHPG)
    assert grf_bytes(f.reads, XEHPG) == rows(80, 2, XEHPG) | rows(30, 8, XEHPG) | {(40, b) for b in range(32)} | {
        (41, b) for b in range(32)
    }
    # dpasw: this thread's src2 gives ceil(RC/2) rows of A (the fused partner the rest)
    f = facts_of("dpasw.8x8 (8|M0) r80:f r80:f r30:hf r40.0:hf", XEHPG)
    assert grf_bytes(f.reads, XEHPG) == rows(80, 8, XEHPG) | rows(30, 8, XEHPG) | rows(40, 4, XEHPG)
    f = facts_of("dpasw.8x7 (8|M0) r80:f null:f r30:hf r40.0:hf", XEHPG)
    assert grf_bytes(f.reads, XEHPG) == rows(30, 8, XEHPG) | rows(40, 4, XEHPG)


def test_flag_footprints_follow_the_channel_offset():
    f = facts_of("cmp (16|M16) (lt)f1.0 null<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d", XEHPG)
    assert f.writes.bytes >> (FLAG_UNIT * UNIT_BYTES) == 0b11 << (4 + 2)  # f1 bytes 2 and 3
    f = facts_of("(f0.1) add (8|M0) r10.0<1>:d r20.0<1;1,0>:d 1:w", XEHPG)
    assert f.reads.bytes >> (FLAG_UNIT * UNIT_BYTES) == 1 << 2
