"""Which APIs an endpoint serves once a client has logged in, and the handler of each.

The handlers are the SDK's own wire handlers (ACLs, SCRAM credentials, delegation tokens) and
the read APIs of :mod:`kafkasec.server.cluster_requests`. Each takes
``(security, context, body, version)`` and returns a response body; :meth:`ApiTable.handle`
wraps that in a frame. A handler's KafkaError is answered as Kafka's ``handleError`` does, with
the request's error response; a state that cannot be written is REQUEST_TIMED_OUT (busy) or
KAFKA_STORAGE_ERROR, both retriable; an unexpected exception is UNKNOWN_SERVER_ERROR, logged,
and the connection stays up.
"""

from __future__ import annotations

import logging
from typing import Callable

from kafkasec import acl_requests, wire
from kafkasec.context import RequestContext
from kafkasec.errors import KafkaError, KafkaErrorCode
from kafkasec.forwardable import FORWARDABLE_APIS
from kafkasec.forwarding import ENVELOPE_API_KEY
from kafkasec.scram import requests as scram_requests
from kafkasec.server.api_versions import API_VERSIONS, VersionRanges, kio_versions
from kafkasec.server.authenticator import SASL_AUTHENTICATE, SASL_HANDSHAKE
from kafkasec.server.cluster_requests import ClusterRequests
from kafkasec.store.base import StateError
from kafkasec.tokens import requests as token_requests

Handler = Callable[[object, RequestContext, object, int], object]

log = logging.getLogger(__name__)


def error_response(api_key: int, version: int, body, code: KafkaErrorCode, message: str | None):
    """The whole request answered with one error (Kafka's ``AbstractRequest.getErrorResponse``)."""
    api = FORWARDABLE_APIS.get(api_key)
    if api is not None:
        return api.error_response(body, version, code, message)
    return wire.build(wire.response_schema(api_key, version), error_code=wire.error_code(code), error_message=message)


class ApiTable:
    """The APIs after login: ``ranges`` for ApiVersions, ``handlers`` for everything else.

    SaslHandshake and SaslAuthenticate are listed (a client looks for them) but, after login, are
    answered ILLEGAL_SASL_STATE: kafkasec's endpoint does not re-authenticate (KIP-368).
    Envelope is listed only by an endpoint that accepts envelopes.
    """

    def __init__(self, cluster: ClusterRequests, *, accepts_envelopes: bool):
        self.handlers: dict[int, Handler] = {
            **cluster.handlers(),
            **acl_requests.HANDLERS,
            **scram_requests.HANDLERS,
            **token_requests.HANDLERS,
        }
        listed = [API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE, *self.handlers]
        if accepts_envelopes:
            listed.append(ENVELOPE_API_KEY)
        self.ranges: VersionRanges = {api_key: kio_versions(api_key) for api_key in listed}

    @property
    def forwardable(self) -> frozenset[int]:
        """The served APIs that a broker forwards to its controller (KIP-590)."""
        return frozenset(self.handlers) & frozenset(FORWARDABLE_APIS)

    def serves(self, api_key: int, version: int) -> bool:
        low, high = self.ranges.get(api_key, (0, -1))
        return low <= version <= high

    def handle(self, security, context: RequestContext, request: wire.Request) -> bytes:
        """The response frame to an authenticated request of an API in ``handlers``."""
        api_key, version = request.api_key, request.api_version
        try:
            body = self.handlers[api_key](security, context, request.body, version)
        except KafkaError as error:
            body = error_response(api_key, version, request.body, error.error_code, error.message)
        except StateError as error:
            # A write that found the state busy or unwritable: nothing was written, and the
            # client is told so with a retriable code (the store's text stays in this log).
            log.warning("API key %d v%d from %s: %s", api_key, version, context.principal, error)
            body = error_response(api_key, version, request.body, error.error_code, None)
        except Exception:
            log.exception("handling API key %d v%d from %s failed", api_key, version, context.principal)
            code = KafkaErrorCode.UNKNOWN_SERVER_ERROR
            body = error_response(api_key, version, request.body, code, None)
        return wire.encode_response(body, correlation_id=int(request.header.correlation_id))

    @staticmethod
    def illegal_sasl_state(request: wire.Request) -> bytes:
        """SaslHandshake or SaslAuthenticate after login, answered as KafkaApis does."""
        message = None
        if request.api_key == SASL_AUTHENTICATE:
            message = "SaslAuthenticate request received after successful authentication"
        body = wire.build(
            wire.response_schema(request.api_key, request.api_version),
            error_code=wire.error_code(KafkaErrorCode.ILLEGAL_SASL_STATE),
            error_message=message,
        )
        return wire.encode_response(body, correlation_id=int(request.header.correlation_id))

