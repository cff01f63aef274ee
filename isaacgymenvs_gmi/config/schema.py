"""One declarative schema for settings: each field of a frozen dataclass says what its key takes,
and :func:`parse` builds the dataclass from a config node, refusing a bad value with a
:class:`ConfigError` naming the key::

    @dataclass(frozen=True)
    class PlanSettings(Settings):
        PREFIX = "gmi.plan"
        alpha: float = setting(0.1, Real(0.0, open_low=True))
        replan: bool = setting(False, FLAG)

    plan = PlanSettings.from_cfg(cfg)  # the composed config; or .from_node(cfg.gmi.plan)

The rules: a real number is a finite int or float, not a bool and not a string (Hydra and YAML
read ``1e-4`` as a number, so a quoted one is text and would reach rl-games as text); an integer
is an int or a string of digits (an interpolation can leave one), not a bool or a float; a flag
is ``true`` or ``false``; a choice is matched case-insensitively and returned in its canonical
spelling; an optional key given empty (``key=``) is null. Rules between fields (``c_bar <=
rho_bar``) are a settings class's ``cross_check``, run after each field is checked.
"""

from __future__ import annotations

import math
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from ._values import as_mapping, check_known_keys, select, to_plain
from .errors import ConfigError, one_of

T = TypeVar("T")
_KIND = "kind"
_KEY = "key"
_REQUIRED = "required"
INVALID = object()  # what a kind's convert() returns for a value it does not take
_ABSENT = object()
MAX_NAME = 200  # a run folder is a name plus rl-games' date suffix: under 255 bytes
_NAME = re.compile(r"^[A-Za-z0-9_.+=@,-]+$")  # letters, digits and a few safe punctuation marks
_DEVICE = re.compile(r"^(cpu|cuda(:\d+)?)$")


class Kind(ABC):
    """What one key takes."""

    @abstractmethod
    def text(self) -> str:
        """The rule, as the message gives it (``must be ...``)."""

    @abstractmethod
    def check(self, key: str, value: Any) -> Any:
        """The typed value; a :class:`ConfigError` naming ``key`` when ``value`` is not one."""


@dataclass(frozen=True)
class Scalar(Kind):
    """A kind judged by one conversion: ``convert`` gives the typed value or :data:`INVALID`;
    ``optional`` (keyword only): null (or empty) is taken, as ``None``."""

    optional: bool = field(default=False, kw_only=True)

    @abstractmethod
    def convert(self, value: Any) -> Any:
        """The typed value, or :data:`INVALID`."""

    def check(self, key: str, value: Any) -> Any:
        value = to_plain(value)
        if value in (None, "") and self.optional:
            return None
        typed = self.convert(value)
        if typed is INVALID:
            raise ConfigError(key, value, self.text())
        return typed


@dataclass(frozen=True)
class Int(Scalar):
    """An integer in ``[minimum, maximum]``; ``why`` is added to the message in brackets;
    ``auto``: the string ``auto`` is also taken, as ``None``."""

    minimum: int = 0
    maximum: int | None = None
    why: str = ""
    auto: bool = False

    def text(self) -> str:
        span = (
            f">= {self.minimum}" if self.maximum is None else f"in [{self.minimum}, {self.maximum}]"
        )
        return (
            f"must be an integer {span}"
            + (f" ({self.why})" if self.why else "")
            + (" or auto" if self.auto else "")
        )

    def convert(self, value: Any) -> Any:
        if self.auto and isinstance(value, str) and value.strip().lower() == "auto":
            return None
        number = integer(value)
        if number is None or number < self.minimum:
            return INVALID
        return INVALID if self.maximum is not None and number > self.maximum else number


@dataclass(frozen=True)
class Real(Scalar):
    """A finite real number within the bounds (``open_*``: that end excluded)."""

    low: float = -math.inf
    high: float = math.inf
    open_low: bool = False
    open_high: bool = False

    def text(self) -> str:
        if self.low == -math.inf and self.high == math.inf:
            return "must be a finite number"
        if self.high == math.inf:
            return f"must be a number {'>' if self.open_low else '>='} {self.low:g}"
        if self.low == -math.inf:
            return f"must be a number {'<' if self.open_high else '<='} {self.high:g}"
        left, right = "(" if self.open_low else "[", ")" if self.open_high else "]"
        return f"must be a number in {left}{self.low:g}, {self.high:g}{right}"

    def convert(self, value: Any) -> Any:
        number = real(value)
        if number is None or number < self.low or number > self.high:
            return INVALID
        if (self.open_low and number == self.low) or (self.open_high and number == self.high):
            return INVALID
        return number


