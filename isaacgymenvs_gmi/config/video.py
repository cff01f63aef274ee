"""Video capture settings: IsaacGymEnvs' ``capture_video``, ``capture_video_freq`` and
``capture_video_len``, validated at the edge. As upstream (gym's ``RecordVideo``), any length is
taken, also one longer than the period, and ``len=0`` records until env 0's episode ends.
Refused: a period below 1 (upstream divides by it), a negative length, a non-integer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .errors import ConfigError
from .schema import FLAG, Int, Settings, setting


@dataclass(frozen=True)
class VideoSettings(Settings):
    """``capture``: record env 0; a video of ``length`` env steps (0: until env 0's episode
    ends) starts every ``every`` env steps (at steps 0, every, 2 * every, ...) unless one is
    still being recorded, as upstream's step trigger has it."""

    capture: bool = setting(False, FLAG, key="capture_video")
    every: int = setting(1464, Int(1), key="capture_video_freq")
    length: int = setting(100, Int(0), key="capture_video_len")

    def check_recordable(
        self,
        task_name: str,
        *,
        vec_task: bool,
        mode: str,
        recording_modes: tuple[str, ...],
        renderer_problem: Callable[[], str | None],
    ) -> None:
        """Refuse ``capture_video`` where no video can be made: a VecTask class of the user's
        (it renders itself, or not), a mode that does not record, or no renderer here
        (``renderer_problem`` says why, None where there is one)."""
        if not self.capture:
            return
        if vec_task:
            reason = f"records our tasks; {task_name} is a VecTask class of its own"
            raise ConfigError("capture_video", True, reason)
        if mode not in recording_modes:
            recording = " or ".join(f"gmi.mode={m}" for m in recording_modes)
            raise ConfigError("capture_video", True, f"recorded in {recording} only (here: {mode})")
        problem = renderer_problem()
        if problem is not None:
            raise ConfigError("capture_video", True, problem)
