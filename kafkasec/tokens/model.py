"""Delegation tokens as values: what Kafka's TokenInformation and DelegationToken hold."""

from __future__ import annotations

import base64
from typing import Any, Callable

from attrs import Attribute, field, frozen, validators

from kafkasec.principals.principal import KafkaPrincipal


def principal_of(value: object) -> KafkaPrincipal:
    """A KafkaPrincipal from itself or from "Type:name" text."""
    if isinstance(value, KafkaPrincipal):
        return value
    if isinstance(value, str):
        return KafkaPrincipal.parse(value)
    raise TypeError(f"a principal is a KafkaPrincipal or 'Type:name' text, not {value!r}")


def principals_of(values: object) -> tuple[KafkaPrincipal, ...]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"renewers must be an iterable of principals, not {values!r}")
    return tuple(principal_of(value) for value in values)


# Annotated: mypy cannot join the types of two validators of different types (int, bool).
_timestamp: list[Callable[[Any, Attribute, Any], Any]] = [
    validators.instance_of(int),
    validators.not_(validators.instance_of(bool)),
]


def _token_id(instance, attribute, value):
    if not value:
        raise ValueError("a token id must not be empty")


def _timestamps_in_order(instance, attribute, value):
    if not instance.issue_timestamp <= value:
        raise ValueError(
            f"max_timestamp {value} is before issue_timestamp {instance.issue_timestamp}"
        )


@frozen
class TokenInformation:
    """Everything about a token but its secret: who owns it, who may renew it, and when it ends.

    Timestamps are milliseconds since the epoch. A token is valid up to and including its
    ``expiry_timestamp``; renewals move that, never past ``max_timestamp``.
    """

    token_id: str = field(validator=[validators.instance_of(str), _token_id])
    owner: KafkaPrincipal = field(converter=principal_of)
    token_requester: KafkaPrincipal = field(converter=principal_of)
    renewers: tuple[KafkaPrincipal, ...] = field(converter=principals_of)
    issue_timestamp: int = field(validator=_timestamp)
    expiry_timestamp: int = field(validator=_timestamp)
    max_timestamp: int = field(validator=[*_timestamp, _timestamps_in_order])

    def owner_or_renewer(self, principal: KafkaPrincipal) -> bool:
        """Kafka's ``ownerOrRenewer``, which decides who sees a token: its owner, its requester
        (KIP-373) or one of its renewers."""
        return principal == self.owner or principal == self.token_requester or principal in self.renewers

    def may_renew(self, principal: KafkaPrincipal) -> bool:
        """The controller's ``allowedToRenew``, which decides who may renew or expire a token:
        its owner or one of its renewers, not its requester."""
        return principal == self.owner or principal in self.renewers

    def is_expired(self, now_ms: int) -> bool:
        """Past its expiry or its maximum timestamp (still valid exactly at either)."""
        return self.expiry_timestamp < now_ms or self.max_timestamp < now_ms


@frozen
class DelegationToken:
    """A token and its HMAC, the secret the holder proves: never shown in ``repr``."""

    info: TokenInformation = field(validator=validators.instance_of(TokenInformation))
    hmac: bytes = field(converter=bytes, repr=False)

    @property
    def token_id(self) -> str:
        return self.info.token_id

    @property
    def hmac_as_base64(self) -> str:
        """The standard base64 of the HMAC: what kafka-delegation-tokens.sh prints and what a
        client sends as its SCRAM password in a token login."""
        return base64.b64encode(self.hmac).decode("ascii")


def parse_hmac(text: str) -> bytes:
    """The HMAC bytes from the standard base64 kafka-delegation-tokens.sh prints (padded or not)."""
    if not isinstance(text, str):
        raise TypeError(f"an HMAC is base64 text, not {text!r}")
    padded = text.strip() + "=" * (-len(text.strip()) % 4)
    try:
        return base64.b64decode(padded, validate=True)
    except ValueError:
        # Not echoed: a mistyped HMAC is still most of a secret.
        raise ValueError(f"the HMAC given ({len(text)} characters) is not base64") from None
