"""SASL/OAUTHBEARER as Kafka's OAuthBearerSaslServer serves it (KIP-255, RFC 7628), and its
built-in plugin.

The client's first message is RFC 7628's ``n,[a=authzid],^Aauth=Bearer <token>^A[key=value^A]*^A``
(``^A`` is 0x01), read with the grammar of Kafka's OAuthBearerClientInitialResponse; keys other
than ``auth`` are SASL extensions. The token is checked by a :class:`TokenValidator`:

- :class:`UnsecuredJwtValidator`, Kafka's OAuthBearerUnsecuredValidatorCallbackHandler (KIP-255):
  an unsigned JWT (``alg: none``) for development, its options from the listener's
  ``oauthbearer.sasl.jaas.config`` (``unsecuredValidatorPrincipalClaimName`` and the rest);
- :class:`kafkasec.sasl.jwks.JwksValidator`, Kafka's OAuthBearerValidatorCallbackHandler
  (KIP-768): a signed JWT checked against an identity provider's JWKS, chosen when
  ``sasl.oauthbearer.jwks.endpoint.url`` is set.

A token that does not validate is answered as Kafka does: the server sends RFC 7628's error JSON
(``{"status":"invalid_token"}``) as its challenge, the client answers with a lone ``^A``, and the
login then fails with SASL_AUTHENTICATION_FAILED carrying that JSON.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
import logging
import re
import time
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Protocol

from attrs import field, frozen

from kafkasec.errors import SaslAuthenticationError
from kafkasec.hookspecs import hookimpl
from kafkasec.sasl.exchange import SaslExchange, sasl_transitions
from kafkasec.sasl.jaas import jaas_config_key, parse_jaas_config
from kafkasec.sasl.mechanisms import SaslMechanism

if TYPE_CHECKING:
    from kafkasec.sasl.jwks import JwksValidator

_log = logging.getLogger("kafkasec.sasl.jwks")

OAUTHBEARER = "OAUTHBEARER"
JWKS_ENDPOINT_URL = "sasl.oauthbearer.jwks.endpoint.url"
_STATE = "sasl.oauthbearer"  # security.plugin_state key: {listener name (lower case): validator}
_JWKS_STATE = "sasl.oauthbearer.jwks"  # security.plugin_state key: the JwksValidator all listeners share
_SEPARATOR = "\x01"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"  # Java's [\x01-\x7F&&[^=,]], or =2C / =3D
_KEY = r"[A-Za-z]+"
_VALUE = r"[\x21-\x7e \t\r\n]+"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,{_SEPARATOR}(?P<kvpairs>(?:{_KEY}={_VALUE}{_SEPARATOR})*){_SEPARATOR}"
)
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")


def _strings(values: Iterable[str]) -> frozenset[str]:
    return frozenset(values)


@frozen
class ValidatedToken:
    """What a valid token says: who (``principal_name``), until when (``lifetime_ms``, epoch
    milliseconds), its ``scope`` and the moment it was issued (``start_ms``, or None)."""

    principal_name: str
    lifetime_ms: int
    scope: frozenset[str] = field(factory=frozenset, converter=_strings)
    start_ms: int | None = None


class InvalidTokenError(Exception):
    """The token does not validate: RFC 7628's error ``status`` (and ``scope``) for the client,
    ``reason`` for the log."""

    def __init__(self, reason: str, status: str = "invalid_token", scope: str | None = None):
        super().__init__(reason)
        self.status = status
        self.scope = scope


class TokenValidator(Protocol):
    def validate(self, token: str) -> ValidatedToken:
        """The token's claims, or InvalidTokenError."""
        ...


def error_json(error: InvalidTokenError) -> str:
    """RFC 7628's error response, spelt as Kafka's jsonErrorResponse spells it."""
    text = f'{{"status":"{error.status}"'
    if error.scope is not None:
        text += f', "scope":"{error.scope}"'
    return text + "}"


class OAuthBearerServerState(enum.Enum):
    RECEIVE_CLIENT_FIRST_MESSAGE = "RECEIVE_CLIENT_FIRST_MESSAGE"
    RECEIVE_ERROR_ACKNOWLEDGEMENT = "RECEIVE_ERROR_ACKNOWLEDGEMENT"  # the error JSON was sent
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


_S = OAuthBearerServerState


