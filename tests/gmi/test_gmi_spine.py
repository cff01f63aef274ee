"""The spine for any mode: one process and spawned GMIs reach a body the same way, and the
mode-neutral group works across real processes (gloo)."""

from __future__ import annotations

import pytest
import torch

from isaacgymenvs_gmi.gmi.faults import (
    CORRUPTION,
    FAULT_ENV,
    epoch_hook,
    fault_from_env,
    gradient_hook,
    no_fault,
)
from isaacgymenvs_gmi.gmi.spawn import spawn_gmis
from isaacgymenvs_gmi.gmi.worker import run_in_process
from isaacgymenvs_gmi.launch import plan_run
from tests.gmi.probe_bodies import describe_context, exercise_group

NO_GPU = (False, ("cpu",), False)


def test_one_process_runs_the_body_unbound_without_a_group(compose_cfg):
    plan = plan_run(compose_cfg("task=Cartpole", "sim_device=cpu"), platform=NO_GPU)
    seen = run_in_process(plan, describe_context)
    assert seen["rank"] == 0 and seen["world"] is None and not seen["scratch_is_dir"]
    assert seen["cores"] == seen["affinity"]  # the process keeps all it had
    assert seen["mode"] == "sync" and seen["sim_device"] == "cpu"


def test_spawned_gmis_are_bound_joined_and_share_a_working_group(compose_cfg):
    plan = plan_run(compose_cfg("task=Cartpole", "gmi.per_gpu=2"), platform=NO_GPU)
    seen = spawn_gmis(plan, exercise_group)  # GMI 0's return value
    assert seen["rank"] == 0 and seen["world"] == 2 and seen["scratch_is_dir"]
    assert seen["cores"] == seen["affinity"]  # bound to its own core set
    assert seen["gathered"] == [[0, 0], [1, 10]]  # GMI order
    assert seen["mean"] == 1.5
    assert seen["sum"] == [3.0, 2.0]
    torch.manual_seed(0)
    assert seen["weights"] == torch.nn.Linear(3, 2).weight.detach().flatten().tolist()
    assert seen["drift_detected"]  # a replica that differs in one value is caught
    assert seen["no_stop"] is None and seen["stop"] == 15  # every GMI learns of GMI 1's signal
    assert seen["store_is_signed"]


def test_fault_requests_parse_and_fire_only_on_their_gmi_and_epoch():
    assert fault_from_env({}) is None
    assert epoch_hook(0, {}) is no_fault
    env = {FAULT_ENV: "1:crash:3"}
    assert epoch_hook(0, env) is no_fault  # someone else's fault
    hook = epoch_hook(1, env)
    hook(2)  # not yet
    with pytest.raises(RuntimeError, match="injected crash in GMI 1"):
        hook(3)
    for bad in ("1:explode:3", "x:crash:3", "1:crash"):
        with pytest.raises(ValueError, match=FAULT_ENV):
            fault_from_env({FAULT_ENV: bad})


def test_a_gradient_corruption_scales_the_largest_gradient_in_its_epoch_only():
    corrupt = {FAULT_ENV: "1:corrupt:3"}
    assert gradient_hook(0, corrupt) is None and epoch_hook(1, corrupt) is no_fault
    assert gradient_hook(1, {FAULT_ENV: "1:crash:3"}) is None
    params = [torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(5))]
    for p in params:
        p.grad = torch.ones_like(p)
    hook = gradient_hook(1, corrupt)
    hook(2, params)
    assert all(torch.equal(p.grad, torch.ones_like(p)) for p in params)
    hook(3, params)
    assert torch.equal(params[0].grad, torch.ones(2))
    assert torch.equal(params[1].grad, torch.full((5,), CORRUPTION))
