"""The body of a PBT member: GMI i trains policy i with rl-games and takes part in the
population only through the workspace. On a mutation or replace its learner (and, where a
``task.*`` key changed, its env) is rebuilt in the same process from the chosen checkpoint,
keeping its epoch and frame count; a training error restarts it the same way from its newest
record, up to :data:`CRASH_RESTARTS` times.
"""

from __future__ import annotations

import copy
import logging
import os
import random
import time
from dataclasses import replace
from typing import Any

from isaacgymenvs_gmi import startup_clock
from isaacgymenvs_gmi.config.pbt import PbtSettings
from isaacgymenvs_gmi.config.pbt_mutation import mutate
from isaacgymenvs_gmi.gmi.compile_gate import compile_once_per_device
from isaacgymenvs_gmi.gmi.context import GmiContext
from isaacgymenvs_gmi.runners.result import RunResult

from .identity import PopulationIdentity, claim_workspace
from .member import MemberObserver, MemberState, Restart, state_fingerprint
from .telemetry import MemberTelemetry, announce_start, event, summarise, wait_for_members
from .workspace import Workspace

log = logging.getLogger(__name__)
CRASH_RESTARTS = 3  # errors in one member's training it recovers from before it fails


def workspace_root(train_dir: str, workspace: str) -> str:
    """``pbt.workspace`` under ``train_dir`` as upstream places it (an absolute path as is)."""
    return workspace if os.path.isabs(workspace) else os.path.join(train_dir, workspace)


def run_pbt(ctx: GmiContext) -> RunResult:
    """Member ``ctx.rank``'s training; returns its :class:`RunResult` (GMI 0's: the
    population's best member's objective and checkpoint)."""
    startup_clock.mark("gmi")
    from isaacgymenvs_gmi.runners.shared.preamble import prepare_gmi

    plan, member = ctx.plan, ctx.rank
    settings: PbtSettings = plan.mode_settings
    workspace = Workspace(workspace_root(plan.train.train_dir, settings.workspace), plan.world_size)
    workspace.prepare(member)
    run = PopulationIdentity.of_run(plan.task_name, plan.dims, plan.train_params, plan.world_size)
    claim_workspace(workspace.root, run)
    announce_start(workspace, member)
    seed = plan.seed + member
    prepare_gmi(plan, seed)
    rng = random.Random(f"pbt-{seed}")
    say = event(member)
    state = _starting_state(plan, settings, workspace, member, rng, say)
    if member == 0:
        log.info("%s; workspace %s", settings.describe(), workspace.root)
    member_run = _Member(ctx, settings, workspace, state, rng, seed, say)
    return member_run.train()


def _starting_state(plan, settings: PbtSettings, workspace: Workspace, member, rng, say):
    """From this member's newest record where there is one, else the config's hyperparameters
    mutated once (upstream's rule)."""
    latest = workspace.latest(member)
    if latest is not None:
        say(
            f"resumes from its iteration {latest.iteration} (frame {latest.frame:,}, "
            f"objective {latest.objective:.2f}) in {workspace.root}"
        )
        params = {**settings.initial, **latest.params}
        return MemberState(member, params, latest.experiment_name, latest.checkpoint)
    params, changes = mutate(settings.initial, settings, rng)
    if _real(changes):
        say("starts with " + ", ".join(c.describe() for c in _real(changes)))
    base = plan.train.experiment_name or plan.train_params["config"]["name"] + settings.started
    return MemberState(member, params, f"{base}_pbt_{member:02d}", plan.checkpoint)