class OAuthBearerServer(SaslExchange):
    """The server side of one SASL/OAUTHBEARER exchange, checking tokens with ``validator``."""

    TRANSITIONS = sasl_transitions(
        {
            _S.RECEIVE_CLIENT_FIRST_MESSAGE: ("_receive_client_first", {_S.COMPLETE, _S.RECEIVE_ERROR_ACKNOWLEDGEMENT}),
            _S.RECEIVE_ERROR_ACKNOWLEDGEMENT: ("_receive_error_acknowledgement", set()),  # always refuses
        },
        _S.FAILED,
    )
    INITIAL, COMPLETE, FAILED = _S.RECEIVE_CLIENT_FIRST_MESSAGE, _S.COMPLETE, _S.FAILED

    def __init__(self, validator: TokenValidator, *, failed_authentication_delay_ms: int = 100):
        super().__init__()
        self._validator = validator
        self.failed_authentication_delay_ms = failed_authentication_delay_ms
        self.token: ValidatedToken | None = None
        self.extensions: Mapping[str, str] = {}
        self._error: str | None = None

    @property
    def mechanism_name(self) -> str:
        return OAUTHBEARER

    @property
    def credential_lifetime_ms(self) -> int | None:
        """The token's ``exp`` (epoch milliseconds): a session lasts no longer (KIP-368)."""
        self._require_complete()
        return None if self.token is None else self.token.lifetime_ms

    def _refuse(self, message: str | None, reason: str) -> SaslAuthenticationError:
        return self._refusal(reason, self.failed_authentication_delay_ms, message=message)

    def _receive_client_first(self, data: bytes):
        text = data.decode("utf-8", "replace")
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise self._refuse(None, "Invalid OAUTHBEARER client first message")
        properties = dict(pair.split("=", 1) for pair in match["kvpairs"].split(_SEPARATOR) if pair)
        auth = properties.pop("auth", None)
        if auth is None:
            raise self._refuse(None, "Invalid OAUTHBEARER client first message: 'auth' not specified")
        auth_match = _AUTH.fullmatch(auth)
        if auth_match is None:
            raise self._refuse(None, "Invalid OAUTHBEARER client first message: invalid 'auth' format")
        if auth_match["scheme"].lower() != "bearer":
            raise self._refuse(None, f"Invalid scheme in OAUTHBEARER client first message: {auth_match['scheme']}")
        try:
            token = self._validator.validate(auth_match["token"])
        except InvalidTokenError as error:
            self._error = error_json(error)
            return self._error.encode(), _S.RECEIVE_ERROR_ACKNOWLEDGEMENT
        authorization_id = match["authzid"] or ""
        if authorization_id and authorization_id != token.principal_name:
            raise self._refuse(
                "Authentication failed: Client requested an authorization id "
                f"({authorization_id}) that is different from the token's principal name ({token.principal_name})",
                "authorization id differs from the token's principal",
            )
        self.token, self.extensions = token, properties
        self._authorization_id = token.principal_name
        return b"", _S.COMPLETE

    def _receive_error_acknowledgement(self, data: bytes) -> bytes:
        assert self._error is not None  # the state is entered only once the error was sent
        if data != _SEPARATOR.encode():
            raise self._refuse(None, "the client did not acknowledge the OAUTHBEARER error with %x01")
        raise self._refuse(self._error, f"invalid token: {self._error}")


def jwt_part(part: str) -> dict:
    """One base64url JSON object of a JWT (its header or claims); InvalidTokenError if not."""
    try:
        value = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (binascii.Error, ValueError) as error:
        raise InvalidTokenError(f"a JWT part is not base64url JSON: {error}") from None
    if not isinstance(value, dict):
        raise InvalidTokenError("a JWT part is not a JSON object")
    return value


