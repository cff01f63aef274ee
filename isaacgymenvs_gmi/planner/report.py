"""How a search is shown: a progress line per trial, the table, its JSON form and a plot."""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .search import Candidate, Row, SearchResult

BAR = 20


def row_dict(row: Row) -> dict[str, Any]:
    c, p = row.candidate, row.profile
    return {
        "per_gpu": c.per_gpu,
        "num_envs": c.num_envs,
        "cores": c.cores,
        "runnable": None if p is None else p.runnable,
        "env_steps_per_s": None if p is None or not p.runnable else p.env_steps_per_s,
        "memory_mb": None if p is None or not p.runnable else p.memory_mb,
        "sat": None if row.sat is None or not math.isfinite(row.sat) else row.sat,
        "projected": row.projected,
        "seconds": None if p is None else p.seconds,
        "decision": row.decision,
    }


def result_dict(result: SearchResult) -> dict[str, Any]:
    best = result.best
    return {
        "best": None if best is None else asdict(best),
        "projected": result.projected if best is not None else None,
        "ended": result.ended,
        "seconds": result.seconds,
        "trials": result.trials,
        "rows": [row_dict(r) for r in result.rows],
    }


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def table(rows: list[dict[str, Any]]) -> str:
    """The search table as text, one candidate per line."""
    head = (
        f"{'candidate':<34} {'env steps/s':>12} {'memory MiB':>11} {'Sat':>7} "
        f"{'projected':>11}  decision"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        name = Candidate(r["per_gpu"], r["num_envs"], r["cores"]).label()
        lines.append(
            f"{name:<34} {_num(r['env_steps_per_s'], ',.0f'):>12} "
            f"{_num(r['memory_mb'], ',.0f'):>11} {_num(r['sat'], '.2f'):>7} "
            f"{_num(r['projected'], ',.0f'):>11}  {r['decision']}"
        )
    return "\n".join(lines)


def progress_line(row: Row, done: int, total: int, elapsed: float, budget: float) -> str:
    filled = min(BAR, round(BAR * done / max(total, 1)))
    bar = "#" * filled + "." * (BAR - filled)
    r = row_dict(row)
    measured = "-"
    if r["env_steps_per_s"] is not None:
        measured = f"{r['env_steps_per_s']:,.0f} env steps/s, {r['memory_mb']:,.0f} MiB"
    return (
        f"[plan] [{bar}] {done}/{total} {row.candidate.label()}: {measured} -> {row.decision} "
        f"({elapsed:.0f} s of {budget:.0f} s)"
    )


def plot(rows: list[dict[str, Any]], title: str, path: Path) -> Path:
    """Throughput and memory of every candidate that ran, the chosen one marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ran = [r for r in rows if r["env_steps_per_s"] is not None]
    names = [
        f"{r['per_gpu']}x{r['num_envs']}{'' if r['cores'] == 'auto' else ' ' + r['cores'][0]}"
        for r in ran
    ]
    colours = ["tab:green" if r["decision"] == "chosen" else "tab:blue" for r in ran]
    fig, axes = plt.subplots(1, 2, figsize=(max(7, 0.8 * len(ran) + 4), 3.8))
    axes[0].bar(names, [r["env_steps_per_s"] for r in ran], color=colours)
    axes[0].set(ylabel="env steps/s (one device)", title=title)
    axes[1].bar(names, [r["memory_mb"] for r in ran], color=colours)
    axes[1].set(ylabel="peak memory [MiB]", title="memory (green: chosen)")
    for ax in axes:
        ax.tick_params(axis="x", rotation=45)
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
