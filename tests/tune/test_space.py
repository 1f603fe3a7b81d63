"""The tuning space: the heuristic's knobs widened, every legal configuration plannable, pruning
before any compile."""

from __future__ import annotations

import pytest

from xegen import hw as hwlib
from xegen.conv import make_problem
from xegen.errors import ConfigError
from xegen.plan import formulate
from xegen.plan.config import KEYS, check_config
from xegen.plan.heuristic import choose_config, config_candidates
from xegen.plan.kernel import plan_kernel
from xegen.plan.space import GROUP_SIDES, K_SPLITS, TuningSpace, idle_threads
from xegen.tune.space import space_of

SMALL = "mb1ic8ih4oc8oh4kh3ph1"  # M = 16 output pixels, N = 8 channels, K = 72


def space(desc=SMALL, dt="f32", hw="xehpg", given=None, direction="FWD_B"):
    gemm = formulate(make_problem(desc, direction, dt))
    platform = hwlib.platform(hw)
    return gemm, platform, TuningSpace(gemm, platform, given, choose_config(gemm, platform, given))


def test_the_heuristics_choice_comes_first_and_its_candidates_are_in_the_space():
    gemm, platform, s = space()
    assert s.candidates[0] == choose_config(gemm, platform)
    legal = set(s.legal_configs())
    assert set(config_candidates(gemm, platform)) <= legal


def test_the_knobs_the_heuristic_derives_are_widened():
    _, platform, s = space()
    # the tuner's group sides, and the heuristic's own: 3 threads along M for three tiles of 6 rows
    assert s.knobs["tg_m"] == (1, 2, 3, 4, 8) and s.knobs["tg_n"] == GROUP_SIDES
    assert s.knobs["k_split"] == K_SPLITS
    assert s.knobs["simd"] == (8, 16)  # the heuristic tries 16 alone for mad; SIMD32 mad is illegal
    assert s.knobs["grf"] == platform.grf_counts


def test_every_legal_configuration_plans_and_every_candidate_passes_the_key_rules():
    gemm, platform, s = space()
    legal = s.legal_configs()
    assert len(legal) == 1920  # SMALL on XeHPG: the count the space printed (with tg_k, and mad's 5 to 7 rows)
    for config in s.candidates:
        check_config(config, gemm, platform)
        assert not idle_threads(config, gemm)
    for config in legal:
        plan_kernel(gemm, config, platform)  # raises if it did not fit


def test_pruning_counts_add_up_to_the_combinations():
    _, _, s = space()
    legal = s.legal_configs()
    assert s.considered == len(s.candidates) + s.pruned.get("config rules (check_config)", 0) + s.pruned.get(
        "idle threads in a group", 0
    )
    rejected = len(s.candidates) - len(legal)
    assert rejected == sum(n for reason, n in s.pruned.items() if "plan_layout" in reason or "check_budgets" in reason)


def test_idle_threads_are_groups_larger_than_the_problem():
    gemm, platform, s = space()  # N = 8: with n_tile 8 a second column of threads has nothing
    assert gemm.n.size == 8 and gemm.m.size == 16
    assert all(c.tg_n == 1 for c in s.candidates)
    assert {c.tg_m for c in s.candidates if c.m_tile == 8} == {1, 2}
    assert {c.tg_m for c in s.candidates if c.m_tile == 6} == {1, 2, 3}
    assert {c.tg_m for c in s.candidates if c.m_tile == 4} == {1, 2, 3, 4}


def test_given_keys_are_fixed():
    _, _, s = space(given={"simd": 16, "k_split": 1, "grf": 128})
    assert {(c.simd, c.k_split, c.grf) for c in s.candidates} == {(16, 1, 128)}
    assert s.knobs["simd"] == (16,)


def test_k_split_is_pruned_where_partial_sums_cannot_be_added():
    _, _, f16 = space(given={"fma": "mad", "simd": 16}, dt="f16")  # an f16 output takes no atomic adds
    assert {c.k_split for c in f16.candidates} == {1}
    _, _, f32 = space(given={"simd": 16})
    assert {c.k_split for c in f32.candidates} == set(K_SPLITS)


def test_systolic_platforms_add_dpas_kinds_and_budgets_prune_some():
    # dpasw pairs threads along N
    gemm, platform, s = space("mb1ic32ih4oc32oh4kh3ph1", dt="f16", given={"tg_m": 1, "tg_n": 2})
    kinds = {(c.fma, c.simd) for c in s.candidates}
    assert {("dpas", 8), ("dpasw", 8), ("mad", 16)} <= kinds
    legal = s.legal_configs()
    for config in legal:
        plan_kernel(gemm, config, platform)
    for config in set(s.candidates) - set(legal):
        with pytest.raises(ConfigError):
            plan_kernel(gemm, config, platform)


