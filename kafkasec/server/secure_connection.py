"""One client connection's security, sans I/O: what a Python broker embeds.

The broker reads bytes from a client and hands them to :meth:`SecureConnection.receive_data`;
what comes back says what to do, in order:

- :class:`Send`: write ``data`` (whole frames, size included) once ``delay_ms`` have passed
  (a refused login waits ``connection.failed.authentication.delay.ms``);
- :class:`Close`: close the connection once ``delay_ms`` have passed (``reason`` is for the log);
- :class:`Handle`: a request that may go on. The broker carries out ``request`` (the
  authorized part of what the client sent: refused topics, groups ... are already taken out)
  and passes its answer (a kio response body) to :meth:`SecureConnection.respond`, which gives
  the bytes to send, the refusals merged in Kafka's shape (a Produce with ``acks=0`` is carried
  out and answered with nothing, as Kafka does).

Everything else is the connection's: the SASL login (every mechanism kafkasec serves, KIP-368
re-authentication) or the TLS/plaintext principal, ApiVersions (the versions the broker says it
serves, intersected with those kafkasec decodes and authorizes), the security APIs (ACLs,
SCRAM credentials, delegation tokens: answered by kafkasec's handlers), Kafka's validation and
authorization of every client request, and what Kafka does with the rest: an unknown API, an
inter-broker API or an unreadable frame closes the connection. A broker's security is then::

    connection = SecureConnection(security, peer_address, broker_versions=MY_VERSIONS)
    for event in connection.receive_data(data):
        if isinstance(event, Send): writer.write(event.data)
        elif isinstance(event, Handle): writer.write(connection.respond(event, my_handler(event.request)))
        elif isinstance(event, Close): writer.close()

(docs/embedding.md walks through a whole broker, examples/embedded_broker.py.) Answers must go
out in the order of the requests, as Kafka's clients expect.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Mapping, Union

from attrs import field, frozen

from kafkasec.context import RequestContext
from kafkasec.errors import KafkaError
from kafkasec.principals.authentication import PlaintextAuthenticationContext, SslAuthenticationContext
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.api_versions import VersionRanges, answer_api_versions
from kafkasec.protocol.registry import ApiHandlers, encode_or_none, unknown_server_error_frame
from kafkasec.protocol.request_rules import (
    RequestAuthorization,
    authorize_request,
    client_api_versions,
)
from kafkasec.server.authenticator import SCRAM_MECHANISMS, Authenticator, LoginSession, answer_after_login
from kafkasec.server.endpoint import (
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_MAX_SASL_RECEIVE_BYTES,
    MAX_REAUTH_MS,
    MAX_REQUEST_BYTES,
    MAX_SASL_RECEIVE_BYTES,
)
from kafkasec.server.refusal_log import log_refused
from kafkasec.settings import SECURITY_PROTOCOLS, parse_count, parse_milliseconds

log = logging.getLogger(__name__)

@frozen
class Send:
    """Bytes to write to the client (whole frames), after ``delay_ms``."""

    data: bytes = field(repr=lambda data: f"<{len(data)} bytes>")
    delay_ms: int = 0


@frozen
class Close:
    """Close the connection once ``delay_ms`` have passed (a refused login waits, answered or
    not, so that passwords cannot be guessed fast); ``reason`` says why, for the broker's log."""

    reason: str
    delay_ms: int = 0


@frozen
class Handle:
    """A request the broker carries out: ``request`` is the authorized part (a kio request
    body of ``api_key`` at ``version``); its answer goes to :meth:`SecureConnection.respond`,
    except a Produce's with ``acks=0``, to which Kafka sends nothing."""

    api_key: ApiKey
    version: int
    request: Any = field(repr=False)
    authorization: RequestAuthorization = field(repr=False)
    correlation_id: int


Event = Union[Send, Close, Handle]


