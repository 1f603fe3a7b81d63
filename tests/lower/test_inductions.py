"""A loop's affine index arithmetic is stepped in registers (`lower/inductions.py`) and its
invariant masks are set once in front of it (`lower/flags.py`): the kernels agree with the
interpreter (steps that wrap past 2^32, a negative step, zero trips), and the loop runs none of
the affine multiplies nor the invariant mask's comparisons, while what is not affine (i * i) or
not invariant (a mask on i) stays in it."""

from __future__ import annotations

import numpy as np
import pytest

from xegen.ir import parse_expr, parse_stmt
from xegen.lower.inductions import LoopInductions

from .harness import hand_spec, run_both

PLATFORMS = ("xelp", "xehpg", "xehpc")
LANES = "shuffle<0,1,2,3,4,5,6,7>(0, 4, 8, 12, 16, 20, 24, 28)"

# a: a block's offset (bytes), affine in i; the gathers' addresses step by 96 bytes a trip, under
# a mask the loop does not change, then (in a second loop) under one it does; w's step,
# 124076833 - 12, wraps s32 from i = 18; i * i is not affine
KERNEL = f"""
alloc acc[32] grf;
alloc row[32] grf;
let lanes:s32x8 = {LANES};
let limit = base * 8;
acc[0] = broadcast(0, 8);
for (i = 0; i < n) {{
  let a = i * 96 + base * 4 + group_id0 * 32;
  send<op=load, kind=block, space=global, type=s32, count=8>(&x[a], &row[0], null);
  acc[0] = acc.s32x8[0] + row.s32x8[0];
  send<op=load, kind=scattered, space=global, type=s32, count=8>(&x[0],
      lanes + broadcast(i * 96 + base * 4 + 4, 8), &row[0],
      broadcast(base < 100, 8) && lanes < broadcast(limit, 8));
  let w = i * 124076833 + (7 - i) * 12 + base * 3 + group_id0;
  acc[0] = acc.s32x8[0] + row.s32x8[0] + broadcast(w, 8) + broadcast(i * i, 8);
}}
for (j = 0; j < n) {{
  send<op=load, kind=scattered, space=global, type=s32, count=8>(&x[0],
      lanes + broadcast(j * 96 + base * 4 + 8, 8), &row[0], lanes < broadcast(j * 8, 8));
  acc[0] = acc.s32x8[0] + row.s32x8[0];
}}
send<op=store, kind=block, space=global, type=s32, count=8>(&out[group_id0 * 32], &acc[0], null);
"""


def spec():
    return hand_spec("inductions", KERNEL, [("x", "ptr"), ("out", "ptr"), ("n", "s32"), ("base", "s32")])


def in_loop(compiled, grid, scalars, trips):
    """The opcodes of the instructions that run once per trip of the loop."""
    counts = compiled.executions(grid, scalars)
    threads = counts[0]
    return [inst.opcode for inst, n in zip(compiled.instructions, counts, strict=True) if n == threads * trips]


@pytest.mark.parametrize("hw", PLATFORMS)
@pytest.mark.parametrize("trips", [0, 1, 5, 20])
def test_stepped_index_arithmetic_matches_the_interpreter(hw, trips):
    scalars = {"n": trips, "base": 3}
    x = np.arange(32 + 24 * 20 + 64, dtype=np.int32) * 7 - 1000
    buffers = {"x": x, "out": np.full(16, 5, np.int32)}
    grid = (2, 1, 1)
    simulated, interpreted, compiled = run_both(spec(), hw, buffers, scalars, grid)
    assert simulated["out"].tobytes() == interpreted["out"].tobytes()
    assert (simulated["out"] != 5).all()
    if trips == 5:
        ops = in_loop(compiled, grid, scalars, trips)
        # the multiplies left in the loops are i * i and the mask's j * 8 (one operation: no
        # register of its own); the invariant mask's two comparisons went in front of the
        # first loop, the mask on j (one) and the loops' own (one each) stay
        assert ops.count("mul") == 2, ops
        assert ops.count("cmp") == 3, ops


def test_the_slope_of_affine_expressions():
    body = parse_stmt("let t = i * 2;\nout[t] = b;")  # t is bound inside: it may change each trip
    loop = LoopInductions(parse_expr("i"), parse_expr("0"), body, 0)
    assert loop.slope(parse_expr("i * 96 + b * 4 + 32")) == 96
    assert loop.slope(parse_expr("(7 - i) * 12 + b")) == -12
    assert loop.slope(parse_expr("(i << 3) + i * 2 - b")) == 10
    assert loop.slope(parse_expr("b * 3 + 1")) == 0
    assert loop.slope(parse_expr("t + 1")) is None
    assert loop.slope(parse_expr("i * i + 1")) is None
    assert loop.slope(parse_expr("i * b + 1")) is None  # (a step known only at run time)
    assert loop.slope(parse_expr("i / 2 + 1")) is None
    assert loop.slope(parse_expr("mad(b * 2, i, 5)")) == 5  # (b * 2 + i * 5)
    assert loop.slope(parse_expr("mad(i, b, b)")) == 1
    assert loop.slope(parse_expr("mad(b, i, b)")) is None


# a loop inside an if's then-part whose condition sets the flag the loop's invariant mask uses:
# the mask moves in front of the loop, inside the then-part (in front of the if's `cmp`, the
# condition would overwrite its lane 0)
IF_LOOP = f"""
alloc acc[32] grf;
alloc row[32] grf;
let lanes:s32x8 = {LANES};
let limit = base * 4;
acc[0] = broadcast(7, 8);
if (base > 0) {{
  for (i = 0; i < 3) {{
    row[0] = broadcast(0, 8);
    send<op=load, kind=scattered, space=global, type=s32, count=8>(&x[0],
        lanes + broadcast(i * 32 + base * 4 + group_id0 * 4, 8), &row[0], lanes >= broadcast(limit, 8));
    acc[0] = acc.s32x8[0] + row.s32x8[0];
  }}
}}
send<op=store, kind=block, space=global, type=s32, count=8>(&out[group_id0 * 32], &acc[0], null);
"""


@pytest.mark.parametrize("hw", PLATFORMS)
def test_a_mask_hoisted_out_of_a_loop_inside_an_if(hw):
    kernel = hand_spec("if_loop", IF_LOOP, [("x", "ptr"), ("out", "ptr"), ("base", "s32")])
    x = np.arange(64, dtype=np.int32) + 100
    buffers = {"x": x, "out": np.full(16, 5, np.int32)}
    simulated, interpreted, compiled = run_both(kernel, hw, buffers, {"base": 1}, (2, 1, 1))
    assert simulated["out"].tobytes() == interpreted["out"].tobytes()
    assert simulated["out"][0] == 7 and simulated["out"][1] != 7  # lane 0 masked off, lane 1 not
    ops = in_loop(compiled, (2, 1, 1), {"base": 1}, 3)
    assert ops.count("cmp") == 1, ops  # the loop's own: the mask went in front of the loop
