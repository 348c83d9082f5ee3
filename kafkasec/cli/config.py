"""Where the command's settings come from: the properties file, the environment, --state."""

from __future__ import annotations

import os
import re

from kafkasec.plugins import make_plugin_manager
from kafkasec.security import STATE_PATH, KafkaSecurity
from kafkasec.settings import SettingsRegistry
from kafkasec.store.base import StateError

STATE_ENVIRONMENT_VARIABLE = "KAFKASEC_STATE"
DEFAULT_STATE_PATH = "kafkasec.db"


def read_properties(path: str) -> dict[str, str]:
    """A Java properties file, as kafka-acls.sh's --command-config reads it.

    ``key=value``, ``key: value`` or ``key value`` lines; lines starting with ``#`` or ``!`` are
    comments; a line ending in a backslash continues on the next one (as the sasl.jaas.config
    lines of such files often do). Other escapes are kept as written.
    """
    with open(path, encoding="utf-8") as file:
        lines = file.read().splitlines()
    return dict(_key_and_value(text) for text in _logical_lines(lines))


# Java's rule: the key ends at the first '=', ':' or whitespace; one separator may follow.
_PROPERTY = re.compile(r"([^=:\s]*)\s*[=:]?\s*(.*)", re.DOTALL)


def _key_and_value(text: str) -> tuple[str, str]:
    match = _PROPERTY.fullmatch(text)
    assert match is not None  # the key may be empty and the value takes the rest: any text matches
    return match[1], match[2]


def _logical_lines(lines):
    """The text of each property: continuation lines joined, comments and blank lines skipped."""
    pending = None
    for line in lines:
        text = line.strip()
        if pending is None:
            if not text or text[0] in "#!":
                continue
            pending = ""
        if _continues(text):
            pending += text[:-1]
        else:
            yield pending + text
            pending = None
    if pending is not None:  # the file ends in a continuation
        yield pending


def _continues(text: str) -> bool:
    # An odd number of trailing backslashes: the last one escapes the line break.
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


def state_path(args, properties: dict[str, str]) -> str:
    """--state, else the config file's kafkasec.state.path, else $KAFKASEC_STATE, else ./kafkasec.db.

    Both the flag and the file are named on this command line, so they win over the environment.
    """
    return (
        args.state
        or properties.get(STATE_PATH)
        or os.environ.get(STATE_ENVIRONMENT_VARIABLE)
        or DEFAULT_STATE_PATH
    )


def open_security(
    args, *, stateless: bool = False, writes: bool = False, overrides: dict[str, str] | None = None
) -> KafkaSecurity:
    """The KafkaSecurity the command works on; close it (it is a context manager) when done.

    ``stateless`` commands (principal conversions) keep state in memory: they create no file.
    Only a command that ``writes`` creates a missing state file; any other says it is missing.
    ``overrides`` are settings the command itself fixes, over the config file's.
    """
    properties = read_properties(args.config) if args.config else {}
    path = ":memory:" if stateless else state_path(args, properties)
    config = {**properties, **(overrides or {}), STATE_PATH: path}
    if not stateless and not writes and "://" not in path and path != ":memory:" and not os.path.exists(path):
        # The settings are still checked first: a misspelt one is the more useful error.
        SettingsRegistry.from_plugins(make_plugin_manager()).check(config)
        raise StateError(f"no state file at {path}: nothing to read (a command that writes, such as acls --add, creates it)")
    return KafkaSecurity.from_config(config)
