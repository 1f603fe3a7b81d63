"""The search over a real tuning space, under a synthetic objective (so it runs in milliseconds):
exhaustive below the budget, the evolutionary search deterministic given its seed whatever the
order results arrive in, and finding what exhaustive search finds."""

from __future__ import annotations

from xegen import hw as hwlib
from xegen.conv import make_problem
from xegen.plan import formulate
from xegen.plan.config import KEYS
from xegen.plan.heuristic import choose_config
from xegen.plan.space import TuningSpace, values
from xegen.tune.search import GENERATION, Search

DESC = "mb1ic32ih8oc32oh8kh3ph1"


def make_space(given=None):
    gemm = formulate(make_problem(DESC))
    platform = hwlib.platform("xehpg")
    heuristic = choose_config(gemm, platform, given)
    return TuningSpace(gemm, platform, given, heuristic), heuristic


def objective(space):
    """A made-up cost with one best configuration: a different preferred value per knob."""

    def cost(config):
        total = 1000
        for i, (key, value) in enumerate(zip(KEYS, values(config), strict=True)):
            position = space.knobs[key].index(value)
            total += (position * (i + 1) * 7919 % 13 - 5) ** 2 * (i % 3 + 1)
        return total

    return cost


def run(search, cost, reverse=False):
    """Evaluate what the search asks, telling each batch's results in order or reversed; returns
    every configuration asked, in order."""
    asked = []
    while not search.finished:
        batch = search.ask()
        asked += batch
        for config in reversed(batch) if reverse else batch:
            search.tell(config, cost(config))
    return asked


def test_the_heuristics_choice_is_evaluated_first():
    space, heuristic = make_space()
    search = Search(space, 24, 0, heuristic)
    assert search.ask()[0] == heuristic


def test_a_space_within_the_budget_is_searched_exhaustively():
    space, heuristic = make_space({"simd": 16, "k_split": 1, "grf": 128, "tg_n": 2})
    legal = space.legal_configs()
    search = Search(space, len(space.candidates), 0, heuristic)
    assert search.method == "exhaustive"
    asked = run(search, objective(space))
    assert sorted(map(values, asked)) == sorted(map(values, legal))


def test_the_search_is_deterministic_given_its_seed_and_not_the_order_of_results():
    space, heuristic = make_space()
    cost = objective(space)
    first = run(Search(space, 40, 3, heuristic), cost)
    again = run(Search(space, 40, 3, heuristic), cost, reverse=True)
    other = run(Search(space, 40, 4, heuristic), cost)
    assert first == again
    assert len(first) == 40 and len(set(first)) == 40  # the budget, never a configuration twice
    assert first != other


def test_evolution_finds_what_exhaustive_search_finds():
    space, heuristic = make_space()
    cost = objective(space)
    legal = space.legal_configs()
    best = min(cost(c) for c in legal)
    exhaustive = Search(space, len(space.candidates), 0, heuristic)
    run(exhaustive, cost)
    assert exhaustive.ranking()[0].cycles == best
    budget = len(legal) // 50  # 2 % of the legal configurations (310 of 15,500)
    assert budget >= 100
    search = Search(space, budget, 0, heuristic)
    run(search, cost)
    assert search.method == "evolutionary"
    assert search.ranking()[0].cycles == best
    # and better than the same number of configurations in the space's order from the heuristic on
    assert min(cost(c) for c in legal[:budget]) > best


def test_failed_configurations_are_not_ranked_and_not_asked_again():
    space, heuristic = make_space()
    cost = objective(space)
    search = Search(space, 3 * GENERATION, 0, heuristic)
    failed = set()
    while not search.finished:
        for i, config in enumerate(search.ask()):
            if i % 2:
                failed.add(config)
                search.tell(config, None)
            else:
                search.tell(config, cost(config))
    ranked = {r.config for r in search.ranking()}
    assert failed and not failed & ranked
    assert len(search.results) == 3 * GENERATION
