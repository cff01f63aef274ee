"""GMI bodies for tests of the spine: they run in real GMI processes (spawned, bound, joined)
and report what they saw, so a test can check the spine without training anything."""

from __future__ import annotations

import os

import torch

from isaacgymenvs_gmi.gmi.context import GmiContext


def describe_context(ctx: GmiContext) -> dict:
    """What a body receives, as plain values."""
    group = ctx.group
    return {
        "rank": ctx.rank,
        "world": None if group is None else group.world_size,
        "cores": list(ctx.resources.cores),
        "affinity": sorted(os.sched_getaffinity(0)),
        "sim_device": ctx.resources.sim_device,
        "scratch_is_dir": ctx.scratch_dir is not None and os.path.isdir(ctx.scratch_dir),
        "mode": ctx.plan.mode,
    }


def _linear(seed: int) -> torch.nn.Linear:
    torch.manual_seed(seed)
    return torch.nn.Linear(3, 2)


def exercise_group(ctx: GmiContext) -> dict:
    """Every mode-neutral group operation once, with values that differ per GMI."""
    group, rank = ctx.group, ctx.rank
    seen = describe_context(ctx)
    group.check_pools()
    group.startup_barrier("probe start")
    seen["gathered"] = group.all_gather_vector(torch.tensor([rank, 10 * rank]), "gather").tolist()
    seen["mean"] = group.mean_scalar("mean", float(rank + 1))
    total = torch.tensor([float(rank + 1), 1.0], dtype=torch.float64)
    group.sum_(total, "sum")
    seen["sum"] = total.tolist()
    net = _linear(seed=rank)  # different weights on every GMI
    group.broadcast_module(net, "probe weights")
    group.check_same([net], "after broadcast")  # raises if the broadcast missed anything
    seen["weights"] = net.weight.detach().flatten().tolist()
    if rank == 1:
        with torch.no_grad():
            net.bias[0] += 1e-6  # one replica drifts by one value
    try:
        group.check_same([net], "after drift")
        seen["drift_detected"] = False
    except RuntimeError as err:
        seen["drift_detected"] = "diverged" in str(err)
    seen["no_stop"] = group.agree_stop(None)
    seen["stop"] = group.agree_stop(15 if rank == 1 else None)  # only GMI 1 got SIGTERM
    seen["store_is_signed"] = type(group.store).__name__ == "SignedStore"
    return seen


def exercise_lockstep(ctx: GmiContext) -> dict:
    """Sync PPO's exchanges over a real reducer: gradient averaging and meter merging."""
    import io

    from rl_games.algos_torch.torch_ext import AverageMeter

    from isaacgymenvs_gmi.comm import build_gradient_reduction
    from isaacgymenvs_gmi.runners.shared.lockstep import PpoLockstep
    from isaacgymenvs_gmi.runners.sync_ppo.telemetry import EpochTelemetry

    plan, group, rank = ctx.plan, ctx.group, ctx.rank
    reports: list[str] = []
    reducer = build_gradient_reduction(
        rank,
        plan.layout,
        comm=plan.gmi.comm,
        intra_device=plan.gmi.intra_device,
        store=group.store,
        timeout_s=group.timeout_s,
        device="cpu",
        backend=plan.gmi_backend,
        report=reports.append,
    )
    stream = io.StringIO()
    telemetry = EpochTelemetry(8, 4, rank, group.all_gather_vector, stream=stream)
    lockstep = PpoLockstep(group, reducer)
    net = _linear(seed=0)
    for p in net.parameters():
        p.grad = torch.full_like(p, float(rank + 1))
    before = group.guard.count
    lockstep.reduce_gradients_and_kl(net.parameters(), torch.tensor(float(rank + 1)))
    collectives = group.guard.count - before
    kl = lockstep.mean_kl(fallback=-1.0)
    grads = [p.grad.flatten().tolist() for p in net.parameters()]
    for scale in (1.0, 10.0):  # a mini-epoch of two minibatches (rl-games' standard schedule)
        lockstep.reduce_gradients_and_kl(net.parameters(), torch.tensor(scale * (rank + 1)))
    mini_epoch_kl = lockstep.mean_kl(fallback=-1.0)
    rewards = AverageMeter((1,), 100)
    if rank == 0:  # GMI 0 saw two episodes (mean 10), GMI 1 one episode (40)
        rewards.update(torch.tensor([[4.0], [16.0]]))
    else:
        rewards.update(torch.tensor([[40.0]]))
    lockstep.merge_meter(rewards, (1,))
    telemetry.record(
        epoch=3, max_epochs=9, epoch_seconds=0.5 * (rank + 1), reward=None, writer=None
    )
    return {
        "rank": rank,
        "grads": grads,
        "kl": kl,
        "mini_epoch_kl": mini_epoch_kl,
        "collectives": collectives,
        "meter": (float(rewards.mean.reshape(-1)[0]), int(rewards.current_size)),
        "reports": reports,
        "strategy": reducer.strategy,
        "line": stream.getvalue(),
        "history": telemetry.history,
    }
