"""Algorithm 1 (every branch) and the Table 2 cost model."""

import pytest

from isaacgymenvs_gmi.comm.cost_model import reduction_time
from isaacgymenvs_gmi.comm.selector import RULES, mrr_valid, select_strategy


@pytest.mark.parametrize(
    "mpl,expected,rule",
    [
        ([[0, 1, 2]], "mpr", 0),  # all GMIs on one GPU
        ([[0]], "mpr", 0),
        ([[0, 1], [2]], "har", 1),  # uneven GMIs per GPU
        ([[0, 1, 2], [3, 4]], "har", 1),
        ([[0, 1, 2], [3, 4, 5]], "har", 2),  # 3 GMIs per GPU > 2 GPUs
        ([[0, 1], [2, 3]], "mrr", 3),  # 2 per GPU <= 2 GPUs
        ([[0, 1], [2, 3], [4, 5]], "mrr", 3),
        ([[0], [1], [2], [3]], "mrr", 3),
    ],
)
def test_algorithm_1_every_branch(mpl, expected, rule):
    assert select_strategy(mpl) == expected
    first = next(i for i, (_, applies, _) in enumerate(RULES) if applies(mpl))
    assert first == rule
    assert mrr_valid(mpl) == (expected == "mrr")


def test_cost_model_table_2():
    m, b1, b2 = 1e6, 1e9, 1e11
    assert reduction_time("mpr", 2, 3, m, b1, b2) == pytest.approx(2 * 5 * m / (6 * b1))
    assert reduction_time("mrr", 2, 3, m, b1, b2) == pytest.approx(2 * 1 * 4 * m / (2 * b2))
    assert reduction_time("har", 2, 3, m, b1, b2) == pytest.approx(
        2 * 1 * m / (2 * b2) + 2 * 2 * m / (3 * b1)
    )
    assert reduction_time("mpr", 1, 1, m, b1, b2) == 0.0
    with pytest.raises(ValueError):
        reduction_time("ring", 1, 1, m, b1, b2)
