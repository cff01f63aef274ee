"""``capture_video``: env 0 rendered headless by MuJoCo into mp4 files that decode to the
configured number of frames, in the run folder of a real run; refused naming the key where it
cannot be made."""

from __future__ import annotations

import copy
import sys

import numpy as np
import pytest
import torch

import isaacgymenvs_gmi
from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.video import VideoSettings
from isaacgymenvs_gmi.launch import plan_run
from isaacgymenvs_gmi.sim import render
from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions, VecTask
from isaacgymenvs_gmi.sim.video import VideoRecorder
from tests.env_fixtures import load_task_cfg

av = pytest.importorskip("av", reason="PyAV (the video extra) is not installed")
PROBLEM = render.renderer_problem()
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=f"cannot record here: {PROBLEM}")


def _frames(path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def test_videos_decode_to_the_configured_frames_and_a_cut_one_leaves_nothing(tmp_path):
    cfg = copy.deepcopy(load_task_cfg("Ant"))
    cfg["env"]["numEnvs"] = 2
    env = VecTask(cfg, "cpu", "cpu", physics=PhysicsOptions(num_threads=1))
    recorder = VideoRecorder(env.model, VideoSettings(True, 8, 5), 60, lambda: tmp_path)
    env.attach_video(recorder)
    for _ in range(19):  # videos from steps 0 and 8; the one from 16 is cut at 3 frames
        env.step(torch.rand(2, env.num_actions) * 2 - 1)
    env.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "rl-video-step-0.mp4",
        "rl-video-step-8.mp4",
    ]
    frames = _frames(tmp_path / "rl-video-step-0.mp4")
    assert len(frames) == 5 and frames[0].shape == (480, 640, 3)
    assert frames[0].std() > 5  # a scene, not a blank image
    assert np.abs(frames[-1].astype(int) - frames[0]).mean() > 0.1  # the ant moves
    with av.open(str(tmp_path / "rl-video-step-8.mp4")) as container:
        assert container.streams.video[0].average_rate == 60


def test_a_run_records_into_its_run_folder(tmp_path):
    cfg = isaacgymenvs_gmi.compose_config(
        "task=Cartpole", "gmi.per_gpu=2", "max_iterations=2", f"train_dir={tmp_path}",
        "experiment=vid", "capture_video=True", "capture_video_freq=20",
        "capture_video_len=6",
    )  # fmt: skip
    result = isaacgymenvs_gmi.run(cfg)
    videos = sorted((tmp_path).glob("vid*/videos/*.mp4"))  # 32 steps: from 0 and 20
    assert [v.name for v in videos] == ["rl-video-step-0.mp4", "rl-video-step-20.mp4"]
    assert all(len(_frames(v)) == 6 for v in videos)
    assert result.experiment_dir and videos[0].parent.parent == tmp_path / result.experiment_dir


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["capture_video=maybe"], "capture_video"),
        (["capture_video=True", "capture_video_freq=0"], "capture_video_freq"),
        (["capture_video=True", "capture_video_freq=1.5"], "capture_video_freq"),
        (["capture_video=True", "capture_video_len=-1"], "capture_video_len"),
        (["capture_video=True", "capture_video_len=2.5"], "capture_video_len"),
        (["capture_video=True", "capture_video_len=abc"], "capture_video_len"),
    ],
)
def test_bad_settings_are_refused_naming_the_key(compose_cfg, overrides, key):
    with pytest.raises(ConfigError) as refused:
        plan_run(compose_cfg("task=Cartpole", *overrides))
    assert refused.value.key == key


@pytest.mark.parametrize(("freq", "length"), [(1, 20), (10, 11), (1464, 0)])
def test_what_upstream_accepts_is_accepted(compose_cfg, freq, length):
    """Upstream hands both integers to gym's RecordVideo: a video longer than the period, and
    length 0 (until env 0's episode ends), are fine there."""
    overrides = [f"capture_video_freq={freq}", f"capture_video_len={length}"]
    plan = plan_run(compose_cfg("task=Cartpole", "capture_video=True", *overrides))
    assert plan.video == VideoSettings(True, freq, length)


def _record(tmp_path, settings: VideoSettings, steps: int) -> dict[str, int]:
    """Ant (episodes of 5 steps) on video for ``steps`` steps: frames of each video file."""
    cfg = copy.deepcopy(load_task_cfg("Ant", 2, episodeLength=6))
    env = VecTask(cfg, "cpu", "cpu", physics=PhysicsOptions(num_threads=1))
    env.attach_video(VideoRecorder(env.model, settings, 60, lambda: tmp_path))
    for _ in range(steps):
        env.step(torch.zeros(2, env.num_actions))
    env.close()
    return {p.name: len(_frames(p)) for p in sorted(tmp_path.iterdir())}


def test_a_video_longer_than_the_period_runs_to_its_end(tmp_path):
    # every step may start one: videos from 0 (steps 1-4) and 4 (5-8); the one from 8 is cut
    videos = _record(tmp_path, VideoSettings(True, 1, 4), 10)
    assert videos == {"rl-video-step-0.mp4": 4, "rl-video-step-4.mp4": 4}


def test_length_0_records_until_env_0s_episode_ends(tmp_path):
    # episodes end at steps 5, 10, 15: from 0 the states after steps 1-4 (the one after step 5
    # is the next episode's first), from 10 those after 11-14
    videos = _record(tmp_path, VideoSettings(True, 10, 0), 16)
    assert videos == {"rl-video-step-0.mp4": 4, "rl-video-step-10.mp4": 4}


def test_without_a_renderer_or_an_encoder_it_is_refused_naming_capture_video(
    compose_cfg, monkeypatch
):
    cfg = compose_cfg("task=Cartpole", "capture_video=True")

    def no_gl(width, height):
        raise render.RendererUnavailable("no headless OpenGL: egl: none; osmesa: none")

    monkeypatch.setattr(render, "_gl_context", no_gl)
    with pytest.raises(ConfigError, match=r"^capture_video=True: no headless OpenGL: egl"):
        plan_run(cfg)
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "av", None)
    with pytest.raises(ConfigError, match=r"^capture_video=True: needs PyAV .* pip install"):
        plan_run(cfg)
