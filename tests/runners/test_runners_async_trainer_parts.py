"""The async trainer's parts without processes: rl-games' bookkeeping (summaries, best and last
checkpoints, limits) on a fake agent; the accounting (counters, actors stopping, what is in
flight, the balance) over real in-process routes, collector, batcher and ledger; the loop over
both, with a fake agent that trains by counting epochs."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import torch
from rl_games.algos_torch.torch_ext import AverageMeter

from isaacgymenvs_gmi.channels import (
    Batcher,
    Collector,
    Dispenser,
    ExactlyOnceError,
    Ledger,
    Route,
    WeightsBoard,
    balance_line,
    channel_specs,
    flatten,
    route_shape,
)
from isaacgymenvs_gmi.channels.route import ACTOR_PID, ACTOR_STATE, PRODUCED_TRANSITIONS, STOPPED
from isaacgymenvs_gmi.channels.wiring import TrainerLinks
from isaacgymenvs_gmi.runners.async_ppo.accounting import Accounting
from isaacgymenvs_gmi.runners.async_ppo.bookkeeping import NO_BEST, Bookkeeping, TrainedEpoch
from isaacgymenvs_gmi.runners.async_ppo.team import SoloTrainer, Vote
from isaacgymenvs_gmi.runners.async_ppo.trainer_loop import TrainerLoop
from tests.channels.traffic import KINDS, push_chunk, step_values
from tests.speed import budget

T, N = 4, 3  # steps per chunk (= the horizon: one chunk per batch), envs per actor
CHUNK = T * N  # transitions


class Writer:
    def __init__(self):
        self.scalars: list[tuple[str, float, float]] = []
        self.closed = False

    def add_scalar(self, tag: str, value: float, step: float) -> None:
        self.scalars.append((tag, value, step))

    def values(self, tag: str) -> list[float]:
        return [v for t, v, _ in self.scalars if t == tag]

    def close(self) -> None:
        self.closed = True


class Agent:
    """What the trainer's parts ask of an rl-games agent; ``train_from`` counts an epoch."""

    def __init__(self, **config):
        self.config = {"name": "Cartpole", **config}
        self.nn_dir = "nn"
        self.save_best_after, self.save_freq = 0, 0
        self.max_epochs, self.max_frames = -1, -1
        self.epoch_num, self.frame = 0, 0
        self.last_mean_rewards = 500.0  # as a resumed checkpoint has it
        self.writer, self.saved, self.stats = Writer(), [], []
        self.ppo_device = "cpu"
        self.game_rewards = AverageMeter(1, 100)
        self.game_shaped_rewards = AverageMeter(1, 100)
        self.game_lengths = AverageMeter(1, 100)
        self.experiment_dir = "runs/Cartpole"

    def init_tensors(self) -> None:
        pass

    def save(self, path: str) -> None:
        self.saved.append(path)

    def write_stats(self, *args) -> None:
        self.stats.append(args)

    def train_from(self, batch: dict[str, torch.Tensor], waited_s: float) -> tuple[tuple, float]:
        self.epoch_num += 1
        return rlgames_result(), 0.25


def rlgames_result() -> tuple:
    """rl-games' train_epoch result: step, play, update, total s, a/c/b losses, entropies,
    KLs, last lr, lr multiplier."""
    return (0.1, 0.2, 0.3, 0.6, ["a"], ["c"], ["b"], ["ent"], ["kl"], 3e-4, 0.5)


def epoch_of(books: Bookkeeping, reward: float | None) -> None:
    """One epoch as the lead records it."""
    books.agent.epoch_num += 1
    books.agent.frame += CHUNK
    books.record(TrainedEpoch(rlgames_result(), 0.25, CHUNK), reward, elapsed_s=1.0)


# --- bookkeeping ---------------------------------------------------------------------------
def test_the_best_checkpoint_is_written_when_the_mean_reward_improves_after_save_best_after():
    agent = Agent()
    agent.save_best_after = 2
    books = Bookkeeping(agent, lead=True)
    assert agent.last_mean_rewards == NO_BEST  # a resumed run's best is forgotten
    for reward in (10.0, 10.0, 9.0, 12.0, float("nan"), 12.0):
        epoch_of(books, reward)
    best = os.path.join("nn", "Cartpole")
    # epoch 1: too early; 3: lower; 5: NaN; 6: only as good
    assert agent.saved == [best, best] and agent.last_mean_rewards == 12.0
    assert [r for *_, r in books.history][:4] == [10.0, 10.0, 9.0, 12.0]  # then NaN, 12.0
    assert agent.writer.values("rewards/step")[:4] == [10.0, 10.0, 9.0, 12.0]
    assert not books.limit_reached()