class SecureConnection:
    """The security of one client connection (see the module's docstring).

    ``broker_versions``: the client APIs the broker serves, API key -> (lowest, highest);
    ApiVersions lists each at the versions both it and :func:`client_api_versions` have.
    ``security_protocol``: PLAINTEXT, SSL (``peer_certificate``: the client's DER certificate,
    if any), SASL_PLAINTEXT or SASL_SSL (``mechanisms``: the SASL mechanisms this listener
    enables). ``topic_names``: the broker's topic ids -> names (a mapping it keeps up to date),
    for the requests that name topics by id.
    """

    def __init__(
        self,
        security,
        client_address: str,
        *,
        broker_versions: VersionRanges,
        security_protocol: str = "SASL_PLAINTEXT",
        listener_name: str | None = None,
        mechanisms: tuple[str, ...] = SCRAM_MECHANISMS,
        peer_certificate: bytes | None = None,
        topic_names: Mapping[uuid.UUID, str] | None = None,
    ):
        if security_protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"security_protocol is one of {', '.join(SECURITY_PROTOCOLS)}, not {security_protocol!r}")
        self.security = security
        self.client_address = client_address
        self.security_protocol = security_protocol
        self.listener_name = listener_name or security_protocol
        self.mechanisms = tuple(mechanisms)
        self.topic_names: Mapping[uuid.UUID, str] = {} if topic_names is None else topic_names
        config = security.config
        self.max_request_bytes = parse_count(config, MAX_REQUEST_BYTES, DEFAULT_MAX_REQUEST_BYTES, unit="bytes")
        self.max_sasl_receive_bytes = parse_count(config, MAX_SASL_RECEIVE_BYTES, DEFAULT_MAX_SASL_RECEIVE_BYTES, unit="bytes")
        self.max_reauth_ms = parse_milliseconds(config, MAX_REAUTH_MS, 0)
        self._security_apis = ApiHandlers.collect(security, {}, accepts_envelopes=False)
        authorized = {int(api_key): versions for api_key, versions in client_api_versions().items()}
        served = {
            api_key: (max(low, authorized[api_key][0]), min(high, authorized[api_key][1]))
            for api_key, (low, high) in broker_versions.items()
            if api_key in authorized and max(low, authorized[api_key][0]) <= min(high, authorized[api_key][1])
        }
        self.ranges: VersionRanges = {**served, **self._security_apis.ranges}
        """What ApiVersions lists: the broker's client APIs kafkasec authorizes, the security
        APIs kafkasec answers, and the connection's own (ApiVersions, SASL)."""
        self._buffer = bytearray()
        self._closed = False
        self._session: LoginSession | None = None  # KIP-368
        self._authenticator: Authenticator | None = None
        self._context: RequestContext | None = None
        self.principal = None
        """The client's principal once it is known (at once without SASL; after the login)."""
        if security_protocol == "PLAINTEXT":
            self.principal = security.build_principal(PlaintextAuthenticationContext(client_address, self.listener_name))
        elif security_protocol == "SSL":
            self.principal = security.build_principal(
                SslAuthenticationContext(peer_certificate, client_address, self.listener_name)
            )
        else:
            self._authenticator = self._new_authenticator(None)

    @property
    def logged_in(self) -> bool:
        return self.principal is not None and self._authenticator is None

    # ------------------------------------------------------------------ bytes in, events out

    def receive_data(self, data: bytes) -> list[Event]:
        """Events for ``data``, the next bytes the client sent (any split of its frames)."""
        if self._closed:
            raise ValueError("the connection is closed: nothing more is read from it")
        events: list[Event] = []
        if not self._buffer and type(data) is bytes and len(data) >= wire.FRAME_SIZE.size:
            # The common case, one whole frame read at once, without copying it into the buffer.
            (size,) = wire.FRAME_SIZE.unpack_from(data)
            if len(data) == wire.FRAME_SIZE.size + size and 0 <= size <= self._frame_limit():
                return self.receive_frame(data[wire.FRAME_SIZE.size:])
        self._buffer += data
        while not self._closed and len(self._buffer) >= wire.FRAME_SIZE.size:
            (size,) = wire.FRAME_SIZE.unpack_from(self._buffer)
            limit = self._frame_limit()
            if size < 0 or size > limit:
                return self._close(events, f"a frame of {size} bytes (at most {limit})")
            if len(self._buffer) < wire.FRAME_SIZE.size + size:
                break
            events += self.receive_frame(wire.cut_frame(self._buffer, size))
        return events

    def _frame_limit(self) -> int:
        return self.max_request_bytes if self.logged_in else self.max_sasl_receive_bytes

    def receive_frame(self, frame: bytes) -> list[Event]:
        """Events for one whole frame (without its size), for a broker that frames itself."""
        if self._closed:
            raise ValueError("the connection is closed: nothing more is read from it")
        if self._authenticator is not None:
            return self._login(frame)
        api_key = int.from_bytes(frame[:2], "big", signed=True)
        session = self._session
        if session is not None and api_key == ApiKey.SASL_HANDSHAKE and session.may_reauthenticate():
            self._authenticator = self._new_authenticator((self.principal, session.mechanism))
            return self._login(frame)
        if session is not None and session.expired():
            return self._close([], "the authentication session expired and the client did not re-authenticate")
        try:
            return self._request(frame)
        except KafkaError as error:
            return self._close([], f"unreadable request: {error}")

    def respond(self, handled: Handle, answer: Any) -> bytes:
        """The bytes to send for ``handled``, from the broker's ``answer`` (a kio response body
        of the request's API and version): the refusals merged in Kafka's shape. A failure to
        make or encode it is logged and answered UNKNOWN_SERVER_ERROR where the response has
        a place for it; where it has none, the bytes are empty and the broker should close."""
        expected = wire.response_schema(handled.api_key, handled.version)
        if answer is not None and type(answer) is not expected:
            raise TypeError(f"the answer to {handled.api_key.title} v{handled.version} is a {expected.__name__} "
                            f"of that version, not {type(answer).__name__}")
        try:
            response = handled.authorization.response(answer)
            return wire.size_prefixed(wire.encode_response(response, correlation_id=handled.correlation_id))
        except ValueError:
            raise
        except Exception:
            log.exception("answering %s v%d from %s failed", handled.api_key.title, handled.version, self.principal)
        frame = unknown_server_error_frame(handled.api_key, handled.version, handled.authorization.request, handled.correlation_id)
        return b"" if frame is None else wire.size_prefixed(frame)

    # ------------------------------------------------------------------ the login

    def _new_authenticator(self, reauthenticating) -> Authenticator:
        return Authenticator(
            self.security, self.client_address, ranges=self.ranges, listener_name=self.listener_name,
            security_protocol=self.security_protocol, mechanisms=self.mechanisms,
            max_reauth_ms=self.max_reauth_ms,
            reauthenticating=reauthenticating,
        )

    def _login(self, frame: bytes) -> list[Event]:
        authenticator = self._authenticator
        assert authenticator is not None
        reply = authenticator.receive(frame)
        events: list[Event] = []
        if reply.frame is not None:
            events.append(Send(wire.size_prefixed(reply.frame), reply.delay_ms))
        if reply.close:
            # Answered, the answer waits the delay; unanswered, the close does.
            return self._close(events, f"login failed: {reply.reason}", 0 if reply.frame is not None else reply.delay_ms)
        if authenticator.is_complete:
            self.principal = authenticator.principal
            self._session = LoginSession.after(authenticator, self._session)
            self._authenticator = None
        return events

    # ------------------------------------------------------------------ requests

    def _request(self, frame: bytes) -> list[Event]:
        api_key, version = wire.peek_api(frame)
        if api_key == ApiKey.API_VERSIONS:
            return [Send(wire.size_prefixed(answer_api_versions(frame, self.ranges)[0]))]
        low, high = self.ranges.get(api_key, (0, -1))
        if not low <= version <= high:
            # Kafka closes a connection that sends an API or a version it does not serve
            # (inter-broker APIs included: a broker does not list them to clients).
            return self._close([], f"API key {api_key} v{version} is not served here")
        request = wire.decode_request(frame)
        if api_key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            return [Send(wire.size_prefixed(answer_after_login(request)))]
        context = self._connection_context().for_request(
            api_key, version, request.header.client_id or "", int(request.header.correlation_id)
        )
        if api_key in self._security_apis.handlers:
            answer = self._security_apis.handle(self.security, context, request)
            return [Send(wire.size_prefixed(answer))] if answer is not None else self._close([], "no answer could be encoded")
        correlation_id = int(request.header.correlation_id)
        try:
            authorization = authorize_request(self.security, context, request, topic_names=self.topic_names)
        except Exception:
            log.exception("authorizing %s v%d from %s failed", ApiKey(api_key).title, version, self.principal)
            return self._refused(api_key, version, request.body, correlation_id)
        if authorization.refusals:
            log_refused(context, authorization)
        answered = not (api_key == ApiKey.PRODUCE and request.body.acks == 0)
        if not answered and authorization.refusals:
            return self._close([], "a Produce with acks=0 was refused")  # as Kafka closes it
        if authorization.forward is not None:
            return [Handle(ApiKey(api_key), version, authorization.forward, authorization, correlation_id)]
        if not answered:
            return []
        frame_out = encode_or_none(authorization.response(), correlation_id, f"{ApiKey(api_key).title} v{version}")
        return [Send(wire.size_prefixed(frame_out))] if frame_out is not None else self._close([], "no answer could be encoded")

    def _connection_context(self) -> RequestContext:
        """The context every request of this principal on this connection shares (made once
        per login: a re-authentication may change the principal)."""
        context = self._context
        assert self.principal is not None  # requests are read once the client has logged in
        if context is None or context.principal is not self.principal:
            context = self._context = RequestContext(
                self.principal, self.client_address, listener_name=self.listener_name,
                security_protocol=self.security_protocol,
            )
        return context

    def _refused(self, api_key: int, version: int, body, correlation_id: int) -> list[Event]:
        frame = unknown_server_error_frame(api_key, version, body, correlation_id)
        return [Send(wire.size_prefixed(frame))] if frame is not None else self._close([], "no error answer possible")

    def _close(self, events: list[Event], reason: str, delay_ms: int = 0) -> list[Event]:
        self._closed = True
        return [*events, Close(reason, delay_ms)]


__all__ = ["Close", "Event", "Handle", "Send", "SecureConnection"]
