"""What a PBT run shows: one line per PBT event, GMI 0's progress line with the population's
best, median and worst objective, every member's latest epoch (``live/``), and the closing
summary. No line needs a collective: GMI 0 reads the others' epochs from the workspace.
"""

from __future__ import annotations

import os
import socket
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from isaacgymenvs_gmi.console import progress_bar, show_progress, timing
from isaacgymenvs_gmi.gmi.liveness import is_alive
from isaacgymenvs_gmi.gmi.status import end_live, say
from isaacgymenvs_gmi.rl.epoch_work import EpochWork, skipped_text

from .member import MemberState
from .workspace import Workspace

ENDED = ("done", "stopped", "failed")
STARTING = "starting"  # written as a member starts, before its env and model are built


def process_mark() -> dict[str, Any]:
    """The writer's pid and host (to tell a busy member from a gone one on the same host)."""
    return {"pid": os.getpid(), "host": socket.gethostname()}


def announce_start(workspace: Workspace, member: int) -> None:
    """The member's first live record, before anything slow: the population's end waits for
    it from now on."""
    workspace.write_live(member, {"state": STARTING, "time": time.time(), **process_mark()})


def _running_here(status: Mapping[str, Any]) -> bool:
    """Whether ``status``'s writer is a live process on this host (an unreaped one: gone)."""
    pid = status.get("pid")
    return status.get("host") == socket.gethostname() and isinstance(pid, int) and is_alive(pid)


def event(member: int) -> Callable[[str], None]:
    """``say`` for member ``member``'s PBT events: ``[PBT] member <m>: <what>``."""
    return lambda what: say(f"[PBT] member {member}: {what}")


def population_text(live: Mapping[int, Mapping[str, Any]]) -> str:
    """``best B (member m) median M worst W`` of the members' latest objectives."""
    known = {m: s["objective"] for m, s in live.items() if s.get("objective") is not None}
    if not known:
        return "population: no objective yet"
    best = max(known, key=lambda m: known[m])
    values = sorted(known.values())
    return (
        f"population best {known[best]:.1f} (member {best}) median "
        f"{statistics.median(values):.1f} worst {values[0]:.1f}"
        + (f" ({len(known)} of {len(live)} known)" if len(known) < len(live) else "")
    )


class MemberTelemetry:
    """Each epoch: the member's latest state into the workspace; on GMI 0 (``leader``) the
    progress line ``[PBT xN] epoch e/E frames F | S env steps/s | reward R | population ...``."""

    def __init__(
        self,
        state: MemberState,
        workspace: Workspace,
        frames_per_epoch: int,
        objective: Callable[[], float | None],
        leader: bool,
    ):
        self.state, self.workspace = state, workspace
        self.frames_per_epoch = frames_per_epoch
        self.objective = objective
        self.leader = leader
        self.stream = sys.stdout
        self.live = leader and bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self.last: dict[str, Any] = {}

    def record(
        self,
        *,
        epoch: int,
        max_epochs: int,
        max_frames: int,
        frames: int,
        epoch_seconds: float,
        reward: float | None,
        writer: Any,
        work: EpochWork | None = None,
    ) -> None:
        rate = self.frames_per_epoch / max(epoch_seconds, 1e-9)
        work = work or EpochWork()
        self.publish(
            "training",
            epoch=epoch,
            frames=frames,
            reward=reward,
            env_steps_per_s=rate,
            epoch_seconds=epoch_seconds,
            skipped_steps=work.skipped,
        )
        if not self.leader:
            return
        live = self.workspace.read_live()
        total = sum(
            s.get("env_steps_per_s", 0.0) for s in live.values() if s.get("state") == "training"
        )
        left = max(max_epochs - epoch, 0) if max_epochs > 0 else None
        eta = None if left is None else left * epoch_seconds
        epochs = f"{epoch}/{max_epochs}" if max_epochs > 0 else str(epoch)
        bar = progress_bar(epoch / max_epochs) + " " if self.live and max_epochs > 0 else ""
        shown = "-" if reward is None else f"{reward:.1f}"
        line = (
            f"[PBT x{self.workspace.num_policies}] {bar}epoch {epochs} frames {frames:,} | "
            f"{total:,.0f} env steps/s | member 0 reward {shown} | {population_text(live)} | "
            f"{timing(time.monotonic() - self.start, eta)}"
            f"{skipped_text(work.updates, work.skipped)}"
        )
        show_progress(line, self.stream, self.live)

    def publish(self, state: str, **fields: Any) -> None:
        """The member's latest state (``training``, or one of :data:`ENDED`) into ``live/``."""
        self.last.update(fields)
        self.workspace.write_live(
            self.state.member,
            {
                **self.last,
                "state": state,
                "objective": self.objective(),
                "params": self.state.params,
                "measured": self.state.measured,
                "replaced": self.state.replaced,
                "mutated": self.state.mutated,
                "experiment": self.state.experiment_name,
                "time": time.time(),
                **process_mark(),
            },
        )

    def close(self) -> None:
        if self.live:
            end_live()


@dataclass(frozen=True)
class Summary:
    """The population at the end: the best member, its objective and final checkpoint."""

    best: int | None
    objective: float | None
    checkpoint: str | None
    lines: list[str]


def wait_for_members(workspace: Workspace, patience_s: float, poll_s: float = 0.5) -> dict:
    """Every member's last state once each has ended or is gone (no process on this host, or
    silent for ``patience_s`` on another); a member still starting is waited for while it
    lives."""
    while True:
        live = workspace.read_live()
        now = time.time()
        waiting = [
            m
            for m in range(workspace.num_policies)
            if m in live
            and live[m].get("state") not in ENDED
            and (
                _running_here(live[m])
                or now - float(live[m].get("time", 0))
                < max(patience_s, 5 * live[m].get("epoch_seconds", 0))
            )
        ]
        if not waiting:
            return live
        time.sleep(poll_s)


def summarise(live: Mapping[int, Mapping[str, Any]], num_policies: int) -> Summary:
    """The closing lines: one per member and the best member's checkpoint (best by objectives
    measured on final weights, where any is)."""
    known = {m: s["objective"] for m, s in live.items() if s.get("objective") is not None}
    measured = {m: o for m, o in known.items() if live[m].get("measured", True)}
    ranked_from = measured or known  # a score measured on the final weights, where there is one
    best = max(ranked_from, key=lambda m: ranked_from[m]) if ranked_from else None
    lines = []
    for m in range(num_policies):
        s = live.get(m)
        if s is None:
            lines.append(f"  member {m}: never reported")
            continue
        if s.get("state") in ENDED:
            how = s["state"]
        elif s.get("state") == STARTING:
            how = "gone before its first epoch"
        else:
            how = "gone (no word since it last trained)"
        obj = "-" if s.get("objective") is None else f"{s['objective']:.2f}"
        if s.get("objective") is not None and not s.get("measured", True):
            obj += " (its checkpoint's when it restarted; no episode scored since)"
        lines.append(
            f"  member {m}{' (best)' if m == best else ''}: objective {obj}, "
            f"{int(s.get('frames', 0)):,} frames, replaced {s.get('replaced', 0)}x, "
            f"mutated {s.get('mutated', 0)}x, {how}"
        )
    checkpoint = live[best].get("checkpoint") if best is not None else None
    head = (
        f"PBT population of {num_policies}: best member {best} (objective {known[best]:.2f}), "
        f"checkpoint {checkpoint or 'none written'}"
        if best is not None
        else f"PBT population of {num_policies}: no objective known"
    )
    return Summary(best, known.get(best) if best is not None else None, checkpoint, [head, *lines])
