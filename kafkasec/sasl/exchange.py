"""The server side of one SASL exchange, sans I/O: the one shape every mechanism's server keeps.

A mechanism's server is handed the client's bytes, one message at a time, and returns its
answer (Kafka's ``SaslServer.evaluateResponse``). Its states are an enum; which method takes a
message in which state, and the state it leads to, is one table (``TRANSITIONS``); a message
in any other state is an :class:`~kafkasec.errors.IllegalSaslStateError` (34), and whatever
goes wrong leaves the exchange FAILED for good. Subclasses write the steps, never the state.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Mapping

from kafkasec.errors import IllegalSaslStateError, SaslAuthenticationError
from kafkasec.principals.authentication import SaslAuthenticationContext


class SaslExchange:
    """Base of a mechanism's server: ``TRANSITIONS`` maps a state to (the method that takes
    the client's message in it, the state it leads to); ``COMPLETE`` and ``FAILED`` end it.
    Where a step may lead to one of several states, the table lists them in a tuple and the
    method returns ``(challenge, state)``."""

    TRANSITIONS: ClassVar[Mapping[Any, tuple[str, Any]]]  # over each subclass's own state enum
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
        step = self.TRANSITIONS.get(self._state)
        try:
            if step is None:
                raise IllegalSaslStateError(f"Unexpected challenge in Sasl server state {self._state.name}")
            method, next_states = step
            answer = getattr(self, method)(bytes(response))
            # A step with several possible next states says which, from the table's tuple.
            if isinstance(next_states, tuple):
                challenge, next_state = answer
                if next_state not in next_states:
                    raise AssertionError(f"{method} led to {next_state}, which the table does not allow")
            else:
                challenge, next_state = answer, next_states
        except BaseException:
            # Whatever went wrong, a half-done step must not be resumed.
            self._end(self.FAILED)
            raise
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
        """Enter COMPLETE or FAILED; a subclass drops what it held for the exchange here."""
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
