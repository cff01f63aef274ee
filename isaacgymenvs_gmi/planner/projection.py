"""The paper's ``estimate``: a candidate's throughput on the whole system, from one device's trial.

A trial measures one device, its GMIs' gradient reduction included. On ``devices`` devices each
PPO update also waits for the reduction across devices, modelled after Table 2 of the paper
(:func:`isaacgymenvs_gmi.comm.cost_model.reduction_time`, the strategy Algorithm 1 picks) and
charged to each epoch:

    projected = measured x devices x t_epoch / (t_epoch + updates x (T(g, t) - T(1, t)))

where ``t_epoch`` is an epoch's time on the trial device and ``T`` the reduction time.
Bandwidths are modelled: GMIs of one device exchange through shared memory (or CUDA IPC) at
:data:`INTRA_DEVICE_BPS`; devices through NCCL between GPUs or gloo between CPU devices.
"""

from __future__ import annotations

from dataclasses import dataclass

from isaacgymenvs_gmi.comm.cost_model import reduction_time
from isaacgymenvs_gmi.comm.reducers import select_strategy

from .search import Candidate, Profile

INTRA_DEVICE_BPS = 5e9  # host shared memory / CUDA IPC between GMIs of one device
INTER_DEVICE_BPS = {True: 20e9, False: 1e9}  # NCCL between GPUs (PCIe-class); gloo on the CPU


@dataclass(frozen=True)
class Projection:
    """What projecting needs besides a trial: the system and the PPO update pattern."""

    devices: int  # devices (GPUs, or CPU devices) the run will use on this node
    gpu: bool  # they are GPUs
    horizon: int  # env steps per GMI per epoch
    updates_per_epoch: int  # gradient reductions per epoch (mini_epochs x minibatches)
    model_bytes: float  # bytes of gradients reduced per update

    def __call__(self, cand: Candidate, prof: Profile) -> float:
        measured = prof.env_steps_per_s
        if self.devices <= 1 or measured <= 0:
            return measured * max(self.devices, 1)
        t_epoch = self.horizon * cand.num_envs * cand.per_gpu / measured
        return measured * self.devices * t_epoch / (t_epoch + self.extra_seconds(cand.per_gpu))

    def extra_seconds(self, per_gpu: int) -> float:
        """Reduction time per epoch that the other devices add."""
        b2 = INTER_DEVICE_BPS[self.gpu]
        g, t, m = self.devices, per_gpu, self.model_bytes
        mpl = [list(range(d * t, (d + 1) * t)) for d in range(g)]
        whole = reduction_time(select_strategy(mpl), g, t, m, INTRA_DEVICE_BPS, b2)
        one = reduction_time("mpr", 1, t, m, INTRA_DEVICE_BPS, b2)
        return self.updates_per_epoch * max(0.0, whole - one)


def mlp_parameters(obs: int, actions: int, network: dict) -> int:
    """Parameters of rl-games' continuous actor-critic MLP (``network.mlp.units``; a second
    trunk when ``separate``): trunk, mean head, value head and the state-independent sigma."""
    units = [int(u) for u in (network.get("mlp") or {}).get("units") or []]
    sizes = [obs, *units]
    trunk = sum(a * b + b for a, b in zip(sizes, sizes[1:], strict=False))
    last = sizes[-1]
    heads = (last * actions + actions) + (last + 1) + actions
    return trunk * (2 if network.get("separate") else 1) + heads
