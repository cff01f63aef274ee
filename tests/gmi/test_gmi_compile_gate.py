"""Which GMI of a device compiles for the others: the first that builds envs (every GMI in sync
and serve mode, the actors in async mode); no gate where fewer than two build on a device,
without a compile cache, or under torchrun."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from isaacgymenvs_gmi.gmi.compile_gate import CompileGate
from isaacgymenvs_gmi.placement.layout import GmiLayout

TWO_DEVICES = GmiLayout(num_nodes=1, devices_per_node=2, per_device=3)  # ranks 0-2, 3-5


@dataclass
class Group:
    rank: int
    startup_timeout_s: float = 300.0


def _gate(rank: int, builders=None, cache: str = "auto", torchrun: bool = False, scratch="/s/x"):
    plan = SimpleNamespace(
        layout=TWO_DEVICES,
        under_torchrun=torchrun,
        gmi=SimpleNamespace(compile_cache=cache),
    )
    ctx = SimpleNamespace(plan=plan, group=Group(rank), scratch_dir=scratch)
    return CompileGate.of(ctx, builders)


def test_the_first_gmi_of_each_device_opens_its_gate():
    gates = [_gate(rank) for rank in range(6)]
    assert [g.opener for g in gates] == [True, False, False, True, False, False]
    assert {str(g.path) for g in gates[:3]} == {"/s/compiled-device0"}
    assert {str(g.path) for g in gates[3:]} == {"/s/compiled-device1"}


def test_async_the_first_actor_of_a_device_opens_and_trainers_have_no_gate():
    actors = range(1, 6)  # GMI 0 trains
    gates = [_gate(rank, actors) for rank in range(6)]
    assert gates[0] is None  # builds no env: waits for nothing, opens nothing
    assert [g.opener for g in gates[1:]] == [True, False, True, False, False]
    # a device where only one GMI plays needs no gate
    assert _gate(2, builders=(2, 3, 4, 5)) is None


def test_no_gate_without_a_cache_under_torchrun_or_without_a_run_folder():
    assert _gate(1, cache="off") is None
    assert _gate(1, torchrun=True) is None
    assert _gate(1, scratch=None) is None
