"""Record the experience a serving run's policy produces, for offline RL or distillation.

Each GMI ``g`` writes its files into one shared folder with an :class:`ExperienceRecorder`; at
the end GMI 0 calls :func:`merge_manifests`. Each file is written under a temporary name, then
``os.replace``-d:

* ``gmi{g:03d}-shard{k:05d}.npz``: uncompressed (``np.savez``'s format), one ``(s, N_g, *shape)``
  array per kind, time-major; all of a GMI's shards but its last have ``shard_steps`` steps.
* ``gmi{g:03d}-manifest.json``, GMI ``g``'s part (keys: :meth:`ExperienceRecorder.close`),
  written last (no part: an incomplete GMI).
* ``manifest.json``: the parts under ``gmis`` and their totals (:func:`merge_manifests`);
  ``steps`` is null unless every GMI has as many.

``load_recording(folder).arrays``: kind -> (steps, sum N_g, *shape), GMIs in order.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from isaacgymenvs_gmi.atomic_file import write_atomically

FORMAT = "isaacgymenvs_gmi.recording/1"
MANIFEST = "manifest.json"
_PART = re.compile(r"gmi(\d{3,})-manifest\.json")


class RecordingError(RuntimeError):
    """A recording on disk is missing, incomplete, inconsistent or corrupted."""


def _npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """An uncompressed ``.npz`` as ``np.savez`` writes it (without its reserved kwarg names)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


