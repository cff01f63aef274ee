"""Algorithm 2 of the paper (§5.2): which GMIs per device and envs per GMI to run, found by
profiling; a pure function over a profiler callback.

The search walks *shapes* (GMIs per device and, on a crowded CPU device, how they share its
cores) from the most GMIs to the fewest; inside a shape it grows num_env:

- a candidate that does not run (crash, hang, out of memory, refused) is skipped;
- from a shape's second runnable candidate on, Sat = (dtop/top) / (dmem/mem) against the
  previous one; Sat < alpha ends the shape (more envs buy memory, not throughput);
- every runnable, unsaturated candidate is projected to the whole system and the best kept.

Beyond the paper:

- A shape's first runnable candidate is projected too (the paper's line 14 skips it; a shape
  with one num_env could never win).
- Projections within ``tie`` of the best are ties: fewer GMIs, then less memory, wins.
- A line ``memory per GMI = a + b * num_env`` fitted to the runnable probes prunes, unrun, a
  candidate predicted above the cap.
- The sweep over GMIs per device stops once fewer GMIs projected worse twice in a row.
- A time budget bounds the whole search; a trial gets at most what is left of it.
- The best candidate and those projected within 5% of it are measured again and decided on
  the mean of both trials.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

TIE = 0.02  # projections this close (relative) are equal within measurement noise
CONFIRM_BAND = 0.05  # candidates projected this close to the best are measured once more ...
CONFIRM_MAX = 3  # ... the closest of them at most


@dataclass(frozen=True)
class Candidate:
    """One configuration: ``per_gpu`` GMIs per device of ``num_envs`` envs each; ``cores``:
    how a crowded CPU device's GMIs share its cores (``pinned``/``shared``), else ``auto``."""

    per_gpu: int
    num_envs: int
    cores: str = "auto"

    def label(self) -> str:
        cores = "" if self.cores == "auto" else f" {self.cores}"
        return f"per_gpu={self.per_gpu} num_envs={self.num_envs}{cores}"


@dataclass(frozen=True)
class Shape:
    """An outer-loop point: GMIs per device, their placement, and the num_env values to grow
    through (envs per GMI, ascending)."""

    per_gpu: int
    envs: tuple[int, ...]
    cores: str = "auto"

    def candidates(self) -> list[Candidate]:
        return [Candidate(self.per_gpu, n, self.cores) for n in self.envs]


@dataclass(frozen=True)
class Profile:
    """What a trial of one candidate measured (on one device)."""

    runnable: bool
    env_steps_per_s: float = 0.0  # every GMI of the device together, warm-up left out
    memory_mb: float = 0.0  # peak, every GMI of the device together
    reason: str = ""  # why it is not runnable
    seconds: float = 0.0  # wall time of the trial

    @classmethod
    def failed(cls, reason: str, seconds: float = 0.0) -> Profile:
        return cls(False, reason=reason, seconds=seconds)


@dataclass
class Row:
    """One line of the search table."""

    candidate: Candidate
    profile: Profile | None  # None: not run (pruned, or no budget left)
    sat: float | None = None
    projected: float | None = None
    decision: str = ""


@dataclass
class SearchResult:
    best: Candidate | None
    projected: float  # the best candidate's projected system throughput (-inf: none ran)
    rows: list[Row] = field(default_factory=list)
    ended: str = "searched every shape"
    seconds: float = 0.0

    @property
    def trials(self) -> int:
        return sum(1 for r in self.rows if r.profile is not None and r.profile.seconds > 0)


Profiler = Callable[[Candidate, float], Profile]  # (candidate, seconds it may take) -> profile
Estimate = Callable[[Candidate, Profile], float]  # projected system throughput


def saturation(top: float, mem: float, pre_top: float, pre_mem: float) -> float:
    """Sat = R_top / R_mem of the paper (lines 17-19). Without a memory increase: +inf when the
    throughput grew, -inf otherwise (saturated)."""
    r_top = (top - pre_top) / pre_top
    r_mem = (mem - pre_mem) / pre_mem
    if r_mem <= 0:
        return math.inf if r_top > 0 else -math.inf
    return r_top / r_mem


class MemoryModel:
    """Least-squares line of memory per GMI against envs per GMI, over the runnable probes."""

    def __init__(self) -> None:
        self.points: list[tuple[float, float]] = []

    def add(self, c: Candidate, p: Profile) -> None:
        if p.runnable and p.memory_mb > 0:
            self.points.append((float(c.num_envs), p.memory_mb / c.per_gpu))

    def predict(self, c: Candidate) -> float | None:
        """Predicted memory of the device's GMIs in MiB, or None with too few distinct probes."""
        xs = [x for x, _ in self.points]
        if len(set(xs)) < 2:
            return None
        n = len(xs)
        mx, my = sum(xs) / n, sum(y for _, y in self.points) / n
        sxx = sum((x - mx) ** 2 for x in xs)
        b = sum((x - mx) * (y - my) for x, y in self.points) / sxx
        a = my - b * mx
        return c.per_gpu * (a + max(b, 0.0) * c.num_envs)


def _better(c: Candidate, top: float, mem: float, best: tuple | None, tie: float) -> bool:
    """Does ``c`` (projected ``top``, memory ``mem``) beat ``best`` = (candidate, top, mem)?"""
    if best is None:
        return True
    bc, btop, bmem = best
    if top > btop * (1 + tie):
        return True
    if top < btop * (1 - tie):
        return False
    return (c.per_gpu, mem) < (bc.per_gpu, bmem)  # a tie: fewer GMIs, then less memory


