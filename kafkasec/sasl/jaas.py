"""Kafka's ``sasl.jaas.config`` values, read as Kafka's JaasConfig reads them.

A value names one login module, its control flag and its options::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice="alice-secret";

Kafka tokenizes it with java.io.StreamTokenizer: words (letters, ``-``, ``_``, ``$`` and then
digits and ``.`` too), strings in double or single quotes (a backslash escapes the next
character), ``=`` and ``;``, with ``//`` and ``/* */`` comments. A broker's listener takes its
mechanism's value from ``listener.name.<listener>.<mechanism>.sasl.jaas.config``.
"""

from __future__ import annotations

import re
from typing import Mapping

from attrs import frozen

CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/)
    | (?P<word>[A-Za-z\-_$\u0080-\uffff][A-Za-z0-9.\-_$\u0080-\uffff]*)
    | (?P<quoted>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')
    | (?P<symbol>[=;])
    """,
    re.VERBOSE | re.DOTALL,
)


@frozen
class LoginModule:
    """One entry of a JAAS configuration: the module's class, its flag and its options."""

    class_name: str
    control_flag: str
    options: Mapping[str, str]


def jaas_config_key(listener_name: str, mechanism: str) -> str:
    """The broker setting that holds a listener's JAAS configuration for ``mechanism``."""
    return f"listener.name.{listener_name.lower()}.{mechanism.lower()}.sasl.jaas.config"


def parse_jaas_config(text: str) -> LoginModule:
    """The one login module of a ``sasl.jaas.config`` value; ValueError naming what is wrong
    (Kafka's IllegalArgumentException for the same values)."""
    if not isinstance(text, str):
        raise TypeError(f"a JAAS configuration is a str, not {type(text).__name__}")
    tokens = list(_tokens(text))
    modules = []
    while tokens:
        modules.append(_module(tokens))
    if len(modules) != 1:
        raise ValueError(f"JAAS config property contains {len(modules)} login modules, should be 1 module")
    return modules[0]


def _tokens(text: str):
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ValueError(f"Unexpected character {text[position]!r} in JAAS config at offset {position}")
        position = match.end()
        kind = match.lastgroup
        if kind == "space":
            continue
        value = match.group()
        if kind == "quoted":
            yield "string", re.sub(r"\\(.)", r"\1", value[1:-1], flags=re.DOTALL)
        else:
            yield kind, value


def _module(tokens: list[tuple[str, str]]) -> LoginModule:
    kind, class_name = tokens.pop(0)
    if kind != "word":
        raise ValueError(f"Invalid JAAS config: expected a login module class name, not {class_name!r}")
    if not tokens or tokens[0][0] != "word" or tokens[0][1].lower() not in CONTROL_FLAGS:
        found = tokens[0][1] if tokens else "the end"
        raise ValueError(f"Invalid control flag {found!r} for login module {class_name}: expected one of {', '.join(CONTROL_FLAGS)}")
    control_flag = tokens.pop(0)[1].lower()
    options: dict[str, str] = {}
    while True:
        if not tokens:
            raise ValueError(f"Invalid JAAS config: login module {class_name} is not terminated by ';'")
        kind, key = tokens.pop(0)
        if (kind, key) == ("symbol", ";"):
            return LoginModule(class_name, control_flag, options)
        if kind != "word":
            raise ValueError(f"Invalid JAAS config: expected an option name, not {key!r}")
        if not tokens or tokens.pop(0) != ("symbol", "="):
            raise ValueError(f"Invalid JAAS config: option {key} of {class_name} has no '='")
        if not tokens or tokens[0][0] not in ("word", "string"):
            raise ValueError(f"Value not specified for key '{key}' in JAAS config")
        options[key] = tokens.pop(0)[1]
