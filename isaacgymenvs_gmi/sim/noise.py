"""Observation and action noise of domain randomisation, applied in torch on the env's tensors.

Each tensor gets ``op(tensor, corr + fresh)``: ``fresh`` drawn every step, ``corr`` once per
refresh (a per-env, per-slot bias). As upstream does, ``corr`` is drawn normal under both
``gaussian`` and ``uniform`` and shifted and scaled by ``range_correlated``, and the schedule
scales additive parameters towards 0 and a scaling operation's means (or ends) towards 1 (so a
scaling factor starts near 2 under a schedule). Refreshes happen every ``frequency`` physics
steps (upstream: at the first reset after that many).
"""

from __future__ import annotations

import numpy as np
import torch

from isaacgymenvs_gmi.config.randomization import (
    NoiseSpec,
    RandomizationSettings,
    scheduled_range,
)


class Noise:
    """One :class:`NoiseSpec` with its current parameters and correlated draw.

    Host tensors are noised in numpy (torch's intra-op threads would spin against the physics
    threads on the same cores); device tensors in torch."""

    def __init__(self, spec: NoiseSpec, seed: int):
        self.spec = spec
        self.seed = seed
        self.host_rng = np.random.default_rng(seed)
        self.device_rng: torch.Generator | None = None
        self.fresh = self.corr_params = (0.0, 0.0)
        self.corr: np.ndarray | torch.Tensor | None = None
        self.refresh(0)

    def refresh(self, step: int) -> None:
        """Parameters as scheduled at physics step ``step``; a new correlated draw at next use."""
        spec, s = self.spec, self.spec.scale(step)
        self.fresh = scheduled_range(spec.range, spec.distribution, spec.operation, s)
        self.corr_params = scheduled_range(
            spec.range_correlated, spec.distribution, spec.operation, s
        )
        self.corr = None

    def __call__(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` (any shape) with this noise; a new tensor."""
        host = self.on_host(tensor)
        values = tensor.detach().numpy() if host else tensor
        if self.corr is None or tuple(self.corr.shape) != tuple(values.shape):
            self.corr = self._draw(values, uniform=False)  # normal, as upstream draws it
        a, b = self.corr_params
        x, y = self.fresh
        if self.spec.distribution == "gaussian":
            noise = self._draw(values, uniform=False) * y + (x + a) + self.corr * b
        else:
            noise = self._draw(values, uniform=True) * (y - x) + (x + a) + self.corr * (b - a)
        out = values + noise if self.spec.operation == "additive" else values * noise
        return torch.from_numpy(out) if host else out

    def on_host(self, tensor: torch.Tensor) -> bool:
        """Whether ``tensor`` is noised in numpy (host memory) rather than in torch."""
        return tensor.device.type == "cpu"

    def _draw(self, like, uniform: bool):
        if isinstance(like, np.ndarray):
            draw = self.host_rng.random if uniform else self.host_rng.standard_normal
            return draw(like.shape, dtype=np.float32)
        if self.device_rng is None:
            self.device_rng = torch.Generator(device=like.device).manual_seed(self.seed)
        sample = torch.rand if uniform else torch.randn
        return sample(like.shape, generator=self.device_rng, device=like.device, dtype=like.dtype)


class EnvNoise:
    """The noise of one env on its actions and observations (before each is clipped)."""

    def __init__(self, settings: RandomizationSettings, seed: int):
        self.frequency = settings.frequency
        self.actions = Noise(settings.actions, 2 * seed) if settings.actions else None
        self.observations = (
            Noise(settings.observations, 2 * seed + 1) if settings.observations else None
        )
        self._last_refresh = 0

    def on_actions(self, actions: torch.Tensor) -> torch.Tensor:
        return actions if self.actions is None else self.actions(actions)

    def on_observations(self, obs: torch.Tensor, clip: float) -> torch.Tensor:
        """Noised observations, clipped to +-``clip`` (as upstream clips after its noise)."""
        if self.observations is None:
            return obs
        out = self.observations(obs)
        if out.device.type == "cpu":
            np.clip(out.numpy(), -clip, clip, out=out.numpy())
            return out
        return out.clamp_(-clip, clip)

    def advance(self, step: int) -> None:
        """Physics step ``step`` is reached: refresh when ``frequency`` steps have passed."""
        if step - self._last_refresh >= self.frequency:
            self._last_refresh = step
            for noise in (self.actions, self.observations):
                if noise is not None:
                    noise.refresh(step)
