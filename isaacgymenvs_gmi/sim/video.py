"""Videos of env 0 during a run: IsaacGymEnvs' ``capture_video`` as an mp4 per recording.

A recording starts at every ``every``-th env step (0, every, ...) when none is under way and
holds ``length`` steps (0: until env 0's episode ends); it is written to
``rl-video-step-<start>.mp4`` through a temporary name, so a stopped run leaves no partial file.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import mujoco
import numpy as np

from isaacgymenvs_gmi.config.video import VideoSettings

from .render import OffscreenRenderer


class Mp4Writer:
    """Frames (H, W, 3) uint8 encoded as H.264 (MPEG-4 part 2 where the build lacks it)."""

    def __init__(self, path: Path, fps: int, width: int, height: int):
        import av

        self.path = path
        self._container = av.open(str(path), mode="w", format="mp4")
        codec = "libx264" if "libx264" in av.codecs_available else "mpeg4"
        self._stream = self._container.add_stream(codec, rate=fps)
        self._stream.width, self._stream.height = width, height
        self._stream.pix_fmt = "yuv420p"
        self._frame = av.VideoFrame
        self.frames = 0

    def add(self, image: np.ndarray) -> None:
        frame = self._frame.from_ndarray(np.ascontiguousarray(image), format="rgb24")
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
        self.frames += 1

    def close(self) -> None:
        for packet in self._stream.encode():  # flush the encoder
            self._container.mux(packet)
        self._container.close()


class VideoRecorder:
    """Records env 0 of a VecTask: :meth:`wants` before each step's state is read, :meth:`add`
    with env 0's state after it. ``folder()`` is called when the first video starts;
    ``on_video(path, step)`` with each finished video."""

    def __init__(
        self,
        model: mujoco.MjModel,
        settings: VideoSettings,
        fps: float,
        folder: Callable[[], Path],
        on_video: Callable[[Path, int], None] | None = None,
        size: tuple[int, int] = (640, 480),
    ):
        self.settings = settings
        self.fps = max(1, round(fps))
        self.folder = folder
        self.on_video = on_video
        self.size = size
        self.renderer = OffscreenRenderer(model, *size)
        self.finished: list[Path] = []
        self._writer: Mp4Writer | None = None
        self._start = 0

    def wants(self, step: int) -> bool:
        """Whether the state after env step ``step`` (1, 2, ...) goes into a video."""
        return self._writer is not None or (step - 1) % self.settings.every == 0

    def add(
        self, step: int, qpos: np.ndarray, qvel: np.ndarray, episode_ended: bool = False
    ) -> None:
        """Env 0's state (qpos (nq,), qvel (nv,)) after env step ``step``; ``episode_ended``: in
        that step (the state is already the next episode's first)."""
        if self._writer is not None and self.settings.length == 0 and episode_ended:
            self._finish()  # a whole episode: this state belongs to the next one
            if (step - 1) % self.settings.every != 0:
                return
        if self._writer is None:
            self._start = step - 1
            folder = Path(self.folder())
            folder.mkdir(parents=True, exist_ok=True)
            part = folder / f".rl-video-step-{self._start}.mp4.part"
            self._writer = Mp4Writer(part, self.fps, *self.size)
        self._writer.add(self.renderer.render(qpos, qvel))
        if self._writer.frames == self.settings.length:
            self._finish()

    def _finish(self) -> None:
        writer, self._writer = self._writer, None
        writer.close()
        final = writer.path.with_name(f"rl-video-step-{self._start}.mp4")
        os.replace(writer.path, final)
        self.finished.append(final)
        if self.on_video is not None:
            self.on_video(final, self._start)

    def close(self) -> None:
        """Stop; a video still being recorded is dropped (no partial file is left)."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            try:
                writer.close()
            finally:
                writer.path.unlink(missing_ok=True)
        self.renderer.close()
