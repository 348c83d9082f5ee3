"""KIP-590 request forwarding, sans I/O: a broker wraps an admin request in an envelope for the
controller, and the controller opens it and answers as if the client had come to it.

Forwarding side, one :class:`ForwardingExchange` per client request::

    exchange = ForwardingExchange(security, context, request_frame, now_ms=now)
    while exchange.state is not ForwardingState.DONE:
        envelope = exchange.send_envelope(now_ms=now)       # None once the deadline has passed
        if envelope is not None:
            ...send it to the current controller, then one of:
            exchange.receive_envelope_response(frame, now_ms=now)
            exchange.connection_lost(now_ms=now)
    reply exchange.client_response to the client (None: close its connection)

Receiving side: :func:`open_envelope` checks the envelope as Kafka's broker does and yields the
inner request with its own RequestContext; the broker handles it as usual and wraps the answer
with :meth:`OpenedEnvelope.respond`.

No socket here: frames are bytes (header and body, without the size prefix), times are
milliseconds the caller passes in. A call made in the wrong state raises ForwardingStateError.
"""

from __future__ import annotations

import enum
import ipaddress
from typing import Iterable

from attrs import frozen

from kafkasec.acl import AclOperation
from kafkasec.context import Action, AuthorizationResult, RequestContext
from kafkasec.errors import InvalidRequestError, KafkaError, KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.errors import ApiError
from kafkasec.protocol.forwardable import CLUSTER, FORWARDABLE_APIS
from kafkasec.settings import CONTROLLER_LISTENER_NAMES, INTER_BROKER_LISTENER_NAME, java_trim, parse_list
from kafkasec.state_machine import Transitions

ENVELOPE_VERSION = 0
DEFAULT_TIMEOUT_MS = 30_000
"""How long a broker keeps retrying a forwarded request (Kafka: request.timeout.ms)."""


class ForwardingStateError(ValueError):
    """A ForwardingExchange method was called in a state where it makes no sense."""


class ForwardingState(enum.Enum):
    READY_TO_SEND = "READY_TO_SEND"  # an envelope is due to the (current) controller
    AWAITING_RESPONSE = "AWAITING_RESPONSE"  # an envelope is out; its answer is due
    DONE = "DONE"  # client_response holds the answer (None: close the client's connection)


_S = ForwardingState
_TRANSITIONS = Transitions(
    {
        (_S.READY_TO_SEND, "send_envelope"): {_S.AWAITING_RESPONSE, _S.DONE},
        (_S.AWAITING_RESPONSE, "receive_envelope_response"): {_S.READY_TO_SEND, _S.DONE},
        (_S.AWAITING_RESPONSE, "connection_lost"): {_S.READY_TO_SEND, _S.DONE},
    },
    ForwardingStateError,
)
"""(state, the method called in it) -> the states it may lead to."""


def _envelope_types():
    return wire.request_schema(ApiKey.ENVELOPE, ENVELOPE_VERSION), wire.response_schema(ApiKey.ENVELOPE, ENVELOPE_VERSION)


def address_bytes(address: str) -> bytes:
    """A client address as the envelope carries it: 4 or 16 raw bytes (Java's getAddress())."""
    return ipaddress.ip_address(address.split("%", 1)[0]).packed


def address_from_bytes(data: bytes) -> str:
    """The client address an envelope carries; INVALID_REQUEST unless it is 4 or 16 bytes."""
    if len(data) not in (4, 16):
        raise InvalidRequestError(f"Failed to parse client address from envelope: {len(data)} bytes")
    return str(ipaddress.ip_address(bytes(data)))


