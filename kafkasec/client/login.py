"""The client side of a SASL login, for SCRAM, PLAIN and OAUTHBEARER, as Kafka's clients log in.

A :class:`ClientLogin` holds what a ``sasl.jaas.config`` gives (see :mod:`kafkasec.client.settings`)
and its :meth:`~ClientLogin.conversation` is a generator: it yields each message to send and is
sent each answer of the server, so one loop in :class:`~kafkasec.client.connection.KafkaConnection`
drives every mechanism. An OAUTHBEARER token comes from the login itself: a fixed token, an
unsecured token built as Kafka's OAuthBearerUnsecuredLoginCallbackHandler builds it, or one
fetched from an identity provider's token endpoint (:mod:`kafkasec.client.oauth`).
"""

from __future__ import annotations

import base64
import json
import time
from typing import Callable, Generator, Mapping

from attrs import field, frozen

from kafkasec.errors import SaslAuthenticationError
from kafkasec.scram.client import ScramClient
from kafkasec.scram.credentials import ScramMechanism

PLAIN = "PLAIN"
OAUTHBEARER = "OAUTHBEARER"
CLIENT_MECHANISMS = (ScramMechanism.SCRAM_SHA_256.mechanism_name, ScramMechanism.SCRAM_SHA_512.mechanism_name, PLAIN, OAUTHBEARER)
"""The mechanisms a :class:`ClientLogin` speaks."""

Conversation = Generator[bytes, bytes, None]
"""Yields each client message, is sent the server's answer to it; returns when the login is done."""

# Kafka's OAuthBearerUnsecuredLoginCallbackHandler options.
_UNSECURED_PREFIX = "unsecuredLogin"
_DEFAULT_UNSECURED_LIFETIME_S = 3600


@frozen
class ClientLogin:
    """Who logs in, and how: a ``mechanism`` and its credentials (``secret`` is the password,
    a token's HMAC with ``token_auth``, or the OAUTHBEARER token, never shown in a repr).

    ``bearer_token`` is a callable that returns a fresh OAUTHBEARER token at each login; it
    stands in for ``secret`` when the token must be made or fetched when the login happens.
    """

    mechanism: str = field()
    username: str | None = None
    secret: str | None = field(default=None, repr=False)
    token_auth: bool = False
    bearer_token: Callable[[], str] | None = field(default=None, repr=False)

    @mechanism.validator
    def _known(self, _attribute, value: str) -> None:
        if value not in CLIENT_MECHANISMS:
            raise ValueError(f"kafkasec clients log in with {', '.join(CLIENT_MECHANISMS)}, not {value!r}")

    def __attrs_post_init__(self) -> None:
        if self.mechanism == OAUTHBEARER:
            if self.secret is None and self.bearer_token is None:
                raise ValueError("an OAUTHBEARER login needs a token, or a way to make one")
        elif not self.username or self.secret is None:
            raise ValueError(f"a {self.mechanism} login needs a username and a password")

    def conversation(self) -> Conversation:
        """The messages of one login (see the module docstring)."""
        if self.mechanism == PLAIN:
            return self._plain()
        if self.mechanism == OAUTHBEARER:
            return self._oauthbearer()
        return self._scram()

    def _scram(self) -> Conversation:
        assert self.username is not None and self.secret is not None  # checked when built
        scram = ScramClient(self.mechanism, self.username, self.secret, token_auth=self.token_auth)
        server_first = yield scram.first_message()
        server_final = yield scram.final_message(server_first)
        scram.verify_server_final(server_final)

    def _plain(self) -> Conversation:
        # RFC 4616: authorization id (empty: the same), user, password, NUL-separated.
        yield b"\0" + (self.username or "").encode() + b"\0" + (self.secret or "").encode()

    def _oauthbearer(self) -> Conversation:
        token = self.secret if self.bearer_token is None else self.bearer_token()
        assert token is not None  # checked when built
        challenge = yield oauthbearer_initial_response(token)
        if challenge:
            # RFC 7628: the server refused the token and said why in JSON; the client answers
            # with one 0x01 byte and the server then fails the login, with the reason.
            yield b"\x01"
            raise SaslAuthenticationError(f"the server refused the token: {challenge.decode(errors='replace')}")


def oauthbearer_initial_response(token: str, authorization_id: str = "", **extensions: str) -> bytes:
    """RFC 7628's client first message, as Kafka's OAuthBearerClientInitialResponse.toBytes."""
    pairs = "".join(f"\x01{key}={value}" for key, value in extensions.items())
    authzid = f"a={authorization_id}" if authorization_id else ""
    return f"n,{authzid},\x01auth=Bearer {token}{pairs}\x01\x01".encode()


def _base64url_json(value: Mapping[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).rstrip(b"=").decode()


def unsecured_jwt(claims: Mapping[str, object], header: Mapping[str, object] | None = None) -> str:
    """An unsigned JWT (``alg`` none, empty signature), as KIP-255's unsecured tokens are."""
    return f"{_base64url_json(header or {'alg': 'none'})}.{_base64url_json(claims)}."


def unsecured_login_token(options: Mapping[str, str], *, now: float | None = None) -> str:
    """The token Kafka's OAuthBearerUnsecuredLoginCallbackHandler makes from JAAS options.

    ``unsecuredLoginStringClaim_sub`` names the principal (required);
    ``unsecuredLoginStringClaim_<name>``, ``unsecuredLoginNumberClaim_<name>`` and
    ``unsecuredLoginListClaim_<name>`` (the first character separates the items) add claims;
    ``unsecuredLoginLifetimeSeconds`` sets ``exp`` (default 3600 s after ``iat``).
    """
    issued = time.time() if now is None else now
    claims: dict[str, object] = {}
    for key, value in options.items():
        if not key.startswith(_UNSECURED_PREFIX):
            continue
        kind, _, name = key[len(_UNSECURED_PREFIX):].partition("_")
        if kind == "StringClaim" and name:
            claims[name] = value
        elif kind == "NumberClaim" and name:
            try:
                claims[name] = float(value) if "." in value else int(value)
            except ValueError:
                raise ValueError(f"{key} must be a number, not {value!r}") from None
        elif kind == "ListClaim" and name:
            claims[name] = [item for item in value[1:].split(value[0])] if value else []
        elif kind != "LifetimeSeconds":
            raise ValueError(f"unknown unsecured login option {key}")
    if not claims.get("sub"):
        raise ValueError("an unsecured OAUTHBEARER login needs unsecuredLoginStringClaim_sub (the principal's name)")
    try:
        lifetime = int(options.get("unsecuredLoginLifetimeSeconds", _DEFAULT_UNSECURED_LIFETIME_S))
    except ValueError:
        raise ValueError("unsecuredLoginLifetimeSeconds must be a whole number of seconds") from None
    # As Kafka: whole milliseconds, truncated (rounding up could put iat a moment in the future).
    issued_ms = int(issued * 1000)
    claims.setdefault("iat", issued_ms / 1000)
    claims.setdefault("exp", (issued_ms + lifetime * 1000) / 1000)
    return unsecured_jwt(claims)
