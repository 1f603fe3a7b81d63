"""GRF bank rules, checked on the final instructions of compiled kernels by a reading of their
operands written here (not the allocator's own bookkeeping).

Facts (docs/lowering.md, Register banks; nGEN's Bundle::locate): register rN is in bank
N & 1 on XeLP and XeHPC, (N >> 1) & 1 on XeHPG.  Performance rules (a conflict costs cycles,
never a wrong result): dpas src0 and src2 in different banks; a three-source instruction, which
runs one GRF of 32-bit lanes per pass, not reading all three sources of a pass from one bank.
Hard rules (always kept): every dpas operand starts a GRF, and the destination is src0 exactly
or overlaps no source (conservatively: the array may write it while it still reads).
"""

from __future__ import annotations

import numpy as np
import pytest

from xegen.conv import make_problem
from xegen.errors import UnsupportedError
from xegen.lower import compile_kernel
from xegen.pipeline import compile_problem

from ..conv.shapes import RESNET, scaled
from .harness import hand_spec, run_both

BANK = {"xelp": lambda n: n & 1, "xehpg": lambda n: (n >> 1) & 1, "xehpc": lambda n: n & 1}
GRF_BYTES = {"xelp": 32, "xehpg": 32, "xehpc": 64}
TYPE_BYTES = {"b": 1, "ub": 1, "w": 2, "uw": 2, "hf": 2, "bf": 2, "d": 4, "ud": 4, "f": 4, "q": 8, "uq": 8, "df": 8}
THREE_SOURCE = ("mad", "dp4a", "add3", "bfn", "csel")


