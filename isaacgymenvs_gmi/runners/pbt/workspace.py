"""The population's shared folder, in IsaacGymEnvs' PBT layout (readable over a shared
filesystem by members on other nodes and upstream's tools).

::

    <workspace>/
        000/000003.pth   member 0's full training state at PBT iteration 3 (torch.save)
        000/000003.yaml  its record: iteration, true_objective, frame, params, checkpoint,
                         pbt_checkpoint, experiment_name
        best0/           the best policy member 0 has seen, copied (newest files kept)
        live/000.json    member 0's latest epoch (for the population table; not upstream's)

Every file appears whole (renamed into place), a record's checkpoint before the record; readers
treat a file pruned meanwhile as absent.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from isaacgymenvs_gmi.atomic_file import write_atomically
from isaacgymenvs_gmi.config.checkpoint_file import plain_values

from .selection import latest_records

KEEP_BEHIND_OLDEST = 20  # a member's records older than the population's oldest minus this go
MAX_RECORDS = 25  # then, beyond this many, the oldest go (the newest ten always stay)
KEEP_NEWEST = 10
BEST_FILES_KEPT = 6


@dataclass(frozen=True)
class Record:
    """One member's state at the end of a PBT iteration (the ``.yaml`` beside its ``.pth``)."""

    member: int
    iteration: int
    objective: float
    frame: int
    params: dict[str, Any]
    checkpoint: str  # absolute path of the full training state
    experiment_name: str

    def as_yaml(self, path: str) -> dict[str, Any]:
        return {
            "iteration": self.iteration,
            "true_objective": float(self.objective),
            "frame": int(self.frame),
            "params": dict(self.params),
            "checkpoint": self.checkpoint,
            "pbt_checkpoint": path,
            "experiment_name": self.experiment_name,
        }


