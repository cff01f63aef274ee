"""An actor GMI: simulator and policy inference in one GMI, feeding its experience through its
dispenser and refreshing its policy whenever the first trainer publishes a newer one."""

from __future__ import annotations

import os
from typing import Any

import torch

from isaacgymenvs_gmi.channels import ChannelClosed, Dispenser, WeightsBoard, unflatten
from isaacgymenvs_gmi.channels.route import ACTOR_PID, ACTOR_STATE, RUNNING, STOPPED
from isaacgymenvs_gmi.gmi.faults import EpochHook, no_fault


class ActorLoop:
    """Plays ``agent`` (an rl-games agent around this GMI's env) chunk by chunk.

    Args:
        agent: rl-games continuous agent whose ``vec_env`` is this GMI's VecTask.
        modules: the agent's modules the weights board carries (see ``policy_modules``).
        value_bootstrap: time-outs are truncations (bootstrapped), else terminations.
        before_chunk: called with each chunk's number (1-based) before it is played (faults).

    It beats its routes' heartbeats at every env step and while it waits for room.
    """

    def __init__(
        self,
        agent: Any,
        modules: list,
        dispenser: Dispenser,
        board: WeightsBoard,
        value_bootstrap: bool,
        before_chunk: EpochHook = no_fault,
    ):
        self.agent, self.modules, self.dispenser, self.board = agent, modules, dispenser, board
        self.value_bootstrap, self.before_chunk = value_bootstrap, before_chunk
        self.chunks = 0
        self.version = -1
        self._flat = torch.empty(board.numel, dtype=torch.float32)
        self._obs = None
        self.steps = 0  # env steps of all envs (= actions produced)
        for route in dispenser.routes:
            route.set_control(ACTOR_PID, os.getpid())
            route.set_control(ACTOR_STATE, RUNNING)
        dispenser.beat()

    def refresh(self) -> None:
        version = self.board.read_newer(self.version, self._flat)
        if version is not None:
            unflatten(self._flat, self.modules)
            self.version = version

    def play_chunk(self) -> bool:
        """One chunk; False when the run is stopping (the chunk is abandoned, not produced)."""
        self.chunks += 1
        self.before_chunk(self.chunks)
        try:
            self.dispenser.begin_chunk()  # wait for room first: then act with the newest policy
            for _ in range(self.dispenser.chunk_steps):
                if self.board.stopping:
                    return False
                self._step()
                self.dispenser.beat()
        except ChannelClosed:
            return False
        return True

    def run(self) -> None:
        """Until the trainer says stop."""
        while self.play_chunk():
            pass
        self.finish()

    def finish(self) -> None:
        for route in self.dispenser.routes:
            route.set_control(ACTOR_STATE, STOPPED)

    @torch.no_grad()
    def _step(self) -> None:
        agent = self.agent
        self.refresh()
        if self._obs is None:
            self._obs = agent.env_reset()
        obs = self._obs
        res = agent.get_action_values(obs)
        next_obs, rewards, dones, infos = agent.env_step(res["actions"])
        values = res["values"].reshape(-1)
        done = dones.bool().reshape(-1)
        timeouts = infos.get("time_outs")
        if self.value_bootstrap and timeouts is not None:
            truncated = done & timeouts.bool().reshape(-1).to(done.device)
        else:
            truncated = torch.zeros_like(done)
        terminated = done & ~truncated
        next_values = torch.where(truncated, values, torch.zeros_like(values))
        if self.dispenser.at_last_step:  # the trainer cannot see x_T: send V(x_T)
            following = agent.get_values(next_obs).reshape(-1)
            next_values = torch.where(truncated, values, following)
        zeros = torch.zeros_like(values)
        step = {
            "obs": obs["obs"],
            "actions": res["actions"],
            "neglogp": res["neglogpacs"].reshape(-1),
            "mu": res["mus"],
            "sigma": res["sigmas"],
            "values": values,
            "next_values": next_values,
            "rewards": rewards.reshape(-1).float(),
            "terminated": terminated,
            "truncated": truncated,
            "episode_return": torch.where(done, infos["episode_return"].float(), zeros),
            "episode_length": torch.where(done, infos["episode_length"].float(), zeros),
            "version": torch.full_like(values, self.version, dtype=torch.int64),
        }
        if "states" in obs and obs["states"] is not None and agent.has_central_value:
            step["states"] = obs["states"]
        self.dispenser.push({k: v.detach() for k, v in step.items()})  # copied into the slots
        self.steps += values.numel()
        self._obs = next_obs
