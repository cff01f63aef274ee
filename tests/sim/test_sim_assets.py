"""Model compilation: bundled assets, an IsaacGymEnvs-like ``assets_root``, timing and gravity."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
import torch

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.sim.model import (
    AssetLoadError,
    AssetNotFoundError,
    SimTiming,
    asset_path,
    compile_task_model,
)
from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions, VecTask
from isaacgymenvs_gmi.tasks import Ant, Cartpole
from isaacgymenvs_gmi.tasks.base import ASSETS_DIR

BUNDLED_TORSO = 'name="torso_geom" type="sphere" size="0.25"'


def _geom_size(model: mujoco.MjModel, name: str) -> np.ndarray:
    return model.geom_size[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name)]


def _my_ant_root(tmp_path, radius: float = 0.31):
    """An IsaacGymEnvs-like tree: <root>/mjcf/my_ant.xml, our ant with a bigger torso."""
    text = (ASSETS_DIR / "ant.xml").read_text()
    assert BUNDLED_TORSO in text
    (tmp_path / "mjcf").mkdir()
    changed = text.replace(BUNDLED_TORSO, f'name="torso_geom" type="sphere" size="{radius}"')
    (tmp_path / "mjcf" / "my_ant.xml").write_text(changed)
    return tmp_path


def test_bundled_assets_without_root(task_cfg):
    cfg = task_cfg("Ant")
    assert asset_path(Ant, cfg, None) == ASSETS_DIR / "ant.xml"
    assert asset_path(Ant, cfg, "") == ASSETS_DIR / "ant.xml"
    model, _ = compile_task_model(Ant, cfg)
    assert _geom_size(model, "torso_geom")[0] == pytest.approx(0.25)


def test_assets_root_override(task_cfg, tmp_path):
    root = _my_ant_root(tmp_path)
    cfg = task_cfg("Ant")
    cfg["env"]["asset"]["assetFileName"] = "mjcf/my_ant.xml"
    assert asset_path(Ant, cfg, str(root)) == root / "mjcf" / "my_ant.xml"
    model, timing = compile_task_model(Ant, cfg, assets_root=str(root))
    assert _geom_size(model, "torso_geom")[0] == pytest.approx(0.31)  # not the bundled 0.25
    # the task's edits still apply: 4 feet x (force + torque) x 3 = 24 sensor values
    assert model.nsensor == 8 and model.nsensordata == 24
    assert model.nu == 8 and model.nq == 15
    torso = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "torso")
    np.testing.assert_allclose(model.body_pos[torso], [0.0, 0.0, 0.44])
    assert model.opt.timestep == pytest.approx(0.0083) and timing.nstep == 2


def test_missing_asset_names_asset_file_name(task_cfg, tmp_path):
    cfg = task_cfg("Ant")
    cfg["env"]["asset"]["assetFileName"] = "mjcf/nowhere.xml"
    with pytest.raises(AssetNotFoundError, match="assetFileName") as err:
        compile_task_model(Ant, cfg, assets_root=str(tmp_path))
    assert "mjcf/nowhere.xml" in str(err.value)
    assert isinstance(err.value, FileNotFoundError)
    # no file name at all, with a root set
    del cfg["env"]["asset"]["assetFileName"]
    with pytest.raises(AssetNotFoundError, match="assetFileName"):
        compile_task_model(Ant, cfg, assets_root=str(tmp_path))


def test_unloadable_asset_names_asset_file_name(task_cfg, tmp_path):
    cfg = task_cfg("Ant")
    (tmp_path / "broken.xml").write_text("<mujoco><worldbody><body></mujoco>")
    cfg["env"]["asset"]["assetFileName"] = "broken.xml"
    with pytest.raises(AssetLoadError, match=r"assetFileName='broken.xml'.*Ant model") as err:
        compile_task_model(Ant, cfg, assets_root=str(tmp_path))
    assert isinstance(err.value.__cause__, ValueError)  # MuJoCo's own message rides along
    # a well-formed file without the task's layout: the task's check, with the key in front
    (tmp_path / "empty.xml").write_text("<mujoco><worldbody/></mujoco>")
    cfg["env"]["asset"]["assetFileName"] = "empty.xml"
    with pytest.raises(AssetLoadError, match="assetFileName='empty.xml'"):
        compile_task_model(Ant, cfg, assets_root=str(tmp_path))


def _cartpole_urdf(collisions: bool) -> str:
    """A minimal cartpole (IsaacGymEnvs' joint layout): rail, cart on a prismatic joint along y
    (+-4 m), pole on a continuous joint about x; with or without collision boxes."""

    def box(size, origin="0 0 0"):
        if not collisions:
            return ""
        return f'<collision><origin xyz="{origin}"/><geometry><box size="{size}"/></geometry>' + (
            "</collision>"
        )

    return f"""<?xml version="1.0"?>
<robot name="cartpole">
  <link name="slider">{box("0.03 8 0.03")}</link>
  <link name="cart">
    <inertial><mass value="1"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    {box("0.2 0.25 0.2")}
  </link>
  <link name="pole">
    <inertial><origin xyz="0 0 0.47"/><mass value="1"/>
      <inertia ixx="0.08" ixy="0" ixz="0" iyy="0.08" iyz="0" izz="0.001"/></inertial>
    {box("0.04 0.06 1.0", "0 0 0.47")}
  </link>
  <joint name="slider_to_cart" type="prismatic">
    <parent link="slider"/><child link="cart"/>
    <axis xyz="0 1 0"/>
    <limit lower="-4" upper="4" effort="1000" velocity="100"/>
  </joint>
  <joint name="cart_to_pole" type="continuous">
    <parent link="cart"/><child link="pole"/>
    <origin xyz="0.12 0 0"/>
    <axis xyz="1 0 0"/>
  </joint>
</robot>
"""


def _push_cart_from_rest(cfg, assets_root) -> dict[float, torch.Tensor]:
    """Cart velocity after one env step from rest, for actions 0 and 1 (400 N)."""
    physics = PhysicsOptions(backend="mujoco", num_threads=1, assets_root=str(assets_root))
    env = VecTask(cfg, "cpu", "cpu", physics=physics)
    q0, v0 = env.backend.physics_state()
    pushes = {}
    for action in (0.0, 1.0):
        env.backend.set_physics_state(np.zeros_like(q0), np.zeros_like(v0))
        _, _, reset, _ = env.step(torch.full((4, 1), action))
        assert not reset.any()
        # cart velocity (unclipped: the observation is clipped to +-5)
        pushes[action] = torch.from_numpy(env.backend.physics_state()[1][:, 0].copy())
    env.close()
    return pushes


def _urdf_root(tmp_path, collisions: bool):
    (tmp_path / "urdf").mkdir()
    (tmp_path / "urdf" / "cartpole.urdf").write_text(_cartpole_urdf(collisions))
    return tmp_path


def test_cartpole_urdf_from_assets_root(task_cfg, tmp_path):
    root = _urdf_root(tmp_path, collisions=False)
    cfg = task_cfg("Cartpole")
    assert cfg["env"]["asset"]["assetFileName"] == "urdf/cartpole.urdf"
    model, _ = compile_task_model(Cartpole, cfg, assets_root=str(root))
    # the task added its push motor on the slider joint
    assert model.nu == 1 and model.nq == 2 and model.nv == 2
    slider = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "slider_to_cart")
    assert model.actuator_trnid[0, 0] == slider
    assert model.actuator_gear[0, 0] == 1.0
    np.testing.assert_allclose(model.jnt_range[slider], [-4.0, 4.0])
    assert model.jnt_type[slider] == mujoco.mjtJoint.mjJNT_SLIDE

    pushes = _push_cart_from_rest(cfg, root)
    assert torch.equal(pushes[0.0], torch.zeros(4, dtype=torch.float64))
    # 400 N for one env step (0.0166 s) on the cart, the upright pole (m = 1 kg, centre l = 0.47 m
    # above its hinge, I = 0.08 about its centre) free to swing: from rest, the cart moves with
    # the effective mass m_c + m_p - (m_p l)^2 / (I + m_p l^2) = 2 - 0.2209 / 0.3009 = 1.2659 kg
    effective_mass = 2.0 - 0.47**2 / (0.08 + 0.47**2)
    expected = 400.0 * 0.0166 / effective_mass  # = 5.245 m/s
    np.testing.assert_allclose(pushes[1.0].numpy(), expected, rtol=1e-2)


def test_cartpole_urdf_with_collision_boxes_slides(task_cfg, tmp_path):
    """IsaacGymEnvs' cartpole.urdf gives the rail and the cart overlapping collision boxes (Isaac
    Gym filters collisions within an actor); with MuJoCo the cart must still slide freely."""
    root = _urdf_root(tmp_path, collisions=True)
    pushes = _push_cart_from_rest(task_cfg("Cartpole"), root)
    assert (pushes[1.0] > 400.0 * 0.0166 / 2.0).all()  # at least F t / (cart + pole mass)


def test_sim_timing_from_config():
    timing = SimTiming.from_task_config(
        {"sim": {"dt": 0.0166, "substeps": 2}, "env": {"controlFrequencyInv": 3}}
    )
    assert timing.timestep == pytest.approx(0.0083)
    assert timing.nstep == 6
    defaults = SimTiming.from_task_config({"sim": {"dt": 0.02}})
    assert defaults.dt == pytest.approx(0.02) and defaults.nstep == 1
    with pytest.raises(ConfigError, match="task.sim.dt"):  # no silent default
        SimTiming.from_task_config({})


def test_timing_and_gravity_reach_the_model(task_cfg):
    cfg = task_cfg("Cartpole", controlFrequencyInv=3)
    cfg["sim"]["gravity"] = [0.0, 0.0, -5.0]
    model, timing = compile_task_model(Cartpole, cfg)
    assert model.opt.timestep == pytest.approx(0.0083)
    assert timing.nstep == 6
    np.testing.assert_allclose(model.opt.gravity, [0.0, 0.0, -5.0])
    del cfg["sim"]["gravity"]
    model, _ = compile_task_model(Cartpole, cfg)
    np.testing.assert_allclose(model.opt.gravity, [0.0, 0.0, -9.81])  # the asset's default


def test_env_step_integrates_nstep_timesteps(task_cfg):
    """One env step advances MuJoCo time by controlFrequencyInv * dt, under the config's gravity."""
    results = {}
    for g in (0.0, -9.81):
        cfg = task_cfg("Cartpole", controlFrequencyInv=3)
        cfg["sim"]["gravity"] = [0.0, 0.0, g]
        env = VecTask(cfg, "cpu", "cpu", physics=PhysicsOptions(num_threads=1))
        assert env.backend.worlds.nstep == 6
        q = np.zeros((4, 2))
        q[:, 1] = 0.5  # pole tilted by 0.5 rad, at rest
        env.backend.set_physics_state(q, np.zeros((4, 2)))
        env.step(torch.zeros(4, 1))
        np.testing.assert_allclose(env.backend.worlds.state[:, 0], 3 * 0.0166, rtol=1e-9)
        results[g] = env.backend.physics_state()
        env.close()
    # weightless: the pole stays where it was; with gravity it falls further over
    q0, v0 = results[0.0]
    np.testing.assert_allclose(q0[:, 1], 0.5, atol=1e-9)
    np.testing.assert_allclose(v0, 0.0, atol=1e-9)
    q1, v1 = results[-9.81]
    assert (q1[:, 1] > 0.5 + 1e-3).all() and (v1[:, 1] > 0.1).all()
    # a free pole angular acceleration from gravity, roughly: (m g l sin th) / I for ~0.05 s
    assert (v1[:, 1] < 9.81 * math.sin(0.5) / 0.47 * 0.05 * 2).all()


