"""What a checkpoint file may hold, and reading one without running any of its code.

A checkpoint is rl-games' state dict written by ``torch.save``: tensors, plain Python values
and our own entry under :data:`METADATA_KEY`. :func:`read_checkpoint` loads it with
``torch.load(weights_only=True)`` and the globals of :func:`safe_globals` only, so a pickled
object whose ``__reduce__`` names a function (``os.system``, ...) is refused before anything is
called. It lives here, below both the rl-games patch that loads checkpoints and the check run
when a run is planned, which sit side by side in the import layers.
"""

from __future__ import annotations

import io
import os
import pickle
import pickletools
import re
import warnings
import zipfile
from collections.abc import Mapping
from typing import Any

from .errors import ConfigError

METADATA_KEY = "isaacgymenvs_gmi"  # {"task": <task name>} in checkpoints this package writes
CENTRAL_VALUE_KEY = "assymetric_vf_nets"  # rl-games' (sic) key of the central value net's state
_COMPILED = "_orig_mod"  # module path segment that torch.compile's wrapper adds to every key
# Globals in every torch checkpoint, allowed by torch itself; left out when naming a refused one.
_TORCH_OWN = ("torch.", "collections.OrderedDict", "_codecs.encode")


def safe_globals() -> list[Any]:
    """Globals beyond torch's own allowlist that rl-games checkpoints need: its best mean
    reward is a numpy float32 scalar, unpickled by ``numpy._core.multiarray.scalar(dtype,
    bytes)`` (``numpy.core...`` in files of numpy < 2), ``numpy.dtype`` and the dtype's class.
    None of them runs code named by the file: builtin dtypes ignore pickled size fields, and
    ``scalar`` copies raw bytes of a numeric dtype."""
    import numpy as np

    scalar = np._core.multiarray.scalar
    return [scalar, (scalar, "numpy.core.multiarray.scalar"), np.dtype, np.dtypes.Float32DType]


def plain_values(state: Any) -> Any:
    """``state`` with every numpy scalar replaced by the Python number it holds, through dicts,
    lists and tuples, so that it loads with torch's default ``torch.load(path)`` (no allowlist);
    tensors and other values as they are."""
    import numpy as np

    if isinstance(state, np.generic):
        return state.item()
    if isinstance(state, Mapping):
        return type(state)((k, plain_values(v)) for k, v in state.items())
    if isinstance(state, (list, tuple)) and not hasattr(state, "_fields"):
        return type(state)(plain_values(v) for v in state)
    return state


def read_checkpoint(path: str | os.PathLike[str], map_location: Any = "cpu") -> dict[str, Any]:
    """The state dict in the checkpoint at ``path``, its tensors on ``map_location``. Raises
    :class:`ConfigError` on ``checkpoint`` when the file is missing, cannot be loaded, holds
    anything but plain data (naming the first global it refers to), or is not a dict."""
    import torch

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ConfigError("checkpoint", path, "no such file")
    damaged = _damaged_record(path)
    if damaged is not None:
        raise ConfigError("checkpoint", path, f"damaged: {damaged} (it changed after it was saved)")
    try:
        with warnings.catch_warnings():
            # a refused file written with a newer pickle protocol needs no warning besides
            warnings.filterwarnings("ignore", message="Detected pickle protocol")
            with torch.serialization.safe_globals(safe_globals()):
                state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:  # anything that fails to load is not a checkpoint we can use
        raise ConfigError("checkpoint", path, _why_unloadable(path, e)) from e
    if not isinstance(state, dict):
        what = type(state).__name__
        raise ConfigError("checkpoint", path, f"not an rl-games checkpoint: it holds a {what}")
    return state


def _damaged_record(path: str) -> str | None:
    """What is wrong with the first record of the torch archive at ``path`` that does not read
    back as written (None when all do, or the file is no archive). ``torch.load`` skips the
    CRC-32 check, so a flipped byte in a tensor would load; a stored CRC of 0 (off) is not
    checked."""
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                try:
                    with archive.open(info) as record:
                        while record.read(1 << 20):
                            pass
                except zipfile.BadZipFile as err:
                    if "CRC" not in str(err):
                        return f"record {info.filename!r}: {err}"
                    if info.CRC != 0:
                        return f"record {info.filename!r} fails the CRC-32 torch stored for it"
    except (OSError, zipfile.BadZipFile, EOFError, ValueError):
        return None
    return None


def without_compile_prefix(state_dict: Mapping[str, Any]) -> dict[str, Any]:
    """``state_dict`` with the ``_orig_mod.`` segments of ``torch.compile`` removed from its keys,
    so a compiled model's state loads into the uncompiled model rl-games restores into."""
    return {_uncompiled(key): value for key, value in state_dict.items()}


def _uncompiled(key: Any) -> Any:
    if not isinstance(key, str):
        return key  # not a module path: left for the comparison to report
    return ".".join(p for p in key.split(".") if p != _COMPILED)


def _why_unloadable(path: str, error: Exception) -> str:
    if isinstance(error, pickle.UnpicklingError):
        refused = _named_global(str(error)) or _first_foreign_global(path)
        if refused:
            return f"refused: it holds code/objects that are not plain tensors ({refused})"
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        return f"cannot be read: {e.strerror or e}"
    if not head:
        return "not a loadable checkpoint: the file is empty"
    if head.startswith(b"PK\x03\x04") and not zipfile.is_zipfile(path):
        return "not a loadable checkpoint: a truncated or damaged torch archive"
    if b"\0" not in head and _is_text(head):
        return "not a loadable checkpoint: a text file, not a torch file"
    return f"not a loadable checkpoint: {_torch_reason(error)}"


def _named_global(message: str) -> str | None:
    """The global or class that torch's weights-only unpickler names in ``message``."""
    found = re.search(r"GLOBAL (\S+) (?:was not|whose module)", message)
    found = found or re.search(r"but got <class '([^']+)'>", message)
    return found.group(1) if found else None


def _first_foreign_global(path: str) -> str | None:
    """First global the file's pickle names beyond torch's and ours (opcodes are only parsed)."""
    allowed = {_name(g) for g in safe_globals()}
    names = _pickled_globals(path)
    return next((n for n in names if not n.startswith(_TORCH_OWN) and n not in allowed), None)


def _pickled_globals(path: str) -> list[str]:
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                data = archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))
        else:
            with open(path, "rb") as f:
                data = f.read()
    except (OSError, zipfile.BadZipFile, StopIteration):
        return []
    names: list[str] = []
    strings: list[str] = []  # pushed strings: STACK_GLOBAL takes module and name from them
    stream = io.BytesIO(data)
    try:
        while stream.tell() < len(data):  # torch's legacy format is several pickles in a row
            for op, arg, _ in pickletools.genops(stream):
                if op.name == "GLOBAL":
                    names.append(str(arg).replace(" ", "."))
                elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                    names.append(".".join(strings[-2:]))
                elif isinstance(arg, str):
                    strings.append(arg)
    except Exception:  # bytes after the last readable opcode name nothing
        pass
    return names


def _name(entry: Any) -> str:
    if isinstance(entry, tuple):
        return entry[1]
    return f"{entry.__module__}.{entry.__qualname__}"


def _is_text(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _torch_reason(error: Exception) -> str:
    """The gist of torch's (often long) load error."""
    text = str(error).split("WeightsUnpickler error:", 1)[-1].split("Check the documentation")[0]
    text = " ".join(text.split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
