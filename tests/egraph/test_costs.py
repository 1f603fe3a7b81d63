"""Cost models come from xegen.hw data: per-platform issue costs, emulation, missing instructions
and the 16-bit immediate rules of add3 and mad."""

from __future__ import annotations

import dataclasses

import pytest

from xegen import hw, ir
from xegen.egraph.costs import INFINITE, CostModel, breakdown


def cost(text: str, platform: str | hw.Platform) -> int:
    return CostModel(platform).dag_cost(ir.parse_expr(text))


@pytest.mark.parametrize(
    "text, xelp, xehpg, xehpc",
    [
        ("a + b", 1, 1, 1),
        ("a * b", 1, 3, 3),  # 32x32 multiply: native on XeLP, emulated on XeHP+
        ("a * 3", 1, 1, 1),  # a 16-bit multiplier is native everywhere
        ("a * 100000", 1, 3, 3),  # a 32-bit immediate is not
        ("add3(a, b, c)", INFINITE, 1, 1),  # add3 does not exist on XeLP
        ("mad(a, b, 3)", INFINITE, 1, 1),
        ("add3(a, b, 7)", INFINITE, 1, 1),  # the last operand may be a 16-bit immediate
        ("add3(a, b, 100000)", INFINITE, 2, 2),  # a 32-bit one does not fit: two adds
        ("mad(a, b, 100000)", INFINITE, 4, 4),  # the multiplier must fit 16 bits: mul + add
        ("mad(a, b, c)", INFINITE, 4, 4),
        ("a / b", 20, 20, 20),  # division by a variable is emulated
        ("(s64)a + (s64)b", 4, 4, 3),  # 64-bit add emulated except on XeHPC; two sign extensions
    ],
)
def test_costs_per_platform(text, xelp, xehpg, xehpc):
    assert [cost(text, p) for p in ("xelp", "xehpg", "xehpc")] == [xelp, xehpg, xehpc]


def test_shared_subexpressions_count_once():
    e = ir.parse_expr("(a * 3 + b) * (a * 3 + b)")
    model = CostModel("xehpg")
    assert model.dag_cost(e) == 1 + 1 + 3  # a*3 and the sum once, then an emulated 32x32 multiply
    assert model.tree_cost(e) == 2 * (1 + 1) + 3


def test_the_model_is_built_from_the_platform_record():
    cheap_multiply = dataclasses.replace(hw.XEHPG, has_native_dword_multiply=True)
    assert cost("a * b", cheap_multiply) == 1
    no_mad = dataclasses.replace(hw.XEHPG, has_integer_mad=False)
    assert cost("mad(a, b, 3)", no_mad) == INFINITE
    slow_add = dataclasses.replace(hw.XEHPG, integer_cost={**hw.XEHPG.integer_cost, "alu": 5})
    assert cost("a + b", slow_add) == 5


def test_breakdown_names_the_instructions():
    items = breakdown(CostModel("xehpg"), ir.parse_expr("mad(a, b, 2) + c"))
    assert [op for op, _ in items] == ["mad.s32 imm 2", "add.s32"]
