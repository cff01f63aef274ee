"""Video capture settings: IsaacGymEnvs' ``capture_video``, ``capture_video_freq`` and
``capture_video_len``, validated at the edge.

Upstream hands the two integers to gym's ``RecordVideo`` (a step trigger ``step % freq == 0``
and ``video_length=len``) and so accepts any length, also one longer than the period (a
recording then runs to its end and the next one starts at the next multiple of ``freq``), and
``len=0``, which records until env 0's episode ends. Refused: a period below 1 (upstream divides
by it), a negative length, and anything that is not an integer.
"""

from __future__ import annotations

from dataclasses import dataclass

from .schema import FLAG, Int, Settings, setting


@dataclass(frozen=True)
class VideoSettings(Settings):
    """``capture``: record env 0; a video of ``length`` env steps (0: until env 0's episode
    ends) starts every ``every`` env steps (at steps 0, every, 2 * every, ...) unless one is
    still being recorded, as upstream's step trigger has it."""

    capture: bool = setting(False, FLAG, key="capture_video")
    every: int = setting(1464, Int(1), key="capture_video_freq")
    length: int = setting(100, Int(0), key="capture_video_len")
