"""The numerical audit (``gmi.debug.audit=N``): every N epochs, one minibatch's losses and
gradients recomputed in float64 on the host, from the same weights and inputs, and compared
with what the GMIs computed and applied.

Replicas that agree prove the GMIs identical, not right (a wrong GEMM, or a reduction reading a
peer's buffer too early, lands in every replica alike). So at the first minibatch of an audited
epoch every GMI sends GMI 0 its shard, losses and gradient before the reduction; GMI 0 replays
rl-games' ``calc_gradients`` without the optimizer step on a float64 copy of the model from
before that minibatch: the observation normaliser updated once from the union of the shards (as
the synced normalisers do), then every shard. Their mean is the reduced gradient to apply.

The largest relative error is reported; above the tolerance the run stops, naming the tensor
and the GMI, before that epoch's checkpoint. A tensor's error is relative to its own norm, or 1 %
of the whole gradient's norm where that is larger (a nearly cancelling gradient carries
float32's noise). Gradient scaling is undone; gradients are compared before clipping.
Feed-forward policies only; a central value net's own minibatches are not replayed.
"""

from __future__ import annotations

import copy
import inspect
import logging
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from rl_games.algos_torch.a2c_continuous import A2CAgent
from rl_games.algos_torch.running_mean_std import RunningMeanStd
from rl_games.common.diagnostics import DefaultDiagnostics

from .nonfinite_trace import INPUTS, plain_module  # INPUTS: the minibatch's inputs

log = logging.getLogger(__name__)

LOSSES = ("a_loss", "c_loss", "entropy", "b_loss")  # rl-games' train_result positions 0, 1, 2, 8
LOSS_AT = (0, 1, 2, 8)
TOLERANCE = {False: 1e-3, True: 5e-2}  # float32 learners, and mixed precision (bf16 autocast)
GRADIENT_FLOOR = 1e-2  # of the whole gradient's norm: the smallest norm a tensor is judged by
LOSS_FLOOR = 1e-3  # the smallest magnitude a loss term is judged by

Gather = Callable[[torch.Tensor], torch.Tensor]  # (L,) float64 -> (GMIs, L), GMI order
Agree = Callable[[str | None], str | None]  # GMI 0's verdict (None: passed), on every GMI


class AuditFailed(RuntimeError):
    """The float64 recompute disagrees with what the GMIs computed or applied."""


@dataclass(frozen=True)
class AuditResult:
    epoch: int
    error: float  # the largest relative error found
    where: str  # which tensor, of which GMI (or the reduction)
    tolerance: float

    def line(self) -> str:
        return (
            f"numerical audit at epoch {self.epoch}: largest relative error {self.error:.1e} "
            f"({self.where}) against a float64 recompute, tolerance {self.tolerance:.0e}"
        )


class GradientAudit:
    """One learner's side of the audit (see the module docstring). ``gather`` and ``agree``
    are the collectives (in one process: ``x[None]`` and the identity)."""

    def __init__(
        self, every: int, tolerance: float | None, rank: int, gather: Gather, agree: Agree
    ):
        self.every, self.tolerance, self.rank = every, tolerance, rank
        self.gather, self.agree = gather, agree
        self.results: list[AuditResult] = []
        self._model: torch.nn.Module | None = None  # GMI 0: a float64 copy before the update
        self._shard: dict[str, torch.Tensor] | None = None
        self._local: torch.Tensor | None = None
        self._applied: torch.Tensor | None = None

    def due(self, agent, minibatch: int) -> bool:
        """Whether ``agent``'s ``minibatch``-th minibatch (0-based, in its epoch) is audited."""
        if minibatch != 0 or agent.epoch_num % self.every != 0:
            return False
        if agent.is_rnn and agent.epoch_num == self.every:
            log.warning("gmi.debug.audit: recurrent policies are not audited")
        return not agent.is_rnn

    def begin(self, agent, minibatch: dict[str, Any]) -> None:
        """Before the minibatch's forward pass: its inputs, and (GMI 0) the model as it is."""
        self._shard = {k: minibatch[k].detach().clone() for k in INPUTS}
        if self.rank == 0:
            self._model = host_float64_copy(agent.model)

    def capture(self, agent, stage: str) -> None:
        """The gradients as they are now, unscaled: ``local`` (this GMI's, before any
        reduction) or ``applied`` (what the optimizer is about to take)."""
        if self._shard is None:
            return
        flat = torch.cat(
            [p.grad.detach().reshape(-1).double() for _, p in _named_with_grads(agent)]
        )
        flat = (flat / float(agent.scaler.get_scale())).cpu()
        if stage == "local":
            self._local = flat
        else:
            self._applied = flat
            if self._local is None:  # one process: nothing was reduced
                self._local = flat

    def finish(self, agent) -> AuditResult | None:
        """After the minibatch (collective): compare, report on GMI 0, stop every GMI above
        the tolerance. Returns GMI 0's result (None elsewhere, and where nothing was begun)."""
        if self._shard is None:
            return None
        shard, self._shard = self._shard, None
        parts = torch.stack([_scalar(agent.train_result[i]) for i in LOSS_AT])
        mine = torch.cat(
            [*(t.double().reshape(-1).cpu() for t in shard.values()), parts, self._local]
        )
        rows = self.gather(mine)
        verdict = result = None
        if self.rank == 0:
            result = self._judge(agent, shard, rows)
            self.results.append(result)
            if result.error > result.tolerance:
                verdict = (
                    f"numerical audit at epoch {result.epoch}: {result.where} is off by "
                    f"{result.error:.1e} (relative) from a float64 recompute of the same minibatch,"
                    f" tolerance {result.tolerance:.0e}; stopped before this epoch's checkpoint"
                )
            else:
                log.info(result.line())
        self._model = self._local = self._applied = None
        verdict = self.agree(verdict)
        if verdict is not None:
            raise AuditFailed(verdict)
        return result

    def _judge(self, agent, shard: dict[str, torch.Tensor], rows: torch.Tensor) -> AuditResult:
        names = [n for n, _ in _named_with_grads(agent)]
        shapes = {k: v.shape for k, v in shard.items()}
        sizes = [v.numel() for v in shard.values()]
        shards, losses, locals_ = [], [], []
        for row in rows:
            pieces = row.split([*sizes, len(LOSSES), row.numel() - sum(sizes) - len(LOSSES)])
            shards.append({k: p.reshape(shapes[k]) for k, p in zip(shard, pieces, strict=False)})
            losses.append(pieces[-2])
            locals_.append(pieces[-1])
        ref_grads, ref_losses = replay(agent, self._model, shards)
        sizes = [p.numel() for _, p in _named_with_grads(agent)]
        found: list[tuple[float, str]] = []
        for g, (got_loss, want_loss) in enumerate(zip(losses, ref_losses, strict=True)):
            for name, got, want in zip(LOSSES, got_loss, want_loss, strict=True):
                err = abs(float(got) - float(want)) / max(abs(float(want)), LOSS_FLOOR)
                found.append((err, f"GMI {g}'s loss term {name}"))
            found += _tensor_errors(
                locals_[g], ref_grads[g], names, sizes, f"GMI {g}'s gradient of"
            )
        reduced = torch.stack(ref_grads).mean(0)
        found += _tensor_errors(self._applied, reduced, names, sizes, "the reduced gradient of")
        error, where = max(found)
        tolerance = self.tolerance or TOLERANCE[bool(agent.mixed_precision)]
        return AuditResult(agent.epoch_num, error, where, tolerance)


