"""Dead-code elimination between instruction selection and register allocation: what nobody
reads costs no instruction, and what somebody may read (old bytes a masked load keeps) stays."""

from __future__ import annotations

import numpy as np
import pytest

from xegen.lower import compile_kernel

from .harness import hand_spec, run_both

KERNEL = """
alloc r[64] grf;
send<op=load, kind=block, space=global, type=s32, count=8>(&x[0], &r[0], null);
{extra}
r[0] = r.s32x8[0] * broadcast(3, 8);
send<op=store, kind=block, space=global, type=s32, count=8>(&out[0], &r[0], null);
"""

ARGS = [("x", "ptr"), ("out", "ptr")]


@pytest.mark.parametrize("hw", ["xelp", "xehpg", "xehpc"])
def test_values_nobody_reads_cost_no_instructions(hw):
    plain = compile_kernel(hand_spec("k", KERNEL.format(extra=""), ARGS), hw)
    # a product nobody reads and a vector nobody reads
    extra = "let unused = group_id0 * 12345 + thread_id0;\nr[32] = broadcast(7, 8) + r.s32x8[0];"
    padded = compile_kernel(hand_spec("k", KERNEL.format(extra=extra), ARGS), hw)
    assert padded.stats.instructions == plain.stats.instructions
    x = np.arange(-4, 4, dtype=np.int32)
    simulated, interpreted, _ = run_both(
        hand_spec("k", KERNEL.format(extra=extra), ARGS), hw, {"x": x, "out": np.zeros(8, np.int32)}
    )
    assert simulated["out"].tolist() == interpreted["out"].tolist() == (x * 3).tolist()


def test_a_dpas_whose_result_is_overwritten_is_dropped():
    text = """
alloc acc[32] grf;
alloc a[32] grf;
alloc b[256] grf;
send<op=load, kind=block, space=global, type=u8, count=32>(&x[0], &a[0], null);
send<op=load, kind=block, space=global, type=u8, count=256>(&x[32], &b[0], null);
dpas<exec_size=8, sdepth=8, rcount=1, dst_type=s32, src1_type=s8, src2_type=s8>(&acc[0], null, &b[0], &a[0]);
dpas<exec_size=8, sdepth=8, rcount=1, dst_type=s32, src1_type=u8, src2_type=u8>(&acc[0], null, &b[0], &a[0]);
send<op=store, kind=block, space=global, type=s32, count=8>(&out[0], &acc[0], null);
"""
    spec = hand_spec("dpas", text, ARGS)
    assert compile_kernel(spec, "xehpg").stats.fma_instructions == 1
    x = np.random.default_rng(1).integers(0, 256, 288, dtype=np.uint8)
    simulated, interpreted, _ = run_both(spec, "xehpg", {"x": x, "out": np.zeros(8, np.int32)})
    a, b = x[:32].astype(np.int64).reshape(8, 4), x[32:].astype(np.int64).reshape(8, 8, 4)
    expected = np.einsum("kj,knj->n", a, b)  # the unsigned product is the one stored
    assert simulated["out"].tolist() == interpreted["out"].tolist() == expected.tolist()


FILLED = """
alloc r[128] grf;
{fill}
send<op=load, kind={kind}, space=global, type=s32, count={count}>(&x[0], {slots}&r[0], {mask});
send<op=store, kind=block, space=global, type=s32, count=32>(&out[group_id0 * 128], &r[0], null);
"""
LANES = ",".join(map(str, range(32)))
OFFSETS = f"shuffle<{LANES}>(" + ", ".join(str(4 * (31 - i)) for i in range(32)) + "), "  # reversed
IOTA = f"shuffle<{LANES}>({', '.join(map(str, range(32)))})"


@pytest.mark.parametrize("hw", ["xelp", "xehpg", "xehpc"])
@pytest.mark.parametrize(
    "kind, count, mask, overwritten",
    [
        ("block", 32, "null", True),  # the response fills all 128 bytes
        ("block", 3, "null", False),  # 12 bytes: the zeros after them are read by the store
        ("block", 32, "group_id0 > 0", False),  # a masked-off load leaves the zeros
        ("scattered", 32, "null", True),  # every lane's dword
        ("scattered", 32, f"{IOTA} < broadcast(group_id0 * 9 + 5, 32)", False),  # masked lanes keep their zeros
    ],
)
def test_a_zero_fill_the_load_overwrites_is_dropped(hw, kind, count, mask, overwritten):
    """Message responses end the life of exactly the bytes they write: only unpredicated sends
    (every lane on), and only the bytes of the response, not the rest of its last GRF."""

    def spec(fill: str):
        text = FILLED.format(fill=fill, kind=kind, count=count, mask=mask, slots="" if kind == "block" else OFFSETS)
        return hand_spec("filled", text, ARGS)

    filled = spec("r[0] = broadcast(0, 32);")
    plain = compile_kernel(spec(""), hw).stats.instructions
    assert (compile_kernel(filled, hw).stats.instructions == plain) == overwritten
    x = np.arange(-40, 24, dtype=np.int32) * 1000003
    simulated, interpreted, _ = run_both(filled, hw, {"x": x, "out": np.full(64, 7, np.int32)}, grid=(2, 1, 1))
    assert simulated["out"].tolist() == interpreted["out"].tolist()
    assert 0 in interpreted["out"].tolist() or overwritten  # the zeros the fill leaves are checked
