"""gmi.debug.trace_nonfinite: the first minibatch with non-finite losses is replayed on rl-games'
own network, and the report says where the non-finite values came from."""

from __future__ import annotations

import contextlib
import io
import types
from types import SimpleNamespace

import torch
from rl_games.algos_torch.model_builder import ModelBuilder

from isaacgymenvs_gmi.rl.nonfinite_trace import NonFiniteTrace, TensorStats

OBS, ACTIONS, ROWS = 6, 2, 32
NETWORK = {
    "name": "actor_critic",
    "separate": False,
    "space": {
        "continuous": {
            "mu_activation": "None",
            "sigma_activation": "None",
            "mu_init": {"name": "default"},
            "sigma_init": {"name": "const_initializer", "val": 0},
            "fixed_sigma": True,
        }
    },
    "mlp": {
        "units": [16, 8],
        "activation": "elu",
        "d2rl": False,
        "initializer": {"name": "default"},
        "regularizer": {"name": "None"},
    },
}


def agent() -> SimpleNamespace:
    """What the trace reads of an rl-games agent, around rl-games' own Ant-style network."""
    torch.manual_seed(0)
    shape = {"input_shape": (OBS,), "actions_num": ACTIONS, "value_size": 1, "num_seqs": 1}
    with contextlib.redirect_stdout(io.StringIO()):  # rl-games prints as it builds
        model = (
            ModelBuilder()
            .load({"model": {"name": "continuous_a2c_logstd"}, "network": NETWORK})
            .build({**shape, "normalize_input": True, "normalize_value": True})
        )
    return SimpleNamespace(
        model=model,
        train_result=None,
        epoch_num=1,  # rl-games counts the epoch up before it trains it
        last_lr=3e-4,
        mixed_precision=False,
        scaler=torch.amp.GradScaler("cuda", enabled=False),
        _preproc_obs=lambda obs: obs,
    )


def minibatch(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {
        "obs": torch.randn(ROWS, OBS, generator=g),
        "actions": torch.randn(ROWS, ACTIONS, generator=g),
        "returns": torch.randn(ROWS, 1, generator=g),
        "mu": torch.zeros(ROWS, ACTIONS),
    }


def calc(a: SimpleNamespace, poison_before=False, poison_after=False):
    """A minibatch step: forward, losses, and an optional corruption of the mu head's weights
    before the forward (inside the step) or after it (before the next step)."""

    def step(batch):
        mu_head = a.model.a2c_network.mu
        if poison_before:
            with torch.no_grad():
                mu_head.weight[0, 0] = float("inf")
        res = a.model({"is_train": True, "prev_actions": batch["actions"], "obs": batch["obs"]})
        a_loss = res["prev_neglogp"].mean()
        c_loss = ((res["values"] - batch["returns"]) ** 2).mean()
        kl = ((res["mus"] - batch["mu"]) ** 2).mean()
        b_loss = (res["mus"].clamp_min(1.1) - 1.1).pow(2).sum(-1).mean()
        mu, sigma = res["mus"].detach(), res["sigmas"].detach()
        a.train_result = (
            a_loss,
            c_loss,
            res["entropy"].mean(),
            kl,
            a.last_lr,
            1.0,
            mu,
            sigma,
            b_loss,
        )
        if poison_after:
            with torch.no_grad():
                mu_head.weight[1, 0] = float("nan")

    return step


def test_a_finite_run_is_not_reported_and_weights_broken_before_the_step_are_named():
    a, reports = agent(), []
    trace = NonFiniteTrace(reports.append)
    trace.step(a, minibatch(0), calc(a))
    trace.step(a, minibatch(1), calc(a, poison_after=True))  # finite losses, broken weights
    assert reports == []
    trace.step(a, minibatch(2), calc(a))
    assert len(reports) == 1 and trace.done
    report = reports[0]
    assert report.startswith("non-finite trace: epoch 1, minibatch 3: a_loss, entropy, kl, b_loss")
    assert "non-finite: a2c_network.mu.weight" in report
    assert "first non-finite output: a2c_network.mu (Linear) from finite inputs" in report
    assert f"mus ({ROWS}, {ACTIONS}) float32: {ROWS} of {ROWS} rows non-finite" in report
    assert "values" not in report.split("replay")[1].split("first")[0]  # the critic stayed finite
    assert "verdict: non-finite in float32 too: the weights or the inputs themselves" in report
    trace.step(a, minibatch(3), calc(a))
    assert len(reports) == 1  # one report per run


def test_weights_broken_during_the_step_replay_finite_from_the_copy_taken_before():
    a, reports = agent(), []
    trace = NonFiniteTrace(reports.append)
    trace.step(a, minibatch(0), calc(a, poison_before=True))
    (report,) = reports
    assert "weights before the step: largest |w|" in report and "; all finite" in report
    assert "replay, as trained, float32: finite" in report
    assert "verdict: the replays are finite: the minibatch's own forward pass" in report


def test_tensor_stats_count_rows_and_ignore_non_finite_values_in_the_maximum():
    t = torch.tensor([[1.0, -7.0], [float("nan"), 2.0], [3.0, float("inf")]])
    assert TensorStats.of(t) == TensorStats((3, 2), "float32", 2, 7.0)
    assert str(TensorStats.of(t)) == "(3, 2) float32: 2 of 3 rows non-finite, max|x| 7"
    assert TensorStats.of(torch.tensor(float("nan"))).bad_rows == 1


def test_a_linear_layer_that_writes_nan_from_finite_operands_is_caught_in_the_act():
    """A stand-in for a faulty kernel: the mu head's product has two rows of NaN although its
    operands are finite; the report names the rows and shows the same product finite."""
    a, reports = agent(), []
    head = a.model.a2c_network.mu

    def faulty(self, x):
        out = torch.nn.functional.linear(x, self.weight, self.bias).clone()
        out[[5, 7]] = float("nan")
        return out

    head.forward = types.MethodType(faulty, head)
    NonFiniteTrace(reports.append).step(a, minibatch(0), calc(a))
    (report,) = reports
    assert "first non-finite output: a2c_network.mu (Linear) from finite inputs" in report
    assert f"bad rows 5, 7 of {ROWS}; the same product in float32 from float32 operands: " in report
    assert f"({ROWS}, {ACTIONS}) float32: max|x|" in report.split("the same product")[1]
    assert "; all finite" in report  # the weights were never the problem
    assert "verdict: the kernel of a2c_network.mu wrote non-finite values" in report
