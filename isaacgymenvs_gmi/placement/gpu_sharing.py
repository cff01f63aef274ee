"""How GMIs are carved out of a node (paper Sec. 3), chosen and validated by pure functions.

``cpu``: disjoint core sets. ``mps``: MPS clients with an SM share each. ``mig``: one MIG instance
per GMI. ``direct``: processes sharing a GPU without isolation (the paper's Fig. 8 baseline).
``auto``: no GPU -> cpu; independent GMIs (serving) with MIG instances -> mig; otherwise -> mps.
"""

from __future__ import annotations

from dataclasses import dataclass

from isaacgymenvs_gmi.config import ConfigError, GmiConfig

from .inventory import Inventory
from .layout import GmiLayout

MPS_MAX_CLIENTS = 48  # per GPU, CUDA < 13.1 (paper Sec. 3; NVIDIA MPS documentation)


def choose_backend(requested: str, inventory: Inventory, independent_gmis: bool = False) -> str:
    """The GMI backend for ``gmi.backend=requested`` (raises ConfigError when impossible);
    ``auto`` picks MIG only for GMIs that never talk to each other (``independent_gmis``)."""
    if requested == "auto":
        if not inventory.has_gpu:
            return "cpu"
        if independent_gmis and all(g.mig_instances for g in inventory.gpus):
            return "mig"
        return "mps"
    if requested in ("mps", "mig", "direct") and not inventory.has_gpu:
        raise ConfigError(
            "gmi.backend", requested, "needs an NVIDIA GPU and none is visible; use cpu or auto"
        )
    if requested == "mig":
        old = [g.index for g in inventory.gpus if g.compute_capability < (8, 0)]
        if old:
            raise ConfigError(
                "gmi.backend", requested, f"GPU(s) {old} predate MIG (sm < 80); use mps"
            )
        bare = [g.index for g in inventory.gpus if not g.mig_instances]
        if bare:
            raise ConfigError(
                "gmi.backend",
                requested,
                f"GPU(s) {bare} have no MIG instances (MIG mode off or none created); "
                "`python -m isaacgymenvs_gmi.mig plan --per-gpu N` prints the commands an "
                "administrator would run",
            )
    return requested


@dataclass(frozen=True)
class NodeLayout:
    """Devices on this node and GMIs per device, once validated."""

    backend: str
    devices: int
    per_device: int


def node_layout(gmi: GmiConfig, inventory: Inventory, independent_gmis: bool = False) -> NodeLayout:
    """Validate ``gmi.*`` against the node and return its layout (raises ConfigError);
    ``independent_gmis``: the mode's GMIs never talk to each other (MIG suits them)."""
    backend = choose_backend(gmi.backend, inventory, independent_gmis)
    t = gmi.per_gpu
    if gmi.sm_percent is not None and backend != "mps":
        raise ConfigError(
            "gmi.sm_percent", list(gmi.sm_percent), f"only applies to mps (backend here: {backend})"
        )
    if backend == "cpu":
        cores = len(inventory.cores)
        devices = gmi.num_gpus or 1
        if devices > cores:
            raise ConfigError(
                "gmi.num_gpus", devices, f"at most {cores} virtual CPU devices on {cores} cores"
            )
        return NodeLayout(backend, devices, t)
    visible = len(inventory.gpus)
    devices = gmi.num_gpus or visible
    if devices > visible:
        raise ConfigError("gmi.num_gpus", devices, f"only {visible} GPU(s) visible")
    if backend == "mps" and t > MPS_MAX_CLIENTS:
        raise ConfigError("gmi.per_gpu", t, f"MPS allows at most {MPS_MAX_CLIENTS} clients per GPU")
    if backend == "mig":
        fewest = min(len(g.mig_instances) for g in inventory.gpus[:devices])
        if t > fewest:
            raise ConfigError(
                "gmi.per_gpu", t, f"each GMI needs its own MIG instance; a GPU has only {fewest}"
            )
    if gmi.sm_percent is not None and len(gmi.sm_percent) != t:
        raise ConfigError("gmi.sm_percent", list(gmi.sm_percent), f"needs one value per GMI ({t})")
    return NodeLayout(backend, devices, t)


def sm_percent(gmi: GmiConfig, slot: int) -> float:
    """MPS active-thread percentage of the GMI in ``slot``: even split unless overridden."""
    if gmi.sm_percent is not None:
        return float(gmi.sm_percent[slot])
    return round(100.0 / gmi.per_gpu, 2)


def layout_for(node: NodeLayout, num_nodes: int = 1) -> GmiLayout:
    return GmiLayout(num_nodes=num_nodes, devices_per_node=node.devices, per_device=node.per_device)
