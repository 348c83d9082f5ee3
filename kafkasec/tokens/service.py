"""Delegation tokens of one node (KIP-48, KIP-373): Kafka's broker-side checks
(:mod:`kafkasec.tokens.admin`) before the controller's rules (:class:`DelegationTokenManager`).

The facade's token methods, the wire handlers (:mod:`kafkasec.protocol.token_apis`) and the
``kafkasec tokens`` command all come through here.
"""

from __future__ import annotations

from typing import Iterable

from kafkasec.authorizer.service import Authorizer
from kafkasec.context import RequestContext
from kafkasec.errors import DelegationTokenNotFoundError
from kafkasec.principals.principal import KafkaPrincipal
from kafkasec.tokens import admin
from kafkasec.tokens.manager import DelegationTokenManager
from kafkasec.tokens.model import DelegationToken, principal_of


class TokenService:
    """The tokens ``manager`` keeps, asked for with a request's context."""

    def __init__(self, authorizer: Authorizer, manager: DelegationTokenManager):
        self._authorizer = authorizer
        self.manager = manager

    def create_delegation_token(
        self,
        context: RequestContext,
        *,
        owner: KafkaPrincipal | str | None = None,
        renewers: Iterable[KafkaPrincipal | str] = (),
        max_lifetime_ms: int = -1,
    ) -> DelegationToken:
        """A token for ``owner`` (default: the caller; another owner needs CREATE_TOKENS on it)."""
        return admin.create_token(
            self._authorizer, self.manager, context, owner=owner, renewers=renewers, max_lifetime_ms=max_lifetime_ms
        )

    def renew_delegation_token(self, context: RequestContext, hmac: bytes, renew_period_ms: int = -1) -> int:
        """Renew the token with ``hmac`` (owner or renewer only); the new expiry timestamp."""
        return admin.renew_token(self.manager, context, hmac, renew_period_ms)

    def expire_delegation_token(self, context: RequestContext, hmac: bytes, expiry_period_ms: int = -1) -> int:
        """Expire the token with ``hmac`` after ``expiry_period_ms`` (< 0: now, and remove it)."""
        return admin.expire_token(self.manager, context, hmac, expiry_period_ms)

    def describe_delegation_tokens(
        self, context: RequestContext, owners: Iterable[KafkaPrincipal | str] | None = None
    ) -> list[DelegationToken]:
        """The tokens of ``owners`` (None: anyone's) that the caller may see, with their HMACs."""
        return admin.describe_tokens(self._authorizer, self.manager, context, owners)

    # ------------------------------------------------------------------ an operator's view
    # For an administrator working on the state itself (the command line without --principal):
    # no request context, so no per-caller visibility; Kafka has no equivalent.

    def owner_of(self, hmac: bytes) -> KafkaPrincipal:
        """The owner of the token with ``hmac``; DELEGATION_TOKEN_NOT_FOUND when there is none."""
        token = self.manager.token_for(hmac)
        if token is None:
            raise DelegationTokenNotFoundError()
        return token.info.owner

    def all_tokens(self, owners: Iterable[KafkaPrincipal | str] | None = None) -> list[DelegationToken]:
        """Every token, or those owned, requested or renewable by one of ``owners``."""
        wanted = None if owners is None else [principal_of(owner) for owner in owners]
        if wanted is None:
            return self.manager.describe_tokens(None)
        return self.manager.describe_tokens(lambda info: any(info.owner_or_renewer(owner) for owner in wanted))


__all__ = ["TokenService"]