class ExperienceRecorder:
    """Writes one GMI's experience as ``.npz`` shards of ``shard_steps`` steps, time-major.
    ``kinds`` maps a name to its per-env (shape, numpy dtype name), e.g. ``{"obs": ((60,),
    "float32"), "rewards": ((), "float32")}``; ``meta`` holds JSON-able extras for the manifest.
    The folder must hold no file of this GMI yet (one recording per folder)."""

    def __init__(
        self,
        folder: str,
        *,
        gmi: int,
        num_envs: int,
        kinds: dict[str, tuple[tuple[int, ...], str]],
        shard_steps: int = 256,
        meta: dict | None = None,
    ) -> None:
        if gmi < 0 or num_envs < 1 or shard_steps < 1 or not kinds:
            raise ValueError(f"need gmi >= 0, num_envs >= 1, shard_steps >= 1 and kinds: {kinds}")
        self.folder, self.gmi, self.num_envs, self.shard_steps = folder, gmi, num_envs, shard_steps
        self.kinds = {k: (tuple(int(d) for d in s), np.dtype(dt)) for k, (s, dt) in kinds.items()}
        self.meta = json.loads(json.dumps(meta or {}))  # a JSON-able copy, or fail now
        os.makedirs(folder, exist_ok=True)
        if stale := sorted(f for f in os.listdir(folder) if f.startswith(f"gmi{gmi:03d}-")):
            raise RecordingError(f"{folder} already holds files of GMI {gmi}: {stale[:3]}")
        self._pending: dict[str, list[np.ndarray]] = {k: [] for k in self.kinds}
        self._buffered = 0
        self._shards: list[dict[str, Any]] = []
        self._version: dict[str, int | None] = {"min": None, "max": None}
        self._part: dict[str, Any] | None = None
        self._aborted = False

    def write(self, chunk: Mapping[str, Any], *, policy_version: int) -> None:
        """Buffer ``chunk[kind]`` (T, num_envs, *shape) for every kind (numpy arrays or torch
        tensors, copied), writing a shard each time ``shard_steps`` steps are buffered."""
        if self._part is not None or self._aborted:
            raise RecordingError(f"the recorder of GMI {self.gmi} is closed")
        if extra := sorted(set(chunk) - set(self.kinds)):
            raise ValueError(f"chunk has kinds {extra} this recorder does not record")
        arrays: dict[str, np.ndarray] = {}
        for kind, (shape, dtype) in self.kinds.items():
            if kind not in chunk:
                raise ValueError(f"chunk lacks kind {kind!r}")
            value = chunk[kind]
            if hasattr(value, "detach"):  # a torch tensor
                value = value.detach().cpu().numpy()
            arr = np.asarray(value)
            want = ("T", self.num_envs, *shape)
            if arr.ndim != len(want) or arr.shape[1:] != want[1:]:
                raise ValueError(f"kind {kind!r}: expected shape {want}, got {arr.shape}")
            if not np.can_cast(arr.dtype, dtype, casting="safe"):
                raise ValueError(f"kind {kind!r}: cannot cast {arr.dtype} to {dtype} safely")
            arrays[kind] = arr
        lengths = {k: a.shape[0] for k, a in arrays.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"kinds disagree on the number of steps T: {lengths}")
        steps, start = next(iter(lengths.values())), 0
        if steps:
            v, lo, hi = int(policy_version), self._version["min"], self._version["max"]
            self._version = {
                "min": v if lo is None else min(lo, v),
                "max": v if hi is None else max(hi, v),
            }
        while start < steps:
            take = min(steps - start, self.shard_steps - self._buffered)
            for kind, arr in arrays.items():
                piece = arr[start : start + take]
                self._pending[kind].append(np.array(piece, dtype=self.kinds[kind][1], copy=True))
            self._buffered += take
            start += take
            if self._buffered == self.shard_steps:
                self._flush()

    def _flush(self) -> None:
        if not self._buffered:
            return
        data = _npz_bytes({k: np.concatenate(parts) for k, parts in self._pending.items()})
        name = f"gmi{self.gmi:03d}-shard{len(self._shards):05d}.npz"
        write_atomically(os.path.join(self.folder, name), data)
        digest = hashlib.sha256(data).hexdigest()
        self._shards.append({"file": name, "steps": self._buffered, "sha256": digest})
        self._pending = {k: [] for k in self.kinds}
        self._buffered = 0

    def close(self) -> dict:
        """Flush the remainder as a last, shorter shard, write the part manifest and return it."""
        if self._part is not None:
            return self._part
        if self._aborted:
            raise RecordingError(f"the recording of GMI {self.gmi} was aborted")
        self._flush()
        steps = sum(s["steps"] for s in self._shards)
        part = {
            "format": FORMAT,
            "gmi": self.gmi,
            "num_envs": self.num_envs,
            "steps": steps,
            "transitions": steps * self.num_envs,
            "policy_version": dict(self._version),
            "kinds": {k: {"shape": list(s), "dtype": d.name} for k, (s, d) in self.kinds.items()},
            "shard_steps": self.shard_steps,
            "shards": self._shards,
            "meta": self.meta,
        }
        path = os.path.join(self.folder, f"gmi{self.gmi:03d}-manifest.json")
        write_atomically(path, json.dumps(part, indent=1).encode())
        self._part = part
        return part

    def abort(self) -> None:
        """Drop the buffered steps, write no part manifest and remove this GMI's temp files."""
        self._aborted, self._buffered = True, 0
        self._pending = {k: [] for k in self.kinds}
        for name in os.listdir(self.folder):
            if name.startswith(f".gmi{self.gmi:03d}-") and name.endswith(".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(self.folder, name))

    def __enter__(self) -> ExperienceRecorder:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        elif self._part is None:
            self.abort()


def merge_manifests(folder: str, expected_gmis: int | None = None) -> dict:
    """Merge every ``gmi*-manifest.json`` of ``folder`` into ``manifest.json`` and return it.
    Raises RecordingError when there is no part, parts disagree on kinds, or (``expected_gmis``
    given) a GMI of ``0..expected_gmis-1`` has no part or a GMI outside it has one."""
    parts = []
    for name in sorted(os.listdir(folder)):
        if match := _PART.fullmatch(name):
            with open(os.path.join(folder, name)) as f:
                part = json.load(f)
            if part.get("gmi") != int(match.group(1)) or part.get("format") != FORMAT:
                raise RecordingError(f"{name} is not a {FORMAT} part manifest of its GMI")
            parts.append(part)
    parts.sort(key=lambda p: p["gmi"])
    gmis = [p["gmi"] for p in parts]
    if expected_gmis is not None:
        if missing := sorted(set(range(expected_gmis)) - set(gmis)):
            raise RecordingError(f"{folder}: no part manifest from GMIs {missing}")
        if extra := [g for g in gmis if g >= expected_gmis]:
            raise RecordingError(f"{folder}: parts of GMIs {extra}, only {expected_gmis} expected")
    if not parts:
        raise RecordingError(f"{folder} holds no gmi*-manifest.json")
    for p in parts[1:]:
        if p["kinds"] != parts[0]["kinds"]:
            raise RecordingError(f"GMIs {gmis[0]} and {p['gmi']} recorded different kinds")
    steps = {p["steps"] for p in parts}
    versions = [v for p in parts for v in p["policy_version"].values() if v is not None]
    manifest = {
        "format": FORMAT,
        "kinds": parts[0]["kinds"],
        "gmis": parts,
        "num_envs": sum(p["num_envs"] for p in parts),
        "steps": steps.pop() if len(steps) == 1 else None,
        "transitions": sum(p["transitions"] for p in parts),
        "policy_version": {"min": min(versions, default=None), "max": max(versions, default=None)},
        "meta": next((p["meta"] for p in parts if p["gmi"] == 0), parts[0]["meta"]),
    }
    write_atomically(os.path.join(folder, MANIFEST), json.dumps(manifest, indent=1).encode())
    return manifest


@dataclass
class Recording:
    """A loaded recording: ``arrays[kind]`` is (steps, total_envs, *shape), GMIs side by side
    along the env axis in GMI order; ``manifest`` is ``manifest.json``."""

    manifest: dict
    arrays: dict[str, np.ndarray]

    def transitions(self) -> int:
        """steps * total_envs."""
        for arr in self.arrays.values():
            return int(arr.shape[0] * arr.shape[1])
        return int(self.manifest["transitions"])


def _read_manifest(folder: str, kinds: Iterable[str] | None) -> tuple[dict, list[str]]:
    path = os.path.join(folder, MANIFEST)
    try:
        with open(path) as f:
            manifest = json.load(f)
    except FileNotFoundError:
        raise RecordingError(f"no {path}: was merge_manifests(folder) run?") from None
    if manifest.get("format") != FORMAT:
        raise RecordingError(f"{path} has format {manifest.get('format')!r}, not {FORMAT!r}")
    names = list(manifest["kinds"]) if kinds is None else list(kinds)
    if unknown := [k for k in names if k not in manifest["kinds"]]:
        raise ValueError(f"kinds {unknown} were not recorded; recorded: {list(manifest['kinds'])}")
    return manifest, names


def _load_part(folder: str, part: dict, kinds: dict, names: list[str], verify: bool) -> dict:
    n, gmi = part["num_envs"], part["gmi"]
    if sum(s["steps"] for s in part["shards"]) != part["steps"]:
        raise RecordingError(f"GMI {gmi}: its shards' steps do not add up to {part['steps']}")
    pieces: dict[str, list[np.ndarray]] = {k: [] for k in names}
    for shard in part["shards"]:
        name = os.path.basename(shard["file"])  # never outside the folder
        try:
            with open(os.path.join(folder, name), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise RecordingError(f"shard {name} of GMI {gmi} is missing") from None
        if verify and hashlib.sha256(data).hexdigest() != shard["sha256"]:
            raise RecordingError(f"shard {name} fails its sha256 checksum: corrupted")
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                loaded = {k: npz[k] for k in names}
        except (KeyError, ValueError, OSError, zipfile.BadZipFile) as e:
            raise RecordingError(f"shard {name} cannot be read: {e}") from e
        for k, arr in loaded.items():
            want = (shard["steps"], n, *kinds[k]["shape"])
            if arr.shape != want or arr.dtype != np.dtype(kinds[k]["dtype"]):
                raise RecordingError(
                    f"shard {name} kind {k!r} is {arr.shape} {arr.dtype}, the manifest says "
                    f"{want} {kinds[k]['dtype']}"
                )
            pieces[k].append(arr)
    empty = {k: np.empty((0, n, *kinds[k]["shape"]), kinds[k]["dtype"]) for k in names}
    return {k: np.concatenate(pieces[k]) if pieces[k] else empty[k] for k in names}


def load_gmi(
    folder: str, gmi: int, kinds: Iterable[str] | None = None, *, verify: bool = True
) -> dict[str, np.ndarray]:
    """One GMI's arrays from ``manifest.json``: kind -> (steps, N_gmi, *shape)."""
    manifest, names = _read_manifest(folder, kinds)
    part = next((p for p in manifest["gmis"] if p["gmi"] == gmi), None)
    if part is None:
        raise RecordingError(f"{os.path.join(folder, MANIFEST)} has no GMI {gmi}")
    return _load_part(folder, part, manifest["kinds"], names, verify)


def load_recording(
    folder: str, kinds: Iterable[str] | None = None, *, verify: bool = True
) -> Recording:
    """Load a merged recording (every kind, or ``kinds``), checking each shard's step count,
    shapes, dtypes and (``verify``) sha256 against ``manifest.json``."""
    manifest, names = _read_manifest(folder, kinds)
    if manifest["steps"] is None:
        steps = {p["gmi"]: p["steps"] for p in manifest["gmis"]}
        raise RecordingError(
            f"GMIs recorded different step counts {steps}: load each with load_gmi(folder, gmi)"
        )
    per_gmi = [_load_part(folder, p, manifest["kinds"], names, verify) for p in manifest["gmis"]]
    arrays = {k: np.concatenate([g[k] for g in per_gmi], axis=1) for k in names}
    return Recording(manifest=manifest, arrays=arrays)
