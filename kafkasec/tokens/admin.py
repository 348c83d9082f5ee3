"""The four delegation-token requests as a Kafka broker answers them (KafkaApis, ControllerApis).

Before a token request reaches the controller (:class:`DelegationTokenManager`), Kafka checks
the connection and, by KIP-373, the caller's rights:

- no token request over PLAINTEXT, over one-way SSL (an anonymous SSL client) or from a
  connection that logged in with a token: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (64);
- a token for someone else needs CREATE_TOKENS on that owner's USER resource:
  DELEGATION_TOKEN_AUTHORIZATION_FAILED (65);
- renewers must be ``User`` principals: INVALID_PRINCIPAL_TYPE (67);
- describe shows a token to its owner, its requester, its renewers, holders of DESCRIBE_TOKENS
  on the owner's USER resource and holders of DESCRIBE on the token's DELEGATION_TOKEN resource.

:class:`kafkasec.tokens.service.TokenService` calls these with the request's context and a narrow
:class:`~kafkasec.authorizer.service.Authorizer`.
"""

from __future__ import annotations

from typing import Iterable

from kafkasec.acl import AclOperation, ResourcePattern, ResourceType
from kafkasec.authorizer.service import Authorizer
from kafkasec.context import RequestContext
from kafkasec.errors import (
    DelegationTokenAuthDisabledError,
    DelegationTokenAuthorizationFailedError,
    DelegationTokenRequestNotAllowedError,
)
from kafkasec.principals.principal import ANONYMOUS, KafkaPrincipal
from kafkasec.tokens.manager import DelegationTokenManager, user_principal
from kafkasec.tokens.model import (
    DelegationToken,
    TokenInformation,
    principal_of,
    principals_of,
)


def allow_token_requests(context: RequestContext) -> bool:
    """Kafka's ``allowTokenRequests``: not over PLAINTEXT, not over one-way SSL (the client
    sent no certificate, so it is ANONYMOUS), not from a token-authenticated login."""
    protocol = context.security_protocol.upper()
    return not (
        context.principal.token_authenticated
        or protocol == "PLAINTEXT"
        or (protocol == "SSL" and context.principal == ANONYMOUS)
    )


def may_create_tokens_for(authorizer: Authorizer, context: RequestContext, owner: KafkaPrincipal) -> bool:
    """KIP-373: a token for oneself, or CREATE_TOKENS on the owner's USER resource."""
    return owner == context.principal or authorizer.is_allowed(
        context, AclOperation.CREATE_TOKENS, ResourcePattern(ResourceType.USER, str(owner))
    )


def _check_connection(context: RequestContext) -> None:
    if not isinstance(context, RequestContext):
        raise TypeError(f"context must be a RequestContext, not {context!r}")
    if not allow_token_requests(context):
        raise DelegationTokenRequestNotAllowedError()


def create_token(
    authorizer: Authorizer,
    manager: DelegationTokenManager,
    context: RequestContext,
    *,
    owner: KafkaPrincipal | str | None = None,
    renewers: Iterable[KafkaPrincipal | str] = (),
    max_lifetime_ms: int = -1,
) -> DelegationToken:
    """CreateDelegationToken: a token for ``owner`` (default: the caller)."""
    _check_connection(context)
    requester = context.principal
    owner = requester if owner is None else principal_of(owner)
    if not may_create_tokens_for(authorizer, context, owner):
        raise DelegationTokenAuthorizationFailedError()
    renewers = [user_principal(renewer, "renewer") for renewer in principals_of(renewers)]
    return manager.create_token(owner, requester=requester, renewers=renewers, max_lifetime_ms=max_lifetime_ms)


def renew_token(manager: DelegationTokenManager, context: RequestContext, hmac: bytes, renew_period_ms: int) -> int:
    """RenewDelegationToken: the new expiry timestamp."""
    _check_connection(context)
    return manager.renew_token(hmac, context.principal, renew_period_ms)


def expire_token(manager: DelegationTokenManager, context: RequestContext, hmac: bytes, expiry_period_ms: int) -> int:
    """ExpireDelegationToken: the new expiry timestamp (now, for a negative period)."""
    _check_connection(context)
    return manager.expire_token(hmac, context.principal, expiry_period_ms)


def describe_tokens(
    authorizer: Authorizer,
    manager: DelegationTokenManager,
    context: RequestContext,
    owners: Iterable[KafkaPrincipal | str] | None = None,
) -> list[DelegationToken]:
    """DescribeDelegationToken: the tokens the caller may see, of ``owners`` (None: of anyone;
    empty: none). A token counts as one of an owner's if that owner owns it, requested it or may
    renew it."""
    _check_connection(context)
    if not manager.enabled:
        raise DelegationTokenAuthDisabledError()
    wanted = None if owners is None else [principal_of(owner) for owner in owners]
    if wanted is not None and not wanted:
        return []

    def visible(info: TokenInformation) -> bool:
        if wanted is not None and not any(info.owner_or_renewer(owner) for owner in wanted):
            return False
        return (
            info.owner_or_renewer(context.principal)
            or authorizer.is_allowed(context, AclOperation.DESCRIBE_TOKENS, ResourcePattern(ResourceType.USER, str(info.owner)))
            or authorizer.is_allowed(context, AclOperation.DESCRIBE, ResourcePattern(ResourceType.DELEGATION_TOKEN, info.token_id))
        )

    return manager.describe_tokens(visible)
