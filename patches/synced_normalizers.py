"""rl-games patch: observation and value normalisers that agree across GMIs.

rl-games' ``RunningMeanStd`` updates its running mean and variance from the batch it is handed.
With one replica per GMI, each would follow only its own envs, the replicas would normalise the
same input differently and their weights would drift apart (rl-games' own multi-GPU mode has
this gap). Here a training-mode update first gathers every GMI's batch moments (count, mean,
variance), folds them in GMI order into the moments of the union batch, and applies that one
update everywhere: the update a single process would make from the concatenated batch, bit-
identical on all GMIs. With one GMI it is exactly rl-games' update. Normalising is rl-games'
own code; buffers and state-dict keys are unchanged, so checkpoints load either way.

Applied per agent by :func:`sync_normalizers`, which swaps the modules the agent updates: the
actor's observation normaliser, the value normaliser (the critic's when there is a central
value net) and the central value net's state normaliser.

A learner that knows its next updates' batches ahead (a mini-epoch's minibatches) can gather
their moments in one collective and hand the rows over with :meth:`SyncedRunningMeanStd.expect`;
each update then folds its rows without a collective of its own.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable

import torch
from rl_games.algos_torch import torch_ext
from rl_games.algos_torch.running_mean_std import RunningMeanStd

Gather = Callable[[torch.Tensor], torch.Tensor]  # (L,) float64 -> (num_gmis, L), GMI order


def union_moments(
    rows: torch.Tensor, copies: int = 1
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fold per-GMI batch moments into those of the union batch.

    rows: (num_gmis, 1 + 2C) float64, each ``[count, mean (C), var (C)]`` (population variance).
    Returns (mean (C,), var (C,), count ()). Folding is sequential in row order, so every GMI
    computes bit-identical results from the same rows. ``copies``: the rows are that many copies
    of one batch (``gmi.debug.same_data``), and the union counts as one of them: one process's
    count, hence its running statistics' prior weight and its unbiased variance, exactly.
    """
    c = (rows.shape[1] - 1) // 2
    count, mean, var = rows[0, 0], rows[0, 1 : 1 + c], rows[0, 1 + c :]
    for row in rows[1:]:
        n, m, v = row[0], row[1 : 1 + c], row[1 + c :]
        total = count + n
        delta = m - mean
        mean = mean + delta * n / total
        var = (var * count + v * n + delta**2 * count * n / total) / total
        count = total
    return mean, var, count / copies


class SyncedRunningMeanStd(RunningMeanStd):
    """A ``RunningMeanStd`` whose training-mode updates use the union batch of all GMIs."""

    def __init__(self, source: torch.nn.Module, gather: Gather, copies: int = 1):
        with contextlib.redirect_stdout(io.StringIO()):  # rl-games prints every construction
            super().__init__(source.insize, source.epsilon, source.per_channel, source.norm_only)
        self.load_state_dict(source.state_dict())
        self.to(source.running_mean.device)
        self.train(source.training)
        self._gather, self._copies = gather, copies
        self._ahead: list[torch.Tensor] = []  # gathered rows of the next updates, in order

    def expect(self, rows: list[torch.Tensor]) -> None:
        """The next ``len(rows)`` training-mode updates fold these gathered rows ((GMIs,
        1 + 2C) each, from :func:`batch_moments` of their batches) instead of gathering."""
        self._ahead = list(rows)

    def forward(self, input, denorm: bool = False, mask: torch.Tensor | None = None):
        if not self.training:
            return super().forward(input, denorm, mask)
        if torch.compiler.is_compiling():  # traced into a graph: keep the update out of it
            torch.compiler.disable(_update_from_union)(self, input, mask)
        else:
            _update_from_union(self, input, mask)
        self.training = False  # normalise with the updated statistics, without updating again
        try:
            return super().forward(input, denorm, mask)
        finally:
            self.training = True


def _update_from_union(
    self: SyncedRunningMeanStd, input: torch.Tensor, mask: torch.Tensor | None
) -> None:
    """Fold every GMI's batch moments of ``input`` ((B, C) or masked) into the running ones.

    Never compiled: with rl-games' ``torch_compile`` the model's forward is, and tracing into this
    would put a collective (a graph break) and float64 host arithmetic (C++ code that Inductor
    builds at run time, three GMIs at once) into the learner's graphs."""
    if self._ahead:
        rows = self._ahead.pop(0)
        if int(rows[0, 0]) != input.size(0):
            raise RuntimeError(
                f"normaliser: gathered moments of {int(rows[0, 0])} rows for a batch of "
                f"{input.size(0)}: updates out of step with what was gathered ahead"
            )
        rows = rows.to(self.running_mean.device)
    else:
        rows = self._gather(batch_moments(self, input, mask)).to(self.running_mean.device)
    if rows.shape[0] == 1:  # keep rl-games' exact arithmetic (input dtype moments)
        u_mean, u_var, u_count = _moments(self, input, mask) + (input.size(0),)
    else:
        u_mean, u_var, u_count = union_moments(rows, self._copies)
    self.running_mean, self.running_var, self.count = self._update_mean_var_count_from_moments(
        self.running_mean, self.running_var, self.count, u_mean, u_var, u_count
    )


def _moments(
    rms: RunningMeanStd, input: torch.Tensor, mask: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """rl-games' batch mean and population variance of ``input``, in its dtype."""
    if mask is not None:
        return torch_ext.get_mean_var_with_masks(input, mask)
    return input.mean(rms.axis), input.var(rms.axis, unbiased=False)


def batch_moments(
    rms: RunningMeanStd, input: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """(1 + 2C,) float64 ``[count, mean, var]`` of a batch ``input`` ((B, C) or masked), the row
    every GMI contributes to the union. rl-games weighs a batch by its rows, masked or not; so
    do we (one GMI: identical)."""
    mean, var = _moments(rms, input, mask)
    count = torch.tensor([float(input.size(0))], dtype=torch.float64, device=mean.device)
    return torch.cat([count, mean.double().reshape(-1), var.double().reshape(-1)])


def _synced(module: torch.nn.Module, gather: Gather, copies: int) -> torch.nn.Module:
    if isinstance(module, SyncedRunningMeanStd) or not hasattr(module, "running_mean"):
        return module  # already swapped, or a dict-observation normaliser (left per GMI)
    return SyncedRunningMeanStd(module, gather, copies)


def sync_normalizers(agent, gather: Gather, copies: int = 1) -> list[str]:
    """Swap every normaliser ``agent`` (an rl-games A2C agent) updates for a synced one
    (``copies``: see :func:`union_moments`).

    Returns the names of what was swapped, for the start-up log."""
    swapped = []
    if agent.normalize_input:
        agent.model.running_mean_std = _synced(agent.model.running_mean_std, gather, copies)
        swapped.append("observations")
    if agent.has_central_value:
        critic = agent.central_value_net.model
        if agent.central_value_net.normalize_input:
            critic.running_mean_std = _synced(critic.running_mean_std, gather, copies)
            swapped.append("critic states")
    if agent.normalize_value:
        owner = agent.central_value_net.model if agent.has_central_value else agent.model
        owner.value_mean_std = _synced(owner.value_mean_std, gather, copies)
        agent.value_mean_std = owner.value_mean_std
        swapped.append("values")
    return swapped
