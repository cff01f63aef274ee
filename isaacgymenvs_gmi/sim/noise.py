"""Observation and action noise of domain randomisation, applied in torch on the env's tensors.

Each tensor gets ``op(tensor, corr + fresh)``: ``fresh`` is drawn every step, ``corr`` once per
refresh (per env and slot: a bias that persists between refreshes). As upstream's code does,
the correlated part is drawn from a normal distribution under both ``gaussian`` and ``uniform``
and then shifted and scaled by ``range_correlated``. The schedule scales the parameters when
they are refreshed, additive ones towards 0 and, for a scaling operation, the means (or ends)
of both parts towards 1, as upstream's code does (so a scaling factor starts near 2 under a
schedule). Refreshes happen every ``frequency`` physics steps (upstream: at the first reset
after that many).
"""

from __future__ import annotations

import torch

from isaacgymenvs_gmi.config.randomization import NoiseSpec, RandomizationSettings


class Noise:
    """One :class:`NoiseSpec` with its current parameters and correlated draw."""

    def __init__(self, spec: NoiseSpec, generator: torch.Generator):
        self.spec = spec
        self.generator = generator
        self.fresh = self.corr_params = (0.0, 0.0)
        self.corr: torch.Tensor | None = None
        self.refresh(0)

    def refresh(self, step: int) -> None:
        """Parameters as the schedule has them at physics step ``step``; a new correlated draw
        at the next use."""
        s = self.spec.scale(step)
        shift = 0.0 if self.spec.operation == "additive" else 1.0 - s
        a, b = self.spec.range
        a_c, b_c = self.spec.range_correlated
        if self.spec.distribution == "gaussian":  # (mean, std): means move, stds scale
            self.fresh, self.corr_params = (a * s + shift, b * s), (a_c * s + shift, b_c * s)
        else:  # uniform (low, high): both ends move
            self.fresh = (a * s + shift, b * s + shift)
            self.corr_params = (a_c * s + shift, b_c * s + shift)
        self.corr = None

    def __call__(self, tensor: torch.Tensor) -> torch.Tensor:
        if self.corr is None or self.corr.shape != tensor.shape:
            self.corr = self._draw(torch.randn, tensor)
        a, b = self.corr_params
        x, y = self.fresh
        if self.spec.distribution == "gaussian":
            corr = self.corr * b + a
            noise = corr + self._draw(torch.randn, tensor) * y + x
        else:
            corr = self.corr * (b - a) + a
            noise = corr + self._draw(torch.rand, tensor) * (y - x) + x
        return tensor + noise if self.spec.operation == "additive" else tensor * noise

    def _draw(self, sample, like: torch.Tensor) -> torch.Tensor:
        return sample(like.shape, generator=self.generator, device=like.device, dtype=like.dtype)


class EnvNoise:
    """The noise of one env: on its actions before they are clipped, on its observations before
    they are clipped; refreshed on schedule as physics steps pass."""

    def __init__(self, settings: RandomizationSettings, device: torch.device, seed: int):
        generator = torch.Generator(device=device).manual_seed(seed)
        self.frequency = settings.frequency
        self.actions = Noise(settings.actions, generator) if settings.actions else None
        self.observations = (
            Noise(settings.observations, generator) if settings.observations else None
        )
        self._last_refresh = 0

    def on_actions(self, actions: torch.Tensor) -> torch.Tensor:
        return actions if self.actions is None else self.actions(actions)

    def on_observations(self, obs: torch.Tensor) -> torch.Tensor:
        return obs if self.observations is None else self.observations(obs)

    def advance(self, step: int) -> None:
        """Physics step ``step`` is reached: refresh when ``frequency`` steps have passed."""
        if step - self._last_refresh >= self.frequency:
            self._last_refresh = step
            for noise in (self.actions, self.observations):
                if noise is not None:
                    noise.refresh(step)
