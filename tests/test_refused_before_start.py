"""Every bad input is refused before anything starts, naming the key: the whole entry path runs
(plan, then run) with process and simulator creation made to fail the test if reached."""

from __future__ import annotations

from pathlib import Path

import pytest

from isaacgymenvs_gmi import launch, planner
from isaacgymenvs_gmi.config import ConfigError

ROOT = Path(__file__).resolve().parents[1]
NO_GPU = (False, ("cpu",), False)

BAD_INPUTS = [
    # task and its keys
    (["task=Ant", "task.name=NoSuchTask"], "task"),
    (["task=Cartpole", "~task.env.maxEffort"], "task.env.maxEffort"),
    (["task=Ant", "~task.env.headingWeight"], "task.env.headingWeight"),
    (["task=Ant", "task.env.headingWeight=abc"], "task.env.headingWeight"),
    (["task=Cartpole", "task.env.resetDist=abc"], "task.env.resetDist"),
    (["task=Ant", "~task.sim.dt"], "task.sim.dt"),
    (["task=Ant", "task.sim.dt=-1"], "task.sim.dt"),
    (["task=Ant", "task.sim.substeps=0"], "task.sim.substeps"),
    (["task=Ant", "task.env.controlFrequencyInv=0"], "task.env.controlFrequencyInv"),
    (["task=Ant", "task.env.episodeLength=0"], "task.env.episodeLength"),
    (["task=Ant", "task.env.episodeLength=abc"], "task.env.episodeLength"),
    (["task=Ant", "assets_root=/nonexistent-assets"], "assets_root"),
    # sizes and limits
    (["task=Ant", "num_envs=abc"], "task.env.numEnvs"),
    (["task=Ant", "num_envs=0"], "task.env.numEnvs"),
    (["task=Ant", "num_envs=-5"], "task.env.numEnvs"),
    (["task=Ant", "num_envs=1000000000"], "num_envs"),
    (["task=Ant", "gmi.per_gpu=1000"], "gmi.per_gpu"),
    (["task=Ant", "gmi.per_gpu=0"], "gmi.per_gpu"),
    (["task=Ant", "gmi.per_gpu=abc"], "gmi.per_gpu"),
    (["task=Ant", "max_iterations=abc"], "max_iterations"),
    (["task=Ant", "max_iterations=0"], "max_iterations"),
    (["task=Ant", "max_iterations=-3"], "max_iterations"),
    (["task=Ant", "train.params.config.max_epochs=abc"], "train.params.config.max_epochs"),
    (["task=Ant", "train.params.config.horizon_length=0"], "train.params.config.horizon_length"),
    (["task=Ant", "train.params.config.minibatch_size=1000"], "train.params.config.minibatch_size"),
    (["task=Ant", "train.params.config.mini_epochs=0"], "train.params.config.mini_epochs"),
    # PPO numbers
    (["task=Ant", "train.params.config.learning_rate=-1"], "train.params.config.learning_rate"),
    (["task=Ant", "train.params.config.learning_rate=abc"], "train.params.config.learning_rate"),
    (["task=Ant", "train.params.config.gamma=5"], "train.params.config.gamma"),
    (["task=Ant", "train.params.config.tau=2"], "train.params.config.tau"),
    (["task=Ant", "train.params.config.e_clip=-1"], "train.params.config.e_clip"),
    (["task=Ant", "train.params.config.entropy_coef=-1"], "train.params.config.entropy_coef"),
    (["task=Ant", "train.params.config.critic_coef=abc"], "train.params.config.critic_coef"),
    (["task=Ant", "train.params.config.grad_norm=-1"], "train.params.config.grad_norm"),
    (["task=Ant", "+train.params.config.games_to_track=0"], "train.params.config.games_to_track"),
    (["task=Ant", "+train.params.config.seq_length=abc"], "train.params.config.seq_length"),
    (["task=Ant", "train.params.config.schedule_type=std"], "train.params.config.schedule_type"),
    (
        ["task=Ant", "+train.params.config.bound_loss_type=clip"],
        "train.params.config.bound_loss_type",
    ),
    (
        ["task=Ant", "+train.params.config.adv_rms_momentum=2"],
        "train.params.config.adv_rms_momentum",
    ),
    (
        ["task=Ant", "+train.params.config.epochs_between_resets=-1"],
        "train.params.config.epochs_between_resets",
    ),
    (["task=Ant", "train.params.config.kl_threshold=-1"], "train.params.config.kl_threshold"),
    (["task=Ant", "train.params.config.lr_schedule=foo"], "train.params.config.lr_schedule"),
    (["task=Ant", "train.params.config.save_frequency=abc"], "train.params.config.save_frequency"),
    (["task=Ant", "train.params.config.score_to_win=abc"], "train.params.config.score_to_win"),
    (
        ["task=Ant", "train.params.config.bounds_loss_coef=abc"],
        "train.params.config.bounds_loss_coef",
    ),
    # names rl-games looks up, and the values it reads as numbers or switches
    (["task=Ant", "train.params.algo.name=bogus"], "train.params.algo.name"),
    (["task=Ant", "train.params.model.name=bogus"], "train.params.model.name"),
    (["task=Ant", "train.params.network.name=bogus"], "train.params.network.name"),
    (
        ["task=Ant", "train.params.network.mlp.activation=bogus"],
        "train.params.network.mlp.activation",
    ),
    (
        ["task=Ant", "train.params.config.reward_shaper.scale_value=abc"],
        "train.params.config.reward_shaper.scale_value",
    ),
    (
        ["task=Ant", "train.params.config.normalize_input=abc"],
        "train.params.config.normalize_input",
    ),
    # top-level keys
    (["task=Ant", "seed=abc"], "seed"),
    (["task=Ant", "seed=1.5"], "seed"),
    (["task=Ant", "seed=-7"], "seed"),
    (["task=Ant", f"seed={2**32}"], "seed"),  # beyond numpy's seeds
    (["task=Ant", f"seed={2**70}"], "seed"),
    (["task=Ant", f"seed={2**32 - 1}", "gmi.per_gpu=2"], "seed"),  # GMI 1 would seed 2**32
    (["task=Ant", "experiment=" + "a" * 300], "experiment"),  # no such folder name
    (["task=Ant", "train_dir=/proc/no-runs-here"], "train_dir"),  # nothing can be made there
    (["task=Ant", f"train_dir={ROOT / 'README.md'}"], "train_dir"),  # a file
    (["task=Ant", f"train_dir={ROOT / 'README.md' / 'runs'}"], "train_dir"),  # under a file
    (["task=Ant", "train_dir=/" + "d" * 300], "train_dir"),  # a name too long
    (["task=Ant", "gmi.mode=serve", "serve.record=/proc/no-recording"], "serve.record"),
    (["task=Ant", "gmi.mode=serve", f"serve.record={ROOT / 'README.md'}"], "serve.record"),
    # a mode's own settings set in another mode would change nothing
    (["task=Ant", "serve.steps=10"], "serve.steps"),
    (["task=Ant", "gmi.async.max_lag=3"], "gmi.async.max_lag"),
    (["task=Ant", "gmi.mode=serve", "gmi.async.max_lag=-1"], "gmi.async.max_lag"),
    (["task=Ant", "experiment=../../x"], "experiment"),
    (["task=Ant", "experiment=a/b"], "experiment"),
    (["task=Ant", "experiment=/abs"], "experiment"),
    (["task=Ant", "+full_experiment_name=../x"], "full_experiment_name"),
    (["task=Ant", "train_dir="], "train_dir"),
    (["task=Ant", "torch_deterministic=maybe"], "torch_deterministic"),
    (["task=Ant", "test=maybe"], "test"),
    (["task=Ant", "test=True"], "checkpoint"),
    (["task=Ant", "checkpoint=/nonexistent.pth"], "checkpoint"),
    (["task=Ant", "sigma=abc"], "sigma"),
    (["task=Ant", "sim_device=tpu"], "sim_device"),
    (["task=Ant", "rl_device=banana"], "rl_device"),
    (["task=Ant", "sim_backend=physx"], "sim_backend"),
    # GMI settings
    (["task=Ant", "gmi.sm_percent=[50]"], "gmi.sm_percent"),
    (["task=Ant", "gmi.timeout_s=0"], "gmi.timeout_s"),
    (["task=Ant", f"gmi.timeout_s={10**15}"], "gmi.timeout_s"),
    (["task=Ant", "gmi.mode=async"], "gmi.mode"),
    (["task=Ant", "gmi.mode=a3c"], "gmi.mode"),
    (["task=Ant", "gmi.comm=fast"], "gmi.comm"),
    (["task=Ant", "gmi.backend=tpu"], "gmi.backend"),
    (["task=Ant", "gmi.num_gpus=64"], "gmi.num_gpus"),
    (["task=Ant", "gmi.per_gpu=2", "gmi.intra_device=ipc"], "gmi.intra_device"),
    # population-based training
    (["task=Ant", "pbt=pbt_default", "gmi.per_gpu=3", "pbt.num_policies=4"], "pbt.num_policies"),
    (["task=Ant", "pbt=pbt_default", "gmi.per_gpu=3", "pbt.num_policies=1"], "pbt.num_policies"),
    (["task=Ant", "pbt=pbt_default"], "gmi.per_gpu"),  # one GMI: no population
    (["task=Ant", "pbt=pbt_default", "gmi.per_gpu=3", "gmi.mode=async"], "gmi.mode"),
    (["task=Ant", "pbt=pbt_default", "gmi.per_gpu=3", "gmi.mode=serve"], "gmi.mode"),
    (["task=Ant", "gmi.mode=pbt", "gmi.per_gpu=3"], "pbt.enabled"),
    (
        ["task=Ant", "pbt=pbt_default", "gmi.per_gpu=3", "pbt.replace_fraction_worst=0"],
        "pbt.replace_fraction_worst",
    ),  # fmt: skip
    (
        ["task=Ant", "pbt=pbt_default", "gmi.per_gpu=3", "pbt.replace_fraction_best=1.5"],
        "pbt.replace_fraction_best",
    ),  # fmt: skip
    (
        [
            "task=Ant",
            "pbt=pbt_default",
            "gmi.per_gpu=3",
            "+pbt.mutation={train.params.config.gamma: mutate_gently}",
        ],
        "pbt.mutation.train.params.config.gamma",
    ),  # fmt: skip
    (
        [
            "task=Ant",
            "pbt=pbt_default",
            "gmi.per_gpu=3",
            "+pbt.mutation={train.params.config.no_such_key: mutate_float}",
        ],
        "pbt.mutation.train.params.config.no_such_key",
    ),  # fmt: skip
    (["task=Ant", "pbt=pbt_default", "gmi.per_gpu=3", "+pbt.num_workers=2"], "pbt.num_workers"),
    # domain randomisation: an actor the task does not have, a property MuJoCo lacks the name of
    (
        [
            "task=Ant",
            "task.task.randomize=True",
            "+task.task.randomization_params.actor_params"
            ".robot.dof_properties.damping.range=[0.5,1.5]",
        ],  # fmt: skip
        "task.task.randomization_params.actor_params.robot",
    ),
    (
        [
            "task=Ant",
            "task.task.randomize=True",
            "+task.task.randomization_params.actor_params.ant.dof_properties.gain.range=[0.5,1.5]",
        ],  # fmt: skip
        "task.task.randomization_params.actor_params.ant.dof_properties.gain",
    ),
]


