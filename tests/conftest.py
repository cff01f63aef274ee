"""Shared fixtures: composing the project's Hydra config tree, and a task + train pair written
the way IsaacGymEnvs writes them (found through ``hydra.searchpath``)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import Hydra14MigrationWarning
from omegaconf import DictConfig

from isaacgymenvs_gmi.config import register_resolvers
from tests.session_temp import SessionTemp

CFG_DIR = Path(__file__).resolve().parents[1] / "cfg"

# Fixtures for every test folder: task configs, a session-wide env cache, restart/step (env
# fixtures); nothing_may_start, the guard of the before-start tests; runs trained once a session;
# the work units of make test's two workers
pytest_plugins = [
    "tests.env_fixtures",
    "tests.nothing_starts",
    "tests.shared_runs",
    "tests.parallel",
]

Compose = Callable[..., DictConfig]


def compose_config(*overrides: str, config_dir: Path = CFG_DIR) -> DictConfig:
    """The composed top-level config, with ``version_base="1.1"`` like the training entry
    point (upstream behaviour)."""
    register_resolvers()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Hydra14MigrationWarning)
        with initialize_config_dir(config_dir=str(config_dir), version_base="1.1"):
            return compose(config_name="config", overrides=list(overrides))


@pytest.fixture
def compose_cfg() -> Compose:
    """``compose_cfg(*overrides, config_dir=CFG_DIR)`` -> the composed top-level config."""
    return compose_config


# --- a task + train pair in upstream style (resolvers, PhysX blocks, relative interpolations)
MY_TASK = """\
name: MyCartpole
physics_engine: ${..physics_engine}
env:
  numEnvs: ${resolve_default:256,${...num_envs}}
  envSpacing: 4.0
  resetDist: 3.0
  maxEffort: 400.0
  clipObservations: 5.0
  clipActions: 1.0
  asset:
    assetRoot: "../../assets"
    assetFileName: "urdf/cartpole.urdf"
  enableCameraSensors: False
sim:
  dt: 0.0166
  substeps: 2
  up_axis: "z"
  use_gpu_pipeline: ${eq:${...pipeline},"gpu"}
  gravity: [0.0, 0.0, -9.81]
  physx:
    num_threads: ${....num_threads}
    solver_type: ${....solver_type}
    use_gpu: ${contains:"cuda",${....sim_device}}
    num_position_iterations: 4
    num_velocity_iterations: 0
    num_subscenes: ${....num_subscenes}
    contact_collection: 0
task:
  randomize: False
"""

MY_TRAIN = """\
params:
  seed: ${...seed}
  algo:
    name: a2c_continuous
  model:
    name: continuous_a2c_logstd
  network:
    name: actor_critic
    separate: False
    space:
      continuous:
        mu_activation: None
        sigma_activation: None
        mu_init:
          name: default
        sigma_init:
          name: const_initializer
          val: 0
        fixed_sigma: True
    mlp:
      units: [16, 16]
      activation: elu
      initializer:
        name: default
      regularizer:
        name: None
  load_checkpoint: ${if:${...checkpoint},True,False}
  load_path: ${...checkpoint}
  config:
    name: ${resolve_default:MyCartpole,${....experiment}}
    full_experiment_name: ${.name}
    env_name: rlgpu
    multi_gpu: ${....multi_gpu}
    ppo: True
    num_actors: ${....task.env.numEnvs}
    mixed_precision: False
    normalize_input: True
    normalize_value: True
    reward_shaper:
      scale_value: 0.1
    normalize_advantage: True
    gamma: 0.99
    tau: 0.95
    learning_rate: 3e-4
    lr_schedule: adaptive
    kl_threshold: 0.008
    score_to_win: 20000
    save_best_after: 50
    save_frequency: 25
    grad_norm: 1.0
    entropy_coef: 0.0
    truncate_grads: True
    e_clip: 0.2
    critic_coef: 4
    clip_value: True
    seq_len: 4
    bounds_loss_coef: 0.0001
    max_epochs: ${resolve_default:30,${....max_iterations}}
    defer_summaries_sec: ${if:${....pbt.enabled},240,5}
    horizon_length: 16
    minibatch_size: 1024
    mini_epochs: 8
"""

# A task that extends another through its own defaults list, as some upstream tasks do.
MY_TASK_VARIANT = """\
defaults:
  - MyCartpole
  - _self_
name: MyCartpoleVariant
env:
  numEnvs: ${resolve_default:128,${...num_envs}}