def search(
    shapes: Sequence[Shape],
    profile: Profiler,
    estimate: Estimate,
    *,
    alpha: float,
    budget_s: float = math.inf,
    memory_cap_mb: float | None = None,
    tie: float = TIE,
    clock: Callable[[], float] = time.monotonic,
    on_row: Callable[[Row, int, int], None] | None = None,
) -> SearchResult:
    """Run Algorithm 2 over ``shapes`` (searched in order of decreasing ``per_gpu``).

    Args:
        profile: runs one candidate within the seconds given and says what it measured.
        estimate: the projected system throughput of a runnable candidate.
        alpha: the Sat threshold.
        budget_s: the whole search's time bound.
        memory_cap_mb: candidates the memory model predicts above it are not run.
        on_row: called with each finished row, the rows done and the candidates at most left.
    """
    ordered = sorted(shapes, key=lambda s: -s.per_gpu)  # stable: placements keep their order
    start = clock()
    rows: list[Row] = []
    best: tuple[Candidate, float, float] | None = None
    model = MemoryModel()
    trial_times: list[float] = []
    best_of: dict[int, float] = {}  # per_gpu -> best projection
    ended = "searched every shape"
    total = sum(len(s.envs) for s in ordered)

    def emit(row: Row) -> None:
        rows.append(row)
        if on_row is not None:
            on_row(row, len(rows), total)

    def left() -> float:
        return budget_s - (clock() - start)

    for shape in ordered:
        if _stopped_improving(best_of, shape.per_gpu, tie):
            ended = f"stopped at per_gpu={shape.per_gpu}: fewer GMIs stopped improving"
            break
        pre: tuple[float, float] | None = None
        for cand in shape.candidates():
            predicted = model.predict(cand)
            if memory_cap_mb is not None and predicted is not None and predicted > memory_cap_mb:
                emit(Row(cand, None, decision=f"pruned: {predicted:,.0f} MiB predicted > cap"))
                break  # more envs need more memory still
            if _out_of_time(trial_times, left()):
                ended = "the time budget ran out"
                break
            prof = profile(cand, left())
            if prof.seconds > 0:
                trial_times.append(prof.seconds)
            if not prof.runnable:
                emit(Row(cand, prof, decision=f"not runnable: {prof.reason}"))
                continue
            model.add(cand, prof)
            sat = None if pre is None else saturation(prof.env_steps_per_s, prof.memory_mb, *pre)
            pre = (prof.env_steps_per_s, prof.memory_mb)
            if sat is not None and sat < alpha:
                emit(Row(cand, prof, sat, decision=f"saturated (Sat < {alpha:g})"))
                break
            top = estimate(cand, prof)
            best_of[cand.per_gpu] = max(best_of.get(cand.per_gpu, -math.inf), top)
            better = _better(cand, top, prof.memory_mb, best, tie)
            if better:
                best = (cand, top, prof.memory_mb)
            emit(Row(cand, prof, sat, top, "best so far" if better else "kept looking"))
        if ended == "the time budget ran out":
            break
    if best is not None:
        best = _confirm(rows, best, profile, estimate, emit, left, trial_times, tie)
        last = max(i for i, r in enumerate(rows) if r.candidate == best[0] and r.projected)
        rows[last].decision = "chosen"
    top = best[1] if best else -math.inf
    return SearchResult(best[0] if best else None, top, rows, ended, clock() - start)


def _out_of_time(trial_times: list[float], left: float) -> bool:
    """No time left, or less than a typical (median) trial has taken so far."""
    typical = sorted(trial_times)[len(trial_times) // 2] if trial_times else 0.0
    return left <= 0 or typical > left


def _confirm(rows, best, profile, estimate, emit, left, trial_times, tie):
    """Measure the best candidate and those projected within :data:`CONFIRM_BAND` of it once
    more, and decide on the mean of their two measurements (one short trial on a shared machine
    can be off by 10%). Returns the (candidate, projection, memory) that wins."""
    first: dict[Candidate, Row] = {}
    for row in rows:
        if row.projected is not None and row.candidate not in first:
            first[row.candidate] = row
    close = sorted(
        (r for r in first.values() if r.projected >= best[1] * (1 - CONFIRM_BAND)),
        key=lambda r: -r.projected,
    )[:CONFIRM_MAX]
    if len(close) < 2:
        return best
    winner = None
    for row in close:
        if _out_of_time(trial_times, left()):
            return best  # no time to re-measure: keep what the sweep found
        again = profile(row.candidate, left())
        if again.seconds > 0:
            trial_times.append(again.seconds)
        if not again.runnable:
            emit(Row(row.candidate, again, decision=f"re-measured, not runnable: {again.reason}"))
            continue
        p = row.profile
        both = Profile(
            True,
            (p.env_steps_per_s + again.env_steps_per_s) / 2,
            max(p.memory_mb, again.memory_mb),
            seconds=again.seconds,
        )
        top = estimate(row.candidate, both)
        emit(Row(row.candidate, again, None, top, "re-measured (projection: mean of 2 trials)"))
        if _better(row.candidate, top, both.memory_mb, winner, tie):
            winner = (row.candidate, top, both.memory_mb)
    return winner or best


def _stopped_improving(best_of: dict[int, float], per_gpu: int, tie: float) -> bool:
    """The GMI counts searched so far (all above ``per_gpu``) fell twice in a row beyond the tie
    band. One fall is not enough: on a CPU device, how evenly GMIs divide its cores makes the
    curve uneven."""
    done = sorted((k for k in best_of if k > per_gpu), reverse=True)  # in the order searched
    if len(done) < 3:
        return False
    more, mid, fewer = (best_of[k] for k in done[-3:])
    return mid < more * (1 - tie) and fewer < mid * (1 - tie)
