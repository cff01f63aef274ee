"""Fault and signal drill: real Cartpole runs hit by crashes, hangs, kills, stops and signals.

Each scenario runs ``train.py`` with an empty private ``TMPDIR``, acts on it once it trains, and
records the exit code, how long after the act the run said what happened and how long until it
ended, and what it left: files in its temp dir, live processes, shared-memory segments, and
whether its last checkpoint loads with ``torch.load(weights_only=True)``.
Writes bench/results/safety_drill.json.

    python bench/safety_drill.py [--only NAME ...]   (NAME "resume": the resume check)
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from common import ROOT, write_result

from isaacgymenvs_gmi.gmi.scratch import remove_abandoned

GMI_FAULT = "ISAACGYMENVS_GMI_FAULT"


@dataclass
class Scenario:
    name: str
    gmis: int
    act: str  # "none" | "launcher:<SIG>[x2]" | "group:<SIG>" | "gmi<rank>:<SIG>"
    expect_code: int | str  # exit code, or "nonzero"
    env: dict = field(default_factory=dict)
    extra: tuple[str, ...] = ()
    told: str = ""  # a line the run must print once it notices
    when: str = ""  # act once a line holding this appears (default: after 3 epochs)


ASYNC = ("gmi.mode=async", "max_iterations=200", "gmi.timeout_s=6")
SCENARIOS = [
    Scenario("finished", 3, "none", 0, extra=("max_iterations=4",)),
    Scenario("crash fault", 3, "none", 1, {GMI_FAULT: "2:crash:3"}, told="injected crash"),
    Scenario(
        "hang fault", 2, "none", 1, {GMI_FAULT: "1:hang:3"}, ("gmi.timeout_s=10",), "missing: GMI 1"
    ),
    Scenario("GMI SIGKILL", 3, "gmi1:SIGKILL", 1, told="killed by SIGKILL"),
    Scenario(
        "GMI SIGSTOP", 2, "gmi1:SIGSTOP", 1, extra=("gmi.timeout_s=10",), told="missing: GMI 1"
    ),
    Scenario("Ctrl-C, 2 GMIs", 2, "launcher:SIGINT", 130, told="final checkpoint"),
    Scenario("SIGTERM, 3 GMIs", 3, "launcher:SIGTERM", 143, told="final checkpoint"),
    Scenario("Ctrl-C, 1 GMI", 1, "launcher:SIGINT", 130, told="final checkpoint"),
    Scenario("SIGTERM, 1 GMI", 1, "launcher:SIGTERM", 143, told="final checkpoint"),
    Scenario("Ctrl-C twice, 2 GMIs", 2, "launcher:SIGINTx2", 130, told="stopped at once"),
    Scenario("SIGHUP, 2 GMIs", 2, "launcher:SIGHUP", 129, told="final checkpoint"),
    Scenario(
        "Ctrl-C in start-up", 2, "group:SIGINT", 130, when="configs:", told="before the run started"
    ),
    Scenario(
        "async actor SIGSTOP",
        3,
        "gmi2:SIGSTOP",
        0,
        extra=ASYNC,
        told="stopped by a signal",
        when="epoch 5/",  # async progress lines have no [GMI xN] prefix
    ),  # fmt: skip
    Scenario("async actor hang", 3, "none", 0, {GMI_FAULT: "2:hang:8"}, ASYNC, "hung, dropped"),
    Scenario("launcher SIGKILL", 2, "launcher:SIGKILL", -9),
]


def _segments() -> set[str]:
    folder = "/dev/shm"  # noqa: S108
    names = os.listdir(folder) if os.path.isdir(folder) else []
    return {n for n in names if n.startswith("isaacgymenvs-gmi-")}


def _gmi_pids(launcher: int) -> list[int]:
    """The launcher's GMI processes in GMI order (named ``gmi-<rank>``, forked or spawned)."""
    kids = {k.name(): k.pid for k in psutil.Process(launcher).children()}
    names = sorted((n for n in kids if n.startswith("gmi-")), key=lambda n: int(n[4:]))
    return [kids[n] for n in names]


def _loads(path: str | None) -> bool | None:
    if path is None:
        return None
    import torch

    try:
        torch.load(path, weights_only=True)
        return True
    except Exception:  # noqa: BLE001 - the figure is whether it loads
        return False


