"""Domain randomisation settings with IsaacGymEnvs' schema (``task.task.randomize`` and
``task.task.randomization_params``), validated at the edge.

Honoured: observation and action noise, ``sim_params.gravity``, and the per-world properties
MuJoCo can vary under ``actor_params.<actor>`` (:data:`ACTOR_PROPERTIES`). Isaac Gym properties
with no MuJoCo counterpart are accepted and listed once as not applied; anything else is
refused naming its key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._values import as_mapping, to_plain
from .errors import ConfigError, one_of
from .schema import FLAG, INVALID, Choice, Int, Scalar, Settings, real, setting

_PREFIX = "task.task.randomization_params"
NOISE_DISTRIBUTIONS = ("gaussian", "uniform")
DISTRIBUTIONS = ("gaussian", "uniform", "loguniform")
OPERATIONS = ("additive", "scaling")
SCHEDULES = ("linear", "constant")
_KNOWN = ("frequency", "observations", "actions", "sim_params", "actor_params")

# actor property group -> (attributes reproduced in MuJoCo, Isaac Gym attributes that are not)
ACTOR_PROPERTIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "rigid_body_properties": (("mass",), ("com", "inertia", "flags", "invMass", "invInertia")),
    "rigid_shape_properties": (
        ("friction", "torsion_friction", "rolling_friction", "restitution"),
        ("compliance", "thickness", "contact_offset", "rest_offset", "filter"),
    ),
    "dof_properties": (
        ("damping", "stiffness", "lower", "upper", "armature", "friction"),
        ("velocity", "effort", "hasLimits", "driveMode"),
    ),
    "tendon_properties": (
        ("damping", "stiffness"),
        ("limit_stiffness", "lower_limit", "upper_limit", "rest_length"),
    ),
}
_ACTOR_FLAGS = ("color", "scale")  # whole-actor entries Isaac Gym has and MuJoCo worlds do not
_SIM_PARAMS = (("gravity",), ("rest_offset",))


@dataclass(frozen=True)
class _Pair(Scalar):
    def text(self) -> str:
        return "must be a pair of numbers [a, b]"

    def convert(self, value: Any) -> Any:
        if not isinstance(value, list | tuple) or len(value) != 2:
            return INVALID
        pair = tuple(real(v) for v in value)
        return INVALID if None in pair else pair


_PAIR = _Pair()


def schedule_scale(schedule: str | None, schedule_steps: int, step: int) -> float:
    """How much of a randomisation is on at physics step ``step`` (0..1): linear ramps it in
    over ``schedule_steps``, constant switches it on after them, None: always on."""
    if schedule == "linear":
        return min(step, schedule_steps) / schedule_steps
    if schedule == "constant":
        return float(step >= schedule_steps)
    return 1.0


def scheduled_range(
    pair: tuple[float, float], distribution: str, operation: str, scale: float
) -> tuple[float, float]:
    """``pair`` with ``scale`` (0..1) of it on, as upstream schedules it: gaussian (mean, std):
    the std scales and the mean moves; uniform and loguniform (low, high): both ends move.
    They move towards 0 for an additive operation, towards 1 (no change) for a scaling one."""
    a, b = pair
    shift = 1.0 - scale if operation == "scaling" else 0.0
    if distribution == "gaussian":
        return a * scale + shift, b * scale
    return a * scale + shift, b * scale + shift


class _Scheduled(Settings):
    """What noise and properties share: a schedule, which needs its length."""

    schedule: str | None
    schedule_steps: int

    def cross_check(self, prefix: str) -> None:
        if self.schedule is not None and self.schedule_steps < 1:
            raise ConfigError(f"{prefix}.schedule_steps", None, "must be an integer >= 1")

    def scale(self, step: int) -> float:
        """How much of it is on at physics step ``step`` (0..1)."""
        return schedule_scale(self.schedule, self.schedule_steps, step)


@dataclass(frozen=True)
class NoiseSpec(_Scheduled):
    """Noise on observations or actions, in upstream's terms.

    gaussian: ``range`` = (mean, std) of fresh noise each step, ``range_correlated`` = (mean,
    std) of a part drawn once per refresh; uniform: (low, high) of each. ``operation``: added
    to the tensor, or multiplied with it. ``schedule`` over ``schedule_steps`` physics steps."""

    distribution: str = setting("gaussian", Choice(NOISE_DISTRIBUTIONS))
    operation: str = setting("additive", Choice(OPERATIONS))
    range: tuple[float, float] = setting((0.0, 0.0), _PAIR, required=True)
    range_correlated: tuple[float, float] = setting((0.0, 0.0), _PAIR)
    schedule: str | None = setting(None, Choice(SCHEDULES, optional=True))
    schedule_steps: int = setting(0, Int(1))


@dataclass(frozen=True)
class PropertySpec(_Scheduled):
    """How one physical property is drawn: ``range`` = (mean, std) for gaussian, (low, high)
    for uniform and loguniform (both > 0); the draw is added to, or multiplies, the model's own
    value. ``setup_only``: drawn once, before the first step. ``num_buckets`` > 0: draws snap to
    that many levels over the range (upstream's material buckets)."""

    distribution: str = setting("gaussian", Choice(DISTRIBUTIONS))
    operation: str = setting("additive", Choice(OPERATIONS))
    range: tuple[float, float] = setting((0.0, 0.0), _PAIR, required=True)
    schedule: str | None = setting(None, Choice(SCHEDULES, optional=True))
    schedule_steps: int = setting(0, Int(1))
    setup_only: bool = setting(False, FLAG)
    num_buckets: int = setting(0, Int(0))

    def cross_check(self, prefix: str) -> None:
        super().cross_check(prefix)
        low, high = self.range
        if self.distribution == "loguniform" and min(low, high) <= 0:
            raise ConfigError(
                f"{prefix}.range", list(self.range), "loguniform needs 0 < low <= high"
            )
        if self.distribution != "gaussian" and low > high:
            raise ConfigError(
                f"{prefix}.range", list(self.range), f"{self.distribution} needs low <= high"
            )


@dataclass(frozen=True)
class ActorProperty:
    """``actor_params.<actor>.<group>.<attribute>`` and how it is drawn."""

    actor: str
    group: str
    attribute: str
    spec: PropertySpec

    @property
    def key(self) -> str:
        return f"{_PREFIX}.actor_params.{self.actor}.{self.group}.{self.attribute}"


@dataclass(frozen=True)
class RandomizationSettings:
    """``frequency``: physics steps between refreshes of the noise and of gravity, and env
    steps an env runs before it takes new physical properties at its next reset (as upstream
    counts them). ``not_applied``: accepted keys without a MuJoCo counterpart."""

    frequency: int = 1
    observations: NoiseSpec | None = None
    actions: NoiseSpec | None = None
    gravity: PropertySpec | None = None
    actor_properties: tuple[ActorProperty, ...] = ()
    not_applied: tuple[str, ...] = ()

    @classmethod
    def from_task_config(cls, task_config: Mapping[str, Any]) -> RandomizationSettings | None:
        """From the resolved ``task`` node; None when ``task.task.randomize`` is off."""
        task = to_plain(task_config.get("task")) or {}
        if not FLAG.check("task.task.randomize", task.get("randomize", False)):
            return None
        params = to_plain(task.get("randomization_params")) or {}
        if not isinstance(params, Mapping):
            raise ConfigError(_PREFIX, params, "must be a mapping")
        for name in params:
            if name not in _KNOWN:
                raise ConfigError(f"{_PREFIX}.{name}", params[name], one_of(_KNOWN))
        noise = {
            name: NoiseSpec.from_node(params[name], prefix=f"{_PREFIX}.{name}")
            for name in ("observations", "actions")
            if params.get(name) is not None
        }
        frequency = Int(1).check(f"{_PREFIX}.frequency", params.get("frequency", 1))
        not_applied: list[str] = []
        gravity = _sim_params(params.get("sim_params"), not_applied)
        actors = _actor_params(params.get("actor_params"), not_applied)
        return cls(
            frequency,
            **noise,
            gravity=gravity,
            actor_properties=actors,
            not_applied=tuple(not_applied),
        )

    @property
    def physics(self) -> bool:
        """Whether anything of the physics itself is randomised."""
        return self.gravity is not None or bool(self.actor_properties)

    def describe(self) -> str:
        """One line: what is applied and what is not."""
        applied = [f"{n} noise" for n in ("observations", "actions") if getattr(self, n)]
        applied += ["sim_params.gravity"] if self.gravity else []
        applied += [p.key.removeprefix(f"{_PREFIX}.") for p in self.actor_properties]
        line = f"domain randomisation: {', '.join(applied) or 'nothing'} applied"
        line += f" (frequency {self.frequency})"
        if self.not_applied:
            line += f"; no MuJoCo counterpart, not applied: {', '.join(self.not_applied)}"
        return line


def _sim_params(node: Any, not_applied: list[str]) -> PropertySpec | None:
    key = f"{_PREFIX}.sim_params"
    node = as_mapping(key, node)
    return _properties(key, "sim_params", node, _SIM_PARAMS, not_applied).get("gravity")


def _actor_params(node: Any, not_applied: list[str]) -> tuple[ActorProperty, ...]:
    key = f"{_PREFIX}.actor_params"
    node = to_plain(node)
    if node is None:
        return ()
    if not isinstance(node, Mapping):
        raise ConfigError(key, node, "must be a mapping of actor name -> properties")
    found: list[ActorProperty] = []
    for actor, groups in node.items():
        if not isinstance(groups, Mapping):
            raise ConfigError(f"{key}.{actor}", groups, "must be a mapping of property groups")
        for group, attrs in groups.items():
            where = f"{key}.{actor}.{group}"
            if group in _ACTOR_FLAGS:
                not_applied.append(f"actor_params.{actor}.{group}")
                continue
            if group not in ACTOR_PROPERTIES:
                raise ConfigError(where, attrs, one_of((*ACTOR_PROPERTIES, *_ACTOR_FLAGS)))
            if not isinstance(attrs, Mapping):
                raise ConfigError(where, attrs, "must be a mapping of attribute -> settings")
            short = f"actor_params.{actor}.{group}"
            table = ACTOR_PROPERTIES[group]
            for attr, spec in _properties(where, short, attrs, table, not_applied).items():
                found.append(ActorProperty(actor, group, attr, spec))
    return tuple(found)


def _properties(
    key: str, short: str, attrs: Mapping, table: tuple, not_applied: list[str]
) -> dict[str, PropertySpec]:
    """``attrs`` (attribute -> settings at ``key``) sorted by ``table`` = (attributes MuJoCo
    reproduces, ones it has no counterpart for): the specs of the first kind; the second kind
    noted in ``not_applied`` as ``<short>.<attribute>``; anything else refused naming it."""
    honoured, known = table
    out = {}
    for attr, spec in attrs.items():
        if attr in known:
            not_applied.append(f"{short}.{attr}")
        elif attr not in honoured:
            raise ConfigError(f"{key}.{attr}", spec, one_of(honoured + known))
        else:
            out[attr] = PropertySpec.from_node(spec, prefix=f"{key}.{attr}")
    return out