def test_no_reward_writes_no_best_and_no_history():
    agent = Agent()
    books = Bookkeeping(agent, lead=True)
    epoch_of(books, None)
    assert agent.saved == [] and books.history == [] and len(agent.stats) == 1


def test_score_to_win_ends_the_run_on_a_best_above_it(capfd):
    agent = Agent(score_to_win=50.0)
    agent.save_best_after = 2
    books = Bookkeeping(agent, lead=True)
    epoch_of(books, 60.0)  # above, but too early for a best
    assert not books.limit_reached()
    epoch_of(books, 40.0)
    assert not books.limit_reached()
    epoch_of(books, 60.0)
    assert books.limit_reached() and books.ended_by == "score_to_win"
    assert "score_to_win 50.0 reached: 60.00" in capfd.readouterr().out


def test_without_score_to_win_a_high_reward_ends_nothing():
    books = Bookkeeping(Agent(), lead=True)
    epoch_of(books, 1e9)
    assert not books.limit_reached()


@pytest.mark.parametrize(
    ("limits", "epochs", "ended_by"),
    [
        ({"max_epochs": 3}, 2, None),
        ({"max_epochs": 3}, 3, "max_epochs"),
        ({"max_frames": 3 * CHUNK}, 2, None),
        ({"max_frames": 3 * CHUNK}, 3, "max_frames"),
        ({"max_epochs": -1, "max_frames": -1}, 50, None),
    ],
)
def test_epoch_and_frame_limits_end_the_run(limits, epochs, ended_by):
    agent = Agent()
    for name, value in limits.items():
        setattr(agent, name, value)
    books = Bookkeeping(agent, lead=False)  # every trainer decides its limits
    for _ in range(epochs):
        agent.epoch_num += 1
        agent.frame += CHUNK
    assert books.limit_reached() == (ended_by is not None) and books.ended_by == ended_by


def test_write_stats_hands_rl_games_its_fifteen_arguments_in_order():
    agent = Agent()
    books = Bookkeeping(agent, lead=True)
    epoch_of(books, None)
    (args,) = agent.stats
    total, epoch, frame, update_s, frames = 1.0, 1, CHUNK, 0.25, CHUNK
    step, play, update, lr, lr_mul = 0.1, 0.2, 0.3, 3e-4, 0.5
    losses = (["a"], ["c"], ["ent"], ["kl"])  # actor, critic, entropy, KL (bounds: not passed)
    head = (total, epoch, step, play, update, *losses, lr, lr_mul)
    assert args == (*head, frame, update_s, play, frames)  # scaled time, scaled play time


def test_every_save_frequency_epochs_a_last_checkpoint():
    agent = Agent()
    agent.save_freq = 2
    books = Bookkeeping(agent, lead=True)
    for _ in range(5):
        epoch_of(books, None)
    assert agent.saved == [os.path.join("nn", f"last_Cartpole_ep_{e}") for e in (2, 4)]


def test_the_last_checkpoint_names_epoch_and_mean_reward_on_the_lead_only():
    agent = Agent()
    agent.epoch_num = 7
    books = Bookkeeping(agent, lead=True)
    assert books.save_last() == os.path.join("nn", "last_Cartpole_ep_7_rew__.pth")
    agent.game_rewards.update(torch.tensor([[12.345]]))
    agent.game_lengths.update(torch.tensor([99.0]))
    assert books.read_means() == pytest.approx(12.345) and books.mean_length == 99.0
    assert books.save_last() == os.path.join("nn", "last_Cartpole_ep_7_rew_12.35.pth")
    assert agent.saved == [p.removesuffix(".pth") for p in agent.saved]  # rl-games adds .pth
    other = Agent()
    assert Bookkeeping(other, lead=False).save_last() is None and other.saved == []


def test_only_the_episodes_that_ended_feed_the_meters():
    agent = Agent()
    books = Bookkeeping(agent, lead=True)
    ended = torch.zeros(T, N, dtype=torch.bool)
    batch = {
        "terminated": ended.clone(),
        "truncated": ended.clone(),
        "episode_return": torch.full((T, N), 1000.0),  # where no episode ended: ignored
        "episode_length": torch.full((T, N), 1000.0),
    }
    books.count_episodes(batch)
    assert books.read_means() is None
    batch["terminated"][1, 2], batch["episode_return"][1, 2] = True, 10.0
    batch["truncated"][3, 0], batch["episode_return"][3, 0] = True, 20.0
    batch["episode_length"][1, 2] = batch["episode_length"][3, 0] = 5.0
    books.count_episodes(batch)
    assert agent.game_rewards.current_size == 2 and agent.game_shaped_rewards.current_size == 2
    assert books.read_means() == 15.0 and books.mean_length == 5.0


