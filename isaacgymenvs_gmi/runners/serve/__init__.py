"""``gmi.mode=serve``: every GMI plays the policy (actors only, the paper's serving GMIs)."""

from .body import run_serve

__all__ = ["run_serve"]
