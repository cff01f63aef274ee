"""Video capture settings: IsaacGymEnvs' ``capture_video``, ``capture_video_freq`` and
``capture_video_len``, validated at the edge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._values import check_int, select
from .errors import ConfigError


@dataclass(frozen=True)
class VideoSettings:
    """``capture``: record env 0; a video of ``length`` env steps starts every ``every`` env
    steps (at steps 0, every, 2 * every, ...), as upstream's step trigger has it."""

    capture: bool = False
    every: int = 1464
    length: int = 100

    @classmethod
    def from_cfg(cls, cfg: Any) -> VideoSettings:
        capture = select(cfg, "capture_video", False)
        if not isinstance(capture, bool):
            raise ConfigError("capture_video", capture, "must be True or False")
        every = check_int("capture_video_freq", select(cfg, "capture_video_freq", 1464), minimum=1)
        length = check_int("capture_video_len", select(cfg, "capture_video_len", 100), minimum=1)
        if capture and length > every:
            raise ConfigError(
                "capture_video_len", length, f"must be <= capture_video_freq ({every})"
            )
        return cls(capture, every, length)
