"""Algorithm 1 (every branch, comm/reducers.py) and the Table 2 cost model (comm/cost_model.py)."""

import pytest

from isaacgymenvs_gmi.comm.cost_model import reduction_time, table_2_time
from isaacgymenvs_gmi.comm.reducers import RULES, mrr_valid, select_strategy


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


# Table 2 (table_2_time) worked by hand for M_p = 1 MB of gradients, B_1 = 1 GB/s between GMIs
# (through the host) and B_2 = 10 GB/s over NCCL:
#   MPR = 2(gt-1) M_p / (g t B_1)
#   MRR = 2(g-1)(t+1) M_p / (g B_2)
#   HAR = 2(g-1) M_p / (g B_2) + 2(t-1) M_p / (t B_1)
M, B1, B2 = 1e6, 1e9, 1e10


@pytest.mark.parametrize(
    ("g", "t", "mpr", "mrr", "har"),
    [
        # one GMI: nothing to reduce, every factor (gt-1), (g-1), (t-1) is 0
        (1, 1, 0.0, 0.0, 0.0),
        # MPR 2*2*M/(3*B1) = 4e6/3e9; MRR 0 (g-1 = 0); HAR 0 + 2*2*M/(3*B1) = MPR
        (1, 3, 1.333333e-3, 0.0, 1.333333e-3),
        # MPR 2*3*M/(4*B1) = 6e6/4e9; MRR 2*1*3*M/(2*B2) = 6e6/2e10;
        # HAR 2*1*M/(2*B2) + 2*1*M/(2*B1) = 1e-4 + 1e-3
        (2, 2, 1.5e-3, 3e-4, 1.1e-3),
        # MPR 2*5*M/(6*B1) = 1e7/6e9; MRR 2*1*4*M/(2*B2) = 8e6/2e10 (the formula only: t > g);
        # HAR 2*1*M/(2*B2) + 2*2*M/(3*B1) = 1e-4 + 1.333333e-3
        (2, 3, 1.666667e-3, 4e-4, 1.433333e-3),
        # MPR 2*3*M/(4*B1) = 6e6/4e9; MRR 2*3*2*M/(4*B2) = 1.2e7/4e10; HAR 2*3*M/(4*B2) + 0
        # (as printed, Table 2 charges MRR twice HAR here, where Algorithm 1 picks MRR)
        (4, 1, 1.5e-3, 3e-4, 1.5e-4),
        # MPR 2*15*M/(16*B1) = 3e7/1.6e10; MRR 2*3*5*M/(4*B2) = 3e7/4e10;
        # HAR 2*3*M/(4*B2) + 2*3*M/(4*B1) = 1.5e-4 + 1.5e-3
        (4, 4, 1.875e-3, 7.5e-4, 1.65e-3),
    ],
    ids=["1G1T", "1G3T", "2G2T", "2G3T", "4G1T", "4G4T"],
)
def test_cost_model_table_2(g, t, mpr, mrr, har):
    """Table 2 against hand-worked seconds for g GPUs of t GMIs each."""
    assert table_2_time("mpr", g, t, M, B1, B2) == pytest.approx(mpr)
    assert table_2_time("mrr", g, t, M, B1, B2) == pytest.approx(mrr)
    assert table_2_time("har", g, t, M, B1, B2) == pytest.approx(har)


@pytest.mark.parametrize(("g", "t"), [(2, 2), (4, 1), (4, 4), (3, 2)])
def test_our_mrr_costs_what_har_costs_and_algorithm_1_never_picks_the_dearer(g, t):
    """Our MRR: t rings side by side across the GPUs, then the partial sums meet inside each
    GPU (B_1): HAR's bandwidth cost. At one GMI per GPU Table 2 as printed charges it twice."""
    mrr, har = (reduction_time(s, g, t, M, B1, B2) for s in ("mrr", "har"))
    assert mrr == pytest.approx(har)
    mpl = [list(range(d * t, (d + 1) * t)) for d in range(g)]
    assert select_strategy(mpl) == "mrr"
    if t == 1:  # the case Table 2 prices at twice HAR
        assert table_2_time("mrr", g, t, M, B1, B2) == pytest.approx(2 * har)


