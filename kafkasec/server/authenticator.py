"""The SASL conversation at the start of a connection, sans I/O (Kafka's SaslServerAuthenticator).

Until a client has logged in, a broker reads only three requests: ApiVersions, SaslHandshake
and SaslAuthenticate. The endpoint hands every frame of a connection to :meth:`receive` until
the state is COMPLETE, and does what the returned :class:`Reply` says::

    authenticator = Authenticator(security, "10.0.0.7", ranges=...)
    reply = authenticator.receive(frame)      # send reply.frame after reply.delay_ms; close if reply.close
    authenticator.principal                   # once COMPLETE

States and transitions follow Kafka's: ApiVersions may come once before the handshake;
SaslHandshake names a mechanism (v1: the SASL tokens then come in SaslAuthenticate requests; v0:
as bare frames); a login that fails is answered SASL_AUTHENTICATION_FAILED (58) after
``connection.failed.authentication.delay.ms`` and the connection closed. Any other request
before the login closes the connection, after the same delay, without an answer.
"""

from __future__ import annotations

import datetime
import enum
import logging
import time
from typing import Callable

from attrs import frozen

from kafkasec.errors import IllegalSaslStateError, KafkaError, KafkaErrorCode, SaslAuthenticationError
from kafkasec.principals.principal import KafkaPrincipal
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.api_versions import VersionRanges, answer_api_versions
from kafkasec.protocol.errors import ApiError
from kafkasec.sasl.mechanisms import SaslServer
from kafkasec.state_machine import OUT_OF_TURN, Transitions

SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")

log = logging.getLogger(__name__)


class AuthenticatorState(enum.Enum):
    """Kafka's SaslState names for the states a server-side login goes through."""

    HANDSHAKE_OR_VERSIONS_REQUEST = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE_REQUEST = "HANDSHAKE_REQUEST"  # ApiVersions was answered; the handshake is due
    AUTHENTICATE = "AUTHENTICATE"  # a mechanism was chosen; SASL tokens are due
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


_S = AuthenticatorState
_TRANSITIONS = Transitions.failing(
    {
        (_S.HANDSHAKE_OR_VERSIONS_REQUEST, "ApiVersions"): {_S.HANDSHAKE_OR_VERSIONS_REQUEST, _S.HANDSHAKE_REQUEST},
        (_S.HANDSHAKE_OR_VERSIONS_REQUEST, "SaslHandshake"): {_S.AUTHENTICATE},
        (_S.HANDSHAKE_REQUEST, "SaslHandshake"): {_S.AUTHENTICATE},
        (_S.AUTHENTICATE, "SaslAuthenticate"): {_S.AUTHENTICATE, _S.COMPLETE},
    },
    _S.FAILED,
    IllegalSaslStateError,
)
"""(state, the request's API) -> the states it may lead to; any of them may also fail the login,
and any other request fails it (out of turn). Bare SASL tokens (after SaslHandshake v0) count
as SaslAuthenticate."""


@frozen
class Reply:
    """What the endpoint does after a frame: send ``frame`` (if any) once ``delay_ms`` have
    passed, then close the connection if ``close``. ``reason`` explains a close, for the log."""

    frame: bytes | None
    close: bool = False
    delay_ms: int = 0
    reason: str = ""


