"""The one exception type raised for invalid configuration."""

from __future__ import annotations

from collections.abc import Iterable


class ConfigError(ValueError):
    """A configuration value is missing, of the wrong type or out of range.

    The message always starts with the dotted key and the offending value, followed by the
    constraint or the allowed values, e.g. ``gmi.per_gpu=0: must be an integer >= 1``.
    """

    def __init__(self, key: str, value: object, constraint: str) -> None:
        self.key = key
        self.value = value
        self.constraint = constraint
        super().__init__(f"{key}={value!r}: {constraint}")


def one_of(allowed: Iterable[str]) -> str:
    """Phrase for an error message listing the allowed string values."""
    return "must be one of " + ", ".join(repr(a) for a in allowed)
