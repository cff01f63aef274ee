"""Population-based training (``gmi.mode=pbt``, or ``pbt.enabled=True``): every GMI trains a
policy of its own, improved by DexPBT's decentralised rule (:mod:`.selection`) through a shared
workspace in IsaacGymEnvs' layout (:mod:`.workspace`); members never wait for each other.
"""

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config._values import select
from isaacgymenvs_gmi.config.pbt import PbtSettings
from isaacgymenvs_gmi.config.upstream_switches import pbt_enabled
from isaacgymenvs_gmi.runners.mode import Claim, Mode, ModeFacts, ModeTerms

from .body import run_pbt, workspace_root
from .identity import PopulationIdentity, check_workspace


def _check_pbt(facts: ModeFacts) -> ModeTerms:
    """One policy per GMI, at least two, and a workspace that holds no other population;
    every member survivable (the others go on)."""
    settings: PbtSettings | None = facts.settings
    if settings is None:  # test=True: the checkpoint is played in one process, no population
        return ModeTerms()
    gmis = facts.layout.world_size
    policies = settings.num_policies if settings.num_policies is not None else gmis
    if gmis < 2:
        raise ConfigError(
            "gmi.per_gpu",
            facts.gmi.per_gpu,
            f"population-based training runs one policy per GMI and needs at least 2 GMIs "
            f"(this run has {gmis}); e.g. gmi.per_gpu={max(policies, 2)}",
        )
    if policies != gmis:
        raise ConfigError(
            "pbt.num_policies",
            policies,
            f"each GMI trains one policy of the population and this run has {gmis} GMIs; set "
            f"pbt.num_policies={gmis} (or null), or gmi.per_gpu (x gmi.num_gpus) to {policies}",
        )
    run = PopulationIdentity.of_run(facts.task_name, facts.dims, facts.train_params, policies)
    check_workspace(workspace_root(facts.train.train_dir, settings.workspace), run)
    return ModeTerms(
        expendable=tuple(range(gmis)),
        min_alive=1,
        expendable_what="PBT member",
        min_alive_key="a population goes on while one member is alive",
    )


def _pbt_settings(cfg) -> PbtSettings | None:
    """``pbt.*``, checked; None for ``test=True``, which plays one policy whatever the mode."""
    settings = PbtSettings.from_cfg(cfg)
    if cfg.get("test") is True:
        return None
    if settings is None:
        raise ConfigError(
            "pbt.enabled",
            select(cfg, "pbt.enabled", None),
            "gmi.mode=pbt trains a population: choose a PBT config, e.g. pbt=pbt_default "
            "(pbt.enabled=True)",
        )
    return settings


MODE = Mode(
    name="pbt",
    summary="population-based training, one policy per GMI (pbt=pbt_default)",
    body=run_pbt,
    check=_check_pbt,
    independent_gmis=True,
    settings=_pbt_settings,
    claim=Claim(pbt_enabled, switch="pbt.enabled=True", undo="pbt=no_pbt"),
    not_searched="with population-based training the GMIs are the population: give "
    "gmi.per_gpu and num_envs numbers",
)

__all__ = ["MODE", "run_pbt"]
