"""Typed form of ``gmi.debug.*``: switches for finding bugs, off (and free) by default."""

from __future__ import annotations

from dataclasses import dataclass

from .schema import FLAG, Choice, Int, Real, Settings, setting


@dataclass(frozen=True)
class DebugSettings(Settings):
    """Validated ``gmi.debug.*``.

    Attributes:
        sync: wait for the device (torch's kernels and JAX's programs) after every env step and
            every collective between GMIs; a failure this removes is a stream or lifetime race.
        handoffs: how buffers cross between torch and JAX (:mod:`isaacgymenvs_gmi.sim.handoff`):
            ``held`` (owned by us until its consumer has passed it) or ``bare`` (zero-copy and
            unheld: only to show in a bisection what the rule changes).
        trace_nonfinite: at the first minibatch whose losses are NaN or inf, replay its forward
            pass and say where the first non-finite value appeared
            (:mod:`~isaacgymenvs_gmi.rl.nonfinite_trace`).
        audit: every this many epochs (0: never), recompute the first minibatch's losses and
            reduced gradient in float64 on the host, and stop the run, naming the tensor and
            the GMI, where the GMIs' figures differ by more than ``audit_tolerance``
            (:mod:`~isaacgymenvs_gmi.rl.audit`).
        audit_tolerance: the largest relative error the audit accepts; null: 1e-3 for a
            float32 learner, 5e-2 with mixed precision.
        same_data: every GMI seeds its envs and its policy with ``seed`` itself, not
            ``seed + its id``, so every GMI sees the data one process with that seed sees: N
            GMIs of n envs must then train what one process of n envs trains, up to float
            rounding (``tests/gmi/test_gmi_same_data.py``). A check of the merges, not a way to
            train (the GMIs add no samples). Not yet with ``audit``: its float64 recompute counts
            the union in full and stops the run (3e-3 off, measured).

    All but ``handoffs`` and ``same_data`` are slow: for diagnosis only.
    """

    PREFIX = "gmi.debug"
    sync: bool = setting(False, FLAG)
    handoffs: str = setting("held", Choice(("held", "bare")))
    trace_nonfinite: bool = setting(False, FLAG)
    audit: int = setting(0, Int(0, why="epochs between audits, 0: off"))
    audit_tolerance: float | None = setting(None, Real(0.0, open_low=True, optional=True))
    same_data: bool = setting(False, FLAG)

    @property
    def active(self) -> bool:
        """Whether any switch differs from a normal run."""
        return self != DebugSettings()

    def describe(self) -> str:
        parts = []
        if self.sync:
            parts.append("gmi.debug.sync: every env step and collective waits for the device")
        if self.handoffs == "bare":
            parts.append("gmi.debug.handoffs=bare: torch/JAX buffers cross unheld (unsafe)")
        if self.trace_nonfinite:
            parts.append("gmi.debug.trace_nonfinite: the first non-finite minibatch is replayed")
        if self.audit:
            parts.append(f"gmi.debug.audit: a float64 recompute every {self.audit} epochs")
        if self.same_data:
            parts.append("gmi.debug.same_data: every GMI steps the same envs with one seed")
        return "; ".join(parts) + " (slow or unsafe: for diagnosis only)"
