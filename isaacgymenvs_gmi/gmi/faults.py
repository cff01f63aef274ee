"""Testing aid: make one GMI crash or hang at a chosen epoch, to exercise fault handling.

Asked for through the environment, ``ISAACGYMENVS_GMI_FAULT="<gmi id>:<crash|hang>:<epoch>"``;
the GMI entry turns it into an epoch hook that the mode's body calls at the start of each epoch
(an actor's epoch is a chunk of experience).
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


@dataclass(frozen=True)
class Fault:
    gmi: int
    kind: Literal["crash", "hang"]
    epoch: int


def fault_from_env(environ: Mapping[str, str]) -> Fault | None:
    """The fault ``environ`` asks for, or None (raises ValueError on a malformed request)."""
    spec = environ.get(FAULT_ENV)
    if not spec:
        return None
    try:
        who, kind, when = spec.split(":")
        if kind not in ("crash", "hang"):
            raise ValueError(kind)
        return Fault(int(who), kind, int(when))  # type: ignore[arg-type]
    except ValueError:
        expected = "'<gmi id>:<crash|hang>:<epoch>'"
        raise ValueError(f"{FAULT_ENV}={spec!r}: expected {expected}") from None


def no_fault(epoch: int) -> None:
    """The epoch hook of a run without injected faults."""


def epoch_hook(rank: int, environ: Mapping[str, str] = os.environ) -> EpochHook:
    """The hook GMI ``rank`` calls at each epoch start: fires the fault ``environ`` asks for."""
    fault = fault_from_env(environ)
    if fault is None or fault.gmi != rank:
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
