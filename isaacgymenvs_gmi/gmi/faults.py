"""Testing aid: make one GMI crash, hang or corrupt its gradients at a chosen epoch
(``ISAACGYMENVS_GMI_FAULT="<gmi id>:<crash|hang|corrupt>:<epoch>"``). Crash and hang fire from
the epoch hook (an actor's epoch is a chunk of experience); ``corrupt`` (:func:`gradient_hook`)
scales a learner's gradients by a few percent before reduction in every minibatch of that epoch,
as a faulty GEMM would.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

log = logging.getLogger(__name__)
FAULT_ENV = "ISAACGYMENVS_GMI_FAULT"

EpochHook = Callable[[int], None]  # called with the epoch about to start (1-based)
# called with the epoch under way (1-based) and the parameters whose .grad is about to be reduced
GradientHook = Callable[[int, list], None]
KINDS = ("crash", "hang", "corrupt")
CORRUPTION = 1.05  # the corrupted gradient's largest tensor is scaled by this


@dataclass(frozen=True)
class Fault:
    gmi: int
    kind: Literal["crash", "hang", "corrupt"]
    epoch: int


def fault_from_env(environ: Mapping[str, str]) -> Fault | None:
    """The fault ``environ`` asks for, or None (raises ValueError on a malformed request)."""
    spec = environ.get(FAULT_ENV)
    if not spec:
        return None
    try:
        who, kind, when = spec.split(":")
        if kind not in KINDS:
            raise ValueError(kind)
        return Fault(int(who), kind, int(when))  # type: ignore[arg-type]
    except ValueError:
        expected = f"'<gmi id>:<{'|'.join(KINDS)}>:<epoch>'"
        raise ValueError(f"{FAULT_ENV}={spec!r}: expected {expected}") from None


def no_fault(epoch: int) -> None:
    """The epoch hook of a run without injected faults."""


def epoch_hook(rank: int, environ: Mapping[str, str] = os.environ) -> EpochHook:
    """The hook GMI ``rank`` calls at each epoch start: fires the fault ``environ`` asks for."""
    fault = fault_from_env(environ)
    if fault is None or fault.gmi != rank or fault.kind == "corrupt":
        return no_fault

    fired = False  # once per process: a body that restarts its learner passes epochs again

    def before_epoch(epoch: int) -> None:
        nonlocal fired
        if epoch == fault.epoch and not fired:
            fired = True
            log.warning("GMI %d: injected %s at epoch %d", rank, fault.kind, epoch)
            if fault.kind == "crash":
                raise RuntimeError(f"injected crash in GMI {rank}")
            while True:  # hang: a handled signal (a stop request) does not end it
                signal.pause()

    return before_epoch


def gradient_hook(rank: int, environ: Mapping[str, str] = os.environ) -> GradientHook | None:
    """The gradient corruption ``environ`` asks of GMI ``rank``, or None."""
    fault = fault_from_env(environ)
    if fault is None or fault.gmi != rank or fault.kind != "corrupt":
        return None

    def corrupt(epoch: int, params: list) -> None:
        if epoch != fault.epoch:
            return
        grads = [p.grad for p in params if p.grad is not None]
        if grads:
            max(grads, key=lambda g: g.numel()).mul_(CORRUPTION)

    log.warning("GMI %d: its gradients will be corrupted in epoch %d", rank, fault.epoch)
    return corrupt
