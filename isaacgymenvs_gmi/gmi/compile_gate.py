"""The GMIs of a device compile their programs once: the first that builds an env compiles
everything on a throwaway one (into the compile cache) and opens the gate; the others wait, then
load from the cache. Only with a compile cache, several env-building GMIs on the device and our
launcher (the gate is a file beside their scratch folders); a GMI waiting longer than the
start-up timeout compiles for itself.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from .context import GmiContext

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompileGate:
    path: Path  # exists once the device's first GMI has compiled
    opener: bool  # this GMI compiles first and opens the gate
    timeout_s: float

    @classmethod
    def of(cls, ctx: GmiContext, builders: Collection[int] | None = None) -> CompileGate | None:
        """This GMI's gate, or None where there is none (see the module docstring).
        ``builders``: the GMIs that build envs (None: every GMI)."""
        plan, group = ctx.plan, ctx.group
        if group is None or ctx.scratch_dir is None or plan.under_torchrun:
            return None
        if plan.gmi.compile_cache == "off":
            return None
        layout, place = plan.layout, plan.layout.place(group.rank)
        on_device = [
            r
            for r in range(layout.world_size)
            if (builders is None or r in builders)
            and (layout.place(r).node, layout.place(r).device) == (place.node, place.device)
        ]
        if len(on_device) < 2 or group.rank not in on_device:
            return None
        path = Path(ctx.scratch_dir).parent / f"compiled-device{place.device}"
        return cls(path, on_device[0] == group.rank, group.startup_timeout_s)

    def open(self) -> None:
        self.path.touch()

    def wait(self) -> None:
        """Until the gate opens (or the start-up timeout passes: then go on anyway)."""
        deadline = time.monotonic() + self.timeout_s
        while not os.path.exists(self.path):
            if time.monotonic() > deadline:
                log.warning("the device's first GMI did not compile in %.0f s", self.timeout_s)
                return
            time.sleep(0.05)


def compile_once_per_device(
    ctx: GmiContext, build, builders: Collection[int] | None = None
) -> None:
    """Call before building this GMI's env: the device's first GMI of ``builders`` (None: all)
    compiles every program on a throwaway env from ``build()`` and opens the gate; the others
    wait for it."""
    gate = CompileGate.of(ctx, builders)
    if gate is None:
        return
    if not gate.opener:
        gate.wait()
        return
    from isaacgymenvs_gmi.sim.envs import is_task_logic
    from isaacgymenvs_gmi.tasks import get_task_class

    try:
        if is_task_logic(get_task_class(ctx.plan.task_name)):  # a VecTask class: nothing of ours
            warm = build()
            warm.compile_programs()
            warm.close()
    finally:
        gate.open()
