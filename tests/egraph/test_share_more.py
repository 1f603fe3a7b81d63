"""share_more: the greedy DAG choice improved one class at a time by the whole DAG's cost, on a
hand-built e-graph whose prices are worked out below (XeLP: a multiply by a small immediate, an
add, a subtract and a max cost 1 each)."""

from __future__ import annotations

from xegen.egraph import CostModel
from xegen.egraph.costs import INFINITE
from xegen.egraph.extract import Node, Snapshot, dag_total, greedy_dag, node_costs, share_more
from xegen.ir.types import S32

T = (S32,)


def max_of_two_forms() -> Snapshot:
    """max(c*-2 + d, c*2), whose first operand also has the form d - c*2 (class 6) and, to test
    cycles, the form max(itself, itself)."""
    classes = [
        [Node("Var", T, (), "c")],  # 0
        [Node("Var", T, (), "d")],  # 1
        [Node("Const", T, (), 2)],  # 2
        [Node("Const", T, (), -2)],  # 3
        [Node("Mul", T, (0, 2))],  # 4: c*2
        [Node("Mul", T, (0, 3))],  # 5: c*-2
        [Node("Add", T, (5, 1)), Node("Sub", T, (1, 4)), Node("Max", T, (6, 6))],  # 6
        [Node("Max", T, (6, 4))],  # 7: the root
    ]
    return Snapshot(classes, roots=[7], constant={2: 2, 3: -2}, class_type=dict.fromkeys(range(8), S32))


def test_the_form_that_reuses_a_chosen_subexpression_wins():
    snapshot = max_of_two_forms()
    model = CostModel("xelp")
    costs = node_costs(snapshot, model)
    greedy = greedy_dag(snapshot, model)
    assert greedy[6] == 0  # a tie for the greedy extractor (2 each below class 6): the first node
    assert dag_total(snapshot, costs, greedy) == 4  # c*-2, the add, c*2, the max
    better = share_more(snapshot, model, dict(greedy))
    assert better[6] == 1  # d - c*2: c*2 is paid once
    assert dag_total(snapshot, costs, better) == 3


def test_a_choice_that_makes_a_class_its_own_operand_has_no_cost():
    snapshot = max_of_two_forms()
    costs = node_costs(snapshot, CostModel("xelp"))
    choice = {cls: 0 for cls in range(8)} | {6: 2}
    assert dag_total(snapshot, costs, choice) == INFINITE + 1


def test_without_budget_the_greedy_choice_stays():
    snapshot = max_of_two_forms()
    model = CostModel("xelp")
    greedy = greedy_dag(snapshot, model)
    assert share_more(snapshot, model, dict(greedy), budget=0) == greedy
