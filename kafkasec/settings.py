"""Kafka-style settings: the one registry of every setting kafkasec reads (name, kind,
default, owner, meaning), the check a config passes at start-up, and one parser per kind.

Plugins add theirs through the ``kafkasec_settings`` hook. A config is checked when a
:class:`~kafkasec.KafkaSecurity` is built: a key under ``kafkasec.`` that no one registered,
or any key within a typo of a registered one, is a ValueError that says which setting was
probably meant; a known setting with a value of the wrong kind is a ValueError naming it.
Other keys (a broker's own settings that kafkasec does not read) pass untouched, so a whole
broker config can be handed over.
"""

from __future__ import annotations

import difflib
import os
import re
from typing import Callable, Iterable, Mapping

from attrs import field, frozen, validators

INTER_BROKER_LISTENER_NAME = "inter.broker.listener.name"
CONTROLLER_LISTENER_NAMES = "controller.listener.names"

KINDS = ("string", "password", "boolean", "count", "milliseconds", "list")
"""What a setting's value is, and what :meth:`Setting.value` gives a plugin for it:

- ``string``: text, trimmed as Java trims (:func:`java_trim`), as a str;
- ``password``: the same, never shown (``kafkasec config --describe`` hides it);
- ``boolean``: true or false in any case, as a bool (anything else is refused at start-up);
- ``count``: a whole number >= 0, as an int (refused at start-up otherwise);
- ``milliseconds``: a ``count`` of milliseconds;
- ``list``: comma-separated text (or a list), as a list of str (:func:`parse_list`).
"""


def java_trim(text: str) -> str:
    """``text`` without what Java's ``String.trim()`` removes: every character up to U+0020 at
    either end (the controls U+0000-U+001F included), and nothing else.

    Kafka trims its settings this way (ConfigDef, super.users, allow.everyone.if.no.acl.found).
    Python's ``str.strip()`` is not a substitute: it keeps U+0000-U+0008 and U+000E-U+001B, and
    removes Unicode whitespace (U+0085, U+00A0, U+2003, U+3000...) that Java keeps.
    """
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


# Java's \s without UNICODE_CHARACTER_CLASS: the six ASCII whitespace characters only.
_COMMA_WITH_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")
_JAVA_INTEGER = re.compile(r"[+-]?\d+")


def parse_list(value: object) -> list[str]:
    """A Kafka LIST setting as ConfigDef reads it: a list or tuple is taken as it is; text is
    trimmed (:func:`java_trim`), empty text is no items, and otherwise it splits at every comma
    with the ASCII whitespace around it (``\\s*,\\s*``), keeping empty items as Kafka does."""
    if isinstance(value, (list, tuple)):
        return [str(item) for item in value]
    text = java_trim(str(value))
    return _COMMA_WITH_WHITESPACE.split(text) if text else []


def parse_count(config: Mapping[str, object], name: str, default: int, *, unit: str = "") -> int:
    """A whole number >= 0 (of ``unit``, for the message) from ``config``; anything else is a
    ValueError naming the setting, so a plugin can fail at start-up.

    Text is read as ConfigDef reads an INT or LONG: trimmed as Java trims (:func:`java_trim`),
    then digits with an optional sign; Python's ``int()`` would also take ``1_000`` and Unicode
    whitespace at the ends, which Kafka refuses."""
    value = config.get(name, default)
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        text = java_trim(str(value))
        number = int(text) if _JAVA_INTEGER.fullmatch(text) else -1
    if number < 0:
        raise ValueError(f"{name} must be a whole number{' of ' + unit if unit else ''} >= 0, not {value!r}")
    return number


def parse_milliseconds(config: Mapping[str, object], name: str, default: int) -> int:
    """A whole number of milliseconds >= 0 from ``config`` (see :func:`parse_count`)."""
    return parse_count(config, name, default, unit="milliseconds")


