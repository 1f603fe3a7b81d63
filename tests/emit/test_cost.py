"""The modeled cycles spread a run's work over no more EUs than its threads can occupy.

Expected values are hand calculations from the rates of `xegen/hw.py`: on XeHPG an
`add (16)` of f32 is 2 ALU clocks (16 lanes x 4 bytes at 32 bytes a clock) and a SIMD16 d32
load of 2 GRFs is 8 load/store clocks (64 bytes at 8 a clock); 512 EUs, 16 to an Xe-core.
"""

from __future__ import annotations

import pytest

from xegen import hw as hwlib
from xegen.conv import make_problem
from xegen.emit.asm_parser import parse_asm
from xegen.emit.cost import busiest_eu_threads, kernel_cycles
from xegen.modeling import modeled_cycles
from xegen.pipeline import compile_problem
from xegen.verify import verify

ADD_AND_LOAD = parse_asm(
    "add (16|M0) r10.0<1>:f r12.0<1;1,0>:f r14.0<1;1,0>:f\nsend.ugm (16|M0) r22 r16 null:0 0x0 0x04280580", "xehpg"
)


def test_two_threads_take_as_long_as_one_threads_work():
    cycles = kernel_cycles(ADD_AND_LOAD, [2, 2], "xehpg")  # each thread: 2 issue, 2 ALU, 8 load/store
    assert cycles.device == 8


@pytest.mark.parametrize(
    "threads, group_threads, hw, per_eu",
    [
        (1024, 1, "xehpg", 2),  # 1024 threads on 512 EUs
        (513, 1, "xehpg", 2),  # one EU runs a second thread
        (32, 32, "xehpg", 2),  # one group: 32 threads on one Xe-core's 16 EUs
        (32, 32, "xehpc", 4),  # 8 EUs to an Xe-core
        (16 * 64, 16, "xehpg", 2),  # 64 groups on 32 Xe-cores, two each
        (16 * 65, 16, "xehpg", 3),  # 65 groups: one Xe-core takes three
        (7, 7, "xelp", 1),
    ],
)
def test_the_busiest_eu(threads, group_threads, hw, per_eu):
    assert busiest_eu_threads(threads, group_threads, hwlib.platform(hw)) == per_eu


def test_a_full_device_spreads_over_every_eu():
    cycles = kernel_cycles(ADD_AND_LOAD, [1024, 1024], "xehpg", group_threads=16)
    assert cycles.device == 1024 * 8 / 512  # 8192 load/store clocks, two threads on every EU
    thirty_two = kernel_cycles(ADD_AND_LOAD, [32, 32], "xehpg", group_threads=32)
    assert thirty_two.device == 2 * 8  # one Xe-core: two threads on each of its EUs


def test_a_small_convolution_is_not_faster_than_its_threads():
    """Each thread issues its own instructions one a clock: the device cannot finish sooner."""
    compilation = compile_problem(make_problem("mb1ic8ih4oc8oh4kh3ph1", "FWD_I", "f32"), "xehpg")
    run = verify(compilation).run
    threads = run.executions[0]
    cycles = modeled_cycles(compilation, run.executions)
    assert threads < hwlib.XEHPG.eu_count
    assert cycles.device >= sum(run.executions) / threads