class Authenticator:
    """The login of one SASL connection, with the mechanisms ``security``'s plugins serve
    (``mechanisms``: those this listener enables)."""

    def __init__(
        self,
        security,
        client_address: str,
        *,
        ranges: VersionRanges,
        listener_name: str = "SASL_PLAINTEXT",
        security_protocol: str = "SASL_PLAINTEXT",
        mechanisms: tuple[str, ...] = SCRAM_MECHANISMS,
        max_reauth_ms: int = 0,
        reauthenticating: tuple[KafkaPrincipal, str] | None = None,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ):
        served = security.sasl_mechanisms()
        unknown = [name for name in mechanisms if name not in served]
        if unknown:
            raise ValueError(
                f"sasl.enabled.mechanisms names {', '.join(unknown)}, which no plugin serves; served: {', '.join(served)}"
            )
        self.security = security
        self.client_address = client_address
        self.listener_name = listener_name
        self.security_protocol = security_protocol
        self.mechanisms = tuple(mechanisms)
        self._ranges = ranges
        self._state = AuthenticatorState.HANDSHAKE_OR_VERSIONS_REQUEST
        self._server: SaslServer | None = None  # from the handshake until the login is over
        self._bare_tokens = False  # SaslHandshake v0: tokens come without SaslAuthenticate
        self._principal: KafkaPrincipal | None = None
        self._event = OUT_OF_TURN  # the table's name for the request being handled
        # KIP-368: how long a login lasts (connections.max.reauth.ms, bounded by the credential's
        # own expiry), and, when this is a re-authentication, the principal and mechanism it renews.
        self.max_reauth_ms = max_reauth_ms
        self.reauthenticating = reauthenticating
        self._clock_ms = clock_ms
        self.mechanism: str | None = None
        self._mechanism_blocks = False
        self.session_lifetime_ms: int | None = None
        """Once complete: how long the session lasts (KIP-368), or None when it does not expire."""

    @property
    def state(self) -> AuthenticatorState:
        return self._state

    @property
    def is_complete(self) -> bool:
        return self._state is AuthenticatorState.COMPLETE

    @property
    def blocking(self) -> bool:
        """Whether the next frame goes to a mechanism whose steps may wait on I/O
        (``SaslMechanism.blocking``): the caller hands it to :meth:`receive` on a thread."""
        return self._mechanism_blocks and self._state is AuthenticatorState.AUTHENTICATE

    @property
    def principal(self) -> KafkaPrincipal:
        if self._principal is None:
            raise ValueError(f"no principal before the login is complete (state {self._state.name})")
        return self._principal

    def receive(self, frame: bytes) -> Reply:
        """Take the next frame of the connection; what to answer and whether to close."""
        if self._state in (AuthenticatorState.COMPLETE, AuthenticatorState.FAILED):
            raise ValueError(f"the login is over (state {self._state.name}): frames go elsewhere")
        if self._bare_tokens:
            self._event = "SaslAuthenticate"
            return self._bare_token(frame)
        try:
            api_key, version = wire.peek_api(frame)
            self._event = ApiKey.title_of(api_key)
            if not _TRANSITIONS.allows(self._state, self._event):
                during = "authentication" if self._state is AuthenticatorState.AUTHENTICATE else "handshake"
                return self._fail(f"Unexpected Kafka request with API key {api_key} during SASL {during}")
            if api_key == ApiKey.API_VERSIONS:
                response, good = answer_api_versions(frame, self._ranges)
                if good:
                    self._enter(AuthenticatorState.HANDSHAKE_REQUEST)
                return Reply(response)
            request = wire.decode_request(frame)
        except KafkaError as error:
            return self._fail(f"unreadable request during SASL login: {error}")
        if api_key == ApiKey.SASL_HANDSHAKE:
            return self._handshake(request)
        return self._authenticate(request)

    def _enter(self, state: AuthenticatorState) -> None:
        self._state = _TRANSITIONS.move(self._state, self._event, state)

    def _fail(self, reason: str, frame: bytes | None = None) -> Reply:
        event = self._event if _TRANSITIONS.allows(self._state, self._event) else OUT_OF_TURN
        self._state = _TRANSITIONS.move(self._state, event, AuthenticatorState.FAILED)
        self._server = None
        return Reply(frame, close=True, delay_ms=self.security.failed_authentication_delay_ms, reason=reason)

    def _respond(self, request: wire.Request, **fields) -> bytes:
        body = wire.build(wire.response_schema(request.api_key, request.api_version), **fields)
        return wire.encode_response(body, correlation_id=int(request.header.correlation_id))

    def _handshake(self, request: wire.Request) -> Reply:
        mechanism = request.body.mechanism
        # A re-authentication keeps its mechanism (Kafka's SaslServerAuthenticator).
        offered = self.mechanisms if self.reauthenticating is None else (self.reauthenticating[1],)
        if mechanism not in offered:
            answer = self._respond(
                request,
                error_code=wire.error_code(KafkaErrorCode.UNSUPPORTED_SASL_MECHANISM),
                mechanisms=offered,
            )
            return self._fail(f"Unsupported SASL mechanism {mechanism}", answer)
        self.mechanism = mechanism
        self._server = self.security.sasl_server(mechanism, listener_name=self.listener_name)
        self._mechanism_blocks = self.security.sasl_mechanisms().blocking(mechanism)
        self._bare_tokens = request.api_version == 0
        self._enter(AuthenticatorState.AUTHENTICATE)
        return Reply(self._respond(request, error_code=wire.error_code(0), mechanisms=self.mechanisms))

    def _authenticate(self, request: wire.Request) -> Reply:
        try:
            challenge = self._evaluate(bytes(request.body.auth_bytes))
        except SaslAuthenticationError as error:
            answer = None
            if error.respond:
                answer = self._respond(
                    request,
                    error_code=wire.error_code(error.code),
                    error_message=error.message,
                    auth_bytes=b"",
                )
            return self._fail(error.reason, answer)
        lifetime = datetime.timedelta(milliseconds=self.session_lifetime_ms or 0)  # kio's session_lifetime_ms
        return Reply(self._respond(
            request, error_code=wire.error_code(0), error_message=None, auth_bytes=challenge, session_lifetime=lifetime
        ))

    def _bare_token(self, frame: bytes) -> Reply:
        try:
            challenge = self._evaluate(bytes(frame))
        except SaslAuthenticationError as error:
            return self._fail(error.reason)  # a bare token has no way to carry an error
        return Reply(challenge)

    def _evaluate(self, token: bytes) -> bytes:
        """The server's answer to one SASL token; completes the login on the last one."""
        server = self._server
        assert server is not None, "tokens are read only in the AUTHENTICATE state, which the handshake enters with a server"
        try:
            challenge = server.evaluate_response(token)
        except SaslAuthenticationError:
            raise
        except KafkaError as error:
            raise SaslAuthenticationError(error.message, reason=str(error), respond=True) from error
        if server.is_complete:
            context = server.authentication_context(
                self.client_address, listener_name=self.listener_name, security_protocol=self.security_protocol
            )
            try:
                principal = self.security.build_principal(context)
            except (KafkaError, ValueError) as error:
                raise SaslAuthenticationError(
                    "Failed to build the principal of an authenticated connection", reason=str(error)
                ) from error
            if self.reauthenticating is not None and principal != self.reauthenticating[0]:
                message = f"Cannot change principals during re-authentication from {self.reauthenticating[0]}: {principal}"
                raise SaslAuthenticationError(message, reason=message)
            self._principal = principal
            self.session_lifetime_ms = self._session_lifetime_ms(server)
            self._server = None
            self._enter(AuthenticatorState.COMPLETE)
        return challenge

    def _session_lifetime_ms(self, server: SaslServer) -> int | None:
        """Kafka's rule: the shorter of connections.max.reauth.ms and the time left on the
        credential, never negative; None when neither bounds the session."""
        expires_ms = getattr(server, "credential_lifetime_ms", None)
        left_ms = None if expires_ms is None else max(0, expires_ms - self._clock_ms())
        if self.max_reauth_ms > 0:
            return self.max_reauth_ms if left_ms is None else min(left_ms, self.max_reauth_ms)
        return left_ms


