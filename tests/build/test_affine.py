"""Message addresses and bounds split into a loop-invariant part and a per-iteration scalar, and
views addressed linearly along a GEMM dimension."""

from __future__ import annotations

import numpy as np
import pytest

from xegen.build.affine import affine, merge_bounds, split_bound, split_offset
from xegen.conv import make_problem
from xegen.ir import Call, For, Send, Var, evaluate, free_vars, walk
from xegen.ir.expr import Broadcast, IntImm
from xegen.ir.types import S32, Type
from xegen.pipeline import build_kernel
from xegen.plan import formulate
from xegen.plan.gemm import linear_stride

LANES = 8
V = Type("s32", LANES)
oh, ow = Var("oh", V), Var("ow", V)  # fixed before the loop, one value per lane
kh, kw, ic = Var("kh", S32), Var("kw", S32), Var("ic", S32)  # per iteration, one value for all
VARIANT = {kh, kw, ic}


def b(e):
    return Broadcast(e, LANES) if e.type.lanes == 1 else e


def _source_offset():
    """The forward source of a 3x3 padding-1 layer, 7x7 input, 512 channels, in bytes (f16)."""
    ih = oh + b(kh) - b(IntImm(1))
    iw = ow + b(kw) - b(IntImm(1))
    return (b(ic) + ih * b(IntImm(3584)) + iw * b(IntImm(512))) * b(IntImm(2))


def _envs(seed=0, count=20):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield {
            "oh": rng.integers(-7, 8, LANES, dtype=np.int32),
            "ow": rng.integers(-7, 8, LANES, dtype=np.int32),
            "kh": np.int32(rng.integers(-3, 3)),
            "kw": np.int32(rng.integers(-3, 3)),
            "ic": np.int32(rng.integers(-512, 512)),
        }


def test_affine_form_of_the_source_offset():
    terms, constant = affine(_source_offset())
    assert terms == {ic: 2, oh: 7168, kh: 7168, ow: 1024, kw: 1024}
    assert constant == -(7168 + 1024)


def test_split_offset_binds_the_fixed_vector_and_adds_one_scalar():
    bound = []

    def bind(e):
        bound.append(e)
        return Var("fixed", e.type)

    offset = _source_offset()
    split = split_offset(offset, VARIANT, bind)
    assert len(bound) == 1 and not VARIANT.intersection(free_vars(bound[0]))  # nothing per iteration in it
    assert split.op == "add" and split.a == Var("fixed", V) and isinstance(split.b, Broadcast)
    assert set(free_vars(split.b)) <= VARIANT  # the per-iteration part is one scalar
    for env in _envs():
        env_split = {**env, "fixed": evaluate(bound[0], env)}
        assert np.array_equal(evaluate(split, env_split), evaluate(offset, env))


