"""Moves out of message temporaries sink to where their data is first needed (`lower/sink.py`):
a run of 16-bit gathers is all in flight before the first move waits for one, and the results
are the interpreter's."""

from __future__ import annotations

import re

import numpy as np
import pytest

from xegen.emit.instruction import Instruction, Reg
from xegen.lower.program import Label, Op, Program, Span
from xegen.lower.sink import BUDGET_GRFS, sink_copies
from xegen.lower.values import VRegTable

from .harness import hand_spec, run_both

PLATFORMS = ["xelp", "xehpg", "xehpc"]
IOTA = "shuffle<0,1,2,3,4,5,6,7>(0, 1, 2, 3, 4, 5, 6, 7)"

# three gathers of 16-bit values (a dword per lane in the response: through a temporary), then
# arithmetic on what they loaded
GATHERS = f"""
alloc r[48] grf;
alloc s[32] grf;
send<op=load, kind=scattered, space=global, type=u16, count=8>(&x[0], {IOTA} * broadcast(6, 8), &r[0], null);
send<op=load, kind=scattered, space=global, type=u16, count=8>(&x[2], {IOTA} * broadcast(6, 8), &r[16], null);
send<op=load, kind=scattered, space=global, type=u16, count=8>(&x[4], {IOTA} * broadcast(6, 8), &r[32], null);
s[0] = (s32)r.u16x8[0] + (s32)r.u16x8[16] * broadcast(3, 8) - (s32)r.u16x8[32];
send<op=store, kind=block, space=global, type=s32, count=8>(&out[0], &s[0], null);
"""


@pytest.mark.parametrize("hw", PLATFORMS)
def test_a_run_of_gathers_is_in_flight_before_the_first_wait(hw):
    x = np.array([65535, 0, 1, 32768, 7, 40000] * 4, np.uint16)  # lane l reads x[3l], x[3l+1], x[3l+2]
    spec = hand_spec("gathers", GATHERS, [("x", "ptr"), ("out", "ptr")])
    simulated, interpreted, compiled = run_both(spec, hw, {"x": x, "out": np.zeros(8, np.int32)})
    triples = x.astype(np.int64).reshape(8, 3)
    expected = triples[:, 0] + 3 * triples[:, 1] - triples[:, 2]
    assert simulated["out"].tolist() == interpreted["out"].tolist() == expected.tolist()
    lines = compiled.assembly().splitlines()
    gathers = [i for i, line in enumerate(lines) if " send" in line][-5:-2]  # (then the store, the end)
    token = re.search(r"\$(\d+)\}", lines[gathers[0]]).group(1)
    first_wait = next(i for i, line in enumerate(lines) if f"${token}.dst" in line)
    assert gathers[2] < first_wait


def _op(reads=(), writes=(), name="mov", sinkable=False) -> Op:
    """An op with the given spans (the instruction itself does not matter to the pass)."""
    inst = Instruction(name, 1, dst=Reg("null", 0, 0, "ud"))
    return Op(inst, None, tuple(reads), tuple(writes), (), sinkable)


def test_a_move_stops_before_what_reads_its_bytes_a_label_and_the_budget():
    grf = 64
    program = Program(VRegTable(grf))
    temp = [Span(100 + i, 0, grf) for i in range(BUDGET_GRFS + 2)]
    move = [_op([temp[i]], [Span(1, i * grf, (i + 1) * grf)], sinkable=True) for i in range(3)]
    other = _op([Span(2, 0, 4)], [Span(3, 0, 4)], name="add")
    reader = _op([Span(1, grf, grf + 4)], [Span(3, 0, 4)], name="add")  # reads move 1's bytes
    program.items = [move[0], move[1], other, move[2], reader]
    sink_copies(program, grf)
    # move 1 (and move 0, before it) go just before the reader; move 2 stays held past it
    assert program.items == [other, move[0], move[1], reader, move[2]]

    program.items = [move[0], Label("L"), other]
    sink_copies(program, grf)
    assert program.items == [move[0], Label("L"), other]

    # a write to the temporary a held move reads
    overwrite = _op([], [temp[0]], name="add")
    program.items = [move[0], other, overwrite]
    sink_copies(program, grf)
    assert program.items == [other, move[0], overwrite]

    # more temporaries held than the budget: the oldest moves are placed
    many = [_op([t], [Span(50 + i, 0, 4)], sinkable=True) for i, t in enumerate(temp)]
    program.items = [*many, other]
    sink_copies(program, grf)
    assert program.items == [*many[:2], other, *many[2:]]
