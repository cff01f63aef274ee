"""Which CUDA libraries a GMI runs on, said once its frameworks are on the GPU.

glibc loads one copy per SONAME, so import order decides which ``libcublas`` torch and JAX share
(pytorch#174320, jax-ml/jax#18032), while copies under different names can both be mapped. A
GMI's line gives every mapped copy of :data:`LIBRARIES` (path, version, from
``/proc/self/maps``) and what torch and JAX see (CUDA version, SMs); two copies are warned of.
"""

from __future__ import annotations

import ctypes
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

LIBRARIES = ("libcublasLt", "libcublas", "libcudart", "libcudnn", "libnccl")
_SONAME = re.compile(r"/(lib[A-Za-z]+)\.so(\.[\d.]+)?$")


@dataclass(frozen=True)
class GpuIdentity:
    copies: dict[str, list[str]]  # library -> the files mapped, in map order
    versions: dict[str, str] = field(default_factory=dict)  # file -> version, where readable
    frameworks: dict[str, str] = field(default_factory=dict)  # "torch"/"jax" -> what it sees

    @property
    def duplicated(self) -> dict[str, list[str]]:
        """Libraries mapped from more than one file."""
        return {lib: files for lib, files in self.copies.items() if len(files) > 1}

    def line(self, rank: int) -> str:
        libs = "; ".join(
            f"{lib} " + ", ".join(f"{self.versions.get(f, '?')} ({f})" for f in files)
            for lib, files in self.copies.items()
        )
        seen = "; ".join(f"{name}: {text}" for name, text in self.frameworks.items())
        return f"GMI {rank} GPU libraries: {libs or 'none mapped'} | {seen}"


def mapped_libraries(maps_text: str) -> dict[str, list[str]]:
    """library -> the distinct files of it in a ``/proc/<pid>/maps`` text, in map order."""
    found: dict[str, list[str]] = {}
    for line in maps_text.splitlines():
        path = line.split(maxsplit=5)[-1] if line.count(" ") >= 5 else ""
        match = _SONAME.search(path)
        if match and match.group(1) in LIBRARIES and path not in found.get(match.group(1), []):
            found.setdefault(match.group(1), []).append(path)
    return found


def _library_version(lib: str, path: str) -> str | None:
    """The version the library itself reports (cuBLAS and cuBLASLt), else its file suffix."""
    try:
        handle = ctypes.CDLL(path)  # already mapped: the same handle, nothing new loaded
        if lib == "libcublasLt":
            handle.cublasLtGetVersion.restype = ctypes.c_size_t
            return str(handle.cublasLtGetVersion())
        if lib == "libcublas":
            parts = []
            for kind in range(3):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
                value = ctypes.c_int()
                if handle.cublasGetProperty(kind, ctypes.byref(value)) != 0:
                    raise OSError("cublasGetProperty failed")
                parts.append(str(value.value))
            return ".".join(parts)
    except (OSError, AttributeError):
        pass
    suffix = _SONAME.search(path)
    return suffix.group(2).lstrip(".") if suffix and suffix.group(2) else None


def _frameworks(torch_device) -> dict[str, str]:
    seen: dict[str, str] = {}
    try:
        import torch

        props = torch.cuda.get_device_properties(torch_device)
        seen["torch"] = (
            f"CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, "
            f"{props.multi_processor_count} SMs of {props.name}"
        )
    except (RuntimeError, AssertionError, ImportError) as err:
        seen["torch"] = f"no GPU ({err})"
    try:
        import jax

        gpus = [d for d in jax.devices() if d.platform == "gpu"]
        if gpus:
            d = gpus[0]
            version = getattr(d.client, "platform_version", "?")
            seen["jax"] = f"{version}, {getattr(d, 'core_count', '?')} SMs of {d.device_kind}"
        else:
            seen["jax"] = "no GPU device"
    except (RuntimeError, ImportError) as err:
        seen["jax"] = f"no GPU ({err})"
    return seen


def gpu_identity(torch_device, maps: Path = Path("/proc/self/maps")) -> GpuIdentity:
    """This process's CUDA libraries and what torch (on ``torch_device``) and JAX see."""
    copies = mapped_libraries(maps.read_text())
    versions = {f: v for lib, fs in copies.items() for f in fs if (v := _library_version(lib, f))}
    return GpuIdentity(copies, versions, _frameworks(torch_device))


def report_gpu_identity(rank: int, torch_device, say: Callable[[str], None]) -> GpuIdentity:
    """Say GMI ``rank``'s :func:`gpu_identity`, warning of libraries mapped twice."""
    identity = gpu_identity(torch_device)
    say(identity.line(rank))
    for lib, files in identity.duplicated.items():
        log.warning(
            "GMI %d: %d copies of %s are loaded (%s); torch and JAX may each call a different "
            "one, and a mismatch with its companion library corrupts results silently",
            rank,
            len(files),
            lib,
            ", ".join(files),
        )
    return identity
