"""Kafka-style settings read from a config mapping: one parser per kind of value, each failing
with a ValueError that names the setting, so a bad config fails at start-up."""

from __future__ import annotations

from typing import Mapping

INTER_BROKER_LISTENER_NAME = "inter.broker.listener.name"
CONTROLLER_LISTENER_NAMES = "controller.listener.names"


def parse_count(config: Mapping[str, object], name: str, default: int, *, unit: str = "") -> int:
    """A whole number >= 0 (of ``unit``, for the message) from ``config``; anything else is a
    ValueError naming the setting, so a plugin can fail at start-up."""
    value = config.get(name, default)
    try:
        number = int(str(value).strip())
    except ValueError:
        number = -1
    if number < 0:
        raise ValueError(f"{name} must be a whole number{' of ' + unit if unit else ''} >= 0, not {value!r}")
    return number


def parse_milliseconds(config: Mapping[str, object], name: str, default: int) -> int:
    """A whole number of milliseconds >= 0 from ``config`` (see :func:`parse_count`)."""
    return parse_count(config, name, default, unit="milliseconds")


def parse_bool(name: str, value: object) -> bool:
    """A Kafka boolean setting; anything but true/false (any case) is a ValueError, not False."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ValueError(f"{name} must be true or false, not {value!r}")
