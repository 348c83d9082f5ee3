"""Kafka's error codes as shipped, and the exceptions that carry them.

Two kinds of error, as in h11: a caller who misuses the API gets ``ValueError``/``TypeError``;
a failure Kafka would answer with an error code raises a :class:`KafkaError` that carries the
code and its name, so a broker can put it on the wire unchanged.
"""

from __future__ import annotations

from typing import ClassVar

from kafkasec._enums import KafkaEnum
from kafkasec._error_table import ERROR_TABLE

_DETAILS = {code: (message, retriable) for code, _name, message, retriable in ERROR_TABLE}


class _ErrorCodeBase(KafkaEnum):
    @property
    def message(self) -> str:
        """Kafka's default message for this error."""
        return _DETAILS[self.value][0]

    @property
    def retriable(self) -> bool:
        """Whether Kafka's exception for this error is a RetriableException."""
        return _DETAILS[self.value][1]


KafkaErrorCode = _ErrorCodeBase(
    "KafkaErrorCode",
    [(name, code) for code, name, _message, _retriable in ERROR_TABLE],
    module=__name__,
)
KafkaErrorCode.__doc__ = "Every error code of Kafka's protocol (Errors.java), by name and code."


class KafkaError(Exception):
    """An error Kafka answers with an error code; ``error_code`` and its name travel with it."""

    default_error_code: ClassVar[KafkaErrorCode] = KafkaErrorCode.UNKNOWN_SERVER_ERROR
    _by_code: ClassVar[dict[KafkaErrorCode, type[KafkaError]]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        KafkaError._by_code.setdefault(cls.default_error_code, cls)

    def __init__(self, message: str | None = None, *, error_code: KafkaErrorCode | int | str | None = None):
        self.error_code = KafkaErrorCode.coerce(
            self.default_error_code if error_code is None else error_code
        )
        self.message = self.error_code.message if message is None else message
        super().__init__(self.message)

    @property
    def code(self) -> int:
        return int(self.error_code)

    @property
    def error_name(self) -> str:
        return self.error_code.name

    @property
    def retriable(self) -> bool:
        return self.error_code.retriable

    @classmethod
    def for_code(cls, error_code: KafkaErrorCode | int | str, message: str | None = None) -> KafkaError:
        """The most specific exception for ``error_code``, e.g. for an error read off the wire."""
        try:
            error_code = KafkaErrorCode.coerce(error_code)
        except ValueError:
            if not isinstance(error_code, int) or isinstance(error_code, bool):
                raise
            # Kafka's Errors.forCode: a code this version does not know is an unknown server error.
            return UnknownServerError(message or f"Unknown error code {error_code} from the peer")
        exc_type = KafkaError._by_code.get(error_code, KafkaError)
        return exc_type(message, error_code=error_code)

    def __str__(self) -> str:
        return f"{self.error_name} ({self.code}): {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, error_code={self.error_name})"


class UnknownServerError(KafkaError):
    default_error_code = KafkaErrorCode.UNKNOWN_SERVER_ERROR


class InvalidRequestError(KafkaError):
    default_error_code = KafkaErrorCode.INVALID_REQUEST


class ClusterAuthorizationFailedError(KafkaError):
    default_error_code = KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED


class SecurityDisabledError(KafkaError):
    default_error_code = KafkaErrorCode.SECURITY_DISABLED


class PrincipalDeserializationError(KafkaError):
    """KIP-590: the principal in an envelope could not be read (error 97)."""

    default_error_code = KafkaErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE


class UnsupportedSaslMechanismError(KafkaError):
    """A SASL mechanism the broker does not support, or an unknown SCRAM mechanism (33)."""

    default_error_code = KafkaErrorCode.UNSUPPORTED_SASL_MECHANISM


class ResourceNotFoundError(KafkaError):
    """KIP-554: a request named a user or credential that does not exist (91)."""

    default_error_code = KafkaErrorCode.RESOURCE_NOT_FOUND


class DuplicateResourceError(KafkaError):
    """KIP-554: a request named the same user twice (92)."""

    default_error_code = KafkaErrorCode.DUPLICATE_RESOURCE


class UnacceptableCredentialError(KafkaError):
    """KIP-554: a credential Kafka refuses, e.g. an empty user name or too few iterations (93)."""

    default_error_code = KafkaErrorCode.UNACCEPTABLE_CREDENTIAL


class UnsupportedVersionError(KafkaError):
    """An API version the receiver does not support (35)."""

    default_error_code = KafkaErrorCode.UNSUPPORTED_VERSION


class SaslAuthenticationError(KafkaError):
    """The exchange failed: Kafka answers SASL_AUTHENTICATION_FAILED (58) and closes the connection.

    ``message`` is what Kafka puts in the SaslAuthenticate response; ``reason`` is the server's
    own account (Kafka's SaslException message), to log and never to send: it can tell whether
    a user exists. ``respond`` is False for the one failure Kafka does not answer at all (a
    proof of the wrong length, on which Kafka's server throws an unexpected exception and the
    broker just closes the connection). ``delay_ms`` is how long to wait before answering (or
    closing), as Kafka's ``connection.failed.authentication.delay.ms``: the I/O shell sleeps,
    the protocol code never does.
    """

    default_error_code = KafkaErrorCode.SASL_AUTHENTICATION_FAILED

    def __init__(
        self,
        message: str | None = None,
        *,
        error_code: KafkaErrorCode | int | str | None = None,
        reason: str | None = None,
        respond: bool = True,
        delay_ms: int = 0,
    ):
        super().__init__(message, error_code=error_code)
        self.reason = self.message if reason is None else reason
        self.respond = respond
        self.delay_ms = delay_ms


class IllegalSaslStateError(KafkaError, ValueError):
    """A call the exchange's state does not allow (Kafka's IllegalSaslStateException, 34).

    Also a ValueError: without I/O, only the caller can make such a call. Kafka does not answer
    it on the wire; it closes the connection.
    """

    default_error_code = KafkaErrorCode.ILLEGAL_SASL_STATE


class DelegationTokenAuthDisabledError(KafkaError):
    """No ``delegation.token.secret.key`` is configured: tokens are off (61)."""

    default_error_code = KafkaErrorCode.DELEGATION_TOKEN_AUTH_DISABLED


class DelegationTokenNotFoundError(KafkaError):
    """No live token has the HMAC the request carries (62)."""

    default_error_code = KafkaErrorCode.DELEGATION_TOKEN_NOT_FOUND


class DelegationTokenOwnerMismatchError(KafkaError):
    """The caller is neither the token's owner nor one of its renewers (63)."""

    default_error_code = KafkaErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH


class DelegationTokenRequestNotAllowedError(KafkaError):
    """A token request over PLAINTEXT, one-way SSL or a token-authenticated connection (64)."""

    default_error_code = KafkaErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED


class DelegationTokenAuthorizationFailedError(KafkaError):
    """KIP-373: a token for another owner without CREATE_TOKENS on that user (65)."""

    default_error_code = KafkaErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED


class DelegationTokenExpiredError(KafkaError):
    """The token is past its expiry or maximum timestamp (66)."""

    default_error_code = KafkaErrorCode.DELEGATION_TOKEN_EXPIRED


class InvalidPrincipalTypeError(KafkaError):
    """A token owner or renewer whose principal type is not ``User`` (67)."""

    default_error_code = KafkaErrorCode.INVALID_PRINCIPAL_TYPE


class AuthorizerNotReadyError(KafkaError):
    """The authorizer has not finished its initial load of ACLs.

    Kafka's AuthorizerNotReadyException is retriable but has no error code of its own: a broker
    answers UNKNOWN_SERVER_ERROR (-1). Brokers avoid it by not serving before the load completes.
    """

    default_error_code = KafkaErrorCode.UNKNOWN_SERVER_ERROR

    @property
    def retriable(self) -> bool:
        return True

    def __init__(self, message: str | None = None, **kwargs):
        super().__init__(message or "The authorizer is not ready: its initial ACL load has not completed.", **kwargs)
