"""Humanoid: run a 21-dof humanoid towards a far target (IsaacGymEnvs' Humanoid rules).

obs (108), in upstream order:
    0       torso height
    1:4     torso linear velocity in the torso frame
    4:7     torso angular velocity in the torso frame * angularVelocityScale
    7, 8, 9 yaw, roll, angle to target (upstream's x-z plane angle minus yaw), all in (-pi, pi]
    10, 11  up projection, heading projection (torso x axis . planar direction to the target)
    12:33   dof positions scaled from their ranges to [-1, 1]
    33:54   dof velocities * dofVelocityScale
    54:75   dof forces * contactForceScale; the applied effort action * gear * powerScale
    75:87   right foot then left foot force (3) and torque (3) sensors * contactForceScale
    87:108  the step's actions
with dofs in tree order: abdomen z, y, x; right hip x, z, y, knee, ankle y, x; left leg alike;
right shoulder 1, 2, elbow; left arm alike.

Reward = progress (potential difference, potential = -planar distance to target / dt) + 2 alive
+ upWeight if up projection > 0.93 + heading (headingWeight, times projection / 0.8 below 0.8)
- actionsCost sum(a^2) - energyCost sum(|a * obs[33:54]| * e) - sum over |obs[12:33]| > 0.98 of
jointsAtLimitCost * (|obs| - 0.98) / 0.02 * e, with e = gear / max gear (motor effort ratio).
A torso lower than terminationHeight gets deathCost instead and ends the episode; episodes also
end after episodeLength - 1 steps (upstream's rule, ``TaskLogic.timeout_steps``).
Resets: torso upright at 1.34 m, at rest; dofs at 0 + U(-0.2, 0.2) (clipped to their ranges)
moving at U(-0.1, 0.1) rad/s.

Deviations from upstream, for physics cost: only the feet and shins collide with the floor (the
rest of the body reaches it only once the torso is below terminationHeight, bar a hand stretched
down in rare poses), and the body never collides with itself. The foot sensors are MuJoCo
force-torque sensors at the foot body origins: the interaction force and torque between foot and
shin, in the foot frame; like every sensor they read zero in an episode's first observation.
"""

from __future__ import annotations

import jax.numpy as jnp
import mujoco
import numpy as np

from .base import PhysicsFrame
from .locomotion import HEAD, LocomotionTask

START_HEIGHT = 1.34
FEET = ("right_foot", "left_foot")  # sensor order, as upstream creates them
FLOOR_CONTACT = ("foot", "shin")  # bodies whose geoms collide with the floor
ALIVE = 2.0
LIMIT_THRESHOLD, LIMIT_BAND = 0.98, 0.02  # at-limit cost: 0 at |scaled pos| 0.98, 1 at 1.0


class Humanoid(LocomotionTask):
    name = "Humanoid"
    num_obs = 108
    num_actions = 21
    asset_file = "humanoid.xml"
    actors = {"humanoid": ("torso",)}  # upstream's actor names
    default_episode_length = 1000
    start_height = START_HEIGHT

    def __init__(self, env_cfg, sim_dt, info):
        super().__init__(env_cfg, sim_dt, info)
        self.angvel_scale = float(env_cfg.get("angularVelocityScale", 0.1))
        gear = np.empty(info.nu)
        gear[info.actuator_action] = info.actuator_gear  # file order -> dof order
        self.effort = jnp.asarray(gear * self.power_scale, jnp.float32)  # (21,) torque per action
        self.effort_ratio = jnp.asarray(gear / gear.max(), jnp.float32)  # (21,)
        # prepare_spec leaves exactly the four foot sensors, side by side: (12,) columns
        names = _foot_sensor_names()
        self.foot_columns = slice(info.sensors[names[0]].start, info.sensors[names[-1]].stop)

    @classmethod
    def prepare_spec(cls, spec, env_cfg):
        missing = [b for b in ("torso", *FEET) if spec.body(b) is None]
        if missing:
            raise ValueError(
                f"Humanoid: the model from env.asset.assetFileName has no bodies {missing}; it "
                "needs a free 'torso' with 'right_foot' and 'left_foot' bodies (nv_humanoid.xml)"
            )
        # Only the task's sensors, and no references to materials the file does not define
        # (IsaacGymEnvs' nv_humanoid.xml names some).
        for sensor in list(spec.sensors):
            spec.delete(sensor)
        known = {m.name for m in spec.materials}
        for geom in spec.geoms:
            if geom.material and geom.material not in known:
                geom.material = ""
        # A force-torque pair at the origin of each foot, right foot first.
        names = iter(_foot_sensor_names())
        for foot in FEET:
            site = spec.body(foot).add_site(name=f"{foot}_ft_site")
            for kind in (mujoco.mjtSensor.mjSENS_FORCE, mujoco.mjtSensor.mjSENS_TORQUE):
                spec.add_sensor(
                    name=next(names), type=kind, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=site.name
                )
        # Feet and shins collide with the floor; nothing collides with the body itself.
        for geom in spec.geoms:
            if geom.parent.name != "world":
                touches = any(part in geom.parent.name for part in FLOOR_CONTACT)
                geom.contype, geom.conaffinity = 0, int(touches)
        spec.body("torso").pos = [0.0, 0.0, START_HEIGHT]

    def observe(self, frame: PhysicsFrame, actions, carry):
        terms = self.torso_terms(frame)
        scale = self.contact_force_scale
        obs = jnp.concatenate(
            [
                self.torso_obs(terms, self.angvel_scale, wrap_angles=True),
                self.scaled_dof_pos(frame.qpos[:, 7:]),
                frame.qvel[:, 6:] * self.dof_vel_scale,
                actions * (self.effort * scale),
                frame.sensordata[:, self.foot_columns] * scale,
                actions,
            ],
            axis=-1,
        )
        return obs, self.next_carry(terms, carry)

    def reward_and_termination(self, obs, actions, carry):
        progress, up, heading = self.progress_up_heading(obs, carry)
        dof_pos, dof_vel = obs[:, HEAD : HEAD + 21], obs[:, HEAD + 21 : HEAD + 42]
        actions_cost = jnp.sum(actions**2, axis=-1)
        electricity = jnp.sum(jnp.abs(actions * dof_vel) * self.effort_ratio, axis=-1)
        beyond = jnp.abs(dof_pos) - LIMIT_THRESHOLD
        at_limit = jnp.sum(
            jnp.where(beyond > 0.0, beyond / LIMIT_BAND, 0.0) * self.effort_ratio,
            axis=-1,
        )
        reward = (
            progress
            + ALIVE
            + up
            + heading
            - self.actions_cost * actions_cost
            - self.energy_cost * electricity
            - self.joints_at_limit_cost * at_limit
        )
        return self.fall(obs, reward)


def _foot_sensor_names() -> tuple[str, ...]:
    return tuple(f"{foot}_{kind}" for foot in FEET for kind in ("force", "torque"))