class ForwardingExchange:
    """One client request on its way to the controller and back (the forwarding broker's side).

    ``request_frame`` is the client's request (header and body). It is authorized here first:
    what the client may not touch is answered locally and merged back into the controller's
    answer; a request refused as a whole never leaves the broker (state DONE at once).
    """

    def __init__(
        self,
        security,
        context: RequestContext,
        request_frame: bytes,
        *,
        now_ms: int,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        envelope_client_id: str = "kafkasec-forwarding",
    ):
        if timeout_ms < 0:
            raise ValueError(f"timeout_ms must be >= 0, not {timeout_ms}")
        self.security = security
        self.context = context
        self.request = wire.decode_request(request_frame)
        api = FORWARDABLE_APIS.get(self.request.api_key)
        if api is None:
            raise ValueError(f"API key {self.request.api_key} is not forwardable (KIP-590)")
        self.api = api
        self.deadline_ms = now_ms + timeout_ms
        self.envelope_client_id = envelope_client_id
        self.attempts = 0
        self.client_response: bytes | None = None
        self._correlation_id = int(self.request.header.correlation_id)

        screening = self.api.screen(security, context, self.request.body, self.request.api_version)
        self._merge = screening.merge
        self._screened = screening.forward is not self.request.body
        if screening.forward is None:  # refused or answered whole here: done from the start
            self.client_response = self._encoded(screening.local_response)
            self.state = ForwardingState.DONE
            return
        self._inner_frame = (
            wire.encode(self.request.header) + wire.encode(screening.forward) if self._screened else bytes(request_frame)
        )
        self._principal = security.serialize_principal(context.principal)
        self.state = ForwardingState.READY_TO_SEND

    def _move(self, method: str, new_state: ForwardingState) -> None:
        self.state = _TRANSITIONS.move(self.state, method, new_state)

    def _check_state(self, method: str) -> None:
        _TRANSITIONS.check(self.state, method)

    def _encoded(self, body) -> bytes | None:
        return None if body is None else wire.encode_response(body, correlation_id=self._correlation_id)

    def _finish_with(self, method: str, body) -> None:
        self.client_response = self._encoded(body)
        self._move(method, ForwardingState.DONE)

    def _fail(self, method: str, code: KafkaErrorCode, message: str | None = None) -> None:
        body = self.api.error_response(self.request.body, self.request.api_version, ApiError.of(code, message))
        self._finish_with(method, body)

    def send_envelope(self, *, now_ms: int, correlation_id: int = 0) -> bytes | None:
        """The envelope frame to send to the controller now, or None when the deadline has
        passed (then the client's answer is REQUEST_TIMED_OUT, as Kafka's onTimeout gives)."""
        self._check_state("send_envelope")
        if now_ms >= self.deadline_ms:
            self._fail("send_envelope", KafkaErrorCode.REQUEST_TIMED_OUT)
            return None
        if self.attempts == 0:
            self.security.record_forwarded(self.context.client_id)
        self.attempts += 1
        envelope_type, _ = _envelope_types()
        envelope = envelope_type(
            request_data=self._inner_frame,
            request_principal=self._principal,
            client_host_address=address_bytes(self.context.client_address),
        )
        self._move("send_envelope", ForwardingState.AWAITING_RESPONSE)
        return wire.encode_request(envelope, correlation_id=correlation_id, client_id=self.envelope_client_id)

    def receive_envelope_response(self, frame: bytes, *, now_ms: int) -> None:
        """The controller's answer to the envelope last sent."""
        self._check_state("receive_envelope_response")
        try:
            _, envelope = wire.decode_response(frame, ApiKey.ENVELOPE, ENVELOPE_VERSION)
        except KafkaError:
            self._fail("receive_envelope_response", KafkaErrorCode.UNKNOWN_SERVER_ERROR)
            return
        code = int(envelope.error_code)
        if code == KafkaErrorCode.NOT_CONTROLLER:
            # The controller moved: the broker finds the new one and sends again, until the deadline.
            self._retry("receive_envelope_response", now_ms)
        elif code == KafkaErrorCode.UNSUPPORTED_VERSION:
            # Kafka closes the client's connection so that it re-reads the API versions.
            self._finish_with("receive_envelope_response", None)
        elif code != 0 or envelope.response_data is None:
            # A broken envelope means broker misconfiguration (e.g. no principal serde on the
            # controller): the client learns that something is wrong, not a code it cannot expect.
            self._fail("receive_envelope_response", KafkaErrorCode.UNKNOWN_SERVER_ERROR)
        elif not self._screened:
            self.client_response = bytes(envelope.response_data)
            self._move("receive_envelope_response", ForwardingState.DONE)
        else:
            try:
                _, inner = wire.decode_response(envelope.response_data, self.request.api_key, self.request.api_version)
            except KafkaError:
                self._fail("receive_envelope_response", KafkaErrorCode.UNKNOWN_SERVER_ERROR)
                return
            self._finish_with("receive_envelope_response", self._merge(inner))

    def connection_lost(self, *, now_ms: int) -> None:
        """The connection to the controller broke before its answer came: send again."""
        self._check_state("connection_lost")
        self._retry("connection_lost", now_ms)

    def _retry(self, method: str, now_ms: int) -> None:
        if now_ms >= self.deadline_ms:
            self._fail(method, KafkaErrorCode.REQUEST_TIMED_OUT)
        else:
            self._move(method, ForwardingState.READY_TO_SEND)


# ---------------------------------------------------------------------------------------------
# The receiving (controller) side.


class EnvelopeAction(enum.Enum):
    HANDLE = "HANDLE"  # handle ``request`` with ``context``, then send ``respond(answer)``
    RESPOND = "RESPOND"  # send ``response`` (an envelope error) as is
    CLOSE_CONNECTION = "CLOSE_CONNECTION"  # Kafka closes a connection that sends an envelope here


