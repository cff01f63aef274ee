"""A task + train pair written in IsaacGymEnvs style (resolvers, PhysX keys) trains one epoch."""

from __future__ import annotations

from isaacgymenvs_gmi.launch import plan_run, run


def test_upstream_style_pair_loads_and_trains_one_epoch(compose_cfg, upstream_dir, tmp_path):
    cfg = compose_cfg(
        "task=MyCartpole",
        "task.name=Cartpole",  # the pair is a renamed copy of upstream's Cartpole files
        f"hydra.searchpath=[file://{upstream_dir}]",
        "max_iterations=1",
        f"train_dir={tmp_path / 'runs'}",
    )
    assert cfg.task.sim.physx.use_gpu in (True, False)
    result = run(cfg, plan_run(cfg))
    assert result.frames == 16 * 256
    assert list((tmp_path / "runs").glob("MyCartpole*/nn"))
