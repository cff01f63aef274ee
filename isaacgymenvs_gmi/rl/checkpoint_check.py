"""Can this run load that checkpoint? Checked when the run is planned, before anything starts.

The file is read as plain data and its ``model`` state compared, tensor by tensor, with the
network rl-games' own ``ModelBuilder`` builds for the task on torch's ``meta`` device (shapes
without memory, initialisation or a random draw).
"""

from __future__ import annotations

import contextlib
import copy
import io
import logging
import numbers
from collections.abc import Callable, Mapping
from typing import Any

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.checkpoint_file import (
    CENTRAL_VALUE_KEY,
    METADATA_KEY,
    read_checkpoint,
    without_compile_prefix,
)
from isaacgymenvs_gmi.tasks import get_task_class

from .train_config import apply_model_size_multiplier

log = logging.getLogger(__name__)

Shape = tuple[int, ...]


def check_checkpoint(
    path: str,
    task_name: str,
    task_config: dict[str, Any],
    train_params: dict[str, Any],
    widths: tuple[int, int, int] | None = None,
    resumes: bool = False,
) -> None:
    """Raise :class:`ConfigError` on ``checkpoint`` unless ``path`` holds a checkpoint whose
    networks (and central value net, when both have one) fit ``task_name`` (resolved
    ``task_config``) trained with ``train_params`` (the resolved ``train.params``); the message
    names the first misfit tensor, both shapes and the task it was trained on, if recorded.

    ``widths``: (obs, states, actions) as measured when planned, by default the task class's.
    ``resumes``: training goes on from it, so :func:`resume_fields_problem` applies too.
    """
    state = read_checkpoint(path)
    model = state.get("model")
    if not isinstance(model, Mapping):
        held = ", ".join(map(str, state)) or "nothing"
        raise ConfigError(
            "checkpoint", path, f"not an rl-games checkpoint: no 'model' state (it holds: {held})"
        )
    if resumes:
        central_value = train_params["config"].get("central_value_config") is not None
        problem = resume_fields_problem(state, central_value)
        if problem is not None:
            raise ConfigError("checkpoint", path, f"{problem}, which resuming training reads")
    trained_on = _recorded_task(state)
    if widths is None:
        task_cls = get_task_class(task_name)
        num_obs = task_cls.observation_size(task_config["env"])
        widths = (num_obs, task_cls.num_states, task_cls.num_actions)
    problem = _misfit(state, widths, train_params, f"{task_name} with this train config")
    if problem is not None:
        if trained_on is not None:
            problem += f"; the checkpoint was trained on {trained_on}"
        raise ConfigError("checkpoint", path, problem)
    if trained_on is not None and trained_on != task_name:
        log.warning("checkpoint %s was trained on %s, not %s", path, trained_on, task_name)


def resume_fields_problem(state: Mapping[str, Any], central_value: bool) -> str | None:
    """What keeps rl-games from resuming training from ``state`` beyond its networks (None when
    nothing does): ``epoch`` and ``frame`` counts, ``optimizer`` state (and ``assymetric_vf_nets``
    with a central value net), each of its type; ``last_mean_rewards``, if present, a number."""
    for key in ("epoch", "frame"):
        value = state.get(key)
        if key not in state:
            return f"no {key!r} count"
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"{key!r} is {value!r}, not a count (an integer >= 0)"
    problem = _optimizer_problem(state.get("optimizer"), "optimizer")
    if problem is None and central_value and CENTRAL_VALUE_KEY not in state:
        problem = f"no {CENTRAL_VALUE_KEY!r} (the central value net's state)"
    if problem is None and "last_mean_rewards" in state:
        best = state["last_mean_rewards"]
        if not _is_number(best):
            problem = f"'last_mean_rewards' is {best!r}, not a number"
    return problem


def _optimizer_problem(found: Any, key: str) -> str | None:
    """Why ``found`` is not a torch optimizer's state dict (None when it is one)."""
    if found is None:
        return f"no {key!r} state"
    if not isinstance(found, Mapping) or not isinstance(found.get("state"), Mapping):
        return f"{key!r} is not an optimizer's state dict (no 'state' mapping)"
    groups = found.get("param_groups")
    if not isinstance(groups, list) or not groups:
        return f"{key!r} has no 'param_groups' list"
    for group in groups:
        if not isinstance(group, Mapping) or not isinstance(group.get("params"), list):
            return f"{key!r} has a parameter group without a 'params' list"
    return None


def _is_number(value: Any) -> bool:
    import torch

    if isinstance(value, torch.Tensor):  # a one-element tensor of reals
        return value.numel() == 1 and not value.dtype.is_complex and value.dtype != torch.bool
    return isinstance(value, numbers.Real) and not isinstance(value, bool)  # numpy's reals too


