"""A task + train pair written in IsaacGymEnvs style (resolvers, PhysX keys) trains one epoch.

The task file is the shared upstream-style Cartpole copy (tests/conftest.py); the train file
below carries every key rl-games reads, as upstream's CartpolePPO.yaml does.
"""

from __future__ import annotations

from isaacgymenvs_gmi.launch import plan_run, run

TRAIN = """
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
      units: [32, 32]
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
    mixed_precision: False
    normalize_input: True
    normalize_value: True
    num_actors: ${....task.env.numEnvs}
    reward_shaper:
      scale_value: 0.1
    normalize_advantage: True
    gamma: 0.99
    tau: 0.95
    learning_rate: 3e-4
    lr_schedule: adaptive
    kl_threshold: 0.008
    score_to_win: 20000
    max_epochs: ${resolve_default:100,${....max_iterations}}
    save_best_after: 50
    save_frequency: 25
    grad_norm: 1.0
    entropy_coef: 0.0
    truncate_grads: True
    e_clip: 0.2
    horizon_length: 16
    minibatch_size: 1024
    mini_epochs: 8
    critic_coef: 4
    clip_value: True
    seq_len: 4
    bounds_loss_coef: 0.0001
"""


def test_upstream_style_pair_loads_and_trains_one_epoch(compose_cfg, upstream_dir, tmp_path):
    (upstream_dir / "train" / "MyCartpoleFullPPO.yaml").write_text(TRAIN)
    cfg = compose_cfg(
        "task=MyCartpole",
        "train=MyCartpoleFullPPO",
        "task.name=Cartpole",  # the task file is a renamed copy of upstream's Cartpole
        f"hydra.searchpath=[file://{upstream_dir}]",
        "max_iterations=1",
        f"train_dir={tmp_path / 'runs'}",
    )
    assert cfg.task.sim.physx.use_gpu in (True, False)
    result = run(cfg, plan_run(cfg))
    assert result.frames == 16 * 256
    assert list((tmp_path / "runs").glob("MyCartpole*/nn"))
