"""Kafka's error codes (Errors.java) and the exceptions that carry them.

EXPECTED_NAMES below was transcribed from apache/kafka's
clients/src/main/java/org/apache/kafka/common/protocol/Errors.java, and EXPECTED_RETRIABLE from
which of those errors' exception classes extend RetriableException; neither is derived from
kafkasec's own table.
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, strategies as st

from kafkasec import (
    AuthorizerNotReadyError,
    ClusterAuthorizationFailedError,
    InvalidRequestError,
    KafkaError,
    KafkaErrorCode,
)
from kafkasec._enums import KafkaEnum
from kafkasec._error_table import ERROR_DETAILS
from kafkasec.errors import (
    DelegationTokenAuthDisabledError,
    DelegationTokenAuthorizationFailedError,
    DelegationTokenExpiredError,
    DelegationTokenNotFoundError,
    DelegationTokenOwnerMismatchError,
    DelegationTokenRequestNotAllowedError,
    DuplicateResourceError,
    IllegalSaslStateError,
    InvalidPrincipalTypeError,
    PrincipalDeserializationError,
    ResourceNotFoundError,
    SaslAuthenticationError,
    SecurityDisabledError,
    UnacceptableCredentialError,
    UnknownServerError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
)

EXPECTED_NAMES = {
    -1: "UNKNOWN_SERVER_ERROR",
    0: "NONE",
    1: "OFFSET_OUT_OF_RANGE",
    2: "CORRUPT_MESSAGE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    4: "INVALID_FETCH_SIZE",
    5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER",
    7: "REQUEST_TIMED_OUT",
    8: "BROKER_NOT_AVAILABLE",
    9: "REPLICA_NOT_AVAILABLE",
    10: "MESSAGE_TOO_LARGE",
    11: "STALE_CONTROLLER_EPOCH",
    12: "OFFSET_METADATA_TOO_LARGE",
    13: "NETWORK_EXCEPTION",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    17: "INVALID_TOPIC_EXCEPTION",
    18: "RECORD_LIST_TOO_LARGE",
    19: "NOT_ENOUGH_REPLICAS",
    20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    21: "INVALID_REQUIRED_ACKS",
    22: "ILLEGAL_GENERATION",
    23: "INCONSISTENT_GROUP_PROTOCOL",
    24: "INVALID_GROUP_ID",
    25: "UNKNOWN_MEMBER_ID",
    26: "INVALID_SESSION_TIMEOUT",
    27: "REBALANCE_IN_PROGRESS",
    28: "INVALID_COMMIT_OFFSET_SIZE",
    29: "TOPIC_AUTHORIZATION_FAILED",
    30: "GROUP_AUTHORIZATION_FAILED",
    31: "CLUSTER_AUTHORIZATION_FAILED",
    32: "INVALID_TIMESTAMP",
    33: "UNSUPPORTED_SASL_MECHANISM",
    34: "ILLEGAL_SASL_STATE",
    35: "UNSUPPORTED_VERSION",
    36: "TOPIC_ALREADY_EXISTS",
    37: "INVALID_PARTITIONS",
    38: "INVALID_REPLICATION_FACTOR",
    39: "INVALID_REPLICA_ASSIGNMENT",
    40: "INVALID_CONFIG",
    41: "NOT_CONTROLLER",
    42: "INVALID_REQUEST",
    43: "UNSUPPORTED_FOR_MESSAGE_FORMAT",
    44: "POLICY_VIOLATION",
    45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    46: "DUPLICATE_SEQUENCE_NUMBER",
    47: "INVALID_PRODUCER_EPOCH",
    48: "INVALID_TXN_STATE",
    49: "INVALID_PRODUCER_ID_MAPPING",
    50: "INVALID_TRANSACTION_TIMEOUT",
    51: "CONCURRENT_TRANSACTIONS",
    52: "TRANSACTION_COORDINATOR_FENCED",
    53: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    54: "SECURITY_DISABLED",
    55: "OPERATION_NOT_ATTEMPTED",
    56: "KAFKA_STORAGE_ERROR",
    57: "LOG_DIR_NOT_FOUND",
    58: "SASL_AUTHENTICATION_FAILED",
    59: "UNKNOWN_PRODUCER_ID",
    60: "REASSIGNMENT_IN_PROGRESS",
    61: "DELEGATION_TOKEN_AUTH_DISABLED",
    62: "DELEGATION_TOKEN_NOT_FOUND",
    63: "DELEGATION_TOKEN_OWNER_MISMATCH",
    64: "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
    65: "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
    66: "DELEGATION_TOKEN_EXPIRED",
    67: "INVALID_PRINCIPAL_TYPE",
    68: "NON_EMPTY_GROUP",
    69: "GROUP_ID_NOT_FOUND",
    70: "FETCH_SESSION_ID_NOT_FOUND",
    71: "INVALID_FETCH_SESSION_EPOCH",
    72: "LISTENER_NOT_FOUND",
    73: "TOPIC_DELETION_DISABLED",
    74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH",
    76: "UNSUPPORTED_COMPRESSION_TYPE",
    77: "STALE_BROKER_EPOCH",
    78: "OFFSET_NOT_AVAILABLE",
    79: "MEMBER_ID_REQUIRED",
    80: "PREFERRED_LEADER_NOT_AVAILABLE",
    81: "GROUP_MAX_SIZE_REACHED",
    82: "FENCED_INSTANCE_ID",
    83: "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    84: "ELECTION_NOT_NEEDED",
    85: "NO_REASSIGNMENT_IN_PROGRESS",
    86: "GROUP_SUBSCRIBED_TO_TOPIC",
    87: "INVALID_RECORD",
    88: "UNSTABLE_OFFSET_COMMIT",
    89: "THROTTLING_QUOTA_EXCEEDED",
    90: "PRODUCER_FENCED",
    91: "RESOURCE_NOT_FOUND",
    92: "DUPLICATE_RESOURCE",
    93: "UNACCEPTABLE_CREDENTIAL",
    94: "INCONSISTENT_VOTER_SET",
    95: "INVALID_UPDATE_VERSION",
    96: "FEATURE_UPDATE_FAILED",
    97: "PRINCIPAL_DESERIALIZATION_FAILURE",
    98: "SNAPSHOT_NOT_FOUND",
    99: "POSITION_OUT_OF_RANGE",
    100: "UNKNOWN_TOPIC_ID",
    101: "DUPLICATE_BROKER_REGISTRATION",
    102: "BROKER_ID_NOT_REGISTERED",
    103: "INCONSISTENT_TOPIC_ID",
    104: "INCONSISTENT_CLUSTER_ID",
    105: "TRANSACTIONAL_ID_NOT_FOUND",
    106: "FETCH_SESSION_TOPIC_ID_ERROR",
    107: "INELIGIBLE_REPLICA",
    108: "NEW_LEADER_ELECTED",
    109: "OFFSET_MOVED_TO_TIERED_STORAGE",
    110: "FENCED_MEMBER_EPOCH",
    111: "UNRELEASED_INSTANCE_ID",
    112: "UNSUPPORTED_ASSIGNOR",
    113: "STALE_MEMBER_EPOCH",
    114: "MISMATCHED_ENDPOINT_TYPE",
    115: "UNSUPPORTED_ENDPOINT_TYPE",
    116: "UNKNOWN_CONTROLLER_ID",
    117: "UNKNOWN_SUBSCRIPTION_ID",
    118: "TELEMETRY_TOO_LARGE",
    119: "INVALID_REGISTRATION",
    120: "TRANSACTION_ABORTABLE",
    121: "INVALID_RECORD_STATE",
    122: "SHARE_SESSION_NOT_FOUND",
    123: "INVALID_SHARE_SESSION_EPOCH",
    124: "FENCED_STATE_EPOCH",
    125: "INVALID_VOTER_KEY",
    126: "DUPLICATE_VOTER",
    127: "VOTER_NOT_FOUND",
    128: "INVALID_REGULAR_EXPRESSION",
}

# Codes whose Kafka exception class is a RetriableException.
EXPECTED_RETRIABLE = {
    2, 3, 5, 6, 7, 9, 13, 14, 15, 16, 19, 20, 41, 51, 56, 70, 71, 72, 74, 75, 78, 80, 83, 84,
    88, 89, 100, 103, 106, 122, 123,
}


# --------------------------------------------------------------------------------------------
# KafkaErrorCode
# --------------------------------------------------------------------------------------------


def test_codes_are_contiguous_from_minus_one_to_128():
    assert [int(m) for m in KafkaErrorCode] == list(range(-1, 129))
    assert len(KafkaErrorCode) == 130
    assert len(KafkaErrorCode.__members__) == 130  # no aliases


def test_every_name_and_code_exactly_as_errors_java():
    assert {int(m): m.name for m in KafkaErrorCode} == EXPECTED_NAMES


@pytest.mark.parametrize("code,name", sorted(EXPECTED_NAMES.items()))
def test_name_code_round_trip(code, name):
    member = KafkaErrorCode(code)
    assert member.name == name
    assert KafkaErrorCode[name] is member
    assert KafkaErrorCode.coerce(name) is member
    assert KafkaErrorCode.coerce(name.lower()) is member
    assert KafkaErrorCode.coerce(member.camel_name) is member
    assert KafkaErrorCode.coerce(code) is member
    assert KafkaErrorCode.coerce(member) is member


@pytest.mark.parametrize(
    "name,code",
    [
        ("NONE", 0),
        ("UNKNOWN_SERVER_ERROR", -1),
        ("TOPIC_AUTHORIZATION_FAILED", 29),
        ("GROUP_AUTHORIZATION_FAILED", 30),
        ("CLUSTER_AUTHORIZATION_FAILED", 31),
        ("UNSUPPORTED_SASL_MECHANISM", 33),
        ("ILLEGAL_SASL_STATE", 34),
        ("UNSUPPORTED_VERSION", 35),
        ("NOT_CONTROLLER", 41),
        ("INVALID_REQUEST", 42),
        ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 53),
        ("SECURITY_DISABLED", 54),
        ("SASL_AUTHENTICATION_FAILED", 58),
        ("DELEGATION_TOKEN_AUTH_DISABLED", 61),
        ("DELEGATION_TOKEN_NOT_FOUND", 62),
        ("DELEGATION_TOKEN_OWNER_MISMATCH", 63),
        ("DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", 64),
        ("DELEGATION_TOKEN_AUTHORIZATION_FAILED", 65),
        ("DELEGATION_TOKEN_EXPIRED", 66),
        ("INVALID_PRINCIPAL_TYPE", 67),
        ("RESOURCE_NOT_FOUND", 91),
        ("DUPLICATE_RESOURCE", 92),
        ("UNACCEPTABLE_CREDENTIAL", 93),
        ("PRINCIPAL_DESERIALIZATION_FAILURE", 97),
        ("INVALID_REGULAR_EXPRESSION", 128),
    ],
)
def test_security_relevant_codes(name, code):
    assert int(KafkaErrorCode[name]) == code
    assert KafkaErrorCode(code).name == name


def test_error_code_is_a_kafka_int_enum():
    assert issubclass(KafkaErrorCode, KafkaEnum)
    assert KafkaErrorCode.INVALID_REQUEST == 42
    assert KafkaErrorCode.coerce("InvalidRequest") is KafkaErrorCode.INVALID_REQUEST
    assert KafkaErrorCode.coerce("ClusterAuthorizationFailed") is KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED.camel_name == "ClusterAuthorizationFailed"
    assert KafkaErrorCode.__module__ == "kafkasec.errors"
    assert pickle.loads(pickle.dumps(KafkaErrorCode.NOT_CONTROLLER)) is KafkaErrorCode.NOT_CONTROLLER


@pytest.mark.parametrize("value", [-2, 129, 1000, 32767, None, "NOPE", "", True, False, 2.5], ids=repr)
def test_unknown_error_codes_are_value_errors(value):
    with pytest.raises(ValueError) as info:
        KafkaErrorCode.coerce(value)
    assert "KafkaErrorCode" in str(info.value)


@given(st.integers())
def test_an_int_is_a_member_iff_in_range(code):
    if -1 <= code <= 128:
        assert int(KafkaErrorCode.coerce(code)) == code
    else:
        with pytest.raises(ValueError):
            KafkaErrorCode.coerce(code)


@pytest.mark.parametrize(
    "code,message",
    [
        (0, ""),
        (-1, "The server experienced an unexpected error when processing the request."),
        (29, "Topic authorization failed."),
        (30, "Group authorization failed."),
        (31, "Cluster authorization failed."),
        (33, "The broker does not support the requested SASL mechanism."),
        (34, "Request is not valid given the current SASL state."),
        (35, "The version of API is not supported."),
        (41, "This is not the correct controller for this cluster."),
        (
            42,
            "This most likely occurs because of a request being malformed by the client library or the "
            "message was sent to an incompatible broker. See the broker logs for more details.",
        ),
        (53, "Transactional Id authorization failed."),
        (54, "Security features are disabled."),
        (58, "SASL Authentication failed."),
        (61, "Delegation Token feature is not enabled."),
        (62, "Delegation Token is not found on server."),
        (63, "Specified Principal is not valid Owner/Renewer."),
        (
            64,
            "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation "
            "token authenticated channels.",
        ),
        (65, "Delegation Token authorization failed."),
        (66, "Delegation Token is expired."),
        (67, "Supplied principalType is not supported."),
        (91, "A request illegally referred to a resource that does not exist."),
        (92, "A request illegally referred to the same resource twice."),
        (93, "Requested credential would not meet criteria for acceptability."),
        (
            97,
            "Request principal deserialization failed during forwarding. This indicates an internal error "
            "on the broker cluster security setup.",
        ),
    ],
)
def test_default_messages(code, message):
    assert KafkaErrorCode(code).message == message


def test_every_code_has_a_message_and_a_bool_retriable():
    for member in KafkaErrorCode:
        assert isinstance(member.message, str)
        assert isinstance(member.retriable, bool)
        if member is not KafkaErrorCode.NONE:
            assert member.message, member


def test_retriable_flags_exactly():
    assert {int(m) for m in KafkaErrorCode if m.retriable} == EXPECTED_RETRIABLE


@pytest.mark.parametrize(
    "name,retriable",
    [
        ("NOT_CONTROLLER", True),
        ("INVALID_REQUEST", False),
        ("UNKNOWN_SERVER_ERROR", False),
        ("NONE", False),
        ("CLUSTER_AUTHORIZATION_FAILED", False),
        ("TOPIC_AUTHORIZATION_FAILED", False),
        ("SASL_AUTHENTICATION_FAILED", False),
        ("SECURITY_DISABLED", False),
        ("DELEGATION_TOKEN_EXPIRED", False),
        ("UNKNOWN_TOPIC_OR_PARTITION", True),
        ("REQUEST_TIMED_OUT", True),
        ("COORDINATOR_NOT_AVAILABLE", True),
        ("CONCURRENT_TRANSACTIONS", True),
        ("THROTTLING_QUOTA_EXCEEDED", True),
    ],
)
def test_retriable_examples(name, retriable):
    assert KafkaErrorCode[name].retriable is retriable


def test_error_table_shape():
    codes = [int(member) for member in KafkaErrorCode]
    assert codes == sorted(codes) == list(range(-1, 129)) == list(ERROR_DETAILS)
    names = [member.name for member in KafkaErrorCode]
    assert len(set(names)) == len(names)
    for code, name, (message, retriable) in zip(codes, names, ERROR_DETAILS.values()):
        assert isinstance(code, int) and isinstance(name, str)
        assert isinstance(message, str) and isinstance(retriable, bool)
        assert KafkaErrorCode(code).message == message
        assert KafkaErrorCode(code).retriable is retriable


# --------------------------------------------------------------------------------------------
# KafkaError and its subclasses
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code,exc_type",
    [
        (42, InvalidRequestError),
        ("INVALID_REQUEST", InvalidRequestError),
        (KafkaErrorCode.INVALID_REQUEST, InvalidRequestError),
        (31, ClusterAuthorizationFailedError),
        ("ClusterAuthorizationFailed", ClusterAuthorizationFailedError),
        (54, SecurityDisabledError),
        (-1, UnknownServerError),
    ],
    ids=repr,
)
def test_for_code_picks_the_subclass(code, exc_type):
    exc = KafkaError.for_code(code)
    assert type(exc) is exc_type
    assert isinstance(exc, KafkaError)
    assert isinstance(exc, Exception)
    member = KafkaErrorCode.coerce(code)
    assert exc.error_code is member
    assert exc.code == int(member)
    assert isinstance(exc.code, int) and not isinstance(exc.code, KafkaErrorCode)
    assert exc.error_name == member.name
    assert exc.message == member.message
    assert exc.retriable is member.retriable


def test_for_code_of_authorizer_not_ready_code_is_unknown_server_error():
    # -1 belongs to UnknownServerError; AuthorizerNotReadyError does not take it over.
    assert type(KafkaError.for_code(-1)) is UnknownServerError


def test_for_code_of_97_is_the_principal_deserialization_error():
    assert type(KafkaError.for_code(97)) is PrincipalDeserializationError


@pytest.mark.parametrize(
    "code, exc_type",
    [
        (33, UnsupportedSaslMechanismError),
        (34, IllegalSaslStateError),
        (35, UnsupportedVersionError),
        (58, SaslAuthenticationError),
        (61, DelegationTokenAuthDisabledError),
        (62, DelegationTokenNotFoundError),
        (63, DelegationTokenOwnerMismatchError),
        (64, DelegationTokenRequestNotAllowedError),
        (65, DelegationTokenAuthorizationFailedError),
        (66, DelegationTokenExpiredError),
        (67, InvalidPrincipalTypeError),
        (91, ResourceNotFoundError),
        (92, DuplicateResourceError),
        (93, UnacceptableCredentialError),
    ],
)
def test_for_code_of_codes_with_their_own_exception(code, exc_type):
    assert type(KafkaError.for_code(code, "m")) is exc_type
    assert exc_type().code == code


@pytest.mark.parametrize("code", [c for c in EXPECTED_NAMES if c not in (-1, 31, 33, 34, 35, 42, 54, 58, 61, 62, 63, 64, 65, 66, 67, 91, 92, 93, 97)])
def test_for_code_falls_back_to_kafka_error(code):
    exc = KafkaError.for_code(code)
    assert type(exc) is KafkaError
    assert exc.code == code
    assert exc.error_name == EXPECTED_NAMES[code]
    assert exc.retriable is (code in EXPECTED_RETRIABLE)


def test_for_code_with_a_message():
    exc = KafkaError.for_code(41, "controller moved to broker 3")
    assert exc.message == "controller moved to broker 3"
    assert exc.code == 41
    assert exc.error_name == "NOT_CONTROLLER"
    assert exc.retriable is True
    assert exc.args == ("controller moved to broker 3",)


def test_for_code_rejects_unknown_codes_as_value_error():
    with pytest.raises(ValueError):
        KafkaError.for_code("NOT_A_KAFKA_ERROR")


def test_str_and_repr():
    exc = InvalidRequestError("bad ACL filter")
    assert str(exc) == "INVALID_REQUEST (42): bad ACL filter"
    assert repr(exc) == "InvalidRequestError('bad ACL filter', error_code=INVALID_REQUEST)"
    default = ClusterAuthorizationFailedError()
    assert str(default) == "CLUSTER_AUTHORIZATION_FAILED (31): Cluster authorization failed."
    assert default.message == "Cluster authorization failed."


@given(st.sampled_from(list(KafkaErrorCode)), st.none() | st.text(max_size=30))
def test_str_contains_name_and_code(member, message):
    exc = KafkaError.for_code(member, message)
    text = str(exc)
    assert member.name in text
    assert f"({int(member)})" in text
    assert text == f"{member.name} ({int(member)}): {member.message if message is None else message}"


def test_subclass_defaults():
    assert InvalidRequestError().error_code is KafkaErrorCode.INVALID_REQUEST
    assert InvalidRequestError().code == 42
    assert ClusterAuthorizationFailedError().code == 31
    assert SecurityDisabledError().code == 54
    assert SecurityDisabledError().message == "Security features are disabled."
    assert UnknownServerError().code == -1
    assert KafkaError().error_code is KafkaErrorCode.UNKNOWN_SERVER_ERROR
    assert KafkaError("boom").message == "boom"
    # an explicit code wins over the class default
    assert KafkaError(error_code="NOT_CONTROLLER").code == 41
    assert InvalidRequestError(error_code=35).error_name == "UNSUPPORTED_VERSION"
    with pytest.raises(ValueError):
        KafkaError(error_code=999)


def test_raise_and_catch_by_base():
    with pytest.raises(KafkaError) as info:
        raise KafkaError.for_code(42, "nope")
    assert info.value.code == 42
    with pytest.raises(InvalidRequestError):
        raise KafkaError.for_code("InvalidRequest")


def test_authorizer_not_ready_carries_unknown_server_error():
    exc = AuthorizerNotReadyError()
    assert isinstance(exc, KafkaError)
    assert exc.error_code is KafkaErrorCode.UNKNOWN_SERVER_ERROR
    assert exc.code == -1
    assert exc.error_name == "UNKNOWN_SERVER_ERROR"
    assert exc.message  # its own explanatory text, not the generic one
    assert "not ready" in exc.message
    assert str(exc) == f"UNKNOWN_SERVER_ERROR (-1): {exc.message}"
    assert AuthorizerNotReadyError("still loading").message == "still loading"
    # Kafka has no AUTHORIZER_NOT_READY error code
    assert not any("AUTHORIZER" in m.name for m in KafkaErrorCode)


@pytest.mark.parametrize(
    "exc",
    [
        KafkaError.for_code(41, "moved"),
        InvalidRequestError("bad"),
        AuthorizerNotReadyError(),
        KafkaError.for_code(0),
    ],
    ids=repr,
)
def test_errors_pickle_with_their_code(exc):
    copy = pickle.loads(pickle.dumps(exc))
    assert type(copy) is type(exc)
    assert copy.error_code is exc.error_code
    assert copy.message == exc.message
    assert str(copy) == str(exc)
