"""What an endpoint lets its clients hold: connections (Kafka's ConnectionQuotas) and the bytes
of frames from clients that have not logged in yet. Sans I/O: the endpoint asks before it
accepts a connection or reads a frame, and says when it lets go.

Connections follow Kafka's settings:

- ``max.connections``: connections to the listener at once (Kafka: unlimited);
- ``max.connections.per.ip``: connections from one address (Kafka: unlimited);
- ``max.connections.per.ip.overrides``: ``host:count`` pairs, comma-separated, for addresses
  that get another cap (a host name is resolved once, at start-up). As on Kafka,
  ``max.connections.per.ip`` may be 0 only when overrides name who may connect.

A connection over a cap is closed as soon as it is accepted. (A Kafka broker refuses one over
its per-address cap the same way, but leaves one over ``max.connections`` waiting in the
listen backlog until a slot frees; here the client is refused and retries with its backoff.)

Bytes before login: a frame of a client that has not logged in may be up to
``sasl.server.max.receive.size`` (512 KiB), and a thousand half-sent ones would otherwise hold
half a gigabyte. Frames up to :data:`SMALL_FRAME_BYTES` (every honest SASL message) are always
read; larger ones draw on ``kafkasec.server.unauthenticated.max.bytes`` shared by all such
connections, and a frame that does not fit closes its connection.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections import Counter
from typing import Mapping

from kafkasec.settings import java_trim, parse_count, parse_list

MAX_CONNECTIONS = "max.connections"
MAX_CONNECTIONS_PER_IP = "max.connections.per.ip"
MAX_CONNECTIONS_PER_IP_OVERRIDES = "max.connections.per.ip.overrides"
UNAUTHENTICATED_MAX_BYTES = "kafkasec.server.unauthenticated.max.bytes"

UNLIMITED = 2**31 - 1
"""Kafka's default for the connection caps (Int.MaxValue)."""

DEFAULT_UNAUTHENTICATED_MAX_BYTES = 32 * 1024 * 1024

SMALL_FRAME_BYTES = 16 * 1024
"""A frame before login up to this size needs no share of the budget: a SCRAM message, an
ApiVersions or SaslHandshake request is far smaller. Also the size of a connection's read
buffer, so that what a connection holds unasked is bounded too."""


class LimitExceeded(Exception):
    """A connection or a frame over one of these limits; ``args[0]`` says which, for the log."""


def canonical_address(address: str) -> str:
    """An IP address in one spelling (``::ffff:127.0.0.1`` and ``127.0.0.1`` are one client)."""
    try:
        parsed = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        parsed = parsed.ipv4_mapped
    return parsed.compressed


def parse_overrides(text: str) -> dict[str, int]:
    """``host:count,host:count`` -> {address: count}; host names are resolved here, once, and
    each of their addresses gets the count."""
    overrides: dict[str, int] = {}
    for item in parse_list(text):
        if not item:
            continue
        host, separator, count = item.rpartition(":")
        host = java_trim(host).strip("[]")
        if not separator or not host:
            raise ValueError(f"{MAX_CONNECTIONS_PER_IP_OVERRIDES} takes host:count pairs, not {item!r}")
        limit = parse_count({MAX_CONNECTIONS_PER_IP_OVERRIDES: count}, MAX_CONNECTIONS_PER_IP_OVERRIDES, 0, unit="connections")
        for address in _addresses(host):
            overrides[address] = limit
    return overrides


def _addresses(host: str) -> set[str]:
    try:
        return {canonical_address(str(ipaddress.ip_address(host)))}
    except ValueError:
        pass
    try:
        # An address Python cannot spell (IPv6 in a build without it) comes as (int, bytes).
        return {canonical_address(info[4][0]) for info in socket.getaddrinfo(host, None) if isinstance(info[4][0], str)}
    except OSError as error:
        raise ValueError(f"{MAX_CONNECTIONS_PER_IP_OVERRIDES} names {host!r}, which does not resolve: {error}") from None


class ConnectionQuotas:
    """The open connections of one listener, by client address; thread-safe."""

    def __init__(self, max_connections: int = UNLIMITED, max_per_ip: int = UNLIMITED, overrides: Mapping[str, int] = {}):
        if max_per_ip == 0 and not overrides:
            raise ValueError(
                f"{MAX_CONNECTIONS_PER_IP} can be set to zero only if {MAX_CONNECTIONS_PER_IP_OVERRIDES} is set"
            )
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.overrides = {canonical_address(address): limit for address, limit in overrides.items()}
        self._open: Counter[str] = Counter()
        self._total = 0
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> ConnectionQuotas:
        return cls(
            parse_count(config, MAX_CONNECTIONS, UNLIMITED, unit="connections"),
            parse_count(config, MAX_CONNECTIONS_PER_IP, UNLIMITED, unit="connections"),
            parse_overrides(str(config.get(MAX_CONNECTIONS_PER_IP_OVERRIDES, ""))),
        )

    def limit_for(self, address: str) -> int:
        return self.overrides.get(canonical_address(address), self.max_per_ip)

    def open(self, address: str) -> None:
        """Count a new connection from ``address``; LimitExceeded (and nothing counted) when it
        is over a cap."""
        address = canonical_address(address)
        limit = self.limit_for(address)
        with self._lock:
            if self._open[address] >= limit:
                raise LimitExceeded(f"{address} already has the configured maximum of {limit} connections ({MAX_CONNECTIONS_PER_IP})")
            if self._total >= self.max_connections:
                raise LimitExceeded(
                    f"the listener already has the configured maximum of {self.max_connections} connections ({MAX_CONNECTIONS})"
                )
            self._open[address] += 1
            self._total += 1

    def close(self, address: str) -> None:
        address = canonical_address(address)
        with self._lock:
            self._open[address] -= 1
            if not self._open[address]:
                del self._open[address]
            self._total -= 1

    def count(self, address: str | None = None) -> int:
        """Open connections, from ``address`` or in all."""
        with self._lock:
            return self._total if address is None else self._open[canonical_address(address)]


class UnauthenticatedBytes:
    """The budget of bytes that frames larger than :data:`SMALL_FRAME_BYTES` from clients not
    yet logged in may hold at once."""

    def __init__(self, max_bytes: int = DEFAULT_UNAUTHENTICATED_MAX_BYTES):
        self.max_bytes = max_bytes
        self.held = 0
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> UnauthenticatedBytes:
        return cls(parse_count(config, UNAUTHENTICATED_MAX_BYTES, DEFAULT_UNAUTHENTICATED_MAX_BYTES, unit="bytes"))

    def reserve(self, size: int) -> int:
        """Take ``size`` bytes for one frame: the bytes taken (0 for a small frame), to give back
        with :meth:`release`; LimitExceeded when the budget cannot hold them."""
        if size <= SMALL_FRAME_BYTES:
            return 0
        with self._lock:
            if self.held + size > self.max_bytes:
                raise LimitExceeded(
                    f"frames of clients not yet logged in already hold {self.held} of "
                    f"{UNAUTHENTICATED_MAX_BYTES}={self.max_bytes} bytes; this one needs {size}"
                )
            self.held += size
        return size

    def release(self, size: int) -> None:
        with self._lock:
            self.held -= size
