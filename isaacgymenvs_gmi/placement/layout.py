"""Where each GMI runs: node, device, slot, and the GMI-to-GPU mapping list (MPL).

GMI ids are global ranks, filling a node before the next; on a node, GMIs ``[d*T, (d+1)*T)``
share local device ``d``. E.g. 2 nodes x 2 devices x 3 GMIs: ``MPL = [[0,1,2], [3,4,5], [6,7,8],
[9,10,11]]``. A device's leader (which talks across devices in hierarchical reduction) is its
slot 0 (paper Sec. 4.1: ``GMI_id % M == t``, ``t = 0``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GmiPlace:
    """One GMI's position in the layout."""

    gmi_id: int  # global rank
    node: int
    local_rank: int  # rank on its node
    device: int  # global device index (row of the MPL)
    local_device: int  # device index on its node
    slot: int  # position among the GMIs of its device
    is_leader: bool


@dataclass(frozen=True)
class GmiLayout:
    """``num_nodes`` nodes x ``devices_per_node`` devices x ``per_device`` GMIs per device."""

    num_nodes: int
    devices_per_node: int
    per_device: int

    def __post_init__(self) -> None:
        for name in ("num_nodes", "devices_per_node", "per_device"):
            if getattr(self, name) < 1:
                raise ValueError(f"GmiLayout.{name} must be >= 1, got {getattr(self, name)}")

    @property
    def per_node(self) -> int:
        return self.devices_per_node * self.per_device

    @property
    def num_devices(self) -> int:
        return self.num_nodes * self.devices_per_node

    @property
    def world_size(self) -> int:
        return self.num_devices * self.per_device

    def mpl(self) -> list[list[int]]:
        """GMI-to-GPU mapping list: row d holds the ids of the GMIs on device d."""
        t = self.per_device
        return [list(range(d * t, (d + 1) * t)) for d in range(self.num_devices)]

    def place(self, gmi_id: int) -> GmiPlace:
        if not 0 <= gmi_id < self.world_size:
            raise ValueError(f"GMI id {gmi_id} outside [0, {self.world_size})")
        node, local_rank = divmod(gmi_id, self.per_node)
        local_device, slot = divmod(local_rank, self.per_device)
        return GmiPlace(
            gmi_id=gmi_id,
            node=node,
            local_rank=local_rank,
            device=node * self.devices_per_node + local_device,
            local_device=local_device,
            slot=slot,
            is_leader=slot == 0,
        )

    def first(self, k: int) -> GmiLayout:
        """The layout of GMIs ``0 .. k-1`` (ids unchanged): part of the first device, or whole
        devices of the first node (else ValueError)."""
        t = self.per_device
        if not 1 <= k <= self.world_size:
            raise ValueError(f"{k} GMIs is not between 1 and the {self.world_size} of the layout")
        if k <= t:
            return GmiLayout(1, 1, k)
        devices, rest = divmod(k, t)
        if rest or devices > self.devices_per_node:
            raise ValueError(
                f"{k} GMIs must be at most the {t} of one device or fill whole devices of one "
                f"node (a multiple of {t}, at most {t * self.devices_per_node})"
            )
        return GmiLayout(1, devices, t)

    def leaders(self) -> list[int]:
        """The leader GMI of every device, in device order."""
        return [row[0] for row in self.mpl()]

    def describe(self) -> str:
        return (
            f"{self.world_size} GMIs = {self.num_nodes} node(s) x {self.devices_per_node} "
            f"device(s) x {self.per_device} per device; MPL={self.mpl()}"
        )