def parse_bool(name: str, value: object) -> bool:
    """A Kafka boolean setting, read as ConfigDef reads a BOOLEAN: trimmed as Java trims
    (:func:`java_trim`), then true or false in any case; anything else is a ValueError, not
    False (as ConfigDef's ConfigException). ``"true\xa0"`` is therefore refused, and
    ``"\x01true"`` is true."""
    if isinstance(value, bool):
        return value
    # casefold(), not lower(): Java's equalsIgnoreCase compares upper cases too, so "falſe"
    # (U+017F, whose upper case is S) is "false" for Kafka, and casefold() maps it to "s".
    text = java_trim(str(value)).casefold()
    if text in ("true", "false"):
        return text == "true"
    raise ValueError(f"{name} must be true or false, not {value!r}")


@frozen
class Setting:
    """One setting, as ``Setting(name, kind, default, owner, doc)``: its Kafka-style ``name``
    (a plugin's start with ``kafkasec.``), ``kind`` (one of :data:`KINDS`), ``default`` (None:
    unset), ``owner`` (the module or plugin that reads it) and ``doc``, what it means (shown by
    ``kafkasec config --describe``). A plugin reads its value with :meth:`value`."""

    name: str = field(validator=validators.instance_of(str))
    kind: str = field(validator=validators.in_(KINDS))
    default: object = field()
    owner: str = field(validator=validators.instance_of(str))
    doc: str = field(validator=validators.instance_of(str))

    def check(self, value: object) -> None:
        """ValueError naming the setting when ``value`` is not of its kind."""
        _PARSERS[self.kind](self.name, value)

    def value(self, config: Mapping[str, object]) -> object:
        """This setting's value in ``config`` (``security.config`` for a plugin), parsed by its
        kind (see :data:`KINDS`): the default when ``config`` leaves it out or None, and None
        when that is None too. ``security.config`` itself keeps each value as it was given."""
        value = config.get(self.name)
        if value is None:
            value = self.default
        if value is None:
            return None
        return _PARSERS[self.kind](self.name, value)

    @property
    def shown_default(self) -> str:
        if self.default is None:
            return "(none)"
        if self.kind == "password":
            return "(hidden)"
        return str(self.default).lower() if isinstance(self.default, bool) else str(self.default)


def _parse_text(name: str, value: object) -> str:
    return java_trim(str(value))


_PARSERS: dict[str, Callable[[str, object], object]] = {
    "string": _parse_text,
    "password": _parse_text,
    "boolean": parse_bool,
    "count": lambda name, value: parse_count({name: value}, name, 0),
    "milliseconds": lambda name, value: parse_milliseconds({name: value}, name, 0),
    "list": lambda name, value: parse_list(value),
}
"""Each kind's parser, as ConfigDef parses its type: a function of the setting's name and value."""


def _s(name, kind, default, owner, doc) -> Setting:
    return Setting(name, kind, default, owner, doc)


SECURITY_PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
"""Kafka's security protocols, as a listener names them."""


