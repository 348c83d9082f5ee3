"""The server side of one SASL exchange, sans I/O: the one shape every mechanism's server keeps.

A mechanism's server is handed the client's bytes, one message at a time, and returns its
answer (Kafka's ``SaslServer.evaluateResponse``). Its states are an enum; which method takes a
message in which state, and the states it may lead to, is one table (``TRANSITIONS``, a
:class:`kafkasec.state_machine.Transitions`); a message in any other state is an
:class:`~kafkasec.errors.IllegalSaslStateError` (34), and whatever goes wrong leaves the
exchange FAILED for good. Subclasses write the steps, never the state.
"""

from __future__ import annotations

import enum
from typing import ClassVar, Iterable, Mapping

from kafkasec.errors import IllegalSaslStateError, SaslAuthenticationError
from kafkasec.principals.authentication import SaslAuthenticationContext
from kafkasec.state_machine import OUT_OF_TURN, Transitions


def sasl_transitions(steps: Mapping[enum.Enum, tuple[str, Iterable[enum.Enum]]], failed: enum.Enum) -> Transitions:
    """A mechanism's table from its steps: state -> (the method that takes the client's message
    in that state, the states it may lead to). Any step may also fail, and a message in a state
    with no step (COMPLETE, FAILED) is out of turn: both lead to ``failed``."""
    return Transitions.failing(
        {(state, method): set(targets) for state, (method, targets) in steps.items()}, failed, IllegalSaslStateError
    )


class SaslExchange:
    """Base of a mechanism's server: ``TRANSITIONS`` (made by :func:`sasl_transitions`) says
    which method takes the client's message in each state and where it may lead; ``INITIAL``,
    ``COMPLETE`` and ``FAILED`` name the states that start and end it. A step with one possible
    next state returns its challenge; a step with several returns ``(challenge, state)``."""

    TRANSITIONS: ClassVar[Transitions]
    INITIAL: ClassVar[enum.Enum]
    COMPLETE: ClassVar[enum.Enum]
    FAILED: ClassVar[enum.Enum]

    @property
    def mechanism_name(self) -> str:
        """The SASL name of the mechanism (``PLAIN``, ``SCRAM-SHA-256``, ...)."""
        raise NotImplementedError

    def __init__(self) -> None:
        self._state = self.INITIAL
        self._authorization_id: str | None = None

    @property
    def state(self) -> enum.Enum:
        return self._state

    @property
    def is_complete(self) -> bool:
        return self._state is self.COMPLETE

    @property
    def authorization_id(self) -> str:
        """Who logged in (Kafka's ``getAuthorizationID``), once the exchange is complete."""
        self._require_complete()
        assert self._authorization_id is not None  # every mechanism sets it before COMPLETE
        return self._authorization_id

    @property
    def credential_lifetime_ms(self) -> int | None:
        """When the credential this login proved expires (epoch milliseconds), or None when it
        does not (KIP-368 bounds the session by it)."""
        return None

    @property
    def token_authenticated(self) -> bool:
        """Whether the login was a delegation token's (only SCRAM has those)."""
        return False

    def evaluate_response(self, response: bytes) -> bytes:
        """Take the client's next message and return the server's answer to it."""
        if not isinstance(response, (bytes, bytearray, memoryview)):
            raise TypeError(f"a {self.mechanism_name} client message is bytes, not {type(response).__name__}")
        state = self._state
        steps = self.TRANSITIONS.events(state)
        if not steps:
            # As in Kafka, a message after the end leaves the exchange FAILED, even a complete one.
            self._end(self.TRANSITIONS.move(state, OUT_OF_TURN, self.FAILED))
            raise IllegalSaslStateError(f"Unexpected challenge in Sasl server state {state.name}")
        (method,) = steps
        try:
            answer = getattr(self, method)(bytes(response))
        except BaseException:
            # Whatever went wrong, a half-done step must not be resumed.
            self._end(self.TRANSITIONS.move(state, method, self.FAILED))
            raise
        if isinstance(answer, tuple):
            challenge, next_state = answer
        else:
            challenge, next_state = answer, self.TRANSITIONS.success(state, method, self.FAILED)
        next_state = self.TRANSITIONS.move(state, method, next_state)
        if next_state is self.COMPLETE:
            self._end(next_state)
        else:
            self._state = next_state
        return challenge

    def authentication_context(
        self,
        client_address: str,
        *,
        listener_name: str = "SASL_PLAINTEXT",
        security_protocol: str = "SASL_PLAINTEXT",
    ) -> SaslAuthenticationContext:
        """What this login proved, for a principal builder (once the exchange is COMPLETE)."""
        return SaslAuthenticationContext(
            self.mechanism_name,
            self.authorization_id,
            client_address,
            listener_name=listener_name,
            security_protocol=security_protocol,
            token_authenticated=self.token_authenticated,
        )

    def _require_complete(self) -> None:
        if self._state is not self.COMPLETE:
            raise IllegalSaslStateError(f"Authentication exchange has not completed (state {self._state.name})")

    def _end(self, state: enum.Enum) -> None:
        """Enter COMPLETE or FAILED (a state the table led to); a subclass drops what it held
        for the exchange here."""
        self._state = state

    def _refusal(
        self, reason: str, delay_ms: int, *, message: str | None = None, respond: bool = True
    ) -> SaslAuthenticationError:
        """A refused login. ``message`` is what the client is told; None for Kafka's answer to
        a SaslException, whose text is replaced by one sentence before it reaches the client
        (it may tell whether a user exists). ``reason`` is for the log only."""
        generic = (
            f"Authentication failed during authentication due to invalid credentials with SASL mechanism {self.mechanism_name}"
        )
        return SaslAuthenticationError(
            generic if message is None else message, reason=reason, respond=respond, delay_ms=delay_ms
        )