@pytest.mark.parametrize("op", ["le", "lt", "ge", "gt"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_split_bound_keeps_the_lane_values_alone_on_their_side(op, side):
    ih = oh + b(kh) - b(IntImm(1))
    condition = _compare(op, ih, b(IntImm(7))) if side == "left" else _compare(op, b(IntImm(0)), ih)
    split = split_bound(condition, VARIANT, lambda e: e)
    vector_side, scalar_side = (split.a, split.b) if side == "left" else (split.b, split.a)
    assert vector_side == oh and isinstance(scalar_side, Broadcast)
    for env in _envs(1, 40):
        assert np.array_equal(evaluate(split, env), evaluate(condition, env))


def _compare(op, x, y):
    return {"le": x <= y, "lt": x < y, "ge": x >= y, "gt": x > y}[op]


def test_a_bound_without_per_iteration_terms_stays():
    condition = oh < b(IntImm(7))
    assert split_bound(condition, VARIANT, lambda e: e) is condition


@pytest.mark.parametrize(
    "desc, view, dim, stride",
    [
        ("mb1ic512ih7oc512oh7kh3ph1", "b", "k", 512),  # weights hwio: kh, kw, ic nested as in K
        ("mb1ic512ih7oc512oh7kh3ph1", "c", "m", 512),  # dst nhwc: oh, ow nested as in M
        ("mb1ic512ih7oc512oh7kh3ph1", "a", "m", None),  # source with padding: ih, iw are bounds-checked
        # 1x1 unpadded: every in-range pixel reads inside (no iw < IW), oh, ow nested as in M
        ("mb1ic8ih4oc32oh4kh1ph0", "a", "m", 8),
        ("mb1ic8ih4oc32kh3ph0", "a", "m", None),  # 3x3 unpadded: rows of 2 outputs in rows of 4
        ("mb1ic512ih7oc512oh7kh3ph1", "a", "k", None),  # kh, kw move the input position
    ],
)
def test_linear_stride(desc, view, dim, stride):
    gemm = formulate(make_problem(desc, "FWD_D", "f16"))
    assert linear_stride(getattr(gemm, view), gemm.dim(dim)) == stride


def test_a_blocked_layout_is_not_linear():
    gemm = formulate(make_problem("mb1ic32ih7oc32oh7kh3ph1", "FWD_D", "f32", dtag="nChw16c"))
    assert linear_stride(gemm.c, gemm.m) == 16  # ow steps 16 (a channel block), oh 7 * 16: nested
    assert linear_stride(gemm.c, gemm.n) is None  # oc / 16, oc % 16


def test_split_offset_of_a_scalar_binds_its_fixed_part():
    """One block message per tile row: the row's own part (oh, ow) bound before the loop, the
    iteration's (kh, kw, ic) added to it."""
    o_h, o_w = Var("o_h", S32), Var("o_w", S32)
    offset = (ic + (o_h + kh - IntImm(1)) * IntImm(3584) + (o_w + kw - IntImm(1)) * IntImm(512)) * IntImm(2)
    bound = []

    def bind(e):
        bound.append(e)
        return Var("fixed", S32)

    split = split_offset(offset, VARIANT, bind)
    assert len(bound) == 1 and set(free_vars(bound[0])) == {o_h, o_w}
    assert split.op == "add" and split.a == Var("fixed", S32) and set(free_vars(split.b)) <= VARIANT
    rng = np.random.default_rng(3)
    for _ in range(20):
        env = {name: np.int32(rng.integers(-100, 100)) for name in ("o_h", "o_w", "kh", "kw", "ic")}
        assert evaluate(split, {**env, "fixed": evaluate(bound[0], env)}) == evaluate(offset, env)


def _block_offsets(kernel, buffer):
    """The offsets of the block messages reading `buffer` in the K loop."""
    (loop,) = [n for n in walk(kernel.body) if isinstance(n, For)][:1]
    sends = [n for n in walk(loop) if isinstance(n, Call) and isinstance(n.func, Send) and n.func.kind == "block"]
    return [n.args[0].offset for n in sends if n.args[0].buffer.name == buffer]


def test_checked_rows_get_their_own_fixed_part_linear_rows_do_not():
    """XeLP bf16, 3x3: the source rows of a tile are bounds-checked (padding), so each gets a
    `fixed` let before the loop; the weight rows (a view addressed linearly, checked by nothing)
    lie at constant distances and keep sharing one pointer.  (bf16: mad widens A on the way, so
    its rows stay block messages; f32's are gathered, a pixel per lane, `plan.kernel.gathered_a`.)"""
    problem = make_problem("mb1ic128ih28oc128oh28kh3ph1", dt="bf16")
    kernel = build_kernel(problem, "xelp", {"fma": "mad", "m_tile": 8, "n_tile": 32})
    src, wei = _block_offsets(kernel, "src"), _block_offsets(kernel, "wei")
    assert src and wei
    assert all(any(v.name.startswith("fixed") for v in free_vars(o)) for o in src)
    assert not any(v.name.startswith("fixed") for o in wei for v in free_vars(o))


# An im2col gather (a first layer's A): one K position per lane, so kh, kw, ic are vectors that
# change per iteration and the pixel (o_h, o_w) is one value for all lanes, fixed before the loop.
o_h, o_w = Var("o_h", S32), Var("o_w", S32)
kh_lanes, kw_lanes, ic_lanes = Var("kh_lanes", V), Var("kw_lanes", V), Var("ic_lanes", V)
LANE_VARIANT = {kh_lanes, kw_lanes, ic_lanes}


def _gathered_offset():
    """The source of a 7x7 stride-2 padding-3 layer, 224 wide, 3 channels, in bytes (bf16)."""
    ih = b(o_h * IntImm(2)) + kh_lanes - b(IntImm(3))
    iw = b(o_w * IntImm(2)) + kw_lanes - b(IntImm(3))
    return (ic_lanes + ih * b(IntImm(672)) + iw * b(IntImm(3))) * b(IntImm(2))


def _lane_envs(seed, count=20):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield {
            "o_h": np.int32(rng.integers(-5, 120)),
            "o_w": np.int32(rng.integers(-5, 120)),
            "kh_lanes": rng.integers(-3, 10, LANES, dtype=np.int32),
            "kw_lanes": rng.integers(-3, 10, LANES, dtype=np.int32),
            "ic_lanes": rng.integers(-3, 4, LANES, dtype=np.int32),
        }


def test_split_offset_along_the_lanes_shares_the_iterations_vector():
    """Every message of an iteration adds its own uniform scalar to one per-iteration vector:
    `bind_changing` gets the vector (no pixel in it), `bind` the pixel's part (no lane in it)."""
    fixed, changing = [], []

    def bind(e):
        fixed.append(e)
        return Var("fixed", e.type)

    def bind_changing(e):
        changing.append(e)
        return Var("lane_offset", e.type)

    offset = _gathered_offset()
    split = split_offset(offset, LANE_VARIANT, bind, bind_changing)
    assert len(fixed) == 1 and fixed[0].type == S32 and set(free_vars(fixed[0])) == {o_h, o_w}
    assert len(changing) == 1 and set(free_vars(changing[0])) == LANE_VARIANT
    assert split == Var("lane_offset", V) + Broadcast(Var("fixed", S32), LANES)
    for env in _lane_envs(4):
        values = {**env, "fixed": evaluate(fixed[0], env), "lane_offset": evaluate(changing[0], env)}
        assert np.array_equal(evaluate(split, values), evaluate(offset, env))
    # without bind_changing (the row plans' callers) the offset stays as it was
    assert split_offset(offset, LANE_VARIANT, bind) is offset


@pytest.mark.parametrize("op", ["le", "lt", "ge", "gt"])
def test_split_bound_along_the_lanes_compares_the_lane_value_with_a_uniform_bound(op):
    """`0 <= o_h*2 + kh - 3` becomes `3 - o_h*2 <= kh`: a compare with a scalar, no add."""
    ih = b(o_h * IntImm(2)) + kh_lanes - b(IntImm(3))
    for condition in (_compare(op, ih, b(IntImm(224))), _compare(op, b(IntImm(0)), ih)):
        split = split_bound(condition, LANE_VARIANT, lambda e: e)
        assert kh_lanes in (split.a, split.b)
        other = split.b if split.a == kh_lanes else split.a
        assert isinstance(other, Broadcast) and other.value.type == S32
        for env in _lane_envs(5, 40):
            assert np.array_equal(evaluate(split, env), evaluate(condition, env))


def test_merge_bounds_takes_the_tighter_uniform_bound():
    """`kh < 7` (K's padding) and `kh < 227 - o_h*2` (the image's last row) are one compare."""
    upper = kh_lanes < b(IntImm(227) - o_h * IntImm(2))
    lower = kh_lanes >= b(IntImm(3) - o_h * IntImm(2))
    other = kw_lanes < b(IntImm(5))
    conditions = [kh_lanes < b(IntImm(7)), lower, other, upper, kh_lanes >= b(IntImm(0))]
    merged = merge_bounds(conditions, lambda e: e)
    assert len(merged) == 3 and merged[2] is other  # one per vector and side, in first-seen order
    assert merged[0].op == "lt" and merged[0].b.value.op == "min"
    assert merged[1].op == "ge" and merged[1].b.value.op == "max"
    for env in _lane_envs(6, 40):
        expected = np.logical_and.reduce([evaluate(c, env) for c in conditions])
        assert np.array_equal(np.logical_and.reduce([evaluate(c, env) for c in merged]), expected)


def test_first_layer_gathers_add_one_uniform_scalar_to_the_iterations_offsets():
    """XeHPC bf16 conv1 on the GEMM plan gathers A a K position per lane: in the K loop, every
    gather's offset is the iteration's shared vector let plus a broadcast scalar, and its mask
    compares lane values with uniform bounds only (no vector arithmetic per message)."""
    problem = make_problem("mb1ic3ih224oc64oh112kh7sh2ph3", dt="bf16")
    kernel = build_kernel(problem, "xehpc", {"fma": "dpas", "slm": 1, "m_tile": 16, "k_block": 32, "tg_k": 1})
    (loop,) = [n for n in walk(kernel.body) if isinstance(n, For)][:1]
    gathers = [
        n
        for n in walk(loop)
        if isinstance(n, Call)
        and isinstance(n.func, Send)
        and n.func.kind == "scattered"
        and n.args[0].buffer.name == "src"
    ]
    assert len(gathers) == 8
    shared = {g.args[1].a for g in gathers}
    assert len(shared) == 1 and isinstance(next(iter(shared)), Var)
    for gather in gathers:
        offset, mask = gather.args[1], gather.args[3]
        assert offset.op == "add" and isinstance(offset.b, Broadcast)
        compares = [n for n in walk(mask) if getattr(n, "op", None) in ("lt", "le", "gt", "ge")]
        assert compares and all(isinstance(c.a, Var) and isinstance(c.b, Broadcast) for c in compares)


def test_split_bound_along_the_lanes_binds_a_scaled_lane_value_once():
    """A strided layer's `0 <= kh*2 + o_h - 3`: the lanes' side, `kh*2`, goes to `bind_changing`
    (one let per iteration, shared by every message's mask), the rest is a uniform bound."""
    condition = b(IntImm(0)) <= kh_lanes * b(IntImm(2)) + b(o_h) - b(IntImm(3))
    bound = []

    def bind_changing(e):
        bound.append(e)
        return Var("scaled", e.type)

    split = split_bound(condition, LANE_VARIANT, lambda e: e, bind_changing)
    assert len(bound) == 1 and affine(bound[0]) == ({kh_lanes: 2}, 0)
    assert split.b == Var("scaled", V) and isinstance(split.a, Broadcast)
    for env in _lane_envs(7, 40):
        assert np.array_equal(evaluate(split, {**env, "scaled": evaluate(bound[0], env)}), evaluate(condition, env))
