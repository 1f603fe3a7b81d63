"""bench/simplify/random_run.py asks z3 about a peer's costlier result the sampled search does not
refute: the answer must be a real counterexample in xegen's wrapping semantics (checked by the
interpreter), within the declared ranges, and none for a result that is right."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from xegen import ir

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "simplify"))
from random_run import LIMITS, isolated_solved_counterexample, solved_counterexample  # noqa: E402


def test_a_rewrite_right_only_without_overflow_is_refuted():
    # Halide's max(b - y, b - y - 32) as b - y assumes b - y - 32 does not wrap (random0.382)
    a = ir.parse_expr("min(b, y) * 32 + max(b - y, b - y + -32)")
    found = solved_counterexample(a, ir.parse_expr("min(b, y) * 32 + (b - y)"), {})
    assert found is not None and found["input"] != found["result"]
    d = (found["b"] - found["y"] + (1 << 31)) % (1 << 32) - (1 << 31)  # b - y, wrapped to s32
    assert d < -(1 << 31) + 32  # where b - y - 32 wraps


def test_the_ranges_bound_the_search():
    a, b = ir.parse_expr("x < x + 1"), ir.parse_expr("true")
    assert solved_counterexample(a, b, {"x": range(0, 100)}) is None
    assert solved_counterexample(a, b, {})["x"] == (1 << 31) - 1  # x + 1 wraps at the largest s32


def test_a_right_result_has_no_counterexample():
    assert solved_counterexample(ir.parse_expr("x * 4 + x - y"), ir.parse_expr("x * 5 - y"), {}) is None


# random0.1391 at seed 0: Halide's result is wrong only where the products wrap, which z3 finds
WRAPS = (
    "max(-b - ((b <= 3378 ? 4 : 3) + -395) + 32, ((max(y, y * 270) % 3 >> 4) + 4736) * 4)"
    " != x * ((-y & 1023) * -x * -1) * 4 + ((-8 > 16 ? -x : -c) & 7) / 32",
    "32 - min((3378 < b ? -392 : -391) + b, -18912) != (0 - y) % 1024 * x * x * 4",
)


def test_a_z3_question_gets_the_same_answer_whatever_was_asked_before():
    """z3's answer within its resource bound depends on the questions its process asked before (in
    one process the same question twice gets two different models, and in a run of the bench
    "sat" once and "unknown" another time): the bench asks each in a fresh process."""
    a, b = (ir.parse_expr(x) for x in WRAPS)
    first = isolated_solved_counterexample(a, b, {})
    assert first is not None and first["input"] != first["result"]
    solved_counterexample(a, b, {})  # this process's z3 history changes
    solved_counterexample(ir.parse_expr("x * 3 + 1 != y"), ir.parse_expr("true"), {})
    assert isolated_solved_counterexample(a, b, {}) == first


def test_the_bench_has_no_wall_clock_bound():
    # a time bound stopped two saturations of seed 0 at an iteration that depended on the load
    assert math.isinf(LIMITS.seconds)
