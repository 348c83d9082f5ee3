"""SASL/PLAIN as Kafka's PlainSaslServer serves it, and the built-in plugin that offers it.

The client sends one message (RFC 4616): ``[authzid] NUL authcid NUL passwd``. Kafka reads it
as UTF-8, takes at most four NUL-separated tokens and wants exactly three; an empty user name or
password is refused; the password is checked by a callback (here the
``kafkasec_authenticate_plain`` hook); an authorization id other than the user name is refused.
Every refusal is a SaslAuthenticationException whose message the client receives.

The built-in check is Kafka's PlainServerCallbackHandler: the ``user_<name>="<password>"``
options of the listener's ``listener.name.<listener>.plain.sasl.jaas.config`` (module
``org.apache.kafka.common.security.plain.PlainLoginModule``), compared in constant time.
"""

from __future__ import annotations

import enum
import hmac
import logging
from typing import Callable

from kafkasec.errors import SaslAuthenticationError
from kafkasec.hookspecs import hookimpl
from kafkasec.sasl.exchange import SaslExchange, sasl_transitions
from kafkasec.sasl.jaas import jaas_config_key, parse_jaas_config
from kafkasec.sasl.mechanisms import SaslMechanism

PLAIN = "PLAIN"
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
JAAS_USER_PREFIX = "user_"
_STATE = "sasl.plain"  # security.plugin_state key: {listener name (lower case): {user: password}}

log = logging.getLogger(__name__)


class PlainServerState(enum.Enum):
    RECEIVE_RESPONSE = "RECEIVE_RESPONSE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class PlainServer(SaslExchange):
    """The server side of one SASL/PLAIN exchange. ``authenticate(username, password)`` says
    whether the password is right (an exception there is Kafka's "could not be verified")."""

    TRANSITIONS = sasl_transitions(
        {PlainServerState.RECEIVE_RESPONSE: ("_receive_response", {PlainServerState.COMPLETE})}, PlainServerState.FAILED
    )
    INITIAL, COMPLETE, FAILED = PlainServerState.RECEIVE_RESPONSE, PlainServerState.COMPLETE, PlainServerState.FAILED

    def __init__(self, authenticate: Callable[[str, str], bool], *, failed_authentication_delay_ms: int = 100):
        if not callable(authenticate):
            raise TypeError(f"authenticate must be callable, not {authenticate!r}")
        super().__init__()
        self._authenticate = authenticate
        self.failed_authentication_delay_ms = failed_authentication_delay_ms

    @property
    def mechanism_name(self) -> str:
        return PLAIN

    def __repr__(self) -> str:
        return f"PlainServer(state={self._state.name})"

    def _refuse(self, message: str, reason: str | None = None) -> SaslAuthenticationError:
        return self._refusal(reason or message, self.failed_authentication_delay_ms, message=message)

    def _receive_response(self, data: bytes) -> bytes:
        tokens = _tokens(data.decode("utf-8", "replace"))
        if len(tokens) != 3:
            raise self._refuse(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
        authorization_id, username, password = tokens
        if not username:
            raise self._refuse("Authentication failed: username not specified")
        if not password:
            raise self._refuse("Authentication failed: password not specified")
        try:
            authenticated = self._authenticate(username, password)
        except Exception as error:  # Kafka turns any failure of its callback into this answer
            raise self._refuse(
                "Authentication failed: credentials for user could not be verified",
                f"the PLAIN credential check failed for {username!r}: {type(error).__name__}: {error}",
            ) from error
        if authenticated is not True:
            raise self._refuse("Authentication failed: Invalid username or password", f"wrong PLAIN password for {username!r}")
        if authorization_id and authorization_id != username:
            raise self._refuse("Authentication failed: Client requested an authorization id that is different from username")
        self._authorization_id = username
        return b""


def _tokens(message: str) -> list[str]:
    """Kafka's extractTokens: split at NUL, stopping after four tokens."""
    tokens: list[str] = []
    start = 0
    for _ in range(4):
        end = message.find("\0", start)
        if end == -1:
            tokens.append(message[start:])
            break
        tokens.append(message[start:end])
        start = end + 1
    return tokens


def jaas_passwords(config, listener_name: str) -> dict[str, str]:
    """The ``user_<name>`` options of the listener's PLAIN JAAS configuration (none without
    one, or when it names another login module, as Kafka's callback handler finds none)."""
    text = config.get(jaas_config_key(listener_name, PLAIN))
    if text is None:
        return {}
    module = parse_jaas_config(str(text))
    if module.class_name != PLAIN_LOGIN_MODULE:
        log.warning("%s names %s, not %s: it gives no PLAIN users", jaas_config_key(listener_name, PLAIN),
                    module.class_name, PLAIN_LOGIN_MODULE)
        return {}
    return {key[len(JAAS_USER_PREFIX):]: value for key, value in module.options.items() if key.startswith(JAAS_USER_PREFIX)}


def _plain_server(security, listener_name: str) -> PlainServer:
    hook = security.plugin_manager.hook.kafkasec_authenticate_plain

    def authenticate(username: str, password: str) -> bool:
        return hook(security=security, username=username, password=password, listener_name=listener_name) is True

    return PlainServer(authenticate, failed_authentication_delay_ms=security.failed_authentication_delay_ms)


@hookimpl
def kafkasec_startup(security):
    # Read every listener's PLAIN users now, so that a malformed value fails the start.
    suffix = f".{PLAIN.lower()}.sasl.jaas.config"
    listeners = [key[len("listener.name."):-len(suffix)] for key in security.config
                 if key.startswith("listener.name.") and key.endswith(suffix)]
    security.plugin_state[_STATE] = {listener: jaas_passwords(security.config, listener) for listener in listeners}


@hookimpl(trylast=True)
def kafkasec_sasl_mechanisms(security):
    return [SaslMechanism(PLAIN, _plain_server)]


@hookimpl(trylast=True)
def kafkasec_authenticate_plain(security, username, password, listener_name):
    expected = security.plugin_state.get(_STATE, {}).get(listener_name.lower(), {}).get(username)
    if expected is None:
        return False
    return hmac.compare_digest(password.encode("utf-8"), expected.encode("utf-8"))
