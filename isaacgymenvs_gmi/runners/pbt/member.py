"""One PBT member's side of the population, as an rl-games observer: it measures its objective,
and at the end of each interval records itself in the workspace and decides (keep, mutate or
take a better member's weights), never waiting for another member. A change is raised as
:class:`Restart` out of rl-games' loop (the epoch under way is dropped, as upstream's restart
drops it); the body then rebuilds the learner from the chosen checkpoint.
"""

from __future__ import annotations

import hashlib
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from rl_games.common.algo_observer import AlgoObserver

from isaacgymenvs_gmi.config.pbt import PbtSettings
from isaacgymenvs_gmi.config.pbt_mutation import Change, mutate

from .selection import Decision, SelectionSettings, decide, may_replace, ranked
from .workspace import Record, Workspace

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Restart(Exception):
    """Member ``decision.member`` goes on from ``source`` (its own record, or the donor's)
    with ``params``; ``changes``: the hyperparameters mutated."""

    decision: Decision
    source: Record
    params: dict[str, Any]
    changes: list[Change] = field(default_factory=list)


class Objective:
    """The member's objective (IsaacGymEnvs' rule): the mean of every env's latest
    ``true_objective`` once each has finished an episode, else rl-games' mean reward once
    ``games_to_track`` episodes have ended."""

    def __init__(self, num_envs: int):
        self.num_envs = num_envs
        self.last: torch.Tensor | None = None  # (num_envs,) latest true objective per env
        self.finished: torch.Tensor | None = None  # (num_envs,) bool
        self.value: float | None = None  # None: not known yet this interval
        self.best: float | None = None  # the best value seen this interval

    def update(self, algo: Any, infos: Any, done_indices: torch.Tensor) -> None:
        if isinstance(infos, Mapping) and "true_objective" in infos:
            if self.last is None:
                self.last = torch.zeros(self.num_envs, dtype=torch.float64)
                self.finished = torch.zeros(self.num_envs, dtype=torch.bool)
            idx = done_indices.reshape(-1).cpu()
            self.last[idx] = infos["true_objective"].reshape(-1)[idx].double().cpu()
            self.finished[idx] = True
            if bool(self.finished.all()):
                self.value = float(self.last.mean())
        else:
            meter = algo.game_rewards
            if meter.current_size >= algo.games_to_track:
                self.value = float(meter.get_mean().reshape(-1)[0])
        if self.value is not None and (self.best is None or self.value > self.best):
            self.best = self.value

    def new_interval(self) -> float | None:
        """This interval's best, forgotten for the next one (None: never known)."""
        best, self.best = self.best, None
        return best


@dataclass
class MemberState:
    """What a member carries across restarts of its learner."""

    member: int
    params: dict[str, Any]  # its mutated hyperparameters, dotted key -> value
    experiment_name: str
    checkpoint: str | None = None  # where its next learner starts from
    frames_at_start: int | None = None  # frames when its current hyperparameters took effect
    iteration: int | None = None  # its latest PBT iteration
    objective: float | None = None  # its latest known objective (after a replace: the donor's)
    measured: bool = False  # whether ``objective`` was measured on its current learner
    replaced: int = 0  # times it took another member's weights
    mutated: int = 0  # times its hyperparameters changed after the start


class MemberObserver(AlgoObserver):
    """rl-games observer of member ``state.member``."""

    def __init__(
        self,
        state: MemberState,
        settings: PbtSettings,
        workspace: Workspace,
        rng: random.Random,
        task_name: str,
        num_envs: int,
    ):
        super().__init__()
        self.state, self.settings, self.workspace = state, settings, workspace
        self.rng, self.task_name = rng, task_name
        self.selection = SelectionSettings.of(settings)
        self.objective = Objective(num_envs)
        self.algo: Any = None

    def after_init(self, algo: Any) -> None:
        self.algo = algo

    def process_infos(self, infos: Any, done_indices: torch.Tensor) -> None:
        self.objective.update(self.algo, infos, done_indices)
        if self.objective.value is not None:
            self.state.objective, self.state.measured = self.objective.value, True

    def after_steps(self) -> None:
        state, frame = self.state, int(self.algo.frame)
        interval = self.settings.interval_steps
        if state.frames_at_start is None:
            state.frames_at_start = frame
        if state.iteration is None:
            state.iteration = frame // interval
        iteration = frame // interval
        if iteration <= state.iteration or self.objective.value is None:
            return  # within the interval, or no objective yet: decide once it is known
        best_this_interval = self.objective.new_interval()
        state.iteration = iteration
        weights = self.algo.get_full_state_weights()
        weights["epoch"] = int(self.algo.epoch_num) - 1  # the epochs these weights have had
        record = self.workspace.write_record(
            state.member,
            iteration,
            weights,
            objective=self.objective.value,
            frame=frame,
            params=state.params,
            experiment_name=state.experiment_name,
        )
        population = self.workspace.population(iteration)
        self.workspace.prune(state.member, population)
        objectives = {m: (r.objective if r is not None else None) for m, r in population.items()}
        self._summaries(population, objectives)
        if not may_replace(
            frame, state.frames_at_start, self.settings.start_after, self.settings.initial_delay
        ):
            return
        own = best_this_interval if best_this_interval is not None else self.objective.value
        decision = decide(state.member, objectives, own, self.selection, self.rng)
        if decision.action == "keep" and self.settings.dbg_mode:
            why = "pbt.dbg_mode: every interval mutates"
            decision = Decision(state.member, "mutate", why, None, state.member)
        if decision.action == "keep":
            log.debug("PBT member %d keeps training (%s)", state.member, decision.why)
            return
        source = record if decision.donor is None else population[decision.donor]
        base = state.params
        if decision.params_from is not None and decision.params_from != state.member:
            donor_record = population[decision.params_from]
            base = donor_record.params if donor_record is not None else state.params
        params, changes = mutate({**state.params, **base}, self.settings, self.rng)
        assert source is not None  # a donor is among the best, whose records are known
        raise Restart(decision, source, params, changes)

    def _summaries(
        self, population: Mapping[int, Record | None], objectives: Mapping[int, float | None]
    ) -> None:
        """The population's best at this iteration, kept in ``best<member>/``, and this
        member's hyperparameters, to TensorBoard (``pbt/*``)."""
        leader = ranked(objectives)[0]
        best, record = objectives[leader], population[leader]
        if record is not None:
            self.workspace.keep_best(self.state.member, record, self.task_name, self.algo.frame)
        writer = getattr(self.algo, "writer", None)
        if writer is None:
            return
        frame = self.algo.frame
        for key, value in self.state.params.items():
            writer.add_scalar(f"pbt/{key}", float(value), frame)
        if best is not None:
            writer.add_scalar("pbt/00_best_objective", best, frame)
        if self.objective.value is not None:
            writer.add_scalar("pbt/objective", self.objective.value, frame)
        writer.flush()


def state_fingerprint(state_dict: Mapping[str, torch.Tensor]) -> str:
    """32 hex digits hashing every tensor of ``state_dict`` (keys sorted): equal only for
    bit-identical weights and statistics."""
    digest = hashlib.blake2b(digest_size=16)
    for key in sorted(state_dict):
        value = state_dict[key]
        if isinstance(value, torch.Tensor):
            digest.update(key.encode())
            digest.update(value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy())
    return digest.hexdigest()
