"""The torch <-> JAX hand-off rule (sim/handoff.py): every exchanged buffer is ours and held until
its consumer has passed it, released oldest first, never earlier. Stand-ins play the parts a CPU
cannot (a GPU stream's event, a step still running); the env-level tests use the real MJX
backend on the CPU."""

from __future__ import annotations

import gc
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from isaacgymenvs_gmi.sim import handoff
from isaacgymenvs_gmi.sim.handoff import HandOffs, Held, HoldLedger

CPU = torch.device("cpu")


class Running:
    """A step's outputs as JAX would report them: not ready until ``finish()``."""

    def __init__(self):
        self.ready, self.waited = False, False

    def is_ready(self) -> bool:
        return self.ready

    def block_until_ready(self):
        self.waited = self.ready = True
        return self

    def finish(self) -> None:
        self.ready = True


class StreamEvent:
    """A torch CUDA event recorded after the copy: passed once the stream gets there."""

    made: list[StreamEvent] = []

    def __init__(self):
        self.passed, self.waited = False, False
        StreamEvent.made.append(self)

    def query(self) -> bool:
        return self.passed

    def synchronize(self) -> None:
        self.waited = self.passed = True


def alive(ref: weakref.ref) -> bool:
    gc.collect()
    return ref() is not None


def test_actions_are_held_until_the_step_reading_them_has_finished():
    offs = HandOffs(CPU)
    owned = []
    steps = [Running(), Running()]
    for outputs in steps:
        view = offs.actions_to_jax(torch.rand(4, 2))
        owned.append(weakref.ref(offs._exported[0]))
        del view
        offs.stepped(outputs)
    assert offs.ledger.held == ["actions 1", "actions 2"]
    assert alive(owned[0]) and alive(owned[1])
    steps[0].finish()
    offs.ledger.release_passed()
    assert offs.ledger.held == ["actions 2"]
    assert not alive(owned[0]) and alive(owned[1])  # torch may reuse step 1's memory now


def test_a_later_hand_off_that_passed_does_not_release_an_earlier_one():
    ledger = HoldLedger()
    first, second = Running(), Running()
    ledger.hold(Held("first", (), first.is_ready, first.block_until_ready))
    ledger.hold(Held("second", (), second.is_ready, second.block_until_ready))
    second.finish()
    ledger.release_passed()
    assert ledger.held == ["first", "second"]
    first.finish()
    ledger.release_passed()
    assert ledger.held == []


def test_past_the_limit_the_oldest_is_waited_for_and_close_waits_for_all():
    ledger = HoldLedger(limit=2)
    runs = [Running() for _ in range(3)]
    for i, run in enumerate(runs):
        ledger.hold(Held(f"step {i}", (), run.is_ready, run.block_until_ready))
    assert runs[0].waited and not runs[1].waited
    assert ledger.held == ["step 1", "step 2"]
    ledger.drain()
    assert ledger.held == [] and all(r.waited for r in runs)


def test_outputs_are_copied_and_held_until_torchs_stream_passed_the_copy():
    offs = HandOffs(CPU, copy_outputs=True, record_event=StreamEvent)
    out = jnp.arange(12.0, dtype=jnp.float32).reshape(4, 3)
    pointer, jax_ref = out.unsafe_buffer_pointer(), weakref.ref(out)
    seen = offs.to_torch(out)
    del out
    assert seen.data_ptr() != pointer  # torch's own memory, not JAX's
    np.testing.assert_array_equal(seen.numpy(), np.arange(12.0).reshape(4, 3))
    assert offs.ledger.held == ["outputs 0"] and alive(jax_ref)
    offs.to_torch(jnp.zeros(3))  # the next hand-off: the first copy's event has not passed
    assert offs.ledger.held == ["outputs 0", "outputs 0"] and alive(jax_ref)
    StreamEvent.made[-2].passed = True
    offs.ledger.release_passed()
    assert offs.ledger.held == ["outputs 0"] and not alive(jax_ref)  # JAX may reuse it now
    offs.close()
    assert StreamEvent.made[-1].waited and offs.ledger.held == []


def test_the_callers_actions_are_not_what_jax_reads():
    actions = torch.rand(4, 2)
    expected = actions.clone()
    view = HandOffs(CPU).actions_to_jax(actions)
    assert view.unsafe_buffer_pointer() != actions.data_ptr()
    actions.fill_(float("nan"))  # the learner reuses its tensor while the step may still run
    np.testing.assert_array_equal(np.asarray(view), expected.numpy())
    bare = HandOffs(CPU, bare=True).actions_to_jax(actions)  # the bisection's unheld hand-off
    assert bare.unsafe_buffer_pointer() == actions.data_ptr()


def test_debug_sync_waits_for_the_device_at_every_hand_off(monkeypatch):
    calls = []
    monkeypatch.setattr(handoff, "sync_devices", lambda: calls.append("device"))
    offs = HandOffs(CPU, sync=True, copy_outputs=True, record_event=StreamEvent)
    offs.actions_to_jax(torch.zeros(4, 2))
    outputs = jnp.ones((4, 3)) * 2
    offs.stepped(outputs)
    assert outputs.is_ready()
    offs.to_torch(outputs)
    assert calls == ["device", "device"]


def test_sync_devices_waits_for_jaxs_programs(monkeypatch):
    """It waits for every live array, the program's output among them (whether or not the
    program has finished by then on this CPU)."""
    x = jax.jit(lambda a: jnp.linalg.matrix_power(a @ a.T / 512, 6))(jnp.ones((512, 512)))
    waited, wait = [], jax.block_until_ready
    monkeypatch.setattr(handoff.jax, "block_until_ready", lambda xs: waited.append(xs) or wait(xs))
    handoff.sync_devices()
    assert len(waited) == 1
    assert x.unsafe_buffer_pointer() in {a.unsafe_buffer_pointer() for a in waited[0]}
    assert x.is_ready()


@pytest.mark.parametrize("sync", [False, True])
def test_an_mjx_env_holds_one_steps_actions_and_steps_the_same_with_sync(
    sync, shared_env, restart_env
):
    env = shared_env("Cartpole", "mjx")
    restart_env(env)
    env.handoffs.sync = sync
    try:
        seen = []
        for step in range(5):
            actions = torch.full((env.num_envs, env.num_actions), 0.1 * step)
            obs = env.step(actions)[0]["obs"].clone()
            seen.append(obs)
            # the step's outputs were adopted (ready): at most this step's actions are held
            # (released at once where the step had finished before the hold)
            assert env.handoffs.ledger.held in ([], [f"actions {env.handoffs._step}"])
    finally:
        env.handoffs.sync = False
    restart_env(env)
    for step in range(5):
        actions = torch.full((env.num_envs, env.num_actions), 0.1 * step)
        torch.testing.assert_close(env.step(actions)[0]["obs"], seen[step], rtol=0, atol=0)
