"""Kernel statistics and the instruction-level cycle model, on hand-written assembly."""

from __future__ import annotations

import pytest

from xegen import hw as hwlib
from xegen.emit import decode_with_sizes, parse_asm
from xegen.emit.analysis import inner_loop, kernel_counts, loops
from xegen.emit.cost import instruction_cost, kernel_cycles

NESTED = """
        mov (1|M0) r2.0<1>:d 0:w
L16:
        mov (1|M0) r2.1<1>:d 0:w
L32:
        mad (8|M0) r10.0<1>:f r10.0<1;0>:f r11.0<1;0>:f r12.0<1>:f
        mad (8|M0) r10.0<1>:f r10.0<1;0>:f r11.0<1;0>:f r13.0<1>:f
        add (1|M0) r2.1<1>:d r2.1<0;1,0>:d 1:w
        cmp (1|M0) (lt)f0.0 null<1>:d r2.1<0;1,0>:d 4:w
(W&f0.0) jmpi L32
        add (1|M0) r2.0<1>:d r2.0<0;1,0>:d 1:w
        cmp (1|M0) (lt)f0.1 null<1>:d r2.0<0;1,0>:d 4:w
(W&f0.1) jmpi L16
        send.ugm (1|M0) null r20 r30:1 0x0 0x0200F504
"""


def test_loops_and_the_inner_loop():
    instructions = parse_asm(NESTED, "xehpg")
    assert [(lp.start, lp.end) for lp in loops(instructions)] == [(2, 6), (1, 9)]
    loop = inner_loop(instructions)
    assert (loop.start, loop.end) == (2, 6)
    counts = kernel_counts(instructions)
    assert counts.total.instructions == 11 and counts.total.fmas == 2 and counts.total.sends == 1
    assert counts.inner.instructions == 5 and counts.inner.fmas == 2
    assert counts.inner.math_density == pytest.approx(2 / 5)
    assert counts.as_dict()["inner_loop_math_density"] == 0.4


def test_integer_mad_is_not_an_fma_and_unrolled_code_has_no_inner_loop():
    instructions = parse_asm(
        "mad (8|M0) r10.0<1>:d r10.0<1;0>:d r11.0<1;0>:d r12.0<1>:d\n"
        "mad (8|M0) r10.0<1>:f r10.0<1;0>:f r11.0<1;0>:f r12.0<1>:f",
        "xehpg",
    )
    counts = kernel_counts(instructions)
    assert counts.total.fmas == 1 and counts.inner is None


def test_sizes_of_compacted_code_place_loop_targets():
    code = bytes.fromhex("4000 0300 6086 050a 050b 4606 1000 0000".replace(" ", ""))  # a 16-byte add
    instructions, sizes = decode_with_sizes(code, "xehpg")
    assert loops(instructions, sizes) == [] and sizes == [16]


def test_instruction_costs_follow_the_hardware_rates():
    xehpg = hwlib.XEHPG
    add16, dpas, load, math = parse_asm(
        """
        add (16|M0) r10.0<1>:f r12.0<1;1,0>:f r14.0<1;1,0>:f
        dpas.8x8 (8|M0) r80:f null:f r30:hf r40.0:hf
        send.ugm (16|M0) r22 r16 null:0 0x0 0x04280580
        math.inv (16|M0) r10.0<1>:f r12.0<1;1,0>:f
    """,
        xehpg,
    )
    assert instruction_cost(add16, xehpg) == (16 * 4 / 32, 0, 0)  # 2 clocks of SIMD8 f32
    # 8 rows x 8 columns x depth 8 x 2 f16 per dword = 1024 FMAs at 64 per clock
    assert instruction_cost(dpas, xehpg) == (0, 16, 0)
    # rlen 2 GRFs of 32 bytes at 8 bytes per clock
    assert instruction_cost(load, xehpg) == (0, 0, 8)
    assert instruction_cost(math, xehpg) == (8, 0, 0)


def test_kernel_cycles_take_the_busiest_resource_over_all_eus():
    instructions = parse_asm(
        "add (16|M0) r10.0<1>:f r12.0<1;1,0>:f r14.0<1;1,0>:f\nsend.ugm (16|M0) r22 r16 null:0 0x0 0x04280580", "xehpg"
    )
    cycles = kernel_cycles(instructions, [1024, 512], "xehpg")
    assert (cycles.issue, cycles.alu, cycles.load_store) == (1536, 2048, 4096)
    assert cycles.bound == "load/store" and cycles.device == 4096 / hwlib.XEHPG.eu_count