"""


@pytest.fixture
def upstream_dir(tmp_path: Path) -> Path:
    (tmp_path / "task").mkdir()
    (tmp_path / "train").mkdir()
    (tmp_path / "task" / "MyCartpole.yaml").write_text(MY_TASK)
    (tmp_path / "task" / "MyCartpoleVariant.yaml").write_text(MY_TASK_VARIANT)
    (tmp_path / "train" / "MyCartpolePPO.yaml").write_text(MY_TRAIN)
    (tmp_path / "train" / "MyCartpoleVariantPPO.yaml").write_text(MY_TRAIN)
    return tmp_path


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` need CUDA and NVML; without them they are skipped, not failed."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# --- the suite itself must leave nothing behind in the temp dir or /dev/shm ----------------
_SESSION_TEMP: list[SessionTemp] = []  # the session's own temp dir (tests/session_temp.py)
_STARTED: list[float] = []  # when the session started (monotonic seconds)
_GIVEN: set[str] = set()  # variables of the session's environment the user set


SESSION_ENV = "GMI_TEST_SESSION"  # marks the processes this test session starts


def pytest_configure(config):
    """Give the session its own temp dir, before anything compiles. Measure the machine once,
    before any test: every wait in the suite scales with it. Mark this session, so that checks
    for processes it left behind ignore another suite's."""
    import os
    import uuid

    from tests import speed

    _STARTED.append(time.monotonic())
    _GIVEN.update(k for k in (speed.ENV,) if k in os.environ)
    _SESSION_TEMP.append(SessionTemp.enter())
    _compile_mjx_unoptimised()
    speed.calibrate()
    if hasattr(config, "workerinput"):  # a worker of make test's two: its processes are its own
        os.environ[SESSION_ENV] = uuid.uuid4().hex
    os.environ.setdefault(SESSION_ENV, uuid.uuid4().hex)


XLA_TEST_FLAG = "--xla_backend_optimization_level=0"


def _compile_mjx_unoptimised() -> None:
    """The session's XLA programs (MJX's steps, in this process and the ones it starts) compile
    without LLVM's optimisations: up to a third less time for the suite's MJX tests, which
    compile far more than they run, with the same results (XLA's CPU code uses no fast-math).
    Speed is measured in ``bench/``, with XLA's defaults. A level in the user's ``XLA_FLAGS``
    wins."""
    import os

    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_backend_optimization_level" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {XLA_TEST_FLAG}".strip()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Every test starts from the session's environment: a run made in this process sets
    variables for the GMIs it starts (its seed, the compile cache) that must not reach the
    processes of the tests after it."""
    import os

    saved = dict(os.environ)
    yield
    if dict(os.environ) != saved:
        os.environ.clear()
        os.environ.update(saved)


def pytest_report_header(config):
    from tests import speed

    return f"machine speed factor {speed.factor():.2f} (waits scale by it; {speed.ENV} overrides)"


def pytest_terminal_summary(terminalreporter):
    """The suite's size, for the record (docs/testing.md): its wall time, the machine-speed
    factor, and the time normalised to factor 1 (the reference machine)."""
    from tests import speed, warm_start

    wall, start = time.monotonic() - _STARTED[0], speed.factor()
    given = speed.ENV in _GIVEN  # set by the user: the same at the end
    end = start if given else speed.measure()
    factor = (start + end) / 2
    terminalreporter.write_line(
        f"machine speed factor {factor:.2f} (at the start {start:.2f}, at the end {end:.2f})"
    )
    terminalreporter.write_line(
        f"suite wall time {wall:.0f} s at machine speed factor {factor:.2f}: "
        f"{wall / factor:.0f} s normalised to factor 1"
    )
    started = warm_start.STARTED
    terminalreporter.write_line(
        f"train.py runs started warm {started['warm']}, cold {started['cold']}"
    )
    if warm_start.lost():
        terminalreporter.write_line(warm_start.lost())


def pytest_testnodedown(node, error):
    """A worker's warm and cold starts, counted with the others'."""
    from tests import warm_start

    for kind, count in getattr(node, "workeroutput", {}).get("warm_start", {}).items():
        warm_start.STARTED[kind] += count


def pytest_sessionfinish(session, exitstatus):
    """Fail the session if runs started by the tests left temp files or segments behind."""
    from tests import warm_start

    warm_start.stop()
    if hasattr(session.config, "workeroutput"):  # told to the session that started this one
        session.config.workeroutput["warm_start"] = dict(warm_start.STARTED)
    temp = _SESSION_TEMP[0]
    left = temp.leftovers(shared_memory=not hasattr(session.config, "workerinput"))
    temp.remove()
    if left:
        print(f"\nleft behind in the temp dir by this test session: {left}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
