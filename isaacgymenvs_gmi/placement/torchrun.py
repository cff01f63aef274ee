"""The GMI layout of ranks that ``torchrun`` started (every rank is one GMI): torchrun fixes the
ranks per node; the plugin only splits them as devices x GMIs per device."""

from __future__ import annotations

from collections.abc import Mapping

from isaacgymenvs_gmi.config import ConfigError, GmiConfig

from .layout import GmiLayout


def torchrun_world(environ: Mapping[str, str]) -> tuple[int, int] | None:
    """(world size, ranks per node) when ``environ`` is that of a rank started by torchrun."""
    if "TORCHELASTIC_RUN_ID" in environ and "LOCAL_WORLD_SIZE" in environ:
        return int(environ["WORLD_SIZE"]), int(environ["LOCAL_WORLD_SIZE"])
    return None


def torchrun_layout(gmi: GmiConfig, devices: int, world: tuple[int, int]) -> GmiLayout:
    """Match torchrun's ranks to ``devices`` per node (ConfigError naming ``gmi.num_gpus`` or
    ``gmi.per_gpu`` when the ranks do not split)."""
    size, per_node = world
    if per_node % devices:
        raise ConfigError("gmi.num_gpus", devices, f"must divide --nproc_per_node={per_node}")
    per_device = per_node // devices
    if gmi.per_gpu not in (1, per_device):  # 1 is the default: torchrun's count decides
        raise ConfigError(
            "gmi.per_gpu", gmi.per_gpu, f"torchrun starts {per_node} ranks on {devices} device(s)"
        )
    return GmiLayout(num_nodes=size // per_node, devices_per_node=devices, per_device=per_device)
