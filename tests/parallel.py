"""The suite on several workers (``make test TEST_WORKERS=N``, i.e. ``pytest -n N --dist
loadgroup``): a second test runs while one waits on its processes, compiles on one core or
imports; tests that must have the machine to themselves run alone, at the end. On the 2-core
reference machine it does not pay (docs/testing.md: the suite's tests mostly keep both cores
busy already), so ``make test`` runs in one process.

- **Work units.** A test file is one unit (its module fixtures are made once); so is every set
  of tests that reads one of :data:`SHARED` (the session's costly fixtures: the env cache with
  its compiled MJX steps, the shared trained runs), across files.
- **Alone** (``@pytest.mark.serial``): a test whose outcome depends on timing or on the whole
  machine: detection windows and stop latencies, processes' relative speed (async learning,
  PBT's decisions, a sweep's slots), ``/dev/shm`` as a whole. Its unit is run only while no
  other test runs; these units come last.

Each worker writes the units of the tests it collected to a file the scheduler reads (xdist's
own ``xdist_group`` marks no longer reach it: pytest 9 ignores the suffix xdist adds to a test's
id). Without ``-n`` nothing changes.
"""

from __future__ import annotations

import json
import os
import tempfile

import pytest

SHARED = ("shared_env", "ant_one_gmi")  # session fixtures worth making once
SERIAL = "serial/"  # prefix of a unit that runs alone


UNITS_FILE = "gmi_units_file"  # the key of a worker's input naming its units file


def unit_of(item: pytest.Item) -> str:
    """The work unit of one test: its shared fixture, else its file (``tests/`` and ``.py``
    left off); ``serial/...`` when it runs alone."""
    shared = [name for name in SHARED if name in item.fixturenames]
    path = item.nodeid.split("::")[0].removeprefix("tests/").removesuffix(".py")
    unit = shared[0] if shared else path
    return SERIAL + unit if item.get_closest_marker("serial") is not None else unit


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """Name the file in which this worker tells its units (the session's temp dir)."""
    node.workerinput[UNITS_FILE] = os.path.join(
        tempfile.gettempdir(), f"units-{node.gateway.id}.json"
    )


@pytest.hookimpl(trylast=True)  # after every other plugin has chosen, ordered and marked
def pytest_collection_modifyitems(config, items):
    path = getattr(config, "workerinput", {}).get(UNITS_FILE)
    if path is None:
        return
    with open(path + ".part", "w") as f:
        json.dump({item.nodeid: unit_of(item) for item in items}, f)
    os.replace(path + ".part", path)  # read once every worker has said what it collected


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class UnitsThenAlone(LoadGroupScheduling):
        """xdist's grouped scheduling, the units that run alone held back to the end: then
        every worker but the busiest ends after its tests, and once they are gone the busiest
        one is given all of them.

        A worker holds back its last test until it is sent more or told to end (it needs the
        next test to tear fixtures down), so waiting for it to go idle would wait forever."""

        units: dict[str, str] = {}  # test id -> its unit, as the workers wrote them

        def schedule(self) -> None:
            if self.collection is None:
                if not self._check_nodes_have_same_collection():
                    self.log("**Different tests collected, aborting run**")
                    return
                first = next(iter(self.registered_collections))
                self.collection = list(self.registered_collections[first])
                with open(first.workerinput[UNITS_FILE]) as f:
                    self.units = json.load(f)
                units: dict[str, dict[str, bool]] = {}
                for nodeid in self.collection:
                    units.setdefault(self._split_scope(nodeid), {})[nodeid] = False
                shared = sorted(
                    (u for u in units if not u.startswith(SERIAL)), key=lambda u: -len(units[u])
                )  # big units first
                for unit in shared + [u for u in units if u.startswith(SERIAL)]:
                    self.workqueue[unit] = units[unit]
                for node in self.nodes:  # one unit each first
                    if self._shared_next():
                        self._assign_work_unit(node)
            for node in self.nodes:
                self._reschedule(node)

        def _split_scope(self, nodeid: str) -> str:
            return self.units.get(nodeid, nodeid)

        def _shared_next(self) -> bool:
            return bool(self.workqueue) and not next(iter(self.workqueue)).startswith(SERIAL)

        def remove_node(self, node):
            crashed = super().remove_node(node)
            for other in self.nodes:  # a worker waiting for this one to end goes on
                self._reschedule(other)
            return crashed

        def _reschedule(self, node) -> None:
            if node.shutting_down:
                return
            while self._shared_next() and self._pending_of(self.assigned_work[node]) <= 2:
                self._assign_work_unit(node)
            if not self.workqueue:
                node.shutdown()
                return
            if self._shared_next():
                return
            live = [n for n in self.nodes if not n.shutting_down]
            keep = max(live, key=lambda n: self._pending_of(self.assigned_work[n]))
            for other in live:
                if other is not keep:
                    other.shutdown()
            if any(self._pending_of(self.assigned_work[n]) for n in self.nodes if n is not keep):
                return  # remove_node calls again when they have ended
            while self.workqueue:
                self._assign_work_unit(keep)
            keep.shutdown()

    return UnitsThenAlone(config, log)
