"""SWSB hazard checks: IGC's kernels with a token wait removed are reported (pc and both
instructions), and hand-written sequences show each rule of the model."""

from __future__ import annotations

import numpy as np
import pytest

from tests.emit.corpus import BUILDS
from xegen import hw as hwlib
from xegen import oracles, sim
from xegen.emit import assemble
from xegen.emit import tables as T
from xegen.emit.layout import layout_for
from xegen.emit.zebin import read_zebin
from xegen.sim.program import Program

from .harness import execute


def _without_swsb(code: bytes, pc: int, platform: hwlib.Platform) -> bytes:
    """The kernel with the SWSB field of the instruction at `pc` cleared (the same bits of the
    compacted and the 16-byte form, inside the first 8 bytes)."""
    swsb = layout_for(platform).fields.header.swsb
    word = int.from_bytes(code[pc : pc + 8], "little") & ~swsb.positions
    return code[:pc] + word.to_bytes(8, "little") + code[pc + 8 :]


def _first_token_wait(program: Program, entry: int) -> tuple[int, int]:
    """(pc, token) of the first instruction after the entry point that waits for a token's
    result ($n.dst), set after the entry point too, and for nothing else."""
    set_since_entry = set()
    for inst, pc in zip(program.instructions, program.pcs, strict=True):
        swsb = getattr(inst, "swsb", None)
        if pc < entry or swsb is None or swsb.token is None:
            continue
        if swsb.token_mode == "set":
            set_since_entry.add(swsb.token)
        elif swsb.token_mode == "dst" and not swsb.distance and swsb.token in set_since_entry:
            return pc, inst.swsb.token
    raise AssertionError("no token wait in the kernel")


@pytest.mark.parametrize("build", BUILDS, ids=str)
def test_igc_kernel_with_a_missing_token_wait_is_reported(corpus, build):
    zebin = corpus.zebin(build)
    kernel = read_zebin(zebin).kernel(build.kernel.kernel_name)
    platform = hwlib.platform(build.variant.device)
    program = Program(kernel.code, platform)
    # the corpus groups are powers of two: the hardware makes the local ids (NEO's choice) and
    # threads start past the kernel's loading of them
    pc, token = _first_token_wait(program, kernel.execution_env.offset_to_skip_per_thread_data_load)
    broken_code = _without_swsb(kernel.code, pc, platform)
    start = zebin.find(kernel.code)
    broken = zebin[:start] + broken_code + zebin[start + len(kernel.code) :]
    case = build.kernel.make_case(np.random.default_rng(0))

    def arguments():
        return [
            np.array(case.values[a.name], copy=True) if a.kind == "buffer" else case.values[a.name]
            for a in build.kernel.arguments
        ]

    launch = (case.launch.global_size, case.launch.local_size)
    with pytest.raises(sim.HazardError) as error:
        sim.run(broken, build.kernel.kernel_name, arguments(), *launch)
    hazards = error.value.hazards
    missing = [h for h in hazards if f"without waiting for ${token}.dst" in h.detail]
    assert missing, [str(h) for h in hazards]
    first = missing[0]
    producer = program.instructions[program.index_of[first.producer_pc]]
    assert T.is_out_of_order(T.OPCODES[producer.opcode], platform)  # a send, dpas or (XeLP) math
    assert first.pc >= pc and first.producer_pc < pc
    assert f"pc 0x{first.pc:04x}" in str(error.value) and first.producer in str(error.value)
    # the same kernel with the wait runs clean (check_hazards is on by default)
    sim.run(zebin, build.kernel.kernel_name, arguments(), *launch)
    # and "report" mode returns the hazards instead of raising
    result = sim.run(broken, build.kernel.kernel_name, arguments(), *launch, check_hazards="report")
    assert [str(h) for h in result.hazards] == [str(h) for h in hazards]


def _hazards(asm: str, hw: str = "dg2", **kwargs) -> list:
    return execute(asm, hw, check_hazards=True, **kwargs).hazards


