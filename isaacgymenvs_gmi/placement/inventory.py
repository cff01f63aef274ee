"""What a node offers GMIs: NVIDIA GPUs (through NVML, with their MIG instances) and CPU cores."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from .cpu_sets import usable_cores

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MigInstance:
    uuid: str  # "MIG-..." as CUDA_VISIBLE_DEVICES takes it
    name: str  # e.g. "NVIDIA A100-SXM4-40GB MIG 1g.5gb"
    memory_bytes: int
    sm_count: int


@dataclass(frozen=True)
class GpuInfo:
    index: int  # NVML index
    name: str
    uuid: str
    compute_capability: tuple[int, int]
    memory_bytes: int
    sm_count: int
    mig_enabled: bool
    mig_instances: tuple[MigInstance, ...] = ()


@dataclass(frozen=True)
class Inventory:
    gpus: tuple[GpuInfo, ...] = ()
    cores: tuple[int, ...] = field(default_factory=lambda: tuple(usable_cores()))
    driver: str | None = None

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpus)


def _visible(gpus: list[GpuInfo]) -> list[GpuInfo]:
    """Apply CUDA_VISIBLE_DEVICES (indices or GPU UUIDs) to NVML's list, in its order."""
    spec = os.environ.get("CUDA_VISIBLE_DEVICES")
    if spec is None:
        return gpus
    items = [s.strip() for s in spec.split(",") if s.strip()]
    return [g for item in items for g in gpus if str(g.index) == item or g.uuid == item]


def detect_inventory() -> Inventory:
    """GPUs visible to this process (NVML), or none when NVML or a driver is absent."""
    try:
        import pynvml
    except ImportError:
        return Inventory()
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return Inventory()
    try:
        gpus = [_gpu_info(pynvml, i) for i in range(pynvml.nvmlDeviceGetCount())]
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        return Inventory(gpus=tuple(_visible(gpus)), driver=driver)
    finally:
        pynvml.nvmlShutdown()


def _text(x) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


def _sm_count(pynvml, handle) -> int:
    try:
        return int(pynvml.nvmlDeviceGetAttributes(handle).multiprocessorCount)
    except pynvml.NVMLError:
        return 0


def _gpu_info(pynvml, index: int) -> GpuInfo:
    h = pynvml.nvmlDeviceGetHandleByIndex(index)
    major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
    try:
        current, _ = pynvml.nvmlDeviceGetMigMode(h)
        mig = current == pynvml.NVML_DEVICE_MIG_ENABLE
    except pynvml.NVMLError:
        mig = False
    instances = []
    if mig:
        for slot in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(h)):
            try:
                mh = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, slot)
            except pynvml.NVMLError:
                continue
            instances.append(
                MigInstance(
                    uuid=_text(pynvml.nvmlDeviceGetUUID(mh)),
                    name=_text(pynvml.nvmlDeviceGetName(mh)),
                    memory_bytes=int(pynvml.nvmlDeviceGetMemoryInfo(mh).total),
                    sm_count=_sm_count(pynvml, mh),
                )
            )
    return GpuInfo(
        index=index,
        name=_text(pynvml.nvmlDeviceGetName(h)),
        uuid=_text(pynvml.nvmlDeviceGetUUID(h)),
        compute_capability=(int(major), int(minor)),
        memory_bytes=int(pynvml.nvmlDeviceGetMemoryInfo(h).total),
        sm_count=_sm_count(pynvml, h),
        mig_enabled=mig,
        mig_instances=tuple(instances),
    )
