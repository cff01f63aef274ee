"""The suite on two workers (``pytest -n 2 --dist loadgroup``, what ``make test`` runs): the
machine idles while one test waits on its processes, compiles on one core or imports, so a
second test runs beside it; tests that must have the machine to themselves run alone, at the
end.

- **Work units.** A test file is one unit (its module fixtures are made once); so is every set
  of tests that reads one of :data:`SHARED` (the session's costly fixtures: the env cache with
  its compiled MJX steps, the shared trained runs), across files.
- **Alone** (``@pytest.mark.serial``): a test whose outcome depends on timing or on the whole
  machine: detection windows and stop latencies, processes' relative speed (async learning,
  PBT's decisions, a sweep's slots), ``/dev/shm`` as a whole. Its unit is run only while no
  other test runs; these units come last.

Without ``-n`` nothing changes: the marks only name the units.
"""

from __future__ import annotations

import pytest

SHARED = ("shared_env", "ant_one_gmi")  # session fixtures worth making once
SERIAL = "serial/"  # prefix of a unit that runs alone


@pytest.hookimpl(tryfirst=True)  # before xdist names each test after its unit
def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(True for _ in item.iter_markers("xdist_group")):
            continue
        shared = [name for name in SHARED if name in item.fixturenames]
        path = item.nodeid.split("::")[0].removeprefix("tests/").removesuffix(".py")
        unit = shared[0] if shared else path
        if item.get_closest_marker("serial") is not None:
            unit = SERIAL + unit
        item.add_marker(pytest.mark.xdist_group(unit))


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class UnitsThenAlone(LoadGroupScheduling):
        """xdist's grouped scheduling, with the units that run alone held back until the
        others are done, then given out one at a time to an idle machine."""

        def schedule(self) -> None:
            if self.collection is None:
                if not self._check_nodes_have_same_collection():
                    self.log("**Different tests collected, aborting run**")
                    return
                self.collection = list(next(iter(self.registered_collections.values())))
                units: dict[str, dict[str, bool]] = {}
                for nodeid in self.collection:
                    units.setdefault(self._split_scope(nodeid), {})[nodeid] = False
                alone = [u for u in units if u.startswith(SERIAL)]
                for unit in [u for u in units if u not in alone] + alone:
                    self.workqueue[unit] = units[unit]
            for node in self.nodes:
                self._reschedule(node)

        def _reschedule(self, node) -> None:
            if not node.shutting_down and self.workqueue:
                head = next(iter(self.workqueue))
                if head.startswith(SERIAL):
                    if not any(self._pending_of(self.assigned_work[n]) for n in self.nodes):
                        self._assign_work_unit(node)
                elif self._pending_of(self.assigned_work[node]) <= 2:
                    self._assign_work_unit(node)
            if not self.workqueue:  # nothing left to give: each worker ends after its last
                for other in self.nodes:
                    if not other.shutting_down:
                        other.shutdown()

    return UnitsThenAlone(config, log)