def run_scenario(s: Scenario, work: Path) -> dict:
    temp, runs = work / "temp", work / "runs"
    temp.mkdir(parents=True)
    shm_before = _segments()
    iterations = (
        () if any(a.startswith("max_iterations") for a in s.extra) else ("max_iterations=100000",)
    )
    cmd = [sys.executable, "train.py", "task=Cartpole", f"gmi.per_gpu={s.gmis}", *iterations]
    cmd += [*s.extra, "train.params.config.save_frequency=2", f"train_dir={runs}"]
    env = {**os.environ, "TMPDIR": str(temp), **s.env}
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,  # a process group of its own, as in a terminal
    )
    lines: list[tuple[float, str]] = []
    reader = threading.Thread(
        target=lambda: lines.extend((time.monotonic(), ln) for ln in proc.stdout), daemon=True
    )
    reader.start()
    children: set[int] = set()
    acted = None
    epoch_line = re.compile(r"\[GMI x\d+\] epoch")
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            kids = psutil.Process(proc.pid).children(recursive=True)
            children.update(k.pid for k in kids)
        except psutil.NoSuchProcess:
            break
        if s.when:
            ready = any(s.when in ln for _, ln in list(lines))
        else:
            ready = sum(bool(epoch_line.search(ln)) for _, ln in list(lines)) >= 3
        if acted is None and s.act != "none" and ready:
            who, sig = s.act.split(":")
            twice = sig.endswith("x2")
            signum = getattr(signal, sig.removesuffix("x2"))
            send = os.kill
            if who == "launcher":
                target = proc.pid
            elif who == "group":
                target, send = proc.pid, os.killpg
            else:
                target = _gmi_pids(proc.pid)[int(who.removeprefix("gmi"))]
            if twice:  # the second while GMI 0 is stopped, so the first cannot finish the run
                os.kill(_gmi_pids(proc.pid)[0], signal.SIGSTOP)
                os.kill(target, signum)
                time.sleep(1.0)
            acted = time.monotonic()
            send(target, signum)
        time.sleep(0.1)
    if proc.poll() is None:
        proc.kill()
    code = proc.wait()
    ended = time.monotonic()
    reader.join(5)
    injected = next((t for t, ln in lines if "injected" in ln), None)
    start = acted or injected or (lines[0][0] if lines else ended)
    told_at = next((t for t, ln in lines if s.told and s.told in ln), None)
    acted_as_asked = s.act == "none" or acted is not None
    time.sleep(0.5)
    alive = [p for p in children if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    for p in alive:
        os.kill(p, signal.SIGKILL)
    left = sorted(os.listdir(temp))
    if left and s.act == "launcher:SIGKILL":  # nobody could clean: the next run does it
        remove_abandoned(str(temp))
    ckpts = sorted(glob.glob(str(runs / "*" / "nn" / "*.pth")), key=os.path.getmtime)
    ok_code = code != 0 if s.expect_code == "nonzero" else code == s.expect_code  # and said so
    ok_code = ok_code and acted_as_asked and (not s.told or told_at is not None)
    result = {
        "scenario": s.name,
        "gmis": s.gmis,
        "act": s.act,
        "fault": s.env.get(GMI_FAULT),
        "exit_code": code,
        "as_expected": ok_code,
        "told_after_s": None if told_at is None else round(told_at - start, 2),
        "ended_after_s": round(ended - start, 2),
        "left_in_temp": left,
        "left_in_temp_after_next_run_started": sorted(os.listdir(temp)),
        "live_processes_left": len(alive),
        "segments_left": sorted(_segments() - shm_before),
        "last_checkpoint_loads": _loads(ckpts[-1] if ckpts else None),
        "tracebacks": sum("Traceback" in ln for _, ln in lines),
        "leak_warnings": sum("leaked" in ln for _, ln in lines),
        "last_line": lines[-1][1].strip() if lines else "",
    }
    return result


PROGRESS = re.compile(r"\[GMI x(\d+)\] epoch (\d+)/\d+ frames ([\d,]+)")


def resume_with_other_gmi_count(work: Path) -> dict:
    """3 GMIs for 5 epochs, then the checkpoint resumed on 2 GMIs to epoch 8: epochs and frames
    on the progress line, in TensorBoard's ``gmi/*`` steps and in the checkpoint go on from
    where the first run ended, never back."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from isaacgymenvs_gmi.config.checkpoint_file import read_checkpoint

    runs = work / "runs"

    def train(gmis: int, *extra: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "train.py", "task=Cartpole", f"gmi.per_gpu={gmis}", *extra]
        return subprocess.run(
            [*cmd, f"train_dir={runs}"], cwd=ROOT, capture_output=True, text=True, timeout=600
        )

    first = train(3, "max_iterations=5")
    ckpt = sorted(glob.glob(str(runs / "*" / "nn" / "last_*.pth")), key=os.path.getmtime)[-1]
    before = read_checkpoint(ckpt)
    second = train(2, "max_iterations=8", f"checkpoint={ckpt}")
    rows = [(int(e), int(f.replace(",", ""))) for _, e, f in PROGRESS.findall(second.stdout)]
    last = sorted(glob.glob(str(runs / "*" / "nn" / "last_*.pth")), key=os.path.getmtime)[-1]
    after = read_checkpoint(last)
    summaries = sorted(glob.glob(str(runs / "*" / "summaries")), key=os.path.getmtime)[-1]
    events = EventAccumulator(summaries, size_guidance={"scalars": 0}).Reload()
    steps = [e.step for e in events.Scalars("gmi/env_steps_per_s_total")]
    per_epoch_2 = 2 * 512 * 16  # Cartpole: GMIs x numEnvs x horizon_length
    monotone = (
        [e for e, _ in rows] == list(range(before["epoch"] + 1, 9))
        and all(f > before["frame"] for _, f in rows)
        and all(b > a for (_, a), (_, b) in zip(rows, rows[1:], strict=False))
        and all(step > before["frame"] for step in steps)
        and after["frame"] == before["frame"] + 3 * per_epoch_2
    )
    return {
        "scenario": "resume with another GMI count",
        "first_run": {"gmis": 3, "exit_code": first.returncode, "epoch": before["epoch"],
                      "frame": before["frame"]},
        "second_run": {"gmis": 2, "exit_code": second.returncode, "progress": rows,
                       "tensorboard_gmi_steps": steps, "checkpoint_epoch": after["epoch"],
                       "checkpoint_frame": after["frame"]},
        "monotone": monotone,
        "as_expected": first.returncode == 0 and second.returncode == 0,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="scenario names to run")
    args = parser.parse_args()
    chosen = [s for s in SCENARIOS if not args.only or s.name in args.only]
    results = []
    with tempfile.TemporaryDirectory(prefix="safety-drill-") as work:
        resume = None
        if not args.only or "resume" in args.only:
            resume = resume_with_other_gmi_count(Path(work) / "resume")
            print(f"resume 3 -> 2 GMIs: progress {resume['second_run']['progress']}  "
                  f"monotone: {resume['monotone']}", flush=True)  # fmt: skip
        for i, s in enumerate(chosen):
            r = run_scenario(s, Path(work) / str(i))
            results.append(r)
            print(
                f"{s.name:22s} exit {r['exit_code']:4d} "
                f"({'ok' if r['as_expected'] else 'UNEXPECTED'})"
                f"  told {r['told_after_s']} s  ended {r['ended_after_s']} s"
                f"  left: temp {r['left_in_temp']} (after the next run starts: "
                f"{r['left_in_temp_after_next_run_started']}) processes {r['live_processes_left']}"
                f" segments {r['segments_left']}  checkpoint loads: {r['last_checkpoint_loads']}",
                flush=True,
            )
    clean = [
        r
        for r in results
        if r["as_expected"]
        and not r["live_processes_left"]
        and not r["segments_left"]
        and not r["left_in_temp_after_next_run_started"]
        and not r["leak_warnings"]
        and not (r["tracebacks"] and r["act"].startswith(("launcher", "group")))
    ]
    total = len(results) + (resume is not None)
    count = len(clean) + bool(resume and resume["monotone"] and resume["as_expected"])
    print(f"{count}/{total} scenarios ended as expected with nothing left behind")
    write_result(
        "safety_drill",
        {
            "command": "python bench/safety_drill.py",
            "scenarios": results,
            "resume": resume,
            "clean": count,
            "total": total,
        },
    )


if __name__ == "__main__":
    main()