@pytest.mark.parametrize(("g", "t"), [(1, 3), (2, 3)])
def test_mrr_is_not_priced_where_it_cannot_run(g, t):
    with pytest.raises(ValueError, match="MRR cannot run"):
        reduction_time("mrr", g, t, M, B1, B2)
    assert table_2_time("mrr", g, t, M, B1, B2) >= 0  # the paper's formula says nothing of it


def test_cost_model_refuses_an_unknown_strategy():
    with pytest.raises(ValueError):
        reduction_time("ring", 1, 1, M, B1, B2)
    with pytest.raises(ValueError):
        table_2_time("ring", 1, 1, M, B1, B2)


@pytest.mark.parametrize("strategy", ["mpr", "mrr", "har"])
def test_cost_grows_in_proportion_to_the_gradients(strategy):
    """Every row of Table 2 is linear in M_p: 10x the gradients, 10x the time (2G2T)."""
    times = [reduction_time(strategy, 2, 2, m, B1, B2) for m in (1e5, 1e6, 1e7)]
    assert times[0] < times[1] < times[2]
    assert times[2] == pytest.approx(10 * times[1]) and times[1] == pytest.approx(10 * times[0])


def test_each_strategy_pays_for_its_own_links():
    """Table 2: MPR only crosses the host (B_1), MRR only NCCL (B_2), HAR both (2G2T)."""
    assert table_2_time("mpr", 2, 2, M, B1, 1e12) == pytest.approx(1.5e-3)  # B_2 unused
    assert table_2_time("mrr", 2, 2, M, 1e12, B2) == pytest.approx(3e-4)  # B_1 unused
    # HAR with NCCL 100x faster: 2*1*M/(2*1e12) + 2*1*M/(2*B1) = 1e-6 + 1e-3
    assert reduction_time("har", 2, 2, M, B1, 1e12) == pytest.approx(1.001e-3)


@pytest.mark.parametrize(
    ("mpl", "picked"),
    [
        ([[0, 1], [2, 3]], "mrr"),  # 2G2T
        ([[0, 1, 2], [3, 4, 5]], "har"),  # 2G3T: MRR is not valid, 3 GMIs per GPU > 2 GPUs
        ([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]], "mrr"),  # 4G4T
    ],
    ids=["2G2T", "2G3T", "4G4T"],
)
def test_layout_aware_reduction_beats_mpr_on_table_7_layouts(mpl, picked):
    """§6.2, Table 7: on these layouts the strategy Algorithm 1 picks (LGR) is faster than the
    MPR baseline when NCCL outruns the host (B_2 > B_1)."""
    g, t = len(mpl), len(mpl[0])
    assert select_strategy(mpl) == picked and mrr_valid(mpl) == (picked == "mrr")
    assert reduction_time(picked, g, t, M, B1, B2) < reduction_time("mpr", g, t, M, B1, B2)


def test_har_gains_nothing_over_mpr_without_a_faster_inter_gpu_link():
    """With B_2 = B_1 = B, HAR - MPR = 2 M_p/B (1 - 1/g)(1 - 1/t) >= 0: the hierarchy only pays
    when NCCL is faster than going through the host."""
    # 2G2T, B = 1 GB/s: HAR 2*1*M/(2*B) + 2*1*M/(2*B) = 2e-3; MPR 2*3*M/(4*B) = 1.5e-3;
    # 2*M/B * (1/2)(1/2) = 5e-4
    assert reduction_time("har", 2, 2, M, B1, B1) == pytest.approx(2e-3)
    assert reduction_time("mpr", 2, 2, M, B1, B1) == pytest.approx(1.5e-3)
    # one GPU, or one GMI per GPU: (1 - 1/g)(1 - 1/t) = 0, the two cost the same
    for g, t in ((1, 3), (3, 1)):
        har, mpr = (reduction_time(s, g, t, M, B1, B1) for s in ("har", "mpr"))
        assert har == pytest.approx(mpr)
