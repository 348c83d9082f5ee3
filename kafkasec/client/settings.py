"""A Kafka client's connection settings, read from the properties Kafka's tools take in --command-config.

::

    bootstrap.servers=broker1:9092,broker2:9092
    security.protocol=SASL_SSL
    sasl.mechanism=SCRAM-SHA-512
    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
        username="admin" password="admin-secret";
    ssl.truststore.type=PEM
    ssl.truststore.location=/etc/kafka/ca.pem

``sasl.jaas.config`` names the login module of ``sasl.mechanism``: ScramLoginModule (``username``,
``password``, ``tokenauth=true`` for a delegation token's id and HMAC), PlainLoginModule
(``username``, ``password``) or OAuthBearerLoginModule (a token from
``sasl.oauthbearer.token.endpoint.url`` with ``clientId``, ``clientSecret``, ``scope``, else an
unsecured token from the ``unsecuredLogin*`` options, as Kafka's default handler makes one).
``ssl.*`` are read by :func:`kafkasec.tls.client_ssl_context`. Keys that are not a client's
(a broker's settings in the same file) are left for others to read.
"""

from __future__ import annotations

import ssl
from typing import Mapping

from attrs import field, frozen

from kafkasec.client.login import CLIENT_MECHANISMS, OAUTHBEARER, PLAIN, ClientLogin, unsecured_login_token
from kafkasec.client.oauth import TokenEndpoint
from kafkasec.sasl.jaas import parse_jaas_config
from kafkasec.settings import SECURITY_PROTOCOLS
from kafkasec.tls import client_ssl_context

CLIENT_ONLY_KEYS = (
    "bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.jaas.config", "client.id",
    "request.timeout.ms", "socket.connection.setup.timeout.ms",
)
CLIENT_ONLY_PREFIXES = ("sasl.oauthbearer.token.endpoint.", "sasl.login.", "ssl.endpoint.identification.")
"""The properties only a client reads; ``ssl.*`` are a client's and a listener's alike."""

DEFAULT_REQUEST_TIMEOUT_MS = 30_000  # Kafka's request.timeout.ms
DEFAULT_CONNECTION_SETUP_TIMEOUT_MS = 10_000  # Kafka's socket.connection.setup.timeout.ms

_LOGIN_MODULES = {
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    PLAIN: "org.apache.kafka.common.security.plain.PlainLoginModule",
    OAUTHBEARER: "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}


def is_client_setting(key: str) -> bool:
    """Whether a client reads ``key`` (the ``ssl.*`` keys included)."""
    return is_client_only_setting(key) or key.startswith("ssl.")


def is_client_only_setting(key: str) -> bool:
    """Whether only a client reads ``key``: a --command-config file may hold both kinds."""
    return key in CLIENT_ONLY_KEYS or key.startswith(CLIENT_ONLY_PREFIXES)


def parse_bootstrap_servers(text: str) -> tuple[tuple[str, int], ...]:
    """``host:port[,host:port...]`` (an IPv6 host in brackets) as (host, port) pairs; ValueError
    naming the entry that is not one."""
    servers = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        host, separator, port = entry.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if not separator or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"a bootstrap server is HOST:PORT, not {entry!r}")
        servers.append((host, int(port)))
    if not servers:
        raise ValueError("no bootstrap server given: --bootstrap-server HOST:PORT")
    return tuple(servers)


@frozen
class ClientSettings:
    """Where a client connects, with which security protocol, and how it logs in."""

    bootstrap_servers: tuple[tuple[str, int], ...]
    security_protocol: str = "PLAINTEXT"
    login: ClientLogin | None = None
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)
    client_id: str = "kafkasec"
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    connection_setup_timeout_ms: int = DEFAULT_CONNECTION_SETUP_TIMEOUT_MS

    @classmethod
    def from_properties(cls, properties: Mapping[str, str], bootstrap_servers: str | None = None) -> ClientSettings:
        """The settings in ``properties``, with ``bootstrap_servers`` (the --bootstrap-server flag)
        over ``bootstrap.servers``; ValueError naming the property that is missing or wrong."""
        servers = parse_bootstrap_servers(bootstrap_servers or properties.get("bootstrap.servers", ""))
        protocol = properties.get("security.protocol", "PLAINTEXT").strip().upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"security.protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, not {protocol!r}")
        login = _login(properties) if protocol.startswith("SASL_") else None
        context = client_ssl_context(properties) if protocol.endswith("SSL") else None
        return cls(
            servers, protocol, login, context, properties.get("client.id", "kafkasec"),
            _milliseconds(properties, "request.timeout.ms", DEFAULT_REQUEST_TIMEOUT_MS),
            _milliseconds(properties, "socket.connection.setup.timeout.ms", DEFAULT_CONNECTION_SETUP_TIMEOUT_MS),
        )


def _milliseconds(properties: Mapping[str, str], key: str, default: int) -> int:
    text = properties.get(key)
    if text is None:
        return default
    if not text.strip().isdigit() or int(text) == 0:
        raise ValueError(f"{key} must be a positive number of milliseconds, not {text!r}")
    return int(text)


def _login(properties: Mapping[str, str]) -> ClientLogin:
    mechanism = properties.get("sasl.mechanism", "GSSAPI").strip()
    if mechanism not in CLIENT_MECHANISMS:
        default = "" if "sasl.mechanism" in properties else " (Kafka's default)"
        raise ValueError(
            f"sasl.mechanism {mechanism}{default} is not one kafkasec logs in with: "
            f"set sasl.mechanism to one of {', '.join(CLIENT_MECHANISMS)}"
        )
    text = properties.get("sasl.jaas.config")
    if text is None:
        raise ValueError(f"a {mechanism} login needs sasl.jaas.config ({_LOGIN_MODULES[mechanism]} required ...;)")
    module = parse_jaas_config(text)
    if module.class_name != _LOGIN_MODULES[mechanism]:
        raise ValueError(f"sasl.mechanism {mechanism} logs in with {_LOGIN_MODULES[mechanism]}, not {module.class_name}")
    options = module.options
    if mechanism != OAUTHBEARER:
        token_auth = options.get("tokenauth", "false").strip().lower() == "true"
        return ClientLogin(mechanism, options.get("username"), options.get("password"), token_auth=token_auth)
    url = properties.get("sasl.oauthbearer.token.endpoint.url")
    if url:
        read_timeout: dict[str, float] = {}
        if properties.get("sasl.login.read.timeout.ms") is not None:
            read_timeout["timeout_s"] = _milliseconds(properties, "sasl.login.read.timeout.ms", 0) / 1000
        endpoint = TokenEndpoint(url, options, **read_timeout)
        return ClientLogin(mechanism, bearer_token=endpoint)
    unsecured_login_token(options)  # refuse bad options now, not at the first login
    return ClientLogin(mechanism, options.get("unsecuredLoginStringClaim_sub"),
                       bearer_token=lambda: unsecured_login_token(options))