@frozen
class UnsecuredJwtValidator:
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler (KIP-255): an unsigned JWT
    (``alg: none``), for development only. Options as Kafka's JAAS options name them."""

    principal_claim_name: str = "sub"
    scope_claim_name: str = "scope"
    required_scope: frozenset[str] = field(factory=frozenset, converter=_strings)
    allowable_clock_skew_ms: int = 0
    clock: Callable[[], float] = time.time

    @classmethod
    def from_jaas_options(cls, options: Mapping[str, str]) -> UnsecuredJwtValidator:
        skew = options.get("unsecuredValidatorAllowableClockSkewMs", "0")
        if not skew.isdigit():
            raise ValueError(f"unsecuredValidatorAllowableClockSkewMs must be a whole number of milliseconds, not {skew!r}")
        return cls(
            principal_claim_name=options.get("unsecuredValidatorPrincipalClaimName", "sub").strip() or "sub",
            scope_claim_name=options.get("unsecuredValidatorScopeClaimName", "scope").strip() or "scope",
            required_scope=options.get("unsecuredValidatorRequiredScope", "").split(),
            allowable_clock_skew_ms=int(skew),
        )

    def validate(self, token: str) -> ValidatedToken:
        parts = token.split(".")
        if len(parts) != 3 or parts[2]:
            raise InvalidTokenError("an unsecured JWT has three parts and an empty signature")
        header, claims = jwt_part(parts[0]), jwt_part(parts[1])
        if header.get("alg") != "none":
            raise InvalidTokenError(f"an unsecured JWT has alg none, not {header.get('alg')!r}")
        principal = claims.get(self.principal_claim_name)
        if not isinstance(principal, str) or not principal.strip():
            raise InvalidTokenError(f"no principal claim {self.principal_claim_name!r}")
        expires = claims.get("exp")
        if not isinstance(expires, (int, float)) or isinstance(expires, bool):
            raise InvalidTokenError("no expiration time claim (exp)")
        now_ms = self.clock() * 1000
        if now_ms - self.allowable_clock_skew_ms >= expires * 1000:
            raise InvalidTokenError("the token has expired")
        issued = claims.get("iat")
        if isinstance(issued, (int, float)) and issued * 1000 > now_ms + self.allowable_clock_skew_ms:
            raise InvalidTokenError("the token's issued-at time (iat) is in the future")
        scope = scope_claim(claims.get(self.scope_claim_name))
        missing = self.required_scope - scope
        if missing:
            raise InvalidTokenError(
                f"the token's scope lacks {sorted(missing)}", status="insufficient_scope", scope=" ".join(sorted(self.required_scope))
            )
        return ValidatedToken(principal, int(expires * 1000), scope, None if issued is None else int(issued * 1000))


def scope_claim(value) -> frozenset[str]:
    """A scope claim: a space-separated string or a list of strings."""
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return frozenset(value)
    raise InvalidTokenError("the scope claim is neither a string nor a list of strings")


def validator_for(security, listener_name: str) -> TokenValidator:
    """The listener's validator: the JWKS one when ``sasl.oauthbearer.jwks.endpoint.url`` is
    set (KIP-768), else Kafka's default, the unsecured one, with the listener's JAAS options."""
    if security.config.get(JWKS_ENDPOINT_URL):
        jwks = security.plugin_state.get(_JWKS_STATE)
        if jwks is None:  # a KafkaSecurity whose start-up did not build it (a plugin manager of its own)
            jwks = security.plugin_state[_JWKS_STATE] = _jwks_validator(security.config)
        return jwks
    validators = security.plugin_state.setdefault(_STATE, {})
    validator = validators.get(listener_name.lower())
    if validator is None:
        text = security.config.get(jaas_config_key(listener_name, OAUTHBEARER))
        options = {} if text is None else parse_jaas_config(str(text)).options
        validator = validators[listener_name.lower()] = UnsecuredJwtValidator.from_jaas_options(options)
    return validator


def _jwks_validator(config: Mapping[str, object]) -> JwksValidator:
    from kafkasec.sasl.jwks import JwksValidator

    return JwksValidator.from_config(config)


def _oauthbearer_server(security, listener_name: str) -> OAuthBearerServer:
    return OAuthBearerServer(
        validator_for(security, listener_name), failed_authentication_delay_ms=security.failed_authentication_delay_ms
    )


@hookimpl
def kafkasec_startup(security):
    # The JWKS validator is built now, not at the first login: a bad URL or a missing JWKS file
    # fails the start, and the first fetch of the keys (on the validator's own thread) is waited
    # for here, a bounded time, as Kafka fetches them when it configures the validator.
    if not security.config.get(JWKS_ENDPOINT_URL):
        return
    validator = security.plugin_state[_JWKS_STATE] = _jwks_validator(security.config)
    if not validator.keys.wait_until_known(validator.fetch_timeout_ms / 1000):
        _log.warning("no JWKS key set from %s yet: OAUTHBEARER logins are refused until one is fetched",
                     validator.jwks_url)


@hookimpl
def kafkasec_shutdown(security):
    validator = security.plugin_state.pop(_JWKS_STATE, None)
    if validator is not None:
        validator.close()


@hookimpl(trylast=True)
def kafkasec_sasl_mechanisms(security):
    return [SaslMechanism(OAUTHBEARER, _oauthbearer_server)]
