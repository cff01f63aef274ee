"""Testing aid: make one GMI (or every GMI: ``*``) crash, hang or corrupt its gradients at a
chosen epoch (``ISAACGYMENVS_GMI_FAULT="<gmi id|*>:<crash|hang|corrupt|sum>:<epoch>"``). Crash
and hang fire from the epoch hook (an actor's epoch is a chunk of experience); ``corrupt``
(:func:`gradient_hook`) scales a learner's gradients by a few percent before reduction in every
minibatch of that epoch, as a faulty GEMM would; ``sum`` multiplies them by the number of GMIs,
so that the reduction yields their sum where the mean belongs: on every GMI (``*``), a wrong
merge that keeps the replicas identical, which only a same-data check finds
(``gmi.debug.same_data``).
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
KINDS = ("crash", "hang", "corrupt", "sum")
EVERY = "*"  # the GMI id that names every GMI
CORRUPTION = 1.05  # the corrupted gradient's largest tensor is scaled by this


@dataclass(frozen=True)
class Fault:
    gmi: int | None  # None: every GMI
    kind: Literal["crash", "hang", "corrupt", "sum"]
    epoch: int

    def hits(self, rank: int) -> bool:
        return self.gmi is None or self.gmi == rank


def fault_from_env(environ: Mapping[str, str]) -> Fault | None:
    """The fault ``environ`` asks for, or None (raises ValueError on a malformed request)."""
    spec = environ.get(FAULT_ENV)
    if not spec:
        return None
    try:
        who, kind, when = spec.split(":")
        if kind not in KINDS:
            raise ValueError(kind)
        return Fault(None if who == EVERY else int(who), kind, int(when))  # type: ignore[arg-type]
    except ValueError:
        expected = f"'<gmi id|{EVERY}>:<{'|'.join(KINDS)}>:<epoch>'"
        raise ValueError(f"{FAULT_ENV}={spec!r}: expected {expected}") from None


def no_fault(epoch: int) -> None:
    """The epoch hook of a run without injected faults."""


def epoch_hook(rank: int, environ: Mapping[str, str] = os.environ) -> EpochHook:
    """The hook GMI ``rank`` calls at each epoch start: fires the fault ``environ`` asks for."""
    fault = fault_from_env(environ)
    if fault is None or not fault.hits(rank) or fault.kind in ("corrupt", "sum"):
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


def gradient_hook(
    rank: int, environ: Mapping[str, str] = os.environ, gmis: int = 1
) -> GradientHook | None:
    """The gradient corruption ``environ`` asks of GMI ``rank`` of ``gmis``, or None."""
    fault = fault_from_env(environ)
    if fault is None or not fault.hits(rank) or fault.kind not in ("corrupt", "sum"):
        return None

    def corrupt(epoch: int, params: list) -> None:
        if epoch != fault.epoch:
            return
        grads = [p.grad for p in params if p.grad is not None]
        if not grads:
            return
        if fault.kind == "sum":
            for grad in grads:
                grad.mul_(gmis)
        else:
            max(grads, key=lambda g: g.numel()).mul_(CORRUPTION)

    what = "summed where the mean belongs" if fault.kind == "sum" else "corrupted"
    log.warning("GMI %d: its gradients will be %s in epoch %d", rank, what, fault.epoch)
    return corrupt