BAD_PLAN_REQUESTS = [  # gmi.per_gpu=auto / num_envs=auto: refused before any trial run
    (["gmi.plan.alpha=0"], "gmi.plan.alpha"),
    (["gmi.plan.alpha=-0.1"], "gmi.plan.alpha"),
    (["gmi.plan.budget_s=0"], "gmi.plan.budget_s"),
    (["gmi.plan.budget_s=-5"], "gmi.plan.budget_s"),
    (["gmi.plan.epochs=3", "gmi.plan.warmup_epochs=2"], "gmi.plan.warmup_epochs"),
    (["gmi.plan.max_envs=64"], "gmi.plan.max_envs"),
    (["gmi.plan.timeout_s=0"], "gmi.plan.timeout_s"),
    (["+gmi.plan.speed=1"], "gmi.plan.speed"),
    (["gmi.mode=async"], "gmi.per_gpu"),
    (["pbt=pbt_default"], "gmi.per_gpu"),  # the GMIs are the population: the user's choice
    (["train.params.config.learning_rate=-1"], "train.params.config.learning_rate"),
    (["train.params.config.minibatch_size=1000"], "train.params.config.minibatch_size"),
]


@pytest.mark.parametrize(("overrides", "key"), BAD_PLAN_REQUESTS, ids=lambda v: str(v))
def test_bad_plan_requests_are_refused_before_any_trial(
    compose_cfg, nothing_may_start, overrides, key, tmp_path
):
    cfg = compose_cfg(
        "task=Cartpole", "gmi.per_gpu=auto", f"gmi.plan.cache_dir={tmp_path}", *overrides
    )
    with pytest.raises(ConfigError) as refused:
        planner.choose(cfg)
    assert refused.value.key == key, str(refused.value)
    assert not any(tmp_path.iterdir())  # no cache entry either


