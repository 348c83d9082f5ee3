"""Which APIs a node serves once a client has logged in, and the handler of each.

One registry per node, keyed by :class:`~kafkasec.protocol.api_keys.ApiKey`. Its handlers come
from the ``kafkasec_api_handlers`` hook: the built-in plugins answer it with the SDK's own
handlers (ACLs in :mod:`.acl_apis`, SCRAM credentials in :mod:`.scram_apis`, delegation tokens
in :mod:`.token_apis`), and a plugin of yours may serve an API of its own or replace a built-in
one. The read APIs of the endpoint's catalogue (:mod:`.cluster_apis`) are the node's own, added
by the endpoint. Each handler takes ``(security, context, body, version)`` and returns a
response body; :meth:`ApiHandlers.handle` wraps it in a frame.

A handler's KafkaError is answered as Kafka's ``handleError`` does, with the request's error
response (:class:`~kafkasec.protocol.errors.ApiError`); a state that cannot be written is
REQUEST_TIMED_OUT (busy) or KAFKA_STORAGE_ERROR, both retriable; an unexpected exception is
UNKNOWN_SERVER_ERROR, logged, and the connection stays up.
"""

from __future__ import annotations

import logging
from typing import Callable, Mapping

from kafkasec.context import RequestContext
from kafkasec.errors import KafkaError, KafkaErrorCode
from kafkasec.plugins import answers_by_plugin
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.api_versions import VersionRanges, kio_versions
from kafkasec.protocol.cluster_apis import metadata_error_response
from kafkasec.protocol.errors import ApiError
from kafkasec.protocol.forwardable import FORWARDABLE_APIS
from kafkasec.store.base import StateError

Handler = Callable[[object, RequestContext, object, int], object]
"""handler(security, context, request body, version) -> response body."""

log = logging.getLogger(__name__)


_ERROR_RESPONSES: dict[int, Callable] = {
    **{api_key: api.error_response for api_key, api in FORWARDABLE_APIS.items()},
    ApiKey.METADATA: metadata_error_response,
}
"""The APIs whose error response carries the error per item (Kafka's getErrorResponse of each)."""


def error_response(api_key: int, version: int, body, error: ApiError):
    """The whole request answered with one error (Kafka's ``AbstractRequest.getErrorResponse``)."""
    respond = _ERROR_RESPONSES.get(api_key)
    if respond is not None:
        return respond(body, version, error)
    return wire.build(wire.response_schema(api_key, version), **error.fields())


def collect_handlers(security, own: Mapping[int, Handler] | None = None) -> dict[int, Handler]:
    """The handlers the plugins offer through ``kafkasec_api_handlers``, over ``own`` (the
    node's own, e.g. its catalogue's read APIs).

    Plugins are asked first and built-ins last (``trylast``), and the first answer for an API
    key wins: a plugin replaces a built-in handler. Two plugins that are not built-ins serving
    one API is a configuration mistake, refused with a ValueError naming both.
    """
    served: dict[int, Handler] = {}
    claimed_by: dict[ApiKey, str] = {}
    for impl, answer in answers_by_plugin(security.plugin_manager.hook.kafkasec_api_handlers, security=security):
        for key, handler in (answer or {}).items():
            api_key = ApiKey(key)
            if api_key in served:
                if not impl.trylast and api_key in claimed_by:
                    raise ValueError(
                        f"the plugins {claimed_by[api_key]!r} and {impl.plugin_name!r} both serve {api_key.title}"
                    )
                continue
            if not callable(handler):
                raise TypeError(f"the plugin {impl.plugin_name!r} offers {handler!r} for {api_key.title}, not a handler")
            served[api_key] = handler
            if not impl.trylast:
                claimed_by[api_key] = impl.plugin_name
    for key, handler in (own or {}).items():
        served.setdefault(ApiKey(key), handler)
    return served


