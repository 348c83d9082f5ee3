"""Kafka's DefaultKafkaPrincipalBuilder, and the built-in plugin that answers
``kafkasec_build_principal`` with it.

* PLAINTEXT: ``User:ANONYMOUS``.
* SSL: the client certificate's subject DN (as Java's ``X500Principal.getName()`` writes it)
  mapped by ``ssl.principal.mapping.rules``; no client certificate: ``User:ANONYMOUS``.
* SASL: ``User:<authorization id>``; for GSSAPI, the Kerberos name shortened by
  ``sasl.kerberos.principal.to.local.rules`` (default realm: ``kafkasec.kerberos.default.realm``).

A name that no rule maps fails the connection, as on a broker: Kafka throws a plain
KafkaException (after NoMatchingRule), which is no API error and which Kafka's
``Errors.forException`` counts as UNKNOWN_SERVER_ERROR; so this raises UnknownServerError
(-1) with Kafka's message, the NoMatchingRule as its cause. The broker closes the connection
and sends no error code.
"""

from __future__ import annotations

import re
from typing import Mapping

from attrs import field, frozen

from kafkasec.errors import UnknownServerError
from kafkasec.hookspecs import hookimpl
from kafkasec.principals.authentication import (
    PlaintextAuthenticationContext,
    SaslAuthenticationContext,
    SslAuthenticationContext,
)
from kafkasec.principals.kerberos import KerberosName, KerberosShortNamer
from kafkasec.principals.mapping_rules import DEFAULT_RULE
from kafkasec.principals.principal import ANONYMOUS, KafkaPrincipal
from kafkasec.principals.ssl_rules import SslPrincipalMapper
from kafkasec.principals.x500 import x500_principal_name
from kafkasec.settings import java_trim

SSL_PRINCIPAL_MAPPING_RULES = "ssl.principal.mapping.rules"
SASL_KERBEROS_PRINCIPAL_TO_LOCAL_RULES = "sasl.kerberos.principal.to.local.rules"
KERBEROS_DEFAULT_REALM = "kafkasec.kerberos.default.realm"
GSSAPI_MECHANISM = "GSSAPI"
PLUGIN_STATE_KEY = "principal_builder"

# Kafka splits a LIST setting at "\s*,\s*" (Java's \s is ASCII), keeping empty items.
_LIST_SEPARATOR = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")


def _ssl_rules(value: object) -> str:
    if value is None:
        return DEFAULT_RULE
    if not isinstance(value, str):
        raise ValueError(f"{SSL_PRINCIPAL_MAPPING_RULES} must be a string of rules, not {value!r}")
    return java_trim(value)  # Kafka trims a STRING setting


def _kerberos_rules(value: object) -> tuple[str, ...]:
    """A Kafka LIST setting: a string split at commas (with the spaces around them), or a list."""
    if value is None:
        return (DEFAULT_RULE,)
    if isinstance(value, str):
        trimmed = java_trim(value)
        return tuple(_LIST_SEPARATOR.split(trimmed)) if trimmed else ()
    if isinstance(value, (list, tuple)) and all(isinstance(rule, str) for rule in value):
        return tuple(value)
    raise ValueError(
        f"{SASL_KERBEROS_PRINCIPAL_TO_LOCAL_RULES} must be a comma-separated string or a list of strings, not {value!r}"
    )