def _misfit(
    state: dict[str, Any], widths: tuple[int, int, int], train_params: dict[str, Any], who: str
) -> str | None:
    """What first keeps ``state`` from loading into the nets ``who`` (task and train config)
    builds for a task of ``widths`` (obs, states, actions); None when nothing does."""
    num_obs, num_states, num_actions = widths
    num_states = num_states or num_obs  # the critic sees the observations otherwise
    expected = _sized(lambda: policy_shapes(train_params, num_obs, num_actions))
    problem = _first_difference(state["model"], expected, who) if expected is not None else None
    config = train_params["config"]
    central_value = config.get("central_value_config")
    if problem is not None or central_value is None or CENTRAL_VALUE_KEY not in state:
        return problem
    found = state[CENTRAL_VALUE_KEY]
    if not isinstance(found, Mapping):
        return f"{CENTRAL_VALUE_KEY} (the central value net) is not a state dict"
    expected = _sized(lambda: central_value_shapes(central_value, config, num_states, num_actions))
    problem = _first_difference(found, expected, who) if expected is not None else None
    return problem and f"central value net: {problem}"


def _sized(shapes: Callable[[], dict[str, Shape]]) -> dict[str, Shape] | None:
    """``shapes()``, or None (with a warning) when rl-games cannot build the net: the run then
    stops with rl-games' own error, and the checkpoint is compared when it loads."""
    try:
        return shapes()
    except Exception as e:
        log.warning("checkpoint not compared with the network: rl-games cannot build it (%r)", e)
        return None


def policy_shapes(train_params: dict[str, Any], num_obs: int, num_actions: int) -> dict[str, Shape]:
    """Shapes of the ``model`` state rl-games saves for ``train_params`` (resolved
    ``train.params``) on a task with ``num_obs`` observations and ``num_actions`` actions."""
    params = copy.deepcopy({"model": train_params["model"], "network": train_params["network"]})
    apply_model_size_multiplier(params)  # as the run's rl-games params do
    config = train_params["config"]
    normalize = bool(config["normalize_input"]), bool(config.get("normalize_value", False))
    return _built_shapes(params, num_obs, num_actions, *normalize)


def central_value_shapes(
    central_value: dict[str, Any], config: dict[str, Any], num_states: int, num_actions: int
) -> dict[str, Shape]:
    """Shapes of the central value net's state (rl-games' ``assymetric_vf_nets``) for the train
    config's ``central_value_config`` section and its ``config`` section."""
    params = {
        "model": central_value.get("model", {"name": "central_value"}),  # rl-games' default
        "network": central_value["network"],
    }
    normalize_input = bool(central_value.get("normalize_input", False))
    normalize_value = bool(config.get("normalize_value", False))
    shapes = _built_shapes(
        copy.deepcopy(params), num_states, num_actions, normalize_input, normalize_value
    )
    return {f"model.{key}": shape for key, shape in shapes.items()}  # it is the trainer's .model


def _built_shapes(
    params: dict[str, Any], width: int, actions: int, normalize_input: bool, normalize_value: bool
) -> dict[str, Shape]:
    import torch
    from rl_games.algos_torch.model_builder import ModelBuilder

    build = {
        "input_shape": (width,),
        "actions_num": actions,
        "value_size": 1,  # our envs report no other
        "num_seqs": 1,  # sizes recurrent states only, which are not saved
        "normalize_input": normalize_input,
        "normalize_value": normalize_value,
    }
    with torch.device("meta"), contextlib.redirect_stdout(io.StringIO()):  # rl-games prints
        net = ModelBuilder().load(params).build(build)
    return {key: tuple(value.shape) for key, value in net.state_dict().items()}


def _first_difference(found: Mapping[str, Any], expected: dict[str, Shape], who: str) -> str | None:
    """What first keeps ``found`` (a saved state dict) from loading into ``expected``'s net."""
    shapes = {key: _shape(value) for key, value in without_compile_prefix(found).items()}
    for key, shape in expected.items():
        if key in shapes and shapes[key] != shape:
            have = "is not a tensor" if shapes[key] is None else f"has shape {shapes[key]}"
            return f"{key} {have}, {who} needs {shape}"
    if missing := [key for key in expected if key not in shapes]:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        return f"{missing[0]}{more} is missing, {who} needs {expected[missing[0]]}"
    if extra := [key for key in shapes if key not in expected]:
        more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
        return f"{extra[0]}{more} is not part of the network {who} builds"
    return None


def _shape(value: Any) -> Shape | None:
    import torch

    return tuple(value.shape) if isinstance(value, torch.Tensor) else None


def _recorded_task(state: dict[str, Any]) -> str | None:
    metadata = state.get(METADATA_KEY)
    task = metadata.get("task") if isinstance(metadata, Mapping) else None
    return task if isinstance(task, str) else None
