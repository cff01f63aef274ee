"""What a PBT workspace holds, so a run never resumes a population it cannot load.

A workspace outlives its run and the next run in the same ``train_dir`` resumes it; one of
another task, network or size would die in rl-games' ``load_state_dict``. So the first member
writes ``population.yaml`` (task, its widths, model, network, member count), and the launcher
refuses a workspace holding another population (:func:`check_workspace`). A workspace without
the file is taken as it is.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Any

import yaml

from isaacgymenvs_gmi.atomic_file import write_atomically
from isaacgymenvs_gmi.config import ConfigError

IDENTITY_FILE = "population.yaml"


@dataclass(frozen=True)
class PopulationIdentity:
    """What every member's checkpoint must fit: ``network`` is the train config's
    ``params.network`` as canonical JSON (its sizes and layers decide the weights' shapes)."""

    task: str
    observations: int
    states: int
    actions: int
    model: str
    network: str
    members: int

    @classmethod
    def of_run(
        cls, task: str, dims: tuple[int, int, int], train_params: dict[str, Any], members: int
    ) -> PopulationIdentity:
        """``dims``: (observation, state, action) widths; ``train_params``: the resolved
        ``train.params``."""
        model = str((train_params.get("model") or {}).get("name", ""))
        network = json.dumps(train_params.get("network") or {}, sort_keys=True, default=str)
        obs, states, actions = (int(d) for d in dims)
        return cls(task, obs, states, actions, model, network, int(members))

    def describe(self) -> str:
        net = json.loads(self.network)
        units = (net.get("mlp") or {}).get("units")
        shape = f"{self.observations} observations"
        if self.states:
            shape += f", {self.states} states"
        return (
            f"{self.task} ({shape}, {self.actions} actions), {self.model} "
            f"{net.get('name', '?')}{'' if units is None else f' {units}'}, "
            f"{self.members} members"
        )

    def differences(self, other: PopulationIdentity) -> list[str]:
        """The fields in which ``other`` differs from this identity."""
        mine, theirs = asdict(self), asdict(other)
        return [k for k in mine if mine[k] != theirs[k]]


def read_identity(root: str) -> PopulationIdentity | None:
    """The identity recorded in the workspace at ``root``, or None where there is none."""
    try:
        with open(os.path.join(root, IDENTITY_FILE)) as f:
            data = yaml.safe_load(f)
        return PopulationIdentity(**data)
    except FileNotFoundError:
        return None
    except (OSError, TypeError, yaml.YAMLError) as err:
        raise ConfigError(
            "pbt.workspace",
            root,
            f"its {IDENTITY_FILE} cannot be read ({err}); remove the folder or use another "
            "pbt.workspace",
        ) from err


def check_workspace(root: str, run: PopulationIdentity) -> None:
    """Refuse (``ConfigError`` on ``pbt.workspace``) a workspace at ``root`` that holds a
    population other than ``run``'s; nothing is written."""
    held = read_identity(root)
    if held is None or held == run:
        return
    differ = ", ".join(run.differences(held))
    raise ConfigError(
        "pbt.workspace",
        root,
        f"holds another population ({held.describe()}; differs in {differ}) than this run "
        f"({run.describe()}), which could not resume it: set pbt.workspace to another folder, "
        f"or remove {root} to start a new population there",
    )


def claim_workspace(root: str, run: PopulationIdentity) -> None:
    """Record ``run`` as the workspace's population where none is recorded yet (every member
    may call this; the file appears whole), and refuse one recorded meanwhile for another."""
    if read_identity(root) is None:
        os.makedirs(root, exist_ok=True)
        text = yaml.safe_dump(asdict(run), sort_keys=False)
        write_atomically(os.path.join(root, IDENTITY_FILE), text.encode())
    check_workspace(root, run)