def test_in_order_read_needs_a_distance():
    missing = _hazards("""
        add (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        add (16|M0) r12.0<1>:d r10.0<1;1,0>:d 1:w
    """)
    assert len(missing) == 1 and missing[0].kind == "RAW" and missing[0].register == "r10"
    assert "I@1" in missing[0].detail
    assert (
        _hazards("""
        add (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        add (16|M0) r12.0<1>:d r10.0<1;1,0>:d 1:w {I@1}
    """)
        == []
    )
    # another pipe's wait does not cover it; waiting on all pipes does
    assert (
        len(
            _hazards("""
        add (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        add (16|M0) r12.0<1>:d r10.0<1;1,0>:d 1:w {F@1}
    """)
        )
        == 1
    )
    assert (
        _hazards("""
        add (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        mov (16|M0) r40.0<1>:f r20.0<1;1,0>:f
        add (16|M0) r12.0<1>:d r10.0<1;1,0>:d 1:w {A@2}
    """)
        == []
    )


def test_distant_results_have_landed():
    filler = "\n".join(f"add (16|M0) r{60 + 2 * i}.0<1>:d r20.0<1;1,0>:d 1:w" for i in range(11))
    assert (
        _hazards(f"""
        add (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        {filler}
        add (16|M0) r12.0<1>:d r10.0<1;1,0>:d 1:w
    """)
        == []
    )


def test_xelp_single_pipe_distance():
    """XeLP has one in-order pipe: waiting for the instruction d back waits for all before it."""
    assert (
        len(
            _hazards(
                """
        add (16|M0) r10.0<1>:d r20.0<8;8,1>:d r30.0<8;8,1>:d
        mov (16|M0) r40.0<1>:f r20.0<8;8,1>:f
        add (16|M0) r12.0<1>:d r10.0<8;8,1>:d 1:w
    """,
                "tgllp",
            )
        )
        == 1
    )
    assert (
        _hazards(
            """
        add (16|M0) r10.0<1>:d r20.0<8;8,1>:d r30.0<8;8,1>:d
        mov (16|M0) r40.0<1>:f r20.0<8;8,1>:f
        add (16|M0) r12.0<1>:d r10.0<8;8,1>:d 1:w {@1}
    """,
            "tgllp",
        )
        == []
    )
    assert (
        _hazards(
            """
        add (16|M0) r10.0<1>:d r20.0<8;8,1>:d r30.0<8;8,1>:d
        mov (16|M0) r40.0<1>:f r20.0<8;8,1>:f
        add (16|M0) r12.0<1>:d r10.0<8;8,1>:d 1:w {@2}
    """,
            "tgllp",
        )
        == []
    )


def test_send_results_need_a_token_wait():
    memory_free = """
        send.slm (16|M0) r40 r10 null:0 0x0 0x04200500 {$3}
        add (16|M0) r12.0<1>:d r40.0<1;1,0>:d 1:w WAIT
    """
    missing = _hazards(memory_free.replace("WAIT", ""), slm_bytes=4096)
    assert len(missing) == 1 and missing[0].kind == "RAW" and "$3.dst" in missing[0].detail
    assert _hazards(memory_free.replace("WAIT", "{$3.dst}"), slm_bytes=4096) == []
    assert (
        _hazards(memory_free.replace("add", "sync.allwr null\n        add").replace("WAIT", ""), slm_bytes=4096) == []
    )
    # re-using the token waits for its previous owner
    assert (
        _hazards(
            """
        send.slm (16|M0) r40 r10 null:0 0x0 0x04200500 {$3}
        send.slm (16|M0) r44 r10 null:0 0x0 0x04200500 {$3}
        add (16|M0) r12.0<1>:d r40.0<1;1,0>:d 1:w
        sync.allwr null
    """,
            slm_bytes=4096,
        )
        == []
    )


def test_overwriting_a_send_source_needs_the_src_token():
    template = """
        send.slm (16|M0) null r10 r20:2 0x0 0x04000504 {$2}
        mov (16|M0) r20.0<1>:d 5:w WAIT
        sync.allwr null
    """
    missing = _hazards(template.replace("WAIT", ""), slm_bytes=4096)
    assert [h.kind for h in missing] == ["WAR"] and "$2.src" in missing[0].detail
    assert _hazards(template.replace("WAIT", "{$2.src}"), slm_bytes=4096) == []


def test_a_later_send_may_write_an_earlier_send_payload():
    """Messages leave the EU in order: a send's response cannot land before an earlier send read
    its payload (IGC's direct convolution reuses payload registers this way)."""
    assert (
        _hazards(
            """
        send.slm (16|M0) r40 r10 null:0 0x0 0x04200500 {$2}
        send.slm (16|M0) r10 r12 null:0 0x0 0x04200500 {$3}
        sync.allwr null
    """,
            slm_bytes=4096,
        )
        == []
    )