def _tensor_errors(got, want, names, sizes, what: str) -> list[tuple[float, str]]:
    floor = GRADIENT_FLOOR * float(want.norm())
    return [
        (float((g - w).norm()) / max(float(w.norm()), floor, 1e-30), f"{what} {name}")
        for name, g, w in zip(names, got.split(sizes), want.split(sizes), strict=True)
    ]


def _scalar(x: Any) -> torch.Tensor:
    return torch.as_tensor(x).detach().double().reshape(-1)[0].cpu()


def _named_with_grads(agent) -> list[tuple[str, torch.nn.Parameter]]:
    return [(n, p) for n, p in plain_module(agent.model).named_parameters() if p.grad is not None]


def host_float64_copy(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` (uncompiled) copied to the host in float64, its forward hooks dropped and its
    normalisers rl-games' own class again (updating from the batch they are given)."""
    twin = copy.deepcopy(plain_module(model)).to("cpu", torch.float64)
    for module in twin.modules():
        module._forward_hooks.clear()
        if isinstance(module, RunningMeanStd) and type(module) is not RunningMeanStd:
            module.__class__ = RunningMeanStd  # the synced subclass keeps no other state
    return twin


class _Replay:
    """Stands in for the agent inside rl-games' ``calc_gradients``: its model is the float64
    copy, on the host, without autocast, scaling or the optimizer step; every other attribute
    is the agent's, and the agent's methods run with this stand-in as ``self``."""

    def __init__(self, agent, model: torch.nn.Module):
        self._agent = agent
        self.model = model
        self.mixed_precision = False
        self.multi_gpu = False
        self.scaler = types.SimpleNamespace(scale=lambda loss: loss)  # scales nothing
        self.diagnostics = DefaultDiagnostics()
        self.ppo_device = "cpu"
        self.device = "cpu"

    def trancate_gradients_and_step(self) -> None:
        """The step is left out: the gradients are what is compared."""

    def __getattr__(self, name: str):
        method = inspect.getattr_static(type(self._agent), name, None)
        if isinstance(method, types.FunctionType):
            return method.__get__(self)
        return getattr(self._agent, name)


def replay(
    agent, model: torch.nn.Module, shards: list[dict[str, torch.Tensor]]
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """rl-games' update of ``shards`` (one minibatch per GMI, float64 host tensors) on
    ``model`` (:func:`host_float64_copy` from before the update), without the step. Returns
    each shard's flat gradient and its loss terms (:data:`LOSSES`)."""
    stand_in = _Replay(agent, model)
    model.train()
    normalizer = getattr(model, "running_mean_std", None)
    if agent.normalize_input and normalizer is not None:
        union = torch.cat([stand_in._preproc_obs(s["obs"]) for s in shards])
        with torch.no_grad():
            normalizer(union)  # the union's update, once, as the synced normalisers make it
        normalizer.eval()
    grads, losses = [], []
    for shard in shards:
        A2CAgent.calc_gradients(stand_in, shard)
        grads.append(
            torch.cat([p.grad.reshape(-1) for p in model.parameters() if p.grad is not None])
        )
        losses.append(torch.stack([_scalar(stand_in.train_result[i]) for i in LOSS_AT]))
    return grads, losses