class Workspace:
    """The folder ``root`` shared by a population of ``num_policies`` members."""

    def __init__(self, root: str, num_policies: int):
        self.root = os.path.abspath(root)
        self.num_policies = num_policies

    def member_dir(self, member: int) -> str:
        return os.path.join(self.root, f"{member:03d}")

    def best_dir(self, member: int) -> str:
        return os.path.join(self.root, f"best{member}")

    def live_path(self, member: int) -> str:
        return os.path.join(self.root, "live", f"{member:03d}.json")

    def prepare(self, member: int) -> None:
        for folder in (self.member_dir(member), os.path.dirname(self.live_path(member))):
            os.makedirs(folder, exist_ok=True)

    # -- records ---------------------------------------------------------------------------

    def write_record(
        self, member: int, iteration: int, state: Mapping[str, Any], **fields
    ) -> Record:
        """``state`` (rl-games' full training state) as member ``member``'s checkpoint of
        ``iteration``, then its record (``fields``: objective, frame, params, experiment_name)."""
        import torch

        folder = self.member_dir(member)
        model = os.path.join(folder, f"{iteration:06d}.pth")
        buffer = io.BytesIO()
        torch.save(plain_values(dict(state)), buffer)  # torch's default loader reads it
        write_atomically(model, buffer.getvalue())
        record = Record(member=member, iteration=iteration, checkpoint=model, **fields)
        path = os.path.join(folder, f"{iteration:06d}.yaml")
        write_atomically(path, yaml.safe_dump(record.as_yaml(path), sort_keys=True).encode())
        return record

    def iterations(self, member: int) -> list[int]:
        """The iterations member ``member`` has records of, oldest first."""
        try:
            names = os.listdir(self.member_dir(member))
        except FileNotFoundError:
            return []
        return sorted(int(n[:-5]) for n in names if n.endswith(".yaml") and n[:-5].isdigit())

    def read_record(self, member: int, iteration: int) -> Record | None:
        """Member ``member``'s record of ``iteration``; None if it is gone (or was never whole:
        records are only ever renamed into place)."""
        path = os.path.join(self.member_dir(member), f"{iteration:06d}.yaml")
        try:
            with open(path) as f:
                raw = yaml.safe_load(f)
        except FileNotFoundError:
            return None
        return Record(
            member=member,
            iteration=int(raw["iteration"]),
            objective=float(raw["true_objective"]),
            frame=int(raw["frame"]),
            params=dict(raw.get("params") or {}),
            checkpoint=str(raw["checkpoint"]),
            experiment_name=str(raw.get("experiment_name", "")),
        )

    def population(self, at: int) -> dict[int, Record | None]:
        """Every member's newest record at or before iteration ``at`` (equal or less
        experience), None where it has none."""
        latest = latest_records({m: self.iterations(m) for m in range(self.num_policies)}, at)
        return {m: None if i is None else self.read_record(m, i) for m, i in latest.items()}

    def latest(self, member: int) -> Record | None:
        """Member ``member``'s newest record (a population resumes from these)."""
        its = self.iterations(member)
        return self.read_record(member, its[-1]) if its else None

    def prune(self, member: int, population: Mapping[int, Record | None]) -> None:
        """Drop member ``member``'s records far behind the population's oldest, then beyond
        :data:`MAX_RECORDS` the one whose removal leaves the smallest gap (never the newest
        :data:`KEEP_NEWEST`)."""
        oldest = min((r.iteration if r is not None else 0) for r in population.values())
        for iteration in self.iterations(member):
            if iteration <= oldest - KEEP_BEHIND_OLDEST:
                self._remove(member, iteration)
        its = self.iterations(member)
        while len(its) > MAX_RECORDS:
            candidates = its[:-KEEP_NEWEST]
            if len(candidates) < 3:
                break
            gaps = [
                (candidates[i + 1] - candidates[i - 1], i) for i in range(1, len(candidates) - 1)
            ]
            self._remove(member, candidates[min(gaps)[1]])
            its = self.iterations(member)

    def _remove(self, member: int, iteration: int) -> None:
        for ext in ("yaml", "pth"):  # the record first: a reader never finds it without its file
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(self.member_dir(member), f"{iteration:06d}.{ext}"))

    # -- the best policy seen ---------------------------------------------------------------

    def keep_best(self, member: int, best: Record, task_name: str, frame: int) -> str | None:
        """Copy ``best`` into ``best<member>/`` when it beats what is there; returns the copied
        checkpoint's path (None: not better, or its files were pruned meanwhile)."""
        folder = self.best_dir(member)
        os.makedirs(folder, exist_ok=True)
        kept = sorted(n for n in os.listdir(folder) if n.endswith(".yaml"))
        if kept:
            with open(os.path.join(folder, kept[-1])) as f:
                if float(yaml.safe_load(f)["true_objective"]) >= best.objective:
                    return None
        name = (
            f"{task_name}_best_obj_{best.objective:015.5f}_iter_{best.iteration:04d}"
            f"_policy{best.member:03d}_frame{frame}"
        )
        source_yaml = os.path.join(self.member_dir(best.member), f"{best.iteration:06d}.yaml")
        target = os.path.join(folder, name + ".pth")
        try:  # the checkpoint first: a record here always names a whole file beside it
            for src, dst in ((best.checkpoint, target), (source_yaml, target[:-4] + ".yaml")):
                with open(src, "rb") as f:
                    write_atomically(dst, f.read())
        except FileNotFoundError:
            return None
        for old in sorted(os.listdir(folder))[:-BEST_FILES_KEPT]:
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(folder, old))
        return target

    def copy_checkpoint(self, record: Record, into: str) -> str | None:
        """``record``'s checkpoint copied into the folder ``into`` (its member may prune the
        original at any time); None if it is already gone."""
        target = os.path.join(into, f"from_{record.member:03d}_{record.iteration:06d}.pth")
        try:
            shutil.copyfile(record.checkpoint, target)
        except FileNotFoundError:
            return None
        return target

    # -- live status -----------------------------------------------------------------------

    def write_live(self, member: int, status: Mapping[str, Any]) -> None:
        # every epoch: whole for its readers, but not worth a flush to disk each time
        write_atomically(self.live_path(member), json.dumps(dict(status)).encode(), durable=False)

    def read_live(self) -> dict[int, dict[str, Any]]:
        """Every member's latest status that can be read (members not started yet: absent)."""
        out = {}
        for member in range(self.num_policies):
            try:
                with open(self.live_path(member)) as f:
                    out[member] = json.load(f)
            except (FileNotFoundError, json.JSONDecodeError):
                continue
        return out