def test_out_of_order_math_on_xehpg():
    assert (
        len(
            _hazards("""
        math.inv (16|M0) r10.0<1>:f r20.0<1;1,0>:f {$1}
        add (16|M0) r12.0<1>:f r10.0<1;1,0>:f 1.0:f
    """)
        )
        == 1
    )
    # on XeHPC math is an in-order pipe: a distance orders it
    assert (
        _hazards(
            """
        math.inv (16|M0) r10.0<1>:f r20.0<1;1,0>:f
        add (16|M0) r12.0<1>:f r10.0<1;1,0>:f 1.0:f {M@1}
    """,
            "pvc",
        )
        == []
    )


def test_control_register_access_needs_all_pipes_next():
    assert [
        h.kind
        for h in _hazards("""
        (W) or (1|M0) cr0.0<1>:ud cr0.0<0;1,0>:ud 0x4C0:uw
        add (16|M0) r12.0<1>:d r20.0<1;1,0>:d 1:w
    """)
    ] == ["arch"]
    assert (
        _hazards("""
        (W) or (1|M0) cr0.0<1>:ud cr0.0<0;1,0>:ud 0x4C0:uw
        sync.nop null {A@1}
        add (16|M0) r12.0<1>:d r20.0<1;1,0>:d 1:w
    """)
        == []
    )


def test_cross_pipe_overwrite_is_a_hazard_and_taken_branches_drain_the_pipes():
    assert [
        h.kind
        for h in _hazards("""
        mov (16|M0) r10.0<1>:f r20.0<1;1,0>:f
        mov (16|M0) r10.0<1>:d 1:w
    """)
    ] == ["WAW"]
    assert (
        _hazards("""
        add (16|M0) r10.0<1>:d r20.0<1;1,0>:d r30.0<1;1,0>:d
        (W) jmpi NEXT
        nop
    NEXT:
        add (16|M0) r12.0<1>:d r10.0<1;1,0>:d 1:w
    """)
        == []
    )


def test_threads_taking_different_branches_are_checked_separately():
    """Only the threads whose path misses the wait are reported."""
    hazards = _hazards(
        """
        send.slm (16|M0) r40 r10 null:0 0x0 0x04200500 {$3}
        (W) cmp (16|M0) (eq)f0.0 null<1>:d r20.0<0;1,0>:d 0:w
        (W&f0.0) jmpi READ
        sync.nop null {$3.dst}
    READ:
        add (16|M0) r12.0<1>:d r40.0<1;1,0>:d 1:w
    """,
        threads=4,
        slm_bytes=4096,
        inputs={20: np.array([[0], [1], [1], [0]], dtype=np.int32)},
    )
    assert len(hazards) == 1 and hazards[0].threads == 2


# --- what IGC's code relies on, and the checks that stay strict ----------------------------------


def test_a_send_reads_its_predicate_at_issue():
    """The flag of a predicated send is not one of the sources its token protects: IGC rewrites it
    right after the send.  Its payload registers still are."""
    template = """
        (W) mov (1|M0) f0.0<1>:uw 0xFFFF:uw
        (W&f0.0) send.slm (16|M0) r40 r10 null:0 0x0 0x04200500 {$3}
        (W) mov (1|M0) f0.0<1>:uw 0x0:uw
        OVERWRITE
        sync.allwr null
    """
    assert _hazards(template.replace("OVERWRITE", ""), slm_bytes=4096) == []
    payload = _hazards(template.replace("OVERWRITE", "mov (16|M0) r10.0<1>:d 0:w"), slm_bytes=4096)
    assert [(h.kind, h.register) for h in payload] == [("WAR", "r10")] and "$3.src" in payload[0].detail


