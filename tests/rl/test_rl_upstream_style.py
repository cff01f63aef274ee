"""A task + train pair written in IsaacGymEnvs style (resolvers, PhysX keys) trains one epoch."""

from __future__ import annotations

from isaacgymenvs_gmi.launch import plan_run, run

TASK = """
name: Cartpole
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
    contact_offset: 0.02
    rest_offset: 0.001
    num_subscenes: ${....num_subscenes}
task:
  randomize: False
"""

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


def test_upstream_style_pair_loads_and_trains_one_epoch(compose_cfg, tmp_path):
    (tmp_path / "cfg" / "task").mkdir(parents=True)
    (tmp_path / "cfg" / "train").mkdir(parents=True)
    (tmp_path / "cfg" / "task" / "MyCartpole.yaml").write_text(TASK)
    (tmp_path / "cfg" / "train" / "MyCartpolePPO.yaml").write_text(TRAIN)
    cfg = compose_cfg(
        "task=MyCartpole",
        f"hydra.searchpath=[file://{tmp_path / 'cfg'}]",
        "max_iterations=1",
        f"train_dir={tmp_path / 'runs'}",
    )
    assert cfg.task.sim.physx.use_gpu in (True, False)
    result = run(cfg, plan_run(cfg))
    assert result.frames == 16 * 256
    assert list((tmp_path / "runs").glob("MyCartpole*/nn"))
