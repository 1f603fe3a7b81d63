"""Work instruction selection would repeat: a mask computed again while its flag still holds it."""

from __future__ import annotations

import numpy as np
import pytest

from xegen.lower import compile_kernel

from .harness import hand_spec, run_both

ARGS = [("x", "ptr"), ("out", "ptr")]
MASKED_LOADS = """
alloc r[64] grf;
r[0] = broadcast(9, 16);
send<op=load, kind=block, space=global, type=s32, count=8>(&x[0], &r[0], {first});
{between}
send<op=load, kind=block, space=global, type=s32, count=8>(&x[64], &r[32], {second});
send<op=store, kind=block, space=global, type=s32, count=16>(&out[group_id0 * 64], &r[0], null);
"""


def cmps(compiled) -> int:
    return sum(inst.opcode == "cmp" for inst in compiled.instructions)


@pytest.mark.parametrize("hw", ["xelp", "xehpg", "xehpc"])
@pytest.mark.parametrize(
    "first, between, second, expected",
    [
        ("group_id0 > 0", "", "group_id0 > 0", 1),  # the flag still holds the mask
        ("r.s32[0] > 5", "", "r.s32[0] > 5", 2),  # the first load may change r[0]
        ("group_id0 > 0", "r[4] = group_id0 * 3;", "group_id0 > 0", 1),  # r[4] is no source of the mask
        (
            "group_id0 > 0",
            "send<op=load, kind=block, space=global, type=s32, count=1>(&x[4], &r[4], group_id0 < 1);",
            "group_id0 > 0",
            3,
        ),  # another mask took the flag
    ],
)
def test_a_mask_the_flag_still_holds_is_not_computed_again(hw, first, between, second, expected):
    spec = hand_spec("masks", MASKED_LOADS.format(first=first, between=between, second=second), ARGS)
    assert cmps(compile_kernel(spec, hw)) == expected
    x = np.arange(-3, 29, dtype=np.int32) * 7  # x[0] = -21: the first load makes r[0] > 5 false
    simulated, interpreted, _ = run_both(spec, hw, {"x": x, "out": np.full(32, -1, np.int32)}, grid=(2, 1, 1))
    assert simulated["out"].tolist() == interpreted["out"].tolist()


PREFETCH_THEN_LOAD = """
alloc r[96] grf;
r[0] = broadcast(12, 24);
{prefetch}
send<op=load, kind=block, space=global, type=s32, count=8>(&x[0], &r[0], null);
send<op=load, kind=block, space=global, type=s32, count=8>(&x[r.s32[{which}]], &r[32], null);
send<op=store, kind=block, space=global, type=s32, count=16>(&out[group_id0 * 64], &r[0], null);
"""
PREFETCH = "send<op=prefetch, kind=block, space=global, type=s32, count=8>(&x[r.s32[{which}]], null, null);"


@pytest.mark.parametrize("hw", ["xehpg", "xehpc"])
@pytest.mark.parametrize("which, rebuilt", [(64, False), (0, True)])
def test_a_load_reuses_the_address_its_prefetch_built(hw, which, rebuilt):
    """The byte offset is r's dword at byte `which`: at 64 no load writes it, at 0 the first
    load does, and then the address is built again from the new value."""

    def spec(prefetch: str):
        return hand_spec("prefetch", PREFETCH_THEN_LOAD.format(prefetch=prefetch, which=which), ARGS)

    def work(compiled) -> int:  # instructions other than SWSB syncs
        return sum(inst.opcode != "sync" for inst in compiled.instructions)

    fetched = spec(PREFETCH.format(which=which))
    extra = work(compile_kernel(fetched, hw)) - work(compile_kernel(spec(""), hw))
    assert (extra > 1) == rebuilt and extra >= 1  # the prefetch, and when rebuilt a 64-bit address
    x = (np.arange(32, dtype=np.int32) % 5) * 4  # r[0] becomes x[0] = 0: the second load starts at x[0]
    simulated, interpreted, _ = run_both(fetched, hw, {"x": x, "out": np.full(32, -1, np.int32)})
    assert simulated["out"].tolist() == interpreted["out"].tolist()


def test_payloads_are_built_again_when_keeping_them_does_not_fit():
    """Forty prefetches, a buffer of 100 GRFs, then the forty loads: keeping the forty address
    payloads for the loads needs 140 GRFs of 128, so they are built again instead."""
    count = 40
    offsets = "\n".join(f"let o{i} = group_id0 * 4 + {32 * i};" for i in range(count))
    prefetches = "\n".join(
        f"send<op=prefetch, kind=block, space=global, type=s32, count=8>(&x[o{i}], null, null);" for i in range(count)
    )
    loads = "\n".join(
        f"send<op=load, kind=block, space=global, type=s32, count=8>(&x[o{i}], &r[{32 * i}], null);"
        for i in range(count)
    )
    text = f"""{offsets}
alloc r[{32 * count}] grf;
alloc big[3200] grf;
{prefetches}
send<op=load, kind=block, space=global, type=s32, count=800>(&x[0], &big[0], null);
send<op=store, kind=block, space=global, type=s32, count=800>(&out[0], &big[0], null);
{loads}
send<op=store, kind=block, space=global, type=s32, count={8 * count}>(&out[3200], &r[0], null);
"""
    spec = hand_spec("pressure", text, ARGS)
    x = np.arange(800, dtype=np.int32) - 400
    simulated, interpreted, compiled = run_both(spec, "xehpg", {"x": x, "out": np.zeros(800 + 8 * count, np.int32)})
    assert simulated["out"].tolist() == interpreted["out"].tolist()
    assert compiled.stats.grfs_used <= 128
