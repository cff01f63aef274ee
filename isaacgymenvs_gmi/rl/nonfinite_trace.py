"""``gmi.debug.trace_nonfinite``: where a training run's first non-finite value appeared.

The learner check (:mod:`.finite_check`) sees only an epoch's mean losses, after the forward
passes are gone. With the trace on, the agent copies its weights before every minibatch; at the
first minibatch with non-finite losses it replays that forward pass on a copy of the model with
those weights and normaliser statistics, eagerly, under the training's autocast twice, then in
float32, with a hook on every module. The report gives the minibatch, loss scale and learning
rate, each input's range and the largest weights, each replay's non-finite outputs and the first
module to go non-finite from finite inputs, and a verdict (:func:`verdict`).

One report per run and GMI; the learner check then stops the run. Feed-forward policies only.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch

AUTOCAST_DTYPE = torch.bfloat16  # what rl-games' calc_gradients autocasts to (1.6.5)
# where rl-games' calc_gradients leaves each loss in ``train_result`` (1.6.5)
LOSSES = {"a_loss": 0, "c_loss": 1, "entropy": 2, "kl": 3, "b_loss": 8}
INPUTS = (  # rl-games' minibatch dict
    "obs",
    "actions",
    "advantages",
    "returns",
    "old_values",
    "old_logp_actions",
    "mu",
    "sigma",
)
OUTPUTS = ("mus", "sigmas", "values", "entropy", "prev_neglogp")


@dataclass(frozen=True)
class TensorStats:
    """A tensor's shape, dtype, rows holding a NaN or inf, and largest finite magnitude."""

    shape: tuple[int, ...]
    dtype: str
    bad_rows: int
    max_abs: float

    @classmethod
    def of(cls, t: torch.Tensor) -> TensorStats:
        t = t.detach()
        finite = torch.isfinite(t)
        rows = (~finite).reshape(t.shape[0], -1).any(1) if t.dim() else ~finite.reshape(1)
        values = t[finite].float().abs()
        biggest = float(values.max()) if values.numel() else float("nan")
        return cls(tuple(t.shape), str(t.dtype).removeprefix("torch."), int(rows.sum()), biggest)

    def __str__(self) -> str:
        rows = self.shape[0] if self.shape else 1
        bad = f"{self.bad_rows} of {rows} rows non-finite, " if self.bad_rows else ""
        size = "no finite value" if math.isnan(self.max_abs) else f"max|x| {self.max_abs:.3g}"
        return f"{tuple(self.shape)} {self.dtype}: {bad}{size}"


@dataclass(frozen=True)
class Replay:
    """One replay of a minibatch's forward pass: its outputs and the first module whose output
    went non-finite from finite inputs (None if none did)."""

    label: str
    outputs: dict[str, TensorStats]
    first_bad: str | None
    kernel_fault: bool = False  # a linear layer's product is finite when computed again

    @property
    def finite(self) -> bool:
        return not any(s.bad_rows for s in self.outputs.values())

    def describe(self) -> str:
        shown = ", ".join(f"{k} {s}" for k, s in self.outputs.items() if s.bad_rows) or "finite"
        first = f"; first non-finite output: {self.first_bad}" if self.first_bad else ""
        return f"replay, {self.label}: {shown}{first}"


