"""Normalisers and the central value net's gradients agree across GMIs (the rl-games patches)."""

from __future__ import annotations

import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest
import torch
from rl_games.algos_torch.running_mean_std import RunningMeanStd

from isaacgymenvs_gmi.comm.collectives import ThreadCollectives, ThreadHub
from isaacgymenvs_gmi.patches.central_value_reduction import reduce_critic_gradients
from isaacgymenvs_gmi.patches.synced_normalizers import SyncedRunningMeanStd, union_moments
from tests.speed import budget

BATCH_SIZES = (64, 200, 17)  # GMIs may hold different numbers of rows in a minibatch
DIM = 5


def batches(step: int) -> list[torch.Tensor]:
    """float64, so the union reference is not limited by float32 moments."""
    g = torch.Generator().manual_seed(step)
    return [
        torch.randn(n, DIM, generator=g, dtype=torch.float64) * (1 + i) + 3 * i - step
        for i, n in enumerate(BATCH_SIZES)
    ]


def scripted_rms() -> torch.nn.Module:
    return torch.jit.script(RunningMeanStd((DIM,)))  # what rl-games' models build


def run_gmis(steps: int) -> list[tuple[SyncedRunningMeanStd, list[torch.Tensor]]]:
    """Each GMI a thread with its own synced normaliser; returns (normaliser, outputs) per GMI."""
    world = len(BATCH_SIZES)
    hub = ThreadHub(world)
    results: list = [None] * world
    sources = [scripted_rms() for _ in range(world)]  # scripting is not thread-safe
    errors: list[BaseException] = []

    def gmi(rank: int) -> None:
        comm = ThreadCollectives(rank, hub)

        def gather(row: torch.Tensor) -> torch.Tensor:
            rows = torch.zeros(world, row.numel(), dtype=row.dtype)
            rows[rank] = row
            comm.all_reduce(rows, tuple(range(world)))  # adding zeros is exact: a gather
            return rows

        try:
            rms = SyncedRunningMeanStd(sources[rank], gather)
            outs = [rms(batches(step)[rank]) for step in range(steps)]
            results[rank] = (rms, outs)
        except BaseException as err:  # noqa: BLE001 - re-raised in the main thread
            errors.append(err)

    threads = [threading.Thread(target=gmi, args=(r,), daemon=True) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=budget(60))
    assert not errors, errors
    return results


def test_synced_statistics_are_identical_and_equal_those_of_the_union_batch():
    steps = 6
    gmis = run_gmis(steps)
    first = gmis[0][0].state_dict()
    for rms, _ in gmis[1:]:
        for key, value in rms.state_dict().items():
            assert torch.equal(value, first[key]), key  # bit-identical on every GMI

    union = scripted_rms()  # one process fed the concatenated batches
    for step in range(steps):
        union(torch.cat(batches(step)))
    for key, value in union.state_dict().items():
        torch.testing.assert_close(first[key], value, rtol=1e-10, atol=1e-10)

    # each GMI normalised its own rows with the union statistics
    union.eval()
    last = batches(steps - 1)
    for rank, (_, outs) in enumerate(gmis):
        torch.testing.assert_close(outs[-1], union(last[rank]), rtol=1e-9, atol=1e-9)


def test_per_gmi_statistics_would_differ_without_the_patch():
    plain = [scripted_rms() for _ in BATCH_SIZES]
    for rank, rms in enumerate(plain):
        rms(batches(0)[rank])
    assert not torch.equal(plain[0].running_mean, plain[1].running_mean)


def test_one_gmi_is_exactly_rl_games():
    ours, theirs = SyncedRunningMeanStd(scripted_rms(), lambda row: row[None]), scripted_rms()
    for step in range(4):
        x = batches(step)[1].float()  # float32, as rl-games sees observations
        assert torch.equal(ours(x), theirs(x))
    for key, value in theirs.state_dict().items():
        assert torch.equal(ours.state_dict()[key], value), key
    ours.eval(), theirs.eval()
    assert torch.equal(ours(x, denorm=True), theirs(x, denorm=True))


def test_compiled_forward_leaves_the_statistics_update_uncompiled():
    """rl-games compiles the model (``torch_compile``); the union update (a collective, float64
    host arithmetic) must stay out of the graphs: on an H100, three GMIs building it as C++ at
    once failed the run. The compiled normaliser still updates and normalises as the eager one."""
    graphs: list[torch.fx.GraphModule] = []

    def recording(gm: torch.fx.GraphModule, _inputs):
        graphs.append(gm)
        return gm.forward

    gathered = []

    def gather(row: torch.Tensor) -> torch.Tensor:  # this GMI and a twin with shifted moments
        gathered.append(row)
        twin = row.clone()
        twin[1 : 1 + DIM] += 1.0
        return torch.stack([row, twin])

    eager = SyncedRunningMeanStd(scripted_rms(), gather)
    compiled_module = SyncedRunningMeanStd(scripted_rms(), gather)
    compiled = torch.compile(compiled_module, backend=recording)
    for step in range(3):
        x = batches(step)[0].float()
        assert torch.equal(compiled(x), eager(x))
    assert len(gathered) == 6  # every training-mode call gathered, eager and compiled alike
    for key, value in eager.state_dict().items():
        assert torch.equal(compiled_module.state_dict()[key], value), key
    calls = [str(n.target) for gm in graphs for n in gm.graph.nodes if n.op.startswith("call_")]
    assert graphs and not [c for c in calls if "var" in c or "cat" in c], calls


