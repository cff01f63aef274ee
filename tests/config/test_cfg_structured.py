"""Hydra's structured configs made from the settings classes (config/structured.py): each kind's
node type, the composed defaults, a wrongly typed value refused by Hydra at composition (the
pbt schema's defaults: tests/config/test_cfg_pbt.py)."""

from __future__ import annotations

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import AnyNode, BooleanNode, DictConfig, FloatNode, IntegerNode, StringNode

from isaacgymenvs_gmi.config import GmiConfig
from isaacgymenvs_gmi.config.async_mode import AsyncSettings
from isaacgymenvs_gmi.config.compose import compose_config
from isaacgymenvs_gmi.config.schema import FLAG, Choice, Int, Many, Real, Text
from isaacgymenvs_gmi.config.structured import value_node
from isaacgymenvs_gmi.sweep.settings import LauncherSettings
from tests.helpers import assert_ok, run_train


@pytest.mark.parametrize(
    ("kind", "default", "node"),
    [
        (Int(1), 3, IntegerNode),
        (Int(1, auto=True), 1, AnyNode),  # takes "auto"
        (Int(1, optional=True), None, AnyNode),  # takes null and key= (empty)
        (Real(0.0), 0.5, FloatNode),
        (Real(0.0, optional=True), None, AnyNode),
        (FLAG, False, BooleanNode),
        (Choice(("a", "b")), "a", StringNode),
        (Text("a name"), "x", StringNode),
        (Many(Real()), None, AnyNode),
    ],
    ids=lambda v: type(v).__name__,
)
def test_each_kind_gets_the_node_hydra_can_check(kind, default, node):
    made = value_node(kind, default)
    assert type(made) is node and made._value() == default


def test_a_kind_with_a_conversion_of_its_own_is_left_to_its_settings():
    class Folder(Text):
        pass

    assert type(value_node(Folder(), "x")) is AnyNode
    assert value_node(Many(Int()), (1, 2)) == [1, 2]


def test_the_composed_defaults_are_the_classes():
    cfg = compose_config("task=Cartpole", "hydra/launcher=gmi")
    assert GmiConfig.from_node(cfg.gmi) == GmiConfig()
    assert AsyncSettings.from_node(cfg.gmi["async"]) == AsyncSettings()
    assert isinstance(cfg.gmi.plan, DictConfig) and cfg.gmi.debug.audit == 0


def test_a_wrongly_typed_value_fails_at_composition_naming_the_key():
    with pytest.raises(ConfigCompositionException) as refused:
        compose_config("task=Cartpole", "gmi.timeout_s=abc")
    assert "full_key: gmi.timeout_s" in str(refused.value.__cause__)
    with pytest.raises(ConfigCompositionException) as refused:
        compose_config("task=Cartpole", "gmi.async.rho_bar=big")
    assert "full_key: gmi.async.rho_bar" in str(refused.value.__cause__)
    with pytest.raises(ConfigCompositionException) as refused:
        compose_config("task=Cartpole", "pbt=pbt_default", "pbt.interval_steps=often")
    assert "full_key: pbt.interval_steps" in str(refused.value.__cause__)
    # what the schema leaves as Any is the settings' to refuse, with the allowed values
    assert compose_config("task=Cartpole", "gmi.per_gpu=auto").gmi.per_gpu == "auto"


def test_train_prints_the_schemas():
    proc = run_train("--cfg", "all", "hydra/launcher=gmi", "gmi.timeout_s=45")
    assert_ok(proc)
    assert "  timeout_s: 45" in proc.stdout and "    rho_bar: 1.0" in proc.stdout
    assert "_target_: hydra_plugins.isaacgymenvs_gmi_launcher.GmiLauncher" in proc.stdout
    assert f"reduction_factor: {LauncherSettings().reduction_factor}" in proc.stdout
