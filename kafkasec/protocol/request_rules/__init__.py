"""Kafka's per-request authorization (KafkaApis' rules) for every client API, sans I/O.

A Python broker, proxy or gateway decodes a request (``kafkasec.protocol.wire.decode_request``)
and asks :func:`authorize_request`; the :class:`RequestAuthorization` it gets back says what may
go on (``forward``: the request itself when all of it may, a copy with the authorized items, or
None), what was refused with which Kafka error (``refusals``), and how to answer
(``response(answer)``: the answer to ``forward`` with the refused items added in Kafka's shape,
and, for the APIs that list things, cut to what the caller may see)::

    authorization = authorize_request(security, context, request.body, request.api_version,
                                      topic_names=my_topic_ids_to_names)
    answer = None if authorization.forward is None else my_broker.handle(authorization.forward)
    response = authorization.response(answer)

Every decision goes through :meth:`KafkaSecurity.authorize` (one batched call for the request's
questions; the APIs that filter an answer ask once more about what the answer lists), so plugins
and audit see them as they see every other decision. The rules per API are in this package's
modules, one table each (:data:`RULES` joins them); docs/request-authorization.md lists them.

Which APIs are not here, and why:

- the security APIs (ACLs, SCRAM credentials, delegation tokens: :data:`SECURITY_APIS`) are
  answered by kafkasec's own handlers (``kafkasec.protocol.registry``), which authorize them;
- ApiVersions, SaslHandshake and SaslAuthenticate are the connection's, before any principal;
- the APIs brokers and controllers send each other (:data:`INTER_BROKER_APIS`) are not served to
  clients: a KRaft broker does not list them in ApiVersions and closes a connection that sends
  one, and so does kafkasec's gateway. :func:`authorize_request` refuses them with a ValueError.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any, Mapping

from kafkasec.context import RequestContext
from kafkasec.errors import KafkaError
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.api_versions import kio_versions
from kafkasec.protocol.errors import ApiError
from kafkasec.protocol.registry import error_response
from kafkasec.protocol.request_rules import admin, data, groups, metadata, transactions
from kafkasec.protocol.request_rules.core import Incoming, Refusal, RequestAuthorization, Rule

RULES: Mapping[ApiKey, Rule] = {
    **data.RULES, **metadata.RULES, **groups.RULES, **transactions.RULES, **admin.RULES,
}
"""Kafka's rule for each client API that kafkasec forwards, by API key."""

SECURITY_APIS = frozenset({
    ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
    ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN,
    ApiKey.DESCRIBE_DELEGATION_TOKEN,
})
"""The APIs kafkasec answers itself: its state is the security state."""

CONNECTION_APIS = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})

INTER_BROKER_APIS = frozenset(ApiKey) - frozenset(RULES) - SECURITY_APIS - CONNECTION_APIS
"""What brokers and controllers send each other (LeaderAndIsr, Vote, BrokerHeartbeat, Envelope,
the share-group state APIs ...): never served to a client."""


def authorize_request(
    security,
    context: RequestContext,
    request: Any,
    version: int | None = None,
    *,
    topic_names: Mapping[uuid.UUID, str] | None = None,
    producer_ids: Mapping[int, str] | None = None,
) -> RequestAuthorization:
    """Kafka's authorization of one decoded client request from ``context``, through
    ``security`` (a :class:`~kafkasec.KafkaSecurity`): ``request`` is what
    :func:`kafkasec.protocol.wire.decode_request` gives (a ``wire.Request``: header and body;
    ``version`` then defaults to its header's), or a kio request body with its ``version``.

    ``topic_names`` maps the topic ids the broker knows to their names, for the versions that
    name topics by id (Fetch v13+, Produce v13+, OffsetCommit v10+, ShareFetch ...); an id it
    does not hold is answered UNKNOWN_TOPIC_ID, as Kafka answers it. The names it holds are
    also what DeleteTopics takes as existing topics (Kafka tells a caller who may DESCRIBE a
    topic but not DELETE it whether it exists).

    ``producer_ids`` maps the producer ids the broker gave to transactional ids (InitProducerId's
    answers) to those ids: a request of one transactional id carrying a producer id given to
    another (a transactional batch, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
    TxnOffsetCommit, InitProducerId's re-initialization) is refused INVALID_PRODUCER_ID_MAPPING,
    as Kafka's transaction coordinator refuses it, for a broker that does not check (KIP-890).
    """
    if isinstance(request, wire.Request):
        header_api, header_version = request.api_key, request.api_version
        request = request.body
        if getattr(request, "__api_key__", header_api) != header_api:
            raise ValueError(f"the request's header names API key {header_api}, its body API key {request.__api_key__}")
        version = header_version if version is None else version
    api_key = _request_api(request.__class__)
    if api_key is None:
        raise TypeError(
            f"request must be what wire.decode_request gives (a wire.Request) or a kio request body, not {request!r}"
        )
    if version is None:
        raise TypeError("a kio request body needs its version: authorize_request(security, context, body, version)")
    if int(request.__version__) != version:
        raise ValueError(f"the request body is {api_key.title} v{request.__version__}, not v{version}")
    rule = RULES.get(api_key)
    if rule is None:
        kind = "a security API kafkasec answers itself" if api_key in SECURITY_APIS else (
            "answered on the connection" if api_key in CONNECTION_APIS else "an inter-broker API, never served to clients"
        )
        raise ValueError(f"{api_key.title} is {kind}, not a request to authorize and forward")
    incoming = Incoming(security, context, api_key, version, request, topic_names or {}, producer_ids or {})
    try:
        return rule.decide(incoming)
    except KafkaError as error:
        # What Kafka's handler throws for a malformed request (InvalidRequestException ...):
        # nothing goes on, and the whole request is answered with the error, in the shape of
        # Kafka's getErrorResponse for that API.
        refusal = ApiError.from_exception(error)
        return incoming.decided(
            None, [Refusal(None, refusal.error_code, message=refusal.message)],
            lambda _answer: error_response(api_key, version, request, refusal),
        )


@functools.lru_cache(maxsize=None)
def _request_api(body_type: type) -> ApiKey | None:
    """The API of a kio request body's class; None for anything else (asked per type, once)."""
    api_key = getattr(body_type, "__api_key__", None)
    if api_key is None or getattr(body_type, "__type__", None) is None or "Request" not in body_type.__name__:
        return None
    return ApiKey(int(api_key))


def client_api_versions() -> dict[ApiKey, tuple[int, int]]:
    """The client APIs kafkasec authorizes and decodes, each with the (lowest, highest)
    version it has a rule and a schema for: what a broker that embeds kafkasec may list in
    ApiVersions, intersected with what it serves itself (the security APIs, which kafkasec
    answers, are not in it: see :data:`SECURITY_APIS`)."""
    return {api_key: kio_versions(api_key) for api_key in RULES}


__all__ = [
    "CONNECTION_APIS",
    "INTER_BROKER_APIS",
    "RULES",
    "SECURITY_APIS",
    "Refusal",
    "RequestAuthorization",
    "authorize_request",
    "client_api_versions",
]
