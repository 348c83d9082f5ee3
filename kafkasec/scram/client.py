"""Kafka's SASL/SCRAM client (ScramSaslClient), sans I/O: for a proxy or gateway that logs in to
a broker, and for logins with a delegation token (the ``tokenauth=true`` extension), which
general SCRAM clients cannot make: Kafka signs the extensions as part of the client-first
message, so they must be in the client's AuthMessage too.

::

    client = ScramClient("SCRAM-SHA-256", token.token_id, token.hmac_as_base64, token_auth=True)
    server_first = broker(client.first_message())
    server_final = broker(client.final_message(server_first))
    client.verify_server_final(server_final)         # raises unless the broker knew the password
"""

from __future__ import annotations

import base64
import enum
import hmac
import re

from kafkasec.errors import IllegalSaslStateError, SaslAuthenticationError
from kafkasec.scram.credentials import ScramFormatter
from kafkasec.scram.server import TOKEN_AUTH_CONFIG, ScramServer, sasl_name, secure_random_string
from kafkasec.state_machine import OUT_OF_TURN, Transitions


class ScramClientState(enum.Enum):
    SEND_CLIENT_FIRST_MESSAGE = "SEND_CLIENT_FIRST_MESSAGE"
    RECEIVE_SERVER_FIRST_MESSAGE = "RECEIVE_SERVER_FIRST_MESSAGE"
    RECEIVE_SERVER_FINAL_MESSAGE = "RECEIVE_SERVER_FINAL_MESSAGE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


_C = ScramClientState
_TRANSITIONS = Transitions.failing(
    {
        (_C.SEND_CLIENT_FIRST_MESSAGE, "first_message"): {_C.RECEIVE_SERVER_FIRST_MESSAGE},
        (_C.RECEIVE_SERVER_FIRST_MESSAGE, "final_message"): {_C.RECEIVE_SERVER_FINAL_MESSAGE},
        (_C.RECEIVE_SERVER_FINAL_MESSAGE, "verify_server_final"): {_C.COMPLETE},
    },
    _C.FAILED,
    IllegalSaslStateError,
)
"""(state, call) -> the state it leads to; any failure, and a call out of turn, lead to FAILED."""

_SERVER_FIRST = re.compile(r"r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+),s=(?P<salt>[A-Za-z0-9+/=]+),i=(?P<iterations>[0-9]{1,9})(?:,.*)?")
_SERVER_FINAL = re.compile(r"(?:e=(?P<error>[^,]*)|v=(?P<signature>[A-Za-z0-9+/=]+))(?:,.*)?")


class ScramClient:
    """The client side of one SCRAM exchange, with Kafka's extensions in the client-first message.

    ``password`` is the user's password, or for a token login the standard base64 of the
    token's HMAC (``DelegationToken.hmac_as_base64``) with ``token_auth=True``. A server answer
    that is malformed, has the wrong nonce or the wrong signature raises SaslAuthenticationError.
    """

    def __init__(
        self,
        mechanism,
        username: str,
        password: str,
        *,
        token_auth: bool = False,
        extensions: dict[str, str] | None = None,
        nonce: str | None = None,
    ):
        self.mechanism = ScramServer.mechanism_for(mechanism)
        if not isinstance(username, str) or not isinstance(password, str):
            raise TypeError("username and password must be str")
        extensions = dict(extensions or {})
        if token_auth:
            extensions[TOKEN_AUTH_CONFIG] = "true"
        for name, value in extensions.items():
            if not re.fullmatch(r"[A-Za-z]+", name) or not value or "," in value:
                raise ValueError(f"a SCRAM extension is letters=value without ',', not {name}={value}")
        self._formatter = ScramFormatter(self.mechanism)
        self._password = password
        self._nonce = secure_random_string() if nonce is None else nonce
        extension_text = "".join(f",{name}={value}" for name, value in extensions.items())
        self._client_first_bare = f"n={sasl_name(username)},r={self._nonce}{extension_text}"
        self._server_signature: bytes | None = None
        self._state = ScramClientState.SEND_CLIENT_FIRST_MESSAGE

    def __repr__(self) -> str:
        return f"ScramClient({self.mechanism.mechanism_name}, state={self._state.name})"

    @property
    def state(self) -> ScramClientState:
        return self._state

    @property
    def is_complete(self) -> bool:
        return self._state is ScramClientState.COMPLETE

    def _step(self, call: str, work):
        state = self._state
        if not _TRANSITIONS.allows(state, call):
            self._state = _TRANSITIONS.move(state, OUT_OF_TURN, _C.FAILED)
            raise IllegalSaslStateError(f"{call} is not allowed in SCRAM client state {state.name}")
        try:
            result = work()
        except BaseException:
            self._state = _TRANSITIONS.move(state, call, _C.FAILED)
            raise
        self._state = _TRANSITIONS.move(state, call, _TRANSITIONS.success(state, call, _C.FAILED))
        return result

    def first_message(self) -> bytes:
        """``n,,n=<user>,r=<nonce>[,extensions]``."""
        return self._step("first_message", lambda: f"n,,{self._client_first_bare}".encode("ascii"))

    def final_message(self, server_first: bytes) -> bytes:
        """The client-final message (with the proof) for the server's first message."""
        return self._step("final_message", lambda: self._final(bytes(server_first)))

    def verify_server_final(self, server_final: bytes) -> None:
        """Check that the server knew the password (its signature); SaslAuthenticationError if not."""
        self._step("verify_server_final", lambda: self._verify(bytes(server_final)))

    def _final(self, data: bytes) -> bytes:
        text = data.decode("ascii", "replace")
        match = _SERVER_FIRST.fullmatch(text)
        if match is None:
            raise SaslAuthenticationError(f"Invalid SCRAM server first message format: {text}")
        if not match["nonce"].startswith(self._nonce) or match["nonce"] == self._nonce:
            raise SaslAuthenticationError("Invalid server nonce: does not start with client nonce")
        iterations = int(match["iterations"])
        if iterations < 1:
            raise SaslAuthenticationError(f"Invalid iteration count {iterations}")
        salt = base64.b64decode(match["salt"])
        salted = self._formatter.salted_password(self._password, salt, iterations)
        without_proof = f"c=biws,r={match['nonce']}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode("ascii")
        proof = self._formatter.client_proof(salted, auth_message)
        self._server_signature = self._formatter.server_signature(self._formatter.server_key(salted), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode('ascii')}".encode("ascii")

    def _verify(self, data: bytes) -> None:
        text = data.decode("ascii", "replace")
        match = _SERVER_FINAL.fullmatch(text)
        if match is None:
            raise SaslAuthenticationError(f"Invalid SCRAM server final message format: {text}")
        if match["error"] is not None:
            raise SaslAuthenticationError(f"Sasl authentication using {self.mechanism.mechanism_name} failed with error: {match['error']}")
        assert self._server_signature is not None  # set by _final, the step this one follows
        if not hmac.compare_digest(base64.b64decode(match["signature"]), self._server_signature):
            raise SaslAuthenticationError("Invalid server signature in server final message")