POSITIVE = Real(0.0, open_low=True)


@dataclass(frozen=True)
class Flag(Scalar):
    """``true`` or ``false``."""

    def text(self) -> str:
        return "must be true or false"

    def convert(self, value: Any) -> Any:
        return value if isinstance(value, bool) else INVALID


FLAG = Flag()


@dataclass(frozen=True)
class Choice(Scalar):
    """One of ``allowed``, matched case-insensitively; the canonical spelling is returned."""

    allowed: tuple[str, ...] = ()

    def text(self) -> str:
        return one_of(self.allowed)

    def convert(self, value: Any) -> Any:
        if isinstance(value, str):
            for choice in self.allowed:
                if choice.lower() == value.strip().lower():
                    return choice
        return INVALID


@dataclass(frozen=True)
class Text(Scalar):
    """A non-empty string (a folder, a name); ``what`` says which, for the message;
    ``lower``: returned stripped and lower-cased."""

    what: str = "a folder"
    lower: bool = False

    def text(self) -> str:
        return f"must be {'null or ' if self.optional else ''}{self.what}"

    def convert(self, value: Any) -> Any:
        if not isinstance(value, str) or not value.strip():
            return INVALID
        return value.strip().lower() if self.lower else value


@dataclass(frozen=True)
class Name(Scalar):
    """One folder name (a run's, an experiment's), never a path: ``..``, a separator or a space
    would put the folder somewhere else. A number is taken as its digits."""

    def text(self) -> str:
        return (
            f"must be a folder name of at most {MAX_NAME} characters (letters, digits, "
            "_ . - + = @ ,), not a path: no '/', '\\', '..' or spaces"
        )

    def convert(self, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, str | int):
            return INVALID
        text = str(value)
        if len(text) > MAX_NAME or text in (".", "..") or ".." in text:
            return INVALID
        return text if _NAME.match(text) else INVALID


@dataclass(frozen=True)
class Device(Scalar):
    """A torch device name: ``cpu``, ``cuda`` or ``cuda:N`` (returned lower-cased)."""

    def text(self) -> str:
        return "must be 'cpu', 'cuda' or 'cuda:N'"

    def convert(self, value: Any) -> Any:
        if not isinstance(value, str) or not _DEVICE.match(value.strip().lower()):
            return INVALID
        return value.strip().lower()


@dataclass(frozen=True)
class EpochLimit(Scalar):
    """An epoch or frame limit: an integer >= 1 (a whole float too), or -1 for none."""

    def text(self) -> str:
        return "must be an integer >= 1, or -1 for no limit"

    def convert(self, value: Any) -> Any:
        number = real(value)
        limit = integer(int(number) if number is not None and number.is_integer() else value)
        return INVALID if limit is None or (limit < 1 and limit != -1) else limit


@dataclass(frozen=True)
class Folder(Scalar):
    """A folder that exists (``~`` expanded); its absolute path is returned. ``what`` says which
    folder, for the message."""

    what: str = "a folder"

    def text(self) -> str:
        return f"must be an existing folder ({self.what})"

    def convert(self, value: Any) -> Any:
        if not isinstance(value, str) or not value.strip():
            return INVALID
        path = os.path.expanduser(value)
        return os.path.abspath(path) if os.path.isdir(path) else INVALID


@dataclass(frozen=True)
class Section(Scalar):
    """A mapping of settings read as a whole by another part (rl-games' sub-configs)."""

    def text(self) -> str:
        return "must be a mapping of settings"

    def convert(self, value: Any) -> Any:
        return dict(value) if isinstance(value, Mapping) else INVALID


@dataclass(frozen=True)
class Many(Kind):
    """A list of ``each`` (a tuple; ``what`` names them for the message): non-empty unless
    ``empty``, or null when ``optional``; an item's error names ``key[i]``."""

    each: Kind = field(default_factory=lambda: Real())
    what: str = "numbers"
    optional: bool = False
    empty: bool = False

    def text(self) -> str:
        null, size = "null or " if self.optional else "", "" if self.empty else "non-empty "
        return f"must be {null}a {size}list of {self.what}"

    def check(self, key: str, value: Any) -> Any:
        value = to_plain(value)
        if value in (None, "") and self.optional:
            return None
        if not isinstance(value, list | tuple) or not (value or self.empty):
            raise ConfigError(key, value, self.text())
        return tuple(self.each.check(f"{key}[{i}]", item) for i, item in enumerate(value))