def lane_element(src, index: int, lane: int) -> int:
    """Which element of a three-source operand lane `lane` reads (src2 and destinations have
    one stride; src0/src1 <v;h> have rows of v/h elements, one element a row when h is 0)."""
    if index == 2 or src.vstride is None:
        return lane * (src.hstride or 0)
    if not src.hstride:
        return lane * src.vstride
    width = src.vstride // src.hstride
    return (lane // width) * src.vstride + (lane % width) * src.hstride


def register_of(src, element: int, grf: int) -> int:
    return (src.number * grf + (src.subreg + element) * TYPE_BYTES[src.type]) // grf


def bank_report(instructions, hw: str) -> dict:
    """Counts of dpas and three-source passes and of those breaking a rule."""
    grf, bank = GRF_BYTES[hw], BANK[hw]
    report = {"dpas": 0, "dpas_conflicts": 0, "passes": 0, "pass_conflicts": 0, "illegal": []}
    for inst in instructions:
        if inst.opcode in ("dpas", "dpasw"):
            report["dpas"] += 1
            dst, src0, src1, src2 = inst.dst, *inst.srcs
            operands = [
                (name, op)
                for name, op in (("dst", dst), ("src0", src0), ("src1", src1), ("src2", src2))
                if op.file == "r"
            ]
            if any(op.subreg for _, op in operands):
                report["illegal"].append(("misaligned", inst))
            rows = inst.repeat_count
            a_rows = -(-rows // 2) if inst.opcode == "dpasw" else rows  # dpasw: the fused partner has the rest
            sizes = {
                "dst": rows * inst.exec_size * TYPE_BYTES[dst.type],
                "src0": rows * inst.exec_size * TYPE_BYTES[src0.type],
                "src1": inst.systolic_depth * inst.exec_size * 4,
                "src2": a_rows * inst.systolic_depth * 4,
            }
            if dst.file == "r":
                d0, d1 = dst.number * grf, dst.number * grf + sizes["dst"]
                for name, op in operands[1:]:
                    s0, s1 = op.number * grf, op.number * grf + sizes[name]
                    overlap = s0 < d1 and d0 < s1
                    if overlap and not (name == "src0" and (s0, s1) == (d0, d1)):
                        report["illegal"].append(("overlap", inst))
            if src0.file == "r" and bank(src0.number) == bank(src2.number):
                report["dpas_conflicts"] += 1
        elif inst.opcode in THREE_SOURCE and all(getattr(s, "file", None) == "r" for s in inst.srcs):
            for lane in range(0, inst.exec_size, grf // 4):
                registers = [register_of(s, lane_element(s, i, lane), grf) for i, s in enumerate(inst.srcs)]
                report["passes"] += 1
                if len(set(registers)) > 1 and len({bank(r) for r in registers}) == 1:
                    report["pass_conflicts"] += 1
    return report


# XeHPG three-source instructions in these kernels cannot all avoid conflicts: the mad's scalar
# factor comes from consecutive GRFs row after row (banks 0,0,1,1,... with the row) while the
# accumulator rows alternate banks every row (two GRFs each) and the other factor's chunks
# alternate too, so whatever the placement a quarter of the passes read one bank (the bias
# reduction of backward weights, a constant 1.0 against four consecutive accumulator GRFs,
# likewise).  Everywhere else every conflict can be, and must be, avoided.
CASES = [
    ("xehpg", "FWD_B", "f16", 0, {}),
    ("xehpg", "BWD_D", "bf16", 0, {}),
    ("xehpg", "BWD_WB", "bf16", 4, {}),
    ("xehpg", "FWD_B", "f32", 4, {}),
    ("xehpg", "BWD_WB", "f32", 4, {}),
    ("xelp", "FWD_B", "f32", 0, {}),
    ("xelp", "FWD_B", "u8:s8:f32", 0, {}),
    ("xehpc", "FWD_B", "bf16", 0, {}),
    ("xehpg", "FWD_B", "f16", 0, {"fma": "dpasw", "m_tile": 16, "n_tile": 16}),
]


@pytest.mark.parametrize(
    "hw, direction, dt, quarter, overrides",
    [pytest.param(*c, id="-".join(c[:3] + tuple(str(v) for v in c[4].values()))) for c in CASES],
)
def test_conv_kernels_keep_the_bank_rules(hw, direction, dt, quarter, overrides):
    """`quarter` 4: at most a quarter of the three-source passes may conflict (see above)."""
    compilation = compile_problem(make_problem(scaled(RESNET[5]), direction, dt, mb=1), hw, overrides)
    report = bank_report(compilation.compiled.instructions, hw)
    assert report["illegal"] == []
    assert report["dpas"] + report["passes"] > 0
    assert report["dpas_conflicts"] == 0, report
    if quarter:
        assert report["pass_conflicts"] * quarter <= report["passes"], report
    else:
        assert report["pass_conflicts"] == 0, report


MAD_KERNEL = """
alloc c[64] grf;
alloc d[64] grf;
alloc b[64] grf;
alloc a[32] grf;
send<op=load, kind=block, space=global, type=f32, count=16>(&x[0], &c[0], null);
send<op=load, kind=block, space=global, type=f32, count=16>(&x[0], &d[0], null);
send<op=load, kind=block, space=global, type=f32, count=16>(&x[64], &b[0], null);
send<op=load, kind=block, space=global, type=f32, count=8>(&x[128], &a[0], null);
mad<exec_size=16, dst_type=f32, src1_type=f32, src2_type=f32, src1_stride=1, src2_stride=0>(
    &c[0], &c[0], &b[0], &a[{k}]);
send<op=store, kind=block, space=global, type=f32, count=16>(&out[0], &c[0], null);
send<op=store, kind=block, space=global, type=f32, count=16>(&out[64], &d[0], null);
"""


@pytest.mark.parametrize("hw", ["xelp", "xehpg"])
def test_a_mad_reads_its_sources_from_both_banks(hw):
    """Packed back to back (c, d, b, a from r1 up), the mad would read c, b and a of one pass
    from one bank on both platforms unless the allocator moves one of them."""
    x = np.linspace(-3.5, 4.0, 40).astype(np.float32)
    for k in range(8):
        spec = hand_spec("mad", MAD_KERNEL.format(k=4 * k), [("x", "ptr"), ("out", "ptr")])
        report = bank_report(compile_kernel(spec, hw).instructions, hw)
        assert report["passes"] > 0 and report["pass_conflicts"] == 0, (k, report)
    simulated, interpreted, _ = run_both(spec, hw, {"x": x, "out": np.zeros(32, np.float32)})
    assert simulated["out"].tolist() == interpreted["out"].tolist()
    assert np.allclose(simulated["out"], np.concatenate([x[:16] + x[16:32] * x[32 + 7], x[:16]]))


DPAS_KERNEL = """
alloc acc[512] grf;
alloc a[256] grf;
alloc b[256] grf;
send<op=load, kind=block, space=global, type=u8, count=256>(&x[0], &a[0], null);
send<op=load, kind=block, space=global, type=u8, count=256>(&x[256], &b[0], null);
send<op=load, kind=block, space=global, type=s32, count=64>(&y[0], &acc[0], null);
dpas<exec_size=8, sdepth=8, rcount=8, dst_type=s32, src1_type=s8, src2_type=s8>{operands};
send<op=store, kind=block, space=global, type=s32, count=64>(&out[0], &acc[0], null);
"""
DPAS_ARGS = [("x", "ptr"), ("y", "ptr"), ("out", "ptr")]


def test_a_dpas_reads_src0_and_src2_from_different_banks():
    spec = hand_spec("dpas", DPAS_KERNEL.format(operands="(&acc[0], &acc[0], &b[0], &a[0])"), DPAS_ARGS)
    report = bank_report(compile_kernel(spec, "xehpg").instructions, "xehpg")
    assert report["dpas"] == 1 and report["dpas_conflicts"] == 0 and report["illegal"] == []
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, 512, dtype=np.uint8)
    y = rng.integers(-1000, 1000, 64, dtype=np.int32)
    simulated, interpreted, _ = run_both(spec, "xehpg", {"x": x, "y": y, "out": np.zeros(64, np.int32)})
    a = x[:256].view(np.int8).astype(np.int64).reshape(8, 8, 4)  # rows, k groups, 4 values
    b = x[256:].view(np.int8).astype(np.int64).reshape(8, 8, 4)  # k groups, columns, 4 values
    expected = y.reshape(8, 8) + np.einsum("rkj,knj->rn", a, b)
    assert simulated["out"].tolist() == interpreted["out"].tolist() == expected.reshape(-1).tolist()


@pytest.mark.parametrize(
    "operands",
    [
        "(&acc[0], &acc[32], &b[0], &a[0])",
        "(&acc[0], &acc[0], &acc[128], &a[0])",
        "(&acc[256], null, &b[0], &acc[256])",
    ],
)
def test_a_dpas_destination_overlapping_a_source_is_rejected(operands):
    spec = hand_spec("dpas", DPAS_KERNEL.format(operands=operands), DPAS_ARGS)
    with pytest.raises(UnsupportedError, match="overlaps"):
        compile_kernel(spec, "xehpg")
