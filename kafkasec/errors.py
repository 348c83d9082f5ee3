"""Kafka's error codes as shipped, and the exceptions that carry them.

Two kinds of error, as in h11: a caller who misuses the API gets ``ValueError``/``TypeError``;
a failure Kafka would answer with an error code raises a :class:`KafkaError` that carries the
code and its name, so a broker can put it on the wire unchanged.
"""

from __future__ import annotations

from typing import ClassVar

from kafkasec._enums import KafkaEnum
from kafkasec._error_table import ERROR_DETAILS


class KafkaErrorCode(KafkaEnum):
    """Every error code of Kafka's protocol (Errors.java), by name and code."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128

    @property
    def message(self) -> str:
        """Kafka's default message for this error."""
        return ERROR_DETAILS[self.value][0]

    @property
    def retriable(self) -> bool:
        """Whether Kafka's exception for this error is a RetriableException."""
        return ERROR_DETAILS[self.value][1]


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
            code: KafkaErrorCode = KafkaErrorCode.coerce(error_code)
        except ValueError:
            if not isinstance(error_code, int) or isinstance(error_code, bool):
                raise
            # Kafka's Errors.forCode: a code this version does not know is an unknown server error.
            return UnknownServerError(message or f"Unknown error code {error_code} from the peer")
        exc_type = KafkaError._by_code.get(code, KafkaError)
        return exc_type(message, error_code=code)

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
