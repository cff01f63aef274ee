"""Which slots of which device a job runs on: ``per_device`` slots on each device, each with a
share of the node's cores (:func:`~isaacgymenvs_gmi.placement.cpu_sets.split_cores`, the same
split GMIs of one run get). A job asking for k GMIs takes k slots of one device."""

from __future__ import annotations

from dataclasses import dataclass

from isaacgymenvs_gmi.config.errors import ConfigError
from isaacgymenvs_gmi.placement.cpu_sets import split_cores
from isaacgymenvs_gmi.placement.machine_limits import check_gmi_count

MPS_CLIENTS_PER_GPU = 48  # before CUDA 13.1
KEY = "hydra.launcher.per_gpu"


@dataclass(frozen=True)
class Slot:
    device: int  # GPU index, or CPU device index where there is no GPU
    index: int  # slot on that device
    cores: tuple[int, ...]


@dataclass(frozen=True)
class Lease:
    """Slots of one device held by one job."""

    slots: tuple[Slot, ...]

    @property
    def device(self) -> int:
        return self.slots[0].device

    @property
    def cores(self) -> tuple[int, ...]:
        return tuple(sorted({c for s in self.slots for c in s.cores}))

    def describe(self, gpu: bool) -> str:
        where = f"GPU {self.device}" if gpu else f"CPU device {self.device}"
        indices = ",".join(str(s.index) for s in self.slots)
        return f"{where} slot {indices}, cores {list(self.cores)}"


class SlotPool:
    """Free and leased slots of ``devices`` devices with ``per_device`` slots each."""

    def __init__(self, devices: int, per_device: int, cores: list[int]):
        if devices < 1 or per_device < 1:
            raise ValueError(f"need at least one slot: {devices} devices x {per_device}")
        self.devices, self.per_device = devices, per_device
        sets = iter(split_cores(cores, devices, per_device))
        self._free: dict[tuple[int, int], Slot] = {
            (d, i): Slot(d, i, tuple(next(sets))) for d in range(devices) for i in range(per_device)
        }

    @property
    def free(self) -> int:
        return len(self._free)

    def take(self, need: int) -> Lease | None:
        """``need`` free slots of the first device that has them (lowest slots first), or None
        while none has."""
        if need > self.per_device:
            raise ValueError(f"a job of {need} GMIs cannot fit {self.per_device} slots a device")
        for d in range(self.devices):
            mine = sorted(i for dev, i in self._free if dev == d)
            if len(mine) >= need:
                return Lease(tuple(self._free.pop((d, i)) for i in mine[:need]))
        return None

    def give_back(self, lease: Lease) -> None:
        for slot in lease.slots:
            key = (slot.device, slot.index)
            if key in self._free:
                raise ValueError(f"slot {key} given back twice")
            self._free[key] = slot


def check_capacity(per_gpu: int, devices: int, cores: int, memory: int, gpu: bool) -> None:
    """Raise a ConfigError on ``hydra.launcher.per_gpu`` when this node cannot hold
    ``per_gpu`` jobs on each of ``devices`` devices (the limits a run's GMIs have)."""
    try:
        check_gmi_count(per_gpu * devices, cores, memory, cpu_backend=not gpu)
    except ConfigError as err:
        raise ConfigError(KEY, per_gpu, err.constraint.replace("GMIs", "jobs")) from None
    if gpu and per_gpu > MPS_CLIENTS_PER_GPU:
        raise ConfigError(KEY, per_gpu, f"MPS serves at most {MPS_CLIENTS_PER_GPU} jobs a GPU")
