"""Choice of physics backend and devices, as a pure function of the config and the platform."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

from .errors import ConfigError
from .schema import Choice, Device, Folder, Settings, setting

logger = logging.getLogger(__name__)

SimBackend = Literal["mujoco", "mjx"]
MjxImpl = Literal["jax", "warp"]

#: Values accepted for ``sim_backend`` ("auto" is resolved to one of the others).
SIM_BACKEND_CHOICES: tuple[str, ...] = ("auto", *get_args(SimBackend))
MJX_IMPLS: tuple[MjxImpl, ...] = get_args(MjxImpl)
#: JAX platform names that mean "a CUDA GPU is usable from JAX".
JAX_GPU_PLATFORMS: tuple[str, ...] = ("gpu", "cuda")

_GPU_EXTRA_HINT = "install the 'gpu' extra (pip install 'isaacgymenvs_gmi[gpu]')"


@dataclass(frozen=True)
class SimKeys(Settings):
    """The top-level keys the simulation settings are resolved from, each checked."""

    sim_device: str = setting("cuda:0", Device())
    rl_device: str = setting("cuda:0", Device())
    sim_backend: str = setting("auto", Choice(SIM_BACKEND_CHOICES))
    mjx_impl: str = setting("jax", Choice(MJX_IMPLS))
    assets_root: str | None = setting(
        None, Folder("an IsaacGymEnvs 'assets' folder", optional=True)
    )


@dataclass(frozen=True)
class SimSettings:
    """Resolved simulation settings: ``backend`` "mujoco" (the C engine, on the CPU) or "mjx"
    (MuJoCo XLA in JAX), with ``mjx_impl`` "jax" or "warp"; ``sim_device`` and ``rl_device``
    "cpu", "cuda" or "cuda:N" (after the fallback to "cpu"); ``assets_root``: the IsaacGymEnvs
    assets folder to load ``env.asset.assetFileName`` from (``None``: the bundled models)."""

    backend: SimBackend
    mjx_impl: MjxImpl
    sim_device: str
    rl_device: str
    assets_root: str | None

    @property
    def on_gpu(self) -> bool:
        """Whether physics runs on a CUDA device."""
        return self.sim_device.startswith("cuda")


def resolve_sim_settings(
    cfg: Any,
    *,
    cuda_available: bool,
    jax_platforms: Iterable[str],
    warp_available: bool,
) -> SimSettings:
    """Validate ``sim_backend``, ``mjx_impl``, ``sim_device``, ``rl_device``, ``assets_root``
    of the composed config ``cfg`` for this platform (see :func:`detect_platform`).

    Without CUDA, CUDA devices fall back to "cpu" with a single warning. ``sim_backend=auto``
    picks "mjx" when physics runs on CUDA and JAX sees a GPU, else "mujoco".

    Raises:
        ConfigError: naming the key, for a malformed device, an unknown backend or impl, or a
            choice the platform cannot run.
    """
    platforms = tuple(p.lower() for p in jax_platforms)
    keys = SimKeys.from_cfg(cfg)
    devices = {"sim_device": keys.sim_device, "rl_device": keys.rl_device}
    moved = [] if cuda_available else [k for k, v in devices.items() if v.startswith("cuda")]
    if moved:
        logger.warning(
            "CUDA is not available: using cpu for %s",
            ", ".join(f"{k} (was {devices[k]})" for k in moved),
        )
        devices.update(dict.fromkeys(moved, "cpu"))
    sim_device = devices["sim_device"]
    choice, impl = keys.sim_backend, cast(MjxImpl, keys.mjx_impl)
    jax_gpu = any(p in JAX_GPU_PLATFORMS for p in platforms)
    on_cuda = sim_device.startswith("cuda")

    if choice == "auto":
        backend: SimBackend = "mjx" if on_cuda and jax_gpu else "mujoco"
    else:
        backend = cast(SimBackend, choice)

    if backend == "mjx" and on_cuda and not jax_gpu:
        seen = ", ".join(platforms) or "no devices"
        raise ConfigError(
            "sim_backend",
            choice,
            f"needs a JAX GPU device for sim_device={sim_device}; "
            f"JAX sees: {seen}; {_GPU_EXTRA_HINT}, or set sim_backend=mujoco or sim_device=cpu",
        )
    if backend == "mjx" and impl == "warp" and not warp_available:
        raise ConfigError(
            "mjx_impl",
            impl,
            f"needs warp-lang and mujoco-warp; {_GPU_EXTRA_HINT}, or set mjx_impl=jax",
        )

    return SimSettings(
        backend=backend,
        mjx_impl=impl,
        sim_device=sim_device,
        rl_device=devices["rl_device"],
        assets_root=keys.assets_root,
    )


def detect_platform() -> tuple[bool, tuple[str, ...], bool]:
    """Return ``(cuda_available, jax_platforms, warp_available)`` for this process.

    Where an accelerator could be used, this initialises torch's CUDA runtime and JAX's
    backends; a JAX GPU backend then preallocates most of the device memory unless
    ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` is set first (needed where GMIs share a GPU).
    Otherwise neither is started (no thread pools: the GMIs may still be forked).
    """
    import torch

    cuda_available = torch.version.cuda is not None and bool(torch.cuda.is_available())
    return cuda_available, _jax_platforms(), _warp_available()


def _jax_platforms() -> tuple[str, ...]:
    try:
        import jax
    except ImportError:
        return ()
    if not _jax_accelerator_plugins():  # the CPU only, and JAX needs no start to say so
        allowed = os.environ.get("JAX_PLATFORMS", "").strip()
        return ("cpu",) if not allowed or "cpu" in allowed.split(",") else ()
    found: dict[str, None] = {}  # in order, each once
    for name in ("cpu", "gpu"):
        with contextlib.suppress(RuntimeError):
            found.update(dict.fromkeys(device.platform for device in jax.devices(name)))
    return tuple(found)


def _jax_accelerator_plugins() -> bool:
    """Whether a JAX plugin (CUDA, ROCm, ...) is installed: a module under the ``jax_plugins``
    namespace or an entry point in that group, as JAX finds them."""
    import importlib.metadata

    if importlib.util.find_spec("jax_plugins") is not None:
        return True
    return bool(importlib.metadata.entry_points(group="jax_plugins"))


def _warp_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("warp", "mujoco_warp"))
