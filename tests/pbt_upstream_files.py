"""IsaacGymEnvs' PBT config files, keys and values as upstream ships them (comments left out), to
write into a folder that ``hydra.searchpath`` points at."""

from __future__ import annotations

from pathlib import Path

UPSTREAM_PBT_FILES: dict[str, str] = {
    "pbt/pbt_default.yaml": """\
defaults:
  - mutation: default_mutation

enabled: True

policy_idx: 0
num_policies: 8
workspace: "pbt_workspace"

dbg_mode: False

interval_steps: 10000000
start_after: 10000000
initial_delay: 20000000

replace_fraction_worst: 0.125
replace_fraction_best: 0.3
replace_threshold_frac_std: 0.5
replace_threshold_frac_absolute: 0.05

mutation_rate: 0.15

change_min: 1.1
change_max: 1.5
""",
    "pbt/mutation/default_mutation.yaml": """\
train.params.config.reward_shaper.scale_value: "mutate_float"
train.params.config.learning_rate: "mutate_float"
train.params.config.grad_norm: "mutate_float"
train.params.config.entropy_coef: "mutate_float"
train.params.config.critic_coef: "mutate_float"
train.params.config.bounds_loss_coef: "mutate_float"
train.params.config.e_clip: "mutate_eps_clip"
train.params.config.mini_epochs: "mutate_mini_epochs"
train.params.config.gamma: "mutate_discount"
""",
    "pbt/mutation/ant_mutation.yaml": """\
task.env.headingWeight: "mutate_float"
task.env.upWeight: "mutate_float"

train.params.config.grad_norm: "mutate_float"
train.params.config.entropy_coef: "mutate_float"
train.params.config.critic_coef: "mutate_float"
train.params.config.bounds_loss_coef: "mutate_float"
train.params.config.kl_threshold: "mutate_float"

train.params.config.e_clip: "mutate_eps_clip"

train.params.config.mini_epochs: "mutate_mini_epochs"

train.params.config.gamma: "mutate_discount"
train.params.config.tau: "mutate_discount"
""",
}


def write_upstream_pbt_files(folder: Path) -> None:
    """Write :data:`UPSTREAM_PBT_FILES` under ``folder`` (``folder/pbt/...``)."""
    for name, text in UPSTREAM_PBT_FILES.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
