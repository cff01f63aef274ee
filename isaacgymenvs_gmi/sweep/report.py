"""What a packed sweep says: a line per job start and end, a live table of the running jobs on a
terminal, and a closing summary ranked by reward, also written as ``summary.json`` and
``summary.csv`` in the sweep's folder."""

from __future__ import annotations

import csv
import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any, TextIO

from .runner import JobState

COLUMNS = ("job", "overrides", "epoch", "reward", "env steps/s", "ETA")
SUMMARY_FIELDS = (
    "rank",
    "job",
    "overrides",
    "status",
    "pruned",
    "objective",
    "best_reward",
    "final_reward",
    "frames",
    "wall_s",
    "started",
    "ended",
    "checkpoint",
    "error",
    "folder",
)


def _reward(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _swept(state: JobState) -> str:
    return " ".join(state.spec.swept) or "-"


def status(state: JobState) -> str:
    """Of a job after the sweep ran: not started (the sweep was stopped first) | running | done |
    pruned (stopped early by the pruner, checkpointed) | stopped (by a signal, checkpointed) |
    killed (by the sweep's escalation) | failed."""
    if state.proc is None:
        return "not started"
    if state.running:
        return "running"
    if state.killed:
        return "killed"
    if state.error is not None:
        return "failed"
    if state.pruned is not None:
        return "pruned"
    return "stopped" if (state.result or {}).get("stopped_by") else "done"


def table_lines(states: list[JobState], width: int) -> list[str]:
    """The live table: one row per job that is running or queued, cut to ``width``."""
    rows = [COLUMNS]
    for s in states:
        if s.running:
            p = s.progress
            epoch = "-" if p is None else str(p.epoch)
            epoch += f"/{p.max_epochs}" if p is not None and p.max_epochs else ""
            rate = "-" if p is None else f"{p.steps_per_s:,.0f}"
            eta = "starting" if p is None else p.timing.split("ETA")[-1].strip(" ,") or "-"
            eta = "pruned: stopping" if s.pruned is not None else eta
            reward = "-" if p is None else _reward(p.reward)
            rows.append((str(s.spec.idx), _swept(s), epoch, reward, rate, eta))
        elif s.proc is None:
            rows.append((str(s.spec.idx), _swept(s), "-", "-", "-", "queued"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))[:width] for r in rows]


class SweepConsole:
    """Start and end lines on ``stream`` and, when ``live``, the table redrawn in place."""

    def __init__(self, gpu: bool, live: bool, stream: TextIO | None = None):
        self.gpu, self.live = gpu, live
        self.stream = stream or sys.stderr
        self._drawn = 0

    def line(self, text: str) -> None:
        self._clear()
        self.stream.write(f"sweep: {text}\n")
        self.stream.flush()

    def started(self, state: JobState) -> None:
        spec = state.spec
        where = state.lease.describe(self.gpu) if state.lease else "?"
        self.line(f"{spec.label} started on {where}; folder {spec.folder}")

    def ended(self, state: JobState) -> None:
        spec, took = state.spec, (state.ended or 0) - (state.started or 0)
        if state.error is not None:
            self.line(f"{spec.label} failed after {took:.1f} s: {state.error}")
            return
        r = state.result or {}
        how = "stopped" if r.get("stopped_by") else "done"
        how = state.pruned.text() if state.pruned is not None else how
        self.line(
            f"{spec.label} {how} in {took:.1f} s: best reward {_reward(r.get('best_reward'))}, "
            f"final {_reward(r.get('final_reward'))}, {r.get('frames', 0):,} frames; "
            f"checkpoint {r.get('checkpoint') or 'none written'}"
        )

    def tick(self, states: list[JobState]) -> None:
        if not self.live:
            return
        self._clear()
        width = max(shutil.get_terminal_size().columns - 1, 20)
        lines = table_lines(states, width)
        if len(lines) < 2:  # nothing running or queued
            return
        self.stream.write("".join(line + "\x1b[K\n" for line in lines))
        self.stream.flush()
        self._drawn = len(lines)

    def close(self) -> None:
        self._clear()

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F\x1b[J")
            self._drawn = 0


def summary_rows(states: list[JobState], objective: str) -> list[dict[str, Any]]:
    """One row per job, ranked: jobs with a reward first (highest first), then the others."""
    rows = []
    for s in states:
        r = s.result or {}
        value = r.get(f"{objective}_reward")
        rows.append(
            {
                "job": s.spec.idx,
                "overrides": _swept(s),
                "status": status(s),
                "pruned": None if s.pruned is None else s.pruned.text(),
                "objective": value,
                "best_reward": r.get("best_reward"),
                "final_reward": r.get("final_reward"),
                "frames": r.get("frames"),
                "wall_s": None if s.ended is None else round(s.ended - s.started, 2),
                "started": s.started,
                "ended": s.ended,
                "checkpoint": r.get("checkpoint"),
                "error": s.error,
                "folder": str(s.spec.folder),
            }
        )
    known = [r for r in rows if isinstance(r["objective"], float) and math.isfinite(r["objective"])]
    known.sort(key=lambda r: -r["objective"])
    ranked = known + [r for r in rows if r not in known]
    for i, row in enumerate(ranked, 1):
        row["rank"] = i
    return ranked


def summary_lines(rows: list[dict[str, Any]], objective: str) -> list[str]:
    lines = [f"summary, ranked by the {objective} mean reward:"]
    for row in rows:
        text = f"  {row['rank']}. job {row['job']} ({row['overrides']}): {row['status']}"
        if row["objective"] is not None:
            text += f", {objective} reward {_reward(row['objective'])}"
        if row["error"] and row["status"] in ("failed", "killed"):
            text += f": {row['error']}"
        if row["pruned"]:
            text += f", {row['pruned']}"
        if row["checkpoint"]:
            text += f"; checkpoint {row['checkpoint']}"
        lines.append(text)
    return lines


def write_summary(folder: Path, rows: list[dict[str, Any]]) -> list[Path]:
    """``summary.json`` and ``summary.csv`` in ``folder`` (the sweep's)."""
    folder.mkdir(parents=True, exist_ok=True)
    as_json, as_csv = folder / "summary.json", folder / "summary.csv"
    as_json.write_text(json.dumps(rows, indent=1) + "\n")
    with open(as_csv, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=SUMMARY_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    return [as_json, as_csv]
