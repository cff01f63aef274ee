"""Domain randomisation's observation and action noise (IsaacGymEnvs' schema): the settings at
the edge, the sampled noise against its configured distribution, schedule and frequency, and the
noise in a real env on both physics backends. Off by default."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.randomization import NoiseSpec, RandomizationSettings
from isaacgymenvs_gmi.sim.noise import EnvNoise, Noise
from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions, VecTask
from tests.env_fixtures import load_task_cfg

SHAPE = (4000, 16)  # 64,000 draws: means within ~4 std errors below


def _task(params: dict | None, randomize: bool = True) -> dict:
    return {"task": {"randomize": randomize, "randomization_params": params}}


def _noise(**spec) -> Noise:
    spec.setdefault("operation", "additive")
    spec.setdefault("distribution", "gaussian")
    return Noise(NoiseSpec.from_node(spec, prefix="x"), seed=0)


def test_off_by_default(compose_cfg):
    from omegaconf import OmegaConf

    for task in ("Ant", "Cartpole", "ShadowHand"):
        task_config = OmegaConf.to_container(compose_cfg(f"task={task}").task, resolve=True)
        assert RandomizationSettings.from_task_config(task_config) is None
    env = VecTask(load_task_cfg("Cartpole"), "cpu", "cpu", physics=PhysicsOptions(num_threads=1))
    assert env.noise is None
    env.close()


def test_upstream_schema_is_read_and_what_is_not_applied_is_named(compose_cfg):
    from omegaconf import OmegaConf

    cfg = compose_cfg("task=Ant", "task.task.randomize=True")
    settings = RandomizationSettings.from_task_config(OmegaConf.to_container(cfg.task))
    assert settings.frequency == 600
    assert settings.observations == NoiseSpec("gaussian", "additive", (0.0, 0.002))
    assert settings.actions == NoiseSpec("gaussian", "additive", (0.0, 0.02))
    assert settings.not_applied == ("actor_params.ant.color",)
    line = settings.describe()
    assert line.startswith("domain randomisation: observations noise, actions noise, actor_params")
    assert line.endswith("no MuJoCo counterpart, not applied: actor_params.ant.color")


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"observations": {"range": [0, 1], "distribution": "loguniform"}}, "distribution"),
        ({"observations": {"range": [0, 1], "operation": "multiply"}}, "operation"),
        ({"actions": {"range": [0, 1], "schedule": "linear"}}, "schedule_steps"),
        ({"actions": {"range": [0, 1], "schedule": "cosine", "schedule_steps": 5}}, "schedule"),
        ({"actions": {"range": 0.1}}, "range"),
        ({"actions": {"operation": "additive"}}, "range"),
        ({"actions": {"range": [0, 1], "colour": True}}, "colour"),
        ({"frequency": 0}, "frequency"),
        ({"lighting": {}}, "lighting"),
    ],
)
def test_bad_settings_are_refused_naming_the_key(params, key):
    with pytest.raises(ConfigError, match=rf"^task\.task\.randomization_params\.(\w+\.)?{key}="):
        RandomizationSettings.from_task_config(_task(params))


class _TorchNoise(Noise):
    """The device path (torch ops and generator), exercised on the CPU."""

    def on_host(self, tensor):
        return False


@pytest.mark.parametrize("cls", [Noise, _TorchNoise], ids=["numpy", "torch"])
@pytest.mark.parametrize("distribution", ["gaussian", "uniform"])
def test_both_paths_draw_the_same_distribution(cls, distribution):
    spec = NoiseSpec(distribution, "additive", (0.5, 1.5), range_correlated=(0.0, 0.5))
    noise = cls(spec, seed=3)
    out = noise(torch.zeros(SHAPE))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    fresh_var = 1.5**2 if distribution == "gaussian" else 1.0 / 12
    corr_var = 0.5**2
    assert out.var().item() == pytest.approx(fresh_var + corr_var, rel=0.04)
    mean = 0.5 if distribution == "gaussian" else 1.0
    assert out.mean().item() == pytest.approx(mean, abs=0.03)


def test_gaussian_noise_follows_its_mean_and_std():
    noise = _noise(range=[0.5, 0.1])
    out = noise(torch.zeros(SHAPE))
    assert abs(out.mean().item() - 0.5) < 4 * 0.1 / math.sqrt(out.numel())
    assert out.std().item() == pytest.approx(0.1, rel=0.02)


def test_the_correlated_part_holds_until_a_refresh():
    noise = _noise(range=[0.0, 0.0], range_correlated=[1.0, 0.2])
    first, second = noise(torch.zeros(SHAPE)), noise(torch.zeros(SHAPE))
    torch.testing.assert_close(first, second)  # no fresh part: the same bias every step
    assert first.mean().item() == pytest.approx(1.0, abs=0.005)
    assert first.std().item() == pytest.approx(0.2, rel=0.02)
    noise.refresh(10)
    assert (noise(torch.zeros(SHAPE)) - first).abs().mean() > 0.1  # a new draw


def test_uniform_noise_stays_in_its_range():
    out = _noise(distribution="uniform", range=[-1.0, 3.0])(torch.zeros(SHAPE))
    assert out.min() >= -1.0 and out.max() <= 3.0
    assert out.mean().item() == pytest.approx(1.0, abs=0.03)
    assert out.var().item() == pytest.approx(16 / 12, rel=0.03)


def test_scaling_multiplies():
    out = _noise(distribution="uniform", operation="scaling", range=[0.5, 1.5])(
        torch.full(SHAPE, 2.0)
    )
    assert out.min() >= 1.0 and out.max() <= 3.0 and out.mean().item() == pytest.approx(2, abs=0.02)


def test_linear_and_constant_schedules():
    linear = _noise(range=[0.0, 0.4], schedule="linear", schedule_steps=100)
    assert linear(torch.zeros(SHAPE)).abs().max() == 0.0  # step 0: nothing yet
    linear.refresh(50)
    assert linear(torch.zeros(SHAPE)).std().item() == pytest.approx(0.2, rel=0.02)
    linear.refresh(1000)
    assert linear(torch.zeros(SHAPE)).std().item() == pytest.approx(0.4, rel=0.02)
    constant = _noise(range=[0.0, 0.4], schedule="constant", schedule_steps=100)
    constant.refresh(99)
    assert constant(torch.zeros(SHAPE)).abs().max() == 0.0
    constant.refresh(100)
    assert constant(torch.zeros(SHAPE)).std().item() == pytest.approx(0.4, rel=0.02)


def test_frequency_sets_when_parameters_and_correlated_draws_refresh():
    spec = {"range": [0.0, 0.0], "range_correlated": [0.0, 1.0], "distribution": "gaussian"}
    settings = RandomizationSettings.from_task_config(
        _task({"frequency": 10, "observations": {**spec, "operation": "additive"}})
    )
    noise = EnvNoise(settings, seed=0)
    first = noise.on_observations(torch.zeros(8, 3), clip=5.0)
    noise.advance(9)
    torch.testing.assert_close(noise.on_observations(torch.zeros(8, 3), clip=5.0), first)
    noise.advance(10)
    assert not torch.equal(noise.on_observations(torch.zeros(8, 3), clip=5.0), first)


@pytest.mark.parametrize("backend", ["mujoco", "mjx"])
def test_observation_noise_in_an_env_leaves_the_physics_alone(backend):
    """Same seed and actions, with and without observation noise: the rewards (computed from the
    state) agree, the observations differ by noise of the configured size, within the clip."""
    params = {"observations": {"range": [0.0, 0.05], "operation": "additive"}}
    envs = []
    for randomize in (False, True):
        cfg = load_task_cfg("Cartpole", 64)
        cfg["task"] = _task(params, randomize)["task"]
        envs.append(VecTask(cfg, "cpu", "cpu", physics=PhysicsOptions(backend, num_threads=1)))
    plain, noisy = envs
    rng = np.random.default_rng(0)
    gaps = []
    for _ in range(5):
        actions = torch.from_numpy(rng.uniform(-1, 1, (64, 1)).astype(np.float32))
        obs_p, rew_p, _, _ = plain.step(actions)
        obs_n, rew_n, _, _ = noisy.step(actions)
        torch.testing.assert_close(rew_p, rew_n)
        gaps.append(obs_n["obs"] - obs_p["obs"])
        assert obs_n["obs"].abs().max() <= noisy.clip_obs
    gap = torch.stack(gaps)
    assert gap.std().item() == pytest.approx(0.05, rel=0.15)
    for env in envs:
        env.close()