@dataclass(frozen=True)
class Nested(Kind):
    """A group of settings: another schema dataclass, parsed under ``key``."""

    settings: type = object

    def text(self) -> str:
        return "must be a mapping of settings"

    def check(self, key: str, value: Any) -> Any:
        return parse(self.settings, value, key)


class Settings:
    """Base of a schema dataclass. ``from_cfg`` always takes the run's whole composed config and
    reads the group under ``PREFIX`` (with no ``PREFIX``: the top-level keys its fields name);
    ``from_node`` takes the group's own node. ``OTHERS``: keys of its group that another part
    reads (``gmi.async``: the async mode's settings)."""

    PREFIX: ClassVar[str] = ""
    OTHERS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_cfg(cls: type[T], cfg: Any) -> T:
        """Build from the composed config; missing keys take defaults (ConfigError naming the
        key for an unknown key or a bad value)."""
        prefix = cls.PREFIX  # type: ignore[attr-defined]
        return cls.from_node(select(cfg, prefix) if prefix else cfg)  # type: ignore[attr-defined]

    @classmethod
    def from_node(cls: type[T], node: Any, *, prefix: str | None = None) -> T:
        """Build from the group's own node, named ``prefix`` (default ``PREFIX``) in errors."""
        return parse(cls, node, cls.PREFIX if prefix is None else prefix)  # type: ignore[attr-defined]

    def cross_check(self, prefix: str) -> None:
        """Refuse a combination of fields (each is checked already); nothing by default."""


def integer(value: Any) -> int | None:
    """``value`` as an int under the integer rule (see the module), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value.strip())
    return None


def real(value: Any) -> float | None:
    """``value`` as a float under the real-number rule (see the module), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def setting(default: Any, kind: Kind, *, key: str = "", required: bool = False) -> Any:
    """A dataclass field that :func:`parse` fills: its default and what it takes; ``key``: the
    config key when it is not the field's name (a trailing ``_`` is dropped from names);
    ``required``: a config must give it (the default is only the dataclass's)."""
    metadata = {_KIND: kind, _KEY: key, _REQUIRED: required}
    if isinstance(default, dict | list):
        return field(default_factory=lambda: type(default)(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def nested(settings: type) -> Any:
    """A field holding a group of settings (its defaults unless given)."""
    metadata = {_KIND: Nested(settings=settings), _KEY: "", _REQUIRED: False}
    return field(default_factory=settings, metadata=metadata)


def _key(f: Field) -> str:
    return f.metadata[_KEY] or f.name.rstrip("_")


def keys(cls: type) -> tuple[str, ...]:
    """The config keys a settings class reads, in its order."""
    return tuple(_key(f) for f in fields(cls) if _KIND in f.metadata)


def specs(cls: type) -> tuple[tuple[str, Kind, Any], ...]:
    """``(key, kind, default)`` of each key a settings class reads, in its order."""
    return tuple(
        (_key(f), f.metadata[_KIND], _default(f)) for f in fields(cls) if _KIND in f.metadata
    )


def _default(f: Field) -> Any:
    return f.default_factory() if f.default is MISSING else f.default  # type: ignore[misc]


def parse(cls: type[T], node: Any, prefix: str = "") -> T:
    """Build ``cls`` from ``node`` (a DictConfig or a mapping); a key not given takes its
    default. Under a ``prefix`` (a group) every key must be one of ``cls``'s; without one,
    ``node`` is the whole config and only ``cls``'s keys (dotted keys allowed) are read.
    A ConfigError names ``<prefix>.<key>`` for an unknown key or a bad value."""
    specs = [f for f in fields(cls) if _KIND in f.metadata]  # type: ignore[arg-type]
    if prefix:
        node = as_mapping(prefix, node)
        check_known_keys(prefix, node, keys(cls) + getattr(cls, "OTHERS", ()))
    values = {}
    for f in specs:
        raw, kind = select(node, _key(f), _ABSENT), f.metadata[_KIND]
        full = f"{prefix}.{_key(f)}" if prefix else _key(f)
        if raw is not _ABSENT:
            values[f.name] = kind.check(full, raw)
        elif f.metadata[_REQUIRED]:
            raise ConfigError(full, None, "missing: " + kind.text().removeprefix("must be "))
    settings = cls(**values)
    if isinstance(settings, Settings):
        settings.cross_check(prefix)
    return settings
