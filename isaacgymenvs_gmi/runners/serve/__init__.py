"""``gmi.mode=serve``: every GMI plays the policy (actors only, the paper's serving GMIs)."""

from isaacgymenvs_gmi.runners.mode import Mode, ModeFacts, ModeTerms
from isaacgymenvs_gmi.runners.shared.actor_checks import check_actor_config

from .body import run_serve
from .settings import ServeSettings


def _check_serve(facts: ModeFacts) -> ModeTerms:
    check_actor_config("serve", facts.train_params)
    return ModeTerms()


MODE = Mode(
    name="serve",
    summary="every GMI plays the policy (actors only), optionally recording",
    body=run_serve,
    check=_check_serve,
    trains=False,
    independent_gmis=True,
    rate="pps",  # predictions/s, measured by the run after its own warm-up
    settings=ServeSettings.from_cfg,
    trial_overrides=lambda steps: {"serve.steps": steps, "serve.record": None},
    group=ServeSettings.PREFIX,
)

__all__ = ["MODE", "run_serve"]