def test_a_payload_register_is_free_once_a_later_send_writing_it_has_landed():
    """$3 overwrites $2's payload (allowed: messages leave in order); after waiting for $3 the
    register may be rewritten — but not before."""
    template = """
        send.slm (16|M0) r40 r10 null:0 0x0 0x04200500 {$2}
        send.slm (16|M0) r10 r12 null:0 0x0 0x04200500 {$3}
        add (16|M0) r10.0<1>:d r20.0<1;1,0>:d 1:w WAIT
        sync.allwr null
    """
    assert _hazards(template.replace("WAIT", "{$3.dst}"), slm_bytes=4096) == []
    missing = _hazards(template.replace("WAIT", ""), slm_bytes=4096)
    assert [(h.kind, h.register) for h in missing] == [("WAW", "r10")] and "$3.dst" in missing[0].detail


INDIRECT = """
    (W) mov (1|M0) a0.0<1>:uw ADDRESS:uw
    send.slm (16|M0) r40 r10 null:0 0x0 0x04200500 {$3}
    add (16|M0) r35.0<1>:d r20.0<1;1,0>:d 1:w
    mov (8|M0) r12.0<1>:d r[a0.0]<1;1,0>:d WAIT
    sync.allwr null
"""


@pytest.mark.parametrize(
    "register, wait, expected",
    [
        (40, "", [("RAW", "r40")]),  # reads the send's result through a0 without waiting
        (40, "{$3.dst}", []),
        (50, "", []),  # a register nobody writes
        (39, "", []),  # next to the add's r35..r36 and the send's r40..r41: IGC's private arrays
        (35, "", [("RAW", "r35")]),  # the add's result, one instruction later
        (35, "{I@1}", []),
    ],
)
def test_indirect_operands_touch_what_a0_addresses(register, wait, expected):
    asm = INDIRECT.replace("ADDRESS", hex(register * 32)).replace("WAIT", wait)
    assert [(h.kind, h.register) for h in _hazards(asm, slm_bytes=4096)] == expected


def test_an_indirect_destination_is_checked_too():
    assert [
        (h.kind, h.register)
        for h in _hazards(
            """
        (W) mov (1|M0) a0.0<1>:uw 0x500:uw
        send.slm (16|M0) r40 r10 null:0 0x0 0x04200500 {$3}
        mov (8|M0) r[a0.0, 0]<1>:d r20.0<1;1,0>:d
        sync.allwr null
    """,
            slm_bytes=4096,
        )
    ] == [("WAW", "r40")]


def test_xehpc_64_bit_integers_time_out_like_the_i_pipe():
    """On XeHPC a :q result comes from the I pipe (visible after 11 instructions, as IGC assumes);
    a :df result from the long pipe needs 15."""
    filler = "\n".join(f"add (16|M0) r{60 + 2 * i}.0<1>:d r10.0<1;1,0>:d 1:w" for i in range(11))
    template = f"""
        PRODUCER
        {filler}
        CONSUMER
    """
    integer = template.replace("PRODUCER", "shl (16|M0) r20.0<1>:q r10.0<1;1,0>:q 2:w").replace(
        "CONSUMER", "add (16|M0) r30.0<1>:q r20.0<1;1,0>:q 1:w"
    )
    assert _hazards(integer, "pvc") == []
    double = template.replace("PRODUCER", "add (16|M0) r20.0<1>:df r10.0<1;1,0>:df r12.0<1;1,0>:df").replace(
        "CONSUMER", "add (16|M0) r30.0<1>:df r20.0<1;1,0>:df r12.0<1;1,0>:df"
    )
    assert [h.kind for h in _hazards(double, "pvc")] == ["RAW"]


def test_flag_reads_are_interlocked_but_flag_overwrites_across_pipes_are_not():
    template = """
        cmp (16|M0) (lt)f1.0 null<1>:f r20.0<1;1,0>:f 0.0:f
        (W) mov (1|M0) r12.0<1>:ud f1.0<0;1,0>:ud
        NEXT
    """
    assert _hazards(template.replace("NEXT", "")) == []  # IGC reads an F-pipe flag in the I pipe at once
    overwrite = _hazards(template.replace("NEXT", "(W) mov (1|M0) f1.0<1>:ud 0x0:ud"))
    assert [(h.kind, h.register) for h in overwrite] == [("WAW", "f1.0")]


# --- rules nGEN's XeHPC code relies on (issue 26, item 5) --------------------------------------