class _Member:
    """One member's learner, built again at each restart."""

    def __init__(self, ctx, settings, workspace, state, rng, seed, say):
        self.ctx, self.settings, self.workspace = ctx, settings, workspace
        self.state, self.rng, self.seed, self.say = state, rng, seed, say
        self.env: Any = None
        self.envs_built = 0
        self.segments = 0  # learners built so far
        self.segment_seed = seed
        self.crashes = 0
        self._expected: tuple[str, float] | None = None  # weights a restart is to load
        plan = ctx.plan
        self.observer: MemberObserver | None = None
        frames_per_epoch = plan.num_envs * plan.train.horizon_length
        self.telemetry = MemberTelemetry(
            state, workspace, frames_per_epoch, lambda: state.objective, leader=ctx.rank == 0
        )

    def train(self) -> RunResult:
        while True:
            try:
                stats = self._segment()
                break
            except Restart as restart:
                self._restart(restart)
            except Exception as err:  # noqa: BLE001 - recovered from, or raised below
                self._recover(err)
        return self._finish(stats)

    def _segment(self) -> Any:
        """Train from ``state.checkpoint`` with ``state.params`` until the run ends (or a
        :class:`Restart`); returns the statistics observer."""
        from rl_games.torch_runner import Runner

        from isaacgymenvs_gmi.rl.observer import EpisodeStatsObserver, ObserverChain
        from isaacgymenvs_gmi.rl.train_config import rlgames_params
        from isaacgymenvs_gmi.rl.vecenv import register_env

        ctx, plan, state = self.ctx, self.ctx.plan, self.state
        # a learner of its own random streams at each restart (unique across members too)
        self.segment_seed = self.seed + plan.world_size * self.segments
        self.segments += 1
        train_params = _with_values(plan.train_params, "train.params.", state.params)
        register_env(lambda **_: self._env(state.params))
        params = rlgames_params(
            train_params,
            plan.train,
            rl_device=ctx.resources.rl_device,
            seed=self.segment_seed,
            num_envs=plan.num_envs,
            threads=ctx.resources.threads,
        )
        params["config"]["full_experiment_name"] = state.experiment_name
        stats = EpisodeStatsObserver()
        self.observer = MemberObserver(
            state, self.settings, self.workspace, self.rng, plan.task_name, plan.num_envs
        )
        runner = Runner(ObserverChain(stats, self.observer))
        hooks = dict(
            telemetry=self.telemetry, before_epoch=ctx.before_epoch, should_stop=ctx.stop_signal
        )
        runner.algo_factory.register_builder(
            "a2c_continuous",
            lambda **kw: _member_agent()(on_restored=self._restored, **hooks, **kw),
        )
        runner.load({"params": params})
        runner.reset()
        try:
            run = {"train": True, "play": False, "checkpoint": state.checkpoint}
            runner.run({**run, "sigma": plan.train.sigma})
        finally:
            if stats.writer is not None:
                stats.writer.close()
        return stats

    def _env(self, params: dict[str, Any]) -> Any:
        """The member's env, with its ``task.*`` hyperparameters; a fresh one after every
        restart (so the first episodes it scores are whole ones)."""
        from isaacgymenvs_gmi.runners.shared.env_builder import env_builder

        if self.env is not None:
            return self.env  # rl-games asks again within one learner (e.g. for env info)
        task_params = {k: v for k, v in params.items() if k.startswith("task.")}
        plan = self.ctx.plan
        task_config = _with_values(plan.task_config, "task.", task_params)
        ctx = replace(self.ctx, plan=replace(plan, task_config=task_config))
        build = env_builder(ctx, self.segment_seed)
        if not self.envs_built:
            startup_clock.mark("env_begin")
            compile_once_per_device(ctx, build)
        self.env, self.envs_built = build(), self.envs_built + 1
        startup_clock.mark("env_built")
        return self.env

    def _drop_env(self) -> None:
        if self.env is not None:
            self.env.close()
        self.env = None

    def _restart(self, restart: Restart) -> None:
        """Go on from ``restart.source`` with ``restart.params``, keeping this member's own
        epoch and frame count (the checkpoint is copied first: its member may prune it)."""
        import torch

        from isaacgymenvs_gmi.config.checkpoint_file import read_checkpoint

        state, agent = self.state, self.observer.algo
        began = time.monotonic()
        decision, source = restart.decision, restart.source
        self._drop_env()
        folder = os.path.join(self.workspace.member_dir(state.member), "incoming")
        os.makedirs(folder, exist_ok=True)
        for old in os.listdir(folder):  # the last restart's copy, loaded long since
            os.remove(os.path.join(folder, old))
        copied = self.workspace.copy_checkpoint(source, folder)
        if copied is None:
            self.say(
                f"member {source.member}'s iteration {source.iteration} is gone; keeps training"
            )
            return self._resume_own()
        checkpoint = read_checkpoint(copied)
        # the epoch under way is dropped: it is played again with the new learner
        checkpoint["epoch"], checkpoint["frame"] = int(agent.epoch_num) - 1, int(agent.frame)
        history = list(checkpoint.get("pbt_history", []))
        history.append((state.member, int(agent.frame), self.observer.objective.value))
        checkpoint["pbt_history"] = history
        torch.save(checkpoint, copied)  # this member's own copy: nobody else reads it
        changes = ", ".join(c.describe() for c in _real(restart.changes)) or "none changed"
        weights = state_fingerprint(checkpoint["model"])
        if decision.action == "replace":
            state.replaced += 1
            self.say(
                f"replaced by member {source.member} (iteration {source.iteration}, objective "
                f"{source.objective:.2f} vs its {self.observer.objective.value:.2f}): "
                f"{decision.why}; weights {weights}; hyperparameters of member "
                f"{decision.params_from}, mutated: {changes}"
            )
        else:
            self.say(f"mutates ({decision.why}): {changes}")
        if _real(restart.changes):
            state.mutated += 1
        state.params, state.checkpoint = restart.params, copied
        state.objective, state.measured = source.objective, False  # until its own is known
        state.frames_at_start = None  # start_after counts from here
        state.iteration = None
        self._expected = (weights, began)

    def _restored(self, agent: Any) -> None:
        """The new learner has loaded its checkpoint: say whose weights it now holds."""
        if self._expected is None:
            return
        (expected, began), self._expected = self._expected, None
        loaded = state_fingerprint(agent.model.state_dict())
        same = "as recorded" if loaded == expected else f"NOT the recorded {expected}"
        self.say(
            f"continues at epoch {agent.epoch_num}, frame {agent.frame:,} with weights {loaded} "
            f"({same}), learner rebuilt in {time.monotonic() - began:.1f} s"
        )

    def _resume_own(self) -> None:
        """Go on from this member's own newest record (the start where it has none)."""
        latest = self.workspace.latest(self.state.member)
        self.state.checkpoint = latest.checkpoint if latest else self.ctx.plan.checkpoint
        self.state.frames_at_start, self.state.iteration = None, None

    def _recover(self, err: Exception) -> None:
        """An error in training: start again from the newest own record, or fail."""
        if self.crashes >= CRASH_RESTARTS:
            raise err
        self.crashes += 1
        latest = self.workspace.latest(self.state.member)
        where = (
            f"its iteration {latest.iteration} (frame {latest.frame:,})"
            if latest is not None
            else "the start"
        )
        self.say(
            f"failed ({type(err).__name__}: {err}); restarts from {where} "
            f"[{self.crashes}/{CRASH_RESTARTS}]"
        )
        log.warning("PBT member %d error", self.state.member, exc_info=err)
        self._drop_env()
        self._resume_own()
        if latest is not None:
            self.state.params = {**self.state.params, **latest.params}

    def _finish(self, stats: Any) -> RunResult:
        """The member's final state in the workspace; GMI 0 waits for the others and says
        how the population ended."""
        self.telemetry.close()
        result = RunResult.of_training(stats)
        checkpoint = result.checkpoint
        self.telemetry.publish(
            "stopped" if result.stopped_by is not None else "done",
            checkpoint=os.path.abspath(checkpoint) if checkpoint else None,
            frames=result.frames,
        )
        self._drop_env()
        if self.ctx.rank != 0:
            return result
        live = wait_for_members(self.workspace, self.ctx.plan.gmi.timeout_s)
        summary = summarise(live, self.workspace.num_policies)
        for line in summary.lines:
            print(line, flush=True)
        result.frames = sum(int(s.get("frames", 0)) for s in live.values())
        if summary.best is not None:
            result.mean_reward = summary.objective
            result.checkpoint = summary.checkpoint or result.checkpoint
        return result


def _real(changes: list) -> list:
    """The mutations that changed a value (a clamped one may not)."""
    return [c for c in changes if c.before != c.after]


def _with_values(tree: dict[str, Any], prefix: str, params: dict[str, Any]) -> dict[str, Any]:
    """A copy of the config ``tree`` (the node at ``prefix``) with each ``params`` key under
    ``prefix`` set."""
    out = copy.deepcopy(tree)
    for key, value in params.items():
        if not key.startswith(prefix):
            continue
        *path, leaf = key[len(prefix) :].split(".")
        node = out
        for part in path:
            node = node[part]
        node[leaf] = value
    return out


def _member_agent() -> type:
    """rl-games' stoppable PPO agent that reports when it has restored a checkpoint."""
    from isaacgymenvs_gmi.runners.shared.stopping import StoppableAgent

    class MemberAgent(StoppableAgent):
        def __init__(self, base_name, params, *, on_restored, **hooks):
            super().__init__(base_name, params, **hooks)
            self.on_restored = on_restored

        def restore(self, fn, set_epoch=True):
            super().restore(fn, set_epoch)
            self.on_restored(self)

    return MemberAgent