BUILTIN_SETTINGS = (
    # The authorizer and the facade (Kafka's names).
    _s("super.users", "string", None, "kafkasec.security", "principals allowed everything, separated by ';'"),
    _s("allow.everyone.if.no.acl.found", "boolean", False, "kafkasec.security",
       "allow a resource nobody wrote an ACL for"),
    _s("connection.failed.authentication.delay.ms", "milliseconds", 100, "kafkasec.scram",
       "how long a refused login waits before its answer"),
    # The state.
    _s("kafkasec.state.path", "string", None, "kafkasec.store", "SQLite file of the state (None or :memory: in memory)"),
    _s("kafkasec.state.url", "password", None, "kafkasec.store",
       "URL of shared state (postgresql://...); wins over kafkasec.state.path"),
    _s("kafkasec.state.poll.interval.ms", "milliseconds", 5, "kafkasec.store",
       "how often a SQLite follower looks for a commit a write to the file announced (always, without inotify)"),
    _s("kafkasec.state.log.retention.records", "count", 100_000, "kafkasec.store",
       "security-log records kept after a snapshot"),
    _s("kafkasec.state.write.lock.timeout.ms", "milliseconds", 10_000, "kafkasec.store",
       "how long a write waits for another writer (then REQUEST_TIMED_OUT)"),
    _s("kafkasec.state.read.only", "boolean", False, "kafkasec.store",
       "open a SQLite state file only to read it: nothing is written, and no file is created beside it"),
    # Principals.
    _s("ssl.principal.mapping.rules", "string", "DEFAULT", "kafkasec.principals",
       "Kafka's rules from a certificate subject to a short name"),
    _s("sasl.kerberos.principal.to.local.rules", "string", "DEFAULT", "kafkasec.principals",
       "Kafka's rules from a Kerberos name to a short name"),
    _s("kafkasec.kerberos.default.realm", "string", "", "kafkasec.principals",
       "the realm DEFAULT Kerberos rules accept (Kafka reads krb5.conf)"),
    # Delegation tokens.
    _s("delegation.token.secret.key", "password", None, "kafkasec.tokens", "the HMAC key of tokens; unset: tokens off"),
    _s("kafkasec.delegation.token.previous.secret.keys", "password", None, "kafkasec.tokens",
       "earlier secret keys, comma-separated, still accepted while tokens made with them live"),
    _s("delegation.token.max.lifetime.ms", "milliseconds", 7 * 24 * 3600 * 1000, "kafkasec.tokens",
       "a token's maximum life"),
    _s("delegation.token.expiry.time.ms", "milliseconds", 24 * 3600 * 1000, "kafkasec.tokens",
       "how long a token lives until renewed"),
    _s("delegation.token.expiry.check.interval.ms", "milliseconds", 3600 * 1000, "kafkasec.tokens",
       "how often expired tokens are removed"),
    # Listeners, as Kafka names them.
    _s(INTER_BROKER_LISTENER_NAME, "string", "PLAINTEXT", "kafkasec.protocol.forwarding",
       "the listener other brokers' envelopes arrive on"),
    _s(CONTROLLER_LISTENER_NAMES, "list", "", "kafkasec.protocol.forwarding",
       "controller listeners, also allowed to carry envelopes"),
    # The endpoint.
    _s("socket.request.max.bytes", "count", 104_857_600, "kafkasec.server", "the largest request accepted"),
    _s("sasl.server.max.receive.size", "count", 524_288, "kafkasec.server", "the largest frame before login"),
    _s("connections.max.idle.ms", "milliseconds", 600_000, "kafkasec.server", "idle connections are closed after this"),
    _s("listeners", "list", None, "kafkasec.server",
       "NAME://host:port of each listener kafkasec serve opens (see listener.security.protocol.map)"),
    _s("listener.security.protocol.map", "list", "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
       "kafkasec.server", "each listener name's security protocol, NAME:PROTOCOL"),
    _s("connections.max.reauth.ms", "milliseconds", 0, "kafkasec.server",
       "KIP-368: how long a SASL login lasts before the client must re-authenticate (0: forever, "
       "or until the credential expires)"),
    _s("sasl.enabled.mechanisms", "list", "SCRAM-SHA-256,SCRAM-SHA-512", "kafkasec.server",
       "the SASL mechanisms offered"),
    _s("ssl.keystore.type", "string", "PEM", "kafkasec.server", "PEM only"),
    _s("ssl.keystore.location", "string", None, "kafkasec.server", "a PEM file with the listener's key and certificate chain"),
    _s("ssl.keystore.certificate.chain", "string", None, "kafkasec.server", "the listener's certificate chain, PEM text"),
    _s("ssl.keystore.key", "password", None, "kafkasec.server", "the listener's private key, PEM text"),
    _s("ssl.key.password", "password", None, "kafkasec.server", "the password of an encrypted key"),
    _s("ssl.truststore.type", "string", "PEM", "kafkasec.server", "PEM only"),
    _s("ssl.truststore.location", "string", None, "kafkasec.server", "a PEM file of the certificates that sign clients'"),
    _s("ssl.truststore.certificates", "string", None, "kafkasec.server", "the certificates that sign clients', PEM text"),
    _s("ssl.client.auth", "string", "none", "kafkasec.server", "required, requested or none: whether clients present certificates"),
    _s("ssl.enabled.protocols", "list", "TLSv1.2,TLSv1.3", "kafkasec.server", "the TLS versions a listener speaks"),
    _s("ssl.allow.dn.changes", "boolean", False, "kafkasec.server",
       "a listener's keystore, re-read, may hold a certificate of another subject (docs/operations.md)"),
    _s("ssl.allow.san.changes", "boolean", False, "kafkasec.server",
       "a listener's keystore, re-read, may drop subject alternative names of the certificate it replaces"),
    _s("sasl.oauthbearer.jwks.endpoint.url", "string", None, "kafkasec.sasl",
       "the identity provider's JWKS (https://, http:// or file:); set, OAUTHBEARER tokens are JWTs it signed"),
    _s("sasl.oauthbearer.jwks.endpoint.refresh.ms", "milliseconds", 3_600_000, "kafkasec.sasl",
       "how often the JWKS is fetched again (and at once for an unknown key id)"),
    _s("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "milliseconds", 100, "kafkasec.sasl",
       "the wait before retrying a failed JWKS fetch, doubled at each retry"),
    _s("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", "milliseconds", 10_000, "kafkasec.sasl",
       "how long a failed JWKS fetch is retried; then the last good key set is kept until the next refresh"),
    _s("sasl.oauthbearer.expected.audience", "list", None, "kafkasec.sasl", "audiences a token must name one of"),
    _s("sasl.oauthbearer.expected.issuer", "string", None, "kafkasec.sasl", "the issuer a token must name"),
    _s("sasl.oauthbearer.sub.claim.name", "string", "sub", "kafkasec.sasl", "the claim that names the principal"),
    _s("sasl.oauthbearer.scope.claim.name", "string", "scope", "kafkasec.sasl", "the claim that holds the scope"),
    _s("sasl.oauthbearer.clock.skew.seconds", "count", 30, "kafkasec.sasl", "slack allowed on exp, iat and nbf"),
    _s("num.io.threads", "count", min(8, os.cpu_count() or 1), "kafkasec.server",
       "threads that answer requests, shared by principals in turns (state writes have one of their own)"),
    _s("max.connections", "count", 2**31 - 1, "kafkasec.server", "connections at once, all clients"),
    _s("max.connections.per.ip", "count", 2**31 - 1, "kafkasec.server", "connections at once from one address"),
    _s("max.connections.per.ip.overrides", "list", "", "kafkasec.server", "host:count exceptions to the above"),
    _s("kafkasec.server.unauthenticated.max.bytes", "count", 32 * 1024 * 1024, "kafkasec.server",
       "bytes of large frames held for clients not logged in, all together"),
    _s("kafkasec.server.reuse.port", "boolean", False, "kafkasec.server",
       "listen with SO_REUSEPORT, so that several kafkasec serve processes share the listeners' ports"),
    _s("kafkasec.server.ssl.handshake.timeout.ms", "milliseconds", 10_000, "kafkasec.server",
       "a TLS client that has not finished its handshake after this long is disconnected"),
    _s("kafkasec.server.shutdown.timeout.ms", "milliseconds", 30_000, "kafkasec.server",
       "on SIGTERM, how long connections may finish the requests in hand before they are closed"),
    _s("kafkasec.metrics.port", "count", None, "kafkasec.server.metrics",
       "the HTTP port of /metrics (Prometheus), /healthz and /readyz; unset: none"),
    _s("kafkasec.metrics.host", "string", "127.0.0.1", "kafkasec.server.metrics", "the address that port is bound to"),
    _s("kafkasec.metrics.refusals.by.principal.max", "count", 0, "kafkasec.server.metrics",
       "count refusals per principal for this many principals (the rest as 'other'); 0: not per principal"),
    _s("kafkasec.server.event.loop", "string", "auto", "kafkasec.server",
       "auto (uvloop where installed), uvloop or asyncio: the event loop kafkasec serve runs"),
    _s("kafkasec.server.gc.freeze", "boolean", True, "kafkasec.server",
       "kafkasec serve leaves what it loaded at start out of garbage collection (gc.freeze): no pause of a full collection over the ACLs"),
    _s("kafkasec.server.gc.threshold", "count", 50_000, "kafkasec.server",
       "kafkasec serve runs the garbage collector after this many more objects made than freed (Python: 700); 0: Python's own"),
    _s("kafkasec.server.malloc.mmap.threshold", "count", 32 << 20, "kafkasec.server",
       "kafkasec serve keeps buffers below this many bytes in glibc's heap, and twice that of freed memory (mallopt); 0: glibc's own rules"),
    # The gateway (kafkasec serve --upstream): every other kafkasec.upstream.* key is a client
    # property of the gateway's login upstream (security.protocol, sasl.*, ssl.*).
    _s("kafkasec.upstream.bootstrap.servers", "list", None, "kafkasec.server.gateway",
       "HOST:PORT of the Kafka-compatible broker(s) the gateway secures"),
    _s("kafkasec.upstream.unadvertised.apis", "list", "", "kafkasec.server.gateway",
       "APIs (Kafka's names: DeleteRecords, ...) the gateway does not offer though the upstream lists them"),
)