# --- accounting ----------------------------------------------------------------------------
class Ends:
    """One trainer's ends over in-process routes from actors ``actors``, each with its
    dispenser; the policy lag allowed is ``max_lag``."""

    def __init__(self, actors=(1, 2), max_lag: int = 1, team=None):
        shape = route_shape(channel_specs("uni", KINDS), N, T, 4, compress=False)
        self.routes = {a: Route.in_process(shape) for a in actors}
        self.dispensers = {a: Dispenser(a, [r], 1.0, lambda: False) for a, r in self.routes.items()}
        self.board = WeightsBoard.in_process(6)
        self.links = TrainerLinks(dict(self.routes), self.board)
        self.collector = Collector(list(actors), list(self.routes.values()), KINDS)
        self.ledger = Ledger()
        self.batcher = Batcher(T, N, T, max_lag, self.ledger)
        self.team = team or SoloTrainer()
        self.accounts = Accounting(self.links, self.collector, self.batcher, self.ledger, self.team)
        self.pushed = dict.fromkeys(actors, 0)

    def push(self, actor: int, chunks: int = 1) -> None:
        for _ in range(chunks):
            push_chunk(self.dispensers[actor], self.pushed[actor], N)
            self.pushed[actor] += 1

    def push_part(self, actor: int, steps: int) -> None:
        """The first ``steps`` steps of a chunk never finished (an actor died mid-chunk)."""
        for t in range(steps):
            self.dispensers[actor].push(step_values(actor, self.pushed[actor], t, N))

    def stopped(self, *actors: int) -> None:
        for a in actors:
            self.routes[a].set_control(ACTOR_STATE, STOPPED)


def test_the_balance_counts_consumed_dropped_and_in_flight_and_says_so():
    ends = Ends(max_lag=1)
    ends.push(1, 3)
    ends.push(2, 2)
    ends.batcher.add(ends.collector.poll())  # actor 1's chunks 0-2, actor 2's 0-1
    # at version 2 (a chunk's version is its number): 1/0 is too old, 1/1 and 1/2 are trained
    assert ends.batcher.next_batch(2) is not None and ends.batcher.next_batch(2) is not None
    counters = ends.accounts.counters()
    assert counters.produced == {1: 3 * CHUNK, 2: 2 * CHUNK}
    assert (counters.consumed, counters.dropped, counters.depth) == (2 * CHUNK, CHUNK, 2)
    ends.push(1)  # left in the ring at stop
    ends.push_part(2, T - 1)  # never whole: neither produced nor in flight
    ends.stopped(1, 2)
    balance = ends.accounts.settle(timeout_s=5.0)
    assert ends.board.stopping and balance.stuck == []
    want = (6 * CHUNK, 2 * CHUNK, CHUNK, 3 * CHUNK)
    assert (balance.produced, balance.consumed, balance.dropped, balance.in_flight) == want
    assert balance.line == balance_line(*want)
    assert balance.line == "produced 72 = consumed 24 + dropped for lag 12 + in flight at stop 36"
    assert balance.lag == {1: 1, 0: 1} and ends.collector.partial() == 1
    names = ("produced", "consumed", "dropped", "in_flight")
    assert balance.channels() == {**dict(zip(names, want, strict=True)), "lag": {1: 1, 0: 1}}


def test_an_unbalanced_run_is_refused():
    ends = Ends(actors=(1,))
    ends.push(1)
    ends.routes[1].set_control(PRODUCED_TRANSITIONS, 2 * CHUNK)  # claims a chunk never sent
    ends.stopped(1)
    with pytest.raises(ExactlyOnceError, match="unbalanced: produced 24 = consumed 0"):
        ends.accounts.settle(timeout_s=5.0)


def test_a_stopped_or_dead_actor_is_not_waited_for_a_live_or_starting_one_is_until_the_bound():
    ends = Ends(actors=(1, 2, 3, 4))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # reaped: the pid is gone
    ends.routes[1].set_control(ACTOR_PID, os.getpid())  # alive, never says it stopped
    ends.routes[2].set_control(ACTOR_PID, os.getpid())
    ends.stopped(2)  # said it stopped: alive or not, done
    ends.routes[3].set_control(ACTOR_PID, dead.pid)  # died without saying so
    # actor 4 never published its pid: still starting, waited for
    ends.push(1, 2)
    started = time.monotonic()
    balance = ends.accounts.settle(timeout_s=0.2)
    assert time.monotonic() - started >= 0.2
    assert balance.stuck == [1, 4]
    assert (balance.produced, balance.in_flight) == (2 * CHUNK, 2 * CHUNK)  # taken while waiting


