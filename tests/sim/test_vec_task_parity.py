"""What pipelines touch of upstream's VecTask beyond stepping: ``extras['time_outs']`` typed and
placed as upstream's ``step`` publishes it, ``render(mode="rgb_array")`` of env 0 through our
renderer, gymnasium's ``RecordVideo`` over ``make()``'s env, and a task file holding only the
keys a task needs (every other one at its documented default)."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch

import isaacgymenvs_gmi
from isaacgymenvs_gmi.sim import render
from isaacgymenvs_gmi.sim.render import OffscreenRenderer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pendulum"
N = 4
PROBLEM = render.renderer_problem()
needs_renderer = pytest.mark.skipif(PROBLEM is not None, reason=f"cannot render here: {PROBLEM}")


def _upstream_time_outs(progress: torch.Tensor, reset: torch.Tensor, max_len: int):
    """IsaacGymEnvs' ``VecTask.step``: ``timeout_buf`` as it is published in ``extras``."""
    return (progress >= max_len - 1) & (reset != 0)


@pytest.mark.parametrize("backend", ["mujoco", "mjx"])
def test_time_outs_have_upstreams_dtype_and_device(backend, shared_env, restart_env):
    env = shared_env("Ant", backend, episodeLength=6)  # episodes time out after 5 steps
    restart_env(env)
    for step in range(1, 6):
        progress = env.progress_buf.clone()  # upstream's counter before its step's reset
        _, _, reset, extras = env.step(torch.zeros(N, env.num_actions))
        time_outs = extras["time_outs"]
        upstream = _upstream_time_outs(progress + 1, reset, env.max_episode_length)
        assert time_outs.dtype == upstream.dtype == torch.bool
        assert time_outs.device == torch.device(env.rl_device)
        assert time_outs.shape == (N,) and env.timeout_buf is time_outs
        assert time_outs.tolist() == upstream.tolist() == [step == 5] * N
    # what rl-games and pipelines do with it: a mask, a float factor for bootstrapping
    values = torch.ones(N, 1)
    assert (0.99 * values * time_outs.unsqueeze(1).float()).sum() == pytest.approx(0.99 * N)
    assert not (~time_outs).any() and reset.bool().all()


@needs_renderer
def test_render_draws_env_0_as_an_rgb_image():
    env = isaacgymenvs_gmi.make(0, "Ant", 2, "cpu", "cpu", headless=True)
    try:
        for _ in range(4):  # the two ants move apart
            env.step(torch.rand(2, env.num_actions) * 2 - 1)
        image = env.render(mode="rgb_array")
        assert isinstance(image, np.ndarray) and image.shape == (480, 640, 3)
        assert image.dtype == np.uint8 and image.std() > 5  # a scene, not a blank image
        qpos, qvel = env.backend.physics_state()
        reference = OffscreenRenderer(env.model)
        try:
            np.testing.assert_array_equal(image, reference.render(qpos[0], qvel[0]))
            assert np.abs(reference.render(qpos[1], qvel[1]).astype(int) - image).mean() > 0.1
        finally:
            reference.close()
        again = env.render()  # rgb_array is the default mode; the same state, the same image
        assert (again != image).any(axis=-1).mean() < 0.01  # (but a context's first frame
        # draws its horizon line a little differently: ~0.05% of pixels here)
        assert env.render(mode="human") is None  # no viewer, as upstream headless
        with pytest.raises(ValueError, match="rgb_array"):
            env.render(mode="depth")
        assert env.render_mode == "rgb_array" and env.metadata["render_fps"] == 60
        assert env.metadata["video.frames_per_second"] == 60  # old gym's key
    finally:
        env.close()


def test_gymnasium_view_splits_resets_into_terminated_and_truncated():
    env = isaacgymenvs_gmi.make(
        0, "Ant", N, "cpu", "cpu", headless=True, overrides=["task.env.episodeLength=6"]
    )
    view = env.as_gymnasium()
    try:
        assert isinstance(view, gymnasium.Env) and view.num_envs == N
        assert view.action_space is env.action_space
        obs_dict, info = view.reset()
        assert obs_dict["obs"].shape == (N, env.num_obs) and info == {}
        for step in range(1, 6):
            obs_dict, reward, terminated, truncated, extras = view.step(torch.zeros(N, 8))
            assert reward.shape == terminated.shape == truncated.shape == (N,)
            assert terminated.dtype == truncated.dtype == torch.bool
            assert truncated.tolist() == [step == 5] * N and not terminated.any()
            assert truncated is not extras["time_outs"] and truncated.equal(extras["time_outs"])
        with pytest.raises(ValueError, match="seeded when built"):
            view.reset(seed=1)
    finally:
        view.close()


@needs_renderer
def test_record_video_over_make(tmp_path):
    """Upstream README's recipe with gymnasium's RecordVideo: real frames of env 0."""
    pytest.importorskip("moviepy", reason="gymnasium's RecordVideo writes through MoviePy")
    av = pytest.importorskip("av", reason="PyAV reads the videos back")
    envs = isaacgymenvs_gmi.make(seed=0, task="Ant", num_envs=2, sim_device="cpu", rl_device="cpu")
    envs.is_vector_env = True  # as upstream's README sets it; gymnasium does not read it
    videos = tmp_path / "videos"
    envs = gymnasium.wrappers.RecordVideo(
        envs.as_gymnasium(), str(videos), step_trigger=lambda step: step % 10 == 0, video_length=4
    )
    envs.reset()
    assert envs.render().shape == (480, 640, 3)
    for _ in range(13):  # videos from steps 0 and 10; the second is written by close()
        actions = 2.0 * torch.rand((2,) + envs.action_space.shape) - 1.0
        envs.step(actions)
    envs.close()
    assert sorted(p.name for p in videos.iterdir()) == [
        "rl-video-step-0.mp4",
        "rl-video-step-10.mp4",
    ]
    with av.open(str(videos / "rl-video-step-0.mp4")) as container:
        assert container.streams.video[0].average_rate == 60  # the env's render_fps
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(frames) == 5  # gymnasium stops once it holds more than video_length frames
    assert frames[0].shape == (480, 640, 3) and frames[0].std() > 5
    assert np.abs(frames[-1].astype(int) - frames[0]).mean() > 0.1  # the ant moves
    with av.open(str(videos / "rl-video-step-10.mp4")) as container:
        assert len(list(container.decode(video=0))) == 3  # steps 10, 11, 12


def test_a_minimal_task_file_takes_the_documented_defaults(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    env = isaacgymenvs_gmi.make(
        0,
        "PendulumMinimal",
        3,
        "cpu",
        "cpu",
        overrides=[
            f"hydra.searchpath=[file://{EXAMPLE / 'cfg'}]",
            "task_modules=[pendulum_task]",
            "train=PendulumPPO",
        ],
    )
    try:
        assert (env.num_envs, env.num_obs, env.num_actions) == (3, 3, 1)
        assert env.max_episode_length == env.task.default_episode_length == 200
        assert env.clip_actions == np.inf and env.clip_obs == np.inf  # no clipping
        assert (env.dt, env.control_freq_inv) == (0.02, 1)
        assert env.model.opt.timestep == 0.02  # substeps 1
        # the Pendulum leaves initial_carry / reset_carry to TaskLogic's defaults
        assert env.task.initial_carry(5) == () and env.task.reset_carry((), None, None) == ()
        obs_dict, rew, reset, _ = env.step(torch.full((3, 1), 5.0))  # beyond 1: not clipped
        assert torch.isfinite(obs_dict["obs"]).all() and torch.isfinite(rew).all()
    finally:
        env.close()