def test_the_space_lists_every_key():
    _, _, s = space()
    assert tuple(s.knobs) == KEYS


def test_a_first_layer_s_space_holds_both_plans_and_the_gemm_plans_dpas():
    """plan=first's backward weights multiply with mad only: the dpas kind's GEMM configurations are
    in the space even though plan=first's listing of that kind breaks the key rules (it used to
    drop the kind, and with it every dpas kernel of the layer)."""
    _, _, s = space("mb1ic4ih56oc128oh56kh3ph1", dt="bf16", hw="xehpc", direction="BWD_WB")
    kinds = {(c.plan, c.fma) for c in s.candidates}
    assert ("first", "mad") in kinds and ("gemm", "dpas") in kinds
    assert any(s.legal(c) for c in s.candidates if c.fma == "dpas")


# a padded 3x3 forward layer whose multiply is dpas (bf16 on XeHPC): the model also tries the
# swapped product there (`heuristic.swaps`); the keys fixed keep its space small enough to plan
SWAPPABLE = "mb1ic32ih8oc32oh8kh3ph1"
FEW_KNOBS = {"grf": 128, "k_split": 1, "gmem_bufs": 1, "tg_m": 1}


def product_space(desc=SWAPPABLE, direction="FWD_B", given=FEW_KNOBS):
    problem = make_problem(desc, direction, "bf16")
    return problem, space_of(problem, "xehpc", given)


def test_a_forward_dpas_layer_s_space_holds_both_products_each_planned_from_its_own_gemm():
    problem, (s, legal) = product_space()
    assert s.knobs["plan"] == ("gemm", "swapped")
    plans = {c.plan for c in legal}
    assert plans == {"gemm", "swapped"}
    gemms = {plan: formulate(problem, plan) for plan in plans}
    # the heuristic's choice of each product leads its share of the space, and is legal there
    assert legal[0] == choose_config(gemms["gemm"], hwlib.platform("xehpc"), FEW_KNOBS)
    assert choose_config(gemms["swapped"], hwlib.platform("xehpc"), FEW_KNOBS) in legal
    for config in legal:
        # each fits the product (and weights layout: `gemm.swapped_weights`) whose space holds it
        holders = [space for space in s.spaces if space.legal(config)]
        assert holders
        for space in holders:
            plan_kernel(space.gemm, config, hwlib.platform("xehpc"))  # raises if it did not fit
    swapped = next(c for c in legal if c.plan == "swapped")
    with pytest.raises(ConfigError):  # the planner refuses a configuration with the other product
        plan_kernel(gemms["gemm"], swapped, hwlib.platform("xehpc"))
    rejected = set(s.candidates) - set(legal)
    assert rejected and all(not s.legal(c) for c in rejected)


@pytest.mark.parametrize(
    ("desc", "direction", "given"),
    [
        ("mb1ic32ih10oc32oh5kh3sh2ph1", "BWD_D", FEW_KNOBS),  # strided backward data: its stride phases
        (SWAPPABLE, "BWD_WB", FEW_KNOBS),  # backward weights keep the plain product
        ("g2" + SWAPPABLE, "FWD_B", FEW_KNOBS),  # groups keep the plain product
        ("mb1ic32ih8oc32oh8kh1ph0", "FWD_B", FEW_KNOBS),  # 1x1: the model does not try it
        (SWAPPABLE, "FWD_B", {**FEW_KNOBS, "plan": "gemm"}),  # a plan given is the only one
    ],
)
def test_where_the_model_does_not_swap_the_space_holds_the_plain_product_alone(desc, direction, given):
    _, (s, legal) = product_space(desc, direction, given)
    assert s.knobs["plan"] == ("gemm",)
    assert legal and {c.plan for c in legal} == {"gemm"}


def test_a_swapped_plan_given_is_the_swapped_product_s_space():
    problem, (s, legal) = product_space(given={**FEW_KNOBS, "plan": "swapped"})
    assert s.knobs["plan"] == ("swapped",)
    assert legal[0] == choose_config(formulate(problem, "swapped"), hwlib.platform("xehpc"), FEW_KNOBS)


def test_stride_one_backward_data_s_space_holds_both_products():
    _, (s, legal) = product_space(SWAPPABLE, "BWD_D", FEW_KNOBS)
    assert s.knobs["plan"] == ("gemm", "swapped") and {c.plan for c in legal} == {"gemm", "swapped"}