def test_while_waiting_for_actors_the_trainer_takes_their_chunks_so_none_waits_for_room():
    ends = Ends(actors=(1,))
    ends.routes[1].set_control(ACTOR_PID, os.getpid())
    ends.push(1, 4)
    assert ends.routes[1].free() == 0  # a fifth chunk would wait
    assert ends.accounts.stop_actors(timeout_s=0.05) == [1]
    assert ends.routes[1].free() == 4 and ends.batcher.waiting() == 4


def test_actors_that_all_stopped_are_not_waited_for():
    ends = Ends()
    ends.stopped(1, 2)
    started = time.monotonic()
    assert ends.accounts.stop_actors(timeout_s=30.0) == []
    assert time.monotonic() - started < budget(5.0)


class Twins(SoloTrainer):
    """Two trainers that saw the same: every gathered row comes twice."""

    size = 2

    def gather(self, values: torch.Tensor) -> torch.Tensor:
        return torch.stack([values, values]).cpu()


def test_counters_and_the_balance_add_up_over_every_trainer():
    ends = Ends(max_lag=5, team=Twins())
    ends.push(1, 2)
    ends.batcher.add(ends.collector.poll())
    assert ends.batcher.next_batch(1) is not None  # chunk 0 at lag 1
    counters = ends.accounts.counters()
    assert counters.produced == {1: 4 * CHUNK, 2: 0} and counters.consumed == 2 * CHUNK
    assert counters.depth == 2
    ends.stopped(1, 2)
    balance = ends.accounts.settle(timeout_s=5.0)
    assert (balance.produced, balance.consumed, balance.in_flight) == (
        4 * CHUNK,
        2 * CHUNK,
        2 * CHUNK,
    )
    assert balance.lag == {1: 2}


# --- the loop over both --------------------------------------------------------------------
class Waiting(SoloTrainer):
    """A team whose other trainer holds no batch until told."""

    def __init__(self):
        self.others_ready = False

    def vote(self, ready: bool, signum: int | None, finish: bool) -> Vote:
        return Vote(ready and self.others_ready, signum, finish)


def loop_over(ends: Ends, agent: Agent, stop=lambda: None) -> TrainerLoop:
    modules = [torch.nn.Linear(2, 2)]
    assert flatten(modules).numel() == ends.board.numel
    return TrainerLoop(
        agent, modules, ends.links, ends.collector, ends.batcher, ends.ledger, stop, True, ends.team
    )


def test_the_loop_trains_to_max_epochs_publishes_and_accounts_for_every_chunk(capfd):
    ends, agent = Ends(max_lag=10), Agent()
    agent.max_epochs = 3
    loop = loop_over(ends, agent)
    assert ends.board.published and ends.board.version == 0
    ends.push(1, 2)
    ends.push(2, 3)
    trained = 0
    while not loop.finished:
        trained += loop.step()
    assert trained == 3 and ends.board.version == 3 and agent.frame == 3 * CHUNK
    ends.stopped(1, 2)
    result = loop.finish()
    assert result.channels["produced"] == 5 * CHUNK and result.channels["consumed"] == 3 * CHUNK
    assert result.channels["in_flight"] == 2 * CHUNK and result.stopped_by is None
    assert result.frames == 3 * CHUNK and len(result.history) == 3
    assert result.checkpoint.startswith(os.path.join("nn", "last_Cartpole_ep_3_rew_"))
    assert result.experiment_dir == "runs/Cartpole" and agent.writer.closed
    assert set(result.rates) == {"pps", "ttop"} and len(agent.stats) == 3
    assert agent.writer.values("async/policy_version") == [1, 2, 3]
    out = capfd.readouterr().out
    assert "epoch 3/3 | PPS" in out and "produced 60 = consumed 36" in out


def test_a_batch_taken_but_never_trained_on_counts_in_flight_when_a_signal_stops_the_run():
    signal = {"now": None}
    ends, agent = Ends(team=Waiting()), Agent()
    loop = loop_over(ends, agent, stop=lambda: signal["now"])
    ends.push(1)
    assert not loop.step() and ends.ledger.consumed == CHUNK  # held: the other is not ready
    signal["now"] = 15
    assert not loop.step() and loop.finished and loop.stopped_by == 15
    assert (ends.ledger.consumed, ends.ledger.in_flight) == (0, CHUNK) and agent.epoch_num == 0
    ends.stopped(1, 2)
    result = loop.finish()
    assert result.stopped_by == 15 and result.channels["in_flight"] == CHUNK
    assert result.checkpoint == os.path.join("nn", "last_Cartpole_ep_0_rew__.pth")