def _driven_dofs(env) -> list[int]:
    """For each action slot i, the dof that a push on slot i alone moves fastest (torso high in
    the air, at rest, so that no contact interferes)."""
    qpos, qvel = env.backend.physics_state()
    qpos = qpos.copy()
    qpos[:, 2] = 3.0
    driven = []
    for first in range(0, 8, 4):
        env.backend.set_physics_state(qpos, np.zeros_like(qvel))
        actions = torch.zeros(4, 8)
        for row in range(4):
            actions[row, first + row] = 1.0
        obs, _, _, _ = env.step(actions)
        driven += obs["obs"][:, 20:28].abs().argmax(dim=1).tolist()
    return driven


def test_bundled_ant_action_i_drives_dof_i(shared_env, restart_env):
    env = shared_env("Ant", "mujoco")
    restart_env(env)
    assert _driven_dofs(env) == list(range(8))


def test_ant_actions_follow_dof_order_whatever_the_motor_order(task_cfg, tmp_path):
    """Isaac Gym applies actions as dof forces in dof order; the energy cost pairs action i with
    the velocity of dof i. An asset listing its motors in another order must not change that."""
    text = (ASSETS_DIR / "ant.xml").read_text()
    motors = [f'    <motor joint="{j}_{k}"/>\n' for k in (1, 2, 3, 4) for j in ("hip", "ankle")]
    assert "".join(motors) in text
    reordered = motors[6:] + motors[:6]  # hip_4, ankle_4, hip_1, ... as in nv_ant.xml
    (tmp_path / "mjcf").mkdir()
    (tmp_path / "mjcf" / "ant.xml").write_text(text.replace("".join(motors), "".join(reordered)))
    cfg = task_cfg("Ant")
    cfg["env"]["asset"]["assetFileName"] = "mjcf/ant.xml"
    physics = PhysicsOptions(backend="mujoco", num_threads=1, assets_root=str(tmp_path))
    env = VecTask(cfg, "cpu", "cpu", physics=physics)
    try:
        assert _driven_dofs(env) == list(range(8))
    finally:
        env.close()
