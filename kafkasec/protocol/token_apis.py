"""The four delegation-token APIs on the wire: CreateDelegationToken (38), RenewDelegationToken
(39), ExpireDelegationToken (40) and DescribeDelegationToken (41).

Each handler takes the request body (a kio dataclass, see :mod:`kafkasec.protocol.wire`), its version and
the RequestContext, calls the facade (whose rules are Kafka's, see :mod:`kafkasec.tokens.admin`)
and answers as Kafka's KafkaApis does: a refusal is the error code with the owner and requester
filled in for CreateDelegationToken, ``-1`` timestamps for renew and expire, and no tokens for
describe. kio carries the timestamps of the create, renew and expire responses as datetimes
(describe's as int64) and the periods of the requests as timedeltas; the SDK speaks
milliseconds.
"""

from __future__ import annotations

import datetime

from kafkasec.context import RequestContext
from kafkasec.errors import InvalidPrincipalTypeError, KafkaError
from kafkasec.principals.principal import KafkaPrincipal
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.errors import ApiError
from kafkasec.tokens.model import DelegationToken

CREATE_DELEGATION_TOKEN = ApiKey.CREATE_DELEGATION_TOKEN
RENEW_DELEGATION_TOKEN = ApiKey.RENEW_DELEGATION_TOKEN
EXPIRE_DELEGATION_TOKEN = ApiKey.EXPIRE_DELEGATION_TOKEN
DESCRIBE_DELEGATION_TOKEN = ApiKey.DESCRIBE_DELEGATION_TOKEN
ERROR_TIMESTAMP = -1
"""Kafka's DelegationTokenManager.ErrorTimestamp: the timestamps of a refused request."""

_MILLISECOND = datetime.timedelta(milliseconds=1)


def _milliseconds(period: datetime.timedelta) -> int:
    return period // _MILLISECOND


def _code(error: KafkaError | None):
    # These responses carry a code and no message.
    return ApiError.from_exception(error).code_field()["error_code"]


def _wire_principal(principal_type: str | None, name: str | None, role: str) -> KafkaPrincipal:
    """A principal a request names; INVALID_PRINCIPAL_TYPE (67) when its type or name is null."""
    if not principal_type or name is None:
        raise InvalidPrincipalTypeError(f"The {role} of a delegation token needs a principal type and name")
    return KafkaPrincipal(principal_type, name)


def requested_owner(body, requester: KafkaPrincipal) -> KafkaPrincipal:
    """The owner a CreateDelegationToken request asks for: the requester unless a name is given
    (Kafka's rule); the same on a controller and on a broker that screens before forwarding."""
    owner_name = getattr(body, "owner_principal_name", None)
    if not owner_name:
        return requester
    return _wire_principal(getattr(body, "owner_principal_type", None), owner_name, "owner")


def handle_create_delegation_token(security, context: RequestContext, body, version: int):
    """The CreateDelegationTokenResponse: the new token, or the refusal with owner and requester."""
    requester = owner = context.principal
    token: DelegationToken | None = None
    error: KafkaError | None = None
    try:
        owner = requested_owner(body, requester)
        renewers = [_wire_principal(r.principal_type, r.principal_name, "renewer") for r in body.renewers]
        token = security.create_delegation_token(
            context, owner=owner, renewers=renewers, max_lifetime_ms=_milliseconds(body.max_lifetime)
        )
    except KafkaError as refused:
        error = refused
    fields = {
        "principal_type": owner.principal_type,
        "principal_name": owner.name,
        "token_requester_principal_type": requester.principal_type,
        "token_requester_principal_name": requester.name,
        "issue_timestamp": wire.instant(ERROR_TIMESTAMP),
        "expiry_timestamp": wire.instant(ERROR_TIMESTAMP),
        "max_timestamp": wire.instant(ERROR_TIMESTAMP),
        "token_id": "",
        "hmac": b"",
    }
    if token is not None:
        info = token.info
        fields.update(
            issue_timestamp=wire.instant(info.issue_timestamp),
            expiry_timestamp=wire.instant(info.expiry_timestamp),
            max_timestamp=wire.instant(info.max_timestamp),
            token_id=info.token_id,
            hmac=token.hmac,
        )
    return wire.build(wire.response_schema(CREATE_DELEGATION_TOKEN, version), error_code=_code(error), **fields)


def _expiry_response(api_key: ApiKey, version: int, change) -> object:
    """Renew and expire answer the same way: the new expiry timestamp, or -1 and the error."""
    try:
        expiry, error = change(), None
    except KafkaError as refused:
        expiry, error = ERROR_TIMESTAMP, refused
    return wire.build(wire.response_schema(api_key, version), error_code=_code(error), expiry_timestamp=wire.instant(expiry))


def handle_renew_delegation_token(security, context: RequestContext, body, version: int):
    return _expiry_response(
        RENEW_DELEGATION_TOKEN,
        version,
        lambda: security.renew_delegation_token(context, bytes(body.hmac), _milliseconds(body.renew_period)),
    )


def handle_expire_delegation_token(security, context: RequestContext, body, version: int):
    return _expiry_response(
        EXPIRE_DELEGATION_TOKEN,
        version,
        lambda: security.expire_delegation_token(context, bytes(body.hmac), _milliseconds(body.expiry_time_period)),
    )


def handle_describe_delegation_token(security, context: RequestContext, body, version: int):
    """The DescribeDelegationTokenResponse: the tokens of ``owners`` (null: anyone's) that the
    caller may see, with their HMACs."""
    response_type = wire.response_schema(DESCRIBE_DELEGATION_TOKEN, version)
    owners = None if body.owners is None else [KafkaPrincipal(o.principal_type, o.principal_name) for o in body.owners]
    try:
        tokens = security.describe_delegation_tokens(context, owners)
    except KafkaError as refused:
        return wire.build(response_type, error_code=_code(refused), tokens=())
    token_type = wire.item_type(response_type, "tokens")
    renewer_type = wire.item_type(token_type, "renewers")
    described = tuple(
        wire.build(
            token_type,
            principal_type=token.info.owner.principal_type,
            principal_name=token.info.owner.name,
            token_requester_principal_type=token.info.token_requester.principal_type,
            token_requester_principal_name=token.info.token_requester.name,
            issue_timestamp=token.info.issue_timestamp,
            expiry_timestamp=token.info.expiry_timestamp,
            max_timestamp=token.info.max_timestamp,
            token_id=token.info.token_id,
            hmac=token.hmac,
            renewers=tuple(
                wire.build(renewer_type, principal_type=renewer.principal_type, principal_name=renewer.name)
                for renewer in token.info.renewers
            ),
        )
        for token in tokens
    )
    return wire.build(response_type, error_code=_code(None), tokens=described)


HANDLERS = {
    CREATE_DELEGATION_TOKEN: handle_create_delegation_token,
    RENEW_DELEGATION_TOKEN: handle_renew_delegation_token,
    EXPIRE_DELEGATION_TOKEN: handle_expire_delegation_token,
    DESCRIBE_DELEGATION_TOKEN: handle_describe_delegation_token,
}
"""API key -> handler(security, context, body, version) -> response body."""