REAUTHENTICATION_PAUSE_S = 1.0
"""Kafka begins no re-authentication within a second of the last one."""


class LoginSession:
    """A SASL login that lasts (KIP-368): its mechanism, when it ends, and when the connection
    last began to re-authenticate; times are ``time.monotonic()`` seconds."""

    __slots__ = ("mechanism", "ends_at", "reauthenticated_at")

    def __init__(self, mechanism: str, lifetime_ms: int, reauthenticated_at: float | None = None):
        self.mechanism = mechanism
        self.ends_at = time.monotonic() + lifetime_ms / 1000
        self.reauthenticated_at = reauthenticated_at

    @classmethod
    def after(cls, authenticator: Authenticator, previous: LoginSession | None = None) -> LoginSession | None:
        """The session a completed login starts (None when neither ``connections.max.reauth.ms``
        nor the credential bounds it), keeping ``previous``'s re-authentication time."""
        lifetime_ms = authenticator.session_lifetime_ms
        if lifetime_ms is None:
            return None
        assert authenticator.mechanism is not None  # chosen by the handshake, before COMPLETE
        return cls(authenticator.mechanism, lifetime_ms, None if previous is None else previous.reauthenticated_at)

    def expired(self) -> bool:
        return time.monotonic() >= self.ends_at

    def may_reauthenticate(self) -> bool:
        """Whether a SaslHandshake now begins a re-authentication (and, if so, notes when).
        Not within a second of the last one (Kafka's
        KafkaChannel.maybeBeginServerReauthentication): such a handshake is then an ordinary
        request, answered ILLEGAL_SASL_STATE (:func:`answer_after_login`)."""
        now = time.monotonic()
        if self.reauthenticated_at is not None and now - self.reauthenticated_at < REAUTHENTICATION_PAUSE_S:
            return False
        self.reauthenticated_at = now
        return True


def answer_after_login(request: wire.Request) -> bytes:
    """SaslHandshake or SaslAuthenticate on a connection logged in for good (no session end,
    so no KIP-368 re-authentication), answered as KafkaApis does: ILLEGAL_SASL_STATE."""
    message = None
    if request.api_key == ApiKey.SASL_AUTHENTICATE:
        message = "SaslAuthenticate request received after successful authentication"
    body = wire.build(
        wire.response_schema(request.api_key, request.api_version),
        **ApiError(KafkaErrorCode.ILLEGAL_SASL_STATE, message).fields(),
    )
    return wire.encode_response(body, correlation_id=int(request.header.correlation_id))