@pytest.mark.parametrize(("overrides", "key"), BAD_INPUTS, ids=lambda v: str(v))
def test_refused_before_start_naming_the_key(compose_cfg, nothing_may_start, overrides, key):
    cfg = compose_cfg(*overrides)
    with pytest.raises(ConfigError) as refused:
        launch.run(cfg, launch.plan_run(cfg, platform=NO_GPU))
    assert refused.value.key == key, str(refused.value)
    assert str(refused.value).startswith(f"{key}=")


def test_the_numbers_are_in_the_errors(compose_cfg, nothing_may_start):
    def message(*overrides: str) -> str:
        with pytest.raises(ConfigError) as refused:
            launch.plan_run(compose_cfg(*overrides), platform=NO_GPU)
        return str(refused.value)

    envs = message("task=Ant", "num_envs=1000000000")
    assert "GiB" in envs and "KiB per env" in envs and "envs per GMI fit" in envs
    assert "at most 4 per core" in message("task=Ant", "gmi.per_gpu=1000")
    assert "(0, 1]" in message("task=Ant", "train.params.config.gamma=5")


GOOD_INPUTS = [  # (overrides, what the plan must hold: dotted attributes of RunPlan, or dict keys)
    (
        ["task=Ant"],  # the defaults: config.yaml, Ant.yaml, AntPPO.yaml
        {
            "task_name": "Ant",
            "num_envs": 4096,
            "seed": 42,
            "world_size": 1,
            "mode": "sync",
            "train.horizon_length": 16,
            "train_params.config.max_epochs": 500,
        },
    ),
    (
        ["task=ShadowHand"],
        {
            "task_name": "ShadowHand",
            "num_envs": 16384,
            "train.horizon_length": 8,
            "train_params.config.max_epochs": 5000,
        },
    ),
    (
        ["task=Cartpole", "gmi.per_gpu=3"],
        {"num_envs": 512, "gmi.per_gpu": 3, "layout.per_device": 3, "world_size": 3},
    ),
    (
        ["task=Ant", "experiment=my_run-2"],
        {
            "train_params.config.name": "my_run-2",
            "train_params.config.full_experiment_name": "my_run-2",
        },
    ),
    (["task=Ant", "max_iterations=-1"], {"train_params.config.max_epochs": -1}),
    (
        [
            "task=Cartpole",
            "num_envs=64",
            "seed=7",
            "gmi.per_gpu=2",
            "max_iterations=3",
            "train.params.config.horizon_length=32",
            "train.params.config.minibatch_size=1024",
            "torch_deterministic=True",
            "sigma=0.5",
            "train_dir=my_runs",
            "+full_experiment_name=exp_a",
        ],
        {
            "num_envs": 64,
            "task_config.env.numEnvs": 64,
            "seed": 7,
            "world_size": 2,
            "train_params.config.max_epochs": 3,
            "train_params.config.minibatch_size": 1024,
            "train.horizon_length": 32,
            "train.torch_deterministic": True,
            "train.sigma": 0.5,
            "train.train_dir": "my_runs",
            "train.experiment_name": "exp_a",
        },
    ),
    (
        ["task=Ant", "gmi.mode=serve", "gmi.per_gpu=2", "num_envs=32", "serve.steps=25"],
        {"mode": "serve", "world_size": 2, "num_envs": 32, "mode_settings.steps": 25},
    ),
    (
        [
            "task=Ant",
            "gmi.mode=async",
            "gmi.per_gpu=3",
            "gmi.trainers=1",
            "num_envs=32",
            "train.params.config.minibatch_size=512",
        ],
        # GMI 0 trains, GMIs 1 and 2 act; the run survives actors down to gmi.async.min_actors
        {
            "mode": "async",
            "world_size": 3,
            "gmi.trainers": 1,
            "terms.expendable": (1, 2),
            "terms.min_alive": 1,
        },
    ),
]


