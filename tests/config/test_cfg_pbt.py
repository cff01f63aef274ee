"""``pbt.*``: the bundled PBT configs compose with every bundled task, upstream's PBT files work
through ``hydra.searchpath``, and every bad setting is refused naming its key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.compose import compose_config as compose_like_train_py
from isaacgymenvs_gmi.config.pbt import PBT_KEYS, PbtSettings
from isaacgymenvs_gmi.config.pbt_mutation import MUTATIONS
from isaacgymenvs_gmi.launch import plan_run
from isaacgymenvs_gmi.runners import MODES, chosen_mode
from isaacgymenvs_gmi.runners.pbt.selection import SelectionSettings
from tests.conftest import CFG_DIR, compose_config
from tests.pbt_upstream_files import UPSTREAM_PBT_FILES, write_upstream_pbt_files

TASKS = sorted(p.stem for p in (CFG_DIR / "task").glob("*.yaml"))
MUTATION_FILES = sorted(p.stem for p in (CFG_DIR / "pbt" / "mutation").glob("*.yaml"))
GAMMA = "train.params.config.gamma"


@pytest.fixture(scope="module")
def ant_pbt():
    """``task=Ant pbt=pbt_default`` (the default mutation file)."""
    return compose_config("task=Ant", "pbt=pbt_default")


def _with(cfg, **pbt):
    """A copy of ``cfg`` with ``pbt.<key>`` set (added when absent)."""
    out = OmegaConf.create(OmegaConf.to_container(cfg))
    for key, value in pbt.items():
        out.pbt[key] = value
    return out


def _with_mutation(cfg, key, function):
    out = OmegaConf.create(OmegaConf.to_container(cfg))
    out.pbt.mutation[key] = function
    return out


def test_the_replace_settings_build_the_runtimes_selection(ant_pbt):
    settings = PbtSettings.from_cfg(ant_pbt)
    selection = SelectionSettings.of(settings)
    assert selection.replace_fraction_worst == 0.125
    assert selection.replace_threshold_frac_absolute == 0.05


def test_pbt_off_gives_none(compose_cfg):
    assert PbtSettings.from_cfg(compose_cfg()) is None
    assert PbtSettings.from_cfg({}) is None
    assert PbtSettings.from_cfg({"pbt": {"enabled": None}}) is None
    # with PBT off its other keys are not checked (they are named as not applied)
    assert PbtSettings.from_cfg({"pbt": {"enabled": False, "objective": 1}}) is None


def test_pbt_default_values(ant_pbt):
    settings = PbtSettings.from_cfg(ant_pbt)
    assert settings == PbtSettings(mutation=settings.mutation, initial=settings.initial)
    assert settings.num_policies is None
    assert (settings.interval_steps, settings.start_after, settings.initial_delay) == (
        10_000_000,
        10_000_000,
        20_000_000,
    )
    assert (settings.change_min, settings.change_max, settings.mutation_rate) == (1.1, 1.5, 0.15)
    assert settings.mutation == {
        "train.params.config.reward_shaper.scale_value": "mutate_float",
        "train.params.config.learning_rate": "mutate_float",
        "train.params.config.grad_norm": "mutate_float",
        "train.params.config.entropy_coef": "mutate_float",
        "train.params.config.critic_coef": "mutate_float",
        "train.params.config.bounds_loss_coef": "mutate_float",
        "train.params.config.e_clip": "mutate_eps_clip",
        "train.params.config.mini_epochs": "mutate_mini_epochs",
        GAMMA: "mutate_discount",
    }
    assert list(settings.initial) == list(settings.mutation)
    # AntPPO writes the learning rate 3e-4 and critic_coef 2: both become floats
    assert settings.initial["train.params.config.learning_rate"] == pytest.approx(3e-4)
    assert type(settings.initial["train.params.config.critic_coef"]) is float
    assert settings.initial["train.params.config.mini_epochs"] == 4
    assert type(settings.initial["train.params.config.mini_epochs"]) is int
    line = settings.describe()
    assert "\n" not in line and "one policy per GMI" in line and "9 keys mutated" in line


def test_defaults_fill_a_bare_enabled_group():
    settings = PbtSettings.from_cfg({"pbt": {"enabled": True}})
    assert settings == PbtSettings()
    assert settings.workspace == "pbt_workspace" and settings.mutation == {}


@pytest.mark.parametrize("task", TASKS)
def test_default_mutation_composes_with_every_bundled_task(task):
    settings = PbtSettings.from_cfg(compose_config(f"task={task}", "pbt=pbt_default"))
    assert len(settings.initial) == 9


@pytest.mark.parametrize("name", MUTATION_FILES)
def test_every_bundled_mutation_file_composes_with_its_task(name):
    task = {"ant": "Ant", "humanoid": "Humanoid", "cartpole": "Cartpole"}.get(
        name.removesuffix("_mutation"), "Ant"
    )
    cfg = compose_config(f"task={task}", "pbt=pbt_default", f"pbt/mutation={name}")
    settings = PbtSettings.from_cfg(cfg)
    assert settings.mutation and set(settings.mutation.values()) <= set(MUTATIONS)


def test_ant_mutation(compose_cfg):
    cfg = compose_cfg("task=Ant", "pbt=pbt_default", "pbt/mutation=ant_mutation")
    settings = PbtSettings.from_cfg(cfg)
    assert settings.initial["task.env.headingWeight"] == 0.5
    assert settings.initial["task.env.upWeight"] == 0.1
    assert settings.mutation["train.params.config.tau"] == "mutate_discount"
    assert settings.initial["train.params.config.kl_threshold"] == 0.008
    assert len(settings.mutation) == 11


def test_cartpole_mutation_with_overrides(compose_cfg):
    cfg = compose_cfg(
        "task=Cartpole",
        "pbt=pbt_default",
        "pbt/mutation=cartpole_mutation",
        "pbt.num_policies=4",
        "pbt.interval_steps=50000",
        "pbt.workspace=/shared/pbt",
        "train.params.config.gamma=0.98",
    )
    settings = PbtSettings.from_cfg(cfg)
    assert (settings.num_policies, settings.interval_steps) == (4, 50000)
    assert settings.workspace == "/shared/pbt"
    assert settings.initial[GAMMA] == 0.98
    assert settings.initial["train.params.config.mini_epochs"] == 8
    assert "task.env.headingWeight" not in settings.mutation


def test_digit_strings_are_integers_and_a_quoted_real_is_text(ant_pbt):
    cfg = OmegaConf.create(OmegaConf.to_container(ant_pbt))
    cfg.train.params.config.mini_epochs = "6"
    assert PbtSettings.from_cfg(cfg).initial["train.params.config.mini_epochs"] == 6
    cfg.train.params.config.learning_rate = "1e-4"  # Hydra and YAML read 1e-4 as a number
    with pytest.raises(ConfigError, match=r"^train\.params\.config\.learning_rate='1e-4': "):
        PbtSettings.from_cfg(cfg)


# --- refusals, each naming the key


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("objective", "x", r"pbt\.objective='x': unknown key; known keys under pbt: enabled,"),
        ("policy_idx", 2, r"pbt\.policy_idx=2: .*leave pbt\.policy_idx at 0"),
        ("policy_idx", True, r"pbt\.policy_idx=True: "),
        ("num_policies", 1, r"pbt\.num_policies=1: .*a population needs at least 2 policies"),
        ("num_policies", "x", r"pbt\.num_policies='x': "),
        ("enabled", "yes", r"pbt\.enabled='yes': must be true or false"),
        ("dbg_mode", 1, r"pbt\.dbg_mode=1: must be true or false"),
        ("interval_steps", 0, r"pbt\.interval_steps=0: must be an integer >= 1"),
        ("interval_steps", 1e7, r"pbt\.interval_steps=10000000\.0: must be an integer >= 1"),
        ("start_after", -1, r"pbt\.start_after=-1: must be an integer >= 0"),
        ("initial_delay", True, r"pbt\.initial_delay=True: must be an integer >= 0"),
        ("replace_fraction_worst", 0, r"pbt\.replace_fraction_worst=0: must be a number in \(0,"),
        ("replace_fraction_worst", 1.5, r"pbt\.replace_fraction_worst=1\.5: "),
        ("replace_fraction_best", float("nan"), r"pbt\.replace_fraction_best=nan: "),
        ("replace_fraction_best", True, r"pbt\.replace_fraction_best=True: "),
        ("replace_threshold_frac_std", -0.1, r"pbt\.replace_threshold_frac_std=-0\.1: .*>= 0"),
        ("replace_threshold_frac_absolute", float("inf"), r"pbt\.replace_threshold_frac_absol"),
        ("mutation_rate", 1.01, r"pbt\.mutation_rate=1\.01: must be a number in \[0, 1]"),
        ("change_min", 0.9, r"pbt\.change_min=0\.9: must be a number >= 1"),
        ("change_min", 2.0, r"pbt\.change_min=2\.0: .*\(pbt\.change_max=1\.5\)"),
        ("change_max", 0.5, r"pbt\.change_max=0\.5: must be a number >= 1"),
        ("workspace", "", r"pbt\.workspace='': must be a folder name under train_dir"),
        ("workspace", "../elsewhere", r"pbt\.workspace='\.\./elsewhere': "),
        ("workspace", "/shared/../x", r"pbt\.workspace='/shared/\.\./x': "),
        ("workspace", "~/pbt", r"pbt\.workspace='~/pbt': "),
        ("workspace", 3, r"pbt\.workspace=3: "),
        ("mutation", [GAMMA], r"pbt\.mutation=\['train.params.config.gamma'\]: must be a mapping"),
    ],
)
def test_bad_setting_is_refused_naming_it(ant_pbt, key, value, message):
    with pytest.raises(ConfigError, match=f"^{message}"):
        PbtSettings.from_cfg(_with(ant_pbt, **{key: value}))


def test_accepted_edge_values(ant_pbt):
    settings = PbtSettings.from_cfg(
        _with(
            ant_pbt,
            replace_fraction_worst=1,
            mutation_rate=0,
            change_min=1,
            change_max=1,
            policy_idx=None,
            num_policies="3",
            workspace="pbt/ant",
        )
    )
    assert (settings.replace_fraction_worst, settings.mutation_rate) == (1.0, 0.0)
    assert (settings.change_min, settings.change_max, settings.num_policies) == (1.0, 1.0, 3)


def test_unknown_mutation_function_is_refused_listing_them(ant_pbt):
    with pytest.raises(ConfigError) as caught:
        PbtSettings.from_cfg(_with_mutation(ant_pbt, GAMMA, "mutate_gamma"))
    assert caught.value.key == f"pbt.mutation.{GAMMA}"
    assert str(caught.value).startswith(f"pbt.mutation.{GAMMA}='mutate_gamma': must be one of")
    for name in MUTATIONS:
        assert repr(name) in caught.value.constraint


def test_mutated_key_missing_from_the_config_is_refused(ant_pbt):
    key = "train.params.config.no_such_coef"
    with pytest.raises(ConfigError, match=rf"^pbt\.mutation\.{re.escape(key)}='mutate_float': "):
        PbtSettings.from_cfg(_with_mutation(ant_pbt, key, "mutate_float"))
    with pytest.raises(ConfigError, match=r"no such key in the composed config \(task Ant "):
        PbtSettings.from_cfg(_with_mutation(ant_pbt, key, "mutate_float"))


@pytest.mark.parametrize("key", ["seed", "task.sim.dt", "train.params.network.mlp.units"])
def test_keys_outside_the_mutated_groups_are_refused(ant_pbt, key):
    with pytest.raises(ConfigError, match=rf"^pbt\.mutation\.{re.escape(key)}='mutate_float': "):
        PbtSettings.from_cfg(_with_mutation(ant_pbt, key, "mutate_float"))
    with pytest.raises(ConfigError, match=r"only train\.params\.config\.\* and task\.env\.\*"):
        PbtSettings.from_cfg(_with_mutation(ant_pbt, key, "mutate_float"))


@pytest.mark.parametrize(
    "key, value, function, message",
    [
        ("mini_epochs", 2.5, "mutate_mini_epochs", "must be an integer >= 1"),
        ("mini_epochs", 0, "mutate_mini_epochs", "must be an integer >= 1"),
        ("gamma", 1.0, "mutate_discount", "must be a number in (0, 1)"),
        ("gamma", 0, "mutate_discount", "must be a number in (0, 1)"),
        ("e_clip", 0.0, "mutate_eps_clip", "must be a number > 0"),
        ("learning_rate", "fast", "mutate_float", "must be a finite number"),
        ("learning_rate", True, "mutate_float", "must be a finite number"),
        ("learning_rate", None, "mutate_float", "must be a finite number"),
        ("learning_rate", "nan", "mutate_float", "must be a finite number"),
        ("network", {"units": 4}, "mutate_float", "must be a finite number"),
    ],
)
def test_a_mutated_value_the_function_cannot_mutate_is_refused(
    ant_pbt, key, value, function, message
):
    cfg = _with_mutation(ant_pbt, f"train.params.config.{key}", function)
    cfg.train.params.config[key] = value
    with pytest.raises(ConfigError) as caught:
        PbtSettings.from_cfg(cfg)
    assert caught.value.key == f"train.params.config.{key}"
    assert f"mutated by {function} (pbt.mutation.train.params.config.{key})" in str(caught.value)
    assert message in caught.value.constraint


# --- the mode a run asks for


def test_pbt_enabled_claims_the_run_from_the_default_mode():
    on, off = {"pbt": {"enabled": True}}, {"pbt": {"enabled": False, "policy_idx": 0}}
    assert chosen_mode(on, "sync") is MODES["pbt"]
    assert chosen_mode(on, "pbt") is MODES["pbt"]
    for name in ("sync", "async", "serve"):
        assert chosen_mode(off, name) is MODES[name]
        assert chosen_mode({}, name) is MODES[name]
    with pytest.raises(ConfigError, match=r"^gmi\.mode='a3c': available in this version: sync"):
        chosen_mode(on, "a3c")


@pytest.mark.parametrize("mode", ["async", "serve"])
def test_pbt_with_another_mode_is_refused_naming_gmi_mode(mode):
    with pytest.raises(ConfigError) as caught:
        chosen_mode({"pbt": {"enabled": True}}, mode)
    assert str(caught.value).startswith(f"gmi.mode='{mode}': pbt.enabled=True runs as gmi.mode=pbt")
    assert f"cannot be combined with gmi.mode={mode} ({MODES[mode].summary})" in str(caught.value)
    assert str(caught.value).endswith("use gmi.mode=sync or pbt, or pbt=no_pbt")


NO_GPU = (False, ("cpu",), False)


def test_the_plan_checks_pbt_before_any_work(compose_cfg, tmp_path):
    runs = f"train_dir={tmp_path / 'runs'}"
    pbt = ("pbt=pbt_default", "gmi.per_gpu=2", runs)
    assert plan_run(compose_cfg(*pbt), platform=NO_GPU).mode == "pbt"
    with pytest.raises(ConfigError, match=r"^pbt\.replace_fraction_best=0\.0: "):
        plan_run(compose_cfg(*pbt, "pbt.replace_fraction_best=0.0"), platform=NO_GPU)
    with pytest.raises(ConfigError, match=r"^gmi\.mode='async': "):
        plan_run(compose_cfg(*pbt, "gmi.mode=async"), platform=NO_GPU)
    with pytest.raises(ConfigError, match=r"^pbt\.enabled=False: gmi\.mode=pbt trains a popul"):
        plan_run(compose_cfg("gmi.mode=pbt", "gmi.per_gpu=2", runs), platform=NO_GPU)
    with pytest.raises(ConfigError, match=r"pbt=pbt_default \(pbt\.enabled=True\)"):
        MODES["pbt"].settings({})


# --- upstream's files, found through hydra.searchpath


def _searchpath(path: Path) -> str:
    return f"hydra.searchpath=[file://{path}]"


def test_upstream_pbt_files_compose_and_are_accepted(tmp_path):
    write_upstream_pbt_files(tmp_path)
    assert set(UPSTREAM_PBT_FILES) == {
        str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.yaml")
    }
    cfg = compose_like_train_py(
        _searchpath(tmp_path), "task=Ant", "pbt=pbt_default", "pbt/mutation=ant_mutation"
    )
    assert set(OmegaConf.to_container(cfg.pbt)) <= set(PBT_KEYS)
    settings = PbtSettings.from_cfg(cfg)
    assert settings.num_policies == 8  # upstream's value, not the bundled null
    assert settings.initial["train.params.config.tau"] == 0.95
    assert len(settings.mutation) == 11
    default = PbtSettings.from_cfg(compose_like_train_py(_searchpath(tmp_path), "pbt=pbt_default"))
    assert len(default.mutation) == 9


def test_upstreams_population_of_8_is_refused_on_3_gmis(tmp_path, train_py_refusal):
    """Upstream's pbt_default.yaml asks for 8 policies: 3 GMIs are refused naming the key, before
    anything starts (with pbt.num_policies=3 it trains: tests/runners/test_runners_pbt.py)."""
    write_upstream_pbt_files(tmp_path / "upstream_cfg")
    cfg = compose_like_train_py(
        _searchpath(tmp_path / "upstream_cfg"),
        "task=Ant",
        "pbt=pbt_default",
        "pbt/mutation=ant_mutation",
        "gmi.per_gpu=3",
        f"train_dir={tmp_path / 'runs'}",
    )
    assert "pbt.num_policies=8" in train_py_refusal(cfg)
    assert not (tmp_path / "runs").exists()


def test_the_users_pbt_files_win_over_the_bundled_ones(tmp_path):
    write_upstream_pbt_files(tmp_path)
    default = tmp_path / "pbt" / "pbt_default.yaml"
    default.write_text(default.read_text().replace("10000000\nstart", "123\nstart"))
    (tmp_path / "pbt" / "mutation" / "cartpole_mutation.yaml").write_text(
        'train.params.config.gamma: "mutate_discount"\n'
    )
    cfg = compose_like_train_py(
        _searchpath(tmp_path), "task=Cartpole", "pbt=pbt_default", "pbt/mutation=cartpole_mutation"
    )
    settings = PbtSettings.from_cfg(cfg)
    assert settings.interval_steps == 123
    assert settings.mutation == {GAMMA: "mutate_discount"}
