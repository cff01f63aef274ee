"""An example task package: importing it registers the Pendulum task."""

from .pendulum import Pendulum

__all__ = ["Pendulum"]