@frozen
class OpenedEnvelope:
    """What to do with a received envelope; see :func:`open_envelope`."""

    action: EnvelopeAction
    correlation_id: int
    reason: str = ""
    response: bytes | None = None
    request: wire.Request | None = None
    context: RequestContext | None = None
    error: KafkaError | None = None

    def respond(self, inner_response_frame: bytes) -> bytes:
        """The envelope response frame carrying the inner request's response frame."""
        if self.action is not EnvelopeAction.HANDLE:
            raise ValueError(f"only a HANDLE envelope is answered with respond(), not {self.action.name}")
        _, envelope_response_type = _envelope_types()
        body = envelope_response_type(response_data=bytes(inner_response_frame), error_code=wire.error_code(0))
        return wire.encode_response(body, correlation_id=self.correlation_id)

    def refuse(self, code: KafkaErrorCode) -> bytes:
        """The envelope response frame refusing the inner request as a whole (e.g.
        UNSUPPORTED_VERSION for an API or version this controller does not serve)."""
        if self.action is not EnvelopeAction.HANDLE:
            raise ValueError(f"only a HANDLE envelope is refused with refuse(), not {self.action.name}")
        return _envelope_error_frame(self.correlation_id, code)


_CLUSTER_ACTION = Action(AclOperation.CLUSTER_ACTION, CLUSTER)


def privileged_listeners(config) -> frozenset[str]:
    """The listeners that may carry envelopes: the inter-broker listener and the controller
    listeners (Kafka: inter.broker.listener.name, default PLAINTEXT; controller.listener.names)."""
    # Trimmed and split as Kafka's ConfigDef reads a STRING and a LIST (Java's trim, not strip()).
    names = {java_trim(str(config.get(INTER_BROKER_LISTENER_NAME, "PLAINTEXT")))}
    names.update(name for name in parse_list(config.get(CONTROLLER_LISTENER_NAMES, "")) if name)
    return frozenset(names)


def _envelope_error_frame(correlation_id: int, code: int) -> bytes:
    _, envelope_response_type = _envelope_types()
    body = envelope_response_type(response_data=None, error_code=wire.error_code(code))
    return wire.encode_response(body, correlation_id=correlation_id)


def _envelope_error(correlation_id: int, error: KafkaError) -> OpenedEnvelope:
    return OpenedEnvelope(
        EnvelopeAction.RESPOND,
        correlation_id,
        reason=str(error),
        response=_envelope_error_frame(correlation_id, error.code),
        error=error,
    )


def open_envelope(
    security,
    context: RequestContext,
    envelope_frame: bytes,
    *,
    is_active_controller: bool,
    listeners: Iterable[str] | None = None,
) -> OpenedEnvelope:
    """Check a received envelope in Kafka's order and open it.

    ``context`` is the envelope's own connection (the forwarding broker's principal, address
    and listener). ``listeners`` are the privileged listeners (default: from the security's
    config, see :func:`privileged_listeners`). In Kafka's order: an envelope on another
    listener closes the connection; the forwarding broker needs CLUSTER_ACTION on the cluster
    (else CLUSTER_AUTHORIZATION_FAILED); a node that is not the active controller answers
    NOT_CONTROLLER; then the principal must deserialize (else PRINCIPAL_DESERIALIZATION_FAILURE),
    the client address must be 4 or 16 bytes and the inner request readable and forwardable
    (else INVALID_REQUEST). The inner context has the client's principal and address, the
    envelope's listener, and ``forwarding_principal``/``forwarding_address`` of the broker.
    """
    envelope_request = wire.decode_request(envelope_frame)
    correlation_id = int(envelope_request.header.correlation_id)
    if envelope_request.api_key != ApiKey.ENVELOPE:
        raise ValueError(f"not an envelope: API key {envelope_request.api_key}")
    allowed = privileged_listeners(security.config) if listeners is None else frozenset(listeners)
    if context.listener_name not in allowed:
        return OpenedEnvelope(
            EnvelopeAction.CLOSE_CONNECTION,
            correlation_id,
            reason=(
                f"an Envelope request arrived on listener {context.listener_name}; envelopes are only "
                f"accepted on {', '.join(sorted(allowed))}"
            ),
        )
    if security.authorize(context, [_CLUSTER_ACTION])[0] is not AuthorizationResult.ALLOWED:
        return _envelope_error(
            correlation_id,
            KafkaError.for_code(
                KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                f"Principal {context.principal} does not have required CLUSTER_ACTION for envelope",
            ),
        )
    if not is_active_controller:
        return _envelope_error(
            correlation_id, KafkaError.for_code(KafkaErrorCode.NOT_CONTROLLER, "This node is not the active controller")
        )
    envelope = envelope_request.body
    try:
        principal = security.deserialize_principal(envelope.request_principal or b"")
        client_address = address_from_bytes(envelope.client_host_address)
        inner = wire.decode_request(envelope.request_data)
        if inner.api_key not in FORWARDABLE_APIS:
            raise InvalidRequestError(f"API key {inner.api_key} is not enabled or is not eligible for forwarding")
    except KafkaError as error:
        return _envelope_error(correlation_id, error)
    inner_context = wire.request_context(
        inner,
        principal,
        client_address,
        listener_name=context.listener_name,
        security_protocol=context.security_protocol,
        forwarding_principal=context.principal,
        forwarding_address=context.client_address,
    )
    return OpenedEnvelope(EnvelopeAction.HANDLE, correlation_id, request=inner, context=inner_context)
