"""A node's listeners as Kafka names them: ``listeners`` and ``listener.security.protocol.map``.

``listeners`` is a comma-separated list of ``NAME://host:port`` (``[::1]`` for an IPv6 address;
an empty host listens on every interface); each name's security protocol comes from
``listener.security.protocol.map`` (``NAME:PROTOCOL,...``), whose default maps each of Kafka's
four protocols to itself, so ``SASL_SSL://:9093`` needs no map. Listener names are upper-cased,
as Kafka's ListenerName does; a listener's own settings are then prefixed
``listener.name.<name in lower case>.`` (TLS keys, JAAS configurations).
"""

from __future__ import annotations

import re
from typing import Mapping

from attrs import frozen

from kafkasec.settings import SECURITY_PROTOCOLS, java_trim, parse_list

LISTENERS = "listeners"
PROTOCOL_MAP = "listener.security.protocol.map"
_LISTENER = re.compile(r"(?P<name>[^:/]*)://\[?(?P<host>[0-9a-zA-Z\-%._:]*?)\]?:(?P<port>-?[0-9]+)")


@frozen
class Listener:
    """One listener: its name, where it listens and its security protocol."""

    name: str
    host: str
    port: int
    security_protocol: str


def parse_protocol_map(value: str | None) -> dict[str, str]:
    """``listener.security.protocol.map``; ValueError for a malformed entry or an unknown protocol."""
    if value is None:
        return {protocol: protocol for protocol in SECURITY_PROTOCOLS}
    protocols: dict[str, str] = {}
    for entry in parse_list(value):
        if not entry:
            continue
        name, colon, protocol = entry.partition(":")
        if not colon or not java_trim(name):
            raise ValueError(f"{PROTOCOL_MAP}: {entry!r} is not NAME:PROTOCOL")
        protocol = java_trim(protocol).upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"{PROTOCOL_MAP}: {protocol!r} is not a security protocol ({', '.join(SECURITY_PROTOCOLS)})")
        protocols[java_trim(name).upper()] = protocol
    return protocols


def parse_listeners(config: Mapping[str, object]) -> list[Listener]:
    """The ``listeners`` of ``config`` (an empty list when unset), with their protocols, as
    Kafka reads them; ValueError naming the listener that is wrong."""
    value = config.get(LISTENERS)
    if value is None or not java_trim(str(value)):
        return []
    protocols = parse_protocol_map(None if config.get(PROTOCOL_MAP) is None else str(config[PROTOCOL_MAP]))
    listeners: list[Listener] = []
    for entry in parse_list(str(value)):
        if not entry:
            continue
        match = _LISTENER.fullmatch(entry)
        if match is None:
            raise ValueError(f"Error creating broker listeners from '{value}': Unable to parse {entry} to a broker endpoint")
        name, port = match["name"].upper(), int(match["port"])
        if name not in protocols:
            raise ValueError(f"Error creating broker listeners from '{value}': No security protocol defined for listener {name}")
        if not 0 <= port <= 65535:
            raise ValueError(f"listener {name}: port {port} is not 0-65535")
        listeners.append(Listener(name, match["host"] or "0.0.0.0", port, protocols[name]))
    names = [listener.name for listener in listeners]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"Each listener must have a different name, unlike {', '.join(duplicates)} in '{value}'")
    ports = [listener.port for listener in listeners if listener.port]
    if len(ports) != len(set(ports)):
        raise ValueError(f"Each listener must have a different port, unlike those in '{value}'")
    return listeners
