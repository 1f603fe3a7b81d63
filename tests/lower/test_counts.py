"""Execution counts from a kernel's loops and branches (`xegen.lower.counts`) against the simulator's.

Every kernel the lowering and end-to-end tests build is also checked (tests/lower/harness.py);
these are the control-flow shapes picked out: loops with run-time bounds (none, one, several
trips), loops over a loop variable, branches on thread and group ids, an early end of thread,
and a branch on loaded data, which only a run can count.
"""

from __future__ import annotations

import numpy as np
import pytest

from xegen import sim
from xegen.errors import UnsupportedError
from xegen.lower import compile_kernel

from ..lower.harness import hand_spec

PLATFORMS = ("xelp", "xehpg", "xehpc")

STORE = "send<op=store, kind=block, space=global, type=s32, count=8>(&out[{at}], &r[0], null);\n"


def simulated(spec, hw, args, grid):
    compiled = compile_kernel(spec, hw)
    result = sim.run(compiled.zebin(), spec.name, args, compiled.global_size(grid), compiled.local_size)
    return compiled, result.executions


LOOP = """
alloc r[32] grf;
r[0] = broadcast(0, 8);
for (i = 0; i < n) {
  r[0] = r.s32x8[0] + broadcast(i, 8);
}
""" + STORE.format(at="(group_id0 * 2 + thread_id0) * 32")


@pytest.mark.parametrize("hw", PLATFORMS)
@pytest.mark.parametrize("trips", [0, 1, 5])
def test_a_loop_with_a_run_time_bound(hw, trips):
    spec = hand_spec("loop", LOOP, [("out", "ptr"), ("n", "s32")], thread_group=(2, 1, 1))
    grid = (3, 1, 1)
    compiled, executions = simulated(spec, hw, [np.zeros(8 * 6, np.int32), trips], grid)
    static = compiled.executions(grid, {"n": trips})
    assert static == executions
    # by hand: 6 threads run the prologue once and the loop body `trips` times
    assert static[0] == 6 and max(static) == 6 * max(trips, 1)


NESTED = """
alloc r[32] grf;
r[0] = broadcast(0, 8);
for (i = 0; i < group_id0 + 2) {
  for (j = i; j < 4) {
    r[0] = r.s32x8[0] + broadcast(i * j, 8);
  }
  if (i % 2 == thread_id1) {
    r[0] = r.s32x8[0] + broadcast(1, 8);
  }
}
""" + STORE.format(at="(group_id0 * 2 + thread_id1) * 32")


@pytest.mark.parametrize("hw", PLATFORMS)
def test_loops_and_branches_over_loop_variables_and_ids(hw):
    spec = hand_spec("nested", NESTED, [("out", "ptr")], thread_group=(1, 2, 1))
    grid = (3, 1, 1)
    compiled, executions = simulated(spec, hw, [np.zeros(8 * 6, np.int32)], grid)
    assert compiled.executions(grid) == executions
    # a guard for each loop of run-time bound, the inner back edge, the if, the outer back edge
    assert [b.kind for b in compiled.control.branches] == ["guard", "guard", "loop", "if", "loop"]


EARLY_END = """
alloc r[32] grf;
r[0] = broadcast(group_id1, 8);
if (thread_id0 + group_id1 == 2) {
  send<op=store, kind=block, space=global, type=s32, count=8>(&out[(group_id1 * 2 + thread_id0) * 32], &r[0], null);
  eot();
} else {
  r[0] = r.s32x8[0] + broadcast(100, 8);
}
r[0] = r.s32x8[0] + broadcast(1, 8);
""" + STORE.format(at="(group_id1 * 2 + thread_id0) * 32")


@pytest.mark.parametrize("hw", PLATFORMS)
def test_an_early_end_of_thread_on_some_threads(hw):
    spec = hand_spec("early", EARLY_END, [("out", "ptr")], thread_group=(2, 1, 1))
    grid = (1, 3, 1)
    compiled, executions = simulated(spec, hw, [np.zeros(8 * 6, np.int32)], grid)
    static = compiled.executions(grid)
    assert static == executions
    # by hand: 2 of the 6 threads (thread 0 of group 2, thread 1 of group 1) end early
    assert static[0] == 6 and static[-1] == 4


DATA_BRANCH = """
alloc r[32] grf;
let v = x.s32[group_id0 * 4];
r[0] = broadcast(0, 8);
if (v > 3) {
  r[0] = broadcast(v, 8);
}
""" + STORE.format(at="group_id0 * 32")


def test_a_branch_on_loaded_data_needs_a_run():
    compiled = compile_kernel(hand_spec("data", DATA_BRANCH, [("x", "ptr"), ("out", "ptr")]), "xehpg")
    with pytest.raises(UnsupportedError, match="simulator"):
        compiled.executions((2, 1, 1))


def test_a_missing_scalar_argument_is_named():
    compiled = compile_kernel(hand_spec("loop", LOOP, [("out", "ptr"), ("n", "s32")]), "xehpg")
    with pytest.raises(UnsupportedError, match="'n'"):
        compiled.executions((1, 1, 1))
