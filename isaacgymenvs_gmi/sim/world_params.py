"""Per-world physical properties of domain randomisation: IsaacGymEnvs' ``actor_params`` and
``sim_params.gravity`` resolved to MuJoCo model fields, drawn as upstream draws them.

An actor is a set of bodies (``TaskLogic.actors``: name -> root bodies with their subtrees; by
default each body attached to the world). One draw per body, shape or dof, as upstream:

- ``rigid_body_properties.mass`` -> ``body_mass``, ``body_inertia`` scaled alike.
- ``rigid_shape_properties.friction`` / ``torsion_friction`` / ``rolling_friction`` ->
  ``geom_friction`` columns 0 / 1 / 2; ``restitution`` e -> contact damping ratio
  ``geom_solref[:, 1]`` = -ln e / sqrt(pi^2 + ln^2 e) (e = 0: critical damping, 1).
- ``dof_properties`` (hinge and slide joints): ``damping`` -> ``dof_damping``; ``stiffness`` ->
  the driving position actuator's gain (``actuator_gainprm[:, 0]`` = -``actuator_biasprm[:,
  1]``), else ``jnt_stiffness``; ``lower`` / ``upper`` -> ``jnt_range``; ``armature`` ->
  ``dof_armature``; ``friction`` -> ``dof_frictionloss``.
- ``tendon_properties.damping`` / ``stiffness`` -> ``tendon_*`` of the actor's tendons.

``num_buckets`` snaps the draw itself to upstream's grid (upstream snaps the resulting value).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from isaacgymenvs_gmi.config.errors import ConfigError, one_of
from isaacgymenvs_gmi.config.randomization import (
    ActorProperty,
    PropertySpec,
    RandomizationSettings,
    scheduled_range,
)

_HINGE_SLIDE = (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)


def draw(spec: PropertySpec, rng: np.random.Generator, shape, step: int) -> np.ndarray:
    """Samples of ``spec`` at physics step ``step`` (its schedule), shape ``shape``."""
    a, b = scheduled_range(spec.range, spec.distribution, spec.operation, spec.scale(step))
    if spec.distribution == "gaussian":  # (mean, std)
        out = rng.normal(a, b, shape)
    elif spec.distribution == "uniform":
        out = rng.uniform(a, b, shape)
    elif a <= 0.0:  # loguniform switched fully off (additive, scale 0)
        out = np.full(shape, a)
    else:
        out = np.exp(rng.uniform(np.log(a), np.log(b), shape))
    return _bucketed(out, spec) if spec.num_buckets > 0 else out


def _bucketed(sample: np.ndarray, spec: PropertySpec) -> np.ndarray:
    a, b = spec.range
    lo, hi = (a, b) if spec.distribution != "gaussian" else (a - 2 * b**0.5, a + 2 * b**0.5)
    width = (hi - lo) / spec.num_buckets
    level = np.clip(np.floor((sample - lo) / width), 0, spec.num_buckets - 1)
    return lo + level * width


def restitution_to_dampratio(e: np.ndarray) -> np.ndarray:
    """Contact damping ratio at which a mass-spring-damper contact rebounds with ``e``."""
    e = np.clip(e, 1e-9, 1.0)
    log_e = np.log(e)
    return np.where(e < 1e-8, 1.0, -log_e / np.sqrt(np.pi**2 + log_e**2))


def dampratio_to_restitution(ratio: np.ndarray) -> np.ndarray:
    r = np.clip(ratio, 0.0, 1.0)
    under = r < 1.0
    safe = np.where(under, r, 0.5)
    return np.where(under, np.exp(-safe * np.pi / np.sqrt(1.0 - safe**2)), 0.0)


def actor_bodies(actors: dict[str, Sequence[str]] | None, model: mujoco.MjModel) -> dict:
    """Actor name -> (k,) body ids: each root body with its subtree."""
    roots = actors or {
        model.body(b).name: (model.body(b).name,)
        for b in range(1, model.nbody)
        if model.body_parentid[b] == 0 and model.body(b).name
    }
    out = {}
    for actor, names in roots.items():
        ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n) for n in names]
        if min(ids, default=-1) < 0:
            raise ValueError(f"actor {actor!r}: body {names} not in the model")
        keep = np.zeros(model.nbody, bool)
        for b in range(1, model.nbody):  # parents come before children
            keep[b] = b in ids or keep[model.body_parentid[b]]
        out[actor] = np.flatnonzero(keep)
    return out


@dataclass(frozen=True)
class Target:
    """One honoured property resolved to ``field[index, column]`` of the model."""

    prop: ActorProperty
    field: str
    index: np.ndarray  # (k,) rows of the field
    column: int | None = None
    kind: str = "value"  # value | mass | restitution | gain


def _targets(prop: ActorProperty, bodies: np.ndarray, model: mujoco.MjModel) -> list[Target]:
    attr = prop.attribute
    if prop.group == "rigid_body_properties":
        return [Target(prop, "body_mass", bodies[model.body_mass[bodies] > 0], kind="mass")]
    if prop.group == "rigid_shape_properties":
        geoms = np.flatnonzero(np.isin(model.geom_bodyid, bodies))
        if attr == "restitution":
            geoms = geoms[model.geom_solref[geoms, 0] > 0]  # standard (time constant) solref
            return [Target(prop, "geom_solref", geoms, 1, "restitution")]
        column = ("friction", "torsion_friction", "rolling_friction").index(attr)
        return [Target(prop, "geom_friction", geoms, column)]
    dof_joints = np.isin(model.jnt_type, _HINGE_SLIDE)
    joints = np.flatnonzero(np.isin(model.jnt_bodyid, bodies) & dof_joints)
    if prop.group == "tendon_properties":
        tendons = [t for t in range(model.ntendon) if _tendon_in(model, t, joints, bodies)]
        return [Target(prop, f"tendon_{attr}", np.asarray(tendons, int))]
    dofs = model.jnt_dofadr[joints]
    if attr in ("lower", "upper"):
        return [Target(prop, "jnt_range", joints, 0 if attr == "lower" else 1)]
    if attr != "stiffness":
        field = {"damping": "dof_damping", "armature": "dof_armature"}.get(attr, "dof_frictionloss")
        return [Target(prop, field, dofs)]
    driver = _position_actuators(model)
    driven = np.array([j in driver for j in joints], bool)
    gains = np.array([driver[j] for j in joints[driven]], int)
    return [
        Target(prop, "actuator_gainprm", gains, 0, "gain"),
        Target(prop, "jnt_stiffness", joints[~driven]),
    ]


def _tendon_in(model: mujoco.MjModel, tendon: int, joints: np.ndarray, bodies: np.ndarray) -> bool:
    """Whether everything ``tendon`` wraps belongs to the actor: the joints of a fixed tendon,
    the sites and geoms of a spatial one (pulleys belong to no one)."""
    adr, num = model.tendon_adr[tendon], model.tendon_num[tendon]
    owner_of = {
        int(mujoco.mjtWrap.mjWRAP_JOINT): (joints, None),
        int(mujoco.mjtWrap.mjWRAP_SITE): (bodies, model.site_bodyid),
        int(mujoco.mjtWrap.mjWRAP_SPHERE): (bodies, model.geom_bodyid),
        int(mujoco.mjtWrap.mjWRAP_CYLINDER): (bodies, model.geom_bodyid),
    }
    for w in range(adr, adr + num):
        kind, obj = int(model.wrap_type[w]), int(model.wrap_objid[w])
        if kind not in owner_of:
            continue
        members, owner = owner_of[kind]
        if (obj if owner is None else int(owner[obj])) not in members:
            return False
    return True


def _position_actuators(model: mujoco.MjModel) -> dict[int, int]:
    """Joint -> the position actuator (fixed gain kp, affine bias -kp * q) driving it."""
    out = {}
    for a in range(model.nu):
        kp = model.actuator_gainprm[a, 0]
        if (
            model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT
            and model.actuator_biastype[a] == mujoco.mjtBias.mjBIAS_AFFINE
            and kp > 0
            and np.isclose(model.actuator_biasprm[a, 1], -kp)
        ):
            out[int(model.actuator_trnid[a, 0])] = a
    return out


@dataclass
class WorldUpdate:
    """New properties for worlds ``rows`` (k,): ``fields[name]`` (k, ...) per-world rows of
    the model field ``name``; ``gravity`` (3,) for every world, or None when unchanged."""

    rows: np.ndarray
    fields: dict[str, np.ndarray]
    gravity: np.ndarray | None = None


class WorldParams:
    """The per-world model fields of ``num_envs`` worlds, drawn as upstream: all before the
    first step; then a world ``frequency`` env steps past its last draw when its episode ends
    (``setup_only`` ones never), gravity once ``frequency`` physics steps have passed."""

    def __init__(
        self,
        settings: RandomizationSettings,
        model: mujoco.MjModel,
        actors: dict[str, Sequence[str]] | None,
        num_envs: int,
        seed: int,
    ):
        self.settings = settings
        self.num_envs = num_envs
        self.rng = np.random.default_rng([seed, 0x5EED])
        self.targets = resolve_targets(settings, model, actors)
        names = sorted({t.field for t in self.targets})
        names += ["body_inertia"] if "body_mass" in names else []
        names += ["actuator_biasprm"] if "actuator_gainprm" in names else []
        self.base = {n: np.array(getattr(model, n), np.float64) for n in names}
        self.tables = {n: np.repeat(v[None], num_envs, axis=0) for n, v in self.base.items()}
        self.base_gravity = np.array(model.opt.gravity, np.float64)
        self.gravity = self.base_gravity.copy()
        self._env_steps = np.zeros(num_envs, np.int64)
        self._last_gravity_step = 0

    def first(self) -> WorldUpdate:
        """Draw everything for every world (before the first step)."""
        rows = np.arange(self.num_envs)
        self._redraw(rows, step=0, setup=True)
        if self.settings.gravity is not None:
            self._draw_gravity(0)
        return WorldUpdate(rows, self.tables, self.gravity.copy())

    def after_step(
        self, physics_step: int, finished: Callable[[], np.ndarray]
    ) -> WorldUpdate | None:
        """Advance one env step (``physics_step`` physics steps in all); ``finished()``: the (N,)
        bool mask of worlds whose episode ended (asked only when one may be redrawn)."""
        self._env_steps += 1
        gravity = None
        due = physics_step - self._last_gravity_step >= self.settings.frequency
        if self.settings.gravity is not None and due:
            gravity = self._draw_gravity(physics_step)
        rows = np.empty(0, np.int64)
        if self.tables and self._env_steps.max() >= self.settings.frequency:
            rows = np.flatnonzero((self._env_steps >= self.settings.frequency) & finished())
            self._env_steps[rows] = 0
            self._redraw(rows, physics_step, setup=False)
        if gravity is None and not rows.size:
            return None
        return WorldUpdate(rows, {n: t[rows] for n, t in self.tables.items()}, gravity)

    def _draw_gravity(self, step: int) -> np.ndarray:
        self._last_gravity_step = step
        spec = self.settings.gravity
        sample = draw(spec, self.rng, 3, step)
        add = spec.operation == "additive"
        self.gravity = self.base_gravity + sample if add else self.base_gravity * sample
        return self.gravity.copy()

    def _redraw(self, rows: np.ndarray, step: int, setup: bool) -> None:
        if not rows.size:
            return
        for t in self.targets:
            spec = t.prop.spec
            if (spec.setup_only and not setup) or not t.index.size:
                continue
            sample = draw(spec, self.rng, (rows.size, t.index.size), step)
            base = self.base[t.field][t.index]
            base = base if t.column is None else base[:, t.column]
            if t.kind == "restitution":
                base = dampratio_to_restitution(base)
            new = base + sample if spec.operation == "additive" else base * sample
            self._write(t, rows, new)

    def _write(self, t: Target, rows: np.ndarray, new: np.ndarray) -> None:
        cells = np.ix_(rows, t.index)
        if t.kind == "restitution":
            new = restitution_to_dampratio(new)
        if t.kind == "mass":
            new = np.maximum(new, 1e-9)  # MuJoCo refuses no mass only at compile time
            ratio = (new / self.base["body_mass"][t.index])[..., None]
            self.tables["body_inertia"][cells] = self.base["body_inertia"][t.index] * ratio
        self.tables[t.field][cells if t.column is None else (*cells, t.column)] = new
        if t.kind == "gain":  # a position actuator's bias is -kp * q
            self.tables["actuator_biasprm"][(*cells, 1)] = -new


def resolve_targets(
    settings: RandomizationSettings, model: mujoco.MjModel, actors: dict | None
) -> list[Target]:
    """Every honoured actor property as model-field targets; an actor the task does not have
    is refused naming its key and the task's actors."""
    key = "task.task.randomization_params.actor_params"
    try:
        bodies = actor_bodies(actors, model)
    except ValueError as err:  # an own asset without the bodies the task names its actors by
        raise ConfigError(key, sorted(actors or ()), str(err)) from None
    targets = []
    for prop in settings.actor_properties:
        if prop.actor not in bodies:
            raise ConfigError(f"{key}.{prop.actor}", "...", f"not an actor: {one_of(bodies)}")
        targets += _targets(prop, bodies[prop.actor], model)
    return targets
