"""One lockstep update of two GMIs, compiled (rl-games' ``torch_compile``) against eager, from
identical weights and minibatches: the union normaliser statistics and the reduced gradient
agree. On the CPU in float32; on a GPU (marked ``gpu``) also with rl-games' bf16 autocast,
which the CPU cannot run. torch keeps its compile caches in the test session's temp dir
(tests/session_temp.py)."""

from __future__ import annotations

import os

import pytest
import torch

from isaacgymenvs_gmi.launch import plan_run
from isaacgymenvs_gmi.patches.synced_normalizers import batch_moments, sync_normalizers
from isaacgymenvs_gmi.runners.shared.agents import build_agent

MINIBATCH = 256  # per GMI
GMIS = 2


def _shards(obs: int, actions: int, device: str) -> list[dict[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(11)

    def r(*shape, scale=1.0):
        return (torch.randn(*shape, generator=gen) * scale).to(device)

    return [
        {
            "obs": r(MINIBATCH, obs, scale=2.0) + g,  # the GMIs' envs differ
            "actions": r(MINIBATCH, actions),
            "old_values": r(MINIBATCH, 1),
            "old_logp_actions": r(MINIBATCH).abs() + actions,
            "advantages": r(MINIBATCH),
            "returns": r(MINIBATCH, 1),
            "mu": r(MINIBATCH, actions, scale=0.3),
            "sigma": torch.ones(MINIBATCH, actions, device=device),
        }
        for g in range(GMIS)
    ]


def _one_update(plan, tmp_path, compiled: bool, device: str, mixed: bool):
    """Each GMI's update from identical weights (one agent, its state restored before each
    GMI's minibatch): synced normalisers fed both GMIs' moments ahead (as a mini-epoch does),
    one ``calc_gradients`` without the step. Returns the union statistics and the mean of the
    GMIs' gradients."""
    from rl_games.algos_torch.a2c_continuous import A2CAgent

    obs, _, actions = plan.dims
    shards = _shards(obs, actions, device)
    torch.manual_seed(0)
    agent = build_agent(
        plan, rl_device=device, seed=0, threads=1, make=A2CAgent, train_dir=str(tmp_path)
    )
    agent.mixed_precision = mixed
    agent.scaler = torch.amp.GradScaler("cuda", enabled=False)
    agent.trancate_gradients_and_step = lambda: None  # compare before the step
    sync_normalizers(agent, lambda row: pytest.fail("gathered instead of read ahead"))
    rms = agent.model.running_mean_std
    rows = torch.stack([batch_moments(rms, s["obs"]).cpu() for s in shards])
    start = {k: v.clone() for k, v in agent.model.state_dict().items()}
    if compiled:
        agent.model = torch.compile(agent.model)  # as rl-games' Runner does
    grads, stats = [], []
    for g in range(GMIS):
        getattr(agent.model, "_orig_mod", agent.model).load_state_dict(start)
        rms.expect([rows])
        agent.model.train()
        A2CAgent.calc_gradients(agent, shards[g])
        grads.append(torch.cat([p.grad.reshape(-1).double() for p in agent.model.parameters()]))
        stats.append(torch.cat([rms.running_mean, rms.running_var, rms.count.reshape(1)]))
    assert torch.equal(stats[0], stats[1])
    assert float(stats[0][-1]) == 1 + GMIS * MINIBATCH  # updated once, from the union
    return stats[0], torch.stack(grads).mean(0)


@pytest.mark.parametrize(
    ("device", "mixed"),
    [("cpu", False), pytest.param("cuda", True, marks=pytest.mark.gpu)],
)
def test_compiled_and_eager_agree_on_one_two_gmi_update(compose_cfg, tmp_path, device, mixed):
    cfg = compose_cfg("task=Ant", "num_envs=64", f"train.params.config.minibatch_size={MINIBATCH}")
    plan = plan_run(cfg, platform=(device == "cuda", (device,), False))
    eager_stats, eager = _one_update(plan, tmp_path, False, device, mixed)
    compiled_stats, compiled = _one_update(plan, tmp_path, True, device, mixed)
    from torch._inductor import codecache  # its headers go to the session's temp dir, not /tmp

    assert codecache._HEADER_DIR.startswith(os.environ["TMPDIR"] + os.sep)
    torch.testing.assert_close(compiled_stats, eager_stats, rtol=1e-5, atol=0)
    error = float((compiled - eager).norm() / eager.norm())
    print(f"compiled vs eager ({device}, mixed precision {mixed}): relative error {error:.1e}")
    assert error <= 1e-5, f"compiled and eager reduced gradients differ by {error:.1e}"