def test_state_dict_keys_are_rl_games_own():
    source = scripted_rms()
    source(torch.randn(10, DIM))
    synced = SyncedRunningMeanStd(source, lambda row: row[None])
    assert list(synced.state_dict()) == list(source.state_dict())
    assert all(torch.equal(synced.state_dict()[k], v) for k, v in source.state_dict().items())


def test_union_moments_match_concatenation():
    parts = [torch.randn(n, 3, dtype=torch.float64) + i for i, n in enumerate((5, 9, 1, 30))]
    moments = [(torch.tensor([len(p) * 1.0]), p.mean(0), p.var(0, unbiased=False)) for p in parts]
    rows = torch.stack([torch.cat(m) for m in moments])
    mean, var, count = union_moments(rows)
    whole = torch.cat(parts)
    assert count.item() == len(whole)
    torch.testing.assert_close(mean, whole.mean(0))
    torch.testing.assert_close(var, whole.var(0, unbiased=False))


@pytest.mark.parametrize("truncate", [True, False])
def test_critic_gradients_are_reduced_before_clipping(truncate):
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 1)
    critic = SimpleNamespace(
        model=net,
        optimizer=torch.optim.SGD(net.parameters(), lr=1.0),
        truncate_grads=truncate,
        grad_norm=0.5,
    )
    seen = []

    def average(params):  # stands in for the GMI reduction: another GMI had 3x our gradient
        params = list(params)
        seen.append([p.grad.norm().item() for p in params])
        for p in params:
            p.grad *= 2.0

    reduce_critic_gradients(critic, average)
    reduce_critic_gradients(critic, average)  # idempotent: one hook
    assert critic.truncate_grads is False  # rl-games' own clipping is off; ours runs after
    before = [p.detach().clone() for p in net.parameters()]
    net(torch.randn(8, 4)).pow(2).sum().mul(10).backward()
    grads = [p.grad.clone() for p in net.parameters()]
    critic.optimizer.step()
    assert len(seen) == 1
    reduced = [2.0 * g for g in grads]
    if truncate:
        total = torch.sqrt(sum(g.pow(2).sum() for g in reduced))
        reduced = [g * min(1.0, 0.5 / (total.item() + 1e-6)) for g in reduced]
    for b, p, g in zip(before, net.parameters(), reduced, strict=True):
        torch.testing.assert_close(b - p.detach(), g, rtol=1e-5, atol=1e-6)


def test_advantages_are_standardised_over_the_union_batch():
    """Each GMI standardises its shard with the union's moments: the concatenation of the
    shards equals rl-games' standardisation of the concatenated rollout."""
    from isaacgymenvs_gmi.patches.synced_advantages import normalize_over_union

    g = torch.Generator().manual_seed(3)
    shards = [torch.randn(n, generator=g) * (1 + i) + 2 * i for i, n in enumerate((96, 96, 96))]
    rows = torch.stack(
        [
            torch.stack([torch.tensor(float(s.numel())), s.mean(), s.var(unbiased=False)])
            for s in shards
        ]
    ).double()
    union = torch.cat(shards)
    expected = (union - union.mean()) / (union.std() + 1e-8)  # rl-games, one process
    out = [s.clone() for s in shards]
    for s in out:
        normalize_over_union(s, lambda mine: rows)  # every GMI receives the same gathered rows
    assert torch.allclose(torch.cat(out), expected, atol=1e-6)
    alone = [(s - s.mean()) / (s.std() + 1e-8) for s in shards]  # per-GMI, rl-games multi-GPU
    assert not torch.allclose(torch.cat(alone), expected, atol=1e-3)


def test_one_gmi_standardises_advantages_as_rl_games():
    from isaacgymenvs_gmi.patches.synced_advantages import normalize_over_union

    a = torch.randn(500, generator=torch.Generator().manual_seed(4)) * 3 + 1
    out = a.clone()
    normalize_over_union(out, lambda mine: mine.reshape(1, -1))
    assert torch.allclose(out, (a - a.mean()) / (a.std() + 1e-8), atol=1e-6)


def test_the_patch_leaves_torch_compiler_unloaded():
    """Marking the update "never compile" at import would load torch's compiler (about a second
    in every GMI) in runs that never compile; it is marked only while a graph is traced."""
    code = (
        "import sys, torch\n"
        "import isaacgymenvs_gmi.patches.synced_normalizers\n"
        "print('torch._dynamo.eval_frame' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr[-2000:]
