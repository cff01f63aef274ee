"""Small, documented changes to rl-games behaviour, each applied explicitly.

Process-wide, by the sync-PPO body in every GMI (:func:`apply_all`):

- :mod:`.atomic_checkpoint`: checkpoints are written to a temporary file and renamed into place,
  with the task they were trained on (:func:`set_checkpoint_metadata`).
- :mod:`.safe_checkpoint_load`: checkpoints load with ``torch.load(weights_only=True)``: plain
  tensors and values only, never code named by the file.

Per agent, by the GMI PPO agent (``runners/sync_ppo/agent.py``) when GMIs are active:

- :mod:`.synced_normalizers`: observation, value and critic-state normalisers update from the
  union batch of all GMIs, so they agree bit for bit.
- :mod:`.central_value_reduction`: the central value net's gradients go through the GMI reducer
  before its clipping and optimizer step.
- :mod:`.synced_advantages`: advantages are standardised with the union rollout's mean and
  standard deviation instead of each GMI's own.

The agent itself overrides three rl-games methods rather than patching them:
``trancate_gradients_and_step`` (gradients reduced by the layout's strategy, then rl-games'
clipping and step), ``prepare_dataset`` (through :mod:`.synced_advantages`) and ``train_epoch``
(the epoch hook, replica fingerprint checks, merged episode statistics); its scheduler is
wrapped so adaptive learning rates follow the KL averaged over GMIs. It never sets rl-games'
``multi_gpu``.
"""

from . import atomic_checkpoint, safe_checkpoint_load
from .atomic_checkpoint import set_checkpoint_metadata


def apply_all() -> None:
    atomic_checkpoint.apply()
    safe_checkpoint_load.apply()


__all__ = ["apply_all", "set_checkpoint_metadata"]