# dpas reads A (src2) and B (src1) as f16, accumulates into f32; each operand is whole GRFs on
# XeHPC (C: 8 rows x 64 bytes, B: 8 x 64, A: 8 x 32)
_DPAS_WAR = """
    dpas.8x8 (16|M0) r104:f r64:f r88:hf r80.0:hf {$1}
    LATER
    sync.allwr null
"""
_DISCARDED_READ = """
    add (1|M0) r41.0<1>:uq r41.0<0;1,0>:uq 1024:w
    READER
"""


def _hazards_xehpc(asm: str) -> list:
    return _hazards(asm, "pvc", threads=2, slm_bytes=4096)


def test_a_later_dpas_may_overwrite_an_earlier_dpas_source():
    """The systolic pipe reads a dpas's sources before a later dpas writes: nGEN's automatic SWSB
    does not order a dpas that overwrites the src0 of the dpas before it."""
    later = "dpas.8x8 (16|M0) r64:f r72:f r96:hf r80.0:hf {$2}"
    assert _hazards_xehpc(_DPAS_WAR.replace("LATER", later)) == []
    # the same overwrite by an in-order instruction or by a send is a hazard
    by_mov = _hazards_xehpc(_DPAS_WAR.replace("LATER", "mov (16|M0) r64.0<1>:f 0.0:f"))
    assert [(h.kind, h.register) for h in by_mov] == [("WAR", "r64")] and "$1.src" in by_mov[0].detail
    assert _hazards_xehpc(_DPAS_WAR.replace("LATER", "mov (16|M0) r64.0<1>:f 0.0:f {$1.src}")) == []
    by_send = _hazards_xehpc(_DPAS_WAR.replace("LATER", "send.slm (16|M0) r64 r10 null:0 0x0 0x04200500 {$2}"))
    assert [(h.kind, h.register) for h in by_send] == [("WAR", "r64")]
    # reading the earlier dpas's result still needs its token
    reads = _hazards_xehpc(_DPAS_WAR.replace("LATER", "dpas.8x8 (16|M0) r64:f r104:f r96:hf r80.0:hf {$2}"))
    assert [(h.kind, h.register) for h in reads] == [("RAW", "r104")] and "$1.dst" in reads[0].detail


def test_a_read_whose_value_goes_nowhere_is_not_a_hazard():
    """nGEN's XeHPC send workaround reads payload registers with `mov null` right after they were
    written: nothing depends on the value read."""
    assert _hazards_xehpc(_DISCARDED_READ.replace("READER", "mov (1|M0) null<1>:ud r41.0<0;1,0>:ud")) == []
    # a result, or a flag written from the value, makes the read count
    for reader in ("mov (1|M0) r50.0<1>:ud r41.0<0;1,0>:ud", "mov (1|M0) (ne)f0.0 null<1>:ud r41.0<0;1,0>:ud"):
        missing = _hazards_xehpc(_DISCARDED_READ.replace("READER", reader))
        assert [(h.kind, h.register) for h in missing] == [("RAW", "r41")] and "I@1" in missing[0].detail
    # reading a message's result is how a thread waits for it (IGC's `mov null r40 {$2.dst}` after a
    # fence): that read still needs the token
    fence_wait = "send.slm (16|M0) r40 r10 null:0 0x0 0x04200500 {$3}\n mov (1|M0) null<1>:ud r40.0<0;1,0>:ud"
    missing = _hazards_xehpc(fence_wait)
    assert [(h.kind, h.register) for h in missing] == [("RAW", "r40")] and "$3.dst" in missing[0].detail
    assert _hazards_xehpc(fence_wait + " {$3.dst}") == []


@pytest.mark.parametrize(
    "asm",
    [
        _DPAS_WAR.replace("LATER", "dpas.8x8 (16|M0) r64:f r72:f r96:hf r80.0:hf {$2}"),
        _DPAS_WAR.replace("LATER", "send.slm (16|M0) r64 r10 null:0 0x0 0x04200500 {$2}"),
        _DISCARDED_READ.replace("READER", "mov (1|M0) null<1>:ud r41.0<0;1,0>:ud"),
        _DISCARDED_READ.replace("READER", "mov (1|M0) (ne)f0.0 null<1>:ud r41.0<0;1,0>:ud"),
    ],
    ids=["dpas-war", "send-war", "discarded", "flag"],
)
def test_the_xehpc_rule_kernels_encode_as_iga64_does(asm, iga64):
    assert assemble(asm, hwlib.XEHPC) == oracles.iga64_assemble(asm, hwlib.XEHPC)