UPSTREAM_CLIENT_PREFIX = "kafkasec.upstream."
"""Settings under this prefix are the gateway's client properties upstream, checked as a
client's (kafkasec.client.settings.ClientSettings) when the gateway starts."""


class SettingsRegistry:
    """The settings known to one plugin manager: kafkasec's and its plugins'."""

    def __init__(self, settings: Iterable[Setting]):
        self.settings: dict[str, Setting] = {}
        for setting in settings:
            if not isinstance(setting, Setting):
                raise TypeError(f"a setting is a kafkasec.settings.Setting, not {setting!r}")
            known = self.settings.get(setting.name)
            if known is not None and known != setting:
                raise ValueError(f"the setting {setting.name} is registered twice ({known.owner} and {setting.owner})")
            self.settings[setting.name] = setting

    @classmethod
    def from_plugins(cls, plugin_manager) -> SettingsRegistry:
        """:data:`BUILTIN_SETTINGS` and every plugin's ``kafkasec_settings`` answer."""
        contributed = plugin_manager.hook.kafkasec_settings()
        return cls([*BUILTIN_SETTINGS, *(setting for answer in contributed for setting in (answer or ()))])

    def check(self, config: Mapping[str, object]) -> None:
        """ValueError for the first misspelt key or ill-kinded value of ``config``."""
        for name, value in config.items():
            if not isinstance(name, str):
                raise TypeError(f"setting names are strings, not {name!r}")
            setting = self.settings.get(name)
            if setting is not None:
                if value is not None:
                    setting.check(value)
                continue
            if name.startswith(UPSTREAM_CLIENT_PREFIX):
                continue
            near = difflib.get_close_matches(name, self.settings, n=1, cutoff=0.85)
            if near or name.startswith("kafkasec."):
                hint = f"; did you mean {near[0]}?" if near else " (kafkasec config --describe lists them)"
                raise ValueError(f"unknown setting {name}{hint}")

    def describe(self) -> list[Setting]:
        """Every setting, by owner then name."""
        return sorted(self.settings.values(), key=lambda setting: (setting.owner != "kafkasec.security", setting.owner, setting.name))


__all__ = [
    "BUILTIN_SETTINGS",
    "KINDS",
    "Setting",
    "SettingsRegistry",
    "java_trim",
    "parse_bool",
    "parse_count",
    "parse_list",
    "parse_milliseconds",
]
