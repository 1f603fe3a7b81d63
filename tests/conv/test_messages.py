"""SLM messages: rows that follow each other in the SLM tile and in the registers go as one block."""

from __future__ import annotations

from xegen.conv import build_kernel, make_problem
from xegen.conv.messages import merge_contiguous_lines
from xegen.conv.tiles import Line
from xegen.ir import Call, Send, walk


def test_rows_that_follow_each_other_join_up_to_the_message_limit():
    # four rows of 16 elements, pitch 16 (whole rows), registers back to back: two blocks of 32
    rows = [Line(other=y, start=0, length=16, base=16 * y) for y in range(4)]
    assert merge_contiguous_lines(rows, pitch=16, max_length=32) == [Line(0, 0, 32, 0), Line(2, 0, 32, 32)]


def test_rows_with_gaps_stay_apart():
    # pitch 64: a thread's 32 columns of each row are not contiguous in SLM
    strided = [Line(other=y, start=0, length=32, base=32 * y) for y in range(3)]
    assert merge_contiguous_lines(strided, pitch=64, max_length=128) == strided
    # contiguous in SLM but not in the registers
    scattered = [Line(0, 0, 16, 0), Line(1, 0, 16, 64)]
    assert merge_contiguous_lines(scattered, pitch=16, max_length=128) == scattered


def test_a_dpas_kernel_stores_each_threads_a_rows_with_one_message():
    kernel = build_kernel(make_problem("mb1ic64ih56oc64oh56kh3ph1", dt="f16"), "xehpg")
    slm_stores = [n for n in walk(kernel.body) if isinstance(n, Call) and isinstance(n.func, Send)
                  and n.func.space == "slm" and n.func.op == "store"]
    # 8 rows of 16 halves per thread went as 8 messages of 32 bytes before the merge
    assert slm_stores and all(s.func.count * s.func.type.size == 256 for s in slm_stores)
