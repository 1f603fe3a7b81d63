"""Kernel IR properties (messages, registers, loop shape, barriers) and variants beyond resnet_50:
groups, 1-D and 3-D, dilation, blocked layouts, SLM on/off, K split with atomics, XeHPC."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xegen import hw, ir
from xegen.build import check_ir, dispatch_ids, run_ir
from xegen.build.builder import build_body
from xegen.conv import make_problem, random_inputs
from xegen.conv.check import compare
from xegen.errors import ConfigError, Error, UnsupportedError
from xegen.ir import Alloc, Barrier, Call, Dpas, Fence, For, Let, Mad, Reorder, Send, Seq, Store, walk
from xegen.pipeline import build_kernel, build_lead
from xegen.plan import formulate
from xegen.plan.kernel import plan_kernel

FWD = "mb1ic16ih6oc32oh6kh3ph1"


def calls(kernel, kind):
    return [node for node in walk(kernel.body) if isinstance(node, Call) and isinstance(node.func, kind)]


def test_kernel_record():
    kernel = build_kernel(
        make_problem(FWD, "FWD_B", "f16"),
        "xehpg",
        {"tg_m": 2, "tg_n": 1, "tg_k": 1, "m_tile": 8, "n_tile": 32, "k_block": 16, "slm": 1},
    )
    assert [v.name for v in kernel.arguments] == ["src", "wei", "dst", "bias"]
    assert kernel.thread_group == (1, 2, 1) and kernel.simd == 8
    assert kernel.grid == (1, 3, 1)  # M = 36 rows in groups of 2 x 8
    assert kernel.uses_dpas and kernel.uses_barriers and not kernel.uses_atomics
    assert kernel.config.slm_bufs == 2  # double buffering: at most 8 threads per group
    assert kernel.slm_bytes == 2 * (16 * 16 + 16 * 32) * 2
    externals = [s.var.name for s in walk(kernel.body) if isinstance(s, Let) and s.value is None]
    assert externals == [
        "src",
        "wei",
        "dst",
        "bias",
        "thread_id0",
        "thread_id1",
        "thread_id2",
        "group_id0",
        "group_id1",
        "group_id2",
    ]
    assert all(v.type == ir.S32 for v in kernel.index_variables)


@pytest.mark.parametrize("tg_k", [1, 2])
def test_dispatch_ids_enumerate_every_thread_of_every_group_once(tg_k):
    kernel = build_kernel(
        make_problem("mb1ic16ih9oc64oh9kh3ph1", "FWD_D", "f32"), "xehpg", {"tg_m": 2, "tg_n": 2, "tg_k": tg_k}
    )
    env, groups = dispatch_ids(kernel)
    keys = set(zip(*(env[v.name].tolist() for v in kernel.index_variables), strict=True))
    assert len(keys) == kernel.threads == 2 * 2 * tg_k * int(np.prod(kernel.grid))
    group_linear = env["group_id0"] + kernel.grid[0] * (env["group_id1"] + kernel.grid[1] * env["group_id2"])
    np.testing.assert_array_equal(group_linear, groups)


@pytest.mark.parametrize(
    "platform, dt",
    [
        ("xehpg", "f16"),
        ("xehpg", "f32"),
        ("xelp", "bf16"),
        ("xelp", "s8:s8:s8"),
        ("xehpc", "bf16"),
        ("xehpg", "u8:s8:s32"),
    ],
)
@pytest.mark.parametrize(
    "tags",
    [
        {},
        {"stag": "nchw", "wtag": "oihw", "dtag": "nchw"},
        {"stag": "nChw16c", "wtag": "OIhw16i16o", "dtag": "nChw16c"},
    ],
)
def test_messages_and_registers_fit_the_hardware(platform, dt, tags):
    p = hw.platform(platform)
    kernel = build_lead(make_problem(FWD, "FWD_B", dt, **tags), platform)
    for call in calls(kernel, Send):
        f = call.func
        if f.kind == "block":
            assert f.count * f.type.size <= p.max_block_message_bytes
            assert (f.count * f.type.size) % 4 == 0
        else:
            assert f.count <= p.max_message_simd
        register = call.args[-2] if call.args[-2] is not None else None
        if f.space == "global" and register is not None and f.op != "atomic":
            assert register.offset.value % p.grf_bytes == 0  # every message starts on a GRF
    for node in walk(kernel.body):
        if isinstance(node, Alloc) and node.kind == "grf":
            assert node.size % p.grf_bytes == 0
    for call in calls(kernel, Dpas):
        assert call.func.exec_size == p.dpas_exec_size and call.func.sdepth == 8 and call.func.rcount <= 8
    for call in calls(kernel, Mad):
        assert call.func.exec_size * 4 <= 64
    assert ir.parse_stmt(str(kernel)) == kernel.body  # the printed IR reads back


def _loop_body(kernel, body=None):
    loop = next(node for node in walk(kernel.body if body is None else body) if isinstance(node, For))
    body = loop.body
    while isinstance(body, Let):
        body = body.body
    assert isinstance(body, Seq)
    return body.stmts


def _stage(stmt) -> str:
    if isinstance(stmt, Store):
        return "g2r"  # zeroing registers before masked loads
    f = stmt.func
    if isinstance(f, Send):
        return {"global": "g2r", "slm": "s2r" if f.op == "load" else "g2s"}[f.space]
    if isinstance(f, (Fence, Barrier)):
        return "barrier"
    if isinstance(f, Reorder):
        return "reorder"
    return "multiply"


@pytest.mark.parametrize("slm, fma", [(0, "dpas"), (1, "dpas"), (1, "mad")])
def test_loop_body_is_loads_then_slm_then_reorders_then_multiplies(slm, fma):
    """With SLM, dpas operands are reordered into dpas's layout before they are stored (once per
    group), mad operands after they are read back (f32 copies of bf16, per thread).  (The plain
    weights, whose K pairs dpas reads interleaved: `any` may take them so, `weights_choices`.)"""
    kernel = build_kernel(
        make_problem(FWD, "FWD_B", "bf16", stag="nchw", wtag="cdba"),
        "xehpg",
        {"plan": "gemm", "slm": slm, "tg_m": 2, "tg_n": 2, "n_tile": 16, "slm_bufs": 1, "gmem_bufs": 1, "fma": fma},
    )
    built = build_body(plan_kernel(formulate(kernel.problem), kernel.config, kernel.hw))  # before scheduling
    stages = [_stage(s) for s in _loop_body(kernel, built)]
    collapsed = [s for i, s in enumerate(stages) if i == 0 or s != stages[i - 1]]
    expected = {
        (0, "dpas"): ["g2r", "reorder", "multiply"],
        (1, "dpas"): ["g2r", "reorder", "g2s", "barrier", "s2r", "barrier", "multiply"],
        (1, "mad"): ["g2r", "g2s", "barrier", "s2r", "barrier", "reorder", "multiply"],
    }[slm, fma]
    assert collapsed == expected


def _without_last_barrier(stmt):
    class Drop(ir.Mutator):
        def mutate_Seq(self, node):
            items = [self.mutate(s) for s in node.stmts]
            barriers = [i for i, s in enumerate(items) if isinstance(s, Call) and isinstance(s.func, Barrier)]
            if len(barriers) == 2:
                del items[barriers[1]]
            return ir.seq(*items)

    return Drop().mutate(stmt)


def test_slm_barriers_are_needed_the_race_checker_sees_a_missing_one():
    kernel = build_kernel(
        make_problem(FWD, "FWD_D", "f16"),
        "xehpg",
        {"slm": 1, "tg_m": 2, "tg_n": 2, "n_tile": 16, "slm_bufs": 1, "gmem_bufs": 1},
    )
    tensors = random_inputs(kernel.problem)
    run_ir(kernel, tensors)  # with both barriers: no race
    from dataclasses import replace

    broken = replace(kernel, body=_without_last_barrier(kernel.body))
    with pytest.raises(ir.SlmRaceError):
        run_ir(broken, tensors)


def test_the_check_catches_a_wrong_kernel():
    kernel = build_kernel(make_problem(FWD, "FWD_D", "f32"), "xehpg")
    tensors = random_inputs(kernel.problem)
    assert all(r.ok for r in compare(kernel.problem, run_ir(kernel, tensors), tensors))

    class DropOneMad(ir.Mutator):
        dropped = False

        def mutate_Call(self, node):
            if isinstance(node.func, Mad) and not self.dropped:
                self.dropped = True
                return ir.seq()  # an empty sequence: the first multiply-add is gone
            return node

    from dataclasses import replace

    broken = replace(kernel, body=DropOneMad().mutate(kernel.body))
    results = compare(kernel.problem, run_ir(broken, tensors), tensors)
    assert not results[0].ok and results[0].mismatches > 0


VARIANTS = [
    # (descriptor, direction, data types, post-op, tags, platform, overrides)
    ("g2mb2ic8ih6oc16oh6kh3ph1", "FWD_B", "f32", "relu", {}, "xelp", {}),
    ("g4mb1ic16ih5oc8kh3ph1sh2", "BWD_D", "f16", "", {}, "xehpg", {}),
    ("g8mb1ic8ih7oc8oh7kh3ph1", "BWD_WB", "f32", "", {}, "xehpg", {}),  # depthwise
    ("g3mb1ic12iw9oc6kw3pw1", "FWD_B", "bf16", "", {"stag": "nCw16c"}, "xehpg", {}),
    ("mb2ic6iw11oc10kw5sw2dw1pw3", "BWD_D", "bf16", "", {"stag": "ncw", "dtag": "ncw"}, "xelp", {}),
    ("mb1ic5iw9oc7kw2", "BWD_W", "f32", "", {"wtag": "oiw"}, "xehpc", {}),
    ("mb1ic4id4ih5iw3oc8kd2kh3kw1pd1ph1", "FWD_B", "f16", "relu", {"stag": "ndhwc"}, "xehpg", {}),
    ("mb1ic8id3ih4iw4oc4kd3kh2kw2pd1sd2", "BWD_D", "f32", "", {"stag": "ncdhw"}, "xehpc", {}),
    ("mb1ic8id3oc8kd3pd1", "BWD_WB", "bf16", "", {}, "xelp", {}),
    (
        "mb1ic16ih7oc16oh7kh3ph2dh1",
        "FWD_D",
        "f32",
        "",
        {"stag": "nChw16c", "wtag": "OIhw16i16o", "dtag": "nChw16c"},
        "xehpg",
        {},
    ),
    (
        "mb16ic20ih3oc24oh3kh3ph1",
        "FWD_B",
        "bf16",
        "",
        {"stag": "NChw16n16c", "dtag": "NChw16n16c"},
        "xehpg",
        {"slm": 1},
    ),
    ("mb1ic24ih5oc20oh5kh3ph1", "BWD_D", "f16", "", {"wtag": "OIhw8i16o2i"}, "xehpg", {"slm": 0}),
    ("g2mb1ic32ih4oc32oh4kh3ph1", "FWD_B", "u8:s8:s8", "relu", {"wtag": "gOIhw16i16o"}, "xehpg", {"slm": 1}),
    ("mb1ic17ih5oc9oh5kh3ph1", "FWD_B", "s8:s8:f32", "", {"stag": "nchw"}, "xelp", {}),
    ("mb1ic32ih8oc32oh8kh3ph1", "FWD_I", "u8:s8:u8", "", {}, "xehpc", {}),
    # bias lines shorter than the output rows (24 channels: 8-wide bias blocks, 16-wide stores)
    ("mb1ic8ih4oc24oh4kh3ph1", "FWD_B", "f16", "", {"dtag": "nchw"}, "xelp", {}),
    # SLM staging on XeLP (mad) and XeHPG, odd tile splits
    ("mb1ic16ih8oc32oh8kh3ph1", "FWD_B", "f32", "", {}, "xelp", {"slm": 1, "tg_m": 2, "tg_n": 2}),
    ("mb1ic16ih8oc32oh8kh3ph1", "BWD_WB", "f16", "", {}, "xehpg", {"slm": 1, "tg_m": 4, "tg_n": 2}),
    (
        "mb1ic16ih8oc32oh8kh3ph1",
        "BWD_D",
        "bf16",
        "",
        {"stag": "nchw"},
        "xehpg",
        {"slm": 1, "tg_m": 2, "tg_n": 1, "m_tile": 16},
    ),
    # oh = (2-3)/2 + 1 = 1 with C's truncating division: right padding 1
    ("mb2ic4ih2oc8kh3sh2", "BWD_WB", "f32", "", {}, "xehpg", {}),
    ("mb2ic4ih2oc8kh3sh2", "FWD_B", "f16", "", {"dtag": "aBcd16b"}, "xelp", {}),
    # K split across groups: atomic adds of partial results
    ("mb2ic8ih8oc16oh8kh3ph1", "BWD_WB", "f32", "", {}, "xehpg", {"k_split": 4}),
    ("mb2ic8ih8oc16oh8kh3ph1", "BWD_WB", "bf16:f32:bf16", "", {}, "xehpg", {"k_split": 3, "slm": 1}),
    ("mb1ic32ih4oc16oh4kh3ph1", "FWD_B", "f32", "", {}, "xelp", {"k_split": 3}),
    ("mb1ic64ih4oc16oh4kh3ph1", "FWD_D", "u8:s8:s32", "", {}, "xehpg", {"k_split": 2}),
    # mad for 16-bit on a dpas platform, dp4a style tiles
    ("mb1ic16ih6oc16oh6kh3ph1", "FWD_D", "bf16", "", {}, "xehpg", {"fma": "mad", "simd": 16}),
    ("mb1ic16ih6oc32oh6kh3ph1", "FWD_D", "u8:s8:s32", "", {}, "xelp", {"n_tile": 32, "m_tile": 4, "tg_m": 3}),
]


@pytest.mark.parametrize(
    "desc, direction, dt, post, tags, platform, overrides",
    VARIANTS,
    ids=[f"{v[0]}-{v[1]}-{v[2]}-{v[5]}" for v in VARIANTS],
)
def test_variants_match_numpy(desc, direction, dt, post, tags, platform, overrides):
    kernel = build_lead(make_problem(desc, direction, dt, post, **tags), platform, overrides)
    for key, value in overrides.items():
        assert getattr(kernel.config, key) == value
    assert kernel.uses_atomics == (kernel.config.k_split > 1)
    assert (
        len(calls(kernel, Send)) > 0 and any(c.func.op == "atomic" for c in calls(kernel, Send))
    ) == kernel.uses_atomics
    for result in check_ir(kernel, seed=3):
        assert result.ok, f"{kernel.problem} {kernel.config}: {result}"


def test_run_ir_checks_its_inputs():
    kernel = build_kernel(make_problem(FWD, "FWD_D", "f32"), "xelp")
    tensors = random_inputs(kernel.problem)
    with pytest.raises(Error, match="reads 'wei'"):
        run_ir(kernel, {"src": tensors["src"]})
    with pytest.raises(Error, match="shape"):
        run_ir(kernel, {"src": tensors["src"][:, :8], "wei": tensors["wei"]})


@pytest.mark.parametrize("direction, dt", [("BWD_D", "u8:s8:f32"), ("BWD_W", "s8:s8:s32")])
def test_int8_backward_is_unsupported(direction, dt):
    with pytest.raises(UnsupportedError, match="forward only"):
        make_problem(FWD, direction, dt)


@pytest.mark.parametrize(
    "direction, dt, post, message",
    [
        ("FWD_B", "f16:f32:f16", "", "must have one type"),
        ("FWD_B", "f16:f16:bf16", "", "as f16 or f32"),
        ("BWD_D", "f32", "relu", "forward problems only"),
        ("FWD_B", "s32", "", "int8"),
        ("FWD_B", "u8:u8:s32", "", "wei s8"),
    ],
)
def test_unsupported_problems(direction, dt, post, message):
    with pytest.raises(UnsupportedError, match=message):
        make_problem(FWD, direction, dt, post)


@st.composite
def small_problems(draw):
    spatial = draw(st.sampled_from(["h", "w", "d", "dhw"]))
    g = draw(st.sampled_from([1, 1, 2, 3]))
    text = f"g{g}mb{draw(st.integers(1, 2))}ic{g * draw(st.integers(1, 20))}oc{g * draw(st.integers(1, 20))}"
    for dim in spatial:
        k, s, d = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(0, 1))
        ek = (k - 1) * (d + 1) + 1
        p = draw(st.integers(0, ek - 1))
        # inputs down to ek - 2p - s + 1: C's division still gives one output there
        text += f"i{dim}{draw(st.integers(max(1, ek - 2 * p - s + 1), 7))}k{dim}{k}s{dim}{s}d{dim}{d}p{dim}{p}"
    direction = draw(st.sampled_from(["FWD_B", "BWD_D", "BWD_WB"]))
    dt = draw(st.sampled_from(["f32", "f16", "bf16"] + (["u8:s8:s8", "s8:s8:f32"] if direction == "FWD_B" else [])))
    return make_problem(text, direction, dt, stag=draw(st.sampled_from(["any", "nchw" if spatial == "h" else "any"])))


@settings(max_examples=25, deadline=None)
@given(small_problems(), st.sampled_from(["xehpg", "xelp", "xehpc"]))
def test_random_small_problems_match_numpy(problem, platform):
    try:
        kernel = build_kernel(problem, platform)
    except ConfigError as error:  # the heuristic always finds a configuration for small problems
        pytest.fail(f"no configuration for {problem} on {platform}: {error}")
    for result in check_ir(kernel):
        assert result.ok, f"{problem} on {platform} with {kernel.config}: {result}"


def test_tensors_beyond_32_bit_offsets_are_unsupported():
    # 1000 x 1024 x 64 x 64 f32 = 16 GB of src
    with pytest.raises(UnsupportedError, match="32-bit byte offsets"):
        build_kernel(make_problem("mb1000ic1024ih64oc1024kh3ph1", "FWD_D", "f32"), "xehpg")


def test_building_is_deterministic():
    problem = make_problem("g2mb1ic16ih6oc32oh6kh3ph1", "BWD_WB", "bf16:f32:bf16", stag="nchw")
    first = build_kernel(problem, "xehpg", {"k_split": 2, "slm": 1})
    second = build_kernel(problem, "xehpg", {"k_split": 2, "slm": 1})
    assert str(first) == str(second) and ir.stable_hash(first.body) == ir.stable_hash(second.body)


# The index range ------------------------------------------------------------------------------

# iw3 and kw2 with taps 2^30 apart (dw = 2^30-1), padding 2^30-1 and stride 2^30-1 give ow = 2:
# (3 - (2^30+1) + 2*(2^30-1)) / (2^30-1) + 1 = 2.  The largest index is the last output's last
# tap, (2-1)*(2^30-1) + (2-1)*2^30 = 2^31-1: exactly s32's largest value.
AT_THE_LIMIT = f"mb1ic2iw3oc2kw2dw{2**30 - 1}pw{2**30 - 1}sw{2**30 - 1}"


@pytest.mark.parametrize("direction", ["FWD_B", "BWD_D", "BWD_WB"])
@pytest.mark.parametrize("platform", ["xehpg", "xelp"])
def test_indices_up_to_the_largest_s32_value_are_computed_right(direction, platform):
    kernel = build_kernel(make_problem(AT_THE_LIMIT, direction, "f32"), platform)
    for result in check_ir(kernel):
        assert result.ok, result


@pytest.mark.parametrize(
    "text, fields",
    [
        # one more in the stride: the last tap is at 2^31
        (f"mb1ic2iw3oc2kw2dw{2**30 - 1}pw{2**30 - 1}sw{2**30}", "ow=2, sw=1073741824, kw=2, dw=1073741823"),
        # the audit's case: (2-1)*(2^31-1) + 2*2^30 wraps to a wrong result without the check
        ("mb1ic2iw4oc2kw3dw1073741823pw2147483647sw2147483647", "ow=2, sw=2147483647, kw=3, dw=1073741823"),
        # input plus padding: 2^31-3 + 3 = 2^31 (the backward-data view adds them)
        (f"mb1ic2iw{2**31 - 3}oc2ow1kw4sw{2**31 - 3}pw3", "iw=2147483645, pw=3"),
    ],
)
def test_indices_beyond_s32_are_unsupported_and_name_the_fields(text, fields):
    with pytest.raises(UnsupportedError, match=f"^{fields}: .*s32 index arithmetic"):
        build_kernel(make_problem(text, "BWD_D", "f32"), "xehpg")


def test_tile_coordinates_beyond_s32_are_a_config_error():
    # 2^31-1 outputs in tiles of 4 threads x 3 rows: the last tile ends at 2^31+3
    problem = make_problem("mb1ic1iw2147483647oc1kw1", "FWD_D", "u8:s8:u8")
    with pytest.raises(ConfigError, match="M = ow = 2147483647, rounded up to whole tiles, reaches 2147483651"):
        build_kernel(problem, "xelp", {"m_tile": 3, "tg_m": 4})


# What the launcher zeroes, and the padding of blocked outputs ----------------------------------


@pytest.mark.parametrize(
    "direction, tags, overrides, zeroed",
    [
        ("FWD_B", {}, {}, ()),
        ("FWD_B", {"dtag": "aBcd16b"}, {}, ("dst",)),  # 24 channels padded to 32
        ("BWD_D", {"stag": "aBcd16b"}, {}, ("src",)),  # 20 channels padded to 32
        ("BWD_WB", {"wtag": "OIhw16i16o"}, {}, ("wei",)),  # bias has no padding
        ("BWD_WB", {}, {"k_split": 2}, ("wei", "bias")),  # atomics add into both
    ],
)
def test_zero_outputs_names_every_output_the_kernel_relies_on_being_zero(direction, tags, overrides, zeroed):
    kernel = build_kernel(make_problem("mb1ic20ih4oc24oh4kh3ph1", direction, "f32", **tags), "xehpg", overrides)
    assert kernel.zero_outputs == zeroed
    results = check_ir(kernel)
    padded = [name for name in kernel.problem.outputs if kernel.problem.layout_of(name).has_padding]
    assert [r.name for r in results] == list(kernel.problem.outputs) + [f"{name} padding" for name in padded]
    assert all(r.ok for r in results), results


def test_the_padding_check_sees_garbage_when_the_launcher_does_not_zero():
    from dataclasses import replace

    kernel = build_kernel(make_problem("mb1ic20ih4oc24oh4kh3ph1", "FWD_B", "f16", dtag="aBcd16b"), "xehpg")
    results = check_ir(replace(kernel, zero_outputs=()))  # the contract broken: padding left as garbage
    assert [r.name for r in results] == ["dst", "dst padding"]
    assert results[0].ok
    # 1 x (32-24) channels x 4 x 4: every padding element is NaN garbage
    assert (results[1].mismatches, results[1].elements) == (8 * 16, 8 * 16)


def test_an_output_the_kernel_never_writes_fails_even_where_zero_is_expected():
    """Outputs start as garbage, so relu's zeros must be written too."""
    from dataclasses import replace

    kernel = build_kernel(make_problem(FWD, "FWD_D", "f32", "relu"), "xehpg")

    class DropStores(ir.Mutator):
        def mutate_Call(self, node):
            if isinstance(node.func, Send) and node.func.op == "store":
                return ir.seq()
            return node

    results = check_ir(replace(kernel, body=DropStores().mutate(kernel.body)))
    assert results[0].mismatches == results[0].elements == 32 * 36


@pytest.mark.parametrize("platform", ["xehpg", "xelp"])
def test_s32_output_saturates_a_large_bias_like_the_reference(platform):
    problem = make_problem("mb1ic4ih1oc4kh1", "FWD_B", "u8:s8:s32")
    tensors = {
        "src": np.ones((1, 4, 1, 1), np.uint8),
        "wei": np.zeros((4, 4, 1, 1), np.int8),
        "bias": np.array([3e9, -3e9, 2147483520.0, 2.5], np.float32),
    }
    got = run_ir(build_kernel(problem, platform), tensors)
    # f32 -> s32 saturates; 2147483520 is the largest float32 below 2^31; 2.5 rounds to even
    np.testing.assert_array_equal(got["dst"].reshape(-1), [2147483647, -2147483648, 2147483520, 2])
    assert all(r.ok for r in compare(problem, got, tensors))