def _field(plan, path: str):
    value = plan
    for part in path.split("."):
        value = value[part] if isinstance(value, dict) else getattr(value, part)
    return value


@pytest.mark.parametrize(
    ("overrides", "expected"), GOOD_INPUTS, ids=[" ".join(o) for o, _ in GOOD_INPUTS]
)
def test_good_inputs_still_pass(compose_cfg, nothing_may_start, overrides, expected):
    """Good inputs plan without starting anything, and the plan holds what they named."""
    plan = launch.plan_run(compose_cfg(*overrides), platform=NO_GPU)
    assert {path: _field(plan, path) for path in expected} == expected


def test_seed_minus_one_draws_a_seed(compose_cfg):
    """``seed=-1``: a base seed drawn from [0, 10000], as IsaacGymEnvs does, never -1 itself."""
    plan = launch.plan_run(compose_cfg("task=Ant", "seed=-1"), platform=NO_GPU)
    assert 0 <= plan.seed <= 10000


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["train.params.config.gamma=5"], "train.params.config.gamma"),
        (["experiment=../../x"], "experiment"),
        (["gmi.per_gpu=1000"], "gmi.per_gpu"),
        (["gmi.per_gpu=auto", "gmi.plan.alpha=0"], "gmi.plan.alpha"),
    ],
)
def test_train_py_exits_2_with_one_line(compose_cfg, train_py_refusal, tmp_path, overrides, key):
    """The one line ``train.py`` prints before exiting 2 (as a process: test_cli_errors.py)."""
    cfg = compose_cfg("task=Cartpole", *overrides, f"gmi.plan.cache_dir={tmp_path}")
    printed = train_py_refusal(cfg)
    errors = [ln for ln in printed.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {key}="), printed


def test_a_missing_searchpath_entry_is_refused_naming_the_key(tmp_path, capsys):
    """Hydra would skip it silently, and the user's configs there would never be read."""
    from isaacgymenvs_gmi import cli
    from isaacgymenvs_gmi.config.sources import ConfigFlags, resolve_sources

    missing = f"file://{tmp_path / 'no-such-configs'}"
    with pytest.raises(ConfigError) as refused:
        resolve_sources(ConfigFlags(), ["task=Cartpole", f"hydra.searchpath=[{missing}]"])
    assert refused.value.key == "hydra.searchpath" and refused.value.value == missing
    with pytest.raises(ConfigError, match="hydra.searchpath='pkg://no_such_package_here'"):
        resolve_sources(ConfigFlags(), ["hydra.searchpath=[pkg://no_such_package_here]"])
    (tmp_path / "configs").mkdir()
    found = resolve_sources(ConfigFlags(), [f"hydra.searchpath=[file://{tmp_path / 'configs'}]"])
    assert f"file://{tmp_path / 'configs'}" in found.entries
    with pytest.raises(SystemExit) as ended:
        cli.main(["task=Cartpole", f"hydra.searchpath=[{missing}]"])
    assert ended.value.code == 2
    assert capsys.readouterr().err.startswith(f"error: hydra.searchpath='{missing}'")


def test_the_write_probe_leaves_nothing_behind(tmp_path):
    from isaacgymenvs_gmi.config.paths import check_writable_folder

    assert check_writable_folder("train_dir", str(tmp_path / "a" / "b")) == str(
        tmp_path / "a" / "b"
    )
    assert check_writable_folder("train_dir", str(tmp_path)) == str(tmp_path)
    assert list(tmp_path.iterdir()) == []  # neither the folders nor a probe were left
