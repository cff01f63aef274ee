"""Small, documented changes to rl-games behaviour, each applied explicitly by the launcher.

- :mod:`.atomic_checkpoint`: checkpoints are written to a temporary file and renamed into place.
"""

from . import atomic_checkpoint


def apply_all() -> None:
    atomic_checkpoint.apply()
