"""Training stops, naming what broke, at the first epoch that leaves NaN or inf in the learner."""

from __future__ import annotations

import pytest
import torch

from isaacgymenvs_gmi.rl.finite_check import (
    NonFiniteState,
    ensure_finite,
    epoch_values,
    non_finite_tensors,
    non_finite_values,
)
from tests.gmi.launched_run import LaunchedRun


def _model() -> torch.nn.Module:
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ELU(), torch.nn.Linear(4, 2))
    model.register_buffer("running_var", torch.ones(3, dtype=torch.float64))
    model.register_buffer("count", torch.ones((), dtype=torch.int64))
    return model


def test_a_finite_learner_passes():
    assert non_finite_tensors([_model()]) == []
    ensure_finite([_model()], epoch=1)


def test_nan_and_inf_are_named_in_parameters_and_buffers():
    model, critic = _model(), _model()
    with torch.no_grad():
        model[2].bias[1] = float("nan")
    critic.running_var[0] = float("inf")
    assert non_finite_tensors([model]) == ["2.bias"]
    assert non_finite_tensors([model, critic]) == ["0.2.bias", "1.running_var"]
    with pytest.raises(NonFiniteState, match=r"after epoch 7: 0\.2\.bias, 1\.running_var"):
        ensure_finite([model, critic], epoch=7)


def _result(a_losses, *, bound=True, kls=(0.01,)):
    """rl-games' train_epoch result: times, a/c[/b] losses, entropies, kls, lr, lr_mul."""
    losses = [a_losses, [torch.tensor(0.5)], *([[torch.tensor(0.0)]] if bound else [])]
    return (0.1, 0.2, 0.3, 0.6, *losses, [torch.tensor(1.0)], list(kls), 3e-4, 1.0)


def test_an_epoch_with_finite_weights_but_a_nan_loss_or_reward_is_non_finite():
    """Mixed precision: the gradient scaler skips non-finite updates, so the weights can stay
    finite while every loss is NaN; no reward or checkpoint may come from such an epoch."""
    fine = epoch_values(_result([torch.tensor(0.1), torch.tensor(0.2)]), torch.tensor([[12.0]]))
    assert set(fine) == {"a_loss", "c_loss", "b_loss", "entropy", "kl", "mean reward"}
    assert non_finite_values(fine) == []
    nan_loss = epoch_values(_result([torch.tensor(0.1), torch.tensor(float("nan"))]))
    assert non_finite_values(nan_loss) == ["a_loss"]
    discrete = epoch_values(_result([torch.tensor(0.1)], bound=False, kls=(float("inf"),)))
    assert set(discrete) == {"a_loss", "c_loss", "entropy", "kl"}
    assert non_finite_values(discrete) == ["kl"]
    reward = epoch_values(_result([torch.tensor(0.1)]), torch.tensor([[float("nan")]]))
    with pytest.raises(NonFiniteState, match=r"after epoch 3: mean reward"):
        ensure_finite([_model()], 3, reward)


def test_a_run_that_blows_up_stops_at_that_epoch_with_no_process_left(tmp_path):
    # Adam at a learning rate of 1e30 turns the weights to inf, then NaN, in the first update
    run = LaunchedRun(
        tmp_path,
        "task=Cartpole",
        "num_envs=64",
        "gmi.per_gpu=2",  # 1 GMI runs the same agent class, without the group to tear down
        "max_iterations=50",
        "train.params.config.minibatch_size=512",
        "train.params.config.learning_rate=1e30",
        "train.params.config.lr_schedule=identity",
    )
    assert run.finish(timeout=180) != 0
    err = run.text("err")
    assert "non-finite values (NaN or inf) in the learner after epoch 1" in err, err[-3000:]
    assert "a2c_network" in err
    assert run.leftovers() == []
