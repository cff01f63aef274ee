"""BallBalance: keep a ball on a tray held up by three legs (IsaacGymEnvs' BallBalance rules).

The robot: a free tray on three legs; each leg hangs from the tray rim on a passive hinge
(``upper_leg_joint``), bends at a driven knee (``lower_leg_joint``) and ends in a foot pinned to
the ground, so the three knees set the tray's height and tilt. A ball is dropped on the tray.

obs (24) = [knee angles (3), knee velocities (3), ball position (3), ball linear velocity (3)
(world frame), x-force at the mounts of legs 0, 1, 2 / 20 (3), x-torque at the three mounts / 20
(3), y-torque (3), z-torque (3)]: component k of all three sensors, as upstream's code indexes
its (envs, 3 sensors, 3 components) force and torque arrays (``sensor_forces[..., 0]``; its
comments read as if it observed sensor 0's force vector). Actions (3): knee target speeds;
each knee's position target moves by ``actionSpeedScale * action`` rad/s, stays within the knee's
range and starts an episode at the knee's reset angle (0); a stiff PD drive (4000 N m/rad,
100 N m s/rad) pulls the knee to it.
Reward = 1 / (1 + |ball - (0, 0, 0.7)|) * 1 / (1 + |ball velocity|). An episode ends when the
ball centre drops below 1.5 ball radii (0.15 m), or after ``maxEpisodeLength - 1`` steps.
Reset: robot at rest in its initial pose; ball 1-2 m high, 0.001-0.5 m off the vertical axis
in a random direction, falling at 5 m/s and moving towards the axis at up to 5 m/s (the
further out, the faster).

Deviations from upstream, and why:

* The knee target is the activation of MuJoCo's integrating actuator (``intvelocity``), which
  moves at ``ctrl`` rad/s through every physics step; upstream moves it by
  ``dt * actionSpeedScale * action`` once per env step, so ``ctrl = action * actionSpeedScale /
  controlFrequencyInv`` (``substeps`` split ``dt`` and cancel out). A physics step pulls
  towards the target as it was before the step (MJX has no ``actearly``): the drive lags
  upstream's by one physics step (10 ms).
* PhysX drives are implicit; MuJoCo's position gain is explicit, and at dt = 0.01 s it is
  unstable on a light leg inside a closed loop. The knees carry a rotor inertia (armature
  0.3 kg m^2, as a geared servo's would): a knee reaches 63% of a target step in 30 ms (24 ms
  without it, as upstream's damping / stiffness). The damping is the joint's (implicit).
* Feet are pinned to their ground points by ``connect`` equality constraints (upstream:
  translational attractors of stiffness 5e7).
* Sensors: MuJoCo force/torque sensors measure what a body exchanges with its parent, so they
  sit on each leg's mount and read the load (in the leg's frame) that the tray passes to that
  leg. Upstream's three tray sensors read the tray's net force (the same for all three) and
  its torques about three points; slots 12:15 are the mounts' x-forces.
* Contacts: only the ball collides, with the tray and the floor (upstream's episodes end before
  the ball reaches the ground, and the feet are pinned). The tray's disc keeps its mass, but a
  massless square around it (same thickness) takes the contacts: MJX's sphere-cylinder test is
  an iterative fit that misplaces contacts on a thin disc.
* Episodes time out after ``maxEpisodeLength - 1`` steps, upstream's rule for every task
  (``TaskLogic.timeout_steps``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from .base import PhysicsFrame, TaskLogic
from .indexing import columns

LEGS = 3
LEG_ANGLES = tuple(2.0 * math.pi * i / LEGS for i in range(LEGS))
FOOT_RADIUS = 0.4  # feet stand on the ground this far from the centre, below the rim mounts
FOOT_HEIGHT = 0.02  # = leg radius
KNEE_STIFFNESS = 4000.0
KNEE_DAMPING = 100.0
KNEE_ARMATURE = 0.3
BALL_RADIUS = 0.1
BALL_DENSITY = 200.0
BALL_START = (0.2, 0.0, 2.0)
TARGET = (0.0, 0.0, 0.7)  # where the ball should rest: on the tray, above the centre
SENSOR_SCALE = 1.0 / 20.0
# reset distribution of the ball
MIN_DIST, MAX_DIST = 0.001, 0.5
MIN_HEIGHT, MAX_HEIGHT = 1.0, 2.0
MAX_HORIZONTAL_SPEED, FALL_SPEED = 5.0, 5.0

BODIES = ("tray",) + tuple(f"{part}_leg{i}" for i in range(LEGS) for part in ("upper", "lower"))
JOINTS = tuple(f"{part}_leg_joint{i}" for i in range(LEGS) for part in ("upper", "lower"))
FORCES = tuple(f"mount{i}_force" for i in range(LEGS))  # (3 sensors) x (x, y, z)
TORQUES = tuple(f"mount{i}_torque" for i in range(LEGS))
FORCE, TORQUE = mujoco.mjtSensor.mjSENS_FORCE, mujoco.mjtSensor.mjSENS_TORQUE
SITE = mujoco.mjtObj.mjOBJ_SITE


class BallBalance(TaskLogic):
    name = "BallBalance"
    num_obs = 24
    num_actions = 3
    asset_file = "ball_balance.xml"
    actors = {"bbot": ("tray",), "ball": ("ball",)}  # upstream's actor names
    default_episode_length = 500

    def __init__(self, env_cfg, sim_dt, info):
        super().__init__(env_cfg, sim_dt, info)
        self.max_episode_length = int(env_cfg.get("maxEpisodeLength", self.default_episode_length))
        # knee target speed per action; the target moves through all physics steps of an env step
        self.action_speed_scale = float(env_cfg["actionSpeedScale"]) / int(
            env_cfg.get("controlFrequencyInv", 1)
        )
        tree = info.tree

        def first_joint(body):
            joint = tree.body_joints[tree.bodies[body]][0]
            return int(tree.jnt_qposadr[joint]), int(tree.jnt_dofadr[joint])

        knees = [first_joint(f"lower_leg{i}") for i in range(LEGS)]
        self.knee_qpos = columns([q for q, _ in knees])  # 3 columns
        self.knee_qvel = columns([v for _, v in knees])
        self.ball_qpos, self.ball_qvel = first_joint("ball")  # free joint: pos, quat / lin, ang
        self.qpos0 = jnp.asarray(info.qpos0, jnp.float32)
        self.target = jnp.asarray(TARGET, jnp.float32)

    @classmethod
    def prepare_spec(cls, spec, env_cfg):
        """Add what upstream adds to its balance bot in code: floor, ball, pinned feet, knee
        drives, mount sensors; and let only the ball collide."""
        missing = [b for b in BODIES if spec.body(b) is None]
        missing += [j for j in JOINTS if spec.joint(j) is None]
        if missing:
            raise ValueError(
                "env.asset.assetFileName: a BallBalance model needs the bodies "
                f"{', '.join(BODIES)} and the hinges {', '.join(JOINTS)}; missing: {missing}"
            )
        tray = spec.body("tray")
        for geom in list(spec.geoms):  # of the robot, only the tray can be hit (by the ball)
            on_tray = geom.parent.name == "tray"
            disc = on_tray and geom.type == mujoco.mjtGeom.mjGEOM_CYLINDER
            geom.contype, geom.conaffinity = 0, int(on_tray and not disc)
            if disc:  # a massless square around it, as thick, takes its contacts
                tray.add_geom(
                    name="tray_surface",
                    type=mujoco.mjtGeom.mjGEOM_BOX,
                    size=[geom.size[0], geom.size[0], geom.size[1]],
                    pos=geom.pos,
                    quat=geom.quat,
                    mass=0.0,
                    contype=0,
                    conaffinity=1,
                )
        spec.worldbody.add_geom(
            name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1], contype=0, conaffinity=1
        )
        ball = spec.worldbody.add_body(name="ball", pos=list(BALL_START))
        ball.add_freejoint(name="ball_joint")
        ball.add_geom(
            type=mujoco.mjtGeom.mjGEOM_SPHERE,
            size=[BALL_RADIUS, 0, 0],
            density=BALL_DENSITY,
            contype=1,
            conaffinity=0,
        )
        for i, angle in enumerate(LEG_ANGLES):
            # the foot: the lower leg's point at this ground point in the initial pose
            foot = [FOOT_RADIUS * math.cos(angle), FOOT_RADIUS * math.sin(angle), FOOT_HEIGHT]
            spec.add_equality(
                type=mujoco.mjtEq.mjEQ_CONNECT,
                objtype=mujoco.mjtObj.mjOBJ_BODY,
                name1="world",
                name2=f"lower_leg{i}",
                data=foot + [0.0] * 9,
            )
            knee = spec.joint(f"lower_leg_joint{i}")
            knee.damping[0] = KNEE_DAMPING
            knee.armature = KNEE_ARMATURE
            drive = spec.add_actuator(
                name=f"knee{i}", trntype=mujoco.mjtTrn.mjTRN_JOINT, target=knee.name
            )
            drive.set_to_intvelocity(kp=KNEE_STIFFNESS, inheritrange=True)  # target in range
            # force and torque the tray passes to the leg, where the leg hangs from it
            mount = spec.body(f"upper_leg{i}").add_site(
                name=f"mount{i}", pos=spec.joint(f"upper_leg_joint{i}").pos
            )
            for what, kind in (("force", FORCE), ("torque", TORQUE)):
                spec.add_sensor(
                    name=f"mount{i}_{what}", type=kind, objtype=SITE, objname=mount.name
                )

    def action_scale(self):
        return np.full(self.num_actions, self.action_speed_scale)

    def initial_carry(self, num_envs):
        return ()

    def sample_reset(self, key, num_envs):
        """Robot at rest in its initial pose (qpos0); the ball's drop drawn as upstream."""
        kd, ka, kh, ks = jax.random.split(key, 4)
        dist = jax.random.uniform(kd, (num_envs,), minval=MIN_DIST, maxval=MAX_DIST)
        angle = jax.random.uniform(ka, (num_envs,), minval=-jnp.pi, maxval=jnp.pi)
        direction = jnp.stack([jnp.cos(angle), jnp.sin(angle)], axis=-1)  # (N, 2)
        height = jax.random.uniform(kh, (num_envs,), minval=MIN_HEIGHT, maxval=MAX_HEIGHT)
        speed = jax.random.uniform(ks, (num_envs,), maxval=MAX_HORIZONTAL_SPEED)
        speed = speed * (dist - MIN_DIST) / (MAX_DIST - MIN_DIST)
        b, v = self.ball_qpos, self.ball_qvel
        qpos = jnp.tile(self.qpos0, (num_envs, 1))
        qpos = qpos.at[:, b : b + 2].set(dist[:, None] * direction)
        qpos = qpos.at[:, b + 2].set(height)
        qpos = qpos.at[:, b + 3 : b + 7].set(jnp.array([1.0, 0.0, 0.0, 0.0]))
        qvel = jnp.zeros((num_envs, self.info.nv), jnp.float32)
        qvel = qvel.at[:, v : v + 2].set(-speed[:, None] * direction)
        qvel = qvel.at[:, v + 2].set(-FALL_SPEED)
        return qpos, qvel

    def reset_carry(self, carry, frame, key):
        return ()

    def observe(self, frame: PhysicsFrame, actions, carry):
        """(N, 24) observations in the layout of the module docstring."""
        q, v, b, bv = frame.qpos, frame.qvel, self.ball_qpos, self.ball_qvel
        forces, torques = (
            jnp.stack([self.info.sensor(frame.sensordata, s) for s in names], axis=1)
            for names in (FORCES, TORQUES)
        )  # (N, 3 sensors, 3 components) each
        sensors = [forces[..., 0], torques[..., 0], torques[..., 1], torques[..., 2]]
        obs = jnp.concatenate(
            [q[:, self.knee_qpos], v[:, self.knee_qvel], q[:, b : b + 3], v[:, bv : bv + 3]]
            + [s * SENSOR_SCALE for s in sensors],
            axis=-1,
        )
        return obs, carry

    def reward_and_termination(self, obs, actions, carry):
        """Reward (N,) from the ball's distance to the target and its speed; ends (N,) when the
        ball has fallen below the tray."""
        ball_pos, ball_vel = obs[:, 6:9], obs[:, 9:12]
        dist = jnp.linalg.norm(ball_pos - self.target, axis=-1)
        speed = jnp.linalg.norm(ball_vel, axis=-1)
        reward = 1.0 / (1.0 + dist) * (1.0 / (1.0 + speed))
        fallen = ball_pos[:, 2] < 1.5 * BALL_RADIUS
        return reward, fallen