class ApiHandlers:
    """The APIs after login: ``ranges`` for ApiVersions, ``handlers`` for everything else.

    SaslHandshake and SaslAuthenticate are listed (a client looks for them) but answered by the
    authenticator. Envelope is listed only by an endpoint that accepts envelopes.
    """

    def __init__(self, handlers: Mapping[int, Handler], *, accepts_envelopes: bool):
        # ApiKey members, typed int: a request is looked up by the int it carries.
        self.handlers: dict[int, Handler] = {ApiKey(key): handler for key, handler in handlers.items()}
        listed = [ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE, *self.handlers]
        if accepts_envelopes:
            listed.append(ApiKey.ENVELOPE)
        self.ranges: VersionRanges = {api_key: kio_versions(api_key) for api_key in listed}

    @classmethod
    def collect(cls, security, own: Mapping[int, Handler] | None = None, *, accepts_envelopes: bool) -> ApiHandlers:
        """The registry of ``security``'s plugins over ``own`` (see :func:`collect_handlers`)."""
        return cls(collect_handlers(security, own), accepts_envelopes=accepts_envelopes)

    @property
    def forwardable(self) -> frozenset[int]:
        """The served APIs that a broker forwards to its controller (KIP-590)."""
        return frozenset(self.handlers) & frozenset(FORWARDABLE_APIS)

    def serves(self, api_key: int, version: int) -> bool:
        low, high = self.ranges.get(api_key, (0, -1))
        return low <= version <= high

    def handle(self, security, context: RequestContext, request: wire.Request) -> bytes | None:
        """The response frame to an authenticated request of an API in ``handlers``; None when
        not even an error response can be encoded (the connection is then closed)."""
        api_key, version = request.api_key, request.api_version
        correlation_id = int(request.header.correlation_id)
        try:
            body = self.handlers[api_key](security, context, request.body, version)
            return wire.encode_response(body, correlation_id=correlation_id)
        except KafkaError as error:
            body = error_response(api_key, version, request.body, ApiError.from_exception(error))
        except StateError as error:
            # A write that found the state busy or unwritable: nothing was written, and the
            # client is told so with a retriable code (the store's text stays in this log).
            log.warning("API key %d v%d from %s: %s", api_key, version, context.principal, error)
            body = error_response(api_key, version, request.body, ApiError.from_exception(error))
        except Exception:
            # A handler's bug, or an answer its version cannot carry (a string past a
            # non-flexible version's 32,767 bytes): Kafka's UNKNOWN_SERVER_ERROR, logged.
            log.exception("handling %s v%d from %s failed", ApiKey(api_key).title, version, context.principal)
            body = error_response(api_key, version, request.body, ApiError(KafkaErrorCode.UNKNOWN_SERVER_ERROR))
        return encode_or_none(body, correlation_id, f"{ApiKey(api_key).title} v{version} from {context.principal}")


def unknown_server_error_frame(api_key: int, version: int, body, correlation_id: int) -> bytes | None:
    """What Kafka answers a request whose handling failed unexpectedly: UNKNOWN_SERVER_ERROR
    in the response's shape (the frame, without its size), or None where that shape has no
    place for it (Produce, Fetch before v7) or cannot be encoded: then the connection closes."""
    response = error_response(api_key, version, body, ApiError(KafkaErrorCode.UNKNOWN_SERVER_ERROR))
    if not wire.carries_error(response):
        return None
    return encode_or_none(response, correlation_id, f"{ApiKey(api_key).title} v{version}")


def encode_or_none(body, correlation_id: int, what: str) -> bytes | None:
    """An error response's frame, or None (logged at ERROR) when even it cannot be encoded:
    the error responses echo the request's names, which may be what could not be encoded."""
    try:
        return wire.encode_response(body, correlation_id=correlation_id)
    except Exception:
        log.exception("the error response to %s cannot be encoded; closing the connection", what)
        return None


__all__ = ["ApiHandlers", "Handler", "collect_handlers", "encode_or_none", "error_response", "unknown_server_error_frame"]