def plain_module(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` without ``torch.compile``'s wrapper."""
    return getattr(model, "_orig_mod", model)


def _tensors(x: Any) -> Iterable[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (tuple, list, dict)):
        for item in x.values() if isinstance(x, dict) else x:
            yield from _tensors(item)


def _linear_check(
    module: torch.nn.Module, inputs: list[torch.Tensor], output: Any
) -> tuple[str, bool]:
    """For a linear layer: which rows went bad, and the same product computed in float32 from
    the operands as the layer saw them (rounded to its input's dtype); True where that is finite
    (then the kernel, not the precision, made the non-finite values)."""
    linear = isinstance(module, torch.nn.Linear) and isinstance(output, torch.Tensor)
    if not linear or not inputs:
        return "", False
    x = inputs[0]
    bad = torch.nonzero(~torch.isfinite(output).reshape(output.shape[0], -1).all(1)).flatten()
    rows = ", ".join(str(i) for i in bad[:6].tolist()) + (", ..." if bad.numel() > 6 else "")
    w = module.weight.to(x.dtype).float()
    b = None if module.bias is None else module.bias.to(x.dtype).float()
    again = TensorStats.of(torch.nn.functional.linear(x.float(), w, b))
    said = (
        f"; bad rows {rows} of {output.shape[0]}; the same product in float32 from "
        f"{str(x.dtype).removeprefix('torch.')} operands: {again}"
    )
    return said, not again.bad_rows


def replay(
    model: torch.nn.Module,
    weights: dict[str, torch.Tensor],
    batch: dict[str, Any],
    *,
    autocast: bool,
    label: str,
) -> Replay:
    """Run ``model``'s training forward on ``batch`` (rl-games' input dict) with ``weights``
    (parameter name -> tensor), on a copy, eagerly; normalisers normalise without updating."""
    replica = copy.deepcopy(model)
    with torch.no_grad():
        for name, p in replica.named_parameters():
            p.copy_(weights[name])
    replica.train()
    for module in replica.modules():
        if hasattr(module, "running_mean"):  # the statistics that forward used, no update
            module.eval()
    first: list[tuple[str, bool]] = []

    def watch(name: str):
        def hook(module, inputs, output) -> None:
            if first:
                return
            outs = [TensorStats.of(t) for t in _tensors(output) if t.is_floating_point()]
            ins = [t for t in _tensors(inputs) if t.is_floating_point()]
            if any(s.bad_rows for s in outs) and all(bool(torch.isfinite(t).all()) for t in ins):
                shown = ", ".join(str(s) for s in outs if s.bad_rows)
                inputs_max = max((TensorStats.of(t).max_abs for t in ins), default=float("nan"))
                linear, kernel = _linear_check(module, ins, output)
                where = f"{name} ({type(module).__name__}) from finite inputs"
                first.append((f"{where} (max|x| {inputs_max:.3g}): {shown}{linear}", kernel))

        return hook

    handles = [
        m.register_forward_hook(watch(n))
        for n, m in replica.named_modules()
        if n and not isinstance(m, torch.jit.ScriptModule)  # rl-games scripts its normalisers
    ]
    cast = autocast and torch.cuda.is_available()
    try:
        with torch.no_grad(), torch.amp.autocast("cuda", enabled=cast, dtype=AUTOCAST_DTYPE):
            result = replica(dict(batch))
    finally:
        for handle in handles:
            handle.remove()
    found = {k: result.get(k) for k in OUTPUTS}
    outputs = {k: TensorStats.of(v) for k, v in found.items() if isinstance(v, torch.Tensor)}
    said, kernel = first[0] if first else (None, False)
    return Replay(label, outputs, said, kernel)


def verdict(replays: list[Replay], autocast: bool) -> str:
    """What the replays say about where the non-finite values came from."""
    faulty = next((r for r in replays if r.kernel_fault), None)
    if faulty is not None:
        layer = (faulty.first_bad or "").split(" ")[0]
        return (
            f"the kernel of {layer} wrote non-finite values from finite operands ({faulty.label}):"
            " the same product computed again in float32 is finite"
        )
    if len(replays) > 1 and replays[0].outputs != replays[1].outputs:
        return (
            "the same replay gave different results twice: nondeterministic kernels, or memory "
            "written meanwhile by another stream or process"
        )
    if all(r.finite for r in replays):
        return (
            "the replays are finite: the minibatch's own forward pass (its compiled code, or "
            "memory written meanwhile) made the non-finite values, not its weights or inputs"
        )
    if autocast and replays[-1].finite:
        return "non-finite only under autocast: reduced precision (or its kernels) on these inputs"
    return "non-finite in float32 too: the weights or the inputs themselves"


class NonFiniteTrace:
    """Wraps an rl-games agent's minibatch step (``calc_gradients``); ``report`` receives the
    one report (a few lines) at the first minibatch with non-finite losses."""

    def __init__(self, report: Callable[[str], None]):
        self.report = report
        self.minibatch = 0
        self.done = False

    def step(self, agent: Any, input_dict: dict[str, Any], calc: Callable[[dict], Any]) -> Any:
        """``calc(input_dict)`` (the agent's own minibatch step), watched."""
        if self.done:
            return calc(input_dict)
        model = plain_module(agent.model)
        before = {n: p.detach().clone() for n, p in model.named_parameters()}
        result = calc(input_dict)
        self.minibatch += 1
        result = agent.train_result
        losses = {k: result[i] for k, i in LOSSES.items() if i < len(result)}
        bad = [k for k, v in losses.items() if not bool(torch.isfinite(torch.as_tensor(v)).all())]
        if bad:
            self.done = True
            self.report(self.describe(agent, model, before, input_dict, bad))
        return result

    def describe(self, agent, model, before, input_dict, bad: list[str]) -> str:
        scale = agent.scaler.get_scale() if agent.scaler.is_enabled() else None
        lines = [
            f"non-finite trace: epoch {agent.epoch_num}, minibatch {self.minibatch}: "
            f"{', '.join(bad)} not finite (loss scale {scale}, learning rate {agent.last_lr:.3g})"
        ]
        for key in INPUTS:
            if isinstance(input_dict.get(key), torch.Tensor):
                lines.append(f"  input {key} {TensorStats.of(input_dict[key])}")
        largest = sorted(((TensorStats.of(w).max_abs, n) for n, w in before.items()), reverse=True)
        broken = [n for n, w in before.items() if not bool(torch.isfinite(w).all())]
        lines.append(
            "  weights before the step: largest |w| "
            + ", ".join(f"{n} {v:.3g}" for v, n in largest[:3])
            + (f"; non-finite: {', '.join(broken)}" if broken else "; all finite")
        )
        batch = {
            "is_train": True,
            "prev_actions": input_dict["actions"],
            "obs": agent._preproc_obs(input_dict["obs"]),
        }
        mixed = bool(agent.mixed_precision)
        runs = [(mixed, "as trained" + (" (bf16 autocast)" if mixed else ", float32"))]
        if mixed:
            runs += [(True, "as trained, again"), (False, "float32")]
        replays = [replay(model, before, batch, autocast=a, label=lab) for a, lab in runs]
        lines += [f"  {r.describe()}" for r in replays]
        lines.append(f"  verdict: {verdict(replays, mixed)}")
        return "\n".join(lines)