def _realm(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{KERBEROS_DEFAULT_REALM} must be a string such as 'EXAMPLE.COM', not {value!r}")
    return value


@frozen
class DefaultPrincipalBuilder:
    """Kafka's DefaultKafkaPrincipalBuilder with its two rule sets, compiled when built: bad
    rules are a ValueError naming the setting and quoting the rule."""

    ssl_principal_mapping_rules: str = field(default=DEFAULT_RULE, converter=_ssl_rules)
    kerberos_rules: tuple[str, ...] = field(default=(DEFAULT_RULE,), converter=_kerberos_rules)
    default_realm: str = field(default="", converter=_realm)
    ssl_principal_mapper: SslPrincipalMapper = field(init=False, repr=False, eq=False)
    kerberos_short_namer: KerberosShortNamer = field(init=False, repr=False, eq=False)

    @ssl_principal_mapper.default
    def _compile_ssl_rules(self) -> SslPrincipalMapper:
        try:
            return SslPrincipalMapper.parse(self.ssl_principal_mapping_rules)
        except ValueError as error:
            raise ValueError(
                f"{SSL_PRINCIPAL_MAPPING_RULES} = {self.ssl_principal_mapping_rules!r}: {error}"
            ) from None

    @kerberos_short_namer.default
    def _compile_kerberos_rules(self) -> KerberosShortNamer:
        try:
            return KerberosShortNamer.parse(self.kerberos_rules, self.default_realm)
        except ValueError as error:
            raise ValueError(f"{SASL_KERBEROS_PRINCIPAL_TO_LOCAL_RULES}: {error}") from None

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> DefaultPrincipalBuilder:
        """From Kafka's settings ``ssl.principal.mapping.rules`` (default ``DEFAULT``) and
        ``sasl.kerberos.principal.to.local.rules`` (default ``DEFAULT``), and
        ``kafkasec.kerberos.default.realm`` (Kafka reads krb5.conf; default "")."""
        return cls(
            config.get(SSL_PRINCIPAL_MAPPING_RULES, DEFAULT_RULE),
            config.get(SASL_KERBEROS_PRINCIPAL_TO_LOCAL_RULES, (DEFAULT_RULE,)),
            config.get(KERBEROS_DEFAULT_REALM, ""),
        )

    def build(self, context) -> KafkaPrincipal:
        """The principal of an authenticated connection, by Kafka's rules.

        UnknownServerError when no rule maps the name; TypeError for a context that is not
        one of ``kafkasec.principals.authentication``'s.
        """
        if isinstance(context, PlaintextAuthenticationContext):
            return ANONYMOUS
        if isinstance(context, SslAuthenticationContext):
            if context.peer_certificate is None:
                return ANONYMOUS
            return self._map_subject(x500_principal_name(context.peer_certificate))
        if isinstance(context, SaslAuthenticationContext):
            if context.mechanism == GSSAPI_MECHANISM:
                return self._shorten(context.authorization_id)
            return KafkaPrincipal.user(context.authorization_id)
        raise TypeError(f"Unhandled authentication context type: {type(context).__name__}")

    def _map_subject(self, distinguished_name: str) -> KafkaPrincipal:
        try:
            return KafkaPrincipal.user(self.ssl_principal_mapper.get_name(distinguished_name))
        except ValueError as error:
            raise UnknownServerError(
                f"Failed to map name for '{distinguished_name}' based on SSL principal mapping rules: {error}"
            ) from error

    def _shorten(self, authorization_id: str) -> KafkaPrincipal:
        try:
            name = KerberosName.parse(authorization_id)
            return KafkaPrincipal.user(self.kerberos_short_namer.short_name(name))
        except ValueError as error:
            raise UnknownServerError(
                f"Failed to set name for '{authorization_id}' based on Kerberos authentication rules: {error}"
            ) from error


# Built-in plugin. The builder is compiled at start-up, so bad rules stop KafkaSecurity from
# starting; it answers last, so a plugin's own builder is asked first.


@hookimpl
def kafkasec_startup(security):
    security.plugin_state[PLUGIN_STATE_KEY] = DefaultPrincipalBuilder.from_config(security.config)


@hookimpl(trylast=True)
def kafkasec_build_principal(security, context):
    return security.plugin_state[PLUGIN_STATE_KEY].build(context)


__all__ = [
    "GSSAPI_MECHANISM",
    "KERBEROS_DEFAULT_REALM",
    "SASL_KERBEROS_PRINCIPAL_TO_LOCAL_RULES",
    "SSL_PRINCIPAL_MAPPING_RULES",
    "DefaultPrincipalBuilder",
]
