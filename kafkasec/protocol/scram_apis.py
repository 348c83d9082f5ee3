"""DescribeUserScramCredentials (API 50) and AlterUserScramCredentials (API 51) on the wire.

Each handler takes the request body (a kio dataclass, see :mod:`kafkasec.protocol.wire`), its version and
the RequestContext, and returns the response body, as a KRaft cluster answers: describing is the
broker's (KafkaApis, from its metadata image), altering the controller's (ControllerApis and
ScramControlManager); the rules are in :mod:`kafkasec.scram.admin`. An alteration carries a
salt and a salted password, never a password. An empty or null list of users describes every
user (librdkafka sends an empty one).
"""

from __future__ import annotations

from kafkasec.context import RequestContext
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.errors import ApiError
from kafkasec.scram.credentials import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

DESCRIBE_USER_SCRAM_CREDENTIALS = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS
ALTER_USER_SCRAM_CREDENTIALS = ApiKey.ALTER_USER_SCRAM_CREDENTIALS


def _mechanism(code: int) -> ScramMechanism:
    """Kafka's ScramMechanism.fromType: a code it does not know is UNKNOWN, which the
    controller then refuses per user (UNSUPPORTED_SASL_MECHANISM)."""
    try:
        return ScramMechanism(int(code))
    except ValueError:
        return ScramMechanism.UNKNOWN


def handle_describe_user_scram_credentials(security, context: RequestContext, body, version: int):
    """The DescribeUserScramCredentialsResponse for ``body``: per user, its mechanisms and
    iteration counts, or RESOURCE_NOT_FOUND (91) / DUPLICATE_RESOURCE (92)."""
    response_type = wire.response_schema(DESCRIBE_USER_SCRAM_CREDENTIALS, version)
    result_type = wire.item_type(response_type, "results")
    info_type = wire.item_type(result_type, "credential_infos")
    names = [user.name for user in body.users or ()]
    described = security.describe_user_scram_credentials(names, context=context)
    if described.error is not None:
        # DescribeUserScramCredentialsRequest.getErrorResponse: one result per name requested,
        # whose user field it leaves empty; clients read the top-level error.
        fields = ApiError.from_exception(described.error).fields()
        return wire.build(response_type, results=tuple(wire.build(result_type, **fields) for _ in names), **fields)
    results = []
    for result in described.results:
        infos = ()
        if result.description is not None:
            infos = tuple(
                wire.build(info_type, mechanism=int(info.mechanism), iterations=info.iterations)
                for info in result.description.infos
            )
        results.append(
            wire.build(result_type, user=result.user, credential_infos=infos, **ApiError.from_exception(result.error).fields())
        )
    return wire.build(response_type, results=tuple(results), **ApiError.from_exception(None).fields())


def handle_alter_user_scram_credentials(security, context: RequestContext, body, version: int):
    """The AlterUserScramCredentialsResponse for ``body``: one result per user named."""
    deletions = [UserScramCredentialDeletion(d.name, _mechanism(d.mechanism)) for d in body.deletions]
    upsertions = [
        UserScramCredentialUpsertion.from_salted_password(
            u.name, ScramCredentialInfo(_mechanism(u.mechanism), int(u.iterations)), u.salt, u.salted_password
        )
        for u in body.upsertions
    ]
    results = security.scram_service.alter_credentials(deletions, upsertions, context=context)
    response_type = wire.response_schema(ALTER_USER_SCRAM_CREDENTIALS, version)
    result_type = wire.item_type(response_type, "results")
    return wire.build(
        response_type,
        results=tuple(wire.build(result_type, user=r.user, **ApiError.from_exception(r.error).fields()) for r in results),
    )


HANDLERS = {
    DESCRIBE_USER_SCRAM_CREDENTIALS: handle_describe_user_scram_credentials,
    ALTER_USER_SCRAM_CREDENTIALS: handle_alter_user_scram_credentials,
}
"""API key -> handler(security, context, body, version) -> response body."""
